"""mcmpart.distributed: a Ray compare writes the runs the command line
writes (same seeds, same results), loses nothing when a worker dies, and an
EvaluatorPool of Ray actors judges a search's partitions."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ray = pytest.importorskip("ray")

import generated  # noqa: E402
import mcmpart  # noqa: E402
from mcmpart import _native as native  # noqa: E402
from mcmpart import distributed  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
PROBLEMS = [str(EXAMPLES / f) for f in ("quickstart.mcm", "fast_last.mcm", "torus_big_corners.mcm")]
FLAGS = ["--strategies", "random,anneal", "--budget", "12", "--repeats", "2", "--seed", "3"]
# Three generated problems (tests/generated.py): both objectives, user rules.
GENERATED = ["mesh_tp_rules", "cluster_step_rules", "biring_step_rules"]


def problems(which: str, folder: pathlib.Path) -> list:
    """The three problems of a set: the repository's examples, or generated ones."""
    if which == "examples":
        return PROBLEMS
    return [str(generated.write(generated.by_name(name), folder).path) for name in GENERATED]


@pytest.fixture(scope="module")
def ray_local():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="warning")
    yield
    ray.shutdown()


def mcmpart_bin() -> str:
    """The command line: MCMPART_BIN, or the workspace's build (made here
    when missing)."""
    given = os.environ.get("MCMPART_BIN")
    if given:
        return given
    for profile in ("debug", "release"):
        path = ROOT / "target" / profile / "mcmpart"
        if path.exists():
            return str(path)
    subprocess.run(["cargo", "build", "--quiet", "--bin", "mcmpart"], cwd=ROOT, check=True)
    return str(ROOT / "target" / "debug" / "mcmpart")


