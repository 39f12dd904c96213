"""Figure sweeps: the quick runs write a CSV and a PNG whose legend names the seed's series."""

import io

import matplotlib.image

from locus_tools import registry
from locus_tools.bench import Progress
from locus_tools.cli import main as reproduce_main
from locus_tools.figure import aggregate, metric_value
from locus_tools.plot import OVERSUB_NOTE, draw, legend_labels, series_labels
from locus_tools.table import read_csv

NAMES = ["seed000-fig3-5", "seed000-fig3-6", "seed000-fig3-7", "seed002-fig3", "seed002-fig4",
         "seed002-fig8", "seed002-fig9", "seed002-fig11", "seed002-fig12", "seed002-fig13",
         "seed002-fig15",
         "seed003-fig2", "seed003-fig3", "seed003-fig4", "seed003-fig5"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_png(path):
    assert path.read_bytes()[:8] == PNG_MAGIC
    h, w = matplotlib.image.imread(path).shape[:2]
    assert h > 300 and w > 500


def test_the_registry_has_exactly_the_seed_figures():
    assert registry.names() == NAMES
    assert registry.resolve(["all"]) == list(registry.FIGURES.values())
    assert [f.name for f in registry.resolve(["seed002-fig9", "seed002-fig9"])] == ["seed002-fig9"]


def test_quick_seed000_fig3_5(tmp_path, bench_path, locality_bench, machine):
    rc = reproduce_main(["seed000-fig3-5", "--quick", "--duration", "0.05", "--out", str(tmp_path),
                         "--bench", str(bench_path)])
    assert rc == 0
    _check_png(tmp_path / "seed000-fig3-5.png")
    rows = read_csv(tmp_path / "seed000-fig3-5.csv")
    series = ["mutex", "ttas", "ffwd", "mpsc:locked,copy"]
    n2s = sorted({r["x"] for r in rows})
    assert len(rows) == len(series) * len(n2s) and len(n2s) >= 3
    for r in rows:
        assert r["status"] == "ok", r["error"]
        assert r["figure"] == "seed000-fig3-5" and r["x_name"] == "n2" and r["x"] == r["n2"]
        assert r["n1"] == 2048 and r["modify"] == 0
        assert r["iters_per_s"] > 0 and metric_value(r, "cycles") > 0
        # seed 000 counts the server among the threads
        assert r["threads"] + r["servers"] == r["total_threads"] == max(2, machine.cpus)
        assert (r["mode"] == "async") == (r["series"] in ("ffwd", "mpsc:locked,copy"))
        assert "n1=2048" in r["mapping"]

    mfig = draw(registry.get("seed000-fig3-5"), rows, machine)
    assert series_labels(mfig) == series
    assert len(mfig.axes) == 2
    for labels in legend_labels(mfig):
        assert [l.rstrip(" *") for l in labels if l != OVERSUB_NOTE] == series
    texts = [t.get_text() for ax in mfig.axes for t in ax.texts]
    assert f"L1d = {machine.lines(machine.l1d)} lines" in texts
    assert "seed 000, Figure 3.5" in mfig._suptitle.get_text()
    assert machine.short() in mfig._suptitle.get_text()


def test_quick_seed002_fig9(tmp_path, bench_path, bench, machine):
    rc = reproduce_main(["seed002-fig9", "--quick", "--duration", "0.05", "--out", str(tmp_path),
                         "--bench", str(bench_path)])
    assert rc == 0
    _check_png(tmp_path / "seed002-fig9.png")
    rows = read_csv(tmp_path / "seed002-fig9.csv")
    assert {r["series"] for r in rows} == {"add", "sqrt"}
    tot = 4 * machine.cpus
    for r in rows:
        assert r["status"] == "ok", r["error"]
        assert r["fn"] == r["series"]
        assert r["x"] == r["servers"] and r["threads"] == tot - r["servers"] == r["clients"]
        assert r["vars"] == 1024 and r["mops"] > 0
        assert r["oversubscribed"] is (r["threads"] + r["servers"] > machine.cpus)
    mfig = draw(registry.get("seed002-fig9"), rows, machine)
    assert series_labels(mfig) == ["add", "sqrt"]


PAIRS_SERIES = ["flat:queue", "flat:blocked", "flat:doorbell", "flat:bound=8", "async (dedicated)"]


def test_quick_seed002_fig12_and_fig13(tmp_path, bench_path, machine):
    """Latency in cycles, responses ready when polled and throughput, per policy, as bars."""
    from locus_tools.report import summary_table

    rc = reproduce_main(["seed002-fig12", "seed002-fig13", "--quick", "--duration", "0.05",
                         "--out", str(tmp_path), "--bench", str(bench_path)])
    assert rc == 0
    for name, threads in (("seed002-fig12", 4 * machine.cpus), ("seed002-fig13", 2 * machine.cpus)):
        _check_png(tmp_path / f"{name}.png")
        rows = read_csv(tmp_path / f"{name}.csv")
        assert [r["series"] for r in rows] == PAIRS_SERIES
        for r in rows:
            assert r["status"] == "ok", r["error"]
            assert r["x_name"] == "threads" and r["x"] == threads == r["total_threads"]
            assert r["threads"] + r["servers"] == threads  # the seed's pairs, servers included
            assert r["op"] == "post" and r["mops"] > 0
            # every answer is collected once, in a poll; a poll may find a line unanswered
            assert r["responses_ready"] == r["ops"] <= r["responses_polled"]
            assert 0 < r["ready_pct"] <= 100
            assert r["latency_samples"] > 0
            if r["tsc_ghz"] is not None:
                assert r["latency_cycles_mean"] > 0 and r["latency_cycles_median"] > 0
            if r["series"].startswith("flat:"):
                assert r["servers"] == 0 and f"slots={threads}" in r["spec"]
                assert r["vars"] == threads
            else:
                assert r["spec"].startswith("async:") and r["servers"] == threads // 2 == r["vars"]
        fig = registry.get(name)
        mfig = draw(fig, rows, machine)
        assert len(mfig.axes) == 4
        assert series_labels(mfig) == PAIRS_SERIES
        bars = [p for p in mfig.axes[2].patches]
        assert len(bars) == len(PAIRS_SERIES)  # one bar per series at the one x
        tables = "\n".join(summary_table(fig, rows))
        assert "blocked / queue mean latency" in tables


def test_a_bar_panel_draws_a_group_per_x_with_the_range_of_repeats(machine):
    rows = []
    for x in (4, 8):
        for series, values in (("flat:queue", (1.0, 3.0, 2.0)), ("flat:blocked", (5.0, 5.0, 5.0))):
            for v in values:
                rows.append({"figure": "seed002-fig12", "series": series, "x": x, "x_name": "threads",
                             "status": "ok", "mops": v, "oversubscribed": x > machine.cpus})
    mfig = draw(registry.get("seed002-fig12"), rows, machine)
    ax = mfig.axes[3]  # throughput
    heights = sorted(round(p.get_height(), 3) for p in ax.patches)
    assert heights == [2.0, 2.0, 5.0, 5.0]  # medians, one bar per series per x
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4", "8"]
    caps = {float(l.get_ydata()[0]) for l in ax.lines if len(l.get_ydata()) == 1}
    assert {1.0, 3.0} <= caps  # flat:queue's range (1-3), as error bar caps
    assert all(t.get_text() == "no measurement" for t in mfig.axes[0].texts)  # no latency rows


def _rows(series_points, figure="seed002-fig9"):
    rows = []
    for series, pts in series_points.items():
        for x, mops, oversub, status in pts:
            rows.append({"figure": figure, "series": series, "x": x, "x_name": "servers",
                         "status": status, "error": "" if status == "ok" else "boom",
                         "mops": mops if status == "ok" else None, "oversubscribed": oversub})
    return rows


def test_oversubscribed_points_are_hollow_and_labelled(machine):
    rows = _rows({"add": [(1, 2.0, False, "ok"), (2, 3.0, True, "ok")],
                  "sqrt": [(1, 1.0, False, "ok"), (2, 1.5, False, "ok")]})
    mfig = draw(registry.get("seed002-fig9"), rows, machine)
    labels = legend_labels(mfig)[0]
    assert labels == ["add *", "sqrt", OVERSUB_NOTE]
    faces = [l.get_markerfacecolor() for l in mfig.axes[0].lines if len(l.get_xdata()) == 1]
    assert faces.count("none") == 1


def test_failed_points_are_gaps_and_named_in_the_footnote(machine):
    rows = _rows({"add": [(1, 2.0, False, "ok"), (2, None, False, "fail"), (3, 2.5, False, "ok")],
                  "sqrt": [(1, None, False, "fail")]})
    agg = aggregate(rows, "mops")
    assert agg == {"add": [(1, 2.0, False), (3, 2.5, False)]}
    mfig = draw(registry.get("seed002-fig9"), rows, machine)
    assert series_labels(mfig) == ["add"]
    footnote = " ".join(t.get_text() for t in mfig.texts)
    assert "add at servers=2" in footnote and "sqrt at servers=1" in footnote


def test_repeats_are_reduced_to_their_median():
    rows = _rows({"add": [(1, 1.0, False, "ok"), (1, 9.0, False, "ok"), (1, 2.0, True, "ok")]})
    assert aggregate(rows, "mops") == {"add": [(1, 2.0, True)]}


def test_every_figure_plans_points_and_says_how_it_maps(bench, machine):
    from locus_tools.figure import Setup

    for quick in (True, False):
        setup = Setup(machine=machine, bench=bench, quick=quick)
        for fig in registry.FIGURES.values():
            if fig.runner is not None:
                continue  # seed003: locus-kv runs, planned in test_seed003.py
            points = fig.points(setup)
            assert points, fig.name
            assert fig.mapping(setup)
            for p in points:
                assert p.series and p.args[0] == "--mechanisms"
                if p.total_threads is not None:
                    assert 1 <= p.clients <= p.total_threads
    fig15 = {p.series for p in registry.get("seed002-fig15").points(Setup(machine, bench, quick=True))}
    assert "mpsc" not in fig15 and {"mutex", "async", "flat", "peer:atomic"} <= fig15


def test_a_failing_mechanism_leaves_gaps_not_an_abort(tmp_path, bench_path, machine):
    """A bench that fails one mechanism: the sweep goes on, the CSV says why, exit status 1."""
    wrapper = tmp_path / "failing-bench"
    wrapper.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" flat:doorbell "*) '
        'echo "locus-bench: flat:doorbell: child crashed (signal 11)" >&2; exit 1 ;; esac\n'
        f'exec "{bench_path}" "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "out"
    rc = reproduce_main(["seed002-fig11", "--quick", "--duration", "0.05", "--out", str(out),
                         "--bench", str(wrapper)])
    assert rc == 1
    rows = read_csv(out / "seed002-fig11.csv")
    failed = [r for r in rows if r["status"] == "fail"]
    assert failed and {r["series"] for r in failed} == {"flat:doorbell"}
    assert all("child crashed" in r["error"] for r in failed)
    assert all(r["mops"] is None for r in failed)
    ok = [r for r in rows if r["status"] == "ok"]
    assert {r["series"] for r in ok} == {"flat:queue", "flat:blocked", "flat:bound=8", "mutex",
                                         "peer:atomic"}
    _check_png(out / "seed002-fig11.png")
    mfig = draw(registry.get("seed002-fig11"), rows, machine)
    assert "flat:doorbell" not in series_labels(mfig)
    assert "flat:doorbell at threads=1" in " ".join(t.get_text() for t in mfig.texts)


