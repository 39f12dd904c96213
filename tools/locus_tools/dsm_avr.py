"""locus-dsm avr against sc: seed 004 Figures 3.1-3.11 and Tables 3.4-3.5.

Runs every application of tools/dsm-suite under sc and avr on 1, 2 and 4
nodes at transport delays of 0, 200 and 1400 us per message (1.4 ms: seed
004's time for a 4 KiB message), and a matmul of size 1013 (rows of 8,104
bytes: pages falsely shared at block edges) on 2 and 4 nodes; avr once per
--pending value (LOCUS_DSM_AVR_PENDING: pages one interval may await) and
--ask value (LOCUS_DSM_AVR_ASK: 1 asks for the page that ended a run at
once, 0 after the interval). K=1 with ask=0 is the seed's protocol. Then
writes into --out:
  results.json       every run, with every node's statistics
  table.md           times, sc/avr ratios (the seed's avr, or K=1, and the best
                     variant); avr's intervals, rollbacks and their causes, pages
                     added and asked for, logged accesses, twins, and the
                     interval's segments as the seed names them (Cp, Op, Res,
                     Rol), per node
  time_vs_nodes.png  one panel per application: an sc line and an avr line per
                     variant, per delay
  goal.md            avr (the seed's, or K=1, and the best variant) against sc
                     on the falsely shared workloads at 1.4 ms

A benchmark, not a test: it reports figures. A failed verification is marked
and makes the exit status nonzero.

  build/venv/bin/python tools/dsm-avr [--build build/release] [--out build/dsm-avr]
                                      [--nodes 1,2,4] [--delays 0,200,1400] [--apps ...]
                                      [--pending 1,4] [--ask 0,1]
"""

import json
import os

from . import dsm_suite as suite
from . import dsmrun

# Rows or data that straddle pages: jacobi's and sor's rows of 514 doubles,
# matmul 1013's of 1013, radix's and water's arrays written by every node.
FALSE_SHARING = ["jacobi", "sor", "radix", "water", "matmul1013"]
SEGMENTS = ["cp", "op", "res", "rol", "wait"]


def run(build, app, nodes, delay, protocol, timeout, pending=1, ask=1):
    env = {"LOCUS_DSM_DELAY_US": str(delay), "LOCUS_DSM_PROTOCOL": protocol}
    if protocol == "avr":
        env["LOCUS_DSM_AVR_PENDING"] = str(pending)
        env["LOCUS_DSM_AVR_ASK"] = str(ask)
    if app == "matmul1013":
        rec = dsmrun.run(build, "matmul", ["-n", "1013"], nodes, env, timeout)
        rec["app"] = "matmul1013"
    else:
        rec = dsmrun.run(build, app, suite.APPS[app], nodes, env, timeout)
    rec["delay_us"], rec["protocol"] = delay, protocol
    if protocol == "avr":
        rec["pending"], rec["ask"] = pending, ask
    return rec


def key(r):
    """An avr run's variant: (K, ask)."""
    return (r.get("pending", 1), r.get("ask", 1))


def label(k, prefix="K="):
    """K=4, or K=1 ask=0 (the page that ended a run asked for after the interval)."""
    return f"{prefix}{k[0]}" + ("" if k[1] else " ask=0")


def variant(r):
    """sc, or avr with its K (pages one interval may await) and ask."""
    return "sc" if r["protocol"] == "sc" else "avr " + label(key(r))


def reference_key(keys):
    """The variant sc is set against: the seed's (K=1 ask=0) if it ran, else K=1."""
    return (1, 0) if (1, 0) in keys else (1, 1)


def reference(avrs):
    """Of avr runs by variant, the reference one, or None."""
    return avrs.get(reference_key(avrs))


def reference_label(recs):
    return label(reference_key({key(r) for r in recs if r["protocol"] == "avr"}))


def best_avr(recs):
    """Of avr runs of one configuration, the fastest verified one (or None)."""
    done = [r for r in recs if r["protocol"] == "avr" and r["ok"] and r["time_s"]]
    return min(done, key=lambda r: r["time_s"]) if done else None


def avr_row(r):
    g = lambda k: r.get("sum_avr_" + k, 0)  # noqa: E731
    n = max(r["nodes"], 1)
    opened = g("ckpt_read") + g("ckpt_write") + g("ckpt_upgrade")
    rolled = g("roll_read") + g("roll_taken") + g("roll_deadlock")
    seg = " | ".join(f"{g(s + '_s') / n:.3f}" for s in SEGMENTS)
    return (f"| {r['app']} | {r['delay_us']} | {r['nodes']} | {label(key(r), '')} | {opened} | "
            f"{g('ckpt_read')}/{g('ckpt_write')}/{g('ckpt_upgrade')} | {g('commits')} | {rolled} | "
            f"{g('roll_read')}/{g('roll_taken')}/{g('roll_deadlock')} | {g('added')} | "
            f"{g('asked')} | {g('logged')} | "
            f"{g('twins') / max(opened, 1):.1f} | {g('deferrals')} | {seg} | "
            f"{1e6 * g('cp_s') / max(opened, 1):.0f} |")


