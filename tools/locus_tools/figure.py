"""What a figure is, how its sweep runs, and how its rows become plotted values.

A Figure is data: the points to measure (each a locus-bench invocation labelled with its
series and x), the panels that draw them, and the ratios its report table shows. The seed
modules only describe figures; running, aggregating, plotting and reporting are the same
code for all of them, so that every figure is measured and drawn the same way.
"""

import statistics
from dataclasses import dataclass, field
from typing import Callable, Optional

from .bench import Progress

# How each plotted metric reads and which way is better (for "best" in ratios).
METRICS = {
    "iters_per_s": ("iterations/s", True),
    "cycles": ("cycles per iteration", False),
    "server_busy_pct": ("server busy (%)", True),
    "mops": ("Mops/s (million ops/s)", True),
    "insert_s": ("seconds to insert N records", False),
    "latency_cycles_mean": ("average request latency (TSC cycles)", False),
    "latency_cycles_median": ("median request latency (TSC cycles)", False),
    "ready_pct": ("responses ready when polled (%)", True),
}


@dataclass
class Setup:
    """Everything a figure's sweep depends on besides the figure itself."""

    machine: object
    bench: object
    quick: bool = False
    duration: Optional[float] = None  # None: the figure's default
    repeat: int = 1
    records: Optional[int] = None  # seed003: records to insert (None: the figure's default)
    cache: dict = field(default_factory=dict)  # what a figure measured to plan its points
    sync_specs: Optional[list] = None  # seed000 overrides (--sync), None: the figure's
    async_specs: Optional[list] = None  # (--async)

    @property
    def cpus(self):
        return self.machine.cpus

    def records_for(self, fig):
        """Records per point of a figure that inserts records (fig.records), else None."""
        return fig.records(self) if fig.records else None


@dataclass
class Point:
    """One measurement to make: a bench invocation and where it goes on the figure."""

    series: str
    x: float
    args: list
    panel: str = ""  # which panel group draws it ("" = every panel)
    total_threads: Optional[int] = None  # threads in the seed's sense (servers included)
    clients: Optional[int] = None
    note: str = ""  # extra progress text


@dataclass
class Panel:
    title: str
    metric: str
    group: Optional[str] = None  # draw only points of this panel group
    xscale: str = "log2"  # log2 | symlog2 | linear
    yscale: str = "linear"
    vlines: Optional[Callable] = None  # machine -> [(x, label)]
    ylim0: bool = True  # start the y axis at 0 (linear scales)
    kind: str = "line"  # line | bar (a group of bars per x, one bar per series)


@dataclass
class Ratio:
    """A report column: best of `num` over best of `den` at each x, on `metric`."""

    label: str
    num: list
    den: list
    metric: Optional[str] = None  # None: the figure's table metric


@dataclass
class Figure:
    name: str
    seed_ref: str  # "seed 000, Figure 3.5"
    caption: str
    bench: str  # locus-bench command
    x_name: str  # CSV column name of x, e.g. "n2"
    x_label: str
    points: Callable  # Setup -> [Point]
    panels: list
    mapping: Callable  # Setup -> text: how the seed's setup maps onto this machine
    table_metric: str = "mops"
    # Report columns, computed from the series found in the rows (so that a report can be
    # made from CSV files alone): [series] -> [Ratio], and [series] -> [(label, [series])]
    # for "which series is best" columns.
    ratios: Callable = lambda series: []
    best_of: Optional[Callable] = None
    table_series: bool = True  # one table column per series
    more_tables: list = field(default_factory=list)  # metrics tabled after table_metric's
    series_style: Callable = lambda series, all_series: {}  # extra plot() keywords
    color_key: Callable = lambda series: series  # series with one key share a colour
    default_duration: float = 1.0
    quick_duration: float = 0.1
    # What measures a point: None is locus-bench (`bench` names its command); else an
    # object with missing(setup) -> '' or why it cannot run, and run(point, setup) -> Result.
    runner: Optional[object] = None
    records: Optional[Callable] = None  # Setup -> records per point, for runner figures

    def duration(self, setup):
        if setup.duration is not None:
            return setup.duration
        return self.quick_duration if setup.quick else self.default_duration


def fmt_x(x):
    """An x value as people write it: 1048576, not 1.04858e+06; 0.5 stays 0.5."""
    try:
        return str(int(x)) if float(x).is_integer() else f"{x:g}"
    except (TypeError, ValueError):
        return str(x)


def span(values):
    """How a sweep reads in a setup text: '1, 64, 4096' or '1..32768 (16 values)'."""
    values = list(values)
    if len(values) <= 4:
        return ", ".join(fmt_x(v) for v in values)
    return f"{fmt_x(values[0])}..{fmt_x(values[-1])} ({len(values)} values)"


def metric_value(row, metric):
    """The value a panel plots for a row; cycles fall back to CPU ns where no TSC exists."""
    if row.get("status") != "ok":
        return None
    if metric == "cycles":
        v = row.get("cycles_per_iter")
        return v if v is not None else row.get("cpu_ns_per_iter")
    if metric == "mops" and row.get("mops") is None and row.get("iters_per_s") is not None:
        return row["iters_per_s"] / 1e6
    return row.get(metric)


