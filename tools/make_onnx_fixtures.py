#!/usr/bin/env python3
"""Build the small ONNX test fixtures in tests/data/onnx/ and their expected graphs.

Each model is assembled with the ``onnx.helper`` API, run through
``onnx.shape_inference.infer_shapes`` (so every intermediate tensor has a
shape in ``graph.value_info``) and checked with ``onnx.checker``.  Next to each
``NAME.onnx`` we write ``NAME.expected.json`` with the graph our Python
reference importer derives from it (conventions in tools/README.md):

* nodes: one per graph input that is not an initializer (op "placeholder"),
  one per initializer (op "get_attr", params = its bytes), one per operator
  node (op = lower-cased ONNX op type).  Graph outputs get no node.
* edges: producer -> consumer for every tensor an operator reads, one edge
  per distinct (producer, consumer) pair, bytes = the tensor's bytes.
* flops: Conv 2*out_numel*Cin/group*kh*kw; Gemm/MatMul 2*M*N*K (bias of Gemm
  not counted); MaxPool/AveragePool kernel_numel*out_numel; Softmax
  5*out_numel; Flatten/Reshape/Transpose 0; other (elementwise) out_numel.
* weight_bytes: sum of initializer bytes.

Usage: python tools/make_onnx_fixtures.py [--out tests/data/onnx]
Output is deterministic (fixed numpy seed, fixed producer metadata).
"""

from __future__ import annotations

import argparse
import json
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

OPSET = 17
RNG = np.random.default_rng(0)


def init(name, shape, scale=0.1):
    arr = (RNG.standard_normal(shape) * scale).astype(np.float32)
    return numpy_helper.from_array(arr, name)


def vinfo(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def finish(graph, name):
    model = helper.make_model(graph, producer_name="mcmpart-fixtures", producer_version="1",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    model = shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    return model


def tiny_cnn():
    # x[1,3,16,16] -Conv3x3(8)-> Relu -> MaxPool2 -> Flatten -> Gemm(10)
    inits = [init("conv1.weight", (8, 3, 3, 3)), init("conv1.bias", (8,)),
             init("fc.weight", (10, 512)), init("fc.bias", (10,))]
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["conv1_out"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1], group=1),
        helper.make_node("Relu", ["conv1_out"], ["relu1_out"], name="relu1"),
        helper.make_node("MaxPool", ["relu1_out"], ["pool1_out"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["pool1_out"], ["flat_out"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat_out", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
    ]
    g = helper.make_graph(nodes, "tiny_cnn", [vinfo("x", [1, 3, 16, 16])], [vinfo("logits", [1, 10])], inits)
    return finish(g, "tiny_cnn")


def mlp():
    # x[1,64] -MatMul(128)+Add-> Relu -MatMul(10)+Add-> y
    inits = [init("w1", (64, 128)), init("b1", (128,)), init("w2", (128, 10)), init("b2", (10,))]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="matmul1"),
        helper.make_node("Add", ["h1", "b1"], ["h1b"], name="add1"),
        helper.make_node("Relu", ["h1b"], ["a1"], name="relu1"),
        helper.make_node("MatMul", ["a1", "w2"], ["h2"], name="matmul2"),
        helper.make_node("Add", ["h2", "b2"], ["y"], name="add2"),
    ]
    g = helper.make_graph(nodes, "mlp", [vinfo("x", [1, 64])], [vinfo("y", [1, 10])], inits)
    return finish(g, "mlp")


def attention():
    # single-head self attention with residual:  x[1,16,32]
    s, d = 16, 32
    mask = np.triu(np.full((s, s), -1e4, dtype=np.float32), k=1)
    inits = [init("wq", (d, d)), init("wk", (d, d)), init("wv", (d, d)), init("wo", (d, d)),
             numpy_helper.from_array(np.array(1.0 / math.sqrt(d), dtype=np.float32), "scale"),
             numpy_helper.from_array(mask, "causal_mask")]
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["x", "wk"], ["k"], name="k_proj"),
        helper.make_node("MatMul", ["x", "wv"], ["v"], name="v_proj"),
        helper.make_node("Transpose", ["k"], ["kt"], name="k_transpose", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale_mul"),
        helper.make_node("Add", ["scaled", "causal_mask"], ["masked"], name="mask_add"),
        helper.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["ctx"], name="av"),
        helper.make_node("MatMul", ["ctx", "wo"], ["proj"], name="o_proj"),
        helper.make_node("Add", ["proj", "x"], ["y"], name="residual"),
    ]
    g = helper.make_graph(nodes, "attention", [vinfo("x", [1, s, d])], [vinfo("y", [1, s, d])], inits)
    return finish(g, "attention")


# --------------------------------------------------------------------------
# Reference importer
# --------------------------------------------------------------------------

DTYPE_BYTES = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8, TensorProto.INT64: 8,
               TensorProto.INT32: 4, TensorProto.INT8: 1, TensorProto.UINT8: 1, TensorProto.BOOL: 1}
