"""locus-bench pingpong: its JSON lines, its table, and what it says where it cannot measure.

The figures themselves are not checked (this machine may be busy): only their shape.
"""

import os
import re
import subprocess

import pytest

from locus_tools.bench import parse_json_lines

CPUS = sorted(os.sched_getaffinity(0))
needs_two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="a round trip needs two CPUs")

COMMON = {"bench", "test", "run", "cpu_a", "cpu_b", "duration_s", "requested_s", "ops", "mops",
          "ns_per_op", "cpus"}


def run(bench_path, *args, cpus=None):
    def pin():
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
    return subprocess.run([bench_path, "pingpong", *map(str, args)], capture_output=True,
                          text=True, timeout=120, preexec_fn=pin)


@needs_two_cpus
def test_json_lines_interleave_the_tests_and_have_the_fields(bench_path):
    p = run(bench_path, "--duration", 0.02, "--repeat", 2, "--json")
    assert p.returncode == 0, p.stderr
    records, bad = parse_json_lines(p.stdout)
    assert not bad
    assert [(r["test"], r["run"]) for r in records] == [
        ("round_trip", 1), ("ring", 1), ("answered_ring", 1),
        ("round_trip", 2), ("ring", 2), ("answered_ring", 2)]
    for r in records:
        assert COMMON <= r.keys(), COMMON - r.keys()
        assert r["bench"] == "pingpong" and (r["cpu_a"], r["cpu_b"]) == tuple(CPUS[:2])
        assert r["ops"] > 0 and r["mops"] > 0 and r["ns_per_op"] > 0
        assert r["mops"] * r["ns_per_op"] == pytest.approx(1e3, rel=1e-2)
    ring, answered = records[1], records[2]
    assert (ring["depth"], ring["slot_bytes"]) == (16, 64)
    assert (answered["depth"], answered["slot_bytes"], answered["request_bytes"]) == (16, 64, 48)
    assert "depth" not in records[0] and "request_bytes" not in ring
    assert "pingpong: CPUs" in p.stderr  # the table, on stderr beside --json


@needs_two_cpus
def test_table_has_a_line_per_test(bench_path):
    p = run(bench_path, "--duration", 0.02, "--cpus", f"{CPUS[1]},{CPUS[0]}", "--depth", 4)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith(f"pingpong: CPUs {CPUS[1]} and {CPUS[0]}")
    assert re.fullmatch(r"test\s+ns per op\s+M ops/s", lines[1])
    assert re.fullmatch(r"round trip\s+\d+\.\d\s+\d+\.\d\d", lines[2]), lines[2]
    assert re.fullmatch(r"ring, 4 slots of 64 B\s+\d+\.\d\s+\d+\.\d\d", lines[3]), lines[3]
    assert re.fullmatch(r"answered ring, 4 slots of 64 B\s+\d+\.\d\s+\d+\.\d\d", lines[4]), lines[4]


def test_one_cpu_says_it_cannot_measure(bench_path):
    p = run(bench_path, "--duration", 0.02, cpus={CPUS[0]})
    assert p.returncode == 1
    assert "one CPU" in p.stderr and "round trip needs two" in p.stderr
    assert p.stdout == ""


def test_bad_pairs_are_refused(bench_path):
    for args, said in ((["--cpus", "0,0"], "two different CPUs"),
                       (["--cpus", "0"], "two CPUs"),
                       (["--cpus", f"0,{max(CPUS) + 1}"], "may not run on CPU"),
                       (["--depth", "65"], "--depth"),
                       (["--repeat", "0"], "--repeat")):
        p = run(bench_path, *args)
        assert p.returncode == 2 and said in p.stderr, (args, p.stderr)


def test_help_is_listed(bench_path):
    p = subprocess.run([bench_path, "--help"], capture_output=True, text=True)
    assert re.search(r"^\s+pingpong\s", p.stdout, re.MULTILINE)
    assert "usage: locus-bench pingpong" in p.stdout


def fetchadd(bench_path, *args, cpus=None):
    def pin():
        if cpus is not None:
            os.sched_setaffinity(0, cpus)
    return subprocess.run([bench_path, "fetchadd", "--duration", "0.02", *map(str, args)],
                          capture_output=True, text=True, timeout=120, preexec_fn=pin)


@needs_two_cpus
def test_fetchadd_sets_its_1_client_delegation_cells_against_the_floor(bench_path):
    p = fetchadd(bench_path, "--mechanisms", "ffwd,mutex,flat", "--threads", "1,2")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("floor, measured after the table"))
    assert re.fullmatch(r"  a cache-line round trip \d+\.\d ns, \d+\.\d\d M/s; a ring of 16 slots "
                        r"\d+\.\d\d M messages/s", lines[head + 1]), lines[head + 1]
    assert re.fullmatch(r"  the ring answering each 48 B request in its slot \(answered\) "
                        r"\d+\.\d\d M/s", lines[head + 2]), lines[head + 2]
    assert re.fullmatch(r"mechanism\s+column\s+Mops/s\s+x round trip\s+x ring\s+x answered",
                        lines[head + 4])
    cells = lines[head + 5:]
    assert [c.split()[:3] for c in cells] == [["ffwd:servers=1", "T=1", "V=1"],
                                              ["flat", "T=1", "V=1"]]  # not mutex, not T=2
    for c in cells:
        assert re.fullmatch(r"\S+\s+T=1 V=1(\s+\d+\.\d\d){4}", c), c


@needs_two_cpus
def test_fetchadd_floor_with_latency_counts_round_trips(bench_path):
    p = fetchadd(bench_path, "--mechanisms", "ffwd", "--threads", 1, "--latency")
    assert p.returncode == 0, p.stderr
    assert re.search(r"^mechanism\s+column\s+latency ns\s+round trips$", p.stdout, re.MULTILINE)
    assert re.search(r"^ffwd:servers=1\s+T=1 V=1\s+\d+\s+\d+\.\d\d$", p.stdout, re.MULTILINE)


def test_fetchadd_floor_only_where_it_is_wanted(bench_path, bench):
    # No delegation cell, --no-floor, or --json: no floor unless --floor asks for it.
    for args in (["--mechanisms", "mutex", "--threads", 1],
                 ["--mechanisms", "ffwd", "--threads", 2],
                 ["--mechanisms", "ffwd", "--threads", 1, "--no-floor"]):
        p = fetchadd(bench_path, *args)
        assert p.returncode == 0 and "floor" not in p.stdout, (args, p.stdout)
    r = bench.run("fetchadd", ["--mechanisms", "ffwd", "--threads", 1], 0.02)
    assert r.ok and r.others == [], r.others


@needs_two_cpus
def test_fetchadd_floor_with_json_adds_pingpong_lines(bench):
    r = bench.run("fetchadd", ["--mechanisms", "mutex", "--threads", 1, "--floor",
                               "--repeat", 2], 0.02)
    assert r.ok, r.error
    assert [rec["mechanism"] for rec in r.records] == ["mutex", "mutex"]
    assert [(o["bench"], o["test"], o["run"]) for o in r.others] == [
        ("pingpong", "round_trip", 1), ("pingpong", "ring", 1), ("pingpong", "answered_ring", 1),
        ("pingpong", "round_trip", 2), ("pingpong", "ring", 2), ("pingpong", "answered_ring", 2)]


def test_fetchadd_floor_with_one_cpu_says_why_not(bench_path):
    p = fetchadd(bench_path, "--mechanisms", "ffwd", "--threads", 1, cpus={CPUS[0]})
    assert p.returncode == 0, p.stderr
    assert "floor: not measured: this process may run on one CPU only" in p.stdout
