"""Seed 003's figures on locus-kv: argument mapping, the checks on every run, the section
profile that picks Figure 3's combination, and --quick runs that draw the expected legend.

The quick runs start real servers (locus-kv, Debian's memcached) and memcaslap: a missing one
fails the test with the reason, as a missing locus-bench does."""

import pytest

from conftest import REPO
from locus_tools import mcprofile, registry, seed003
from locus_tools.bench import Result
from locus_tools.cli import main as reproduce_main
from locus_tools.figure import Setup
from locus_tools.plot import OVERSUB_NOTE, draw, legend_labels
from locus_tools.table import read_csv
from test_figures import _check_png

FIGS = ["seed003-fig2", "seed003-fig3", "seed003-fig4", "seed003-fig5"]


@pytest.fixture(scope="module")
def kv_tools():
    why = seed003.RUNNER.kv.missing()
    if why:
        pytest.fail(why)
    return seed003.RUNNER.kv


def _setup(machine, quick, hot=("hash", "slabs")):
    setup = Setup(machine=machine, bench=None, quick=quick)
    # Figure 3's points come from a profiling run; these tests plan points without one.
    setup.cache["profile"] = seed003.SectionProfile([(s, 0.25) for s in seed003.SECTIONS], None,
                                                    "not taken in this test", list(hot))
    return setup


@pytest.mark.parametrize("n", [seed003.RECORDS_QUICK, seed003.RECORDS_DEFAULT, seed003.RECORDS_FULL])
@pytest.mark.parametrize("clients", [4, 8, 12])
def test_memcaslap_concurrency_sends_exactly_n(n, clients):
    c = seed003.concurrency(n, clients)
    assert c is not None and c <= 128 and c % clients == 0 and n % c == 0


def test_an_n_memcaslap_cannot_send_exactly_has_no_concurrency():
    assert seed003.concurrency(5_000_000, 12) is None  # the seed's N: no multiple of 12 divides it
    assert seed003.RECORDS_FULL >= 5_000_000 and seed003.RECORDS_FULL % 120 == 0


def test_server_and_client_get_separate_cpus():
    assert seed003.split_cpus([0, 1]) == ([0], [1])
    assert seed003.split_cpus([3, 1, 2, 0]) == ([0, 1], [2, 3])
    assert seed003.split_cpus([5]) == ([5], [5])


def test_every_seed003_figure_plans_points_that_map_to_servers(machine):
    for quick in (True, False):
        setup = _setup(machine, quick)
        xs = seed003.server_threads(setup)
        assert xs[0] == 1 and (quick or 12 in xs)
        for fig in registry.resolve(FIGS):
            points = fig.points(setup)
            assert points and fig.mapping(setup) and fig.runner is seed003.RUNNER
            for p in points:
                a = seed003.parse_args(p.args)
                assert int(a["records"]) == seed003.records(setup)
                assert int(a["threads"]) == p.x and int(a["clients"]) == p.clients
                if a["server"] == seed003.MEMCACHED:
                    assert "sync" not in a and p.series.startswith("memcached")
                else:
                    assert a["server"] == "locus-kv" and a["sync"].startswith("all=")


def test_fig2_has_each_mechanism_and_memcached_per_client_count(machine):
    pts = registry.get("seed003-fig2").points(_setup(machine, quick=False))
    xs = seed003.server_threads(_setup(machine, quick=False))
    assert len(pts) == len(xs) * 3 * (len(seed003.FIG2_MECHS) + 1)
    syncs = {seed003.parse_args(p.args).get("sync") for p in pts}
    assert {"all=mutex", "all=tas", "all=oyama", "all=ttas", "all=mcs", "all=ccsynch", "all=flat"} <= syncs
    assert {p.panel for p in pts} == {"c4", "c8", "c12"}
    assert all(p.panel == f"c{p.clients}" and p.series.endswith(f" C={p.clients}") for p in pts)


