"""Seed 003, chapter 4: memcached's critical sections under other mechanisms (Figures 2-5).

The seed timed memslap inserting 5,000,000 records into memcached 1.4.13, against the
number of server threads (1 to 12), with every lock switched to PTHREAD, TAS or OYAMA
(Figure 2), with only the three most contended locks switched (Figure 3, chosen with
mutrace), and with locks turned into GCC transactions one branch at a time under the
ml_wt (Figure 4) and serialirr (Figure 5) methods. Its server and client were pinned to
different CPUs of a 2-socket machine (server threads on 12 hardware threads, memslap's on
the other 12).

Here the server is locus-kv, whose four kinds of critical section (--sync hash, alloc,
slabs, stats) are the seed's item/cache, LRU, slabs and stats locks; Debian's memcached is
the reference line. Each point starts a fresh server pinned to the first half of this
process's CPUs, runs memcaslap pinned to the other half with 100 % sets of N distinct keys
(64-byte keys, 1024-byte values, its default concurrency of 128), times it, and checks
that the server then holds exactly N items: a run that stored less is a failure, not a
figure. Server thread counts above the server's CPUs are marked oversubscribed. Figure 3's
sections are chosen from two profiles of the same load, as the seed's were from mutrace:
locus-kv's --section-stats and Debian's memcached under liblocus-preload (mcprofile.py).
"""

import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import mcprofile, memcaslap, server
from .bench import REPO, Result
from .figure import Figure, Panel, Point, Ratio, span

HOST = server.HOST
CONCURRENCY = 128  # memcaslap's default, which the seed kept
# Multiples of 120, so that memcaslap's 120 connections (a multiple of 4, 8 and 12
# threads) send exactly N; the seed's 5,000,000 is rounded up to one.
RECORDS_DEFAULT = 240_000
RECORDS_QUICK = 6_000
RECORDS_FULL = 5_000_040
SECTIONS = ["hash", "alloc", "slabs", "stats"]
# What each locus-kv section stands for in the seed's memcached 1.4.13.
SEED_LOCK = {"hash": "item locks (cache_lock's hash part)", "alloc": "cache_lock (LRU)",
             "slabs": "slabs_lock", "stats": "stats_lock"}
MEMCACHED = "memcached"  # the series name of the reference server


# ---- where things run ------------------------------------------------------------------


def split_cpus(cpus=None):
    """(server CPUs, client CPUs): this process's CPUs split in two halves, the seed's
    pinning; one CPU cannot be split, and then both get it (reported as not pinned)."""
    cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if len(cpus) < 2:
        return cpus, cpus
    half = len(cpus) // 2
    return cpus[:half], cpus[half:]


def server_threads(setup):
    """The x axis: the seed's 1..12 server threads, as 1, 2, 4, 8, 12 plus the server's
    own CPU count (and twice it); --quick: 1 and 4."""
    if setup.quick:
        return [1, 4]
    n = len(split_cpus()[0])
    return sorted({1, 2, 4, 8, 12, n, 2 * n} - {0})


def records(setup):
    if setup.records:
        return setup.records
    return RECORDS_QUICK if setup.quick else RECORDS_DEFAULT


def concurrency(n, clients):
    """memcaslap's -c for n inserts by `clients` threads. It wants c to be a multiple of
    its thread count and gives each connection n // c inserts, so c must also divide n for
    exactly n to be sent: the largest such c up to its default 128 (120 for the default N
    and 4, 8 or 12 threads), or None if there is none."""
    for c in range(max(CONCURRENCY, clients), clients - 1, -1):
        if c % clients == 0 and n % c == 0:
            return c
    return None


def memory_mb(n):
    """-m for both servers: room for n items with slab slack, never evicting (seed: 6 GB)."""
    return max(64, math.ceil(n * 2048 / 2**20) + 64)


# ---- one measurement -------------------------------------------------------------------


def parse_args(args):
    """A point's args ['--server', S, '--sync', SPEC, ...] as a dict of strings."""
    out = {}
    it = iter(str(a) for a in args)
    for key in it:
        out[key.lstrip("-")] = next(it)
    return out


