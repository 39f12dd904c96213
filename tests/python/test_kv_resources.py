"""bench/kv-resources (locus_tools.kv_resources): its command line, and one run of both
experiments at the smallest sizes its options allow against locus-kv and Debian's memcached.
A benchmark's figures are not checked here, only that it measures and reports them."""

import json

import pytest
from conftest import entry_point, needs_memcached

from locus_tools import kv_resources

SCRIPT = "bench/kv-resources"
DEAF = ["clients", "rss_before_mb", "rss_after_mb", "new_client_get_ms"]
SHIFT = ["small_mb", "large_mb", "shift_s", "last_1000_kept", "slabs_moved", "evictions",
         "total_malloced_mb", "rss_mb"]


def test_help_tells_the_options():
    r = entry_point(SCRIPT, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: kv-resources ")
    for opt in ["--experiments", "--clients", "--memory", "--threads", "--small-mb", "--large-mb",
                "--shift-seconds", "--locus-kv", "--memcached", "--json"]:
        assert opt in r.stdout, opt
    assert "what clients can make locus-kv and Debian's memcached hold" in r.stdout


@pytest.mark.parametrize("bad, words", [
    (["--experiments", "deaf,bogus"], "unknown experiment 'bogus'"),
    (["--memory", "7"], "--memory >= 8"),
    (["--clients", "0"], "--clients >= 1"),
    (["--shift-seconds", "-1"], "--shift-seconds >= 0"),
    (["--locus-kv", "/nonexistent/locus-kv"], "locus-kv not found at /nonexistent/locus-kv"),
])
def test_bad_options_are_refused(bad, words):
    r = entry_point(SCRIPT, *bad)
    assert r.returncode == 2 and words in r.stderr, r.stderr


def test_rss_of_this_process():
    assert kv_resources.rss_mb("self") > 0


@needs_memcached
def test_both_experiments_at_the_smallest_sizes(kv_path, tmp_path):
    out = tmp_path / "rows.jsonl"
    r = entry_point(SCRIPT, "--clients", 1, "--memory", 8, "--threads", 1, "--small-mb", 1,
                    "--large-mb", 1, "--locus-kv", kv_path, "--json", out, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "deaf: " + ", ".join(DEAF) in lines and "shift: " + ", ".join(SHIFT) in lines
    for experiment, keys in (("deaf", DEAF), ("shift", SHIFT)):
        at = lines.index(f"{experiment}: " + ", ".join(keys))
        rows = lines[at + 1:at + 3]
        assert [row.split()[0] for row in rows] == ["locus-kv", "memcached"], rows
        for row in rows:
            assert [cell.split("=")[0] for cell in row.split()[1:]] == keys, row
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["experiment"], row["server"]) for row in rows] == [
        ("deaf", "locus-kv"), ("deaf", "memcached"), ("shift", "locus-kv"), ("shift", "memcached")]
    for row in rows:
        if row["experiment"] == "deaf":
            assert row["clients"] == 1 and row["rss_before_mb"] > 0 and row["new_client_get_ms"] >= 0
        else:
            assert row["small_mb"] == 1 and row["large_mb"] == 1
            assert 0 <= row["last_1000_kept"] <= 1000 and row["rss_mb"] > 0
    assert "deaf: locus-kv" in r.stderr and "shift: memcached" in r.stderr
