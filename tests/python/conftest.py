"""Shared fixtures: the tools package on sys.path, and the locus-bench binary under test.

The binary is $LOCUS_BENCH or build/release/bench/locus-bench. A missing binary fails the
tests that need it (make test-python builds it first); only the locality command may be
absent, and then its tests are skipped with that reason.
"""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from locus_tools.bench import Bench  # noqa: E402


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
