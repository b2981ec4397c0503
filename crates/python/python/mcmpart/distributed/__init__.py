"""mcmpart over Ray, for what outgrows one machine (Ray is optional: the
package imports without it, and these functions say so when it is missing).

- :func:`compare` (``python -m mcmpart.distributed compare ...``): the
  command line's ``compare``, its runs (problem x strategy x seed) spread
  as Ray tasks over the cluster ``ray.init(address=...)`` reaches, a local
  one by default. The driver compiles the problems and runs greedy, submits
  each run the journal lacks, keeps each finished run in the journal as it
  comes back (a temporary file renamed into place) and writes the same
  summaries, curves and figures: ``--resume``, the tables and the plots work
  unchanged, and the same seeds give the same runs as the command line. A
  worker that dies mid-run loses no finished run; Ray runs its task again.
- :class:`EvaluatorPool`: an external evaluator (hardware in the loop) as a
  pool of Ray actors, one per board, that a search's evaluations fan out to.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Optional, Sequence

from .. import _native

__all__ = ["compare", "run_job", "EvaluatorPool", "RayMissing"]


class RayMissing(ImportError):
    """Ray is not installed: ``pip install ray``."""


def _ray():
    try:
        import ray  # noqa: PLC0415 - optional dependency
    except ImportError as e:
        raise RayMissing(
            "mcmpart.distributed needs Ray, which is not installed: `pip install ray` "
            "(or `pip install mcmpart[ray]`)"
        ) from e
    return ray


def run_job(words: Sequence[str], spec: str, cwd: Optional[str] = None) -> str:
    """Runs one job of a comparison (in a worker): ``words`` are the
    comparison's command-line words, ``spec`` the job's spec
    (``ComparePlan.spec``), ``cwd`` the folder its relative paths are from.
    Returns the run as JSON."""
    if cwd is not None and os.path.isdir(cwd):
        os.chdir(cwd)
    return _native.run_job(list(words), spec)


def compare(
    words: Sequence[str],
    address: Optional[str] = None,
    num_cpus: Optional[int] = None,
    max_retries: int = 3,
    job: Callable[[Sequence[str], str, Optional[str]], str] = run_job,
    out=None,
) -> str:
    """Runs ``mcmpart compare WORDS`` with its runs as Ray tasks.

    ``address``: the Ray cluster (``ray.init(address=...)``); a local one
    when ``None``, with ``num_cpus`` CPUs (default: all). ``max_retries``:
    how many times Ray runs a task again whose worker died. ``job``: the
    function a task runs (``run_job``). Prints what ``mcmpart compare``
    prints on ``out`` (stdout) and returns it; progress lines go to stderr.
    Raises ``mcmpart.MCMError`` where ``mcmpart compare`` fails.
    """
    ray = _ray()
    words = list(words)
    help_text = _native.compare_help(words)
    if help_text is not None:
        (out or sys.stdout).write(help_text)
        return help_text
    plan = _native.ComparePlan(words)
    started = False
    if not ray.is_initialized():
        if address is None:
            ray.init(num_cpus=num_cpus, include_dashboard=False, logging_level="warning")
        else:
            ray.init(address=address, logging_level="warning")
        started = True
    try:
        task = ray.remote(max_retries=max_retries)(job)
        cwd = os.getcwd()
        pending = {}
        for k in plan.missing():
            pending[task.remote(words, plan.spec(k), cwd)] = k
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                k = pending.pop(ref)
                try:
                    run = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    plan.fail(k, _task_error(e))
                    continue
                except ray.exceptions.RayError as e:
                    # The worker died more often than `max_retries`.
                    plan.fail(k, f"its worker died: {e}")
                    continue
                try:
                    plan.accept(k, run)
                except ValueError as e:
                    plan.fail(k, str(e))
        text = plan.finish()
    finally:
        if started:
            ray.shutdown()
    (out or sys.stdout).write(text)
    return text


def _task_error(e) -> str:
    cause = getattr(e, "cause", None)
    if cause is not None:
        return str(cause)
    return str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__


class EvaluatorPool:
    """An external evaluator made of Ray actors, one per board: each
    evaluation goes to an idle actor, so a search's evaluations run on all
    of them at once (give the search as many evaluation jobs as actors).

    Each actor has a method ``evaluate(partition)`` (``method`` names
    another) that takes a partition as an external evaluator command reads
    it, ``{"graph": ..., "chips": NUM_CHIPS, "placement": {node id: chip}}``,
    and answers as such a command prints:
    ``{"valid": True, "throughput": x}`` (or ``"step_time_s"``), or
    ``{"valid": False, "reason": "..."}``. An actor that dies is dropped
    from the pool and its evaluation is sent to another (up to ``retries``
    times); an evaluation that raises is an invalid sample whose reason is
    the exception. When no actor is left, evaluations fail with that reason.
    """

    def __init__(self, actors: Sequence[Any], method: str = "evaluate", retries: int = 2, timeout: Optional[float] = None):
        if not actors:
            raise ValueError("an EvaluatorPool needs at least one actor")
        self._ray = _ray()
        self._method = method
        self._retries = retries
        self._timeout = timeout
        self._idle = list(actors)
        self._alive = len(self._idle)
        self._cond = threading.Condition()
        self.dropped = []

    def __len__(self) -> int:
        return self._alive

    def _take(self):
        with self._cond:
            while not self._idle and self._alive > 0:
                self._cond.wait()
            return self._idle.pop() if self._idle else None

    def _give_back(self, actor, alive: bool) -> None:
        with self._cond:
            if alive:
                self._idle.append(actor)
            else:
                self._alive -= 1
                self.dropped.append(actor)
            self._cond.notify_all()

    def __call__(self, partition: dict) -> dict:
        ray = self._ray
        last = "no actor is left in the pool"
        for _ in range(self._retries + 1):
            actor = self._take()
            if actor is None:
                break
            try:
                ref = getattr(actor, self._method).remote(partition)
                reply = ray.get(ref, timeout=self._timeout)
            except ray.exceptions.RayTaskError as e:
                # The evaluation raised: the board is fine, the sample is not.
                self._give_back(actor, True)
                return {"valid": False, "reason": f"the evaluator raised: {_task_error(e)}"}
            except ray.exceptions.GetTimeoutError:
                self._give_back(actor, True)
                return {"valid": False, "reason": f"the evaluator timed out after {self._timeout} s"}
            except ray.exceptions.RayError as e:
                self._give_back(actor, False)
                last = f"an evaluator actor died: {type(e).__name__}"
                continue
            self._give_back(actor, True)
            return reply
        return {"valid": False, "reason": last}
