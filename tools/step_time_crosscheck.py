#!/usr/bin/env python3
"""Random problems (graphs with replicable nodes and measured op times, packages with one-way and
two-way links, link latency, op overhead and chip kinds, random partitions): the step
time `mcmpart eval --json` reports against step_time_ref.py's, an
implementation of shared/spec/step-time.md that shares no code with it.

usage: step_time_crosscheck.py MCMPART CASES SCRATCH_DIR
Exits 1 when any case differs by more than 1e-9 relative (or fails)."""
import json, random, subprocess, sys, os
BIN = sys.argv[1]
N_CASES = int(sys.argv[2])
REF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "step_time_ref.py")
D = sys.argv[3]
os.makedirs(D, exist_ok=True)
worst = 0.0
bad = 0
for case in range(N_CASES):
    rnd = random.Random(case)
    n = rnd.randint(2, 14)
    nrep = rnd.randint(0, 3)
    nodes, edges = [], []
    for r in range(nrep):
        nodes.append({"id": f"r{r}", "op": "const", "flops": rnd.choice([0, 1000, 5e6]), "output_bytes": rnd.choice([0, 64, 4096]), "replicable": True})
        if r > 0 and rnd.random() < 0.5:
            edges.append({"from": f"r{rnd.randrange(r)}", "to": f"r{r}"})
    for i in range(n):
        flops = rnd.choice([0, 0, 1e6, 2e6, 3e6, rnd.randint(1, 10**7)])
        nodes.append({"id": f"n{i}", "op": "x", "flops": int(flops), "output_bytes": rnd.choice([0, 1024, 4096, rnd.randint(1, 10**6)])})
        if rnd.random() < 0.3:
            nodes[-1]["times"] = {k: rnd.choice([0.0, 1e-6, rnd.uniform(0, 1e-5)]) for k in ("a", "b") if rnd.random() < 0.7}
        for j in range(i):
            if rnd.random() < (0.5 if j == i - 1 else 0.15):
                e = {"from": f"n{j}", "to": f"n{i}"}
                if rnd.random() < 0.3:
                    e["bytes"] = rnd.randint(0, 10**6)
                edges.append(e)
        for r in range(nrep):
            if rnd.random() < 0.2:
                edges.append({"from": f"r{r}", "to": f"n{i}"})
    rnd.shuffle(nodes)
    g = {"name": "g", "nodes": nodes, "edges": edges}
    C = rnd.randint(1, 5)
    lines = ["topology pk() {"]
    for c in range(C):
        comp = rnd.choice([1, 2, 4])
        ov = rnd.choice(["", ", overhead = 1 us", ", overhead = 3 us"]) if rnd.random() < 0.4 else ""
        kd = rnd.choice(["", "", ', kind = "a"', ', kind = "b"'])
        lines.append(f"    chips c{c}[1] {{ memory = 1 GiB, compute = {comp} TFLOP/s{ov}{kd} }}")
    links = set()
    for c in range(C):
        if C > 1:
            links.add((c, (c + 1) % C))
            if rnd.random() < 0.5:
                links.add(((c + 1) % C, c))
    for _ in range(rnd.randint(0, C)):
        a, b = rnd.randrange(C), rnd.randrange(C)
        if a != b:
            links.add((a, b))
    for a, b in sorted(links):
        lat = rnd.choice(["", "", ", latency = 1 us", ", latency = 2 us"])
        bw = rnd.choice([1, 10, 25])
        lines.append(f"    link c{a}[0] -> c{b}[0] {{ bandwidth = {bw} GB/s{lat} }}")
    lines.append("}")
    prog = "\n".join(lines) + f"""
let p = pk()
let g = graph("case{case}.json")

partition g onto p {{
    minimize step_time
}}
"""
    json.dump(g, open(f"{D}/case{case}.json", "w"))
    open(f"{D}/case{case}.mcm", "w").write(prog)
    place = {nd["id"]: rnd.randrange(C) for nd in nodes if not nd.get("replicable")}
    json.dump({"graph": "g", "chips": C, "placement": place}, open(f"{D}/case{case}.partition.json", "w"))
    ev = subprocess.run([BIN, "eval", "--json", "--no-dynamic-check", "--partition", f"{D}/case{case}.partition.json", f"{D}/case{case}.mcm"], capture_output=True, text=True)
    sh = subprocess.run([BIN, "show", "--format", "json", f"{D}/case{case}.mcm"], capture_output=True, text=True)
    open(f"{D}/case{case}.pkg.json", "w").write(sh.stdout)
    try:
        got = json.loads(ev.stdout)
    except Exception:
        print(f"case {case}: eval failed rc={ev.returncode}: {ev.stderr[:400]}")
        bad += 1
        continue
    ref = subprocess.run([sys.executable, REF, f"{D}/case{case}.json", f"{D}/case{case}.partition.json", f"{D}/case{case}.pkg.json"], capture_output=True, text=True)
    if ref.returncode != 0:
        print(f"case {case}: ref failed: {ref.stderr[-400:]} {ref.stdout[-200:]}")
        bad += 1
        continue
    r = json.loads(ref.stdout)["step_time_s"]
    def find(o):
        if isinstance(o, dict):
            if "step_time_s" in o:
                return o["step_time_s"]
            for v in o.values():
                x = find(v)
                if x is not None:
                    return x
        return None
    s = find(got)
    if s is None:
        print(f"case {case}: no step_time_s in {ev.stdout[:300]}")
        bad += 1
        continue
    rel = abs(s - r) / max(abs(r), 1e-300)
    worst = max(worst, rel)
    if rel > 1e-9:
        bad += 1
        print(f"case {case}: mcmpart {s!r} ref {r!r} rel {rel:.3g}")
print(f"{N_CASES} cases, {bad} disagreements, worst relative difference {worst:.3g}")
sys.exit(1 if bad else 0)