def test_fig3_switches_the_profiled_sections_and_keeps_the_rest_mutex(machine):
    pts = registry.get("seed003-fig3").points(_setup(machine, quick=False, hot=("alloc", "stats")))
    by_series = {p.series: seed003.parse_args(p.args)["sync"] for p in pts}
    assert by_series["tas on alloc+stats"] == "all=mutex,alloc=tas,stats=tas"
    assert by_series["oyama on alloc+stats"] == "all=mutex,alloc=oyama,stats=oyama"
    assert by_series["all mutex"] == "all=mutex" and all(p.clients == 4 for p in pts)


def test_stm_figures_move_one_more_section_per_line(machine):
    for name, method in (("seed003-fig4", "ml_wt"), ("seed003-fig5", "serialirr")):
        pts = registry.get(name).points(_setup(machine, quick=False))
        lines = list(dict.fromkeys((p.series, seed003.parse_args(p.args)["sync"]) for p in pts))
        assert [s for s, _ in lines] == ["none (all mutex)", "+hash", "+hash+alloc",
                                         "+hash+alloc+stats", "+hash+alloc+stats+slabs"]
        assert lines[3][1] == f"all=mutex,hash=stm:{method},alloc=stm:{method},stats=stm:{method}"
        assert all(p.clients == 12 for p in pts)


class _FakeKv:
    """Answers the profiling run with chosen section times."""

    def __init__(self, ns):
        self.ns, self.calls = ns, []

    def run(self, args, keep_stats=None, env=None, hooks=None):
        self.calls.append((seed003.parse_args(args), keep_stats))
        st = {f"{s}:time_ns": str(v) for s, v in self.ns.items()}
        return Result(["fake"], 0, [{"stats_sync": st}])


class _FakeMemcached:
    """Answers the memcached profile with chosen section times, or with none."""

    def __init__(self, ns=None):
        self.ns, self.calls = ns, []

    def __call__(self, kv, args):
        self.calls.append(seed003.parse_args(args))
        if self.ns is None:
            return None, "memcached not found: install memcached (scripts/install-deps)"
        prof = mcprofile.MemcachedProfile(
            {s: mcprofile.SectionCost(hold_ns=v) for s, v in self.ns.items()},
            {s: 1 for s in self.ns})
        return prof, ""


@pytest.mark.parametrize("ns, hot", [
    ({"hash": 580, "slabs": 390, "stats": 20, "alloc": 10}, ["hash", "slabs"]),
    ({"hash": 10, "alloc": 300, "slabs": 300, "stats": 390}, ["stats", "alloc", "slabs"]),
    ({"hash": 900, "alloc": 50, "slabs": 30, "stats": 20}, ["hash"]),
])
def test_profile_switches_the_fewest_sections_covering_80_percent(machine, ns, hot):
    setup = Setup(machine=machine, bench=None)
    fake, mc = _FakeKv(ns), _FakeMemcached()
    prof = seed003.profile_sections(setup, kv=fake, memcached=mc)
    assert prof.hot == hot and prof.memcached is None and "memcached not found" in prof.memcached_note
    assert [s for s, _ in prof.kv][:len(hot)] == hot and abs(sum(v for _, v in prof.kv) - 1) < 1e-9
    args, keep = fake.calls[0]
    assert args["sync"] == "all=mutex" and args["section-stats"] == "1" and keep == "sync"
    assert mc.calls == [{"server": "memcached", "threads": "4", "clients": "4",
                         "records": str(seed003.records(setup))}]
    seed003.profile_sections(setup, kv=fake, memcached=mc)
    assert len(fake.calls) == 1 and len(mc.calls) == 1, "one figure run profiles once"
    assert "no memcached profile (memcached not found" in registry.get("seed003-fig3").mapping(setup)


