#!/usr/bin/env python3
"""Export PyTorch model architectures to mcmpart computation-graph JSON.

As a library: :func:`from_torch` exports one module (``mcmpart.from_torch``
imports this module, and so torch, only when called).  As a script,
``tools/export_torch.py`` runs :func:`main` over the registry below.

Every model is built from its architecture only, on the ``meta`` device: no
weights are downloaded, initialised or saved.  The graph is captured with
``torch.export`` (ATen "training" IR, which keeps high-level ops such as
``linear``, ``conv2d``, ``layer_norm``) and every node carries the fake-tensor
shapes that export propagates, from which we derive per-node FLOPs, resident
weight bytes and output bytes, plus per-edge tensor bytes.

Usage::

    python tools/export_torch.py --out data/graphs            # all models
    python tools/export_torch.py --out data/graphs --only bert-large resnet50
    python tools/export_torch.py --list                        # print registry

Writes ``NAME.json.gz`` per model (gzip with mtime 0, so reruns are
byte-identical) and ``manifest.json``.

``--profile`` also measures every op of the exported graph on this machine
(CPU by default; ``--device-kind NAME`` names the chip kind the times are
for) and records ``"times": {NAME: seconds}`` per node: the median of
``--repeats`` runs after one warm-up run, with the model's weights
materialised at random (values do not change the work of these models).
``--training`` exports one training step instead of inference: forward,
backward and an SGD update of every parameter, traced as one joint graph
with AOT autograd (``make_fx`` over ``torch.func.grad_and_value``); it is
written as ``NAME-train.json.gz``.  With ``--only`` the existing manifest
is updated in place (other entries are kept).  See tools/README.md for the
format, the FLOP conventions, the replicable rule and the split rule.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import math
import operator
import os
import random
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn as nn

SEED = 0
FORMAT_VERSION = 1

# --------------------------------------------------------------------------
# FLOP conventions (documented in tools/README.md).  A multiply-add is 2 FLOPs.
# --------------------------------------------------------------------------

# ops that move / reinterpret data only: 0 FLOPs
ZERO_FLOP_OPS = {
    "view", "reshape", "_unsafe_view", "flatten", "unflatten", "squeeze",
    "unsqueeze", "permute", "transpose", "t", "expand", "expand_as",
    "contiguous", "clone", "slice", "select", "narrow", "split",
    "split_with_sizes", "chunk", "unbind", "cat", "concat", "stack", "index",
    "index_select", "gather", "embedding", "to", "_to_copy", "type_as",
    "copy", "detach", "alias", "lift_fresh_copy", "zeros", "ones", "full",
    "empty", "zeros_like", "ones_like", "full_like", "empty_like",
    "new_zeros", "new_ones", "new_full", "new_empty", "arange", "scalar_tensor",
    "tensor", "pad", "constant_pad_nd", "roll", "flip", "repeat", "tile",
    "pixel_shuffle", "channel_shuffle", "masked_fill_scalar", "diagonal",
    "movedim", "unfold", "as_strided", "slice_scatter", "select_scatter",
    "index_put", "fill", "tril", "triu", "dropout", "feature_dropout",
    "alpha_dropout", "native_dropout", "lift", "view_as", "float", "long",
    "int", "bool", "masked_select", "nonzero", "broadcast_to", "flatten_dense",
    "upsample_nearest2d", "_assert_tensor_metadata", "sym_size", "zero", "swapaxes", "swapdims",
}

# "small constant times numel" ops (per output element)
PER_ELEMENT_COST = {
    "softmax": 5, "log_softmax": 5, "_softmax": 5, "_log_softmax": 5,
    "layer_norm": 5, "native_layer_norm": 5, "group_norm": 5,
    "native_group_norm": 5, "instance_norm": 5, "rms_norm": 4,
    "batch_norm": 4, "_native_batch_norm_legit_no_training": 4,
    "native_batch_norm": 4, "cudnn_batch_norm": 4,
    "gelu": 8, "silu": 4, "sigmoid": 4, "tanh": 4, "hardswish": 4,
    "hardsigmoid": 3, "elu": 4, "selu": 5, "mish": 6, "softplus": 4,
    "erf": 4, "exp": 1, "log": 1, "rsqrt": 1, "sqrt": 1,
    "relu": 1, "relu6": 1, "hardtanh": 1, "leaky_relu": 1,
    "upsample_bilinear2d": 8, "_upsample_bilinear2d_aa": 8,
    "native_batch_norm_backward": 6,
}

# identity ops in eval mode: collapsed away (their input is wired straight to
# their consumers), because they do not exist in an inference graph
COLLAPSE_OPS = {"dropout", "feature_dropout", "alpha_dropout", "detach",
                "alias", "lift_fresh_copy"}


def _numel(t) -> int:
    return int(math.prod(t.shape)) if isinstance(t, torch.Tensor) else 0


def _tensor_bytes(v) -> int:
    """Bytes of the tensor(s) in a meta value (tuples/lists are summed)."""
    if isinstance(v, torch.Tensor):
        return _numel(v) * v.element_size()
    if isinstance(v, (tuple, list)):
        return sum(_tensor_bytes(x) for x in v)
    return 0


def _has_tensor(v) -> bool:
    if isinstance(v, torch.Tensor):
        return True
    if isinstance(v, (tuple, list)):
        return any(_has_tensor(x) for x in v)
    return False


def _first_tensor(v):
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(v, (tuple, list)):
        for x in v:
            t = _first_tensor(x)
            if t is not None:
                return t
    return None


def _val(a):
    """meta value of an fx argument (Node -> FakeTensor; constants as-is)."""
    if isinstance(a, torch.fx.Node):
        return a.meta.get("val")
    return a


def _arg0_alias(node):
    schema = getattr(node.target, "_schema", None)
    if schema is None or not schema.arguments:
        return None
    return schema.arguments[0].alias_info


def _writes_arg0(node) -> bool:
    """True for in-place ops (aten.fill_, aten.relu_, aten.add_ ...)."""
    a = _arg0_alias(node)
    return a is not None and a.is_write


def _aliases_arg0(node) -> bool:
    """True for views and in-place ops: the output aliases argument 0."""
    return _arg0_alias(node) is not None


def op_name(node: torch.fx.Node) -> str:
    """Short normalised ATen op name: aten.relu_.default -> relu."""
    tgt = node.target
    if tgt is operator.getitem:
        return "getitem"
    if hasattr(tgt, "_schema"):
        name = tgt._schema.name.split("::")[-1]
    elif hasattr(tgt, "__name__"):
        name = tgt.__name__
    else:
        name = str(tgt)
    name = name.split(".")[0]
    if name.endswith("_") and not name.endswith("__") and name != "_":
        name = name[:-1]  # in-place variants
    name = name.strip("_") if name.startswith("__") else name
    return name or "unknown"


def _rnn_flops(node, gates: int, elementwise_per_h: int) -> int:
    """aten.lstm.input / aten.gru.input: standard gate formulas.

    Per time step, per layer and direction: 2*gates*H*(I+H) for the two
    matrix products plus ``elementwise_per_h * H`` for bias adds, gate
    non-linearities and the cell/hidden update.
    """
    args = node.args
    inp = _val(args[0])
    params = args[2]
    has_biases, num_layers = bool(args[3]), int(args[4])
    bidirectional = bool(args[7])
    batch_first = bool(args[8])
    dirs = 2 if bidirectional else 1
    if inp.dim() == 3:
        seq, batch = (inp.shape[1], inp.shape[0]) if batch_first else (inp.shape[0], inp.shape[1])
    else:
        seq, batch = inp.shape[0], 1
    stride = 4 if has_biases else 2
    total = 0
    for i in range(num_layers * dirs):
        w_ih = _val(params[i * stride])
        w_hh = _val(params[i * stride + 1])
        gh, in_size = w_ih.shape
        hid = w_hh.shape[1]
        per_step = 2 * gh * (in_size + hid) + elementwise_per_h * hid
        total += per_step * seq * batch
    return int(total)


def _einsum_flops(node) -> int:
    eq = node.args[0].replace(" ", "")
    ops = node.args[1]
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    sizes: dict[str, int] = {}
    for term, op in zip(terms, ops):
        shp = list(_val(op).shape)
        if "..." in term:
            pre, post = term.split("...")
            n_ell = len(shp) - len(pre) - len(post)
            letters = list(pre) + [f"_e{k}" for k in range(n_ell)] + list(post)
        else:
            letters = list(term)
        for l, s in zip(letters, shp):
            sizes[l] = max(sizes.get(l, 1), int(s))
    total = math.prod(sizes.values())
    out_letters = set(rhs.replace("...", "")) | {k for k in sizes if k.startswith("_e")}
    contracted = any(k not in out_letters for k in sizes)
    return int(2 * total if contracted else total)


def node_flops(node: torch.fx.Node, name: str) -> int:
    out = _first_tensor(node.meta.get("val"))
    out_numel = _numel(out)
    a = node.args
    if name in ("linear",):
        return 2 * out_numel * int(_val(a[0]).shape[-1])
    if name in ("mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot"):
        x = _val(a[1] if name in ("addmm", "baddbmm", "addbmm", "addmv") else a[0])
        k = int(x.shape[-1])
        if name in ("dot", "vdot"):
            return 2 * k
        return 2 * out_numel * k
    if name in ("conv1d", "conv2d", "conv3d", "convolution", "_convolution",
                "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        x, w = _val(a[0]), _val(a[1])
        transposed = name.startswith("conv_transpose") or (
            name in ("convolution", "_convolution") and bool(a[6]))
        kernel = int(math.prod(w.shape[2:]))
        if transposed:  # weight [Cin, Cout/groups, k...]; every input element scatters
            return 2 * _numel(x) * int(w.shape[1]) * kernel
        return 2 * out_numel * int(w.shape[1]) * kernel
    if name == "convolution_backward":
        # grad_input and grad_weight, each a convolution as large as the forward one
        w = _val(a[2])
        return 4 * _numel(_val(a[0])) * int(w.shape[1]) * int(math.prod(w.shape[2:]))
    if name == "scaled_dot_product_attention":
        q, k = _val(a[0]), _val(a[1])
        bh = int(math.prod(q.shape[:-2]))
        lq, e = int(q.shape[-2]), int(q.shape[-1])
        lk = int(k.shape[-2])
        ev = int(_val(a[2]).shape[-1])
        return 2 * bh * lq * lk * e + 2 * bh * lq * lk * ev + 5 * bh * lq * lk
    if name == "einsum":
        return _einsum_flops(node)
    if name == "lstm":
        return _rnn_flops(node, 4, 32)
    if name == "gru":
        return _rnn_flops(node, 3, 22)
    if name == "rnn_tanh" or name == "rnn_relu":
        return _rnn_flops(node, 1, 6)
    if name in ("max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
                "avg_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices"):
        ks = a[1]
        ks = [ks] if isinstance(ks, int) else list(ks)
        dims = int(name[-2]) if name[-2].isdigit() else (int(name.split("pool")[1][0]))
        if len(ks) == 1:
            ks = ks * dims
        return out_numel * int(math.prod(ks))
    if name.startswith("adaptive_") or name in (
            "mean", "sum", "amax", "amin", "max", "min", "var", "std", "norm",
            "linalg_vector_norm", "logsumexp", "prod", "argmax", "argmin",
            "cumsum", "any", "all", "var_mean", "std_mean", "linalg_vector_norm"):
        inp = _val(a[0]) if a else None
        n_in = _numel(inp) if isinstance(inp, torch.Tensor) else out_numel
        return max(n_in, out_numel)
    if name in ZERO_FLOP_OPS:
        return 0
    if name in PER_ELEMENT_COST:
        return PER_ELEMENT_COST[name] * out_numel
    # default: elementwise / other, one FLOP per output element
    return out_numel


# --------------------------------------------------------------------------
# Graph conversion
# --------------------------------------------------------------------------

UNKNOWN_OPS: dict[str, int] = {}
# ops with their own formula in node_flops
FORMULA_OPS = {
    "linear", "mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot",
    "conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "convolution_backward", "scaled_dot_product_attention", "einsum", "lstm",
    "gru", "rnn_tanh", "rnn_relu", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "mean", "sum", "amax", "amin", "max", "min", "var", "std", "norm", "linalg_vector_norm",
    "logsumexp", "prod", "argmax", "argmin", "cumsum", "any", "all", "var_mean", "std_mean",
}
KNOWN_DEFAULT_OK = {
    "add", "sub", "mul", "div", "neg", "abs", "pow", "where", "ge", "gt",
    "le", "lt", "eq", "ne", "and", "or", "bitwise_and", "bitwise_or",
    "bitwise_not", "logical_and", "logical_or", "logical_not", "maximum",
    "minimum", "clamp", "clamp_min", "clamp_max", "rsub", "reciprocal",
    "masked_fill", "floor", "ceil", "round", "sign", "square", "cos", "sin",
    "floor_divide", "remainder", "fmod", "diff", "addcmul", "addcdiv", "lerp",
    "baddbmm", "hardswish", "sigmoid", "mul_scalar", "triu", "tril", "trunc",
    "scatter", "scatter_add", "isnan", "isinf", "outer", "bucketize", "sort",
    "topk", "cummax", "threshold_backward", "max_pool2d_with_indices_backward",
}


def export_graph(name: str, module: nn.Module, args: tuple, kwargs: dict | None = None,
                 profile: dict | None = None) -> dict:
    """The inference graph; with ``profile`` ({"kind", "repeats"}), each
    node's measured time on this machine too."""
    module.eval()
    ep = torch.export.export(module, args, kwargs or {}, strict=False)
    sig = ep.graph_signature
    from torch.export.graph_signature import InputKind

    kind_of: dict[str, Any] = {}
    for spec in sig.input_specs:
        kind_of[spec.arg.name] = spec.kind

    # tied weights (e.g. T5's shared embedding) are lifted once per module
    # path; merge the aliases into the first placeholder holding the tensor
    tensors = dict(module.named_parameters(remove_duplicate=False))
    tensors.update(dict(module.named_buffers(remove_duplicate=False)))
    first_holder: dict[int, torch.fx.Node] = {}
    alias: dict[torch.fx.Node, torch.fx.Node] = {}
    by_name = {n.name: n for n in ep.graph_module.graph.nodes}
    for spec in sig.input_specs:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER) and spec.target in tensors:
            key = id(tensors[spec.target])
            node = by_name.get(spec.arg.name)
            if node is None:
                continue
            if key in first_holder:
                alias[node] = first_holder[key]
            else:
                first_holder[key] = node

    times = None
    if profile is not None:
        materialise(module)
        user = iter(_real_inputs((args, kwargs or {})))
        feed = []
        for spec in sig.input_specs:
            if spec.kind == InputKind.PARAMETER:
                feed.append(module.get_parameter(spec.target).detach())
            elif spec.kind == InputKind.BUFFER:
                feed.append(module.get_buffer(spec.target))
            elif spec.kind == InputKind.USER_INPUT:
                feed.append(next(user))
            else:  # lifted constants, on meta like the model
                feed.append(_real(ep.constants[spec.target]))
        times = measure(ep.graph_module, feed, profile["repeats"])
    return graph_to_json(name, ep.graph_module.graph, kind_of, alias, times, profile)


