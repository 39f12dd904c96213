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
        ("round_trip", 1), ("ring", 1), ("round_trip", 2), ("ring", 2)]
    for r in records:
        assert COMMON <= r.keys(), COMMON - r.keys()
        assert r["bench"] == "pingpong" and (r["cpu_a"], r["cpu_b"]) == tuple(CPUS[:2])
        assert r["ops"] > 0 and r["mops"] > 0 and r["ns_per_op"] > 0
        assert r["mops"] * r["ns_per_op"] == pytest.approx(1e3, rel=1e-2)
    ring = records[1]
    assert (ring["depth"], ring["slot_bytes"]) == (16, 64)
    assert "depth" not in records[0]
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
