"""The commands users type (tools/dsm-suite, bench/kv-memcaslap, ...) are thin files over
modules of locus_tools: each still answers --help under its own name, run from anywhere."""

import pytest
from conftest import REPO, entry_point

# entry point -> the module of locus_tools it runs
ENTRY_POINTS = {
    "tools/demo": "demo",
    "tools/reproduce": "cli",
    "tools/dsm-suite": "dsm_suite",
    "tools/dsm-avr": "dsm_avr",
    "tools/dsm-lrc": "dsm_lrc",
    "tools/dsm-mt": "dsm_mt",
    "tools/dsm-ship": "dsm_ship",
    "tools/splash3": "splash3",
    "bench/kv-memcaslap": "kv_memcaslap",
    "bench/kv-threads": "kv_threads",
    "bench/kv-resources": "kv_resources",
    "bench/memcached-preload": "memcached_preload",
}


@pytest.mark.parametrize("path", ENTRY_POINTS)
def test_help_names_the_command(path):
    r = entry_point(path, "--help", timeout=60)
    assert r.returncode == 0, r.stderr
    usage = r.stdout.splitlines()[0]
    assert usage.startswith("usage: ") and path.split("/")[1] in usage, usage
    assert r.stderr == ""


@pytest.mark.parametrize("path, module", ENTRY_POINTS.items())
def test_an_entry_point_only_runs_its_module(path, module):
    text = (REPO / path).read_text()
    assert f"from locus_tools.{module} import main" in text
    assert len([line for line in text.splitlines() if line.strip()]) <= 15