def graph_to_json(name: str, graph, kind_of: dict, alias: dict, times: dict | None = None,
                  profile: dict | None = None) -> dict:
    """The graph format from an fx graph whose placeholders ``kind_of`` names
    (InputKind), tied-weight placeholders merged per ``alias``; ``times``
    (seconds per fx node) are written as ``times`` for ``profile["kind"]``."""
    from torch.export.graph_signature import InputKind

    nodes_fx = list(graph.nodes)

    # resolve collapsed nodes (dropout etc.) and getitem to their producer.
    # rep[n] = (producer node, bytes carried by an edge leaving n)
    rep: dict[torch.fx.Node, tuple[torch.fx.Node, int]] = {}
    keep: list[torch.fx.Node] = []
    info: dict[torch.fx.Node, dict] = {}

    for n in nodes_fx:
        if n.op == "output":
            continue
        if n in alias:
            rep[n] = rep[alias[n]]
            continue
        val = n.meta.get("val")
        if not _has_tensor(val):
            continue  # symbolic ints, asserts, non-tensor inputs
        if n.op == "call_function" and n.target is operator.getitem:
            src = n.args[0]
            if src in rep:
                root = rep[src][0]
                rep[n] = (root, _tensor_bytes(val))
                continue
        if n.op == "call_function":
            oname = op_name(n)
            if oname in COLLAPSE_OPS:
                first = n.args[0]
                if isinstance(first, torch.fx.Node) and first in rep:
                    rep[n] = rep[first]
                    continue
        rep[n] = (n, _tensor_bytes(val))
        keep.append(n)

    # build raw nodes
    out_nodes = []
    by_fx: dict[torch.fx.Node, dict] = {}
    for n in keep:
        val = n.meta.get("val")
        d: dict[str, Any] = {"id": n.name}
        if n.op == "placeholder":
            kind = kind_of.get(n.name)
            if kind == InputKind.USER_INPUT:
                d.update(op="placeholder", flops=0, params=0)
                d["_src"] = "input"
            else:
                t = _first_tensor(val)
                is_weight = kind == InputKind.PARAMETER or (
                    kind == InputKind.BUFFER and t is not None and t.is_floating_point())
                d.update(op="get_attr", flops=0,
                         params=_tensor_bytes(val) if is_weight else 0)
                d["_src"] = "weight" if is_weight else "const"
        elif n.op == "get_attr":
            d.update(op="get_attr", flops=0, params=0)
            d["_src"] = "const"
        else:
            oname = op_name(n)
            if oname not in ZERO_FLOP_OPS and oname not in PER_ELEMENT_COST and oname not in KNOWN_DEFAULT_OK \
                    and oname not in FORMULA_OPS and not oname.startswith("adaptive_"):
                UNKNOWN_OPS[oname] = UNKNOWN_OPS.get(oname, 0) + 1
            d.update(op=oname, flops=int(node_flops(n, oname)), params=0)
            d["_src"] = "op"
        d["output_bytes"] = _tensor_bytes(val)
        by_fx[n] = d
        out_nodes.append(d)

    # edges
    edge_map: dict[tuple[str, str], int] = {}
    preds: dict[str, set[str]] = {d["id"]: set() for d in out_nodes}
    for n in keep:
        dst = n.name
        for inp in n.all_input_nodes:
            if inp not in rep:
                continue  # non-tensor input (symbolic size etc.)
            src_node, nbytes = rep[inp]
            src = src_node.name
            if src == dst:
                continue
            key = (src, dst)
            edge_map[key] = max(edge_map.get(key, 0), int(nbytes))
            preds[dst].add(src)

    # in-place mutations (e.g. swin's `mask[h, w] = k` -> fill_ on a slice of
    # new_zeros, or `bias.clone()[..].zero_()`): later readers of the mutated
    # base tensor use the base node, not the in-place node, so add an edge
    # from the in-place node to every later user of the base tensor.
    # Edges only go to users before the next mutation of the same base: the
    # later readers depend on the earlier writes transitively.
    index = {n: i for i, n in enumerate(nodes_fx)}
    kept = set(keep)
    mutations: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for n in keep:
        if n.op != "call_function" or not _writes_arg0(n):
            continue
        root = n.args[0]
        while isinstance(root, torch.fx.Node) and root.op == "call_function" and _aliases_arg0(root):
            root = root.args[0]
        if isinstance(root, torch.fx.Node) and root in rep:
            mutations.setdefault(root, []).append(n)
    for root, muts in mutations.items():
        for i, n in enumerate(muts):
            nbytes = rep[n][1]  # the written region (the in-place op's output)
            lo = index[n]
            hi = index[muts[i + 1]] if i + 1 < len(muts) else len(nodes_fx)
            src = rep[n][0].name
            for u in root.users:
                if lo < index[u] < hi and u in kept and u.name != src:
                    key = (src, u.name)
                    edge_map[key] = max(edge_map.get(key, 0), int(nbytes))
                    preds[u.name].add(src)

    # dead-code elimination: keep only nodes from which a graph output is
    # reachable (drops unused buffers such as num_batches_tracked and the
    # unused pieces of HF's mask construction)
    out_node = next(n for n in nodes_fx if n.op == "output")
    sinks = {rep[x][0].name for x in out_node.all_input_nodes if x in rep}
    live = set(sinks)
    stack = list(sinks)
    while stack:
        u = stack.pop()
        for p in preds[u]:
            if p not in live:
                live.add(p)
                stack.append(p)
    dead_weights = [d["id"] for d in out_nodes if d["id"] not in live and d["params"]]
    if dead_weights:
        print(f"  {name}: {len(dead_weights)} unused weight nodes dropped: {dead_weights[:5]}")
    out_nodes = [d for d in out_nodes if d["id"] in live]

    # replicable: no path from a graph input and no weight upstream
    tainted: dict[str, bool] = {}
    order = {d["id"]: i for i, d in enumerate(out_nodes)}
    for d in out_nodes:  # fx order is topological
        t = d["_src"] in ("input", "weight")
        for p in preds[d["id"]]:
            if tainted.get(p, True):
                t = True
        tainted[d["id"]] = t
    for d in out_nodes:
        if not tainted[d["id"]]:
            d["replicable"] = True

    # measured seconds per kept node: a folded node's (getitem, eval-mode
    # no-ops) count on the node it folds into; inputs and weights take none
    measured: dict[str, float] = {}
    if times is not None:
        for n in keep:
            measured[n.name] = 0.0
        for n, t in times.items():
            if n in rep:
                root = rep[n][0].name
                measured[root] = measured.get(root, 0.0) + t

    ids = {d["id"] for d in out_nodes}
    edges = [{"from": s, "to": t, "bytes": b} for (s, t), b in edge_map.items() if s in ids and t in ids]
    nodes = []
    for d in out_nodes:
        e = {"id": d["id"], "op": d["op"], "flops": int(d["flops"]),
             "params": int(d["params"]), "output_bytes": int(d["output_bytes"])}
        if d.get("replicable"):
            e["replicable"] = True
        if d["id"] in measured:
            e["times"] = {profile["kind"]: float(f"{measured[d['id']]:.4g}")}
        nodes.append(e)
    _check_dag(nodes, edges, name)
    return {"name": name, "nodes": nodes, "edges": edges}


