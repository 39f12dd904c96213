"""Seed 000, chapter 3: the locality microbenchmark (Figures 3.5, 3.6, 3.7).

Each iteration walks a thread-local array of n1 cache lines, then a critical section walks
an array of n2 lines and modifies m of them. Synchronous mode runs the section under a
lock on the calling thread; asynchronous mode sends it to a server thread, which keeps the
n2 lines in its own cache. As in the seed, "threads" in asynchronous mode counts the server:
T threads = T-1 clients + 1 server.

The seed ran on 24 cores with a thread per core (10 threads in Figure 3.5, 2 to 12 in
Figure 3.6, 5/9/16 in Figure 3.7). Here the thread counts come from this machine's CPUs;
on a small machine some of them are deliberately more than the CPUs (marked).
"""

from .bench import is_server_mechanism
from .figure import Figure, Panel, Point, Ratio, span

N1 = 2048
SYNC_DEFAULT = ["mutex", "ttas"]
# mpsc:locked,copy is the seed's own queue: a lock-protected ring, single-copy messages.
ASYNC_DEFAULT = ["ffwd", "mpsc:locked,copy"]


def _sync_specs(setup, default):
    return setup.sync_specs or default


def _async_specs(setup, default):
    return setup.async_specs or default


def _total(setup):
    """Figure 3.5's thread count: every CPU busy (the seed chose the sync peak, 10 of 24)."""
    return max(2, setup.cpus)


