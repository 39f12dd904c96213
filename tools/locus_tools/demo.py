"""tools/demo: every mechanism side by side on this machine, in about two minutes.

It runs short fetch-and-add and locality measurements of every mechanism (and, for
fetch-and-add, every peer), each --repeat times (3) interleaved as locus-bench --repeat
interleaves them (A B C A B C, not A A A), ranks them per workload by median, says in one
sentence per workload how the fastest compares with mutex and with the best peer, and calls
two mechanisms tied where the ranges (min to max) of their runs overlap, as locus-bench's
rankings do; then it draws quick versions of two seed figures with their report. A mechanism
that fails is shown as FAIL and the demo goes on; the exit status is 1 if anything failed, 2
if nothing could run.

Each mechanism runs in a locus-bench invocation of its own (so that one that fails is named,
and so that locality can give delegation one client fewer), so the demo makes the rounds
itself rather than passing --repeat to locus-bench.
"""

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import BENCH_DEFAULT, DEMO, DEMO_DIR, registry
from .bench import Bench, BenchError, Progress, is_server_mechanism
from .cli import reproduce
from .figure import Setup
from .machine import describe
from .report import write_report

DEFAULT_OUT = DEMO_DIR
DEFAULT_DURATION = 0.2  # seconds per measurement
DEFAULT_REPEAT = 3  # runs of each, interleaved


@dataclass
class Workload:
    """One comparison: the same bench arguments for every mechanism."""

    title: str  # how the sentence names it: "fetch-and-add on 1 counter with 2 threads"
    bench: str
    args: list
    metric: str  # mops | iters_per_s
    unit: str
    specs: list
    duration: float = DEFAULT_DURATION
    seed_threads: int = 0  # locality: total threads incl. a server (seed 000's count)
    results: dict = field(default_factory=dict)  # spec -> median of its runs, or None for FAIL
    errors: dict = field(default_factory=dict)
    oversubscribed: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)  # spec -> every run's value, in order

    def range_of(self, spec):
        """(min, max) of the spec's runs; a single figure is its own range."""
        values = self.runs.get(spec) or [self.results[spec]]
        return min(values), max(values)

    def tied(self, a, b):
        """Whether the ranges of a's and b's runs overlap: these runs do not tell them apart."""
        (alo, ahi), (blo, bhi) = self.range_of(a), self.range_of(b)
        return alo <= bhi and blo <= ahi

    def repeated(self):
        return any(len(v) > 1 for v in self.runs.values())


def _threads_text(n, cpus):
    more = f", more than the {cpus} CPUs" if n > cpus else ""
    return f"{n} thread{'s' if n != 1 else ''}{more}"


def fetchadd_workloads(bench, cpus, duration):
    specs = bench.mechanisms() + bench.peers()
    out = []
    for t in sorted({1, cpus, 4 * cpus}):
        out.append(Workload(
            title=f"fetch-and-add on 1 counter with {_threads_text(t, cpus)}",
            bench="fetchadd",
            args=["--threads", t, "--vars", 1],
            metric="mops", unit="Mops/s", specs=specs, duration=duration,
        ))
    return out


def locality_workloads(bench, cpus, duration):
    """Seed 000's loop with every CPU busy: sync mechanisms run N clients, delegation
    N-1 clients + its server, as the seed counts threads."""
    total = max(2, cpus)
    out = []
    for n2 in (128, 1024):
        for m in (0, 16):
            out.append(Workload(
                title=(f"locality (n1=2048, n2={n2} lines, {m} modified) with {total} threads "
                       f"in total"),
                bench="locality",
                args=["--n1", 2048, "--n2", n2, "--modify", m],
                metric="iters_per_s", unit="it/s", specs=bench.mechanisms("locality"),
                duration=duration, seed_threads=total,
            ))
    return out


def _spec_args(w, spec):
    if w.bench != "locality":
        return ["--mechanisms", spec] + w.args
    clients = w.seed_threads - 1 if is_server_mechanism(spec) else w.seed_threads
    extra = ["--servers", 1] if is_server_mechanism(spec) else []
    return ["--mechanisms", spec, "--threads", clients] + extra + w.args