# --------------------------------------------------------------------------
# Profiling (--profile) and training steps (--training)
# --------------------------------------------------------------------------

TRAIN_LR = 0.01


def _real(t):
    """A real tensor like a meta one: random floats, zero integers (valid
    indices for embeddings and gathers)."""
    if not isinstance(t, torch.Tensor):
        return t
    if t.device.type != "meta":
        return t
    g = torch.Generator().manual_seed(SEED)
    if t.is_floating_point():
        return torch.randn(t.shape, dtype=t.dtype, generator=g)
    return torch.zeros(t.shape, dtype=t.dtype)


def _real_inputs(tree):
    """The tensors of a pytree of inputs, in order, made real."""
    from torch.utils._pytree import tree_leaves
    return [_real(x) for x in tree_leaves(tree) if isinstance(x, torch.Tensor)]


def materialise(module: nn.Module) -> None:
    """Gives a model built on ``meta`` real weights on the CPU: parameters
    normal(0, 0.02), floating buffers 1 (running variances must be
    positive), integer buffers 0."""
    if not any(t.device.type == "meta" for t in list(module.parameters()) + list(module.buffers())):
        return
    module.to_empty(device="cpu")
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, dtype=p.dtype, generator=g) * 0.02)
        for b in module.buffers():
            b.fill_(1 if b.is_floating_point() else 0)


