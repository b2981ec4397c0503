"""Steps per second of mcmpart.gym.PlacementEnv under uniformly random
masked actions: node placements a second and the time of a whole episode.

    python crates/python/bench/gym_steps.py examples/bert_ring36.mcm --episodes 20

Prints one line per setting (SAT on and off) and, with --json, the numbers
as JSON. The first episode (warm-up) is not counted. Besides the wall
time, each episode's CPU time on this thread (``time.thread_time``): on a
machine shared with other work it stays near what an idle machine gives,
where the wall time does not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import mcmpart
from mcmpart.gym import PlacementEnv


def measure(env: PlacementEnv, episodes: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    times, cpu, steps, backjumps = [], [], 0, 0
    for e in range(episodes + 1):
        start, start_cpu = time.perf_counter(), time.thread_time()
        env.reset()
        n = jumps = 0
        while True:
            # A uniformly random chip of the mask (rng.choice would cost
            # more than the step it feeds).
            allowed = np.flatnonzero(env.action_masks())
            _, _, terminated, _, info = env.step(allowed[rng.integers(len(allowed))])
            n += 1
            jumps += "backjumped" in info
            if terminated:
                break
        elapsed, elapsed_cpu = time.perf_counter() - start, time.thread_time() - start_cpu
        if e == 0:
            continue
        times.append(elapsed)
        cpu.append(elapsed_cpu)
        steps += n
        backjumps += jumps
    total = sum(times)
    return {
        "episodes": episodes,
        "steps": steps,
        "placements_per_s": steps / total,
        "episode_ms_median": 1000 * statistics.median(times),
        "episode_ms_max": 1000 * max(times),
        "backjumps": backjumps,  # steps that backjumped
        "cpu_placements_per_s": steps / sum(cpu),
        "cpu_episode_ms_median": 1000 * statistics.median(cpu),
        "cpu_episode_ms_max": 1000 * max(cpu),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    problem = mcmpart.load(args.file)
    results = {}
    for sat in (True, False):
        env = PlacementEnv(problem, sat=sat)
        r = measure(env, args.episodes, args.seed)
        results["sat" if sat else "no_sat"] = r
        print(
            f"{problem.name} ({problem.num_nodes} nodes, {problem.num_chips} chips), SAT {'on' if sat else 'off'}: "
            f"{r['placements_per_s']:,.0f} placements/s, episode {r['episode_ms_median']:.1f} ms median, "
            f"{r['episode_ms_max']:.1f} ms max over {r['episodes']} episodes; CPU time: "
            f"{r['cpu_placements_per_s']:,.0f} placements/s, episode {r['cpu_episode_ms_median']:.1f} ms median, "
            f"{r['cpu_episode_ms_max']:.1f} ms max"
        )
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