def _ratio(s, a):
    return f"{s['time_s'] / a['time_s']:.2f}" if a and s["time_s"] and a["time_s"] else "-"


def tables(recs):
    apps = list(dict.fromkeys(r["app"] for r in recs))
    delays = sorted({r["delay_us"] for r in recs})
    nodes = sorted({r["nodes"] for r in recs})
    ks = sorted({key(r) for r in recs if r["protocol"] == "avr"})
    ref = reference_label(recs)
    fmt = lambda r: f"{r['time_s']:.3f}" if r and r["time_s"] is not None else "failed"  # noqa: E731
    out = ["## Time of the timed phase (s), and sc / avr", "",
           "K: pages one avr interval may await (LOCUS_DSM_AVR_PENDING); ask=0: the page that "
           "ended a run is asked for after the interval (LOCUS_DSM_AVR_ASK=0). K=1 ask=0 is "
           "the seed's protocol.", "",
           "| app | delay (us) | nodes | sc | " + " | ".join(f"avr {label(k)}" for k in ks) +
           f" | sc / avr {ref} | best | sc / avr best | verified |",
           "|---|---|---|---|" + "---|" * len(ks) + "---|---|---|---|"]
    for app in apps:
        for d in delays:
            for n in nodes:
                same = [r for r in recs if r["app"] == app and r["delay_us"] == d and r["nodes"] == n]
                s = next((r for r in same if r["protocol"] == "sc"), None)
                avrs = {key(r): r for r in same if r["protocol"] == "avr"}
                if not s or not avrs:
                    continue
                best = best_avr(avrs.values())
                ok = "yes" if s["ok"] and all(a["ok"] for a in avrs.values()) else "NO"
                cells = " | ".join(fmt(avrs.get(k)) if k in avrs else "-" for k in ks)
                out.append(f"| {app} | {d} | {n} | {fmt(s)} | {cells} | "
                           f"{_ratio(s, reference(avrs))} | "
                           f"{label(key(best)) if best else '-'} | {_ratio(s, best)} | {ok} |")
    out += ["", "## avr's intervals (sums over nodes; segments are seconds per node)", "",
            "| app | delay (us) | nodes | K | intervals | read/write/upgrade | stood | rolled back | "
            "read conflict/page lost/deadlock | added | asked | logged | twins per interval | "
            "held | Cp | Op | Res | Rol | wait | Cp avg (us) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        if r["protocol"] == "avr" and r["nodes"] > 1 and r.get("stats"):
            out.append(avr_row(r))
    out += ["", "Cp: checkpoint (registers, stack, protections, the request); Op: the application "
            "running on during the interval; Res: comparing and merging; Rol: rolling back; "
            "wait: waiting for the replies once the run ended (the part of Net that Op did not "
            "cover); added: faults the run went on through, their pages awaited too; asked: "
            "pages asked for as the fault that ended a run was taken."]
    return "\n".join(out) + "\n"


def goal(recs):
    delay = max(r["delay_us"] for r in recs)
    ref = reference_label(recs)
    lines = [f"## avr against sc on the falsely shared workloads at {delay} us", "",
             "2 nodes: one per CPU here; 4 nodes: two per CPU. K: pages one interval may "
             "await; ask=0: the page that ended a run asked for after the interval (K=1 ask=0 "
             "is the seed's protocol). The goal is judged on the best variant.", "",
             f"| app | nodes | sc (s) | avr {ref} (s) | sc / avr {ref} | best | avr best (s) | "
             "sc / avr best | goal 1.3x |",
             "|---|---|---|---|---|---|---|---|---|"]
    for app in FALSE_SHARING:
        for n in sorted({r["nodes"] for r in recs if r["nodes"] > 1}):
            same = [r for r in recs if r["app"] == app and r["delay_us"] == delay and r["nodes"] == n]
            s = next((r for r in same if r["protocol"] == "sc"), None)
            one = reference({key(r): r for r in same if r["protocol"] == "avr"})
            best = best_avr(same)
            if not s or not s["time_s"] or not best:
                continue
            ratio = s["time_s"] / best["time_s"]
            t1 = f"{one['time_s']:.3f}" if one and one["time_s"] else "-"
            lines.append(f"| {app} | {n} | {s['time_s']:.3f} | {t1} | {_ratio(s, one)} | "
                         f"{label(key(best))} | {best['time_s']:.3f} | {ratio:.2f} | "
                         f"{'met' if ratio >= 1.3 else 'not met'} |")
    return "\n".join(lines) + "\n"


def plot(recs, out):
    plt = dsmrun.pyplot()
    apps = list(dict.fromkeys(r["app"] for r in recs))
    cols = 3
    rows = (len(apps) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows))
    delays = sorted({r["delay_us"] for r in recs})
    variants = list(dict.fromkeys(variant(r) for r in sorted(
        recs, key=lambda r: (r["protocol"] != "sc", key(r)))))
    styles = ["o-", "s--", "^:", "v-.", "d--"]
    for ax, app in zip(axes.flat, apps):
        for d, colour in zip(delays, ["tab:blue", "tab:orange", "tab:red", "tab:green"]):
            for v, style in zip(variants, styles):
                pts = sorted((r["nodes"], r["time_s"]) for r in recs if r["app"] == app
                             and r["delay_us"] == d and variant(r) == v and r["time_s"])
                if pts:
                    ax.plot(*zip(*pts), style, color=colour, label=f"{v} {d} us")
        ax.set_title(app)
        ax.set_xlabel("nodes")
        ax.set_ylabel("time (s)")
        ax.set_xticks(sorted({r["nodes"] for r in recs}))
    # One legend for every panel, below them: inside a panel it hides lines.
    labelled = {}
    for ax in list(axes.flat)[:len(apps)]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            labelled.setdefault(lab, h)
    for ax in list(axes.flat)[len(apps):]:
        ax.axis("off")
    rows_of_legend = (len(labelled) + 4) // 5
    fig.legend(list(labelled.values()), list(labelled), loc="lower center", ncol=5, fontsize=8)
    fig.suptitle("locus-dsm: sc and avr (K pages awaited; ask=0: the seed's order), "
                 "time vs nodes "
                 "(seed 004 Figures 3.1-3.11)")
    # the legend's height: about a quarter of an inch a row, of a figure 3.6 in a row of panels
    fig.tight_layout(rect=(0, (0.25 * rows_of_legend + 0.2) / (3.6 * rows), 1, 1))
    dsmrun.save(fig, out, "time_vs_nodes.png")


