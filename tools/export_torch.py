#!/usr/bin/env python3
"""Export PyTorch model architectures to mcmpart computation-graph JSON.

The exporter is the Python package's module ``mcmpart.torch_export``
(crates/python/python/mcmpart/torch_export.py); this script runs its
command line, and needs torch but not the package built::

    python tools/export_torch.py --out data/graphs            # all models
    python tools/export_torch.py --out data/graphs --only bert-large resnet50
    python tools/export_torch.py --list                        # print registry

See tools/README.md for the options, the format and the FLOP conventions.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.path.join(HERE, "..", "crates", "python", "python", "mcmpart", "torch_export.py")


def load():
    """The exporter module, loaded from its file: importing the package
    `mcmpart` would need its native part built."""
    spec = importlib.util.spec_from_file_location("mcmpart_torch_export", MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(load().main())
