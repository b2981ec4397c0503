"""`mcmpart.from_torch`: the exporter as a library function. torch is an
optional dependency (about 3 GB from PyPI with its CUDA libraries): these
tests run where it is installed and are skipped elsewhere, CI included;
what runs everywhere is that the package imports without torch and that
the exporter's script wrapper and module stay one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import mcmpart
from conftest import REPO


def test_import_does_not_import_torch():
    code = "import sys, mcmpart; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_script_is_a_wrapper_over_the_module():
    text = (REPO / "tools" / "export_torch.py").read_text()
    assert "torch_export.py" in text and "def export_graph" not in text


def test_from_torch_exports_a_module_that_mcmpart_loads(tmp_path):
    torch = pytest.importorskip("torch")

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(64, 128)
            self.fc2 = torch.nn.Linear(128, 10)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    g = mcmpart.from_torch(Mlp(), torch.zeros(8, 64), name="mlp")
    assert g["name"] == "mlp"
    ops = {n["op"] for n in g["nodes"]}
    assert "linear" in ops
    (tmp_path / "mlp.json").write_text(json.dumps(g))
    p = mcmpart.compile(
        textwrap.dedent(
            """\
            use std::placement::{acyclic_flow, no_skip, memory_capacity}
            use std::topologies::ring
            let t = ring(n = 2, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)
            let g = graph("mlp.json")
            partition g onto t { require acyclic_flow, no_skip, memory_capacity }
            """
        ),
        path=tmp_path / "mlp.mcm",
    )
    params = sum(n["params"] for n in p.nodes)
    assert params == 4 * (64 * 128 + 128 + 128 * 10 + 10)
    assert p.verify(p.sample(seed=0)) == []
    train = mcmpart.from_torch(Mlp(), (torch.zeros(8, 64),), training=True, name="mlp-train")
    assert len(train["nodes"]) > len(g["nodes"])


def test_from_torch_refuses_what_is_no_module():
    pytest.importorskip("torch")
    with pytest.raises(TypeError, match="torch.nn.Module"):
        mcmpart.from_torch(lambda x: x, ())
