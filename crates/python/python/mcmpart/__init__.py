"""mcmpart: places machine-learning graphs on multi-chip packages.

Load a problem (a graph, a package of chips and links, placement rules and
an objective) written in mcmpart's language, read it as plain Python values
and NumPy arrays, drive the SAT-backed solver node by node, sample and
repair partitions, evaluate them under either objective, and run the
search strategies::

    import mcmpart
    p = mcmpart.load("examples/bert_ring36.mcm")
    s = p.solver()
    s.get_domain("embeddings")       # chips the node can still take
    best = p.solve(strategy="dp", budget=200, seed=0)
    print(best.value, best.gap)
    print(p.evaluate(best.partition))

Errors in a problem raise :class:`MCMError`, whose text is the diagnostic
the command line prints. The book's chapter "Python" has the rest.
"""

from __future__ import annotations

from typing import Any

from . import _native
from ._native import (
    CHIP_FEATURE_NAMES,
    NODE_FEATURE_NAMES,
    STRATEGIES,
    Evaluation,
    MCMError,
    Partition,
    Problem,
    Solver,
    SolveResult,
    compile,
    load,
)

__all__ = [
    "CHIP_FEATURE_NAMES",
    "NODE_FEATURE_NAMES",
    "STRATEGIES",
    "Evaluation",
    "MCMError",
    "Partition",
    "Problem",
    "Solver",
    "SolveResult",
    "compile",
    "from_torch",
    "load",
]


def from_torch(module: Any, example_inputs: Any, **options: Any) -> dict:
    """Exports a PyTorch module to mcmpart's graph format (a dict, the JSON
    of a ``.json`` graph file): see :func:`mcmpart.torch_export.from_torch`.

    torch is imported only here: the package works without it.
    """
    from .torch_export import from_torch as export

    return export(module, example_inputs, **options)


del Any, annotations, _native
