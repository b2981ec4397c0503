"""Shared fixtures: the repository's examples, and the command-line binary
the Python results are compared with."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import mcmpart

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"


def _cli_binary() -> list[str]:
    """The `mcmpart` command line: $MCMPART_BIN, else the newest binary
    cargo built in this repository (release or debug), else one on PATH,
    else `cargo run --release`."""
    if os.environ.get("MCMPART_BIN"):
        return [os.environ["MCMPART_BIN"]]
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    built = [p for p in (target / "release" / "mcmpart", target / "debug" / "mcmpart") if p.is_file()]
    if built:
        return [str(max(built, key=lambda p: p.stat().st_mtime))]
    on_path = shutil.which("mcmpart")
    if on_path:
        return [on_path]
    return ["cargo", "run", "--quiet", "--release", "--manifest-path", str(REPO / "Cargo.toml"), "--"]


class Cli:
    """Runs the command line in a scratch folder."""

    def __init__(self, cwd: Path):
        self.cmd = _cli_binary()
        self.cwd = cwd

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run(
            self.cmd + [str(a) for a in args],
            cwd=self.cwd,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=600,
        )
        if check and r.returncode != 0:
            raise AssertionError(f"mcmpart {' '.join(map(str, args))} exited {r.returncode}:\n{r.stderr}")
        return r

    def json(self, *args: str, check: bool = True) -> dict:
        r = self.run("--json", *args, check=check)
        return json.loads(r.stdout)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture(scope="session")
def quickstart() -> mcmpart.Problem:
    return mcmpart.load(EXAMPLES / "quickstart.mcm")


@pytest.fixture(scope="session")
def bert() -> mcmpart.Problem:
    return mcmpart.load(EXAMPLES / "bert_ring36.mcm")


@pytest.fixture(scope="session")
def mesh_step() -> mcmpart.Problem:
    return mcmpart.load(EXAMPLES / "mesh_step.mcm")