ZERO_FLOP = {"Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Concat", "Gather",
             "Slice", "Shape", "Dropout"}
PER_ELEM = {"Softmax": 5}


def reference_graph(model: onnx.ModelProto) -> dict:
    g = model.graph
    shapes: dict[str, tuple[list[int], int]] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        shapes[vi.name] = ([d.dim_value for d in tt.shape.dim], DTYPE_BYTES[tt.elem_type])
    inits = {t.name: t for t in g.initializer}
    for t in g.initializer:
        shapes[t.name] = (list(t.dims), DTYPE_BYTES[t.data_type])

    def numel(name):
        return int(math.prod(shapes[name][0]))

    def nbytes(name):
        return numel(name) * shapes[name][1]

    nodes, producer = [], {}
    for vi in g.input:
        if vi.name in inits:
            continue
        nodes.append({"id": vi.name, "op": "placeholder", "flops": 0, "params": 0, "output_bytes": nbytes(vi.name)})
        producer[vi.name] = vi.name
    for t in g.initializer:
        nodes.append({"id": t.name, "op": "get_attr", "flops": 0, "params": nbytes(t.name),
                      "output_bytes": nbytes(t.name)})
        producer[t.name] = t.name
    edges: dict[tuple[str, str], int] = {}
    for n in g.node:
        out = n.output[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "Conv":
            w = shapes[n.input[1]][0]
            flops = 2 * numel(out) * w[1] * int(math.prod(w[2:]))
        elif n.op_type == "Gemm":
            a = shapes[n.input[0]][0]
            k = a[0] if attrs.get("transA", 0) else a[1]
            flops = 2 * numel(out) * k
        elif n.op_type == "MatMul":
            flops = 2 * numel(out) * shapes[n.input[0]][0][-1]
        elif n.op_type in ("MaxPool", "AveragePool"):
            flops = numel(out) * int(math.prod(attrs["kernel_shape"]))
        elif n.op_type in ZERO_FLOP:
            flops = 0
        else:
            flops = PER_ELEM.get(n.op_type, 1) * numel(out)
        nodes.append({"id": n.name, "op": n.op_type.lower(), "flops": int(flops), "params": 0,
                      "output_bytes": sum(nbytes(o) for o in n.output)})
        for i in n.input:
            if not i:
                continue
            key = (producer[i], n.name)
            edges[key] = max(edges.get(key, 0), nbytes(i))
        for o in n.output:
            producer[o] = n.name
    return {"name": g.name, "nodes": nodes,
            "edges": [{"from": s, "to": t, "bytes": b} for (s, t), b in edges.items()]}


def expected(model: onnx.ModelProto, fname: str, size: int) -> dict:
    ref = reference_graph(model)
    ops = [n for n in ref["nodes"] if n["op"] not in ("placeholder", "get_attr")]
    op_ids = {n["id"] for n in ops}
    return {
        "file": fname,
        "valid": True,
        "file_bytes": size,
        "name": ref["name"],
        "nodes": len(ref["nodes"]),
        "edges": len(ref["edges"]),
        "op_nodes": len(ops),
        "input_nodes": sum(1 for n in ref["nodes"] if n["op"] == "placeholder"),
        "initializer_nodes": sum(1 for n in ref["nodes"] if n["op"] == "get_attr"),
        "op_edges": sum(1 for e in ref["edges"] if e["from"] in op_ids and e["to"] in op_ids),
        "flops": sum(n["flops"] for n in ref["nodes"]),
        "weight_bytes": sum(n["params"] for n in ref["nodes"]),
        "graph": ref,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/data/onnx")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    built = {}
    for fn in (tiny_cnn, mlp, attention):
        model = fn()
        name = fn.__name__
        data = model.SerializeToString()
        path = os.path.join(args.out, f"{name}.onnx")
        with open(path, "wb") as f:
            f.write(data)
        built[name] = data
        exp = expected(model, f"{name}.onnx", len(data))
        with open(os.path.join(args.out, f"{name}.expected.json"), "w") as f:
            json.dump(exp, f, indent=1)
            f.write("\n")
        print(f"{name}.onnx: {len(data)} bytes, nodes={exp['nodes']} edges={exp['edges']} "
              f"flops={exp['flops']} weight_bytes={exp['weight_bytes']}")
    data = built["tiny_cnn"]
    trunc = data[: len(data) // 2]
    with open(os.path.join(args.out, "truncated.onnx"), "wb") as f:
        f.write(trunc)
    with open(os.path.join(args.out, "truncated.expected.json"), "w") as f:
        json.dump({"file": "truncated.onnx", "valid": False, "file_bytes": len(trunc),
                   "source": "tiny_cnn.onnx", "note": "first half of tiny_cnn.onnx; importers must return an error"},
                  f, indent=1)
        f.write("\n")
    try:
        onnx.load_from_string(trunc)
        print("warning: onnx python parser accepted the truncated file")
    except Exception as exc:
        print(f"truncated.onnx: {len(trunc)} bytes, onnx.load fails as intended ({type(exc).__name__})")


if __name__ == "__main__":
    main()
