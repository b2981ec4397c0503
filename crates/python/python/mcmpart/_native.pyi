"""Typed stubs of mcmpart's native module (built from crates/python with PyO3)."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

#: A node: its index among the placed nodes (what partitions and the solver
#: count) or its id in the graph.
NodeRef = Union[int, str]
#: A full partition: a Partition, the chip of each placed node by index, or
#: a dict node id -> chip.
PartitionLike = Union["Partition", Sequence[int], Mapping[str, int]]
#: A proposal for `fix`: like a partition, but nodes may be left free
#: (None in a list, missing from a dict).
ProposalLike = Union["Partition", Sequence[Optional[int]], Mapping[str, int]]

#: Names of the columns of `Problem.node_features()`.
NODE_FEATURE_NAMES: List[str]
#: Names of the columns of `Problem.chip_features()`.
CHIP_FEATURE_NAMES: List[str]
#: The strategies `Problem.solve` runs.
STRATEGIES: List[str]

class MCMError(Exception):
    """An error of mcmpart. ``str(e)`` is what the command line prints
    (diagnostics rendered with their source lines and spans, no colour)."""

    #: The diagnostics of a file that does not compile, as dicts: severity,
    #: code, message, help, and labels (file, line, column, offset, length, label).
    diagnostics: List[Dict[str, Any]]
    #: The rules in conflict, for a problem without a valid partition.
    constraints: List[str]
    #: What went wrong: usage, input, infeasible, search, output, timeout, internal.
    kind: str
    #: The one-line message (the text has the rendered report).
    message: str
    help: Optional[str]

def load(path: Union[str, os.PathLike[str]], problem: Optional[str] = None) -> Problem:
    """Compiles an ``.mcm`` file and returns its problem (``problem`` names
    one when the file declares several). Raises MCMError when it does not
    compile, with the diagnostics ``mcmpart check`` prints."""

def compile(
    source: str, path: Optional[Union[str, os.PathLike[str]]] = None, problem: Optional[str] = None
) -> Problem:
    """Compiles program text. ``path`` names it in diagnostics and is where
    relative graph files and imports are read from (default: the working
    folder). Raises MCMError when it does not compile."""

class Problem:
    """A placement problem: a graph, a package, the rules and the objective."""

    @property
    def name(self) -> str: ...
    @property
    def objective(self) -> str:
        """As the file writes it: ``maximize throughput``, ``minimize step_time``."""
    @property
    def num_nodes(self) -> int:
        """Placed nodes (replicable nodes are copied, not placed)."""
    @property
    def num_chips(self) -> int: ...
    @property
    def graph_name(self) -> str: ...
    @property
    def package_name(self) -> str: ...
    @property
    def nodes(self) -> List[Dict[str, Any]]:
        """Placed nodes in index order: index, id, op, flops, params,
        output_bytes (bytes), replicable, and the graph file's other attributes."""
    @property
    def graph_nodes(self) -> List[Dict[str, Any]]:
        """Every node in file order; ``index`` is the placed index, None for
        replicable nodes."""
    @property
    def edges(self) -> List[Dict[str, Any]]:
        """Edges between placed nodes: src, dst (indices), src_id, dst_id, bytes."""
    @property
    def chips(self) -> List[Dict[str, Any]]:
        """Chips: index, name and attributes in base units (bytes, FLOP/s)."""
    @property
    def links(self) -> List[Dict[str, Any]]:
        """Links: index, src, dst chips and attributes (bytes/s, seconds)."""
    @property
    def rules(self) -> List[str]:
        """The required rules as the file names them (``near(1)``)."""
    def node_index(self, node: NodeRef) -> int:
        """The placed index of a node given by id (or index)."""
    def node_features(self) -> npt.NDArray[np.float32]:
        """The learned policy's node features, [num_nodes, 10]; columns
        NODE_FEATURE_NAMES, each scaled to be of order one."""
    def op_buckets(self, buckets: int = 64) -> npt.NDArray[np.int64]:
        """Each node's operator name hashed into ``buckets`` (FNV-1a), [num_nodes]."""
    def chip_features(self) -> npt.NDArray[np.float32]:
        """The learned policy's chip features, [num_chips, 6]; columns CHIP_FEATURE_NAMES."""
    def edge_index(self) -> npt.NDArray[np.int64]:
        """Placed edges as [2, num_edges]: sources, then destinations
        (PyTorch Geometric's ``edge_index``)."""
    def edge_bytes(self) -> npt.NDArray[np.float64]:
        """Bytes each placed edge carries, in ``edge_index`` order."""
    def package_dict(self) -> Dict[str, Any]:
        """The package as ``mcmpart show FILE --json`` prints it."""
    def solver(self, sat: bool = True, native: bool = True) -> Solver:
        """A solver to drive node by node. ``sat``: on a conflict, backjump
        to the decision the SAT backing names (else undo one at a time).
        Raises MCMError when the problem has no valid partition."""
    def sample(self, seed: int = 0, order: str = "random", sat: bool = True) -> Partition:
        """One valid partition by SAMPLE with uniform choices; the same as
        ``mcmpart sample FILE --seed SEED --order ORDER``."""
    def fix(self, proposal: ProposalLike, seed: int = 0, order: str = "random", sat: bool = True) -> Partition:
        """``proposal`` made valid by FIX, keeping what can stay (``mcmpart
        repair``); the result's ``moved`` counts the nodes moved."""
    def verify(self, partition: PartitionLike) -> List[str]:
        """The rule instances the partition breaks (the independent
        checker), one line each; empty when it is valid."""
    def evaluate(self, partition: PartitionLike, objective: Optional[str] = None) -> Evaluation:
        """The cost model's report, as ``mcmpart eval`` gives it, under the
        problem's objective or ``objective`` (throughput, latency, step_time)."""
    def solve(
        self,
        strategy: Optional[str] = None,
        budget: Optional[int] = None,
        time: Optional[float] = None,
        seed: int = 0,
        evaluator: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None,
        jobs: int = 1,
    ) -> SolveResult:
        """Runs a strategy (STRATEGIES; default ``dp``, ``auto`` with
        ``time``) as ``mcmpart solve`` does, within ``budget`` samples or
        ``time`` seconds (default 1000 samples). Releases the GIL while it
        runs; Ctrl-C stops it and raises KeyboardInterrupt. ``evaluator``
        judges each partition in place of the cost model (it gets what an
        external evaluator reads and returns what one prints, e.g.
        ``mcmpart.distributed.EvaluatorPool``), ``jobs`` at once."""
    def package_svg(self, partition: Optional[PartitionLike] = None) -> str:
        """The package as SVG (``mcmpart show FILE --format svg``),
        coloured by the partition's chip loads when given."""
    def timeline_svg(self, partition: PartitionLike) -> str:
        """The step as a timeline (``mcmpart eval --format svg``);
        ``minimize step_time`` only (ValueError otherwise)."""
    def _repr_svg_(self) -> str: ...

