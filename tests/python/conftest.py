"""Shared fixtures of the Python tests (run by scripts/wheel-test from the venv the wheel was
installed into: the `oloproof` package and binary under test are the installed ones)."""

import shutil
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@pytest.fixture
def project(tmp_path):
    """``project("support_rag")``: a copy of an example in a temporary folder (its store,
    caches and shim are written there, never into the checkout)."""

    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns(".oloproof", "__pycache__"))
        return target

    return copy


@pytest.fixture
def venv_only_path(monkeypatch):
    """A PATH without this interpreter's folder, and no interpreter override: what a user has
    when calling the venv's `oloproof` by its path from outside the venv."""
    bin_dir = str(Path(sys.executable).parent)
    kept = [p for p in __import__("os").environ.get("PATH", "").split(":") if p and p != bin_dir]
    monkeypatch.setenv("PATH", ":".join(kept) or "/usr/bin:/bin")
    monkeypatch.delenv("OLOPROOF_PYTHON", raising=False)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return bin_dir
