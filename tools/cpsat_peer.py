#!/usr/bin/env python3
"""The peer: OR-tools CP-SAT on the problem mcmpart solves, for side-by-side figures.

It models a graph on `ring(n, memory, compute, bandwidth)` (std::topologies' ring:
die i -> die i+1) under the four rules of std::placement, optionally with the user
rules of examples/rules/ (a per-chip node count, a per-chip compute budget, no
weights on a chip, a bound on the chips an edge spans), and answers one of three questions:

  first      the time to a first valid partition;
  enumerate  valid partitions per second for --time seconds (one worker, as CP-SAT
             enumerates);
  optimize   the lowest latency under mcmpart's analytical cost model, with CP-SAT's
             proven bound, within --time seconds.

A found partition is written with --out as a partition file, so that `mcmpart verify`
(and `mcmpart eval`) judge it with mcmpart's own checker and cost model.

  pip install ortools
  python3 tools/cpsat_peer.py data/graphs/bert-large.json.gz --ring 36 \
      --memory 128MiB --compute 4e12 --bandwidth 25e9 --mode first --time 120

The encoding of the rules, on a ring under acyclic_flow (every edge goes up):
  x[u][d]     node u on chip d (exactly one per node); chip(u) = sum d * x[u][d]
  acyclic     chip(u) <= chip(v) per edge
  no_skip     used[d+1] -> used[d], used[d] <-> OR_u x[u][d]
  memory      sum params(u) x[u][d] <= memory
  triangle    arc[a][b] <- x[u][a] & x[v][b] per edge; reach[a][b] >= arc[a][b] and
              reach[a][x] & arc[x][b] -> reach[a][b]; an arc a -> b with a path
              a ~> x ~> b through some chip x is forbidden (longest path 1).
The cost model (book: The cost model): compute(d) = sum flops(u)/compute over nodes on
d (a replicable node counts on each chip that hosts one of its placed consumers);
node u's output crosses link i -> i+1 iff chip(u) <= i < max chip of its consumers,
once, with the largest bytes of its edges; stage(d) = compute(d) + bytes on link
d -> d+1 / bandwidth; latency = max stage.
"""

import argparse
import gzip
import json
import re
import sys
import time

UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def size(text):
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([A-Za-z]*)\s*", text)
    if not m or (m.group(2) and m.group(2) not in UNITS):
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 128MiB)")
    return int(float(m.group(1)) * UNITS.get(m.group(2) or "B", 1))