@pytest.mark.parametrize("kv_ns, mc_ns, hot", [
    # locus-kv: hash alone covers 80 %; memcached: slabs and hash -> both, slabs first by mean
    ({"hash": 830, "stats": 80, "slabs": 60, "alloc": 30},
     {"slabs": 600, "hash": 260, "alloc": 100, "stats": 40, "other": 500}, ["hash", "slabs"]),
    # the two agree
    ({"hash": 900, "stats": 50, "slabs": 30, "alloc": 20},
     {"hash": 850, "slabs": 100, "alloc": 30, "stats": 20, "other": 0}, ["hash"]),
    # the union is four sections: the three with the largest mean share
    # (means: alloc .28, hash .27, slabs .23, stats .22)
    ({"alloc": 500, "stats": 400, "slabs": 60, "hash": 40},
     {"hash": 500, "slabs": 400, "alloc": 60, "stats": 40, "other": 0},
     ["alloc", "hash", "slabs"]),
])
def test_profile_switches_what_either_profile_needs(machine, kv_ns, mc_ns, hot):
    setup = Setup(machine=machine, bench=None)
    prof = seed003.profile_sections(setup, kv=_FakeKv(kv_ns), memcached=_FakeMemcached(mc_ns))
    assert prof.hot == hot
    text = registry.get("seed003-fig3").mapping(setup)
    assert "Debian's memcached under liblocus-preload's profiler" in text
    assert f"switched: {', '.join(hot)}" in text


def test_a_run_that_stored_less_than_n_is_a_failure(tmp_path, kv_tools):
    """memcaslap sending fewer inserts than asked: the item count check catches it."""
    short = tmp_path / "memcaslap-short"
    short.write_text('#!/bin/sh\nargs=""\nfor a in "$@"; do\n'
                     '  if [ "$prev" = "-x" ]; then a=$((a - 240)); fi\n'
                     '  args="$args $a"; prev=$a\ndone\n'
                     f'exec {kv_tools.memcaslap} $args\n')
    short.chmod(0o755)
    kv = seed003.KvInsert(locus_kv=kv_tools.locus_kv, memcaslap=str(short))
    res = kv.run(seed003._args("locus-kv", "all=mutex", 1, 4, 1200))
    assert not res.ok and "holds 960 items after 1200 inserts" in res.error


def test_quick_seed003_fig2_and_fig3(tmp_path, kv_tools, machine):
    rc = reproduce_main(["seed003-fig2", "seed003-fig3", "--quick", "--out", str(tmp_path)])
    assert rc == 0
    rows = read_csv(tmp_path / "seed003-fig2.csv")
    assert rows and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    for r in rows:
        assert r["records"] == r["curr_items"] == seed003.RECORDS_QUICK
        assert r["insert_s"] > 0 and r["x"] == r["server_threads"]
        assert r["client_threads"] == 4 and r["server"] in ("memcached", "locus-kv")
        assert r["oversubscribed"] == (r["server_threads"] > len(seed003.split_cpus()[0]))
    _check_png(tmp_path / "seed003-fig2.png")
    mfig = draw(registry.get("seed003-fig2"), rows, machine)
    first = [l.rstrip(" *") for l in legend_labels(mfig)[0] if l != OVERSUB_NOTE]
    assert first == ["mutex C=4", "tas C=4", "oyama C=4", "memcached C=4"]
    rows3 = read_csv(tmp_path / "seed003-fig3.csv")
    assert all(r["status"] == "ok" for r in rows3)
    series = list(dict.fromkeys(r["series"] for r in rows3))
    assert series[:2] == ["all mutex", "all tas"] and series[2].startswith("tas on ")
    assert "ranked by their callers' time" in rows3[0]["mapping"]
    _check_png(tmp_path / "seed003-fig3.png")


@pytest.mark.parametrize("args, words", [
    (["--records", "1000"], "multiple of 120"),
    (["--records", "0"], "multiple of 120"),
    (["--full", "--records", "1200"], "give one"),
])
def test_bad_record_counts_are_refused(tmp_path, args, words, capsys):
    assert reproduce_main(["seed003-fig2", "--out", str(tmp_path), *args]) == 2
    assert words in capsys.readouterr().err


def test_a_hook_that_fails_fails_the_run_and_stops_the_server(kv_tools):
    class Hooks:
        def started(self, proc, port):
            self.proc = proc
            raise RuntimeError("the probe failed")

        def loaded(self, proc, port):
            raise AssertionError("not reached")

    hooks = Hooks()
    res = kv_tools.run(seed003._args("locus-kv", "all=mutex", 1, 4, 1200), hooks=hooks)
    assert not res.ok and res.error == "the probe failed"
    assert hooks.proc.poll() is not None, "the server was left running"
