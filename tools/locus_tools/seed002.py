"""Seed 002, chapters 2 and 3: asynchronous delegation (Figures 3, 4, 8, 9, 11, 12, 13, 15).

The seed measured a 56-thread machine: in its dedicated-delegation figures the total
thread count is fixed at 56 and the x axis moves threads from clients to servers. Here the
total is TOT = 4 x CPUs (8 on 2 CPUs: oversubscribed on purpose, because a server-bound
and a client-bound region need more threads than a 2-CPU machine has), servers go from 1
to TOT-1 and the rest are clients.

The seed's chapter 2 benchmark allocated one 64-byte variable per server; here 1024
counters are spread round robin over the servers (each counter has its own executor), so
a client still picks a server uniformly at random and the counters stay in the server's
cache.
"""

from .bench import is_server_mechanism
from .figure import Figure, Panel, Point, Ratio, span

VARS = 1024


def _tot(setup):
    return 4 * setup.cpus


def _servers(setup):
    tot = _tot(setup)
    if setup.quick:
        return sorted({1, tot // 2, tot - 1})
    return list(range(1, tot))


def _fetchadd(spec, clients, vars_, servers=None, fn="add"):
    args = ["--mechanisms", spec, "--threads", clients, "--vars", vars_, "--fn", fn]
    if servers is not None:
        args += ["--servers", servers]
    return args


def _dedicated_mapping(setup, what):
    tot = _tot(setup)
    return (
        f"{what}; TOT={tot} threads in total (4 x {setup.cpus} CPUs; seed: 56), "
        f"servers = {span(_servers(setup))}, clients = TOT - servers; {VARS} counters round robin over "
        f"the servers (seed: one variable per server); fetch-and-add, no callback."
    )


def _by_servers(setup, series_specs, fn_of=lambda series: "add"):
    """Points for an x = servers figure: every series at each server count."""
    tot = _tot(setup)
    pts = []
    for s in _servers(setup):
        for series, spec in series_specs:
            args = _fetchadd(spec, tot - s, VARS, servers=s, fn=fn_of(series))
            pts.append(Point(series=series, x=s, args=args, total_threads=tot, clients=tot - s))
    return pts


def _servers_panel(title="throughput"):
    return [Panel(title, "mops", xscale="linear")]


# ---- Figure 3: pending request queue vs direct request-line writes ---------------------

FIG3_SERIES = [("pending queue (queue=32)", "async:lines=16,queue=32"),
               ("direct writes", "async:lines=16,direct")]

FIG3 = Figure(
    name="seed002-fig3",
    seed_ref="seed 002, Figure 3",
    caption="asynchronous dedicated delegation: 32-long pending request queue vs direct writes",
    bench="fetchadd",
    x_name="servers",
    x_label="delegation servers (the other threads are clients)",
    points=lambda setup: _by_servers(setup, FIG3_SERIES),
    panels=_servers_panel(),
    mapping=lambda setup: _dedicated_mapping(setup, "async, 16 request lines; queue=32 vs direct"),
    ratios=lambda series: [Ratio("queue / direct", [FIG3_SERIES[0][0]], [FIG3_SERIES[1][0]])],
    default_duration=2.0,
)


# ---- Figure 4: pending queue length ----------------------------------------------------


def _queue_lengths(setup):
    return [2, 32] if setup.quick else [2, 4, 8, 16, 32, 64]


def _fig4_series(setup):
    return [(f"queue={q}", f"async:lines=16,queue={q}") for q in _queue_lengths(setup)]


FIG4 = Figure(
    name="seed002-fig4",
    seed_ref="seed 002, Figure 4",
    caption="asynchronous dedicated delegation by pending request queue length (16 request lines)",
    bench="fetchadd",
    x_name="servers",
    x_label="delegation servers (the other threads are clients)",
    points=lambda setup: _by_servers(setup, _fig4_series(setup)),
    panels=_servers_panel(),
    mapping=lambda setup: _dedicated_mapping(
        setup, f"async, 16 request lines, queue length = {span(_queue_lengths(setup))}"),
    ratios=lambda series: [Ratio("queue=32 / queue=2", ["queue=32"], ["queue=2"])],
    default_duration=2.0,
)


# ---- Figure 8: request lines -----------------------------------------------------------


def _fig8_server_counts(setup):
    tot = _tot(setup)
    return sorted({1, tot // 2})


def _fig8_lines(setup):
    return [1, 16] if setup.quick else [1, 2, 4, 8, 16, 32, 64]


def _fig8_points(setup):
    tot = _tot(setup)
    pts = []
    for n in _fig8_lines(setup):
        for s in _fig8_server_counts(setup):
            spec = f"async:lines={n},queue={2 * n}"
            pts.append(Point(series=f"{s} server{'s' if s > 1 else ''}, {tot - s} clients",
                             x=n, args=_fetchadd(spec, tot - s, VARS, servers=s),
                             total_threads=tot, clients=tot - s))
    return pts


def _fig8_mapping(setup):
    tot = _tot(setup)
    counts = " and ".join(str(s) for s in _fig8_server_counts(setup))
    return (
        f"async, request lines per client-server pair = {span(_fig8_lines(setup))}, "
        f"queue = 2 x lines; "
        f"TOT={tot} threads (seed: 56) with {counts} servers, the rest clients; "
        f"{VARS} counters round robin over the servers."
    )


FIG8 = Figure(
    name="seed002-fig8",
    seed_ref="seed 002, Figure 8",
    caption="asynchronous dedicated delegation by request lines per client-server pair",
    bench="fetchadd",
    x_name="lines",
    x_label="request lines per client-server pair (queue = 2 x lines)",
    points=_fig8_points,
    panels=[Panel("throughput", "mops", xscale="log2")],
    mapping=_fig8_mapping,
    default_duration=2.0,
)


# ---- Figure 9: fetch-and-add vs fetch-and-sqrt ------------------------------------------

FIG9_SERIES = [("add", "async"), ("sqrt", "async")]

FIG9 = Figure(
    name="seed002-fig9",
    seed_ref="seed 002, Figure 9",
    caption="fetch-and-add vs fetch-and-sqrt: a slower section needs more servers",
    bench="fetchadd",
    x_name="servers",
    x_label="delegation servers (the other threads are clients)",
    points=lambda setup: _by_servers(setup, FIG9_SERIES, fn_of=lambda series: series),
    panels=_servers_panel(),
    mapping=lambda setup: _dedicated_mapping(setup, "async (16 lines, queue 32), --fn add vs --fn sqrt"),
    ratios=lambda series: [Ratio("add / sqrt", ["add"], ["sqrt"])],
    default_duration=2.0,
)


# ---- Figure 11: flat delegation scheduling policies --------------------------------------

FLAT_POLICIES = ["flat:queue", "flat:blocked", "flat:doorbell", "flat:bound=8"]
FLAT_REFERENCES = ["mutex", "peer:atomic"]


def _fig11_threads(setup):
    n = setup.cpus
    if setup.quick:
        return sorted({1, n, 4 * n})
    return sorted({1, 2, 4, 8, 16, n, 2 * n, 4 * n, 8 * n})


def _fig11_points(setup):
    pts = []
    for t in _fig11_threads(setup):
        for spec in FLAT_POLICIES + FLAT_REFERENCES:
            pts.append(Point(series=spec, x=t, args=_fetchadd(spec, t, t), total_threads=t, clients=t))
    return pts


def _fig11_mapping(setup):
    threads = ", ".join(str(t) for t in _fig11_threads(setup))
    return (
        f"threads = {threads} (seed: up to 56), every thread a client and (for flat) a "
        f"server; vars = threads (the seed: one variable per server, and in flat "
        f"delegation every thread serves); flat slots = CPUs (locus's default). "
        f"mutex and peer:atomic are references (dashed)."
    )


def _fig11_style(series, all_series):
    return {"linestyle": "--"} if series in FLAT_REFERENCES else {}


FIG11 = Figure(
    name="seed002-fig11",
    seed_ref="seed 002, Figure 11",
    caption="asynchronous flat delegation throughput by scheduling policy",
    bench="fetchadd",
    x_name="threads",
    x_label="threads (each a client; flat: also a server)",
    points=_fig11_points,
    panels=[Panel("throughput", "mops", xscale="log2")],
    mapping=_fig11_mapping,
    ratios=lambda series: [
        Ratio("best flat / mutex", FLAT_POLICIES, ["mutex"]),
        Ratio("best flat / atomic", FLAT_POLICIES, ["peer:atomic"]),
    ],
    series_style=_fig11_style,
    default_duration=2.0,
)


# ---- Figures 12 and 13: latency, response readiness and throughput per policy -------------
#
# The seed compared its flat policies (and, in the text, dedicated delegation) at 56 and at 28
# server-client pairs: average request latency in cycles from generation to callback, the
# share of responses ready when the client polled, and throughput. Every flat thread is a
# pair (a client, and the server of its own slot: slots = threads); dedicated delegation
# splits the same threads into servers and clients, half and half. One 64-byte variable per
# server, as in the seed. Latency: one request in 64 is timed (--latency), post to callback.

PAIRS_POLICIES = ["flat:queue", "flat:blocked", "flat:doorbell", "flat:bound=8"]
DEDICATED = "async (dedicated)"


def _pairs_points(threads):
    pts = []
    for spec in PAIRS_POLICIES:
        args = _fetchadd(f"{spec},slots={threads}", threads, threads) + ["--latency"]
        pts.append(Point(series=spec, x=threads, args=args, total_threads=threads,
                         clients=threads))
    half = max(1, threads // 2)
    args = _fetchadd("async", threads - half, half, servers=half) + ["--latency"]
    pts.append(Point(series=DEDICATED, x=threads, args=args, total_threads=threads,
                     clients=threads - half))
    return pts


def _pairs_mapping(threads, seed_pairs):
    half = max(1, threads // 2)
    return (
        f"{threads} threads (seed: {seed_pairs} server-client pairs; here 4 x CPUs stands for the "
        f"seed's 56, as in the other seed 002 figures, and 2 x CPUs for its 28). Flat: every "
        f"thread a client and the server of its own slot (slots = {threads}), {threads} counters, "
        f"bound=8 serves the home slot every 8 posts; dedicated: async (16 lines, queue 32) with "
        f"{half} servers and {threads - half} clients, {half} counters. One request in 64 timed "
        f"from post to callback (mean, as the seed, and median; TSC cycles); ready = response lines found answered / "
        f"lines in flight polled."
    )


def _pairs_ratios(series):
    return [
        Ratio("blocked / queue Mops", ["flat:blocked"], ["flat:queue"]),
        Ratio("blocked / queue mean latency", ["flat:blocked"], ["flat:queue"],
              metric="latency_cycles_mean"),
        Ratio("dedicated / queue mean latency", [DEDICATED], ["flat:queue"],
              metric="latency_cycles_mean"),
    ]


def _pairs_figure(number, seed_pairs, threads_of):
    return Figure(
        name=f"seed002-fig{number}",
        seed_ref=f"seed 002, Figure {number}",
        caption=f"{seed_pairs} server-client pairs: average request latency, responses ready "
                f"when polled and throughput, per flat policy and dedicated delegation",
        bench="fetchadd",
        x_name="threads",
        x_label="threads in all (flat: each a client and a server; dedicated: half servers)",
        points=lambda setup: _pairs_points(threads_of(setup)),
        panels=[Panel("average request latency, post to callback (the seed's)",
                      "latency_cycles_mean", kind="bar"),
                Panel("median request latency, post to callback", "latency_cycles_median",
                      kind="bar"),
                Panel("responses ready when polled", "ready_pct", kind="bar"),
                Panel("throughput", "mops", kind="bar")],
        mapping=lambda setup: _pairs_mapping(threads_of(setup), seed_pairs),
        ratios=_pairs_ratios,
        more_tables=["latency_cycles_mean", "latency_cycles_median", "ready_pct"],
        default_duration=2.0,
    )


FIG12 = _pairs_figure(12, 56, lambda setup: 4 * setup.cpus)
FIG13 = _pairs_figure(13, 28, lambda setup: 2 * setup.cpus)


# ---- Figure 15: fetch-and-add by number of variables, every mechanism ---------------------


def _fig15_specs(setup):
    """Every executor but mpsc (a server thread per counter), then every peer."""
    mechs = [m for m in setup.bench.mechanisms() if m != "mpsc"]
    return mechs + setup.bench.peers()


def _fig15_vars(setup):
    if setup.quick:
        return [1, 64, 4096]
    return [4 ** k for k in range(11)]  # 1 .. 2^20


def _fig15_points(setup):
    n = setup.cpus
    pts = []
    for v in _fig15_vars(setup):
        for spec in _fig15_specs(setup):
            if is_server_mechanism(spec):
                clients = max(1, n - 1)
                args = _fetchadd(spec, clients, v, servers=1)
                total = clients + 1
            else:
                clients = total = n
                args = _fetchadd(spec, n, v)
            pts.append(Point(series=spec, x=v, args=args, total_threads=total, clients=clients))
    return pts


def _fig15_mapping(setup):
    n = setup.cpus
    counts = ", ".join(str(v) for v in _fig15_vars(setup))
    return (
        f"every mechanism at its defaults and every peer; locks, peers, stm and flat run "
        f"{n} threads (the CPUs; seed: 56); ffwd and async run {max(1, n - 1)} client(s) + "
        f"1 server (seed: async-16s, the balance of threads are clients). mpsc is left out: "
        f"it starts a server thread per counter. Counters: {counts}."
    )


def _fig15_groups(series):
    locus = [s for s in series if not s.startswith("peer:")]
    peers = [s for s in series if s.startswith("peer:")]
    return locus, peers


def _fig15_ratios(series):
    locus, peers = _fig15_groups(series)
    return [
        Ratio("best locus / mutex", locus, ["mutex"]),
        Ratio("best locus / best peer", locus, peers),
    ]


def _fig15_style(series, all_series):
    if series.startswith("peer:"):
        return {"linestyle": ":"}
    if series in ("ffwd", "async", "flat"):
        return {"linewidth": 2.2}
    return {}


FIG15 = Figure(
    name="seed002-fig15",
    seed_ref="seed 002, Figure 15",
    caption="fetch-and-add throughput by number of 64-byte variables, every mechanism",
    bench="fetchadd",
    x_name="vars",
    x_label="counters (64-byte variables)",
    points=_fig15_points,
    panels=[Panel("throughput", "mops", xscale="log2", yscale="log")],
    mapping=_fig15_mapping,
    ratios=_fig15_ratios,
    best_of=lambda series: [("fastest locus", _fig15_groups(series)[0]),
                            ("fastest peer", _fig15_groups(series)[1])],
    table_series=False,
    series_style=_fig15_style,
)

FIGURES = [FIG3, FIG4, FIG8, FIG9, FIG11, FIG12, FIG13, FIG15]
