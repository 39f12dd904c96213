"""locus-dsm multithreading: seed 001 Figures 4 and 5 and Table 2 on this machine.

Runs every DSM application on --nodes nodes (4) at a transport delay of --delay
microseconds per message (500, about the seed's network) as
  O      one thread per node
  nT     n application threads per node (--threads: 2, 4, 8)
  P      one thread, prefetching (--prefetch 1 of the applications)
  nTP    n threads and prefetching (--fig5-threads: 4), threads switching on
         every stall
  nTPs   the same with LOCUS_DSM_SWITCH=sync: threads give way only at
         synchronization, prefetch covers memory (seed 001 §5's combination)
and writes into --out:
  results.json   every run: time, verification, every node's statistics
  table.md       Figures 4 and 5 as numbers (time and breakdown relative to O)
                 and Table 2 (stall time, run length, messages, remote misses,
                 locks and barriers), plus the switch cost measured here
  fig4.png       seed 001 Figure 4: normalised execution time per thread count,
                 split into busy, memory stall, synchronization stall, DSM
                 overhead, multithreading overhead and other
  fig5.png       seed 001 Figure 5: O, P, nT, nTP and nTPs, the same parts
The multithreading-overhead part is the switches counted by the runtime times the
cost of one switch measured here by locus-dsm-switch (a kernel-thread hand-over
through a futex), taken out of "other", where the runtime's own breakdown puts it.

A benchmark, not a test: it reports figures; a failed verification is marked in
the table and makes the exit status nonzero.

  build/venv/bin/python tools/dsm-mt [--build build/release] [--out build/dsm-mt]
"""

import json
import os
import subprocess
import sys

from . import dsmrun

APPS = {  # sizes: a few seconds per run on 4 nodes at 500 us here
    "jacobi": ["-n", "1024", "-i", "10"],
    "sor": ["-n", "1024", "-i", "5"],
    "gauss": ["-n", "1024", "-i", "10"],
    "matmul": ["-n", "384"],
    "lu": ["-n", "512", "-b", "64"],
    "fft": ["-m", "16"],
    "radix": ["-n", "262144"],
    "water": ["-n", "4096", "-s", "2"],
}
PARTS = [("busy_s", "busy", "tab:green"), ("fault_s", "memory stall", "tab:red"),
         ("sync_s", "synchronization stall", "tab:orange"),
         ("overhead_s", "DSM overhead", "tab:gray"),
         ("mt_s", "multithreading overhead", "tab:purple"), ("rest_s", "other", "lightsteelblue")]


def switch_cost(build):
    """Nanoseconds per switch between two threads on one CPU, or None."""
    exe = os.path.join(build, "apps", "locus-dsm-switch")
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)["switch_ns"]
    return None


def split_other(rec, switch_ns):
    """The node-average switches x switch cost, out of other (never below 0)."""
    nodes = max(len(rec.get("stats", [])), 1)
    mt = rec.get("sum_switches", 0) / nodes * (switch_ns or 0) * 1e-9
    other = rec.get("other_s", 0)
    rec["mt_s"] = max(min(mt, other), 0.0)
    rec["rest_s"] = other - rec["mt_s"]


def label(r):
    """O, nT, P, nTP, nTPs from a run's threads, prefetch and switch policy."""
    t, pf, sync = r["threads"], r.get("prefetch", 0), r.get("switch") == "sync"
    name = ("" if t == 1 else f"{t}T") + ("P" if pf else "")
    return (name or "O") + ("s" if sync else "")


def is_o(r):
    return label(r) == "O"