def cycles_label(rows):
    """'cycles per iteration', or CPU ns when the bench had no TSC for any row."""
    if any(r.get("cycles_per_iter") is not None for r in rows if r.get("status") == "ok"):
        return "cycles per iteration"
    return "CPU ns per iteration (no TSC)"


def series_order(rows):
    return list(dict.fromkeys(r["series"] for r in rows))


def aggregate(rows, metric, group=None):
    """{series: [(x, median value, oversubscribed)]} over the ok rows, x ascending.

    Repeats of a point are reduced to their median; a point whose every repeat failed is
    absent, which the plot shows as a gap.
    """
    values = {}
    for r in rows:
        if group is not None and r.get("panel") not in (group, "", None):
            continue
        v = metric_value(r, metric)
        if v is None:
            continue
        key = (r["series"], r["x"])
        values.setdefault(key, []).append((v, bool(r.get("oversubscribed"))))
    out = {}
    for s in series_order(rows):
        pts = []
        for (series, x), vs in values.items():
            if series == s:
                pts.append((x, statistics.median(v for v, _ in vs), any(o for _, o in vs)))
        if pts:
            out[s] = sorted(pts)
    return out


def spread(rows, metric, group=None):
    """{(series, x): (min, max, n)} of the ok rows' values: the range of a point's repeats."""
    values = {}
    for r in rows:
        if group is not None and r.get("panel") not in (group, "", None):
            continue
        v = metric_value(r, metric)
        if v is not None:
            values.setdefault((r["series"], r["x"]), []).append(v)
    return {k: (min(vs), max(vs), len(vs)) for k, vs in values.items()}


def point_label(fig, point):
    text = f"{fig.name} {fig.x_name}={fmt_x(point.x)} {point.series}"
    return f"{text} {point.note}".rstrip()


def _fmt_value(v, metric):
    if metric == "mops":
        return f"{v:.2f} Mops/s"
    if metric == "iters_per_s":
        return f"{v:.4g} it/s"
    if metric == "insert_s":
        return f"{v:.2f} s"
    return f"{v:.4g}"


def _threads_mismatch(point, record):
    """A warning when the bench ran another thread count than the figure planned.

    The seeds count servers among the threads; the figures plan clients from the mechanism
    name, and the bench's own threads + servers says whether that plan held.
    """
    if point.total_threads is None or "threads" not in record or "servers" not in record:
        return ""
    ran = record["threads"] + record["servers"]
    if ran == point.total_threads:
        return ""
    return (f"  (warning: planned {point.total_threads} threads, the bench ran "
            f"{record['threads']} clients + {record['servers']} servers)")


def measurement_order(points, repeat):
    """[(point, rep)] in the order a sweep measures them.

    As locus-bench --repeat does: the points at one x (a column of the figure) are measured
    together, and their runs interleaved - run 1 of every series, then run 2 of every one
    (A B C A B C, not A A A) - so that a drift in the machine's speed touches every series
    of a column alike. Columns go in the order their first point was planned.
    """
    columns = {}
    for point in points:
        columns.setdefault(point.x, []).append(point)
    return [(point, rep) for column in columns.values() for rep in range(repeat) for point in column]


def run_figure(fig, setup, progress=None, counter=None):
    """Measures every point of fig; returns its rows (failures included, status 'fail').

    counter: a shared Progress when several figures run in one go.
    """
    points = fig.points(setup)
    duration = fig.duration(setup)
    mapping = fig.mapping(setup)
    progress = counter or Progress(len(points) * setup.repeat)
    rows = []
    for point, rep in measurement_order(points, setup.repeat):
        runs = f" run {rep + 1}/{setup.repeat}" if setup.repeat > 1 else ""
        progress.start(point_label(fig, point) + runs)
        if fig.runner is not None:
            result = fig.runner.run(point, setup)
        else:
            result = setup.bench.run(fig.bench, point.args, duration)
        lead = {
            "figure": fig.name,
            "series": point.series,
            "x_name": fig.x_name,
            "x": point.x,
            "panel": point.panel,
            "total_threads": point.total_threads,
            "clients": point.clients,
            "rep": rep,
        }
        tail = {"bench_args": " ".join(str(a) for a in point.args), "mapping": mapping}
        if result.ok:
            for rec in result.records:
                rows.append({**lead, "status": "ok", "error": "", **rec, **tail})
            v = metric_value(rows[-1], fig.table_metric)
            text = _fmt_value(v, fig.table_metric) if v is not None else "ok"
            progress.finish(text + _threads_mismatch(point, result.records[-1]))
        else:
            rows.append({**lead, "status": "fail", "error": result.error, **tail})
            progress.finish(f"FAIL ({result.error})")
    return rows


def count_points(fig, setup):
    return len(fig.points(setup)) * setup.repeat