class KvInsert:
    """Runs one insert measurement: a fresh pinned server, memcaslap, the item count."""

    def __init__(self, locus_kv=None, memcached=None, memcaslap=None):
        built = REPO / "build/release/src/kv/locus-kv"
        # $LOCUS_KV, else the source tree's build, else an installed locus-kv on PATH.
        self.locus_kv = Path(locus_kv or os.environ.get("LOCUS_KV")
                             or (built if built.exists() else shutil.which("locus-kv") or built))
        self.memcached = memcached or shutil.which("memcached") or "/usr/bin/memcached"
        self.memcaslap = memcaslap or shutil.which("memcaslap") or "/usr/bin/memcaslap"

    def missing(self, need_memcached=True):
        """Why this cannot run (one sentence), or '' if it can."""
        if not self.locus_kv.exists():
            return f"locus-kv not found at {self.locus_kv}: build it with `make release` (or set LOCUS_KV)"
        if not Path(self.memcaslap).exists():
            return "memcaslap not found: install libmemcached-tools (scripts/install-deps)"
        if need_memcached and not Path(self.memcached).exists():
            return "memcached not found: install memcached (scripts/install-deps)"
        return ""

    def server_command(self, a):
        """(path, arguments, is it memcached) of a point's server; server.start adds the
        address and port."""
        common = ["-t", a["threads"], "-m", str(memory_mb(int(a["records"]))), "-c", "1024"]
        if a["server"] == MEMCACHED:
            return self.memcached, common, True
        args = [*common, "--sync", a["sync"]]
        if a.get("section-stats") == "1":
            args.append("--section-stats")
        return self.locus_kv, args, False

    def run(self, args, keep_stats=None, env=None, hooks=None):
        """Result with one record, or with the reason there is none. keep_stats: a stats
        subcommand whose reply is added to the record (under 'stats_<sub>'). env: the
        server's environment (default: this process's). hooks: an object whose
        started(proc, port) runs once the server listens and loaded(proc, port) after the
        inserts, both untimed; either may raise RuntimeError, which fails the run."""
        a = parse_args(args)
        n, clients = int(a["records"]), int(a["clients"])
        server_cpus, client_cpus = split_cpus()
        tmp = tempfile.mkdtemp(prefix="locus-seed003-")
        cfg = memcaslap.write_config(Path(tmp) / "insert.cfg", 100)
        path, server_args, is_memcached = self.server_command(a)
        srv = None
        try:
            try:
                srv = server.start(path, server_args, memcached=is_memcached, env=env,
                                   log=Path(tmp) / "server.log",
                                   preexec_fn=lambda: os.sched_setaffinity(0, server_cpus))
            except server.ServerError as e:
                out = e.output.strip()
                return Result(e.argv, e.status or -1,
                              error=f"server did not start: {out[-300:] or 'no output'}")
            argv, proc, port = srv.argv, srv.proc, srv.port
            conc = concurrency(n, clients)
            if conc is None:
                return Result(argv, -1, error=f"N = {n}: memcaslap cannot send exactly N with "
                                              f"{clients} threads (no multiple of {clients} up to "
                                              f"{CONCURRENCY} divides N); use a multiple of 120")
            if hooks:
                hooks.started(proc, port)
            slap = [self.memcaslap, "-s", f"{HOST}:{port}", "-F", str(cfg), "-x", str(n),
                    "-T", str(clients), "-c", str(conc)]
            window = math.ceil(n / conc)
            if window > 10_000:  # memcaslap's default window of keys per connection
                slap += ["-w", f"{math.ceil(window / 1000)}k"]
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu0 = server.cpu_seconds(proc.pid)
            t0 = time.monotonic()
            try:
                p = subprocess.run(slap, capture_output=True, text=True, timeout=600 + n / 500,
                                   preexec_fn=lambda: os.sched_setaffinity(0, client_cpus))
            except subprocess.TimeoutExpired:
                return Result(slap, -1, error="memcaslap did not finish in time; killed")
            elapsed = time.monotonic() - t0
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu1 = server.cpu_seconds(proc.pid)
            if p.returncode != 0 or memcaslap.parse(p.stdout)["tps"] is None:
                err = (p.stderr.strip() or p.stdout.strip())[-300:]
                return Result(slap, p.returncode, error=f"memcaslap failed (status {p.returncode}): {err}")
            stats = srv.stats()
            extra = srv.stats(keep_stats) if keep_stats else None
            if hooks:
                hooks.loaded(proc, port)
        except RuntimeError as e:
            return Result(argv, -1, error=str(e))
        finally:
            status = srv.stop() if srv else 0
            log_tail = srv.output()[-300:] if srv else ""
            shutil.rmtree(tmp, ignore_errors=True)
        items = int(stats.get("curr_items", -1))
        if items != n:
            return Result(slap, 0, error=f"the server holds {items} items after {n} inserts "
                                         f"(cmd_set {stats.get('cmd_set', '?')}, evictions "
                                         f"{stats.get('evictions', '?')})")
        if status != 0:
            return Result(argv, status if status is not None else -1,
                          error=f"server exit status {status} after SIGTERM: {log_tail}")
        rec = {
            "server": a["server"], "sync": a.get("sync", ""), "server_threads": int(a["threads"]),
            "client_threads": clients, "records": n, "insert_s": round(elapsed, 4),
            "inserts_per_s": round(n / elapsed, 1), "curr_items": items, "concurrency": conc,
            # Busy shares of the run: which side the time went to (100 % of one CPU = 100).
            "server_cpu_pct": (round(100 * (cpu1 - cpu0) / elapsed, 1)
                               if cpu0 is not None and cpu1 is not None else None),
            "client_cpu_pct": round(100 * ((ru1.ru_utime + ru1.ru_stime)
                                           - (ru0.ru_utime + ru0.ru_stime)) / elapsed, 1),
            "server_cpus": ",".join(map(str, server_cpus)),
            "client_cpus": ",".join(map(str, client_cpus)),
            "oversubscribed": int(a["threads"]) > len(server_cpus),
        }
        if extra is not None:
            rec[f"stats_{keep_stats}"] = extra
        return Result(argv, 0, [rec])