class Solver:
    """The propagation engine of one problem, driven by hand. Use it from
    the thread that made it."""

    @property
    def num_nodes(self) -> int: ...
    @property
    def num_chips(self) -> int: ...
    @property
    def num_decisions(self) -> int:
        """Decisions standing."""
    @property
    def infeasible(self) -> Optional[List[str]]:
        """Set when a conflict undid every decision: the rules in conflict."""
    @property
    def stats(self) -> Dict[str, Any]:
        """decisions, failures, backtracks, sat_calls, ..."""
    def get_domain(self, node: NodeRef) -> List[int]:
        """The chips the node can still take, after propagation."""
    def set_domain(self, node: NodeRef, chips: Union[int, Sequence[int]]) -> int:
        """Restricts the node to ``chips`` as a new decision and propagates.
        Returns the decisions standing: one more than before when it holds.
        On a conflict the decision is undone and its chips excluded; when
        that fails too the solver backjumps (with SAT, to the decision that
        causes the conflict), so fewer decisions stand than before."""
    def is_fixed(self, node: NodeRef) -> bool: ...
    def placement(self) -> Optional[Partition]:
        """The partition once every node has one chip left, else None."""
    def domains(self) -> List[List[int]]:
        """Every node's domain, by index."""
    def masks(self) -> npt.NDArray[np.bool_]:
        """Domains as a bool mask [num_nodes, num_chips]."""
    def push(self) -> int:
        """Marks the decisions standing; returns the depth of marks."""
    def pop(self) -> None:
        """Undoes the decisions since the matching push (a backjump may
        have undone them already; what it excluded stays)."""
    def reset(self) -> None:
        """Undoes every decision and forgets the marks."""
    def __enter__(self) -> Solver:
        """``with solver:`` pushes on entry and pops on exit."""
    def __exit__(self, *exc: Any) -> bool: ...

class Partition:
    """A chip for every placed node of a problem."""

    @property
    def chips(self) -> List[int]:
        """The chip of each placed node, by index."""
    @property
    def moved(self) -> Optional[int]:
        """How many nodes ``fix`` moved to make it; None otherwise."""
    @property
    def chips_used(self) -> int: ...
    def to_dict(self) -> Dict[str, int]:
        """Node id -> chip."""
    def to_json(self) -> str:
        """The partition file's text (what ``solve --out`` writes)."""
    def save(self, path: Union[str, os.PathLike[str]]) -> None:
        """Writes the partition file, which the command line reads."""
    def __getitem__(self, node: NodeRef) -> int: ...
    def __len__(self) -> int: ...
    def _repr_svg_(self) -> str:
        """The package coloured by this partition's loads."""

