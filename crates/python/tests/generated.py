"""Problems the repository does not hold, generated for the tests: a random
graph (a chain of operators with weights, short skip edges and a replicable
constant) written to a JSON file, and a package of one of the standard
library's topologies with rules and an objective, written to a ``.mcm``
file beside it.

Each case is known to be feasible without asking the solver: the generator
builds a witness partition (the chain cut into blocks on consecutive chips,
each weight with its consumer), sizes the chips' memory and the user rules'
limits so that the witness just fits (its weights and all activations), and
checks it with the independent checker (``Problem.verify``). The user rules
therefore bind, and so does the memory where the weights outweigh the
activations.

``MCMPART_TEST_SEED`` (an integer, default 0) shifts every case's seed, so
that the same suite can be run again on problems nobody has seen.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import mcmpart

MIB = 1 << 20

PIPELINE = ["acyclic_flow", "no_skip", "triangle_dependency", "memory_capacity"]

# User rules, written as text in the generated file.
USER_RULES = {
    "per_chip_count": """
/// At most `k` operations on a chip.
constraint per_chip_count(k: int) {{
    forall d in chips: count(u in nodes where chip(u) == d) <= k
}}""",
    "no_weights_on_chip0": """
/// Chip 0 holds no weights.
constraint no_weights_on_chip0() {{
    forall u in nodes where u.params > 0 B: chip(u) != 0
}}""",
    "edge_span": """
/// Data moves at most `k` chips up.
constraint edge_span(k: int) {{
    forall (u, v) in edges: chip(v) - chip(u) <= k
}}""",
}


@dataclass(frozen=True)
class Case:
    """One generated problem's recipe: the seed draws the graph."""

    name: str
    seed: int
    topology: str  # a call of a std::topologies topology, memory left as {memory}
    objective: str  # "maximize throughput" or "minimize step_time"
    rules: tuple  # std::placement rules
    user_rules: tuple = ()  # names of USER_RULES


# Several topologies, both objectives, with and without user rules.
CASES = [
    Case("ring_tp", 11, "ring(n = 4, memory = {memory}, compute = 2 TFLOP/s, bandwidth = 10 GB/s)",
         "maximize throughput", tuple(PIPELINE)),
    Case("mesh_tp_rules", 12, "mesh(rows = 2, cols = 3, memory = {memory}, compute = 1 TFLOP/s, bandwidth = 20 GB/s)",
         "maximize throughput", tuple(PIPELINE), ("per_chip_count", "no_weights_on_chip0")),
    Case("full_tp_span", 13, "fully_connected(n = 4, memory = {memory}, compute = 4 TFLOP/s, bandwidth = 5 GB/s)",
         "maximize throughput", tuple(PIPELINE), ("edge_span",)),
    Case("torus_step", 14, "torus(rows = 2, cols = 3, memory = {memory}, compute = 2 TFLOP/s, bandwidth = 25 GB/s)",
         "minimize step_time", ("memory_capacity",)),
    Case("cluster_step_rules", 15,
         "gpu_cluster(machines = 2, gpus = 2, memory = {memory}, compute = 8 TFLOP/s, nvlink = 100 GB/s, network = 10 GB/s)",
         "minimize step_time", ("memory_capacity",), ("per_chip_count",)),
    Case("biring_step_rules", 16,
         "bidirectional_ring(n = 5, memory = {memory}, compute = 1 TFLOP/s, bandwidth = 12 GB/s)",
         "minimize step_time", ("memory_capacity",), ("no_weights_on_chip0", "edge_span")),
]

CASE_NAMES = [c.name for c in CASES]

OPS = ["linear", "matmul", "add", "relu", "gelu", "layer_norm", "softmax", "conv2d"]


def seed_shift() -> int:
    return int(os.environ.get("MCMPART_TEST_SEED", "0"))


