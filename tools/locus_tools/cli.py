"""tools/reproduce: measure the seeds' figures on this machine, plot them, report.

Exit status: 0 every point measured; 1 some points (or a whole figure) failed, and what
could be measured was still written; 2 bad command line or no usable benchmark binary.
User errors are one line on stderr, never a traceback.
"""

import argparse
import datetime
import json
import shlex
import sys
import time
from pathlib import Path

from . import BENCH_DEFAULT, FIGURES_DIR, REPORT_DIR, REPRODUCE, registry, seed003
from .bench import Bench, BenchError, Progress
from .figure import Setup, count_points, run_figure
from .machine import describe
from .table import read_csv, write_csv

DEFAULT_OUT = FIGURES_DIR
DEFAULT_DEST = REPORT_DIR

USAGE = f"""\
{REPRODUCE} --list
{REPRODUCE} FIG [FIG...] [--out DIR] [--duration S] [--quick] [--repeat K]
{" " * len(REPRODUCE)} [--bench PATH] [--sync SPEC]... [--async SPEC]...
{" " * len(REPRODUCE)} [--records N | --full] [--replot]
{REPRODUCE} report [--out DIR] [--dest DIR]"""

DESCRIPTION = """\
Reproduces figures of the seed documents with locus-bench on this machine. For each
FIG (or `all`) it runs the figure's sweep, one locus-bench measurement per point (progress
on stderr), and writes DIR/FIG.csv (one row per measurement: the figure's columns, then
every field of the bench's JSON line; failed points have status=fail and the bench's
error), DIR/FIG.meta.json (command, machine, timing) and DIR/FIG.png. The seeds' thread
counts are mapped onto this machine's CPUs; each figure says how in its footnote, its
CSV's mapping column and the report. `all` at the default durations makes about 685
measurements and takes about 22 minutes on a 2-CPU machine (the seed003 figures, which
time locus-kv and memcached inserting N records, about 10 of them). `report` gathers DIR's figures
into DEST/reproduction.md and copies their PNGs and CSVs into DEST."""