def measure(gm: torch.fx.GraphModule, feed: list, repeats: int) -> dict:
    """Seconds each ``call_function`` node of ``gm`` takes on this machine,
    run on ``feed`` (its placeholders' values, in order): one warm-up run,
    whose result flows on, then the median of ``repeats`` timed runs."""
    import statistics

    times: dict[torch.fx.Node, float] = {}

    class Timer(torch.fx.Interpreter):
        def run_node(self, n):
            if n.op != "call_function":
                return super().run_node(n)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            out = n.target(*args, **kwargs)
            runs = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                n.target(*args, **kwargs)
                runs.append(time.perf_counter() - t0)
            times[n] = statistics.median(runs)
            return out

    with torch.no_grad():
        Timer(gm).run(*feed)
    return times


def export_training(name: str, module: nn.Module, args: tuple, kwargs: dict | None = None,
                    profile: dict | None = None) -> dict:
    """One training step as one graph: the forward pass, a loss (the mean
    square of every floating output), the backward pass and an SGD update
    ``p - lr * grad`` of every parameter, traced with AOT autograd
    (``make_fx`` of ``torch.func.grad_and_value``, fake tensors)."""
    from torch.export.graph_signature import InputKind
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functional_call, grad_and_value
    from torch.utils._pytree import tree_leaves

    kwargs = kwargs or {}
    materialise(module)
    module.train()
    params = {k: v.detach() for k, v in module.named_parameters()}
    buffers = {k: v for k, v in module.named_buffers()}
    inputs = _real_inputs((args, kwargs))

    def step(params, buffers, inputs):
        it = iter(inputs)
        from torch.utils._pytree import tree_map
        call_args, call_kwargs = tree_map(
            lambda x: next(it) if isinstance(x, torch.Tensor) else x, (args, kwargs))

        # The buffers are an argument, not captured: batch norm updates its
        # running statistics in place, which a grad transform allows on its
        # inputs only.
        def loss_fn(p, b):
            out = functional_call(module, (p, b), call_args, call_kwargs)
            outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
            return sum(t.pow(2).mean() for t in outs)

        grads, loss = grad_and_value(loss_fn, argnums=0)(params, buffers)
        return loss, {k: params[k] - TRAIN_LR * grads[k] for k in params}

    gm = make_fx(step, tracing_mode="fake")(params, buffers, inputs)
    # Placeholders in flattening order: parameters, buffers, inputs.
    names = [("p_", k, InputKind.PARAMETER) for k in params] + \
        [("b_", k, InputKind.BUFFER) for k in buffers] + \
        [("", f"input_{i}", InputKind.USER_INPUT) for i in range(len(inputs))]
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == len(names), (len(placeholders), len(names))
    kind_of = {}
    for n, (prefix, k, kind) in zip(placeholders, names):
        n.name = prefix + k.replace(".", "_")
        kind_of[n.name] = kind
    times = None
    if profile is not None:
        times = measure(gm, list(params.values()) + list(buffers.values()) + inputs, profile["repeats"])
    return graph_to_json(name, gm.graph, kind_of, {}, times, profile)