@dataclass
class Runner:
    """How the figure framework runs these figures' points (instead of locus-bench)."""

    kv: KvInsert

    def missing(self, setup):
        return self.kv.missing()

    def run(self, point, setup):
        return self.kv.run(point.args)


RUNNER = Runner(KvInsert())


def _args(server, sync, threads, clients, n, section_stats=False):
    args = ["--server", server, "--threads", threads, "--clients", clients, "--records", n]
    if server != MEMCACHED:
        args += ["--sync", sync]
    if section_stats:
        args += ["--section-stats", 1]
    return args


def _mapping(setup, what, clients):
    """The setup text; clients: the memcaslap thread counts the figure uses."""
    server_cpus, client_cpus = split_cpus()
    pin = (f"server pinned to CPU {','.join(map(str, server_cpus))}, memcaslap to CPU "
           f"{','.join(map(str, client_cpus))} (seed: server on 12 hardware threads, memslap on "
           f"the other 12)" if server_cpus != client_cpus else
           "server and memcaslap share the only CPU (not pinned)")
    return (f"{what}; N = {records(setup):,} records inserted by memcaslap (64 B keys, 1024 B "
            f"values, 100 % sets, concurrency {concurrency(records(setup), max(clients)) or '?'} (a multiple of the threads "
            f"dividing N, near memcaslap's default {CONCURRENCY}); seed: N = 5,000,000); "
            f"{span(clients)} "
            f"memcaslap threads; server threads = {span(server_threads(setup))} (seed: 1..12); "
            f"{pin}; each point a fresh server with -m {memory_mb(records(setup))} MB (no "
            f"eviction), checked to hold exactly N items afterwards.")


def _time_panel(title, group=None):
    return Panel(title, "insert_s", group=group, xscale="linear")


