"""`Problem.solve`: results, bad arguments, Ctrl-C, both objectives."""

from __future__ import annotations

import _thread
import signal
import threading

import pytest

import mcmpart


def test_solve_reports_value_bound_and_gap(quickstart):
    r = quickstart.solve(strategy="dp", budget=10, seed=1)
    assert quickstart.verify(r.partition) == []
    assert r.value == pytest.approx(1.0 / r.cost)
    assert r.bound is not None and r.bound <= r.cost
    assert r.gap == pytest.approx(r.cost / r.bound)
    assert r.to_dict()["samples"] <= 10
    e = quickstart.evaluate(r.partition)
    assert e.cost == pytest.approx(r.cost)


def test_step_time_value_is_the_step(mesh_step):
    r = mesh_step.solve(strategy="greedy", budget=1)
    assert mesh_step.objective == "minimize step_time"
    assert r.value == r.cost == mesh_step.evaluate(r.partition).cost


def test_evaluate_under_the_other_objective(mesh_step, quickstart):
    part = mesh_step.sample(seed=0)
    pipe = mesh_step.evaluate(part, objective="throughput")
    assert pipe.objective == "throughput" and pipe.value == pytest.approx(1.0 / pipe.cost)
    assert pipe.to_dict()["model"] == "pipeline"
    assert mesh_step.evaluate(part).to_dict()["model"] == "step_time"
    with pytest.raises(ValueError, match="unknown objective"):
        quickstart.evaluate(quickstart.sample(), objective="energy")


def test_bad_arguments_raise(quickstart):
    with pytest.raises(mcmpart.MCMError, match="unknown strategy `anneel`") as e:
        quickstart.solve(strategy="anneel", budget=5)
    assert "anneal" in e.value.help
    with pytest.raises(ValueError, match="not both"):
        quickstart.solve(budget=5, time=1.0)
    with pytest.raises(ValueError):
        quickstart.solve(time=-1.0)
    with pytest.raises(ValueError, match="unknown order"):
        quickstart.sample(order="sideways")


def test_ctrl_c_stops_a_search_and_the_next_one_runs(bert):
    # Ctrl-C half a second in: without it the search would run a minute.
    # Python's own SIGINT handler, whatever an earlier test (Ray's) left:
    # `interrupt_main` calls the handler, and only this one raises.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    try:
        with pytest.raises(KeyboardInterrupt):
            timer.start()
            bert.solve(strategy="anneal", time=60.0, seed=0)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    r = bert.solve(strategy="greedy", budget=1)
    assert bert.verify(r.partition) == []


def test_solves_run_in_threads_at_once(quickstart):
    results = {}

    def run(seed):
        results[seed] = quickstart.solve(strategy="random", budget=5, seed=seed).partition.chips

    threads = [threading.Thread(target=run, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {s: quickstart.solve(strategy="random", budget=5, seed=s).partition.chips for s in range(3)}
