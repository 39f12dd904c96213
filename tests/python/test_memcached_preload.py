"""bench/memcached-preload (locus_tools.memcached_preload): its command line, how it names a
profile's mutexes, and a one-second run of Debian's memcached under liblocus-preload with the
original mutexes, the profiler and one locus lock. Its figures are not checked, only that it
measures and reports them."""

import json

from conftest import entry_point, needs_memcached

from locus_tools import memcached_preload

SCRIPT = "bench/memcached-preload"
SMALLEST = ["--duration", 1, "--sets", 10, "--rounds", 1, "--threads", 1, "--clients", 1,
            "--concurrency", 1, "--memory", 64]


def test_help_tells_the_options():
    r = entry_point(SCRIPT, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: memcached-preload ")
    for opt in ["--duration", "--locks", "--threads", "--memory", "--sets", "--clients",
                "--concurrency", "--rounds", "--no-profile", "--preload", "--json"]:
        assert opt in r.stdout, opt
    assert "LD_PRELOAD" in r.stdout and "original+profile" in r.stdout


def test_a_missing_preload_says_how_to_build_it(tmp_path):
    r = entry_point(SCRIPT, "--preload", tmp_path / "none.so")
    assert r.returncode == 1
    assert "needs memcached and memcaslap" in r.stderr or "build it (make build)" in r.stderr


def _row(first_locked_at, mutex):
    return {"first_locked_at": first_locked_at, "mutex": mutex}


def test_describe_names_where_a_mutex_was_first_locked_and_where_it_lives():
    exe = "/usr/bin/memcached"
    assert memcached_preload.describe(_row(
        {"symbol": "do_item_get", "offset": 0x1f, "object": exe},
        {"object": exe, "symbol": "cache_lock", "offset": 0})) == ("do_item_get+0x1f", "cache_lock")
    assert memcached_preload.describe(_row(
        {"symbol": None, "offset": 0x147b7, "object": exe},
        {"object": exe, "symbol": None, "offset": 0x4d880})) == ("memcached+0x147b7",
                                                                 "memcached+0x4d880")
    assert memcached_preload.describe(_row(
        {"symbol": None, "offset": 0x10, "object": None},
        {"object": None, "symbol": None, "offset": 0})) == ("?+0x10", "heap")
    assert memcached_preload.describe(_row(
        {"symbol": "f", "offset": 0, "object": exe}, None))[1] == "destroyed"


@needs_memcached
def test_one_lock_for_a_second_prints_the_table_and_the_profile(preload_path, tmp_path):
    out = tmp_path / "r.json"
    r = entry_point(SCRIPT, *SMALLEST, "--locks", "mcs", "--preload", preload_path,
                    "--json", out, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("memcached-preload: memcached ") and "-t 1 -m 64" in lines[0]
    head = lines.index(f"{'lock':<18}{'10% sets ops/s':>18}{'ratio':>8}")
    rows = [line.split() for line in lines[head + 1:head + 4]]
    assert [row[0] for row in rows] == ["original", "original+profile", "mcs"]
    assert all(int(row[1]) > 0 and float(row[2]) > 0 for row in rows)
    assert rows[0][2] == "1.00"
    prof = [i for i, line in enumerate(lines)
            if line.startswith("profile of the original mutexes, 10% sets: ")]
    assert len(prof) == 1 and "top five by contended acquisitions" in lines[prof[0]]
    assert lines[prof[0] + 1].split()[:2] == ["#", "locked"]
    assert 1 <= len(lines[prof[0] + 2:]) <= 5
    data = json.loads(out.read_text())
    assert list(data["ops_per_s"]["10"]) == ["original", "original+profile", "mcs"]
    assert all(len(v) == 1 and v[0] > 0 for v in data["ops_per_s"]["10"].values())
    assert data["ratio"]["10"]["original"] == [1.0]
    assert data["profiles"]["10"]["tool"] == "locus-preload" and data["profiles"]["10"]["mutexes"]
    assert "[3/3] round 1, 10% sets, mcs: " in r.stderr


@needs_memcached
def test_an_unknown_lock_ends_the_run_with_the_preloads_words(preload_path):
    r = entry_point(SCRIPT, *SMALLEST, "--no-profile", "--locks", "nosuch",
                    "--preload", preload_path, timeout=300)
    assert r.returncode == 1
    assert "LOCUS_LOCK=nosuch: " in r.stderr and "unknown lock 'nosuch'" in r.stderr
