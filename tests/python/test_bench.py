"""locus-bench's JSON lines, as the tools run and read them."""

import re
import subprocess

import pytest

from locus_tools.bench import Bench, BenchError, is_server_mechanism, parse_json_lines

FETCHADD_FIELDS = {"bench", "mechanism", "spec", "fn", "threads", "servers", "vars", "duration_s",
                   "requested_s", "ops", "mops", "oversubscribed", "cpus", "delay", "section_ns", "jain", "op",
                   "responses_polled", "responses_ready", "ready_pct"}
LOCALITY_FIELDS = {"bench", "mechanism", "spec", "mode", "threads", "servers", "n1", "n2", "modify",
                   "msg", "duration_s", "requested_s", "iterations", "iters_per_s", "cpu_s",
                   "cpu_ns_per_iter", "cycles_per_iter", "server_busy_pct", "oversubscribed", "cpus"}


def test_fetchadd_lines_parse_and_have_the_fields(bench):
    r = bench.run("fetchadd", ["--mechanisms", "mutex,async", "--threads", 1, "--vars", 1], 0.05)
    assert r.ok, r.error
    assert [rec["mechanism"] for rec in r.records] == ["mutex", "async"]
    for rec in r.records:
        assert FETCHADD_FIELDS <= rec.keys(), FETCHADD_FIELDS - rec.keys()
        assert rec["bench"] == "fetchadd" and rec["threads"] == 1 and rec["vars"] == 1
        assert rec["ops"] > 0 and rec["mops"] > 0
    mutex, asyn = r.records
    assert mutex["op"] == "run" and asyn["op"] == "post"
    assert mutex["servers"] == 0
    assert asyn["servers"] == 1
    assert len(asyn["server_requests"]) == asyn["servers"]
    assert sum(asyn["server_requests"]) == asyn["ops"]


def test_fetchadd_reports_fairness_and_the_longest_sampled_wait(bench):
    r = bench.run("fetchadd", ["--mechanisms", "ticket", "--threads", 1, "--vars", 1, "--latency"], 0.05)
    assert r.ok, r.error
    (one,) = r.records
    assert one["jain"] == 1.0  # one thread is always fair to itself
    assert one["latency_ns_max"] >= one["latency_ns_p99"] >= one["latency_ns_median"] > 0
    r = bench.run("fetchadd", ["--mechanisms", "ticket", "--threads", 4, "--vars", 1], 0.1)
    assert r.ok, r.error
    (four,) = r.records
    assert 0.25 <= four["jain"] <= 1.0


def test_fetchadd_reports_responses_ready_when_polled(bench):
    """Asynchronous delegation collects each answer once, in a poll: ready counts the posts."""
    specs = ["async", "flat:queue", "flat:blocked", "flat:doorbell", "flat:bound=8", "mutex", "ffwd"]
    r = bench.run("fetchadd", ["--mechanisms", ",".join(specs), "--threads", 2, "--vars", 4], 0.05)
    assert r.ok, r.error
    assert [rec["mechanism"] for rec in r.records] == specs
    for rec in r.records:
        if rec["mechanism"] in ("mutex", "ffwd"):  # no response lines polled
            assert rec["responses_polled"] == rec["responses_ready"] == 0, rec
            assert rec["ready_pct"] is None, rec
            continue
        assert rec["op"] == "post" and rec["ops"] > 0, rec
        assert rec["responses_ready"] == rec["ops"], rec
        assert rec["responses_polled"] >= rec["responses_ready"], rec
        assert rec["ready_pct"] == pytest.approx(
            100 * rec["responses_ready"] / rec["responses_polled"], abs=0.01), rec


def test_fetchadd_latency_in_tsc_cycles(bench):
    r = bench.run("fetchadd", ["--mechanisms", "flat:blocked,mutex", "--threads", 1, "--vars", 1,
                               "--latency"], 0.05)
    assert r.ok, r.error
    for rec in r.records:
        assert {"latency_cycles_mean", "latency_cycles_median", "tsc_ghz"} <= rec.keys(), rec
        if rec["tsc_ghz"] is None:  # no TSC on this machine: no cycles either
            assert rec["latency_cycles_mean"] is None and rec["latency_cycles_median"] is None
            continue
        assert rec["tsc_ghz"] > 0
        # The line prints the ns mean to 0.1 and the median to 1 ns, the cycles to 0.1
        # and 1: products of the printed figures may differ by the rounding of each.
        ghz = rec["tsc_ghz"]
        assert rec["latency_cycles_mean"] == pytest.approx(rec["latency_ns_mean"] * ghz,
                                                           rel=1e-3, abs=0.05 * ghz + 0.06)
        assert rec["latency_cycles_median"] == pytest.approx(
            rec["latency_ns_median"] * ghz, rel=1e-3, abs=0.5 * ghz + 0.6)
    r = bench.run("fetchadd", ["--mechanisms", "mutex", "--threads", 1, "--vars", 1], 0.05)
    assert r.ok, r.error
    assert "latency_cycles_mean" not in r.records[0]  # only with --latency


