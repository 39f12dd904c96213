"""tools/demo: every mechanism side by side on this machine, in about two minutes.

It runs short fetch-and-add and locality measurements of every mechanism (and, for
fetch-and-add, every peer), ranks them per workload, says in one sentence per workload
how the fastest compares with mutex and with the best peer, then draws quick versions of
two seed figures with their report. A mechanism that fails is shown as FAIL and the demo
goes on; the exit status is 1 if anything failed, 2 if nothing could run.
"""

import argparse
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


@dataclass
class Workload:
    """One comparison: the same bench arguments for every mechanism."""

    title: str  # how the sentence names it: "fetch-and-add on 1 counter with 2 threads"
    bench: str
    args: list
    metric: str  # mops | iters_per_s
    unit: str
    specs: list
    duration: float = 0.3
    seed_threads: int = 0  # locality: total threads incl. a server (seed 000's count)
    results: dict = field(default_factory=dict)  # spec -> value, or None for FAIL
    errors: dict = field(default_factory=dict)
    oversubscribed: dict = field(default_factory=dict)


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


def measure(bench, workloads, progress):
    for w in workloads:
        for spec in w.specs:
            progress.start(f"{w.bench} {spec} ({w.title})")
            r = bench.run(w.bench, _spec_args(w, spec), w.duration)
            if r.ok:
                rec = r.records[-1]
                w.results[spec] = rec.get(w.metric)
                w.oversubscribed[spec] = bool(rec.get("oversubscribed"))
                progress.finish(_fmt(rec.get(w.metric), w.unit))
            else:
                w.results[spec] = None
                w.errors[spec] = r.error
                progress.finish(f"FAIL ({r.error})")


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


def sentence(w, cpus):
    """'On this machine (2 CPUs), WORKLOAD: X is the fastest locus mechanism; X is 1.12x
    mutex, 0.98x the best peer (peer:atomic) and 8.01x the slowest (ticket).'"""
    order = [(s, v) for s, v in ranked(w) if v is not None]
    locus = [(s, v) for s, v in order if not s.startswith("peer:")]
    peers = [(s, v) for s, v in order if s.startswith("peer:")]
    head = f"On this machine ({cpus} CPU{'s' if cpus != 1 else ''}), {w.title}: "
    if not locus:
        return head + "no locus mechanism could be measured."
    best, bv = locus[0]
    parts = []
    mutex = w.results.get("mutex")
    if mutex and best != "mutex":
        parts.append(f"{bv / mutex:.2f}x mutex")
    elif best == "mutex":
        parts.append("ahead of every other locus mechanism")
    if peers:
        parts.append(f"{bv / peers[0][1]:.2f}x the best peer ({peers[0][0]})")
    slowest, sv = locus[-1]
    if slowest != best and sv:
        parts.append(f"{bv / sv:.2f}x the slowest ({slowest})")
    text = head + f"{best} is the fastest locus mechanism"
    if parts:
        text += f"; {best} is " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])
    if w.bench == "locality":
        text += _where_it_runs(locus)
    failed = [s for s, v in w.results.items() if v is None]
    if failed:
        text += f" ({', '.join(failed)} failed)"
    return text + "."


def _where_it_runs(locus):
    """Seed 000's question in numbers: the best server mechanism over the best in-place one."""
    away = [(s, v) for s, v in locus if is_server_mechanism(s)]
    here = [(s, v) for s, v in locus if not is_server_mechanism(s)]
    if not away or not here:
        return ""
    ratio = away[0][1] / here[0][1]
    return (f"; sending the section to a server thread (best: {away[0][0]}) is {ratio:.2f}x "
            f"running it in place (best: {here[0][0]})")


def table(w):
    mutex = w.results.get("mutex")
    lines = [f"{w.title} ({w.unit}; * = more threads than CPUs)",
             f"  {'rank':>4}  {'mechanism':<20} {w.unit:>12}  {'x mutex':>8}"]
    for i, (spec, v) in enumerate(ranked(w), 1):
        if v is None:
            lines.append(f"  {'':>4}  {spec:<20} {'FAIL':>12}")
            continue
        mark = "*" if w.oversubscribed.get(spec) else " "
        ratio = f"{v / mutex:.2f}x" if mutex else "-"
        value = f"{v / 1e3:.1f}k" if w.unit == "it/s" else f"{v:.2f}"
        lines.append(f"  {i:>4}  {spec:<20} {value:>11}{mark}  {ratio:>8}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(
        prog=DEMO,
        description="Compares every locus mechanism (and the peers) on this machine in about "
                    "two minutes: short fetch-and-add and locality runs, ranked, with a sentence "
                    "per workload; then quick versions of seed000-fig3-5 and seed002-fig15 and "
                    "their report in --out. Exit status 1 if a measurement failed.")
    p.add_argument("--bench", metavar="PATH",
                   help=f"locus-bench binary (default: {BENCH_DEFAULT})")
    p.add_argument("--duration", type=float, default=0.3, metavar="S",
                   help="seconds per measurement (default: 0.3)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"where the quick figures and report.md go (default: {DEFAULT_OUT})")
    p.add_argument("--no-figures", action="store_true", help="only the ranked comparisons")
    args = p.parse_args(argv)
    if not args.duration > 0:
        p.error("--duration must be positive")

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
    print()
    workloads = fetchadd_workloads(bench, cpus, args.duration)
    if bench.has("locality"):
        workloads += locality_workloads(bench, cpus, args.duration)
    else:
        print("demo: this locus-bench has no 'locality' command; skipping those workloads",
              file=sys.stderr)
    progress = Progress(sum(len(w.specs) for w in workloads))
    measure(bench, workloads, progress)
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