def load_graph(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        g = json.load(f)
    nodes = {n["id"]: n for n in g["nodes"]}
    edges = [(e["from"], e["to"], e.get("bytes", nodes[e["from"]].get("output_bytes", 0))) for e in g["edges"]]
    return g.get("name", path), nodes, edges


def build(args):
    from ortools.sat.python import cp_model

    name, nodes, edges = load_graph(args.graph)
    rep = {i for i, n in nodes.items() if n.get("replicable", False)}
    placed = [i for i in nodes if i not in rep]
    pedges = [(u, v, b) for (u, v, b) in edges if u not in rep and v not in rep]
    c = args.ring
    m = cp_model.CpModel()
    x = {u: [m.new_bool_var(f"x_{k}_{d}") for d in range(c)] for k, u in enumerate(placed)}
    chip = {}
    for u in placed:
        m.add_exactly_one(x[u])
        chip[u] = m.new_int_var(0, c - 1, "")
        m.add(chip[u] == sum(d * x[u][d] for d in range(c)))
    # acyclic_flow
    for u, v, _ in pedges:
        m.add(chip[u] <= chip[v])
    # no_skip
    used = [m.new_bool_var("") for _ in range(c)]
    for d in range(c):
        m.add_max_equality(used[d], [x[u][d] for u in placed])
        if d + 1 < c:
            m.add_implication(used[d + 1], used[d])
    # memory_capacity (placed nodes, as the rule's formula ranges over them)
    for d in range(c):
        m.add(sum(nodes[u].get("params", 0) * x[u][d] for u in placed) <= args.memory)
    # triangle_dependency
    pairs = {(a, b) for a in range(c) for b in range(a + 1, c)}
    arc = {p: m.new_bool_var("") for p in pairs}
    reach = {p: m.new_bool_var("") for p in pairs}
    for u, v, _ in pedges:
        for a in range(c):
            for b in range(a + 1, c):
                m.add_bool_or([x[u][a].Not(), x[v][b].Not(), arc[(a, b)]])
    for (a, b) in pairs:
        m.add_implication(arc[(a, b)], reach[(a, b)])
        for y in range(a + 1, b):
            m.add_bool_or([reach[(a, y)].Not(), arc[(y, b)].Not(), reach[(a, b)]])
            m.add_bool_or([arc[(a, b)].Not(), reach[(a, y)].Not(), reach[(y, b)].Not()])
    # user rules
    if args.count is not None:
        for d in range(c):
            m.add(sum(x[u][d] for u in placed) <= args.count)
    if args.compute_budget is not None:
        cap = int(args.compute_budget * args.compute)
        for d in range(c):
            m.add(sum(nodes[u].get("flops", 0) * x[u][d] for u in placed) <= cap)
    if args.edge_span is not None:
        for u, v, _ in pedges:
            m.add(chip[v] - chip[u] <= args.edge_span)
    if args.no_weights_on is not None:
        for u in placed:
            if nodes[u].get("params", 0) > 0:
                m.add(x[u][args.no_weights_on] == 0)
    return m, name, nodes, edges, rep, placed, x, c


def add_latency(m, args, nodes, edges, rep, placed, x, c):
    """The analytical cost model, in integer units of 1/scale seconds."""
    scale = 1e9  # nanoseconds
    consumers = {}
    for u, v, b in edges:
        consumers.setdefault(u, []).append((v, b))
    # A replicable node is on chip d when a placed node it feeds (through
    # replicable nodes) is.
    feeds = {}

    def placed_consumers(r):
        if r in feeds:
            return feeds[r]
        out = set()
        for v, _ in consumers.get(r, []):
            out |= placed_consumers(v) if v in rep else {v}
        feeds[r] = out
        return out

    compute_t = []
    for d in range(c):
        terms = [round(nodes[u].get("flops", 0) / args.compute * scale) * x[u][d] for u in placed]
        for r in rep:
            f = round(nodes[r].get("flops", 0) / args.compute * scale)
            if f > 0 and placed_consumers(r):
                on = m.new_bool_var("")
                m.add_max_equality(on, [x[v][d] for v in placed_consumers(r)])
                terms.append(f * on)
        compute_t.append(sum(terms))
    link_t = [[] for _ in range(c)]
    chipv = {u: sum(d * x[u][d] for d in range(c)) for u in placed}
    for u in placed:
        outs = [(v, b) for v, b in consumers.get(u, []) if v not in rep]
        if not outs:
            continue
        size_ = max(b for _, b in outs)
        t = round(size_ / args.bandwidth * scale)
        if t == 0:
            continue
        top = m.new_int_var(0, c - 1, "")
        m.add_max_equality(top, [chipv[v] for v, _ in outs])
        for i in range(c - 1):
            # crosses link i -> i+1 iff chip(u) <= i < top
            low = m.new_bool_var("")
            m.add(chipv[u] <= i).only_enforce_if(low)
            m.add(chipv[u] > i).only_enforce_if(low.Not())
            high = m.new_bool_var("")
            m.add(top > i).only_enforce_if(high)
            m.add(top <= i).only_enforce_if(high.Not())
            cross = m.new_bool_var("")
            m.add_bool_and([low, high]).only_enforce_if(cross)
            m.add_bool_or([low.Not(), high.Not(), cross])
            link_t[i].append(t * cross)
    lat = m.new_int_var(0, 10**15, "latency")
    for d in range(c):
        m.add(compute_t[d] + sum(link_t[d]) <= lat)
    m.minimize(lat)
    return lat, scale


def placement(solver, x, c):
    return {u: next(d for d in range(c) if solver.value(v[d])) for u, v in x.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graph")
    p.add_argument("--ring", type=int, default=36, help="chips on the ring (default 36)")
    p.add_argument("--memory", type=size, default=128 * 2**20, help="per die (default 128MiB)")
    p.add_argument("--compute", type=float, default=4e12, help="FLOP/s per die (default 4e12)")
    p.add_argument("--bandwidth", type=float, default=25e9, help="B/s per link (default 25e9)")
    p.add_argument("--count", type=int, help="user rule: at most this many nodes per chip")
    p.add_argument("--compute-budget", type=float, help="user rule: seconds of compute per chip")
    p.add_argument("--no-weights-on", type=int, help="user rule: no node with weights on this chip")
    p.add_argument("--edge-span", type=int, help="user rule: an edge spans at most this many chips")
    p.add_argument("--mode", choices=["first", "enumerate", "optimize"], default="first")
    p.add_argument("--time", type=float, default=120.0, help="seconds (default 120)")
    p.add_argument("--workers", type=int, default=2, help="CP-SAT workers (default 2; enumerate uses 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="write the partition found here")
    args = p.parse_args()

    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    m, name, nodes, edges, rep, placed, x, c = build(args)
    lat = None
    if args.mode == "optimize":
        lat, scale = add_latency(m, args, nodes, edges, rep, placed, x, c)
    built = time.perf_counter() - t0
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = args.time
    s.parameters.random_seed = args.seed
    s.parameters.num_workers = 1 if args.mode == "enumerate" else args.workers
    report = {"graph": name, "chips": c, "nodes": len(placed), "mode": args.mode, "build_s": round(built, 3)}

    class Count(cp_model.CpSolverSolutionCallback):
        def __init__(self):
            super().__init__()
            self.n, self.first = 0, None

        def on_solution_callback(self):
            self.n += 1
            if self.first is None:
                self.first = time.perf_counter() - t1

    cb = Count()
    if args.mode == "enumerate":
        s.parameters.enumerate_all_solutions = True
    elif args.mode == "first":
        s.parameters.stop_after_first_solution = True
    t1 = time.perf_counter()
    status = s.solve(m, cb)
    wall = time.perf_counter() - t1
    report.update(status=s.status_name(status), solve_s=round(wall, 3), solutions=cb.n)
    report["first_s"] = None if cb.first is None else round(cb.first, 3)
    if args.mode == "enumerate":
        report["per_s"] = round(cb.n / wall, 2) if wall > 0 else None
    if lat is not None and status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        report["latency_s"] = s.objective_value / scale
        report["bound_latency_s"] = s.best_objective_bound / scale
        report["proven_optimal"] = status == cp_model.OPTIMAL
    if args.out and status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        with open(args.out, "w") as f:
            json.dump({"graph": name, "chips": c, "placement": placement(s, x, c)}, f)
        report["out"] = args.out
    print(json.dumps(report))
    return 0 if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else 1


if __name__ == "__main__":
    sys.exit(main())
