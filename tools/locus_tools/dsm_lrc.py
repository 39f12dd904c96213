"""locus-dsm lazy release consistency and prefetch: seed 001 Figure 2 and Table 1, lrc against sc.

Runs every DSM application on --nodes nodes (4) at a transport delay of --delay
microseconds per message (500, about the seed's network: a page message took
about that on its ATM network), under sc and lrc, each without and with
--prefetch 1 (the applications' software-pipelined prefetches), plus the
explicit-MPI Jacobi of the same size, and a 2-node Jacobi whose wall time
outside the timed phase is measured against an empty run's. Writes into --out:
  results.json   every run: time, verification, every node's statistics
  table.md       lrc against sc; seed 001 Figure 2 as numbers (time and
                 breakdown of O and P under lrc, relative to O, with the
                 prefetch overhead apart); Table 1 (prefetches issued,
                 unneeded, late, lost, coverage, misses, traffic, average miss
                 latency); the goals of the issue, each with its figure
  fig2.png       seed 001 Figure 2: normalised time of O and P per application,
                 split into busy, memory stall, synchronization stall, DSM
                 overhead, prefetch overhead and other

A benchmark, not a test: it reports figures; a failed verification is marked in
the table and makes the exit status nonzero.

  build/venv/bin/python tools/dsm-lrc [--build build/release] [--out build/dsm-lrc]
"""

import json
import os
import sys

from . import dsmrun

APPS = {  # label: (application, arguments); a few seconds per run on 4 nodes at 500 us
    "jacobi": ("jacobi", ["-n", "1024", "-i", "20"]),  # rows of 8208 bytes: not page-aligned
    "sor": ("sor", ["-n", "1024", "-i", "10"]),
    "gauss": ("gauss", ["-n", "1024", "-i", "10"]),
    "matmul": ("matmul", ["-n", "1013"]),  # rows of 8104 bytes: pages shared by two nodes
    "lu": ("lu", ["-n", "512", "-b", "64"]),
    "fft": ("fft", ["-m", "16"]),
    "radix": ("radix", ["-n", "262144"]),
    "water": ("water", ["-n", "4096", "-s", "2"]),
}
FALSE_SHARING = ["water", "radix", "matmul", "jacobi"]
PREFETCH_GOAL = ["jacobi", "sor", "fft"]
PARTS = [("busy_s", "busy", "tab:green"), ("fault_s", "memory stall", "tab:red"),
         ("sync_s", "synchronization stall", "tab:orange"),
         ("overhead_s", "DSM overhead", "tab:gray"),
         ("prefetch_s", "prefetch overhead", "tab:purple"), ("rest_s", "other", "lightsteelblue")]


def split_other(rec):
    """The prefetch calls' time is inside "other": take it out (node averages)."""
    n = max(len(rec.get("stats", [])), 1)
    pf = rec.get("sum_prefetch_s", 0.0) / n
    other = rec.get("other_s", 0.0)
    rec["prefetch_s"] = min(max(pf, 0.0), max(other, 0.0))
    rec["rest_s"] = other - rec["prefetch_s"]


def find(recs, label, proto, pf):
    for r in recs:
        if r["label"] == label and r["protocol"] == proto and r["prefetch"] == pf:
            return r
    return None


def fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def miss_latency_us(r):
    return dsmrun.per(r, "remote_miss_s", "remote_misses") if r else None