def test_fetchadd_section_ns_makes_every_section_that_long(bench):
    # Sections are mutually exclusive and each lasts at least N ns, so at most
    # seconds / N of them fit, plus one per thread begun before the start.
    n = 2_000_000
    args = ["--mechanisms", "mcs,flat,ffwd", "--threads", 2, "--vars", 1, "--section-ns", n,
            "--latency-every", 1]
    r = bench.run("fetchadd", args, 0.2)
    assert r.ok, r.error
    for rec in r.records:
        assert rec["section_ns"] == n and rec["latency_every"] == 1
        assert 0 < rec["ops"] <= rec["duration_s"] * 1e9 / n + rec["threads"], rec
        assert rec["latency_samples"] == rec["ops"], rec  # every operation timed
        assert rec["latency_ns_median"] >= n, rec  # each call lasted a section at least


def test_fetchadd_sync_runs_on_asynchronous_executors(bench):
    # A run waits for its section: every timed increment lasts one at least,
    # and none is left to drain, so the server served exactly the ones counted.
    n = 1_000_000
    args = ["--mechanisms", "async,flat", "--threads", 2, "--vars", 1, "--section-ns", n,
            "--latency-every", 1, "--sync"]
    r = bench.run("fetchadd", args, 0.2)
    assert r.ok, r.error
    for rec in r.records:
        assert rec["op"] == "run", rec
        assert rec["latency_samples"] == rec["ops"] > 0, rec
        assert rec["latency_ns_median"] >= n, rec
    asyn = r.records[0]
    assert sum(asyn["server_requests"]) == asyn["ops"]


def test_fetchadd_section_ns_refuses_what_has_no_section(bench_path):
    for args, said in ((["--mechanisms", "peer:atomic", "--section-ns", "100"], "peer:atomic"),
                       (["--fn", "sqrt", "--section-ns", "100"], "--fn add"),
                       (["--latency-every", "0"], "--latency-every")):
        p = subprocess.run([bench_path, "fetchadd", *args], capture_output=True, text=True)
        assert p.returncode == 2 and said in p.stderr, (args, p.stderr)


def test_fetchadd_counts_mpsc_servers_one_per_executor(bench):
    r = bench.run("fetchadd", ["--mechanisms", "mpsc", "--threads", 1, "--vars", 3], 0.05)
    assert r.ok, r.error
    (rec,) = r.records
    assert rec["servers"] == 3
    assert len(rec["server_requests"]) == 3
    assert sum(rec["server_requests"]) == rec["ops"]


def test_locality_lines_parse_and_have_the_fields(locality_bench):
    args = ["--mechanisms", "mutex,ffwd", "--threads", 1, "--n1", 64, "--n2", 16, "--modify", 2,
            "--msg", 8]
    r = locality_bench.run("locality", args, 0.05)
    assert r.ok, r.error
    mutex, ffwd = r.records
    for rec in r.records:
        assert LOCALITY_FIELDS <= rec.keys(), LOCALITY_FIELDS - rec.keys()
        assert (rec["n1"], rec["n2"], rec["modify"], rec["msg"]) == (64, 16, 2, 8)
        assert rec["iterations"] > 0 and rec["iters_per_s"] > 0
        assert rec["cycles_per_iter"] is None or rec["cycles_per_iter"] > 0
    assert (mutex["mode"], mutex["servers"], mutex["server_busy_pct"]) == ("sync", 0, None)
    assert (ffwd["mode"], ffwd["servers"]) == ("async", 1)
    assert 0 <= ffwd["server_busy_pct"] <= 100


def test_server_mechanisms_match_the_bench_mode(locality_bench):
    """The figures count a server among the threads for exactly the bench's async mode."""
    specs = ["mutex", "flat", "ffwd", "async", "mpsc"]
    r = locality_bench.run("locality", ["--mechanisms", ",".join(specs), "--threads", 1,
                                        "--n1", 16, "--n2", 4], 0.05)
    assert r.ok, r.error
    for spec, rec in zip(specs, r.records):
        assert (rec["mode"] == "async") == is_server_mechanism(spec), rec


def test_parse_json_lines_keeps_records_around_garbage():
    text = '{"a": 1}\nnot json\n\n[1, 2]\n{"b": [1, 2], "c": null}\n'
    records, bad = parse_json_lines(text)
    assert records == [{"a": 1}, {"b": [1, 2], "c": None}]
    assert bad == ["not json", "[1, 2]"]


def test_a_failed_measurement_is_a_result_with_the_reason(bench):
    r = bench.run("fetchadd", ["--mechanisms", "nosuch"], 0.05)
    assert not r.ok
    assert r.returncode == 2
    assert r.records == []
    assert "nosuch" in r.error


def test_missing_binary_says_how_to_get_one(tmp_path):
    with pytest.raises(BenchError, match="make release"):
        Bench(tmp_path / "no-such-bench").check()
    assert not Bench(tmp_path / "no-such-bench").has("fetchadd")