def _kv_figure(number, caption, **fields):
    """A seed 003 figure: insert time against server threads, measured by RUNNER."""
    fields.setdefault("x_label", "server threads (locus-kv -t)")
    return Figure(name=f"seed003-fig{number}", seed_ref=f"seed 003, Figure {number}",
                  caption=caption, bench="kv-insert", x_name="server_threads",
                  table_metric="insert_s", runner=RUNNER, records=records, **fields)


# ---- Figure 2: every section under one mechanism ---------------------------------------

FIG2_MECHS = [("mutex", "all=mutex"), ("tas", "all=tas"), ("oyama", "all=oyama"),
              ("ttas", "all=ttas"), ("mcs", "all=mcs"), ("ccsynch", "all=ccsynch"),
              ("flat", "all=flat")]
FIG2_CLIENTS = [4, 8, 12]


def _fig2_clients(setup):
    return [4] if setup.quick else FIG2_CLIENTS


def _fig2_points(setup):
    n = records(setup)
    mechs = FIG2_MECHS[:3] if setup.quick else FIG2_MECHS
    pts = []
    for c in _fig2_clients(setup):
        for t in server_threads(setup):
            for label, sync in mechs + [(MEMCACHED, "")]:
                pts.append(Point(series=f"{label} C={c}", x=t, panel=f"c{c}", clients=c,
                                 args=_args(MEMCACHED if label == MEMCACHED else "locus-kv",
                                            sync, t, c, n)))
    return pts


def _by_mech(series):
    return series.rsplit(" C=", 1)[0]


def _reference_style(series, all_series):
    return {"linestyle": "--", "linewidth": 1.2} if _by_mech(series) == MEMCACHED else {}


def _fig2_ratios(series):
    out = []
    for c in FIG2_CLIENTS:
        for mech in ("tas", "oyama"):
            num, den = [f"mutex C={c}"], [f"{mech} C={c}"]
            if all(s in series for s in num + den):
                out.append(Ratio(f"mutex/{mech} C={c}", num, den))
        if f"mutex C={c}" in series and f"{MEMCACHED} C={c}" in series:
            out.append(Ratio(f"mutex/memcached C={c}", [f"mutex C={c}"], [f"{MEMCACHED} C={c}"]))
    return out


FIG2 = _kv_figure(
    2, "time to insert N records against server threads, every section under one mechanism",
    x_label="server threads (locus-kv -t / memcached -t)",
    points=_fig2_points,
    panels=[_time_panel(f"{c} memcaslap threads", group=f"c{c}") for c in FIG2_CLIENTS],
    mapping=lambda setup: _mapping(
        setup, "every locus-kv section (--sync all=SPEC) under mutex (the seed's PTHREAD), tas, "
        "oyama, and ttas, mcs, ccsynch, flat (the seed's future work); Debian's memcached as the "
        "reference (dashed)", _fig2_clients(setup)),
    ratios=_fig2_ratios,
    series_style=_reference_style,
    color_key=_by_mech,
)


# ---- Figure 3: only the most contended sections switched -------------------------------

PROFILE_THREADS, PROFILE_CLIENTS = 4, 4  # memcached's default -t; the seed's 4 clients
FIG3_CLIENTS = 4
HOT_SHARE, HOT_MAX = 0.8, 3  # switched: the fewest covering 80 %, at most three


@dataclass
class SectionProfile:
    """What Figure 3's combination is chosen from."""

    kv: list  # [(section, share)] locus-kv's own, most costly first
    memcached: object  # mcprofile.MemcachedProfile, or None
    memcached_note: str  # why there is no memcached profile ('' if there is)
    hot: list  # the sections switched


def covering(ranked, share=HOT_SHARE, most=HOT_MAX):
    """The most costly sections that together take at least `share`, at most `most`."""
    hot, acc = [], 0.0
    for s, v in ranked:
        if acc >= share or len(hot) == most:
            break
        hot.append(s)
        acc += v
    return hot