def measure(bench, workloads, progress, repeat=1):
    """Each workload's mechanisms `repeat` times, interleaved: run 1 of every mechanism, then
    run 2 of every one ... A mechanism that fails is FAIL and is not run again."""
    for w in workloads:
        for run in range(repeat):
            of = f", run {run + 1}/{repeat}" if repeat > 1 else ""
            for spec in w.specs:
                progress.start(f"{w.bench} {spec} ({w.title}{of})")
                if spec in w.errors:
                    progress.finish("skipped (failed before)")
                    continue
                r = bench.run(w.bench, _spec_args(w, spec), w.duration)
                value = r.records[-1].get(w.metric) if r.ok else None
                if value is None:
                    w.errors[spec] = r.error or f"no {w.metric} in its output"
                    progress.finish(f"FAIL ({w.errors[spec]})")
                    continue
                w.runs.setdefault(spec, []).append(value)
                w.oversubscribed[spec] = (w.oversubscribed.get(spec, False)
                                          or bool(r.records[-1].get("oversubscribed")))
                progress.finish(_fmt(value, w.unit))
        for spec in w.specs:
            w.results[spec] = None if spec in w.errors else statistics.median(w.runs[spec])


def _fmt(v, unit):
    if v is None:
        return "FAIL"
    if unit == "it/s":
        return f"{v / 1e3:.1f}k it/s"
    return f"{v:.2f} {unit}"


def ranked(w):
    """[(spec, value)] fastest first, failures last (value None)."""
    ok = sorted(((s, v) for s, v in w.results.items() if v is not None), key=lambda p: -p[1])
    return ok + [(s, None) for s, v in w.results.items() if v is None]


def _and(names):
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def sentence(w, cpus):
    """'On this machine (2 CPUs), WORKLOAD: X is the fastest locus mechanism; X is 1.12x
    mutex, 0.98x the best peer (peer:atomic) and 8.01x the slowest (ticket).'

    With several runs, a comparison whose ranges overlap is a tie, and says so: 'X and Y
    are tied for the fastest locus mechanism ...; X is tied with mutex (1.02x) ...'.
    """
    order = [(s, v) for s, v in ranked(w) if v is not None]
    locus = [(s, v) for s, v in order if not s.startswith("peer:")]
    peers = [(s, v) for s, v in order if s.startswith("peer:")]
    head = f"On this machine ({cpus} CPU{'s' if cpus != 1 else ''}), {w.title}: "
    if not locus:
        return head + "no locus mechanism could be measured."
    best, bv = locus[0]

    def against(spec, value, role=""):
        """'1.12x the best peer (peer:atomic)', or 'tied with the best peer, peer:atomic
        (0.98x)'; without a role, '1.12x mutex' or 'tied with mutex (1.02x)'."""
        if w.tied(best, spec):
            return f"tied with {role + ', ' if role else ''}{spec} ({bv / value:.2f}x)"
        return f"{bv / value:.2f}x " + (f"{role} ({spec})" if role else spec)

    parts = []
    mutex = w.results.get("mutex")
    if mutex and best != "mutex":
        parts.append(against("mutex", mutex))
    elif best == "mutex":
        parts.append("ahead of every other locus mechanism")
    if peers:
        parts.append(against(peers[0][0], peers[0][1], "the best peer"))
    slowest, sv = locus[-1]
    if slowest != best and sv:
        parts.append(against(slowest, sv, "the slowest"))
    level = [s for s, _ in locus[1:] if w.tied(best, s)]
    if level:
        text = head + f"{_and([best] + level)} are tied for the fastest locus mechanism"
        if "ahead of every other locus mechanism" in parts:
            parts.remove("ahead of every other locus mechanism")
    else:
        text = head + f"{best} is the fastest locus mechanism"
    if parts:
        text += f"; {best} is " + _and(parts)
    if w.bench == "locality":
        text += _where_it_runs(w, locus)
    if w.repeated():
        runs = max(len(v) for v in w.runs.values())
        text += f" (medians of {runs} runs; tied: their ranges overlap)"
    failed = [s for s, v in w.results.items() if v is None]
    if failed:
        text += f" ({', '.join(failed)} failed)"
    return text + "."


def _where_it_runs(w, locus):
    """Seed 000's question in numbers: the best server mechanism over the best in-place one."""
    away = [(s, v) for s, v in locus if is_server_mechanism(s)]
    here = [(s, v) for s, v in locus if not is_server_mechanism(s)]
    if not away or not here:
        return ""
    ratio = away[0][1] / here[0][1]
    if w.tied(away[0][0], here[0][0]):
        return (f"; sending the section to a server thread (best: {away[0][0]}) and running "
                f"it in place (best: {here[0][0]}) are tied ({ratio:.2f}x)")
    return (f"; sending the section to a server thread (best: {away[0][0]}) is {ratio:.2f}x "
            f"running it in place (best: {here[0][0]})")


