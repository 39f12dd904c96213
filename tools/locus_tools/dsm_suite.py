"""locus-dsm application suite: time vs nodes, with the time breakdown.

Runs every application (and the explicit-MPI Jacobi) on 1, 2 and 4 nodes with
transport delays of 0 and 1 ms per message, under each protocol of --protocols
(sc) and each --prefetch setting (0), reads the applications' result lines and
the runtime's per-node statistics (LOCUS_DSM_STATS=json), and writes into
--out:
  results.json      every run: time, verification, per-node statistics
  table.md          time per app / nodes / delay, breakdown, whether the machine's idle
                    CPUs were asked to poll (LOCUS_DSM_IDLE_POLL), DSM/MPI Jacobi ratio,
                    and the average remote miss per run with where its time goes (step
                    by step)
  time_vs_nodes.png one panel per application (seed 004 Figures 3.1-3.11 style)
  breakdown.png     busy / fault / sync / overhead / other per run (seed 001 Figure 1
                    style), over the timed phase only (the applications reset and
                    freeze the statistics around it)

A benchmark, not a test: it reports figures; a failed verification is marked
in the table and makes the exit status nonzero.

  build/venv/bin/python tools/dsm-suite [--build build/release] [--out build/dsm-suite]
  build/venv/bin/python tools/dsm-suite --protocols sc,lrc --prefetch 0,1 --nodes 4 --delays 500
  build/venv/bin/python tools/dsm-suite --nodes 2,4 --delays 0,rdma,tcp,seed

--delays takes microseconds per message, or the runtime's named networks
(LOCUS_DSM_NETWORK: rdma, tcp, seed, none; docs/dsm.md), which add a per-byte cost.

(tools/dsm-lrc draws seed 001 Figure 2 and Table 1 from the second kind of run;
tools/dsm-avr compares sc and avr, seed 004 Figures 3.1-3.11.)
"""

import json
import os

from . import dsmrun

APPS = {  # sizes for the suite: seconds per run at delay 0 on this machine
    "jacobi": ["-n", "512", "-i", "20"],
    "sor": ["-n", "512", "-i", "10"],
    "gauss": ["-n", "512", "-i", "20"],
    "matmul": ["-n", "256"],
    "lu": ["-n", "256", "-b", "32"],
    "fft": ["-m", "16"],
    "radix": ["-n", "131072"],
    "water": ["-n", "512", "-s", "2"],
}
PARTS = dsmrun.PARTS
# A remote miss's steps (the runtime's miss_*_s statistics), in order, and their words.
MISS_STEPS = [("miss_post_s", "handler"), ("miss_take_s", "comm wake-up"),
              ("miss_send_s", "send"), ("miss_reply_s", "reply"),
              ("miss_install_s", "install"), ("miss_resume_s", "resume")]
MISS_GOAL_US = 10  # issue 36: average remote miss at no emulated delay, over all nodes
NETWORKS = ["none", "rdma", "tcp", "seed"]  # LOCUS_DSM_NETWORK's names (src/dsm/config.c)


def delay_env(delay):
    """The runtime's environment for one --delays item: microseconds, or a network name."""
    if isinstance(delay, int):
        return {"LOCUS_DSM_DELAY_US": str(delay)}
    return {"LOCUS_DSM_NETWORK": delay}


def delay_text(delay):
    return f"{delay} us" if isinstance(delay, int) else delay


def parse_delays(text):
    """--delays: comma-separated microseconds (>= 0) or network names; ValueError if not."""
    out = []
    for x in text.split(","):
        if x in NETWORKS:
            out.append(0 if x == "none" else x)
        elif x.isdigit():
            out.append(int(x))
        else:
            raise ValueError(x)
    return out


def miss_us(rec):
    """Average remote miss of a run in microseconds, over every node (0 without misses)."""
    return dsmrun.per(rec, "remote_miss_s", "remote_misses")


def miss_steps_us(rec):
    """Each step's average over the misses timed step by step, microseconds."""
    return [dsmrun.per(rec, k, "miss_steps") for k, _ in MISS_STEPS]


def run(build, app, args, nodes, delay_us, timeout, protocol="sc", prefetch=0):
    if app != "mpi-jacobi":
        args = list(args) + ["--prefetch", str(prefetch)]
    rec = dsmrun.run(build, app, args, nodes,
                     {**delay_env(delay_us), "LOCUS_DSM_PROTOCOL": protocol},
                     timeout)
    rec["delay_us"] = delay_us
    rec["protocol"] = protocol
    rec["prefetch"] = prefetch
    for k in ["msgs", "bytes", "faults_read", "faults_write", "faults_upgrade",
              "invalidations", "pingpong_deferrals"]:
        rec[k] = rec.get("sum_" + k, 0)
    return rec


