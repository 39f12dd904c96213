"""Running one locus-dsm application under mpiexec and reading what it prints, and what
the DSM benchmark tools (dsm_suite, dsm_avr, dsm_lrc, dsm_mt) share besides.

An application prints a JSON result line ({"app": ..., "time_s": ..., "ok": ...})
and, with LOCUS_DSM_STATS=json, one JSON line of statistics per node
({"dsm_node": ...}). run() returns one record: the result, every node's
statistics, the node averages of the time breakdown and the sums of the counts.
"""

import argparse
import json
import os
import subprocess
import time

PARTS = ["busy_s", "fault_s", "sync_s", "overhead_s", "other_s"]
AVERAGED = PARTS + ["total_s", "overhead_in_stall_s", "comm_cpu_s"]


def run(build, app, args, nodes, env=None, timeout=600):
    """Run locus-<app> on `nodes` nodes with `args` and extra environment `env`."""
    exe = os.path.join(build, "apps", "locus-" + app)
    full_env = dict(os.environ, LOCUS_DSM_STATS="json")
    full_env.update(env or {})
    cmd = ["mpiexec", "-n", str(nodes), exe] + list(args)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
        out, rc, err = p.stdout, p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, err = -1, f"timed out after {timeout} s"
    rec = {"app": app, "args": list(args), "nodes": nodes, "env": dict(env or {}), "rc": rc,
           "wall_s": time.time() - t0, "ok": False, "time_s": None, "stats": [],
           "stderr": err[-2000:] if rc else ""}
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if "dsm_node" in obj:
            rec["stats"].append(obj)
        elif "app" in obj:
            rec["ok"] = bool(obj.get("ok")) and rc == 0
            rec["time_s"] = obj.get("time_s")
            rec["params"] = obj.get("params")
            rec["threads"] = obj.get("threads", 1)
    if rec["stats"]:
        n = len(rec["stats"])
        for k in AVERAGED:
            rec[k] = sum(s.get(k, 0) for s in rec["stats"]) / n
        counted = set()
        for s in rec["stats"]:
            counted.update(k for k, v in s.items()
                           if k not in AVERAGED and k != "dsm_node" and isinstance(v, (int, float)))
        for k in counted:
            rec["sum_" + k] = sum(s.get(k, 0) for s in rec["stats"])
    return rec


def idle_summary(runs):
    """One sentence on the machine's idle CPUs during the runs (LOCUS_DSM_IDLE_POLL): each run
    is the list of its nodes' statistics (dicts with idle_poll and idle_poll_error). Runs of
    one node are left out (the runtime asks nothing then); None when no run of several nodes
    reported it (a library older than the statistic)."""
    asked = refused = left = 0
    why = {}  # the errors' texts, in the order met
    for nodes in runs:
        nodes = [n for n in nodes or [] if "idle_poll" in n]
        if len(nodes) < 2:
            continue
        if all(n["idle_poll"] for n in nodes):
            asked += 1
            continue
        errors = sorted({n.get("idle_poll_error", 0) for n in nodes} - {0})
        if errors:
            refused += 1
            why.update(dict.fromkeys(os.strerror(e) for e in errors))
        else:
            left += 1
    total = asked + refused + left
    if not total:
        return None
    runs_text = f"{total} run{'s' if total != 1 else ''} of several nodes"
    if asked == total:
        return (f"Idle CPUs: asked to poll instead of halting in every one of the {runs_text} "
                "(LOCUS_DSM_IDLE_POLL).")
    parts = []
    if asked:
        parts.append(f"asked to poll in {asked}")
    if refused:
        parts.append(f"not asked in {refused} (/dev/cpu_dma_latency: {', '.join(why)}; "
                     "see LOCUS_DSM_IDLE_POLL in locus_dsm(3))")
    if left:
        parts.append(f"left to the kernel in {left} (LOCUS_DSM_IDLE_POLL=0)")
    return f"Idle CPUs, over the {runs_text}: " + "; ".join(parts) + "."


def per(rec, seconds_key, count_key):
    """Microseconds per event, over every node: sum of seconds / sum of counts (0 if none)."""
    n = rec.get("sum_" + count_key, 0)
    return rec.get("sum_" + seconds_key, 0) / n * 1e6 if n else 0.0


def parser(doc, out):
    """A tool's option parser, described by the first line of its doc, with the options
    every DSM tool starts with: --build (whose apps/ it runs) and --out (where it writes)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--out", default=out)
    return ap


def write(out, name, text):
    """Writes text to out/name; returns it."""
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
    return text


def pyplot():
    """matplotlib's pyplot drawing into files; imported only when a tool draws."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, out, name):
    """Writes a figure to out/name at the tools' resolution and closes it."""
    fig.savefig(os.path.join(out, name), dpi=90)
    pyplot().close(fig)
