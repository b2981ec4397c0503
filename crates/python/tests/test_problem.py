"""Loading and compiling problems, their errors, and reading the graph,
the package and the rules as Python values and arrays."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

import mcmpart

TINY = textwrap.dedent(
    """\
    use std::placement::{acyclic_flow, no_skip}
    use std::topologies::ring
    let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)
    let g = graph { a -> b -> c }
    partition g onto t { require acyclic_flow, no_skip }
    """
)


def test_load_reads_the_graph_the_package_and_the_rules(quickstart):
    p = quickstart
    assert p.num_nodes == len(p.nodes) == 7
    assert p.num_chips == len(p.chips) == 4
    assert [n["index"] for n in p.nodes] == list(range(7))
    assert p.nodes[1]["id"] == "w1" and p.nodes[1]["params"] == 2 * 2**20
    assert p.node_index("w1") == 1
    assert p.chips[0]["memory"] == 3 * 2**20
    assert p.chips[0]["compute"] == pytest.approx(1e12)
    assert all({"src", "dst", "bandwidth"} <= set(link) for link in p.links)
    assert p.rules == ["acyclic_flow", "no_skip", "triangle_dependency", "memory_capacity"]
    assert p.objective == "maximize throughput"
    assert {(e["src_id"], e["dst_id"]) for e in p.edges} >= {("input", "fc1"), ("w1", "fc1")}
    assert p.package_dict()["chips"]


def test_compile_takes_source_text_and_names_it():
    p = mcmpart.compile(TINY)
    assert [n["id"] for n in p.nodes] == ["a", "b", "c"]
    assert p.graph_nodes[0]["index"] == 0
    assert "Problem" in repr(p)


def test_an_error_raises_the_diagnostic_the_cli_prints(cli, tmp_path):
    bad = tmp_path / "bad.mcm"
    bad.write_text(TINY.replace("no_skip }", "no_skp }"))
    with pytest.raises(mcmpart.MCMError) as e:
        mcmpart.load(bad)
    r = cli.run("check", bad, check=False)
    assert r.returncode == 1
    assert str(e.value) == r.stderr.rstrip("\n")
    assert "no_skp" in str(e.value) and "bad.mcm:5" in str(e.value)
    (d,) = e.value.diagnostics
    assert d["labels"][0]["line"] == 5 and d["labels"][0]["file"].endswith("bad.mcm")
    assert e.value.kind == "input"
    # compile() names the text by its path too.
    with pytest.raises(mcmpart.MCMError) as e2:
        mcmpart.compile(bad.read_text(), path=bad)
    assert str(e2.value) == str(e.value)


def test_a_problem_without_a_valid_partition_raises_with_the_rules():
    src = TINY.replace("memory = 1 MiB", "memory = 1 KiB").replace(
        "graph { a -> b -> c }", "graph { a { params = 1 MiB } -> b -> c }"
    ).replace("no_skip }", "no_skip, memory_capacity }").replace(
        "{acyclic_flow, no_skip}", "{acyclic_flow, no_skip, memory_capacity}"
    )
    p = mcmpart.compile(src)
    with pytest.raises(mcmpart.MCMError) as e:
        p.sample()
    assert e.value.kind == "infeasible"
    assert "memory_capacity" in e.value.constraints
    assert "no valid partition" in str(e.value)


def test_missing_files_and_bad_arguments_raise_not_crash(tmp_path, quickstart):
    with pytest.raises(mcmpart.MCMError):
        mcmpart.load(tmp_path / "nowhere.mcm")
    with pytest.raises(KeyError, match="no node `nope`"):
        quickstart.node_index("nope")
    with pytest.raises(IndexError):
        quickstart.node_index(99)
    with pytest.raises(TypeError):
        quickstart.node_index(1.5)


def test_features_and_edge_index_are_arrays_for_a_gnn(bert):
    x = bert.node_features()
    assert x.dtype == np.float32 and x.shape == (bert.num_nodes, len(mcmpart.NODE_FEATURE_NAMES))
    assert np.isfinite(x).all() and np.abs(x).max() <= 3.0
    depth = x[:, mcmpart.NODE_FEATURE_NAMES.index("depth")]
    assert depth.min() >= 0.0 and depth.max() == 1.0
    c = bert.chip_features()
    assert c.shape == (36, len(mcmpart.CHIP_FEATURE_NAMES)) and c[-1, 0] == 1.0
    ei = bert.edge_index()
    assert ei.dtype == np.int64 and ei.shape == (2, len(bert.edges))
    assert (ei[0] == [e["src"] for e in bert.edges]).all()
    assert bert.edge_bytes().shape == (ei.shape[1],)
    ops = bert.op_buckets(16)
    assert ops.shape == (bert.num_nodes,) and ops.max() < 16


def test_the_package_imports_without_torch():
    assert "torch" not in sys.modules or "mcmpart.torch_export" in sys.modules


def test_svg_pictures_for_jupyter(quickstart, mesh_step):
    svg = quickstart._repr_svg_()
    assert svg.lstrip().startswith("<svg") or svg.lstrip().startswith("<?xml")
    part = quickstart.sample(seed=1)
    assert "<svg" in part._repr_svg_()
    assert part._repr_svg_() == quickstart.package_svg(part)
    assert "<svg" in mesh_step.timeline_svg(mesh_step.sample(seed=0))
    with pytest.raises(ValueError, match="draws no timeline"):
        quickstart.timeline_svg(part)
