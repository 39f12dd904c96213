"""Shared fixtures: the tools package on sys.path, and the locus-bench binary under test.

The binary is $LOCUS_BENCH or build/release/bench/locus-bench. A missing binary fails the
tests that need it (make test-python builds it first); only the locality command may be
absent, and then its tests are skipped with that reason.
"""

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from locus_tools.bench import Bench  # noqa: E402


def load_script(name, path):
    """A Python script without a .py suffix (tools/dsm-mt, bench/kv-threads) as a module."""
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def bench_path():
    path = Path(os.environ.get("LOCUS_BENCH") or REPO / "build/release/bench/locus-bench").resolve()
    if not path.exists():
        pytest.fail(f"locus-bench not found at {path}: run `make release` or set LOCUS_BENCH")
    return path


@pytest.fixture(scope="session")
def bench(bench_path):
    return Bench(bench_path)


@pytest.fixture(scope="session")
def locality_bench(bench):
    if not bench.has("locality"):
        pytest.skip(f"{bench.path} has no 'locality' command (an older locus-bench)")
    return bench


@pytest.fixture(scope="session")
def machine():
    from locus_tools.machine import describe

    return describe()
