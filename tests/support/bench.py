"""A benchmark script under bench/ loaded as a module, for tests of its arithmetic and readers."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench(stem: str) -> ModuleType:
    """bench/<stem>.py as the module `bench_<stem>` (kept in sys.modules, as its dataclasses need)."""
    name = f"bench_{stem}"
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