class Evaluation:
    """A partition judged as ``mcmpart eval`` judges it."""

    @property
    def cost(self) -> float:
        """Seconds: the pipeline's period (one over throughput) or the step time."""
    @property
    def value(self) -> float:
        """The objective's figure: throughput (/s), or seconds for the time metrics."""
    @property
    def objective(self) -> str: ...
    @property
    def valid(self) -> bool: ...
    @property
    def violations(self) -> List[str]: ...
    @property
    def bound(self) -> float:
        """The proven lower bound on the cost (seconds)."""
    @property
    def gap(self) -> float:
        """Cost over bound (1: the bound is met)."""
    @property
    def text(self) -> str:
        """The report in words, as ``mcmpart eval`` prints it."""
    def to_dict(self) -> Dict[str, Any]:
        """The report as ``mcmpart eval --json`` prints it."""

class SolveResult:
    """What a search found."""

    @property
    def partition(self) -> Partition: ...
    @property
    def value(self) -> float:
        """Throughput (/s), or seconds for the time metrics."""
    @property
    def cost(self) -> float:
        """Seconds (period or step time)."""
    @property
    def bound(self) -> Optional[float]:
        """The proven lower bound on the cost (seconds); None under an external evaluator."""
    @property
    def gap(self) -> Optional[float]:
        """Cost over the proven bound."""
    def to_dict(self) -> Dict[str, Any]:
        """The report as ``mcmpart solve --json`` prints it (without ``out`` and ``curve``)."""

# --- mcmpart.gym's core (crates/python/src/env.rs) ---

class EnvCore:
    """The step loop of `mcmpart.gym.PlacementEnv`: a solver driven one node at
    a time in a fixed order, with NumPy buffers of the domains updated in place."""

    def __init__(
        self,
        problem: Problem,
        order: Optional[Sequence[Union[int, str]]] = None,
        sat: bool = True,
        objective: Optional[str] = None,
    ) -> None: ...
    def reset(self) -> None:
        """Undoes every decision: a new episode."""
    @property
    def node(self) -> Optional[int]:
        """The index of the node to place now; None once the episode is over."""
    def step(self, chip: int) -> Tuple[int, int]:
        """Places the current node on `chip`: (0 placed, 1 backjumped, 2 dead end,
        3 masked; decisions a backjump undid)."""
    @property
    def done(self) -> bool: ...
    def partition(self) -> Optional[List[int]]:
        """The finished partition's chips by node index."""
    def reward(self) -> Tuple[Optional[float], Optional[str]]:
        """The finished partition's score over greedy's, or None and why it is invalid."""
    @property
    def greedy_score(self) -> float: ...
    @property
    def reward_unit(self) -> str:
        """"greedy", or "bound" when greedy's partition fails at evaluation."""
    @property
    def order(self) -> List[int]: ...
    @property
    def domains(self) -> "np.ndarray":
        """int8 [num_nodes, num_chips], updated in place."""
    @property
    def placed(self) -> "np.ndarray":
        """int8 [num_nodes], updated in place."""
    @property
    def stats(self) -> Dict[str, Any]: ...
    @property
    def num_nodes(self) -> int: ...
    @property
    def num_chips(self) -> int: ...

# --- compare as jobs (crates/python/src/compare.rs) ---

def compare_help(words: List[str]) -> Optional[str]:
    """`mcmpart compare`'s help when `words` ask for it; raises MCMError for words it refuses."""

def run_job(words: List[str], spec: str) -> str:
    """Runs one job of a comparison from its spec; returns the run as JSON."""

class ComparePlan:
    """A comparison prepared from `mcmpart compare`'s words (problems compiled,
    greedy run, jobs listed); holds the output folder's lock until `finish`."""

    def __init__(self, words: List[str]) -> None: ...
    def missing(self) -> List[int]:
        """The jobs not yet finished (with --resume, those the journal lacks)."""
    def job(self, k: int) -> Tuple[str, str, int]:
        """(problem label, strategy, seed)."""
    @property
    def num_jobs(self) -> int: ...
    def spec(self, k: int) -> str: ...
    def accept(self, k: int, outcome: str) -> None:
        """Checks a worker's run of job k and keeps it in the journal."""
    def fail(self, k: int, why: str) -> None: ...
    def finish(self) -> str:
        """Writes the summaries and figures; gives what `mcmpart compare` prints."""