def table(recs, args, switch_ns):
    lines = ["# locus-dsm multithreading and prefetching (seed 001 Figures 4, 5, Table 2)", "",
             f"{args.nodes} nodes, protocol {args.protocol}, transport delay {args.delay} us per "
             f"message, threads per node {args.threads}. One switch between two threads "
             f"of a node (futex hand-over, kernel threads, measured by locus-dsm-switch): "
             f"{switch_ns:.0f} ns." if switch_ns else "switch cost not measured.", "",
             "## Figures 4 and 5 as numbers (seconds averaged over nodes; time relative to O)", "",
             "| app | run | time (s) | rel. O | busy | memory stall | sync stall | DSM overhead | "
             "mt overhead | other | verified |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    base = {}
    for r in recs:
        if is_o(r) and r["time_s"]:
            base[r["app"]] = r["time_s"]
    for r in recs:
        if r["time_s"] is None:
            lines.append(f"| {r['app']} | {label(r)} | - | | | | | | | | "
                         f"FAILED (rc {r['rc']}) |")
            continue
        rel = r["time_s"] / base[r["app"]] if r["app"] in base else float("nan")
        parts = " | ".join(f"{r.get(k, 0):.3f}" for k, _, _ in PARTS)
        lines.append(f"| {r['app']} | {label(r)} | {r['time_s']:.3f} | {rel:.2f} | "
                     f"{parts} | {'yes' if r['ok'] else 'NO'} |")
    lines += ["", "## Table 2 (every node's counts summed; averages over every stall)", "",
              "| app | run | avg stall (us) | avg run length (us) | messages | volume (KB) | "
              "remote misses | avg stall (us) | remote locks | avg stall (us) | barriers | "
              "avg barrier wait (us) | switches | lock hand-offs | combined faults | prefetches |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        if not r.get("stats"):
            continue
        node_barriers = r["stats"][0].get("barriers", 0)
        lines.append(
            f"| {r['app']} | {label(r)} | {dsmrun.per(r, 'stall_s', 'stalls'):.0f} | "
            f"{dsmrun.per(r, 'run_s', 'stalls'):.0f} | {r.get('sum_msgs', 0)} | "
            f"{r.get('sum_bytes', 0) / 1024:.0f} | {r.get('sum_remote_misses', 0)} | "
            f"{dsmrun.per(r, 'remote_miss_s', 'remote_misses'):.0f} | "
            f"{r.get('sum_remote_locks', 0)} | {dsmrun.per(r, 'remote_lock_s', 'remote_locks'):.0f} | "
            f"{node_barriers} | {dsmrun.per(r, 'barrier_wait_s', 'barrier_waits'):.0f} | "
            f"{r.get('sum_switches', 0)} | {r.get('sum_lock_handoffs', 0)} | "
            f"{r.get('sum_faults_combined', 0)} | {r.get('sum_prefetches', 0)} |")
    lines += ["", "Columns: avg stall = all application threads' stall time / their stalls; avg "
              "run length = the CPU time threads ran between stalls / stalls; messages and volume "
              "= sent by every node; remote misses = faults that sent a request (combined faults "
              "waited for another thread's request instead); remote locks = acquires granted by "
              "a message; barriers = node-level barriers (one message per node each), avg "
              "barrier wait = per thread call; switches = stalls while another thread of the "
              "node could run (with nTPs: gave the run token to a waiting thread); "
              "prefetches = pages asked for by locus_dsm_prefetch."]
    return "\n".join(lines) + "\n"


def plot(recs, out, args, which, fname, title):
    """Stacked bars of the runs `which` selects, each relative to its application's O."""
    plt = dsmrun.pyplot()
    apps = [a for a in APPS if any(r["app"] == a for r in recs)]
    fig, ax = plt.subplots(figsize=(max(8, len(apps) * 2.1), 5.5))
    x, ticks, names = 0, [], []
    drawn = set()
    for app in apps:
        rs = [r for r in recs if r["app"] == app and which(r)]
        base = next((r for r in recs if r["app"] == app and is_o(r) and r.get("total_s")), None)
        first = x
        for r in rs:
            if base is None or not r.get("total_s"):
                x += 1
                continue
            # The bar is the run's time relative to O; its parts keep their shares.
            scale = (r["time_s"] / base["time_s"]) / r["total_s"]
            bottom = 0.0
            for key, name, colour in PARTS:
                v = max(r.get(key, 0), 0) * scale
                ax.bar(x, v, bottom=bottom, color=colour,
                       label=name if name not in drawn else None)
                drawn.add(name)
                bottom += v
            ax.text(x, bottom + 0.02, f"{bottom:.2f}", ha="center", fontsize=6)
            ticks.append(x)
            names.append(label(r) + ("" if r["ok"] else "!"))
            x += 1
        ax.text((first + x - 1) / 2, -0.12, app, ha="center",
                transform=ax.get_xaxis_transform(), fontsize=9)
        x += 1
    ax.set_xticks(ticks)
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylabel("execution time relative to O (one thread per node)")
    ax.set_title(f"locus-dsm ({args.protocol}), {args.nodes} nodes, {args.delay} us per message: "
                 f"{title}", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.tight_layout()
    dsmrun.save(fig, out, fname)


def main(argv=None):
    ap = dsmrun.parser(__doc__, "build/dsm-mt")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--delay", type=int, default=500, help="microseconds per message (500)")
    ap.add_argument("--threads", default="1,2,4,8", help="threads per node for Figure 4 (1,2,4,8)")
    ap.add_argument("--fig5-threads", type=int, default=4,
                    help="threads per node of nTP and nTPs in Figure 5 (4; 0: no Figure 5)")
    ap.add_argument("--protocol", default="sc")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--timeout", type=int, default=600)
    a = ap.parse_args(argv)
    try:
        threads = [int(t) for t in a.threads.split(",")]
    except ValueError:
        ap.error(f"--threads {a.threads}: a comma-separated list of numbers")
    unknown = [x for x in a.apps.split(",") if x not in APPS]
    if unknown or a.nodes < 1 or a.delay < 0 or not threads or min(threads) < 1 or \
            a.fig5_threads < 0:
        ap.error(f"unknown applications {unknown} (known: {', '.join(APPS)})" if unknown
                 else "--nodes, --threads must be >= 1, --delay and --fig5-threads >= 0")
    os.makedirs(a.out, exist_ok=True)
    switch_ns = switch_cost(a.build)
    env = {"LOCUS_DSM_DELAY_US": str(a.delay), "LOCUS_DSM_PROTOCOL": a.protocol}
    variants = [(t, 0, "all") for t in threads]
    if a.fig5_threads:
        variants += [(1, 1, "all"), (a.fig5_threads, 0, "all"), (a.fig5_threads, 1, "all"),
                     (a.fig5_threads, 1, "sync")]
    variants = list(dict.fromkeys(variants))  # each run once, in order
    recs = []
    for app in a.apps.split(","):
        for t, pf, sw in variants:
            run_env = dict(env, LOCUS_DSM_SWITCH=sw)
            r = dsmrun.run(a.build, app, APPS[app] + ["--threads", str(t), "--prefetch", str(pf)],
                           a.nodes, run_env, a.timeout)
            r.update(threads=t, prefetch=pf, switch=sw)
            split_other(r, switch_ns)
            recs.append(r)
            msg = f"{r['time_s']:.3f} s" if r["time_s"] is not None else f"failed (rc {r['rc']})"
            print(f"[dsm-mt] {app:7s} {label(r):5s}: {msg}{'' if r['ok'] else ' NOT VERIFIED'}",
                  flush=True)
            if r["rc"] and r["stderr"]:
                print(r["stderr"], file=sys.stderr)
    dsmrun.write(a.out, "results.json", json.dumps(
        {"switch_ns": switch_ns, "delay_us": a.delay, "nodes": a.nodes, "runs": recs}, indent=1))
    print(dsmrun.write(a.out, "table.md", table(recs, a, switch_ns)))
    plot(recs, a.out, a, lambda r: not r["prefetch"] and r["switch"] == "all", "fig4.png",
         "multithreading (seed 001 Figure 4)")
    wrote = "fig4.png"
    if a.fig5_threads:
        n = a.fig5_threads
        plot(recs, a.out, a, lambda r: label(r) in ("O", "P", f"{n}T", f"{n}TP", f"{n}TPs"),
             "fig5.png", "prefetching and multithreading (seed 001 Figure 5)")
        wrote += ", fig5.png"
    print(f"[dsm-mt] wrote {a.out}/table.md, results.json, {wrote}")
    return 0 if all(r["ok"] for r in recs) else 1

