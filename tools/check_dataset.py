#!/usr/bin/env python3
"""Validate data/graphs against the mcmpart graph format and its manifest.

Checks, for every graph listed in manifest.json:
  * the file loads, ids are unique, edges reference known ids, no self-loops,
    no parallel edges, the graph is acyclic;
  * all numbers are non-negative integers, edge bytes <= source output bytes;
  * a replicable node has only replicable inputs and holds no params;
  * nodes / edges / flops / weight_bytes equal the manifest entry;
  * every transformer is in the test split, validation has no transformers;
  * bert-large: weight bytes within 2% of 4 * parameter count of the
    instantiated BertModel, flops within 10% of 2 * non-embedding params * 128.

Usage: python tools/check_dataset.py [--dir data/graphs]
Exit code 0 when everything passes.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import sys


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def check_graph(g, name):
    errs = []
    ids = [n["id"] for n in g["nodes"]]
    if len(ids) != len(set(ids)):
        errs.append("duplicate ids")
    nodes = {n["id"]: n for n in g["nodes"]}
    for n in g["nodes"]:
        for k in ("flops", "params", "output_bytes"):
            v = n.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                errs.append(f"node {n['id']}: bad {k}={v!r}")
        if not isinstance(n.get("op"), str) or not n["op"]:
            errs.append(f"node {n['id']}: bad op")
        if "replicable" in n and n["replicable"] is not True:
            errs.append(f"node {n['id']}: replicable written but not true")
        if n.get("replicable") and n["params"]:
            errs.append(f"node {n['id']}: replicable node holds params")
    succ = collections.defaultdict(list)
    indeg = {i: 0 for i in nodes}
    seen = set()
    for e in g["edges"]:
        s, t, b = e["from"], e["to"], e["bytes"]
        if s not in nodes or t not in nodes:
            errs.append(f"edge to unknown id {s}->{t}")
            continue
        if s == t:
            errs.append(f"self loop {s}")
        if (s, t) in seen:
            errs.append(f"parallel edge {s}->{t}")
        seen.add((s, t))
        if not isinstance(b, int) or b < 0:
            errs.append(f"edge {s}->{t}: bad bytes {b!r}")
        elif b > nodes[s]["output_bytes"]:
            errs.append(f"edge {s}->{t}: bytes {b} > source output {nodes[s]['output_bytes']}")
        if nodes[t].get("replicable") and not nodes[s].get("replicable"):
            errs.append(f"replicable {t} has non-replicable input {s}")
        succ[s].append(t)
        indeg[t] += 1
    stack = [i for i, d in indeg.items() if d == 0]
    visited = 0
    while stack:
        u = stack.pop()
        visited += 1
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    if visited != len(nodes):
        errs.append("graph has a cycle")
    return errs


def bert_large_reference():
    """(total params, non-embedding params) of BertModel(bert-large-uncased config)."""
    try:
        import torch
        import transformers
        cfg = transformers.BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                      intermediate_size=4096)
        with torch.device("meta"):
            m = transformers.BertModel(cfg)
        total = sum(p.numel() for p in m.parameters())
        emb = sum(p.numel() for p in m.embeddings.parameters())
        return total, total - emb, "instantiated BertModel"
    except Exception as exc:  # torch not installed: published figures
        total = 335_141_888
        emb = 30522 * 1024 + 512 * 1024 + 2 * 1024 + 2 * 1024
        return total, total - emb, f"published count ({type(exc).__name__})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="data/graphs")
    args = ap.parse_args()
    with open(os.path.join(args.dir, "manifest.json")) as f:
        man = json.load(f)
    entries = man["graphs"] if isinstance(man, dict) else man
    failures = 0
    by_split = collections.Counter()
    by_family = collections.Counter()
    by_split_family = collections.Counter()
    sizes = {}
    stats = []
    for m in entries:
        path = os.path.join(args.dir, f"{m['name']}.json.gz")
        if not os.path.exists(path):
            print(f"FAIL {m['name']}: missing file")
            failures += 1
            continue
        g = load(path)
        errs = check_graph(g, m["name"])
        fig = {"nodes": len(g["nodes"]), "edges": len(g["edges"]),
               "flops": sum(n["flops"] for n in g["nodes"]),
               "weight_bytes": sum(n["params"] for n in g["nodes"])}
        for k, v in fig.items():
            if m.get(k) != v:
                errs.append(f"manifest {k}={m.get(k)} but file has {v}")
        if g.get("name") != m["name"]:
            errs.append(f"name field {g.get('name')!r} != {m['name']!r}")
        if m["family"] == "transformer" and m["split"] != "test":
            errs.append("transformer outside the test split")
        if m["split"] not in ("train", "validation", "test"):
            errs.append(f"bad split {m['split']}")
        if errs:
            failures += 1
            print(f"FAIL {m['name']}: " + "; ".join(errs[:5]))
        by_split[m["split"]] += 1
        by_family[m["family"]] += 1
        by_split_family[(m["split"], m["family"])] += 1
        sizes[m["name"]] = os.path.getsize(path)
        stats.append((fig["nodes"], fig["edges"], m["name"], sum(1 for n in g["nodes"] if n.get("replicable"))))
    listed = {m["name"] for m in entries}
    extra = [f for f in os.listdir(args.dir) if f.endswith(".json.gz") and f[:-8] not in listed]
    if extra:
        print("files not in manifest:", extra)
        failures += 1

    print(f"graphs: {len(entries)}  failures: {failures}")
    print("per split:", dict(by_split))
    print("per family:", dict(by_family))
    print("per split x family:", {f"{s}/{f}": c for (s, f), c in sorted(by_split_family.items())})
    print("validation:", sorted(m["name"] for m in entries if m["split"] == "validation"))
    print("test:", sorted(m["name"] for m in entries if m["split"] == "test"))
    stats.sort(reverse=True)
    print("largest graphs (nodes, edges, name, replicable nodes):")
    for s in stats[:8]:
        print("  ", s)
    total = sum(sizes.values()) + os.path.getsize(os.path.join(args.dir, "manifest.json"))
    print(f"size on disk: {total / 2 ** 20:.2f} MiB (largest file {max(sizes.values()) / 1024:.0f} KiB "
          f"{max(sizes, key=sizes.get)})")

    bl = next((m for m in entries if m["name"] == "bert-large"), None)
    if bl is None:
        print("FAIL: bert-large missing")
        failures += 1
    else:
        total, nonemb, src = bert_large_reference()
        wb, ref_wb = bl["weight_bytes"], 4 * total
        fl, ref_fl = bl["flops"], 2 * nonemb * 128
        ok_w = abs(wb - ref_wb) <= 0.02 * ref_wb
        ok_f = abs(fl - ref_fl) <= 0.10 * ref_fl
        print(f"bert-large params ({src}): {total:,} total, {nonemb:,} non-embedding")
        print(f"bert-large weight bytes {wb:,} vs 4*params {ref_wb:,}: {100 * (wb - ref_wb) / ref_wb:+.3f}% "
              f"{'ok' if ok_w else 'FAIL'}")
        print(f"bert-large flops {fl:,} vs 2*non-emb*128 {ref_fl:,}: {100 * (fl - ref_fl) / ref_fl:+.3f}% "
              f"{'ok' if ok_f else 'FAIL'}")
        failures += (not ok_w) + (not ok_f)
    print("OK" if failures == 0 else f"{failures} FAILURES")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
