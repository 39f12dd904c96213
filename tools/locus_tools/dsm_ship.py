"""locus-dsm: moving the data or shipping the work, against message delay (issue 34).

Runs apps/locus-dsm-ship's three workloads (random updates of a large table, one hot
counter, a hash table) both ways - page-based (--ship 0, under each page protocol) and
shipped to the data's home (--ship 1) - on each node count at each emulated message
delay, and writes table.md (operations/s, the ratio shipped / best page-based, the goals)
and ship.png (both ways against the delay). Page-based runs do fewer operations at longer
delays so that every run takes about the same time; operations/s is what is compared.

The crossover (--runs): random updates in runs of K consecutive words from each random start
- K updates for every page moved - at each delay on the last node count, both ways:
crossover.png, and the smallest K at which moving the pages is as fast as shipping.
"""

import json
import os
import re
import sys

from locus_tools import dsmrun

WORKLOADS = {"gups": 0, "counter": 1, "hash": 2}

# Operations per worker: shipped runs batch (a post per operation), page-based ones pay a
# round trip or more per operation, more at longer delays.
def ops_for(ship, delay_us, base, run=1):
    if ship:
        return base
    few = max(50, base // (10 if delay_us == 0 else 40 if delay_us < 100 else 400))
    return min(base, few * run)  # K updates per page moved: K times as many in the time


def rate(rec):
    m = re.search(r"ops_per_s=([0-9.]+)", rec.get("params") or "")
    return float(m.group(1)) if m and rec["ok"] else None


def find(recs, workload, nodes, delay, ship, run=1):
    return [r for r in recs if r["workload"] == workload and r["nodes"] == nodes
            and r["delay"] == delay and r["ship"] == ship and r.get("run", 1) == run
            and rate(r)]


def best(recs, workload, nodes, delay, ship, run=1):
    cands = find(recs, workload, nodes, delay, ship, run)
    return max(cands, key=rate) if cands else None


def crossover(recs, nodes, delay, runs):
    """The smallest run length K at which the best page-based rate reaches the shipped one."""
    for k in runs:
        p, s = best(recs, "gups", nodes, delay, 0, k), best(recs, "gups", nodes, delay, 1, k)
        if p and s and rate(p) >= rate(s):
            return k
    return None


def fmt(x):
    return "-" if x is None else f"{x:,.0f}"


def ratio(a, b):
    return f"{a / b:.1f}x" if a and b else "-"


def table(recs, a):
    lines = ["# locus-dsm: shipping the work against moving the data", "",
             f"`tools/dsm-ship --nodes {a.nodes} --delays {a.delays} --protocols {a.protocols} "
             f"--workloads {a.workloads} --ops {a.ops}` (operations/s over every worker; "
             "page-based: each protocol, the best one named).", "",
             "| workload | nodes | delay (us) | page-based, best | its protocol | shipped | "
             "shipped / page |", "|---|---|---|---|---|---|---|"]
    for w in a.workloads.split(","):
        for n in [int(x) for x in a.nodes.split(",")]:
            for d in [int(x) for x in a.delays.split(",")]:
                p, s = best(recs, w, n, d, 0), best(recs, w, n, d, 1)
                lines.append(f"| {w} | {n} | {d} | {fmt(p and rate(p))} | "
                             f"{p['protocol'] if p else '-'} | {fmt(s and rate(s))} | "
                             f"{ratio(s and rate(s), p and rate(p))} |")
    lines += ["", "Every run verified its counts (a run that did not is left out above)."]
    if a.runs:
        lines += crossover_table(recs, a)
    lines += ["", "## Goals", ""] + goals(recs)
    return "\n".join(lines) + "\n"


def crossover_table(recs, a):
    n = [int(x) for x in a.nodes.split(",")][-1]
    runs = [int(x) for x in a.runs.split(",")]
    lines = ["", f"## Crossover: random updates in runs of K consecutive words, {n} nodes", "",
             "| delay (us) | " + " | ".join(f"K={k}: page / shipped" for k in runs)
             + " | moving the pages wins from |", "|---|" + "---|" * (len(runs) + 1)]
    for d in [int(x) for x in a.delays.split(",")]:
        cells = []
        for k in runs:
            p, s = best(recs, "gups", n, d, 0, k), best(recs, "gups", n, d, 1, k)
            cells.append(f"{fmt(p and rate(p))} / {fmt(s and rate(s))}")
        k = crossover(recs, n, d, runs)
        lines.append(f"| {d} | " + " | ".join(cells) + f" | {'K = ' + str(k) if k else 'beyond'} |")
    return lines


def goal_line(recs, text, workload, nodes, delay, want):
    p, s = best(recs, workload, nodes, delay, 0), best(recs, workload, nodes, delay, 1)
    if not p or not s:
        return f"- {text}: not measured"
    got = rate(s) / rate(p)
    return f"- {text}: {got:.1f}x ({'met' if got >= want else 'NOT met'}; goal {want}x)"


def goals(recs):
    return [goal_line(recs, "shipped random updates >= 5x the best page protocol, no delay, "
                      "4 nodes", "gups", 4, 0, 5),
            goal_line(recs, "shipped random updates >= 20x at 500 us, 4 nodes",
                      "gups", 4, 500, 20),
            goal_line(recs, "the hot counter, combined, >= 10x a DSM lock at 20 us, 4 nodes",
                      "counter", 4, 20, 10)]


def plot(recs, a):
    plt = dsmrun.pyplot()
    works = a.workloads.split(",")
    delays = [int(x) for x in a.delays.split(",")]
    fig, axes = plt.subplots(1, len(works), figsize=(4.5 * len(works), 4), squeeze=False)
    for ax, w in zip(axes[0], works):
        for n, style in zip([int(x) for x in a.nodes.split(",")], ["--", "-", ":"]):
            for ship, colour, name in ((0, "tab:red", "page-based (best)"),
                                       (1, "tab:blue", "shipped")):
                xs, ys = [], []
                for d in delays:
                    r = best(recs, w, n, d, ship)
                    if r:
                        xs.append(max(d, 1))
                        ys.append(rate(r))
                ax.plot(xs, ys, style, color=colour, marker="o", label=f"{name}, {n} nodes")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("emulated delay per message (us; 0 drawn at 1)")
        ax.set_ylabel("operations/s")
        ax.set_title(w)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    dsmrun.save(fig, a.out, "ship.png")
    if a.runs:
        plot_crossover(recs, a)


def plot_crossover(recs, a):
    plt = dsmrun.pyplot()
    n = [int(x) for x in a.nodes.split(",")][-1]
    runs = [int(x) for x in a.runs.split(",")]
    fig, ax = plt.subplots(figsize=(6, 4))
    for d, style in zip([int(x) for x in a.delays.split(",")], ["-", "--", ":", "-."]):
        for ship, colour, name in ((0, "tab:red", "page-based"), (1, "tab:blue", "shipped")):
            pts = [(k, rate(best(recs, "gups", n, d, ship, k))) for k in runs
                   if best(recs, "gups", n, d, ship, k)]
            if pts:
                ax.plot([k for k, _ in pts], [v for _, v in pts], style, color=colour,
                        marker="o", label=f"{name}, {d} us")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("K: consecutive words updated per random start")
    ax.set_ylabel("operations/s")
    ax.set_title(f"random updates, {n} nodes: where moving the page wins again")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    dsmrun.save(fig, a.out, "crossover.png")


def one(a, w, n, d, k, proto, ship):
    """One run of locus-dsm-ship, its record, a line of progress."""
    ops = ops_for(ship, d, a.ops, k)
    args = ["--workload", str(WORKLOADS[w]), "--ship", str(ship), "-n", str(ops),
            "--threads", str(a.threads), "-run", str(k)]
    env = {"LOCUS_DSM_PROTOCOL": proto, "LOCUS_DSM_DELAY_US": str(d),
           "LOCUS_DSM_PEER_TIMEOUT_S": "30"}
    r = dsmrun.run(a.build, "dsm-ship", args, n, env, a.timeout)
    r.update(workload=w, delay=d, protocol=proto, ship=ship, ops=ops, run=k)
    got = rate(r)
    print(f"[dsm-ship] {w:7s} K={k:<4d} {n} nodes {d:4d} us {proto:3s} "
          f"{'shipped' if ship else 'page   '}: "
          f"{fmt(got) + ' ops/s' if got else 'FAILED rc ' + str(r['rc'])}", flush=True)
    if r["rc"] and r["stderr"]:
        print(r["stderr"], file=sys.stderr)
    return r


def main(argv=None):
    ap = dsmrun.parser(__doc__, "build/dsm-ship")
    ap.add_argument("--nodes", default="2,4")
    ap.add_argument("--delays", default="0,20,500", help="microseconds per message")
    ap.add_argument("--protocols", default="sc,lrc", help="page protocols (and shipping's)")
    ap.add_argument("--workloads", default="gups,counter,hash")
    ap.add_argument("--ops", type=int, default=20000, help="operations per worker, shipped")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", default="1,8,64,512,4096",
                    help="run lengths K for the crossover (random updates; '' for none)")
    ap.add_argument("--timeout", type=int, default=600)
    a = ap.parse_args(argv)
    try:
        nodes = [int(x) for x in a.nodes.split(",")]
        delays = [int(x) for x in a.delays.split(",")]
    except ValueError:
        ap.error("--nodes and --delays are comma-separated whole numbers")
    works = a.workloads.split(",")
    protos = a.protocols.split(",")
    try:
        runs = [int(x) for x in a.runs.split(",")] if a.runs else []
    except ValueError:
        ap.error("--runs is comma-separated whole numbers")
    if (not set(works) <= set(WORKLOADS) or not set(protos) <= {"sc", "lrc", "avr"}
            or min(nodes) < 1 or min(delays) < 0 or a.ops < 1 or a.threads < 1
            or any(k < 1 for k in runs)):
        ap.error(f"--workloads from {','.join(WORKLOADS)}, --protocols from sc,lrc,avr, "
                 "--nodes >= 1, --delays >= 0, --ops, --threads and --runs >= 1")
    os.makedirs(a.out, exist_ok=True)
    recs = []
    points = [(w, n, d, 1) for w in works for n in nodes for d in delays]
    points += [("gups", nodes[-1], d, k) for d in delays for k in runs if k != 1]
    for w, n, d, k in points:
        for proto in protos:
            for ship in (0, 1):
                recs.append(one(a, w, n, d, k, proto, ship))
    dsmrun.write(a.out, "results.json", json.dumps({"runs": recs}, indent=1))
    print(dsmrun.write(a.out, "table.md", table(recs, a)))
    plot(recs, a)
    print(f"[dsm-ship] wrote {a.out}/table.md, results.json, ship.png"
          f"{', crossover.png' if runs else ''}")
    return 0 if all(r["ok"] for r in recs) else 1