def _totals(setup):
    """Thread counts for Figures 3.6 and 3.7: low, medium and high server load.

    The seed used 2-12 (3.6) and 5, 9, 16 (3.7) threads on 24 cores. A machine with few
    CPUs cannot reach a busy server without oversubscribing, so up to 4 CPUs the counts
    are 2, 4 and 8; larger machines get 2, N/2 and N.
    """
    n = setup.cpus
    if n <= 4:
        return [2, 4] if setup.quick else [2, 4, 8]
    return [2, n] if setup.quick else [2, max(3, n // 2), n]


def _args(spec, total, n2, modify=0, msg=0):
    """Bench arguments for one locality point with `total` threads in the seed's sense."""
    server = is_server_mechanism(spec)
    clients = total - 1 if server else total
    args = ["--mechanisms", spec, "--threads", clients, "--n1", N1, "--n2", n2,
            "--modify", modify, "--msg", msg]
    if server:
        args += ["--servers", 1]
    return args, clients


def _pow2(lo, hi):
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def _cache_lines(machine):
    """Dotted markers: where L1d and L2 fill up, counted in this machine's cache lines."""
    marks = []
    for name, size in (("L1d", machine.l1d), ("L2", machine.l2)):
        if size:
            marks.append((machine.lines(size), f"{name} = {machine.lines(size)} lines"))
    return marks


def _by_threads(series):
    """Figures 3.6 and 3.7 colour a series by its thread count ('SPEC T=t')..."""
    return series.rsplit(" T=", 1)[-1]


_LINESTYLES = ["-", "--", "-.", ":"]


def _style_by_spec(series, all_series):
    """... and tell mechanisms apart by line style."""
    specs = list(dict.fromkeys(s.rsplit(" T=", 1)[0] for s in all_series))
    spec = series.rsplit(" T=", 1)[0]
    return {"linestyle": _LINESTYLES[specs.index(spec) % len(_LINESTYLES)]}


# ---- Figure 3.5: data displacement ---------------------------------------------------


def _n2_values(setup):
    if setup.quick:
        return [16, 256, 4096]
    l2_lines = setup.machine.lines(setup.machine.l2) or 16384
    return _pow2(1, max(16384, 2 * l2_lines))


def _fig35_points(setup):
    t = _total(setup)
    pts = []
    for n2 in _n2_values(setup):
        for spec in _sync_specs(setup, SYNC_DEFAULT) + _async_specs(setup, ASYNC_DEFAULT):
            args, clients = _args(spec, t, n2)
            pts.append(Point(series=spec, x=n2, args=args, total_threads=t, clients=clients))
    return pts


def _fig35_mapping(setup):
    t = _total(setup)
    return (
        f"n1={N1} lines, n2 = {span(_n2_values(setup))}, modify=0; "
        f"T={t} threads in total (seed: 10 on 24 cores). "
        f"Sync ({', '.join(_sync_specs(setup, SYNC_DEFAULT))}): {t} threads take the lock. "
        f"Async ({', '.join(_async_specs(setup, ASYNC_DEFAULT))}): {t - 1} client(s) + 1 server."
    )


def _fig35_ratios(series):
    syncs = [s for s in series if not is_server_mechanism(s)]
    asyncs = [s for s in series if is_server_mechanism(s)]
    return [
        Ratio("best async / best sync (it/s)", asyncs, syncs),
        Ratio("best sync / best async (cycles)", syncs, asyncs, metric="cycles"),
    ]


FIG3_5 = Figure(
    name="seed000-fig3-5",
    seed_ref="seed 000, Figure 3.5",
    caption="data displacement: thread-local array 2048 lines, critical-section array n2 swept",
    bench="locality",
    x_name="n2",
    x_label="critical-section data size n2 (cache lines)",
    points=_fig35_points,
    panels=[
        Panel("(a) throughput", "iters_per_s", yscale="log", vlines=_cache_lines),
        Panel("(b) CPU utilization", "cycles", yscale="log", vlines=_cache_lines),
    ],
    mapping=_fig35_mapping,
    table_metric="iters_per_s",
    ratios=_fig35_ratios,
    default_duration=1.0,
)


# ---- Figure 3.6: data invalidation ---------------------------------------------------


def _modify_values(setup):
    return [0, 128] if setup.quick else [0] + _pow2(1, 128)


def _fig36_specs(setup):
    return _sync_specs(setup, ["mutex"]), _async_specs(setup, ["ffwd"])


def _fig36_points(setup):
    sync, asyn = _fig36_specs(setup)
    pts = []
    for m in _modify_values(setup):
        for t in _totals(setup):
            for group, specs in (("sync", sync), ("async", asyn)):
                for spec in specs:
                    args, clients = _args(spec, t, 128, modify=m)
                    pts.append(Point(series=f"{spec} T={t}", x=m, args=args, panel=group,
                                     total_threads=t, clients=clients))
    return pts


def _fig36_mapping(setup):
    sync, asyn = _fig36_specs(setup)
    totals = ", ".join(str(t) for t in _totals(setup))
    return (
        f"n1={N1}, n2=128 lines, modify m = {span(_modify_values(setup))}; "
        f"T = {totals} threads in total "
        f"(seed: 2 to 12 on 24 cores). Sync ({', '.join(sync)}): T threads; "
        f"async ({', '.join(asyn)}): T-1 clients + 1 server."
    )


def _fig36_ratios(series):
    """async/sync at each thread count T, from series named 'SPEC T=t'."""
    out = []
    totals = dict.fromkeys(s.rsplit(" T=", 1)[1] for s in series if " T=" in s)
    for t in totals:
        at_t = [s for s in series if s.endswith(f" T={t}")]
        num = [s for s in at_t if is_server_mechanism(s.rsplit(" T=", 1)[0])]
        den = [s for s in at_t if not is_server_mechanism(s.rsplit(" T=", 1)[0])]
        out.append(Ratio(f"async/sync T={t}", num, den))
    return out


FIG3_6 = Figure(
    name="seed000-fig3-6",
    seed_ref="seed 000, Figure 3.6",
    caption="data invalidation: n1=2048, n2=128 lines, m of them modified per critical section",
    bench="locality",
    x_name="modify",
    x_label="cache lines modified per critical section (m)",
    points=_fig36_points,
    panels=[
        Panel("(a) throughput: synchronous", "iters_per_s", group="sync", xscale="symlog2"),
        Panel("(b) throughput: asynchronous", "iters_per_s", group="async", xscale="symlog2"),
        Panel("(c) CPU utilization: synchronous", "cycles", group="sync", xscale="symlog2"),
        Panel("(d) CPU utilization: asynchronous", "cycles", group="async", xscale="symlog2"),
    ],
    mapping=_fig36_mapping,
    table_metric="iters_per_s",
    ratios=_fig36_ratios,
    color_key=_by_threads,
    default_duration=1.0,
)


# ---- Figure 3.7: message size --------------------------------------------------------


def _msg_values(setup):
    return [8, 512, 4096] if setup.quick else _pow2(8, 4096)


def _fig37_points(setup):
    pts = []
    for msg in _msg_values(setup):
        for t in _totals(setup):
            for spec in _async_specs(setup, ASYNC_DEFAULT):
                args, clients = _args(spec, t, 1, msg=msg)
                pts.append(Point(series=f"{spec} T={t}", x=msg, args=args,
                                 total_threads=t, clients=clients))
    return pts


def _fig37_mapping(setup):
    totals = ", ".join(str(t) for t in _totals(setup))
    return (
        f"async only ({', '.join(_async_specs(setup, ASYNC_DEFAULT))}); n1={N1}, n2=1 line "
        f"(the seed's text: the section is kept tiny so messaging dominates), modify=0, "
        f"message bytes = {span(_msg_values(setup))}; "
        f"T = {totals} threads in total = T-1 clients + 1 server "
        f"(seed: 5, 9, 16 on 24 cores)."
    )


def _fig37_ratios(series):
    return []


FIG3_7 = Figure(
    name="seed000-fig3-7",
    seed_ref="seed 000, Figure 3.7",
    caption="message size: asynchronous mode, n1=2048, n2=1 line, message bytes swept",
    bench="locality",
    x_name="msg",
    x_label="message size (bytes)",
    points=_fig37_points,
    panels=[
        Panel("(a) throughput", "iters_per_s"),
        Panel("(b) server-busy percentage", "server_busy_pct"),
    ],
    mapping=_fig37_mapping,
    table_metric="iters_per_s",
    ratios=_fig37_ratios,
    color_key=_by_threads,
    series_style=_style_by_spec,
    default_duration=1.0,
)

FIGURES = [FIG3_5, FIG3_6, FIG3_7]
