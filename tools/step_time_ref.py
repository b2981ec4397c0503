#!/usr/bin/env python3
"""An independent implementation of shared/spec/step-time.md, written from the
spec text alone, to cross-check `mcmpart eval --json` under step time.

usage: step_time_ref.py GRAPH.json[.gz] PARTITION.json PACKAGE.json
  PACKAGE.json is `mcmpart show FILE --format json` (chips, links).
Prints {"step_time_s": ...}. A node's measured time for its chip's `kind`
("times": {"a100": 1.25e-4}) replaces flops / compute."""
import gzip, heapq, json, sys
from collections import deque


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


def num(x, key):
    v = x.get(key)
    if v is None:
        v = x.get("attrs", {}).get(key)
    if isinstance(v, dict):
        v = v.get("value")
    return v


def main(gpath, ppath, kpath):
    g, part, pkg = load(gpath), load(ppath), load(kpath)
    nodes = g["nodes"]
    idx = {n["id"]: i for i, n in enumerate(nodes)}
    N = len(nodes)
    rep = [bool(n.get("replicable", False)) for n in nodes]
    out_bytes = [n.get("output_bytes", 0) for n in nodes]
    succ = [[] for _ in range(N)]
    pred = [[] for _ in range(N)]
    for e in g["edges"]:
        a, b = idx[e["from"]], idx[e["to"]]
        by = e.get("bytes", out_bytes[a])
        succ[a].append((b, by))
        pred[b].append(a)
    chips = pkg["chips"]
    C = len(chips)
    compute = [float(c["compute"]) for c in chips]
    overhead = [float(num(c, "overhead") or 0.0) for c in chips]
    kind = [num(c, "kind") for c in chips]
    links = pkg["links"]
    bw = [float(l["bandwidth"]) for l in links]
    lat = [float(num(l, "latency") or 0.0) for l in links]
    out = [[] for _ in range(C)]
    for li, l in enumerate(links):
        out[l["src"]].append((l["dst"], li))
    for o in out:
        o.sort()
    chip = {}
    for nid, c in part["placement"].items():
        chip[idx[nid]] = c
    # hosts of replicable nodes: chips of consumers or consumers' copies
    order = topo(N, succ)
    hosts = [set() for _ in range(N)]
    for u in reversed(order):
        if rep[u]:
            for v, _ in succ[u]:
                if rep[v]:
                    hosts[u] |= hosts[v]
                else:
                    hosts[u].add(chip[v])

    def t(u, d):
        measured = (nodes[u].get("times") or {}).get(kind[d]) if kind[d] else None
        if measured is not None:
            return float(measured) + overhead[d]
        return nodes[u].get("flops", 0) / compute[d] + overhead[d]

    # route tree from each chip: BFS, out-links by increasing destination
    def tree(a):
        parent = {a: None}
        q = deque([a])
        while q:
            x = q.popleft()
            for y, li in out[x]:
                if y not in parent:
                    parent[y] = (x, li)
                    q.append(y)
        return parent

    trees = [tree(a) for a in range(C)]
    # ops: (node, chip)
    ops = []
    for u in range(N):
        if rep[u]:
            for c in sorted(hosts[u]):
                ops.append((u, c))
        else:
            ops.append((u, chip[u]))
    # transfers per placed node: children links from each chip in its tree
    send = {}  # u -> (size, {chip: [child links]})
    for u in range(N):
        if rep[u]:
            continue
        a = chip[u]
        dests, size = set(), 0
        for v, by in succ[u]:
            if rep[v]:
                continue  # placed nodes never feed replicable ones
            if chip[v] != a:
                dests.add(chip[v])
                size = max(size, by)
        if not dests:
            continue
        par = trees[a]
        used = set()
        for c in dests:
            if c not in par:
                raise SystemExit(f"no route for {nodes[u]['id']}")
            x = c
            while par[x] is not None:
                p, li = par[x]
                used.add(li)
                x = p
        kids = {}
        for li in sorted(used):
            kids.setdefault(links[li]["src"], []).append(li)
        send[u] = (size, kids)
    # readiness bookkeeping
    arrived = {}  # (u, chip) -> time output of placed u is on chip
    op_end = {}  # (u, chip) -> end time
    need = {}
    for (u, d) in ops:
        need[(u, d)] = list(pred[u])
    ready_at = {}
    waiting_ops = [[] for _ in range(C)]  # (ready_time, node) heaps
    link_wait = [[] for _ in range(len(links))]  # (avail_time, node)
    chip_busy_until = [None] * C  # end time or None
    link_busy_until = [None] * len(links)
    chip_busy = [0.0] * C
    link_busy = [0.0] * len(links)
    events = []  # (time, seq, kind, payload)
    seq = 0
    pending = set(ops)

    def input_there(p, d):
        if rep[p]:
            return (p, d) in op_end
        if chip[p] == d:
            return (p, d) in op_end
        return (p, d) in arrived

    def check_ready(now):
        for o in list(pending):
            u, d = o
            if all(input_there(p, d) for p in pred[u]):
                pending.discard(o)
                heapq.heappush(waiting_ops[d], (now, u))

    def data_on(u, a, now):
        # output of placed u is now on chip a: transfers on a's child links
        if u in send:
            for li in send[u][1].get(a, []):
                heapq.heappush(link_wait[li], (now, u))

    now = 0.0
    check_ready(now)
    step = 0.0
    while True:
        # pick work
        progressed = True
        while progressed:
            progressed = False
            for d in range(C):
                if chip_busy_until[d] is None and waiting_ops[d]:
                    _, u = heapq.heappop(waiting_ops[d])
                    dur = t(u, d)
                    chip_busy[d] += dur
                    chip_busy_until[d] = now + dur
                    seq += 1
                    heapq.heappush(events, (now + dur, seq, "op", (u, d)))
            for li in range(len(links)):
                if link_busy_until[li] is None and link_wait[li]:
                    _, u = heapq.heappop(link_wait[li])
                    dur = lat[li] + send[u][0] / bw[li]
                    link_busy[li] += dur
                    link_busy_until[li] = now + dur
                    seq += 1
                    heapq.heappush(events, (now + dur, seq, "tr", (u, li)))
            # zero-time ends at this instant are applied before picking again
            if events and events[0][0] == now:
                apply_instant(events, now, op_end, arrived, chip_busy_until, link_busy_until, links, rep, chip, data_on)
                check_ready(now)
                progressed = True
        if not events:
            break
        now = events[0][0]
        apply_instant(events, now, op_end, arrived, chip_busy_until, link_busy_until, links, rep, chip, data_on)
        check_ready(now)
    if pending:
        raise SystemExit("deadlock")
    step = max(op_end.values()) if op_end else 0.0
    print(json.dumps({"step_time_s": step, "chip_busy_s": chip_busy, "link_busy_s": link_busy}))


def apply_instant(events, now, op_end, arrived, chip_busy_until, link_busy_until, links, rep, chip, data_on):
    while events and events[0][0] == now:
        _, _, kind, p = heapq.heappop(events)
        if kind == "op":
            u, d = p
            op_end[(u, d)] = now
            chip_busy_until[d] = None
            if not rep[u]:
                data_on(u, d, now)
        else:
            u, li = p
            link_busy_until[li] = None
            b = links[li]["dst"]
            arrived[(u, b)] = now
            data_on(u, b, now)


def topo(N, succ):
    indeg = [0] * N
    for a in range(N):
        for b, _ in succ[a]:
            indeg[b] += 1
    q = deque(i for i in range(N) if indeg[i] == 0)
    order = []
    while q:
        a = q.popleft()
        order.append(a)
        for b, _ in succ[a]:
            indeg[b] -= 1
            if indeg[b] == 0:
                q.append(b)
    return order


if __name__ == "__main__":
    main(*sys.argv[1:4])