def table(recs, extra, args):
    out = [f"Nodes: {args.nodes}; transport delay {args.delay} us per message; "
           "times in seconds of the timed phase (node 0's clock), breakdowns averaged over "
           "nodes. O = original, P = with --prefetch 1.", "",
           "### lrc against sc", "",
           "| app | sc O | lrc O | sc / lrc | sc P | lrc P | sc P / lrc P | false sharing |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    for lab in APPS:
        so, lo = find(recs, lab, "sc", 0), find(recs, lab, "lrc", 0)
        sp, lp = find(recs, lab, "sc", 1), find(recs, lab, "lrc", 1)
        if not (so or lo):
            continue
        t = lambda r: r["time_s"] if r and r["ok"] else None  # noqa: E731
        out.append(f"| {lab} {' '.join(APPS[lab][1])} | {fmt(t(so))} | {fmt(t(lo))} | "
                   f"{fmt(ratio(t(so), t(lo)), '.2f')} | {fmt(t(sp))} | {fmt(t(lp))} | "
                   f"{fmt(ratio(t(sp), t(lp)), '.2f')} | "
                   f"{'yes' if lab in FALSE_SHARING else ''} |")
    out += ["", "### Seed 001 Figure 2 (lrc): time and breakdown relative to O", "",
            "| app | run | time (s) | rel. O | busy | memory stall | sync stall | DSM overhead "
            "| prefetch overhead | other |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lab in APPS:
        o = find(recs, lab, "lrc", 0)
        for pf in (0, 1):
            r = find(recs, lab, "lrc", pf)
            if not r or not r["ok"] or not o or not o["ok"]:
                continue
            base = o["total_s"] or 1.0
            parts = " | ".join(f"{r.get(k, 0) / base:.3f}" for k, _, _ in PARTS)
            out.append(f"| {lab} | {'P' if pf else 'O'} | {r['time_s']:.3f} | "
                       f"{r['time_s'] / o['time_s']:.2f} | {parts} |")
    out += ["", "### Seed 001 Table 1 (lrc)", "",
            "| app | prefetched pages | unneeded (%) | late | lost | in time | coverage | "
            "misses O | misses P | msgs O | msgs P | MB O | MB P | miss latency O (us) | P (us) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lab in APPS:
        o, p = find(recs, lab, "lrc", 0), find(recs, lab, "lrc", 1)
        if not o or not p:
            continue
        issued = p.get("sum_prefetches", 0)
        unneeded = p.get("sum_prefetch_unneeded", 0)
        asked = issued + unneeded
        late, lost = p.get("sum_prefetch_late", 0), p.get("sum_prefetch_lost", 0)
        mo, mp = o.get("sum_remote_misses", 0), p.get("sum_remote_misses", 0)
        cover = (mo - mp) / mo if mo else None
        mp += late  # a late prefetch is still a miss (seed 001 Table 1)
        out.append(
            f"| {lab} | {issued} | {fmt(100.0 * unneeded / asked if asked else None, '.0f')} | "
            f"{late} | {lost} | {max(issued - late - lost, 0)} | {fmt(cover, '.2f')} | {mo} | "
            f"{mp} | {o.get('sum_msgs', 0)} | {p.get('sum_msgs', 0)} | "
            f"{o.get('sum_bytes', 0) / 1e6:.1f} | {p.get('sum_bytes', 0) / 1e6:.1f} | "
            f"{fmt(miss_latency_us(o), '.0f')} | {fmt(miss_latency_us(p), '.0f')} |")
    out += ["", "prefetched pages: pages a prefetch asked for; unneeded: the share of asked pages "
            "that were valid or already coming (dropped at once); late: prefetched pages a fault "
            "waited for; lost: prefetched pages invalidated before any fault on them; in time: "
            "the rest (an access to a valid page takes no fault, so used and unused pages look "
            "alike); coverage: the share of O's remote misses that P no longer takes; misses P: "
            "P's remote misses plus its late prefetches; miss latency: of the remote misses.", ""]
    out += goals(recs, extra)
    return "\n".join(out) + "\n"


def goals(recs, extra):
    out = ["### Goals", "", "| goal | figure | met |", "|---|---|---|"]

    def ok_time(r):
        return r["time_s"] if r and r["ok"] else None

    for lab in FALSE_SHARING:
        x = ratio(ok_time(find(recs, lab, "sc", 0)), ok_time(find(recs, lab, "lrc", 0)))
        out.append(f"| lrc >= 2x faster than sc: {lab} | {fmt(x, '.2f')}x | "
                   f"{'yes' if x and x >= 2 else 'no'} |")
    for lab in PREFETCH_GOAL:
        o, p = find(recs, lab, "lrc", 0), find(recs, lab, "lrc", 1)
        o = o if o and o["ok"] else None
        p = p if p and p["ok"] else None
        cut = (1 - p["fault_s"] / o["fault_s"]
               if o and p and o.get("fault_s") and p.get("fault_s") is not None else None)
        out.append(f"| prefetch cuts fault stall >= 50 %: {lab} (lrc) | "
                   f"{fmt(None if cut is None else 100 * cut, '.0f')} % "
                   f"({fmt(o and o.get('fault_s'))} -> {fmt(p and p.get('fault_s'))} s) | "
                   f"{'yes' if cut is not None and cut >= 0.5 else 'no'} |")
    lp, mpi = find(recs, "jacobi", "lrc", 1), extra.get("mpi")
    x = ratio(ok_time(lp), ok_time(mpi))
    out.append(f"| Jacobi 1024^2, lrc + prefetch within 1.3x of MPI | {fmt(x, '.2f')}x "
               f"({fmt(ok_time(lp))} s / {fmt(ok_time(mpi))} s) | "
               f"{'yes' if x and x <= 1.3 else 'no'} |")
    base = extra.get("empty")
    for proto in ("sc", "lrc"):
        r = extra.get("outside_" + proto)
        if not r or not base or r["time_s"] is None:
            continue
        outside = r["wall_s"] - r["time_s"] - base["wall_s"]
        out.append(f"| 2-node Jacobi 1024^2 outside the timed phase < 0.2 s ({proto}) | "
                   f"{outside:.2f} s (wall {r['wall_s']:.2f} - timed {r['time_s']:.2f} - "
                   f"an empty run {base['wall_s']:.2f}) | {'yes' if outside < 0.2 else 'no'} |")
    return out + [""]


def plot(recs, out, args):
    plt = dsmrun.pyplot()
    labs = [lab for lab in APPS if find(recs, lab, "lrc", 0) and find(recs, lab, "lrc", 1)]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(labs)), 5))
    x = 0
    ticks, names = [], []
    handles = {}
    top = 1.0
    for lab in labs:
        o = find(recs, lab, "lrc", 0)
        base = o.get("total_s") or 1.0
        for pf in (0, 1):
            r = find(recs, lab, "lrc", pf)
            bottom = 0.0
            for key, name, colour in PARTS:
                v = max(r.get(key, 0.0), 0.0) / base
                h = ax.bar(x, v, bottom=bottom, color=colour, width=0.8)
                handles[name] = h
                bottom += v
            top = max(top, bottom)
            ticks.append(x)
            names.append(f"{lab}\n{'P' if pf else 'O'}")
            x += 1
        x += 0.6
    ax.set_xticks(ticks)
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylabel("time relative to O")
    ax.set_ylim(0, top * 1.05)
    ax.set_title(f"locus-dsm lrc, {args.nodes} nodes, {args.delay} us per message: "
                 "prefetching (seed 001 Figure 2)")
    ax.legend(list(handles.values()), list(handles.keys()), fontsize=7, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    dsmrun.save(fig, out, "fig2.png")


def main(argv=None):
    ap = dsmrun.parser(__doc__, "build/dsm-lrc")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--delay", type=int, default=500, help="microseconds per message (500)")
    ap.add_argument("--protocols", default="sc,lrc")
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--timeout", type=int, default=600)
    a = ap.parse_args(argv)
    apps = a.apps.split(",")
    protos = a.protocols.split(",")
    unknown = [x for x in apps if x not in APPS]
    if unknown or a.nodes < 1 or a.delay < 0 or not set(protos) <= {"sc", "lrc"}:
        ap.error(f"unknown applications {unknown} (known: {', '.join(APPS)})" if unknown
                 else "--nodes must be >= 1, --delay >= 0, --protocols from sc,lrc")
    os.makedirs(a.out, exist_ok=True)
    recs = []
    for lab in apps:
        app, args = APPS[lab]
        for proto in protos:
            for pf in (0, 1):
                env = {"LOCUS_DSM_DELAY_US": str(a.delay), "LOCUS_DSM_PROTOCOL": proto}
                r = dsmrun.run(a.build, app, args + ["--prefetch", str(pf)], a.nodes, env,
                               a.timeout)
                r.update(label=lab, protocol=proto, prefetch=pf)
                split_other(r)
                recs.append(r)
                msg = f"{r['time_s']:.3f} s" if r["time_s"] is not None else f"failed (rc {r['rc']})"
                print(f"[dsm-lrc] {lab:7s} {proto:3s} {'P' if pf else 'O'}: {msg}"
                      f"{'' if r['ok'] else ' NOT VERIFIED'}", flush=True)
                if r["rc"] and r["stderr"]:
                    print(r["stderr"], file=sys.stderr)
    extra = {}
    if "jacobi" in apps:
        extra["mpi"] = dsmrun.run(a.build, "mpi-jacobi", APPS["jacobi"][1], a.nodes, {},
                                  a.timeout)
        print(f"[dsm-lrc] mpi-jacobi: {extra['mpi']['time_s']}", flush=True)
        extra["empty"] = dsmrun.run(a.build, "jacobi", ["-n", "1", "-i", "1"], 2, {}, a.timeout)
        for proto in protos:
            extra["outside_" + proto] = dsmrun.run(
                a.build, "jacobi", APPS["jacobi"][1], 2, {"LOCUS_DSM_PROTOCOL": proto},
                a.timeout)
    dsmrun.write(a.out, "results.json", json.dumps(
        {"delay_us": a.delay, "nodes": a.nodes, "runs": recs, "extra": extra}, indent=1))
    print(dsmrun.write(a.out, "table.md", table(recs, extra, a)))
    if "lrc" in protos:
        plot(recs, a.out, a)
    print(f"[dsm-lrc] wrote {a.out}/table.md, results.json{', fig2.png' if 'lrc' in protos else ''}")
    ok = all(r["ok"] for r in recs) and all(r["ok"] for r in extra.values())
    return 0 if ok else 1