def main(argv=None):
    ap = dsmrun.parser(__doc__, "build/dsm-avr")
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--delays", default="0,200,1400", help="microseconds per message")
    ap.add_argument("--apps", default=",".join(list(suite.APPS) + ["matmul1013"]),
                    help="applications of tools/dsm-suite, and matmul1013 (not on 1 node)")
    ap.add_argument("--pending", default="1,4",
                    help="LOCUS_DSM_AVR_PENDING values to run avr with, 1 to 8 (1,4)")
    ap.add_argument("--ask", default="0,1",
                    help="LOCUS_DSM_AVR_ASK values to run avr with, 0 or 1 (0,1)")
    ap.add_argument("--timeout", type=int, default=600)
    a = ap.parse_args(argv)
    try:
        nodes = [int(x) for x in a.nodes.split(",")]
        delays = [int(x) for x in a.delays.split(",")]
        pending = [int(x) for x in a.pending.split(",")]
        asks = [int(x) for x in a.ask.split(",")]
    except ValueError:
        ap.error("--nodes, --delays, --pending and --ask take comma-separated numbers")
    apps = a.apps.split(",")
    unknown = [x for x in apps if x not in suite.APPS and x != "matmul1013"]
    if unknown or min(nodes) < 1 or min(delays) < 0 or min(pending) < 1 or max(pending) > 8 \
            or not set(asks) <= {0, 1}:
        ap.error(f"unknown applications {unknown}" if unknown else
                 "--nodes >= 1, --delays >= 0, --pending from 1 to 8, --ask 0 or 1")
    os.makedirs(a.out, exist_ok=True)
    recs = []
    for d in delays:
        for app in apps:
            for n in ([x for x in nodes if x > 1] if app == "matmul1013" else nodes):
                avrs = [("avr", k, q) for k in dict.fromkeys(pending) for q in dict.fromkeys(asks)]
                for proto, k, q in [("sc", 1, 1)] + avrs:
                    r = run(a.build, app, n, d, proto, a.timeout, k, q)
                    recs.append(r)
                    t = f"{r['time_s']:.3f} s" if r["time_s"] is not None else "failed"
                    print(f"[dsm-avr] {app:10s} {variant(r):15s} nodes={n} delay={d:5d} us: {t}"
                          f"{'' if r['ok'] else ' NOT VERIFIED'}", flush=True)
    dsmrun.write(a.out, "results.json", json.dumps(recs, indent=1))
    md = dsmrun.write(a.out, "table.md", tables(recs))
    g = dsmrun.write(a.out, "goal.md", goal(recs))
    print(md)
    print(g)
    plot(recs, a.out)
    print(f"[dsm-avr] wrote {a.out}/table.md, goal.md, results.json, time_vs_nodes.png")
    return 0 if all(r["ok"] for r in recs) else 1