def without_times(value):
    """A run file with its wall times left out (they differ run to run)."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "elapsed_s"}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def run_files(out: pathlib.Path) -> dict:
    return {
        str(p.relative_to(out)): without_times(json.loads(p.read_text()))
        for p in sorted((out / "runs").rglob("*.json"))
    }


@pytest.mark.parametrize("which", ["examples", "generated"])
def test_a_ray_compare_writes_the_runs_the_cli_writes(tmp_path, ray_local, capsys, which):
    cli_out, ray_out = tmp_path / "cli", tmp_path / "ray"
    files = problems(which, tmp_path / "gen")
    subprocess.run(
        [mcmpart_bin(), "compare", *files, *FLAGS, "--out", str(cli_out)],
        check=True,
        capture_output=True,
    )
    text = distributed.compare([*files, *FLAGS, "--out", str(ray_out)])
    cli_runs, ray_runs = run_files(cli_out), run_files(ray_out)
    # 3 problems x 2 strategies x 2 seeds.
    assert len(cli_runs) == 12
    assert ray_runs == cli_runs
    assert sorted(p.name for p in ray_out.iterdir()) == sorted(p.name for p in cli_out.iterdir())
    assert "written to" in text and "summary.md" in text
    assert (ray_out / "summary.md").read_text().count("|") > 0


def crash_on_first_try(markers: str):
    """A job whose worker dies (os._exit) the first time each job runs,
    its run made but not handed back: a marker file per job says it has
    died once."""

    def job(words, spec, cwd):
        run = distributed.run_job(words, spec, cwd)
        j = json.loads(spec)
        marker = os.path.join(markers, f"{j['strategy']}.seed{j['seed']}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return run

    return job


@pytest.mark.parametrize("which", ["examples", "generated"])
def test_a_worker_killed_mid_run_loses_nothing(tmp_path, ray_local, which):
    markers = tmp_path / "markers"
    markers.mkdir()
    problem = problems(which, tmp_path / "gen")[0]
    plain = tmp_path / "plain"
    distributed.compare([problem, *FLAGS, "--out", str(plain)])
    crashed = tmp_path / "crashed"
    distributed.compare([problem, *FLAGS, "--out", str(crashed)], job=crash_on_first_try(str(markers)))
    # Every job's worker died once, and Ray ran the job again.
    assert len(list(markers.iterdir())) == 4
    assert run_files(crashed) == run_files(plain)
    assert not list(crashed.rglob("*.tmp")), "a torn temporary file was left"
    assert (crashed / "summary.md").exists()


def test_resume_takes_the_runs_a_ray_compare_kept(tmp_path, ray_local, capsys):
    out = tmp_path / "out"
    distributed.compare([PROBLEMS[0], *FLAGS, "--out", str(out)])
    first = run_files(out)
    # One run lost (a driver killed before it came back): --resume runs
    # only that one.
    lost = next((out / "runs").rglob("anneal.seed3.json"))
    lost.unlink()
    text = distributed.compare([PROBLEMS[0], *FLAGS, "--out", str(out), "--resume"])
    assert "3 of 4 runs taken from" in text
    assert run_files(out) == first


def test_bad_words_raise_the_cli_error(tmp_path):
    with pytest.raises(mcmpart.MCMError, match="--strategies names no strategy"):
        distributed.compare([PROBLEMS[0], "--strategies", "", "--out", str(tmp_path / "x")])
    with pytest.raises(mcmpart.MCMError, match="unexpected argument"):
        distributed.compare([PROBLEMS[0], "--no-such-flag", "--out", str(tmp_path / "x")])


def test_the_command_line_of_the_module(tmp_path):
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-m", "mcmpart.distributed", "compare", "--help"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0
    assert "--strategies" in done.stdout and "--resume" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "mcmpart.distributed", "compare", str(tmp_path / "missing.mcm"), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode != 0
    assert "missing.mcm" in done.stderr


def test_a_worker_refuses_a_job_planned_on_other_files(tmp_path):
    src = tmp_path / "q.mcm"
    shutil.copy(EXAMPLES / "quickstart.mcm", src)
    data = tmp_path / "data"
    shutil.copytree(EXAMPLES / "data", data)
    words = [str(src), "--strategies", "random", "--budget", "5", "--repeats", "1", "--out", str(tmp_path / "o")]
    plan = native.ComparePlan(words)
    (k,) = plan.missing()
    spec = plan.spec(k)
    # The problem changes under the plan (another package size).
    src.write_text(src.read_text().replace("ring(n = 4", "ring(n = 5"))
    with pytest.raises(mcmpart.MCMError, match="not the problem the job was planned on"):
        distributed.run_job(words, spec)
    plan.fail(k, "refused")
    with pytest.raises(mcmpart.MCMError, match="no problem could be compared"):
        plan.finish()


def test_a_run_that_is_not_the_jobs_is_refused(tmp_path):
    words = [PROBLEMS[0], "--strategies", "random", "--budget", "5", "--repeats", "2", "--out", str(tmp_path / "o")]
    plan = native.ComparePlan(words)
    first, second = sorted(plan.missing())
    run = distributed.run_job(words, plan.spec(first))
    with pytest.raises(ValueError, match="came back for"):
        plan.accept(second, run)
    broken = json.loads(run)
    broken["best"]["chips"] = [0] * len(broken["best"]["chips"])
    with pytest.raises(ValueError, match="not sound"):
        plan.accept(first, json.dumps(broken))
    plan.accept(first, run)
    del plan


@ray.remote
class Board:
    """A stand-in for a board: the analytical model's throughput, or a crash."""

    def __init__(self, path, crash_after=None):
        self.problem = mcmpart.load(path)
        self.calls = 0
        self.crash_after = crash_after

    def evaluate(self, partition):
        self.calls += 1
        if self.crash_after is not None and self.calls > self.crash_after:
            os._exit(1)
        return {"valid": True, "throughput": self.problem.evaluate(partition["placement"]).value}

    def count(self):
        return self.calls


def test_an_evaluator_pool_fans_a_search_out_and_survives_a_dead_board(ray_local):
    path = PROBLEMS[0]
    problem = mcmpart.load(path)
    boards = [Board.remote(path), Board.remote(path, crash_after=2)]
    pool = distributed.EvaluatorPool(boards)
    found = problem.solve(strategy="random", budget=30, seed=1, evaluator=pool, jobs=2)
    # The same search with the analytical model called in-process.
    local = lambda partition: {"valid": True, "throughput": problem.evaluate(partition["placement"]).value}  # noqa: E731
    plain = problem.solve(strategy="random", budget=30, seed=1, evaluator=local, jobs=2)
    assert plain.value == pytest.approx(problem.solve(strategy="random", budget=30, seed=1).value, rel=1e-12)
    assert found.value == pytest.approx(plain.value, rel=1e-12)
    assert list(found.partition.chips) == list(plain.partition.chips)
    assert len(pool) == 1 and len(pool.dropped) == 1
    assert ray.get(boards[0].count.remote()) > 0


def test_an_evaluator_that_raises_makes_invalid_samples_with_its_reason():
    problem = mcmpart.load(PROBLEMS[0])

    def broken(partition):
        raise RuntimeError("the board is on fire")

    with pytest.raises(mcmpart.MCMError, match="on fire"):
        problem.solve(strategy="random", budget=5, seed=0, evaluator=broken)