def combine(kv_ranked, mc_ranked=None):
    """Figure 3's sections: those either profile needs to cover 80 % of its time, most
    costly first by the two profiles' mean share, at most three (four would be the
    all-switched line)."""
    profiles = [dict(kv_ranked)] + ([dict(mc_ranked)] if mc_ranked else [])
    union = set(covering(kv_ranked)) | (set(covering(mc_ranked)) if mc_ranked else set())
    mean = {s: sum(p.get(s, 0.0) for p in profiles) / len(profiles) for s in union}
    return sorted(union, key=lambda s: (-mean[s], SECTIONS.index(s)))[:HOT_MAX]


def profile_sections(setup, kv=None, memcached=None):
    """Profiles the insert load twice, at 4 server and 4 client threads: locus-kv with
    every section under mutex and --section-stats (each section's callers' time in it,
    waiting included), and Debian's memcached under liblocus-preload's profiler, its
    mutexes named by mcprofile (each section's mutexes' wait plus hold time). Returns a
    SectionProfile; kept on setup, so that one figure run profiles once.

    memcached: a function (kv, args) -> (MemcachedProfile or None, why not), for tests.
    A memcached profile that cannot be taken leaves locus-kv's alone, and says why.
    """
    cache = setup.cache
    if "profile" in cache:
        return cache["profile"]
    kv = kv or RUNNER.kv
    memcached = memcached or mcprofile.profile_memcached
    n = records(setup)
    say = lambda what: print(f"reproduce: seed003-fig3: profiling {what} ({PROFILE_THREADS} "
                             f"server and {PROFILE_CLIENTS} client threads, {n:,} inserts) ...",
                             file=sys.stderr, flush=True)
    say("locus-kv's sections (all=mutex, --section-stats)")
    res = kv.run(_args("locus-kv", "all=mutex", PROFILE_THREADS, PROFILE_CLIENTS, n,
                       section_stats=True), keep_stats="sync")
    if not res.ok:
        raise RuntimeError(f"the profiling run failed: {res.error}")
    st = res.records[0]["stats_sync"]
    cost = {s: int(st.get(f"{s}:time_ns", 0)) for s in SECTIONS}
    total = sum(cost.values()) or 1
    ranked = sorted(((s, cost[s] / total) for s in SECTIONS), key=lambda p: -p[1])
    say("memcached's mutexes (LD_PRELOAD=liblocus-preload.so, LOCUS_PROFILE)")
    mc, why = memcached(kv, _args(MEMCACHED, "", PROFILE_THREADS, PROFILE_CLIENTS, n))
    if mc is None:
        print(f"reproduce: seed003-fig3: no memcached profile: {why}", file=sys.stderr,
              flush=True)
    cache["profile"] = SectionProfile(ranked, mc, why,
                                      combine(ranked, mc.ranked() if mc else None))
    return cache["profile"]


def _combo(hot, mech):
    return ",".join(["all=mutex"] + [f"{s}={mech}" for s in hot])


def _fig3_points(setup):
    hot = profile_sections(setup).hot
    n, c = records(setup), FIG3_CLIENTS
    series = [("all mutex", "all=mutex"), ("all tas", "all=tas"),
              (f"tas on {'+'.join(hot)}", _combo(hot, "tas")),
              ("all oyama", "all=oyama"), (f"oyama on {'+'.join(hot)}", _combo(hot, "oyama"))]
    return [Point(series=label, x=t, clients=c, args=_args("locus-kv", sync, t, c, n))
            for t in server_threads(setup) for label, sync in series]