def table(recs, mpi):
    lines = ["| app | protocol | prefetch | delay | nodes | time (s) | miss (us) | busy | fault | sync | overhead | other | in stalls | comm cpu | msgs | faults r/w/u | inval | deferrals | ok |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        which = f"{r['app']} | {r.get('protocol', 'sc')} | {r.get('prefetch', 0)}"
        if r["time_s"] is None:
            lines.append(f"| {which} | {delay_text(r['delay_us'])} | {r['nodes']} | - | | | | | | | | | | | | | FAILED (rc {r['rc']}) |")
            continue
        parts = " | ".join(f"{r.get(k, 0):.3f}" for k in PARTS)
        lines.append(
            f"| {which} | {delay_text(r['delay_us'])} | {r['nodes']} | {r['time_s']:.3f} | "
            f"{miss_us(r):.1f} | {parts} | "
            f"{r.get('overhead_in_stall_s', 0):.3f} | {r.get('comm_cpu_s', 0):.3f} | "
            f"{r.get('msgs', 0)} | {r.get('faults_read', 0)}/{r.get('faults_write', 0)}/"
            f"{r.get('faults_upgrade', 0)} | {r.get('invalidations', 0)} | "
            f"{r.get('pingpong_deferrals', 0)} | {'yes' if r['ok'] else 'NO'} |")
    lines += ["", "Breakdown columns: seconds of the timed phase, averaged over nodes. busy = the "
              "application thread's CPU time outside faults and DSM calls; fault, sync = its wall "
              "time inside them; overhead = the communication thread's CPU time handling requests "
              "and messages while the application was not stalled; other = time - the four "
              "(descheduled: 4 nodes share 2 CPUs); in stalls = the communication thread's "
              "handling CPU time while the application was stalled (inside fault and sync, not "
              "added again); comm cpu = all of the communication thread's "
              "CPU time, idle polling included (not part of the sum). miss = the average "
              "remote miss over every node (a fault that sent a request: fault to the thread "
              "running again)."]
    idle = dsmrun.idle_summary([r.get("stats") for r in recs])
    if idle:
        lines += ["", idle]
    lines += ["",
              "| nodes | DSM jacobi (protocol, prefetch), delay 0 (s) | MPI jacobi (s) | DSM/MPI |",
              "|---|---|---|---|"]
    for m in mpi:
        for d in [r for r in recs if r["app"] == "jacobi" and r["delay_us"] == 0
                  and r["nodes"] == m["nodes"]]:
            if d["time_s"] and m["time_s"]:
                lines.append(f"| {m['nodes']} | {d['time_s']:.4f} ({d.get('protocol', 'sc')}, "
                             f"{d.get('prefetch', 0)}) | {m['time_s']:.4f} | "
                             f"{d['time_s'] / m['time_s']:.1f} |")
    lines += miss_table(recs)
    return "\n".join(lines) + "\n"


def miss_table(recs):
    """The remote misses of the runs at no emulated delay: average, goal, steps."""
    rows = [r for r in recs if r["delay_us"] == 0 and r.get("sum_remote_misses")]
    if not rows:
        return []
    lines = ["", f"Remote misses at no emulated delay (goal: average <= {MISS_GOAL_US} us over "
             "every node), and where the time of one goes, in microseconds per miss:", "",
             "| app | protocol | prefetch | nodes | misses | avg miss (us) | goal | "
             + " | ".join(w for _, w in MISS_STEPS) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(MISS_STEPS)]
    for r in rows:
        m = miss_us(r)
        steps = " | ".join(f"{v:.1f}" for v in miss_steps_us(r))
        lines.append(f"| {r['app']} | {r.get('protocol', 'sc')} | {r.get('prefetch', 0)} | "
                     f"{r['nodes']} | {r['sum_remote_misses']} | {m:.1f} | "
                     f"{'met' if m <= MISS_GOAL_US else 'not met'} | {steps} |")
    lines += ["", "Steps: handler = fault taken to request posted; comm wake-up = posted to "
              "taken by the communication thread; send = taken to the request handed to MPI; "
              "reply = handed to MPI to the last answer taken out of MPI (the other nodes' "
              "wake-ups and service, the transport); install = answer taken out to page "
              "installed and thread woken; resume = woken to running (averaged over the "
              "misses whose every step was timed)."]
    return lines


def plots(recs, out):
    plt = dsmrun.pyplot()
    apps = list(APPS)
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    variants = sorted({(r["delay_us"], r.get("protocol", "sc"), r.get("prefetch", 0))
                       for r in recs}, key=str)
    styles = ["o-", "s--", "^-.", "v:", "D-", "x--", "*-.", "+:"]
    for ax, app in zip(axes.flat, apps):
        for (delay, proto, pf), style in zip(variants, styles * 4):
            pts = [(r["nodes"], r["time_s"]) for r in recs
                   if r["app"] == app and r["delay_us"] == delay and r.get("protocol", "sc") == proto
                   and r.get("prefetch", 0) == pf and r["time_s"] is not None]
            if pts:
                ax.plot(*zip(*pts), style,
                        label=f"{proto}{' P' if pf else ''}, delay {delay_text(delay)}")
        ax.set_title(app)
        ax.set_xlabel("nodes")
        ax.set_ylabel("time (s)")
        ax.set_xticks([1, 2, 4])
        if ax.get_lines():
            ax.legend(fontsize=7)
    fig.suptitle("locus-dsm: time vs nodes")
    fig.tight_layout()
    dsmrun.save(fig, out, "time_vs_nodes.png")

    # Each bar is one run, normalised to its total (the components' shares of
    # the timed phase), with the time itself written above it: a stacked bar
    # on a log axis would misstate the shares.
    good = [r for r in recs if r.get("stats") and r.get("total_s")]
    fig, ax = plt.subplots(figsize=(max(10, len(good) * 0.35), 5.5))
    labels = [f"{r['app']} {r.get('protocol', 'sc')}{' P' if r.get('prefetch') else ''} "
              f"{r['nodes']}n {delay_text(r['delay_us'])}" for r in good]
    bottom = [0.0] * len(good)
    for part, colour in zip(PARTS, ["tab:green", "tab:red", "tab:orange", "tab:gray",
                                    "lightsteelblue"]):
        vals = [max(r.get(part, 0), 0) / r["total_s"] for r in good]
        ax.bar(range(len(good)), vals, bottom=bottom, color=colour, label=part[:-2])
        bottom = [b + v for b, v in zip(bottom, vals)]
    for i, r in enumerate(good):
        ax.text(i, 1.02, f"{r['total_s']:.2f}", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(range(len(good)))
    ax.set_xticklabels(labels, rotation=90, fontsize=7)
    ax.set_ylabel("share of the timed phase (node average; time in s above)")
    ax.set_ylim(0, 1.15)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("locus-dsm: execution time breakdown (seed 001 Figure 1 style)")
    fig.tight_layout()
    dsmrun.save(fig, out, "breakdown.png")


def main(argv=None):
    ap = dsmrun.parser(__doc__, "build/dsm-suite")
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--delays", default="0,1000",
                    help="microseconds per message, or network names (" + ", ".join(NETWORKS)
                    + "), comma-separated (0,1000)")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--protocols", default="sc", help="comma-separated: sc, lrc, avr (sc)")
    ap.add_argument("--prefetch", default="0",
                    help="comma-separated --prefetch settings of the applications: 0, 1 (0)")
    ap.add_argument("--timeout", type=int, default=600)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    try:
        nodes = [int(x) for x in a.nodes.split(",")]
        delays = parse_delays(a.delays)
        prefetch = [int(x) for x in a.prefetch.split(",")]
    except ValueError:
        ap.error("--nodes and --prefetch take comma-separated numbers, --delays numbers or "
                 "network names (" + ", ".join(NETWORKS) + ")")
    protocols = a.protocols.split(",")
    unknown = [x for x in a.apps.split(",") if x not in APPS]
    if unknown or not set(protocols) <= {"sc", "lrc", "avr"} or not set(prefetch) <= {0, 1} or \
            min(nodes) < 1:
        ap.error(f"unknown applications {unknown} (known: {', '.join(APPS)})" if unknown else
                 "--protocols from sc,lrc,avr; --prefetch from 0,1; --nodes >= 1")
    recs, mpi = [], []
    for delay in delays:
        for app in a.apps.split(","):
            for proto in protocols:
                for pf in prefetch:
                    for n in nodes:
                        r = run(a.build, app, APPS[app], n, delay, a.timeout, proto, pf)
                        recs.append(r)
                        t = (f"{r['time_s']:.3f} s, remote miss {miss_us(r):.1f} us"
                             if r["time_s"] is not None else "failed")
                        print(f"[dsm-suite] {app:7s} {proto:3s} prefetch={pf} nodes={n} "
                              f"delay={delay_text(delay):>8s}: {t} (wall {r['wall_s']:.1f} s)"
                              f"{'' if r['ok'] else ' NOT VERIFIED'}", flush=True)
    for n in nodes:
        r = run(a.build, "mpi-jacobi", APPS["jacobi"], n, 0, a.timeout)
        mpi.append(r)
        print(f"[dsm-suite] mpi-jacobi nodes={n}: {r['time_s']}", flush=True)
    dsmrun.write(a.out, "results.json", json.dumps({"dsm": recs, "mpi": mpi}, indent=1))
    print(dsmrun.write(a.out, "table.md", table(recs, mpi)))
    plots(recs, a.out)
    print(f"[dsm-suite] wrote {a.out}/table.md, results.json, time_vs_nodes.png, breakdown.png")
    return 0 if all(r["ok"] for r in recs + mpi) else 1

