"""Python's overhead on the solver calls: `get_domain` and `set_domain`
through the package against the same calls in Rust (bench/solver_calls.rs)
on the same problem, the same walk (each node in index order on the first
chip of its domain) and the same repetitions.

    cargo build --release -p mcmpart-python --example solver_calls
    python crates/python/bench/solver_calls.py examples/bert_ring36.mcm --reps 20

Prints one JSON line per side and the overhead per call. Build the package
in release (`pip install .` or `maturin develop --release`) first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import mcmpart

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def python_side(path: str, reps: int) -> dict:
    p = mcmpart.load(path)
    s = p.solver()
    n = p.num_nodes
    choice = []
    for u in range(n):
        c = s.get_domain(u)[0]
        choice.append(c)
        s.set_domain(u, c)
    s.reset()
    get_domain, set_domain, reset = s.get_domain, s.set_domain, s.reset
    t = time.perf_counter()
    for _ in range(reps):
        for u in range(n):
            get_domain(u)
    get_ns = (time.perf_counter() - t) * 1e9 / (reps * n)
    t = time.perf_counter()
    for _ in range(reps):
        for u in range(n):
            set_domain(u, choice[u])
        reset()
    set_ns = (time.perf_counter() - t) * 1e9 / (reps * n)
    # A whole episode as a placer runs it: read the domain, decide.
    t = time.perf_counter()
    for _ in range(reps):
        for u in range(n):
            set_domain(u, get_domain(u)[0])
        reset()
    episode_s = (time.perf_counter() - t) / reps
    return {"file": path, "nodes": n, "reps": reps, "get_domain_ns": get_ns, "set_domain_ns": set_ns,
            "episode_ms": episode_s * 1e3, "placements_per_s": n / episode_s}


def rust_side(path: str, reps: int) -> dict:
    exe = os.path.join(REPO, "target", "release", "examples", "solver_calls")
    if not os.path.exists(exe):
        sys.exit(f"build the Rust side first: cargo build --release -p mcmpart-python --example solver_calls ({exe})")
    out = subprocess.run([exe, path, str(reps)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", default=os.path.join(REPO, "examples", "bert_ring36.mcm"))
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args(argv)
    rust = rust_side(a.file, a.reps)
    py = python_side(a.file, a.reps)
    print(json.dumps({"rust": rust}))
    print(json.dumps({"python": py}))
    for call in ("get_domain", "set_domain"):
        r, p = rust[f"{call}_ns"], py[f"{call}_ns"]
        print(f"{call:10s}  rust {r:9.0f} ns  python {p:9.0f} ns  overhead {p - r:8.0f} ns ({p / r:.2f}x)")
    print(f"episode     {py['episode_ms']:.1f} ms for {py['nodes']} nodes: {py['placements_per_s']:.0f} placements/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