def table(w):
    """The ranking as a table; with several runs, the median, the range, and '~' before the
    rank of a row tied with the row above (their ranges overlap)."""
    mutex = w.results.get("mutex")
    repeated = w.repeated()
    scale = (lambda v: f"{v / 1e3:.1f}k") if w.unit == "it/s" else (lambda v: f"{v:.2f}")
    note = "; median of the runs, ~ = tied with the row above" if repeated else ""
    lines = [f"{w.title} ({w.unit}; * = more threads than CPUs{note})",
             f"  {'rank':>5}  {'mechanism':<20} {w.unit:>12}  {'x mutex':>8}"
             + (f"  {'range':>17}" if repeated else "")]
    above = None
    for i, (spec, v) in enumerate(ranked(w), 1):
        if v is None:
            lines.append(f"  {'':>5}  {spec:<20} {'FAIL':>12}")
            continue
        mark = "*" if w.oversubscribed.get(spec) else " "
        ratio = f"{v / mutex:.2f}x" if mutex else "-"
        rank = f"~{i}" if above is not None and w.tied(above, spec) else f"{i}"
        line = f"  {rank:>5}  {spec:<20} {scale(v):>11}{mark}  {ratio:>8}"
        if repeated:
            lo, hi = w.range_of(spec)
            line += f"  {scale(lo) + '-' + scale(hi):>17}"
        lines.append(line)
        above = spec
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(
        prog=DEMO,
        description="Compares every locus mechanism (and the peers) on this machine in about "
                    "two minutes: short fetch-and-add and locality runs, each --repeat times "
                    "interleaved, ranked by median, with a sentence per workload that calls "
                    "mechanisms tied where the ranges of their runs overlap; then quick "
                    "versions of seed000-fig3-5 and seed002-fig15 and their report in --out. "
                    "Exit status 1 if a measurement failed.")
    p.add_argument("--bench", metavar="PATH",
                   help=f"locus-bench binary (default: {BENCH_DEFAULT})")
    p.add_argument("--duration", type=float, default=DEFAULT_DURATION, metavar="S",
                   help=f"seconds per measurement (default: {DEFAULT_DURATION})")
    p.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, metavar="N",
                   help=f"runs of every measurement, interleaved (A B C A B C); the rankings "
                        f"use the median, and two mechanisms whose ranges overlap are tied "
                        f"(default: {DEFAULT_REPEAT}; 1: one run, no ties but equal figures)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"where the quick figures and report.md go (default: {DEFAULT_OUT})")
    p.add_argument("--no-figures", action="store_true", help="only the ranked comparisons")
    args = p.parse_args(argv)
    if not args.duration > 0:
        p.error("--duration must be positive")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")

    t0 = time.monotonic()
    machine = describe()
    bench = Bench(args.bench)
    try:
        bench.check()
    except BenchError as e:
        print(f"demo: {e}", file=sys.stderr)
        return 2
    cpus = machine.cpus
    print(f"locus demo on this machine: {machine.long()}")
    print("fetch-and-add: T counts client threads; ffwd, async and mpsc run server threads "
          "beside them.")
    print(f"locality (seed 000's loop): {max(2, cpus)} threads in total; ffwd, async and mpsc "
          f"count their server among them.")
    if args.repeat > 1:
        print(f"Every measurement {args.repeat} times, interleaved (A B C A B C): rankings by "
              f"median; mechanisms whose ranges overlap are tied.")
    print()
    workloads = fetchadd_workloads(bench, cpus, args.duration)
    if bench.has("locality"):
        workloads += locality_workloads(bench, cpus, args.duration)
    else:
        print("demo: this locus-bench has no 'locality' command; skipping those workloads",
              file=sys.stderr)
    progress = Progress(sum(len(w.specs) for w in workloads) * args.repeat)
    measure(bench, workloads, progress, args.repeat)
    failed = any(v is None for w in workloads for v in w.results.values())

    for w in workloads:
        print()
        print(table(w))
    print()
    for w in workloads:
        print(sentence(w, cpus))

    if not args.no_figures:
        print()
        print(f"Quick figures (few points, 0.1 s each) into {args.out}:")
        figs = [registry.get("seed000-fig3-5"), registry.get("seed002-fig15")]
        figs = [f for f in figs if bench.has(f.bench)]
        setup = Setup(machine=machine, bench=bench, quick=True)
        failures = reproduce(figs, setup, args.out, [f.name for f in figs] + ["--quick", "--out", args.out])
        failed |= failures > 0
        report = write_report(args.out, args.out, machine, name="report.md", command=DEMO)
        print()
        for f in figs:
            print(f"  {Path(args.out) / (f.name + '.png')}")
        print(f"  {report}")
    print()
    print(f"demo: done in {time.monotonic() - t0:.0f} s"
          + ("; some measurements failed (FAIL above)" if failed else ""))
    return 1 if failed else 0