def _graph(rng: random.Random, tag: str):
    """A chain of operators with weights, skip edges of span 2 and a
    replicable constant: (graph JSON, the chain's operator ids in order,
    each weight's consumer)."""
    n = rng.randint(7, 13)
    nodes = [{"id": f"{tag}_in", "op": "placeholder", "output_bytes": rng.randint(1, 64) * 1024}]
    edges = []
    chain = [nodes[0]["id"]]
    weight_of = {}
    for i in range(n):
        op = {
            "id": f"{tag}_{rng.choice(OPS)}_{i}",
            "op": rng.choice(OPS),
            "flops": rng.randint(1, 400) * 10**7,
            "output_bytes": rng.randint(4, 512) * 1024,
        }
        nodes.append(op)
        edges.append({"from": chain[-1], "to": op["id"]})
        if len(chain) >= 2 and rng.random() < 0.35:
            edges.append({"from": chain[-2], "to": op["id"], "bytes": rng.randint(1, 128) * 1024})
        if rng.random() < 0.6:
            w = {"id": f"{tag}_w{i}", "op": "get_attr", "params": rng.randint(1, 8) * MIB // 2,
                 "output_bytes": rng.randint(1, 8) * MIB // 4}
            nodes.append(w)
            edges.append({"from": w["id"], "to": op["id"]})
            weight_of[w["id"]] = op["id"]
        chain.append(op["id"])
    const = {"id": f"{tag}_mask", "op": "ones", "output_bytes": 4096, "replicable": True}
    nodes.append(const)
    for target in rng.sample(chain[1:], 2):
        edges.append({"from": const["id"], "to": target})
    rng.shuffle(nodes)  # the file's order is not the chain's
    return {"name": f"gen-{tag}", "nodes": nodes, "edges": edges}, chain, weight_of


def _witness(chain, weight_of, blocks: int, weights_off_chip0: bool):
    """The chain cut into `blocks` runs on chips 0.. in order (under
    no_weights_on_chip0, chip 0 holds the input alone), each weight on its
    consumer's chip: node id -> chip."""
    chips = {}
    if weights_off_chip0:
        chips[chain[0]] = 0
        rest, first = chain[1:], 1
    else:
        rest, first = chain, 0
    size = -(-len(rest) // blocks)
    for k, node in enumerate(rest):
        chips[node] = first + k // size
    for w, consumer in weight_of.items():
        chips[w] = chips[consumer]
    return chips


@dataclass
class Generated:
    case: Case
    path: Path
    problem: mcmpart.Problem
    witness: list  # chips by node index, valid


def write(case: Case, folder: Path, seed: Optional[int] = None) -> Generated:
    """Writes the case's graph and problem into `folder` and loads it."""
    seed = case.seed + 1000 * seed_shift() if seed is None else seed
    rng = random.Random(seed)
    graph, chain, weight_of = _graph(rng, f"g{seed}")
    num_chips = _chip_count(case.topology)
    weights_off_chip0 = "no_weights_on_chip0" in case.user_rules
    blocks = min(num_chips - int(weights_off_chip0), rng.randint(2, 3))
    witness = _witness(chain, weight_of, blocks, weights_off_chip0)
    params = {n["id"]: n.get("params", 0) for n in graph["nodes"]}
    used = sorted(set(witness.values()))
    load = [sum(params[u] for u, c in witness.items() if c == d) for d in used]
    count = [sum(1 for c in witness.values() if c == d) for d in used]
    # The fullest chip of the witness fits its weights and, at evaluation,
    # every activation besides: the rule binds, and the witness is valid
    # under the dynamic memory check too.
    activations = sum(n.get("output_bytes", 0) for n in graph["nodes"])
    memory = max(load) + activations
    args = {"per_chip_count": f"per_chip_count({max(count)})", "no_weights_on_chip0": "no_weights_on_chip0",
            "edge_span": "edge_span(1)"}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{case.name}.json").write_text(json.dumps(graph, indent=1))
    topo = case.topology.split("(")[0]
    source = "\n".join(
        [
            f"// Generated for the tests (seed {seed}): {case.name}.",
            f"use std::placement::{{{', '.join(case.rules)}}}",
            f"use std::topologies::{topo}",
            *(USER_RULES[r].format() for r in case.user_rules),
            "",
            f"let package = {case.topology.format(memory=f'{memory} B')}",
            f'let g = graph("{case.name}.json")',
            "",
            "partition g onto package {",
            f"    require {', '.join(list(case.rules) + [args[r] for r in case.user_rules])}",
            f"    {case.objective}",
            "}",
            "",
        ]
    )
    path = folder / f"{case.name}.mcm"
    path.write_text(source)
    problem = mcmpart.load(path)
    chips = [witness[n["id"]] for n in problem.nodes]
    wrong = problem.verify(chips)
    if wrong:
        raise AssertionError(f"the generator's witness for {case.name} (seed {seed}) is not valid: {wrong}")
    return Generated(case, path, problem, chips)


def _chip_count(topology: str) -> int:
    """The number of chips a CASES topology call has."""
    args = dict(
        part.split(" = ")
        for part in topology.split("(", 1)[1].rstrip(")").split(", ")
        if " = " in part
    )
    name = topology.split("(")[0]
    if name in ("mesh", "torus"):
        return int(args["rows"]) * int(args["cols"])
    if name == "gpu_cluster":
        return int(args["machines"]) * int(args["gpus"])
    return int(args["n"])


def by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)
