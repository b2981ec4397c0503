#!/usr/bin/env python3
"""Build an encoder-decoder's partition by hand, for a line of chips under
the four stdlib rules: what the search should find, to tell whether the
search or the proven bound is the far side of a gap.

The structure (T5-like graphs: a relative position bias read by every layer
of the encoder and of the decoder, the encoder's output read by every
decoder layer's cross-attention keys and values):

  P   the shared embedding table and both embedding lookups;
  E1  the encoder's confined span, first part (its bias and what precedes);
  E2  the rest of the encoder;
  Y   the decoder's input norm and first projections;
  Z1  the cross-attention keys/values read on A;
  A   the decoder's confined span, first part;
  Z2  the keys/values read on B;
  B   the rest of the decoder's span;
  Z3  the keys/values read after B;
  T   what follows the decoder's span.

Every arc of the chips' flow graph is then the only path between its ends
(`triangle_dependency`). Weights a chip cannot hold (beyond memory less a
headroom for activations) go to chips just below it that hold only weights.
The split fractions place the spans' boundaries by flops in topological
order. `mcmpart eval FILE --partition OUT` checks and costs the result.

Usage: python tools/encdec_by_hand.py GRAPH.json.gz -o OUT.partition.json
           [--chips 36] [--memory-mib 128] [--headroom-mib 16]
           [--encoder-split 0.5] [--decoder-split 0.5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys

LOGICAL = ["P", "E1", "E2", "Y", "Z1", "A", "Z2", "B", "Z3", "T"]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


class Graph:
    def __init__(self, g):
        self.name = g["name"]
        self.nodes = {n["id"]: n for n in g["nodes"]}
        self.ids = [n["id"] for n in g["nodes"]]
        self.rep = {n["id"] for n in g["nodes"] if n.get("replicable")}
        self.succ = {i: [] for i in self.ids}
        self.pred = {i: [] for i in self.ids}
        for e in g["edges"]:
            self.succ[e["from"]].append(e["to"])
            self.pred[e["to"]].append(e["from"])
        indeg = {i: len(self.pred[i]) for i in self.ids}
        self.order = [i for i in self.ids if indeg[i] == 0]
        k = 0
        while k < len(self.order):
            for v in self.succ[self.order[k]]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    self.order.append(v)
            k += 1
        self.pos = {i: k for k, i in enumerate(self.order)}

    def closure(self, start, nxt):
        seen, stack = {start}, [start]
        while stack:
            for v in nxt[stack.pop()]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        return seen

    def desc(self, u):
        return self.closure(u, self.succ)

    def anc(self, u):
        return self.closure(u, self.pred)

    def flops(self, u):
        return self.nodes[u].get("flops", 0)

    def params(self, u):
        return self.nodes[u].get("params", 0)


def first_part(g, span, frac):
    """The nodes of `span` before `frac` of its flops, in topological order."""
    total = sum(g.flops(i) for i in span)
    acc, first = 0, set()
    for i in g.order:
        if i in span:
            if acc + g.flops(i) / 2 <= frac * total:
                first.add(i)
            acc += g.flops(i)
    return first


def build(g, enc_split, dec_split):
    """Logical chip per node (see the module's notes)."""
    placed = lambda i: i not in g.rep
    multi = [i for i in g.order if placed(i) and sum(placed(v) for v in g.succ[i]) >= 4]
    enc_out = next((i for i in multi if any(g.nodes[v]["op"] == "linear" for v in g.succ[i])), None)
    enc_bias = next((i for i in multi if i != enc_out and enc_out and i in g.anc(enc_out)), None)
    dec_bias = next((i for i in multi if i not in (enc_out, enc_bias)), None)
    if None in (enc_out, enc_bias, dec_bias):
        sys.exit(f"{g.name}: no encoder output and two position biases (nodes with four consumers or more)")
    last = lambda u: max(g.succ[u], key=lambda v: g.pos[v])
    span = lambda u: (g.desc(u) & g.anc(last(u))) | {u, last(u)}
    w_enc, w_dec = span(enc_bias), span(dec_bias)
    enc1, dec1 = first_part(g, w_enc, enc_split), first_part(g, w_dec, dec_split)
    kv_of = {}
    after_dec_bias = g.desc(dec_bias)
    for k in g.succ[enc_out]:
        for i in g.desc(k) - after_dec_bias:
            kv_of[i] = k
    tail = g.desc(last(dec_bias)) - w_dec
    encoder = g.anc(enc_out)
    dec_bias_path = g.anc(dec_bias)
    compute = [i for i in g.order if placed(i) and g.nodes[i]["op"] != "get_attr"]
    place = {}
    for i in compute:
        if i in w_enc:
            place[i] = "E1" if i in enc1 else "E2"
        elif i in w_dec:
            place[i] = "A" if i in dec1 else "B"
        elif i in tail:
            place[i] = "T"
    embedding = set()
    for w in g.ids:
        if g.params(w) > 0 and len(g.succ[w]) >= 2:  # the shared table
            embedding |= {w} | set(g.succ[w])
            embedding |= {p for v in g.succ[w] for p in g.pred[v] if not g.pred[p] and placed(p)}
    for i in compute:
        if i in place:
            continue
        if i in embedding:
            place[i] = "P"
        elif i in kv_of:
            group = [j for j in kv_of if kv_of[j] == kv_of[i]]
            readers = {place[v] for j in group for v in g.succ[j] if v in place and v not in kv_of}
            lowest = min(readers, key=LOGICAL.index) if readers else "T"
            place[i] = {"A": "Z1", "B": "Z2"}.get(lowest, "Z3")
        elif i in encoder:
            place[i] = "E1" if g.desc(i) & enc1 else "E2"
        elif i in dec_bias_path:
            place[i] = "A"
        elif i in after_dec_bias:
            place[i] = "T"
        else:
            place[i] = "Y"
    for i in g.ids:
        if placed(i) and i not in place:
            readers = [v for v in g.succ[i] if v in place]
            place[i] = place[min(readers, key=lambda v: LOGICAL.index(place[v]))] if readers else "P"
    return place


def to_chips(g, place, capacity):
    """Chip ids along the line: each logical chip after the weight-only
    chips that hold what it cannot."""
    chip, used = {}, 0
    for x in LOGICAL:
        weights = [i for i in g.order if place.get(i) == x and g.params(i) > 0]
        held = sum(g.params(i) for i in weights)
        extra = []
        while held > capacity:
            w = weights.pop(0)
            held -= g.params(w)
            extra.append(w)
        room = 0
        for w in extra:
            if room < g.params(w):
                used, room = used + 1, capacity
            chip[w] = used - 1
            room -= g.params(w)
        for i, y in place.items():
            if y == x and i not in chip:
                chip[i] = used
        used += 1
    return chip, used


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graph")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--chips", type=int, default=36)
    ap.add_argument("--memory-mib", type=float, default=128)
    ap.add_argument("--headroom-mib", type=float, default=16)
    ap.add_argument("--encoder-split", type=float, default=0.5)
    ap.add_argument("--decoder-split", type=float, default=0.5)
    a = ap.parse_args()
    g = Graph(load(a.graph))
    capacity = (a.memory_mib - a.headroom_mib) * 2**20
    too_big = [i for i in g.ids if i not in g.rep and g.params(i) > a.memory_mib * 2**20]
    if too_big:
        sys.exit(f"{too_big[0]} holds more weights than a chip's memory: no partition fits")
    place = build(g, a.encoder_split, a.decoder_split)
    chip, used = to_chips(g, place, capacity)
    if used > a.chips:
        sys.exit(f"needs {used} chips, the package has {a.chips}")
    with open(a.out, "w") as f:
        json.dump({"graph": g.name, "chips": a.chips, "placement": chip}, f)
    print(f"{used} chips used, written to {a.out}")


if __name__ == "__main__":
    main()
