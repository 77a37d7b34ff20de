"""What the bench scripts' tests share: loading a script as a module, and the ragapp fixtures."""

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.ragapp.conftest import fake_chat, knowledge_base  # noqa: F401  (fixtures)

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def load_bench(monkeypatch):
    """A function loading bench/NAME.py as a module; what it puts on sys.path comes off after."""
    monkeypatch.setattr(sys, "path", list(sys.path))

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