EXIT_STATUS = """\
Exit status: 0 every point measured; 1 some points or figures failed (everything that
could be measured is still written, failed points as status=fail rows and gaps in the
plot); 2 bad command line or no usable locus-bench."""


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so every user error reads the same way."""

    def error(self, message):
        raise UsageError(message)


def _figure_parser():
    p = _Parser(prog=REPRODUCE, usage=USAGE, description=DESCRIPTION,
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="figures:\n" + _listing() + "\n  all              every figure above, in this order"
                       "\n\n" + EXIT_STATUS)
    p.add_argument("figures", nargs="*", metavar="FIG", help="figure names (see below), or all")
    p.add_argument("--list", action="store_true", help="list the figures and exit")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"where CSV, PNG and meta files go (default: {DEFAULT_OUT})")
    p.add_argument("--duration", type=float, metavar="S",
                   help="seconds per measurement (default: the figure's own, 1 s for seed000 "
                        "and seed002-fig15, 2 s for the other seed002 figures; 0.1 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="very few points, short measurements: a smoke run (tests, demo)")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="measure each point K times, interleaved as locus-bench --repeat does: at "
                        "each x, run 1 of every series, then run 2 of every one (A B C A B C, "
                        "not A A A); plots and tables use the median, tables also show the "
                        "range (default: 1)")
    p.add_argument("--bench", metavar="PATH",
                   help=f"locus-bench binary (default: {BENCH_DEFAULT})")
    p.add_argument("--sync", action="append", metavar="SPEC",
                   help="seed000 figures: synchronous executor spec(s) instead of the figure's "
                        "(default mutex,ttas in 3.5; mutex in 3.6); repeat for several")
    p.add_argument("--async", dest="async_", action="append", metavar="SPEC",
                   help="seed000 figures: asynchronous executor spec(s) instead of the figure's "
                        "(default ffwd and mpsc:locked,copy in 3.5 and 3.7; ffwd in 3.6)")
    p.add_argument("--records", type=int, metavar="N",
                   help="seed003 figures: records memcaslap inserts per point, a multiple of 120 "
                        "(default 240000, 6000 with --quick)")
    p.add_argument("--full", action="store_true",
                   help="seed003 figures: the seed's N = 5,000,000 records per point (rounded up "
                        "to 5,000,040, a multiple of 120); hours")
    p.add_argument("--replot", action="store_true",
                   help="measure nothing: redraw DIR/FIG.png from DIR/FIG.csv")
    return p


def _report_parser():
    p = _Parser(prog=f"{REPRODUCE} report", usage=USAGE.splitlines()[-1],
                description="Writes DEST/reproduction.md from the figures found in DIR, copies "
                            "their PNGs and CSVs to DEST, and keeps any text written between "
                            "<!-- analysis:FIG --> and <!-- /analysis:FIG --> in an existing report.")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"where the figures were written (default: {DEFAULT_OUT})")
    p.add_argument("--dest", default=DEFAULT_DEST, metavar="DIR",
                   help=f"where the report goes (default: {DEFAULT_DEST})")
    return p


def _listing():
    return "\n".join(f"  {f.name:<16} {f.seed_ref}: {f.caption}" for f in registry.FIGURES.values())


def _write_meta(path, fig, setup, argv, rows, started, elapsed, bench):
    meta = {
        "figure": fig.name,
        "seed_ref": fig.seed_ref,
        "caption": fig.caption,
        "command": f"{REPRODUCE} " + shlex.join(argv),
        "bench": str(bench.path),
        # A runner's points are sized by what they do (seed003: N records), not by time.
        "duration_s": fig.duration(setup) if fig.runner is None else None,
        "records": setup.records_for(fig),
        "repeat": setup.repeat,
        "quick": setup.quick,
        "started": started,
        "elapsed_s": round(elapsed, 1),
        "points": len(rows),
        "failed": sum(1 for r in rows if r.get("status") != "ok"),
        "mapping": fig.mapping(setup),
        "machine": setup.machine.as_dict(),
        "machine_text": setup.machine.long(),
    }
    Path(path).write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def reproduce(figs, setup, out, argv, stream=None):
    """Runs, writes and draws figs; returns the number of failed points (-1 per lost figure)."""
    from .plot import draw

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runnable = []
    failures = 0
    for fig in figs:
        if fig.runner is not None:
            why = fig.runner.missing(setup)
            if why:
                print(f"reproduce: {fig.name}: {why}; skipped", file=sys.stderr)
                failures += 1
                continue
        elif not setup.bench.has(fig.bench):
            print(f"reproduce: {fig.name}: {setup.bench.path} has no '{fig.bench}' command "
                  "(rebuild locus-bench); skipped", file=sys.stderr)
            failures += 1
            continue
        runnable.append(fig)
    total = 0
    for fig in list(runnable):
        try:
            total += count_points(fig, setup)
        except RuntimeError as e:  # a figure whose points need a measurement first (seed003-fig3)
            print(f"reproduce: {fig.name}: {e}; skipped", file=sys.stderr)
            runnable.remove(fig)
            failures += 1
    progress = Progress(total, stream)
    for fig in runnable:
        started = datetime.datetime.now().isoformat(timespec="seconds")
        t0 = time.monotonic()
        rows = run_figure(fig, setup, counter=progress)
        elapsed = time.monotonic() - t0
        write_csv(out / f"{fig.name}.csv", rows)
        _write_meta(out / f"{fig.name}.meta.json", fig, setup, argv, rows, started, elapsed, setup.bench)
        draw(fig, rows, setup.machine, path=out / f"{fig.name}.png", mapping=fig.mapping(setup))
        failed = sum(1 for r in rows if r.get("status") != "ok")
        failures += failed
        print(f"reproduce: {fig.name}: {len(rows) - failed} measured, {failed} failed, "
              f"{elapsed:.0f} s -> {out / fig.name}.png, .csv", file=sys.stderr)
    return failures


def replot(figs, out, machine):
    from .plot import draw

    for fig in figs:
        csv_path = Path(out) / f"{fig.name}.csv"
        if not csv_path.exists():
            raise UsageError(f"{csv_path} does not exist: run `{REPRODUCE} {fig.name}` first")
        rows = read_csv(csv_path)
        draw(fig, rows, machine, path=Path(out) / f"{fig.name}.png")
        print(f"reproduce: redrew {Path(out) / fig.name}.png from its CSV", file=sys.stderr)


def _main_figures(argv):
    args = _figure_parser().parse_args(argv)
    if args.list:
        print(_listing())
        return 0
    if not args.figures:
        raise UsageError("name at least one figure (or all); --list shows them")
    try:
        figs = registry.resolve(args.figures)
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    if args.duration is not None and not args.duration > 0:
        raise UsageError("--duration must be a positive number of seconds")
    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    if args.records is not None and (args.records < 1 or args.records % 120):
        raise UsageError("--records must be a positive multiple of 120 (so that memcaslap's "
                         "connections, a multiple of 4, 8 and 12 threads, send exactly N)")
    if args.full and args.records is not None:
        raise UsageError("--full and --records both set N: give one")
    records = seed003.RECORDS_FULL if args.full else args.records
    machine = describe()
    if args.replot:
        replot(figs, args.out, machine)
        return 0
    bench = Bench(args.bench)
    if any(f.runner is None for f in figs):
        bench.check()
    setup = Setup(machine=machine, bench=bench, quick=args.quick, duration=args.duration,
                  repeat=args.repeat, sync_specs=args.sync, async_specs=args.async_,
                  records=records)
    failures = reproduce(figs, setup, args.out, argv)
    return 1 if failures else 0


def _main_report(argv):
    from .report import write_report

    args = _report_parser().parse_args(argv)
    path = write_report(args.out, args.dest, describe())
    print(f"reproduce: wrote {path}", file=sys.stderr)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "report":
            return _main_report(argv[1:])
        return _main_figures(argv)
    except UsageError as e:
        print(f"reproduce: {e}", file=sys.stderr)
        print(f"usage:\n{USAGE}", file=sys.stderr)
        return 2
    except BenchError as e:
        print(f"reproduce: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("reproduce: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