def from_torch(module: nn.Module, example_inputs: Any, profile: bool = False, training: bool = False,
               name: str | None = None, kwargs: dict | None = None, device_kind: str = "cpu",
               repeats: int = 5) -> dict:
    """One module's graph in mcmpart's graph format (the dict a ``.json``
    graph file holds): the inference graph, or with ``training`` one
    training step (forward, backward, SGD update).  ``example_inputs`` is
    a tensor or a tuple of the positional inputs (``meta`` tensors will
    do, as will ``kwargs``); ``profile`` measures every op on this machine
    and records its time for chip kind ``device_kind`` (the median of
    ``repeats`` runs; the module's weights are materialised at random if
    it is on ``meta``).  ``name`` defaults to the module's class name."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"from_torch exports a torch.nn.Module, not {type(module).__name__}")
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    name = name or type(module).__name__.lower()
    prof = {"kind": device_kind, "repeats": max(1, int(repeats))} if profile else None
    export = export_training if training else export_graph
    g = export(name, module, args, kwargs, prof)
    _check_dag(g["nodes"], g["edges"], name)
    return g


def _check_dag(nodes, edges, name):
    ids = [n["id"] for n in nodes]
    assert len(ids) == len(set(ids)), f"{name}: duplicate ids"
    idset = set(ids)
    indeg = {i: 0 for i in ids}
    succ: dict[str, list[str]] = {i: [] for i in ids}
    seen = set()
    for e in edges:
        assert e["from"] in idset and e["to"] in idset, f"{name}: dangling edge {e}"
        assert e["from"] != e["to"], f"{name}: self loop {e}"
        k = (e["from"], e["to"])
        assert k not in seen, f"{name}: parallel edge {k}"
        seen.add(k)
        succ[e["from"]].append(e["to"])
        indeg[e["to"]] += 1
    stack = [i for i in ids if indeg[i] == 0]
    cnt = 0
    while stack:
        u = stack.pop()
        cnt += 1
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    assert cnt == len(ids), f"{name}: cycle"
    rep = {n["id"]: n.get("replicable", False) for n in nodes}
    for e in edges:
        if rep[e["to"]]:
            assert rep[e["from"]], f"{name}: replicable {e['to']} has non-replicable input {e['from']}"


# --------------------------------------------------------------------------
# Model registry
# --------------------------------------------------------------------------

@dataclass
class Entry:
    name: str
    family: str        # convolutional | recurrent | transformer
    arch: str          # architecture family, e.g. resnet, bert
    build: Callable[[], tuple[nn.Module, tuple, dict]]
    split: str = ""    # filled by assign_split


REGISTRY: list[Entry] = []

# validation: ~8 graphs, never transformers
VALIDATION = {
    "resnet34", "vgg13_bn", "densenet169", "mobilenet_v3_small",
    "efficientnet_b2", "regnet_x_1_6gf", "shufflenet_v2_x1_5", "gru_lm_medium",
}
# held-out non-transformers for the test set (every transformer is test too)
TEST_EXTRA = {
    "inception_v3", "efficientnet_b4", "densenet201", "regnet_y_8gf",
    "resnext101_32x8d", "lstm_seq2seq_attn", "mnasnet1_3", "convnext_base",
}


def assign_split(e: Entry) -> str:
    if e.family == "transformer":
        return "test"
    if e.name in VALIDATION:
        return "validation"
    if e.name in TEST_EXTRA:
        return "test"
    return "train"


def meta(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype, device="meta")


def reg(name, family, arch, build):
    REGISTRY.append(Entry(name, family, arch, build))


# ---- transformers (HuggingFace, config only) -------------------------------

SEQ = 128


def hf(config_cls_name, model_cls_name, seq=SEQ, encdec=False, **cfg):
    """HuggingFace model from a config (no weights), called with keyword inputs
    so that parameter nodes are named after the module path, e.g.
    p_encoder_layer_0_attention_self_query_weight."""
    def build():
        import transformers
        cfg.setdefault("attn_implementation", "eager")
        config = getattr(transformers, config_cls_name)(**cfg)
        config.use_cache = False
        with torch.device("meta"):
            model = getattr(transformers, model_cls_name)(config)
        kwargs = {"input_ids": meta(1, seq, dtype=torch.long)}
        if encdec:
            kwargs["decoder_input_ids"] = meta(1, seq, dtype=torch.long)
        return model, (), kwargs
    return build


# order matters: bert-large first, resnet50 second
reg("bert-large", "transformer", "bert", hf("BertConfig", "BertModel", hidden_size=1024, num_hidden_layers=24,
                                          num_attention_heads=16, intermediate_size=4096))


# ---- torchvision -------------------------------------------------------------

def tv(fn_name, size=224, **kw):
    def build():
        import torchvision
        fn = getattr(torchvision.models, fn_name)
        if fn_name.startswith("regnet"):
            _regnet_cpu_block_params()
        with torch.device("meta"):
            model = fn(weights=None, **kw)
        return model, (meta(1, 3, size, size),), {}
    return build


def _regnet_cpu_block_params():
    """RegNet computes its block widths with torch ops at construction time;
    run that part on the CPU while the module itself is built on meta."""
    from torchvision.models import regnet
    bp = regnet.BlockParams
    if getattr(bp, "_mcm_patched", False):
        return
    orig = bp.from_init_params.__func__

    def patched(cls, *a, **k):
        with torch.device("cpu"):
            return orig(cls, *a, **k)

    bp.from_init_params = classmethod(patched)
    bp._mcm_patched = True


def tv_sub(module_name, fn_name, shape, **kw):
    def build():
        import importlib
        mod = importlib.import_module(f"torchvision.models.{module_name}")
        with torch.device("meta"):
            model = getattr(mod, fn_name)(weights=None, **kw)
        return model, (meta(*shape),), {}
    return build


reg("resnet50", "convolutional", "resnet", tv("resnet50"))

reg("bert-base", "transformer", "bert", hf("BertConfig", "BertModel"))
for n, L, H, A in [("gpt2", 12, 768, 12), ("gpt2-medium", 24, 1024, 16),
                   ("gpt2-large", 36, 1280, 20), ("gpt2-xl", 48, 1600, 25)]:
    reg(n, "transformer", "gpt2", hf("GPT2Config", "GPT2Model", n_layer=L, n_embd=H, n_head=A))
reg("t5-small", "transformer", "t5", hf("T5Config", "T5Model", encdec=True, d_model=512, d_ff=2048, num_layers=6,
                                        num_heads=8, d_kv=64))
reg("t5-base", "transformer", "t5", hf("T5Config", "T5Model", encdec=True, d_model=768, d_ff=3072, num_layers=12,
                                       num_heads=12, d_kv=64))
reg("distilbert-base", "transformer", "distilbert", hf("DistilBertConfig", "DistilBertModel"))
reg("roberta-base", "transformer", "roberta", hf("RobertaConfig", "RobertaModel", vocab_size=50265,
                                                 max_position_embeddings=514, type_vocab_size=1, pad_token_id=1))
reg("albert-base-v2", "transformer", "albert", hf("AlbertConfig", "AlbertModel", embedding_size=128,
                                                  hidden_size=768, num_attention_heads=12,
                                                  intermediate_size=3072, num_hidden_layers=12))

for n in ["vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32"]:
    reg(n, "transformer", "vit", tv(n))
reg("vit_h_14", "transformer", "vit", tv("vit_h_14"))
for n in ["swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b"]:
    reg(n, "transformer", "swin", tv(n))
reg("maxvit_t", "transformer", "maxvit", tv("maxvit_t"))
reg("bart-base", "transformer", "bart", hf("BartConfig", "BartModel", encdec=True, vocab_size=50265, d_model=768,
                                         encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
                                         decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072))
reg("opt-125m", "transformer", "opt", hf("OPTConfig", "OPTModel", hidden_size=768, num_hidden_layers=12,
                                        ffn_dim=3072, num_attention_heads=12, word_embed_proj_dim=768))
reg("opt-350m", "transformer", "opt", hf("OPTConfig", "OPTModel", hidden_size=1024, num_hidden_layers=24,
                                        ffn_dim=4096, num_attention_heads=16, word_embed_proj_dim=512,
                                        do_layer_norm_before=False))
reg("electra-base", "transformer", "electra", hf("ElectraConfig", "ElectraModel", embedding_size=768,
                                                hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                                intermediate_size=3072))

# convolutional
reg("alexnet", "convolutional", "alexnet", tv("alexnet"))
for n in ["vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]:
    reg(n, "convolutional", "vgg", tv(n))
for n in ["resnet18", "resnet34", "resnet101", "resnet152"]:
    reg(n, "convolutional", "resnet", tv(n))
for n in ["resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d"]:
    reg(n, "convolutional", "resnext", tv(n))
for n in ["wide_resnet50_2", "wide_resnet101_2"]:
    reg(n, "convolutional", "wide_resnet", tv(n))
for n in ["densenet121", "densenet161", "densenet169", "densenet201"]:
    reg(n, "convolutional", "densenet", tv(n))
for n in ["mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large"]:
    reg(n, "convolutional", "mobilenet", tv(n))
for i in range(8):
    reg(f"efficientnet_b{i}", "convolutional", "efficientnet", tv(f"efficientnet_b{i}"))
for n in ["efficientnet_v2_s", "efficientnet_v2_m", "efficientnet_v2_l"]:
    reg(n, "convolutional", "efficientnet_v2", tv(n))
reg("inception_v3", "convolutional", "inception", tv("inception_v3", size=299, aux_logits=False, init_weights=False))
reg("googlenet", "convolutional", "googlenet", tv("googlenet", aux_logits=False, init_weights=False))
for n in ["shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"]:
    reg(n, "convolutional", "shufflenet", tv(n))
for n in ["squeezenet1_0", "squeezenet1_1"]:
    reg(n, "convolutional", "squeezenet", tv(n))
for n in ["mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3"]:
    reg(n, "convolutional", "mnasnet", tv(n))
for n in ["regnet_x_400mf", "regnet_x_800mf", "regnet_x_1_6gf", "regnet_x_3_2gf", "regnet_x_8gf",
          "regnet_x_16gf", "regnet_x_32gf", "regnet_y_400mf", "regnet_y_800mf", "regnet_y_1_6gf",
          "regnet_y_3_2gf", "regnet_y_8gf", "regnet_y_16gf", "regnet_y_32gf", "regnet_y_128gf"]:
    reg(n, "convolutional", "regnet", tv(n))
for n in ["convnext_tiny", "convnext_small", "convnext_base", "convnext_large"]:
    reg(n, "convolutional", "convnext", tv(n))
# segmentation and video CNNs
reg("fcn_resnet50", "convolutional", "fcn", tv_sub("segmentation", "fcn_resnet50", (1, 3, 224, 224),
                                                 weights_backbone=None, aux_loss=False))
reg("deeplabv3_resnet50", "convolutional", "deeplabv3", tv_sub("segmentation", "deeplabv3_resnet50", (1, 3, 224, 224),
                                                             weights_backbone=None, aux_loss=False))
reg("deeplabv3_mobilenet_v3_large", "convolutional", "deeplabv3",
    tv_sub("segmentation", "deeplabv3_mobilenet_v3_large", (1, 3, 224, 224), weights_backbone=None, aux_loss=False))
reg("lraspp_mobilenet_v3_large", "convolutional", "lraspp",
    tv_sub("segmentation", "lraspp_mobilenet_v3_large", (1, 3, 224, 224), weights_backbone=None))
reg("fcn_resnet101", "convolutional", "fcn", tv_sub("segmentation", "fcn_resnet101", (1, 3, 224, 224),
                                                   weights_backbone=None, aux_loss=False))
reg("deeplabv3_resnet101", "convolutional", "deeplabv3",
    tv_sub("segmentation", "deeplabv3_resnet101", (1, 3, 224, 224), weights_backbone=None, aux_loss=False))
for n in ["r3d_18", "mc3_18", "r2plus1d_18"]:
    reg(n, "convolutional", "video_resnet", tv_sub("video", n, (1, 3, 16, 112, 112)))
reg("s3d", "convolutional", "s3d", tv_sub("video", "s3d", (1, 3, 16, 224, 224)))


# ---- recurrent models built from torch.nn ----------------------------------

class RNNLM(nn.Module):
    """Word-level language model: embedding -> stacked LSTM/GRU -> decoder."""

    def __init__(self, cell, vocab, emb, hidden, layers, tie=False, bidirectional=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(emb, hidden, layers, batch_first=True, bidirectional=bidirectional)
        out_dim = hidden * (2 if bidirectional else 1)
        self.proj = nn.Linear(out_dim, emb) if (tie and out_dim != emb) else None
        self.decoder = nn.Linear(emb if tie else out_dim, vocab)
        if tie:
            self.decoder.weight = self.embed.weight

    def forward(self, x):
        h, _ = self.rnn(self.embed(x))
        if self.proj is not None:
            h = self.proj(h)
        return torch.log_softmax(self.decoder(h), dim=-1)


class LayerwiseLSTM(nn.Module):
    """GNMT-style stack of single-layer LSTMs with residual connections."""

    def __init__(self, dim, layers, first_bidirectional=True):
        super().__init__()
        self.layers = nn.ModuleList()
        for i in range(layers):
            if i == 0 and first_bidirectional:
                self.layers.append(nn.LSTM(dim, dim // 2, 1, batch_first=True, bidirectional=True))
            else:
                self.layers.append(nn.LSTM(dim, dim, 1, batch_first=True))

    def forward(self, x):
        for i, l in enumerate(self.layers):
            y, _ = l(x)
            x = y + x if i >= 2 else y
        return x


class Seq2Seq(nn.Module):
    """Encoder-decoder (teacher forcing) with optional Luong/Bahdanau attention."""

    def __init__(self, cell, vocab, dim, enc_layers, dec_layers, attention, gnmt=False):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, dim)
        self.tgt_embed = nn.Embedding(vocab, dim)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        if gnmt:
            self.encoder = LayerwiseLSTM(dim, enc_layers)
            self.decoder = LayerwiseLSTM(dim, dec_layers, first_bidirectional=False)
        else:
            self.encoder = rnn(dim, dim, enc_layers, batch_first=True)
            self.decoder = rnn(dim, dim, dec_layers, batch_first=True)
        self.attention = attention
        if attention:
            self.attn_q = nn.Linear(dim, dim, bias=False)
            self.attn_out = nn.Linear(2 * dim, dim)
        self.generator = nn.Linear(dim, vocab)

    def forward(self, src, tgt):
        enc = self.encoder(self.src_embed(src))
        if isinstance(enc, tuple):  # nn.LSTM / nn.GRU: decoder starts from the encoder state
            enc, state = enc
            dec, _ = self.decoder(self.tgt_embed(tgt), state)
        else:  # GNMT: layer-wise stacks, the decoder sees the encoder through attention
            dec = self.decoder(self.tgt_embed(tgt))
        if self.attention:
            scores = torch.bmm(self.attn_q(dec), enc.transpose(1, 2))
            ctx = torch.bmm(torch.softmax(scores, dim=-1), enc)
            dec = torch.tanh(self.attn_out(torch.cat([dec, ctx], dim=-1)))
        return torch.log_softmax(self.generator(dec), dim=-1)


class CharCNNLSTM(nn.Module):
    """Character-aware LM (Kim et al. 2016 style): char CNN + highway + LSTM."""

    def __init__(self, chars=100, char_dim=16, word_len=20, filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256)),
                 hidden=512, layers=2, vocab=10000):
        super().__init__()
        self.word_len = word_len
        self.embed = nn.Embedding(chars, char_dim)
        self.convs = nn.ModuleList(nn.Conv1d(char_dim, n, w) for w, n in filters)
        d = sum(n for _, n in filters)
        self.hw_t = nn.Linear(d, d)
        self.hw_h = nn.Linear(d, d)
        self.lstm = nn.LSTM(d, hidden, layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, x):  # x: [1, seq, word_len]
        b, s, w = x.shape
        e = self.embed(x.reshape(b * s, w)).transpose(1, 2)
        feats = [torch.amax(torch.tanh(c(e)), dim=-1) for c in self.convs]
        f = torch.cat(feats, dim=-1)
        t = torch.sigmoid(self.hw_t(f))
        f = t * torch.relu(self.hw_h(f)) + (1 - t) * f
        h, _ = self.lstm(f.reshape(b, s, -1))
        return self.decoder(h)


class DeepSpeechLike(nn.Module):
    """DeepSpeech2-style acoustic model: 2D conv front end + bidirectional GRUs."""

    def __init__(self, n_mels=80, hidden=512, layers=3, classes=29, cell="gru"):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 32, (11, 41), stride=(2, 2), padding=(5, 20)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20),
            nn.Conv2d(32, 32, (11, 21), stride=(1, 2), padding=(5, 10)), nn.BatchNorm2d(32), nn.Hardtanh(0, 20))
        feat = 32 * (n_mels // 4)
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnns = nn.ModuleList()
        for i in range(layers):
            self.rnns.append(rnn(feat if i == 0 else hidden * 2, hidden, 1, batch_first=True, bidirectional=True))
        self.fc = nn.Linear(hidden * 2, classes)

    def forward(self, x):  # [1, 1, T, n_mels]
        y = self.conv(x)  # [1, 32, T/2, n_mels/4]
        b, c, t, f = y.shape
        y = y.permute(0, 2, 1, 3).reshape(b, t, c * f)
        for r in self.rnns:
            y, _ = r(y)
        return torch.log_softmax(self.fc(y), dim=-1)


def rnn_build(cls, inputs, *a, **kw):
    def build():
        with torch.device("meta"):
            model = cls(*a, **kw)
        return model, tuple(meta(*s, dtype=dt) for s, dt in inputs), {}
    return build


L = torch.long
reg("lstm_lm_small", "recurrent", "lstm_lm", rnn_build(RNNLM, [((1, 35), L)], "lstm", 10000, 200, 200, 2))
reg("lstm_lm_medium", "recurrent", "lstm_lm", rnn_build(RNNLM, [((1, 35), L)], "lstm", 10000, 650, 650, 2, tie=True))
reg("lstm_lm_large", "recurrent", "lstm_lm", rnn_build(RNNLM, [((1, 35), L)], "lstm", 10000, 1500, 1500, 2, tie=True))
reg("lstm_lm_wt103", "recurrent", "lstm_lm", rnn_build(RNNLM, [((1, 64), L)], "lstm", 32000, 1024, 2048, 3, tie=True))
reg("gru_lm_small", "recurrent", "gru_lm", rnn_build(RNNLM, [((1, 35), L)], "gru", 10000, 256, 256, 2))
reg("gru_lm_medium", "recurrent", "gru_lm", rnn_build(RNNLM, [((1, 35), L)], "gru", 10000, 650, 650, 2))
reg("gru_lm_large", "recurrent", "gru_lm", rnn_build(RNNLM, [((1, 35), L)], "gru", 10000, 1024, 1024, 4))
reg("bilstm_tagger", "recurrent", "bilstm", rnn_build(RNNLM, [((1, 50), L)], "lstm", 20000, 300, 256, 2,
                                                      bidirectional=True))
reg("lstm_seq2seq", "recurrent", "seq2seq", rnn_build(Seq2Seq, [((1, 32), L), ((1, 32), L)], "lstm", 16000, 512, 2, 2,
                                                      False))
reg("lstm_seq2seq_attn", "recurrent", "seq2seq", rnn_build(Seq2Seq, [((1, 32), L), ((1, 32), L)], "lstm", 16000, 512,
                                                           2, 2, True))
reg("gru_seq2seq_attn", "recurrent", "seq2seq", rnn_build(Seq2Seq, [((1, 32), L), ((1, 32), L)], "gru", 16000, 768, 2,
                                                          2, True))
reg("gnmt", "recurrent", "gnmt", rnn_build(Seq2Seq, [((1, 50), L), ((1, 50), L)], "lstm", 32000, 1024, 8, 8, True,
                                           gnmt=True))
reg("gnmt_4layer", "recurrent", "gnmt", rnn_build(Seq2Seq, [((1, 50), L), ((1, 50), L)], "lstm", 32000, 512, 4, 4,
                                                  True, gnmt=True))
reg("char_cnn_lstm", "recurrent", "char_lm", rnn_build(CharCNNLSTM, [((1, 35, 20), L)]))
reg("deepspeech2", "recurrent", "deepspeech", rnn_build(DeepSpeechLike, [((1, 1, 200, 80), torch.float32)]))
reg("deepspeech2_lstm", "recurrent", "deepspeech", rnn_build(DeepSpeechLike, [((1, 1, 200, 80), torch.float32)],
                                                             hidden=768, layers=5, cell="lstm"))


for _e in REGISTRY:
    _e.split = assign_split(_e)


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def write_gz(path: str, obj) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode()
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as gz:
            gz.write(data)
    os.replace(tmp, path)


def summary(e: Entry, g: dict) -> dict:
    return {
        "name": g["name"], "family": e.family, "arch": e.arch, "split": e.split,
        "nodes": len(g["nodes"]), "edges": len(g["edges"]),
        "flops": sum(n["flops"] for n in g["nodes"]),
        "weight_bytes": sum(n["params"] for n in g["nodes"]),
        "file": f"{g['name']}.json.gz",
    }


def load_manifest(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        m = json.load(f)
    lst = m["graphs"] if isinstance(m, dict) else m
    return {x["name"]: x for x in lst}


def save_manifest(path, entries: dict):
    order = {e.name: i for i, e in enumerate(REGISTRY)}
    lst = sorted(entries.values(), key=lambda x: order.get(x["name"], 10 ** 6))
    obj = {"format_version": FORMAT_VERSION, "generator": "tools/export_torch.py",
           "batch": 1, "seq_len": SEQ, "dtype": "float32", "graphs": lst}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="data/graphs")
    ap.add_argument("--only", nargs="*", default=None, help="export only these registry names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--max-nodes", type=int, default=30000, help="skip graphs larger than this")
    ap.add_argument("--profile", action="store_true",
                    help="measure every op on this machine and record its time per node (`times`)")
    ap.add_argument("--device-kind", default="cpu",
                    help="the chip kind the measured times are for (a package's `kind`); default cpu")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per op (the median is kept)")
    ap.add_argument("--training", action="store_true",
                    help="export a training step (forward, backward, SGD update) as NAME-train")
    args = ap.parse_args(argv)
    profile = {"kind": args.device_kind, "repeats": max(1, args.repeats)} if args.profile else None

    if args.list:
        for e in REGISTRY:
            print(f"{e.name:32s} {e.family:14s} {e.arch:16s} {e.split}")
        return 0

    warnings.filterwarnings("ignore")
    torch.manual_seed(SEED)
    random.seed(SEED)
    torch.set_num_threads(1)

    os.makedirs(args.out, exist_ok=True)
    man_path = os.path.join(args.out, "manifest.json")
    manifest = load_manifest(man_path)
    names = {e.name for e in REGISTRY}
    todo = REGISTRY
    if args.only:
        unknown = [n for n in args.only if n not in names]
        if unknown:
            print("unknown names:", unknown, file=sys.stderr)
            return 2
        todo = [e for e in REGISTRY if e.name in set(args.only)]
    else:
        manifest = {k: v for k, v in manifest.items() if k in names}

    failed = []
    for e in todo:
        t0 = time.time()
        try:
            torch.manual_seed(SEED)
            module, inputs, kwargs = e.build()
            name = f"{e.name}-train" if args.training else e.name
            export = export_training if args.training else export_graph
            g = export(name, module, inputs, kwargs, profile)
            del module
        except Exception as exc:  # keep going, report at the end
            traceback.print_exc()
            failed.append((e.name, repr(exc)[:300]))
            manifest.pop(e.name, None)
            continue
        if len(g["nodes"]) > args.max_nodes:
            print(f"skip {e.name}: {len(g['nodes'])} nodes > {args.max_nodes}")
            failed.append((e.name, "too many nodes"))
            continue
        write_gz(os.path.join(args.out, f"{g['name']}.json.gz"), g)
        s = summary(e, g)
        manifest[g["name"]] = s
        save_manifest(man_path, manifest)
        print(f"{e.name:32s} {e.split:10s} nodes={s['nodes']:6d} edges={s['edges']:6d} "
              f"GFLOPs={s['flops'] / 1e9:9.3f} MB={s['weight_bytes'] / 2 ** 20:9.1f} ({time.time() - t0:.1f}s)",
              flush=True)
        gc.collect()
    save_manifest(man_path, manifest)
    if UNKNOWN_OPS:
        print("ops with default 1 FLOP/element:", dict(sorted(UNKNOWN_OPS.items())))
    if failed:
        print("FAILED:", failed)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