def test_mechanisms_and_peers_come_from_the_help(bench):
    mechs = bench.mechanisms()
    assert {"mutex", "ffwd", "async", "flat", "mpsc"} <= set(mechs)
    assert "peer:atomic" in bench.peers()
    assert all(p.startswith("peer:") for p in bench.peers())


def _json_lines(bench_path, command, *args):
    p = subprocess.run([bench_path, command, *map(str, args), "--json"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    records, bad = parse_json_lines(p.stdout)
    assert not bad, bad
    return records, p.stderr


def test_repeat_interleaves_runs_within_each_column(bench_path):
    """--repeat 2 over two columns: A B C A B C for the first column, its summaries, then the
    second column the same way; never A A B B."""
    lines, _ = _json_lines(bench_path, "fetchadd", "--mechanisms", "mutex,tas,peer:atomic",
                           "--threads", "1,2", "--vars", 1, "--duration", 0.02, "--repeat", 2)
    order = [("S" if rec.get("summary") else rec["run"], rec["threads"], rec["mechanism"])
             for rec in lines]
    mechs = ["mutex", "tas", "peer:atomic"]
    expected = []
    for t in (1, 2):
        expected += [(run, t, m) for run in (1, 2) for m in mechs]
        expected += [("S", t, m) for m in mechs]
    assert order == expected


def test_repeat_summaries_agree_with_the_runs(bench):
    r = bench.run("fetchadd", ["--mechanisms", "mutex,ttas,peer:atomic", "--threads", 1,
                               "--vars", 1, "--repeat", 3], 0.02)
    assert r.ok, r.error
    assert len(r.records) == 9 and len(r.summaries) == 3
    for s in r.summaries:
        runs = sorted(rec["mops"] for rec in r.records if rec["mechanism"] == s["mechanism"])
        assert (s["runs"], s["ok_runs"], s["status"], s["metric"]) == (3, 3, "ok", "mops")
        assert (s["min"], s["median"], s["max"]) == pytest.approx(tuple(runs), rel=1e-3, abs=1e-3)
    by_rank = sorted(r.summaries, key=lambda s: s["rank"])
    assert [s["rank"] for s in by_rank] == [1, 2, 3]
    assert [s["median"] for s in by_rank] == sorted((s["median"] for s in by_rank), reverse=True)
    for s in r.summaries:  # a tie is mutual, and exactly the overlapping ranges
        for o in r.summaries:
            if o is s:
                continue
            overlap = s["min"] <= o["max"] and o["min"] <= s["max"]
            assert (o["mechanism"] in s["ties"]) == overlap, (s, o)


def test_repeat_table_shows_ranges_and_a_ranking_per_column(bench_path):
    p = subprocess.run([bench_path, "fetchadd", "--mechanisms", "mutex,peer:atomic", "--threads",
                        "1,2", "--duration", "0.02", "--repeat", "2"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert any(l.startswith("2 runs of every cell, interleaved") for l in lines), p.stdout
    row = next(l for l in lines if l.startswith("mutex"))
    assert re.search(r"\d+\.\d\d \(\d+\.\d\d-\d+\.\d\d\)", row), row
    head = next(i for i, l in enumerate(lines) if l.startswith("ranking by the median Mops/s"))
    ranks = lines[head + 1:head + 3]
    assert [r.split()[0] for r in ranks] == ["T=1", "T=2"], ranks
    for r in ranks:
        assert re.fullmatch(r"\s+T=\d\s+V=1\s+\S+ [>~] \S+", r), r
        assert {"mutex", "peer:atomic"} == set(r.split()[2::2])


def test_one_run_has_no_ranking_and_no_summaries(bench):
    r = bench.run("fetchadd", ["--mechanisms", "mutex", "--threads", 1], 0.02)
    assert r.ok, r.error
    assert r.summaries == [] and [rec["run"] for rec in r.records] == [1]


def test_locality_repeat_interleaves_and_summarizes(locality_bench):
    r = locality_bench.run("locality", ["--mechanisms", "mutex,ffwd", "--threads", 1, "--n1", 16,
                                        "--n2", 4, "--repeat", 2], 0.02)
    assert r.ok, r.error
    assert [(rec["run"], rec["mechanism"]) for rec in r.records] == [
        (1, "mutex"), (1, "ffwd"), (2, "mutex"), (2, "ffwd")]
    assert {s["mechanism"] for s in r.summaries} == {"mutex", "ffwd"}
    for s in r.summaries:
        assert s["metric"] == "iters_per_s" and s["min"] <= s["median"] <= s["max"]


def test_repeat_is_refused_out_of_range(bench_path):
    for bad in ("0", "1001", "x"):
        p = subprocess.run([bench_path, "fetchadd", "--repeat", bad], capture_output=True, text=True)
        assert p.returncode == 2 and "--repeat" in p.stderr, (bad, p.stderr)