def _fig3_mapping(setup):
    prof = profile_sections(setup)
    shares = ", ".join(f"{s} {share:.0%}" for s, share in prof.kv)
    mc = prof.memcached
    if mc:
        named = ", ".join(f"{mcprofile.NAMES[s]} ({s}) {share:.0%}" for s, share in mc.ranked())
        mc_text = (f"Debian's memcached under liblocus-preload's profiler, same load, each "
                   f"section's mutexes' wait + hold time: {named}; other mutexes "
                   f"{mc.other_share():.0%} of all mutex time (its mutexes named by probing "
                   f"with stats commands and gets, as mcprofile.py describes: "
                   f"{mc.named['hash']} item locks, {mc.named['alloc']} LRU locks and bump buffers, "
                   f"{mc.named['slabs']} slabs_lock, {mc.named['stats']} stats mutexes)")
    else:
        mc_text = f"no memcached profile ({prof.memcached_note})"
    return _mapping(
        setup, f"sections ranked by their callers' time in them in one all=mutex locus-kv run "
        f"with --section-stats ({PROFILE_THREADS} server, {PROFILE_CLIENTS} client threads): "
        f"{shares}; {mc_text}; switched: {', '.join(prof.hot)} (the sections either profile "
        f"needs to cover 80 % of its time; the seed switched the three mutrace found: "
        f"cache_lock, slabs_lock, stats_lock); the rest stay mutex", [FIG3_CLIENTS])


def _fig3_ratios(series):
    combos = [s for s in series if " on " in s]
    out = []
    for mech in ("tas", "oyama"):
        combo = [s for s in combos if s.startswith(mech + " on ")]
        if combo:
            out.append(Ratio(f"{mech} combo / all {mech}", combo, [f"all {mech}"]))
            out.append(Ratio(f"all mutex / {mech} combo", ["all mutex"], combo))
    return out


FIG3 = _kv_figure(
    3, "only the most contended sections switched (tas, oyama) against all switched and all mutex",
    points=_fig3_points,
    panels=[_time_panel("4 memcaslap threads")],
    mapping=_fig3_mapping,
    ratios=_fig3_ratios,
)


# ---- Figures 4 and 5: sections moved to stm one at a time ------------------------------

# The seed's branch order: cache_lock's parts first (001-006), then stats_lock (007), then
# slabs_lock (008). Here: hash and alloc (cache_lock's hash table and LRU), then stats,
# then slabs, so that the step the seed found expensive (stats) is the third line here
# as it was its seventh branch.
STM_ORDER = ["hash", "alloc", "stats", "slabs"]


def _stm_series(method, quick=False):
    out = [("none (all mutex)", "all=mutex")]
    moved = []
    for s in STM_ORDER[:2] if quick else STM_ORDER:
        moved.append(s)
        sync = ",".join(["all=mutex"] + [f"{m}=stm:{method}" for m in moved])
        out.append(("+" + "+".join(moved), sync))
    return out


def _stm_clients(setup):
    return 4 if setup.quick else 12


def _stm_points(method):
    def points(setup):
        n, c = records(setup), _stm_clients(setup)
        return [Point(series=label, x=t, clients=c, args=_args("locus-kv", sync, t, c, n))
                for t in server_threads(setup) for label, sync in _stm_series(method, setup.quick)]
    return points


def _stm_mapping(method):
    def mapping(setup):
        return _mapping(
            setup, f"sections moved to stm:{method} one more per line, in the order "
            f"{' → '.join(STM_ORDER)} (the seed's branches: cache_lock's parts, then stats_lock "
            f"(007), then slabs_lock (008)); the stats section has transactional clones, so it "
            f"runs as real {method} transactions; hash, alloc and slabs call functions without "
            f"clones and run serial-irrevocably under either method; stm admits at most as many "
            f"threads into transactions as there are CPUs", [_stm_clients(setup)])
    return mapping


def _stm_ratios(series):
    out = []
    for a, b in zip(series, series[1:]):
        out.append(Ratio(f"{b} / {a}", [b], [a]))
    return out


def _stm_figure(number, method, name):
    return _kv_figure(
        number, f"sections moved to stm one at a time, {name} ({method})",
        points=_stm_points(method),
        panels=[_time_panel("12 memcaslap threads")],
        mapping=_stm_mapping(method),
        ratios=_stm_ratios,
    )


FIG4 = _stm_figure(4, "ml_wt", "Orec-WT")
FIG5 = _stm_figure(5, "serialirr", "serial irrevocable")

FIGURES = [FIG2, FIG3, FIG4, FIG5]