class _RecordingRunner:
    """A figure runner that measures nothing: it notes the order of the points it is given."""

    def __init__(self):
        self.calls = []

    def missing(self, setup):
        return ""

    def run(self, point, setup):
        from locus_tools.bench import Result

        self.calls.append((point.series, point.x))
        return Result([], 0, records=[{"mops": float(len(self.calls))}])


def _recording_figure(runner):
    from locus_tools.figure import Figure, Panel, Point

    return Figure(name="order", seed_ref="test", caption="order", bench="fetchadd", x_name="x",
                  x_label="x", panels=[Panel("throughput", "mops")], mapping=lambda setup: "",
                  points=lambda setup: [Point(series=s, x=x, args=[]) for x in (1, 2)
                                        for s in "ABC"],
                  runner=runner)


def test_repeat_interleaves_the_series_of_each_x(machine):
    """--repeat 3 measures A B C A B C A B C at each x, as locus-bench --repeat does, not A A A."""
    from locus_tools.figure import Setup, run_figure

    runner = _RecordingRunner()
    rows = run_figure(_recording_figure(runner), Setup(machine=machine, bench=None, repeat=3),
                      counter=Progress(18, io.StringIO()))
    assert runner.calls == [(s, 1) for _ in range(3) for s in "ABC"] + \
        [(s, 2) for _ in range(3) for s in "ABC"]
    assert [r["rep"] for r in rows] == [k for _ in (1, 2) for k in range(3) for _ in "ABC"]
    assert [(r["series"], r["x"]) for r in rows] == runner.calls


def test_the_report_table_shows_the_median_and_range_of_repeats(machine):
    from locus_tools.figure import Setup, run_figure
    from locus_tools.report import summary_table

    runner = _RecordingRunner()
    fig = _recording_figure(runner)
    rows = run_figure(fig, Setup(machine=machine, bench=None, repeat=3),
                      counter=Progress(18, io.StringIO()))
    # mops is the call number: A at x=1 ran 1st, 4th and 7th.
    table = summary_table(fig, rows)
    assert "| 1 | 4.00 (1.00–7.00) | 5.00 (2.00–8.00) | 6.00 (3.00–9.00) |" in table
    one = summary_table(fig, [r for r in rows if r["rep"] == 0])
    assert "| 1 | 1.00 | 2.00 | 3.00 |" in one  # one run: no range
