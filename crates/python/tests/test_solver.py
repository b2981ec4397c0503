"""Driving the solver by hand: domains, decisions, conflicts, backtracking."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import mcmpart

CHAIN = textwrap.dedent(
    """\
    use std::placement::{acyclic_flow, no_skip}
    use std::topologies::ring
    let t = ring(n = 3, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)
    let g = graph { a -> b -> c }
    partition g onto t { require acyclic_flow, no_skip }
    """
)


@pytest.fixture
def chain():
    return mcmpart.compile(CHAIN)


def test_set_domain_follows_the_contract(chain):
    s = chain.solver()
    assert s.get_domain("a") == [0, 1, 2]
    # a on chip 2 leaves chips 0 and 1 empty: undone, chip 2 excluded.
    assert s.set_domain("a", 2) == 0
    assert 2 not in s.get_domain(0)
    assert s.stats["failures"] == 1
    assert s.set_domain("c", [1]) == 1
    assert s.get_domain("b") == [0, 1]
    assert s.set_domain(1, 1) == 2
    assert s.get_domain("a") == [0] and s.is_fixed("a")
    assert s.placement().chips == [0, 1, 1]
    assert s.infeasible is None


def test_push_pop_and_with_restore_the_domains(chain):
    s = chain.solver()
    root = s.domains()
    with s:
        s.set_domain("c", 1)
        inner = s.domains()
        s.push()
        s.set_domain("b", 0)
        assert s.num_decisions == 2
        s.pop()
        assert s.domains() == inner and s.num_decisions == 1
    assert s.domains() == root and s.num_decisions == 0
    with pytest.raises(RuntimeError, match="pop without a matching push"):
        s.pop()


def test_masks_are_the_domains(chain):
    s = chain.solver()
    s.set_domain("c", 1)
    m = s.masks()
    assert m.dtype == np.bool_ and m.shape == (3, 3)
    assert [list(np.flatnonzero(row)) for row in m] == s.domains()


def test_a_walk_of_decisions_ends_in_a_valid_partition(bert):
    s = bert.solver()
    # A conflict may undo earlier decisions: decide the first free node
    # until none is left.
    for _ in range(10 * bert.num_nodes):
        free = [u for u in range(bert.num_nodes) if not s.is_fixed(u)]
        if not free:
            break
        s.set_domain(free[0], s.get_domain(free[0])[-1])
    part = s.placement()
    assert part is not None and bert.verify(part) == []


def test_bad_decisions_raise(chain):
    s = chain.solver()
    with pytest.raises(IndexError, match="chip 5"):
        s.set_domain("a", 5)
    with pytest.raises(KeyError):
        s.get_domain("zz")
    assert s.num_decisions == 0


def test_partitions_in_every_form(quickstart):
    part = quickstart.sample(seed=2)
    as_list, as_dict = part.chips, part.to_dict()
    assert quickstart.verify(as_list) == quickstart.verify(as_dict) == quickstart.verify(part) == []
    assert part == as_list and part["w1"] == as_list[1] and len(part) == quickstart.num_nodes
    with pytest.raises(ValueError, match="leaves nodes unplaced"):
        quickstart.verify({"w1": 0})
    with pytest.raises(ValueError, match="lists 2 chips"):
        quickstart.verify([0, 1])
    with pytest.raises(IndexError):
        quickstart.verify([9] * quickstart.num_nodes)
    assert "Partition" in repr(part)
