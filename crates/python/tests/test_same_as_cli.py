"""Python and the command line give the same domains, samples, repairs,
evaluations and solve results for the same seeds."""

from __future__ import annotations

import json
import textwrap

import pytest

import generated
import mcmpart
from conftest import EXAMPLES

# Problems of the repository under both objectives, one written here, and
# the generated ones (tests/generated.py: several topologies, both
# objectives, with and without user rules).
FILES = ["quickstart.mcm", "bert_ring36.mcm", "mesh_step.mcm"]

HELD_OUT = textwrap.dedent(
    """\
    use std::placement::{acyclic_flow, no_skip, triangle_dependency, memory_capacity}
    use std::topologies::mesh
    let package = mesh(rows = 2, cols = 3, memory = 4 MiB, compute = 2 TFLOP/s, bandwidth = 20 GB/s)
    let g = graph {
      x { output_bytes = 64 KiB }
      w1 { params = 1 MiB }
      w2 { params = 1 MiB }
      w3 { params = 2 MiB }
      l1 { flops = 4 GFLOP, output_bytes = 64 KiB }
      l2 { flops = 8 GFLOP, output_bytes = 64 KiB }
      l3 { flops = 2 GFLOP, output_bytes = 64 KiB }
      y { output_bytes = 4 KiB }
      x -> l1 -> l2 -> l3 -> y
      w1 -> l1
      w2 -> l2
      w3 -> l3
    }
    partition g onto package {
      require acyclic_flow, no_skip, triangle_dependency, memory_capacity
      maximize throughput
    }
    """
)


@pytest.fixture(params=FILES + ["held_out"] + [f"generated:{name}" for name in generated.CASE_NAMES])
def case(request, tmp_path):
    """(path of the .mcm file, its problem)."""
    if request.param == "held_out":
        path = tmp_path / "held_out.mcm"
        path.write_text(HELD_OUT)
    elif request.param.startswith("generated:"):
        g = generated.write(generated.by_name(request.param.split(":", 1)[1]), tmp_path / "gen")
        return g.path, g.problem
    else:
        path = EXAMPLES / request.param
    return path, mcmpart.load(path)


def test_domains_at_the_root_and_after_decisions(case, cli):
    path, p = case
    d = cli.json("domains", path)
    assert p.solver().domains() == [d["domains"][n["id"]] for n in p.nodes]
    # Decisions: the last node on the last chip, then the first on chip 0,
    # then a chip the first node's domain has not got (a conflict).
    s = p.solver()
    last, first = p.nodes[-1]["id"], p.nodes[0]["id"]
    sets = [(last, [p.num_chips - 1]), (first, [0]), (first, [p.num_chips - 1])]
    standing = [s.set_domain(node, chips) for node, chips in sets]
    args = [a for node, chips in sets for a in ("--set", f"{node}={','.join(map(str, chips))}")]
    d = cli.json("domains", path, *args)
    assert standing == d["standing"]
    assert s.num_decisions == d["decisions"]
    assert s.domains() == [d["domains"][n["id"]] for n in p.nodes]
    assert s.infeasible == d["infeasible"]


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("order", ["random", "topological"])
def test_samples(case, cli, tmp_path, seed, order):
    path, p = case
    out = tmp_path / "s.json"
    cli.run("sample", path, "--seed", seed, "--order", order, "--out", out)
    part = p.sample(seed=seed, order=order)
    assert part.to_dict() == json.loads(out.read_text())["placement"]
    assert p.verify(part) == []


def test_repairs(case, cli, tmp_path):
    path, p = case
    # Everything on chip 0 but the last node, which is left free.
    proposal = [0] * p.num_nodes
    proposal[-1] = None
    prop_file = tmp_path / "prop.json"
    placed = {n["id"]: 0 for n in p.nodes[:-1]}
    prop_file.write_text(json.dumps({"graph": p.graph_name, "chips": p.num_chips, "placement": placed}))
    out = tmp_path / "fixed.json"
    r = cli.json("repair", path, "--proposal", prop_file, "--seed", 3, "--out", out)
    fixed = p.fix(proposal, seed=3)
    assert fixed.to_dict() == r["partition"]["placement"]
    assert fixed.moved == r["moved"]
    assert p.fix(placed, seed=3) == fixed
    assert p.verify(fixed) == []


def test_evaluations(case, cli, tmp_path):
    path, p = case
    part = p.sample(seed=5)
    f = tmp_path / "p.json"
    part.save(f)
    e = p.evaluate(part)
    # An invalid verdict (the dynamic memory check) exits 1 with the same report.
    assert e.to_dict() == cli.json("eval", path, "--partition", f, check=False)
    r = cli.run("eval", path, "--partition", f, check=False)
    assert r.stdout.startswith(e.text)
    assert e.violations == [] and e.valid == e.to_dict()["valid"]


def test_an_invalid_partition_is_judged_as_the_cli_judges_it(cli, tmp_path, quickstart):
    path = EXAMPLES / "quickstart.mcm"
    part = [0] * quickstart.num_nodes
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"graph": quickstart.graph_name, "chips": 4,
                             "placement": {n["id"]: 0 for n in quickstart.nodes}}))
    e = quickstart.evaluate(part)
    assert not e.valid and e.violations == quickstart.verify(part) != []
    assert e.to_dict() == cli.json("eval", path, "--partition", f, check=False)


@pytest.mark.parametrize("strategy,budget", [("dp", 20), ("greedy", 1), ("random", 10), ("anneal", 30)])
def test_solve_results(case, cli, tmp_path, strategy, budget):
    path, p = case
    out = tmp_path / "best.json"
    c = cli.json("solve", path, "--strategy", strategy, "--budget", budget, "--seed", 4, "--out", out, check=False)
    if not c.get("ok", True):
        # No valid partition (every sample over a chip's memory at
        # evaluation): Python fails too, for the same reason.
        with pytest.raises(mcmpart.MCMError) as failed:
            p.solve(strategy=strategy, budget=budget, seed=4)
        assert c["help"].split(": ", 1)[1] in str(failed.value)
        return
    r = p.solve(strategy=strategy, budget=budget, seed=4)
    assert r.partition.to_dict() == c["partition"]["placement"]
    d = r.to_dict()
    for k in ["strategy", "seed", "samples", "found_at_sample", "gap", "proven_optimal", "proven_bound",
              "invalid", "objective", "throughput", "latency_s", "greedy_throughput",
              "step_time_s", "greedy_step_time_s", "bound_step_time_s"]:
        assert d.get(k) == c.get(k), k
    assert r.gap == c["gap"]
    assert r.value == c.get("throughput", c.get("step_time_s"))
