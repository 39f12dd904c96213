"""kv-threads: seed 000's memcached experiment (Figure 4.1) on this machine.

Throughput against the number of server threads, with as many memcaslap client threads as
server threads (the seed's setup), one panel per share of sets, one line per server:
Debian's memcached and locus-kv under each --sync (default: alloc=mutex, the synchronous
item allocation, and alloc=async, seed 000's asynchronous one). Every point is one
bench/kv-memcaslap measurement (alternating paired rounds, medians), so both servers are
measured in the same run at every thread count.

Writes into --out: kv-threads.csv (one row per point), kv-threads.png, kv-threads.json
(every run), and prints the table. Plotting needs matplotlib: run it with the project's
venv (build/venv/bin/python bench/kv-threads, after sh scripts/install-python).
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

from .bench import REPO

MEMCASLAP_SCRIPT = os.path.join(REPO, "bench", "kv-memcaslap")


def parse_list(text, what, lo, hi):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: comma-separated whole numbers, not {text!r}")
    if not values or any(not lo <= v <= hi for v in values):
        raise argparse.ArgumentTypeError(f"{what}: numbers from {lo} to {hi}, not {text!r}")
    return values


def measure(args, threads, tmp):
    """Run kv-memcaslap at one thread count; its JSON report, or raise with its output."""
    out = os.path.join(tmp, f"t{threads}.json")
    cmd = [sys.executable, MEMCASLAP_SCRIPT, "--threads", str(threads), "--clients", str(threads),
           "--duration", str(args.duration), "--rounds", str(args.rounds),
           "--ratios", ",".join(str(r) for r in args.ratios), "--json", out]
    if args.locus_kv:
        cmd += ["--locus-kv", args.locus_kv]
    for s in args.sync:
        cmd += ["--sync", s]
    print(f"kv-threads: {threads} server and client thread(s) ...", file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if not os.path.exists(out):
        raise RuntimeError(f"kv-memcaslap failed at -t {threads} (status {r.returncode}):\n"
                           f"{(r.stdout + r.stderr).strip()[-2000:]}")
    with open(out) as f:
        report = json.load(f)
    report["status"] = r.returncode
    return report


def rows_of(reports):
    """[(threads, sets_pct, server, median ops/s, ratio to memcached)]."""
    rows = []
    for threads, rep in sorted(reports.items()):
        for pct, servers in rep["median"].items():
            for server, m in servers.items():
                rows.append((threads, int(pct), server, m["ops_per_s"], m["vs_memcached"]))
    return rows


def table_text(rows, ratios, servers):
    lines = [f"{'sets':>5} {'threads':>8}  " + "".join(f"{s:>34}" for s in servers)]
    for pct in ratios:
        for threads in sorted({r[0] for r in rows}):
            cells = []
            for s in servers:
                hit = [r for r in rows if r[0] == threads and r[1] == pct and r[2] == s]
                if hit and hit[0][3] is not None:
                    ratio = f" ({hit[0][4]:.2f}x)" if hit[0][4] is not None and s != "memcached" else ""
                    cells.append(f"{hit[0][3]:>24.0f}{ratio:>10}")
                else:
                    cells.append(f"{'-':>34}")
            lines.append(f"{pct:>4}% {threads:>8}  " + "".join(cells))
    return "\n".join(lines)


def plot(rows, ratios, servers, path, title_note):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ratios), figsize=(max(7, 5 * len(ratios)), 4.4), squeeze=False)
    ticks = sorted({r[0] for r in rows})
    for ax, pct in zip(axes[0], ratios):
        for s in servers:
            pts = sorted((r[0], r[3]) for r in rows if r[1] == pct and r[2] == s and r[3] is not None)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] / 1000 for p in pts], marker="o", label=s)
        ax.set_title(f"{100 - pct}% GET, {pct}% SET")
        ax.set_xlabel("server threads (= memcaslap client threads)")
        ax.set_ylabel("throughput (thousand ops/s)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("seed 000, Figure 4.1: throughput, synchronous vs asynchronous item allocation\n"
                 + title_note, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="kv-threads", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=lambda t: parse_list(t, "--threads", 1, 256), default=[1, 2, 4],
                    help="server thread counts, comma-separated (1,2,4)")
    ap.add_argument("--ratios", type=lambda t: parse_list(t, "--ratios", 0, 100), default=[20, 25, 30],
                    help="percent of sets, comma-separated (20,25,30: the seed's three panels)")
    ap.add_argument("--sync", action="append", default=[], metavar="SPEC",
                    help="a locus-kv --sync configuration (repeatable; default: alloc=mutex and "
                         "alloc=async)")
    ap.add_argument("--duration", type=int, default=8, help="seconds per memcaslap run (8)")
    ap.add_argument("--rounds", type=int, default=3, help="paired rounds per point (3)")
    ap.add_argument("--locus-kv", help="the locus-kv binary (kv-memcaslap's default)")
    ap.add_argument("--out", default="build/kv-threads", help="output directory (build/kv-threads)")
    args = ap.parse_args(argv)
    if args.duration < 1 or args.rounds < 1:
        ap.error("--duration and --rounds must be at least 1")
    if not args.sync:
        args.sync = ["alloc=mutex", "alloc=async"]
    os.makedirs(args.out, exist_ok=True)
    reports = {}
    with tempfile.TemporaryDirectory() as tmp:
        for t in args.threads:
            try:
                reports[t] = measure(args, t, tmp)
            except RuntimeError as e:
                print(f"kv-threads: {e}", file=sys.stderr)
                return 1
    rows = rows_of(reports)
    servers = ["memcached"] + [f"locus-kv --sync {s}" for s in args.sync]
    with open(os.path.join(args.out, "kv-threads.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["threads", "sets_pct", "server", "ops_per_s", "vs_memcached"])
        w.writerows(rows)
    with open(os.path.join(args.out, "kv-threads.json"), "w") as f:
        json.dump({str(t): r for t, r in reports.items()}, f, indent=1)
    note = (f"{os.cpu_count()} CPUs; 64 B keys, 1024 B values, memcaslap -c 64; "
            f"{args.duration} s x {args.rounds} rounds per point, medians")
    print(note)
    print(table_text(rows, args.ratios, servers))
    try:
        plot(rows, args.ratios, servers, os.path.join(args.out, "kv-threads.png"), note)
        print(f"kv-threads: wrote {args.out}/kv-threads.png, .csv, .json")
    except ImportError:
        print("kv-threads: no matplotlib here: run with build/venv/bin/python for the plot "
              f"(CSV and JSON are in {args.out})", file=sys.stderr)
    problems = [f"-t {t}: {p}" for t, r in reports.items() for p in r.get("problems", [])]
    for p in problems:
        print(f"problem: {p}")
    return 1 if problems else 0

