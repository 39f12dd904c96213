"""Shared fixtures: the tools package on sys.path, and the binaries under test.

locus-bench is $LOCUS_BENCH or build/release/bench/locus-bench; locus-kv $LOCUS_KV or
build/release/src/kv/locus-kv; liblocus-preload.so $LOCUS_PRELOAD or the release build's.
A missing one fails the tests that need it (make test-python builds them first); only the
locality command may be absent, and then its tests are skipped with that reason. Debian's
memcached and memcaslap are not ours: tests that need them skip where they are missing.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from locus_tools.bench import Bench  # noqa: E402


def entry_point(path, *args, timeout=120):
    """Runs an entry point (tools/dsm-mt, bench/kv-resources ...) as a user does."""
    return subprocess.run([sys.executable, str(REPO / path), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


# Debian's memcached and libmemcached-tools' memcaslap, for the tests that run them.
needs_memcached = pytest.mark.skipif(
    not (shutil.which("memcached") and shutil.which("memcaslap")),
    reason="needs memcached and memcaslap (Debian: memcached libmemcached-tools)")


def _built(name, env, default):
    """$env, else the release build's `default`; the tests that need it fail without it."""
    path = Path(os.environ.get(env) or REPO / default).resolve()
    if not path.exists():
        pytest.fail(f"{name} not found at {path}: run `make release` or set {env}")
    return path


@pytest.fixture(scope="session")
def bench_path():
    return _built("locus-bench", "LOCUS_BENCH", "build/release/bench/locus-bench")


@pytest.fixture(scope="session")
def kv_path():
    return _built("locus-kv", "LOCUS_KV", "build/release/src/kv/locus-kv")


@pytest.fixture(scope="session")
def preload_path():
    from locus_tools.mcprofile import find_preload

    path = find_preload()
    if not path or not path.exists():
        pytest.fail(f"liblocus-preload.so not found ({path}): run `make release` or set LOCUS_PRELOAD")
    return path.resolve()


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
