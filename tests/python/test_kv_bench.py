"""bench/kv-memcaslap (locus_tools.kv_memcaslap): its command line and how it reads memcaslap's
and memccapable's output (canned output here; memcaslap itself runs for at most a second, and
only if installed)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from locus_tools import kv_memcaslap as kvm
from locus_tools import kv_threads as kvt
from locus_tools import kvload, memcaslap

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench/kv-memcaslap"

MEMCASLAP_OK = """servers: 127.0.0.1:23918
threads count: 1
concurrency: 8
run time: 2s
windows size: 10k
set proportion: set_prop=0.30
get proportion: get_prop=0.70
cmd_get: 61089
cmd_set: 26183
get_misses: 0
written_bytes: 33206850
read_bytes: 68010476
object_bytes: 28487104

Run time: 2.0s Ops: 87272 TPS: 43632 Net_rate: 48.3M/s
"""

MEMCASLAP_VERIFY = MEMCASLAP_OK.replace("get_misses: 0\n", "get_misses: 0\nverify_misses: 2\nverify_failed: 5\n")

# memcaslap with -S prints periodic blocks too; the final "Run time:" line is the one that counts
MEMCASLAP_PERIODIC = MEMCASLAP_OK.replace(
    "\nRun time: 2.0s", "\nRun time: 1.0s Ops: 1000 TPS: 1000 Net_rate: 1.0M/s\nRun time: 2.0s")

CAPABLE = """ascii version                           [pass]
ascii quit                              [pass]
ascii stat                              [fail]
ascii mget                              [skip]
1 of 4 tests failed
"""


def run(*args, timeout=60):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout)


def test_parse_a_clean_run():
    p = memcaslap.parse(MEMCASLAP_OK)
    assert (p["tps"], p["ops"], p["run_s"], p["net_mb_s"]) == (43632, 87272, 2.0, 48.3)
    assert (p["cmd_get"], p["cmd_set"], p["get_misses"]) == (61089, 26183, 0)
    assert "verify_failed" not in p
    assert memcaslap.problems(p) == []


def test_parse_takes_the_last_run_line():
    assert memcaslap.parse(MEMCASLAP_PERIODIC)["tps"] == 43632


def test_verify_failures_and_errors_are_problems():
    p = memcaslap.parse(MEMCASLAP_VERIFY)
    probs = memcaslap.problems(p, 0, "")
    assert probs == ["verify_misses: 2", "verify_failed: 5"]
    probs = memcaslap.problems(memcaslap.parse("servers: x\n"), 1, "connect: refused\n")
    assert any("status 1" in s for s in probs)
    assert any("TPS" in s for s in probs)
    assert any("connect: refused" in s for s in probs)


def test_parse_capable():
    results, summary = kvm.parse_capable(CAPABLE)
    assert results == {"ascii version": "pass", "ascii quit": "pass", "ascii stat": "fail",
                       "ascii mget": "skip"}
    assert summary == "1 of 4 tests failed"


def test_table_medians_paired_ratios_and_fastest():
    ratios = [10, 30]
    configs = ["memcached", "locus-kv", "locus-kv:all=mutex"]
    results = {10: {"memcached": [100, 200, 300], "locus-kv": [50, 400, 300], "locus-kv:all=mutex": [100, 100, 100]},
               30: {"memcached": [100, 100, 100], "locus-kv": [90, 95, 100], "locus-kv:all=mutex": [120, 80, 110]}}
    cpu = {10: {"memcached": [4.0, 6.0, 5.0]}}
    table = kvm.median_table(results, ratios, configs, cpu)
    assert table[10]["memcached"] == (200, 1.0, 5.0)
    assert table[10]["locus-kv"] == (300, 1.0, None)  # ratios 0.5, 2.0, 1.0
    assert table[30]["locus-kv:all=mutex"] == (110, 1.1, None)
    assert kvm.fastest(table, ratios, configs[1:]) == (30, "locus-kv:all=mutex", 1.1)
    assert kvm.fastest(table, [10], configs[1:])[0] == 10
    names = {"memcached": "memcached", "locus-kv": "locus-kv", "locus-kv:all=mutex": "locus-kv --sync all=mutex"}
    text = kvm.format_table(table, ratios, configs, names)
    assert "locus-kv --sync all=mutex" in text and "30%" in text and "1.10" in text
    assert "server CPU us/op" in text and "5.00" in text


def test_spread_is_the_lowest_and_highest_round():
    results = {10: {"memcached": [100, 200, 300], "locus-kv": [50, 400, 300]}}
    cpu = {10: {"memcached": [4.0, 6.0, 5.0]}}
    spread = kvm.spread_table(results, [10], ["memcached", "locus-kv"], cpu)
    assert spread[10]["locus-kv"] == (0.5, 2.0, None, None)
    assert spread[10]["memcached"] == (1.0, 1.0, 4.0, 6.0)
    table = kvm.median_table(results, [10], ["memcached", "locus-kv"], cpu)
    text = kvm.format_table(table, [10], ["memcached", "locus-kv"],
                            {"memcached": "memcached", "locus-kv": "locus-kv"}, spread)
    assert "1.00 (0.50-2.00)" in text and "5.00 (4.00-6.00)" in text


LOAD_REPORT = ('{"server": "127.0.0.1:1", "tls": true, "verify": true, "threads": 2, "connections": 64, '
               '"sets_pct": 10, "keys": 10000, "key_size": 64, "value_size": 1024, "prefilled": 0, '
               '"seconds": 2.001, "ops": 200000, "ops_per_s": 99950, "gets": 180000, "sets": 20000, '
               '"get_hits": 180000, "get_misses": 0, "errors": 0, "client_cpu_s": 1.5}\n')


def test_locus_kv_load_report_and_problems():
    rep = kvload.parse(LOAD_REPORT)
    assert rep["ops_per_s"] == 99950 and rep["tls"] is True
    summary = "locus-kv-load: 99950 ops/s (200000 ops in 2.00 s, 10 % sets, 64 connections over 2 threads, TLS)\n"
    assert kvload.problems(rep, 0, summary) == []
    assert kvload.problems({}, 2, "locus-kv-load: cannot connect to 127.0.0.1:1: refused\n") == [
        "locus-kv-load exited with status 2", "no JSON report on locus-kv-load's stdout",
        "locus-kv-load stderr: locus-kv-load: cannot connect to 127.0.0.1:1: refused"]
    assert kvload.problems(dict(rep, errors=3), 1, "")[1] == "locus-kv-load counted 3 error(s)"
    argv = kvload.command("/x/locus-kv-load", "127.0.0.1", 5, sets_pct=30, threads=2, connections=64,
                          keys=100, key_size=64, value_size=1024, duration=3, tls="ca.pem", prefill="none")
    assert argv[:3] == ["/x/locus-kv-load", "-s", "127.0.0.1:5"]
    assert argv[-4:] == ["--tls", "--ca", "ca.pem", "--no-prefill"] and "-t" in argv


def test_server_problems_catch_a_server_that_stores_nothing():
    assert kvm.server_problems({}, 30) == ["server's stats unreadable after the run"]
    assert kvm.server_problems({"cmd_set": 0, "cmd_get": 10, "get_hits": 10}, 30) == [
        "the server stored nothing (cmd_set 0)"]
    assert kvm.server_problems({"cmd_set": 5, "cmd_get": 10, "get_hits": 2}, 30) == [
        "only 2 of 10 gets hit on the server"]
    assert kvm.server_problems({"cmd_set": 5, "cmd_get": 10, "get_hits": 9}, 30) == []


def test_help_tells_the_options():
    r = run("--help")
    assert r.returncode == 0
    for opt in ["--duration", "--rounds", "--threads", "--concurrency", "--sync", "--ratios", "--json",
                "--locus-kv", "--memcached", "--capable", "--verify", "--client", "--tls", "--keys",
                "--locus-kv-load"]:
        assert opt in r.stdout, opt
    assert "memcaslap" in r.stdout and "alternating" in r.stdout


@pytest.mark.parametrize("bad", [["--ratios", "10,x"], ["--ratios", "150"], ["--duration", "0"],
                                 ["--no-such-option"], ["--verify", "2"], ["--tls"],
                                 ["--client", "nope"], ["--keys", "0"],
                                 ["--client", "locus-kv-load", "--tls", "--capable"],
                                 ["--client", "locus-kv-load", "--verify", "0.5"]])
def test_bad_options_are_refused(bad):
    r = run(*bad, "--locus-kv", "/usr/bin/true", "--memcached", "/usr/bin/true")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "error" in r.stderr


def test_a_missing_locus_kv_says_how_to_build_it(tmp_path):
    r = run("--locus-kv", str(tmp_path / "locus-kv"))
    assert r.returncode == 2
    assert "make release" in r.stderr


@pytest.mark.skipif(not (shutil.which("memcaslap") and shutil.which("memcached")),
                    reason="needs memcached and memcaslap (libmemcached-tools)")
def test_memcached_against_itself_for_a_second(tmp_path):
    out = tmp_path / "r.json"
    r = run("--locus-kv", "/usr/bin/memcached", "--duration", "1", "--rounds", "1", "--ratios", "30",
            "--threads", "1", "--clients", "1", "--concurrency", "4", "--sync", "all=mutex",
            "--json", str(out), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "a stand-in" in r.stdout
    assert "fastest locus-kv configuration at 30% sets: locus-kv --sync all=mutex" in r.stdout
    data = json.loads(out.read_text())
    assert data["problems"] == [] and len(data["runs"]) == 2
    assert all(run_["tps"] > 0 for run_ in data["runs"])


@pytest.mark.skipif(not (Path(kvload.DEFAULT_PATH).exists() and shutil.which("memcached")
                         and shutil.which("openssl")),
                    reason="needs memcached, openssl and locus-kv-load (make release)")
def test_memcached_against_itself_over_tls_for_a_second(tmp_path):
    out = tmp_path / "r.json"
    r = run("--locus-kv", "/usr/bin/memcached", "--client", "locus-kv-load", "--tls", "--duration", "1",
            "--rounds", "1", "--ratios", "30", "--threads", "1", "--clients", "1", "--concurrency", "4",
            "--keys", "100", "--json", str(out), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "TLS on (-Z)" in r.stdout and "locus-kv-load over 100 keys" in r.stdout
    data = json.loads(out.read_text())
    assert data["problems"] == [] and len(data["runs"]) == 2
    for run_ in data["runs"]:
        assert run_["tps"] > 0 and run_["load"]["tls"] and run_["load"]["verify"]
        assert run_["server_stats"]["curr_items"] == 100   # read over TLS
        assert run_["server_cpu_s"] is not None


# ---- bench/kv-threads: the seed 000 Figure 4.1 sweep over bench/kv-memcaslap

def test_kv_threads_rows_and_table():
    reports = {1: {"median": {"30": {"memcached": {"ops_per_s": 100.0, "vs_memcached": 1.0},
                                     "locus-kv --sync alloc=async": {"ops_per_s": 60.0, "vs_memcached": 0.6}}}},
               2: {"median": {"30": {"memcached": {"ops_per_s": 120.0, "vs_memcached": 1.0},
                                     "locus-kv --sync alloc=async": {"ops_per_s": None, "vs_memcached": None}}}}}
    rows = kvt.rows_of(reports)
    assert (1, 30, "locus-kv --sync alloc=async", 60.0, 0.6) in rows and len(rows) == 4
    text = kvt.table_text(rows, [30], ["memcached", "locus-kv --sync alloc=async"])
    assert "(0.60x)" in text and "120" in text and "-" in text.splitlines()[-1]


@pytest.mark.parametrize("bad", [["--threads", "0"], ["--threads", "a"], ["--ratios", "101"],
                                 ["--duration", "0"]])
def test_kv_threads_refuses_bad_options(bad):
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "kv-threads"), *bad],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "kv-threads" in r.stderr, r.stderr


@pytest.mark.skipif(not (shutil.which("memcaslap") and shutil.which("memcached")),
                    reason="needs memcached and memcaslap (libmemcached-tools)")
def test_kv_threads_runs_kv_memcaslap_at_each_thread_count(kv_path, tmp_path):
    """One second per server at one thread count: the sweep finds bench/kv-memcaslap, reads
    its report and writes the table and the CSV."""
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "kv-threads"), "--threads", "1",
                        "--ratios", "30", "--duration", "1", "--rounds", "1", "--sync", "all=mutex",
                        "--locus-kv", str(kv_path), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "locus-kv --sync all=mutex" in r.stdout.splitlines()[1]
    assert r.stdout.splitlines()[2].split()[:2] == ["30%", "1"]
    rows = (tmp_path / "kv-threads.csv").read_text().splitlines()
    assert rows[0] == "threads,sets_pct,server,ops_per_s,vs_memcached" and len(rows) == 3
