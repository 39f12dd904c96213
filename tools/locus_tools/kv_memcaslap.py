"""kv-memcaslap: locus-kv against Debian's memcached under the same memcaslap load.

Both servers get the same -t, -m and -c; memcaslap the same key and value sizes (64 and
1024 bytes, its seed-experiment defaults), -T threads and -c concurrency, at each share of
sets (10,20,25,30 %). Every --sync SPEC is one more locus-kv configuration. A round runs
every server once per share, in alternating order (memcached first in odd rounds, last in
even ones) so that drift on a shared machine hits both sides alike; each server starts
fresh for each run. Reported: the median ops/s over the rounds, and the median of the
per-round ratios locus-kv/memcached; then the fastest --sync at 30 % sets (or the highest
share asked for).

memcaslap's output is checked: a nonzero exit, a missing TPS line, verify misses or
failures (with --verify) and anything on its stderr are reported, and make the exit status
1. So is a server whose own counters, read after each run, show it stored nothing or that
most gets missed. (memcaslap's "get_misses" alone are not a problem: it also gets keys it
has not set yet, against either server.)

--client locus-kv-load runs bench/kv_load.c's locus-kv-load instead of memcaslap (the same
-T, -c, key and value sizes and shares of sets, over --keys keys, every key stored once before
each timed run; memcaslap also gets keys it has not set). It is the client that speaks TLS:
--tls starts both servers with -Z and a certificate this script makes with the openssl
command, and locus-kv-load verifies the servers against it. The server's CPU time is then
counted over the timed run alone (after the keys are stored).

--capable runs memccapable -a (the text-protocol conformance checks of libmemcached-tools)
against each server instead, and prints each server's failures and summary.

If --locus-kv is itself a memcached (its -V says so), it is run without --sync: each
--sync configuration is then plain memcached again, which checks this script, not locus-kv.

  bench/kv-memcaslap [--duration S] [--rounds R] [--threads N] [--memory MB]
                     [--clients T] [--concurrency C] [--ratios 10,20,25,30]
                     [--sync SPEC]... [--verify P] [--json FILE]
                     [--client memcaslap|locus-kv-load] [--tls] [--keys N]
                     [--locus-kv PATH] [--memcached PATH] [--memcaslap PATH]
                     [--locus-kv-load PATH] [--capable]

Needs memcached and libmemcached-tools (memcaslap, memccapable); --client locus-kv-load
needs it built (make release), --tls the openssl command. Standard library only.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from . import kvload, memcaslap, server
from .bench import REPO
from .memcaslap import KEY_SIZE, VALUE_SIZE

DEFAULT_LOCUS_KV = os.path.join(REPO, "build/release/src/kv/locus-kv")
DEFAULT_MEMCACHED = "/usr/bin/memcached"
HOST = server.HOST
CAPABLE_LINE = re.compile(r"^(\S.*?)\s+\[(pass|fail|skip)\]\s*$", re.M)


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- parsing (tested)

def parse_capable(stdout):
    """memccapable's results: ({test name: pass|fail|skip}, summary line or '')."""
    results = {name.strip(): state for name, state in CAPABLE_LINE.findall(stdout)}
    summary = ""
    for line in stdout.splitlines():
        if line.strip() and not CAPABLE_LINE.match(line):
            summary = line.strip()
    return results, summary


def parse_ratios(text):
    try:
        ratios = [int(r) for r in text.split(",") if r.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--ratios wants comma-separated whole percentages, not {text!r}")
    if not ratios or any(not 0 <= r <= 100 for r in ratios):
        raise argparse.ArgumentTypeError(f"--ratios wants percentages from 0 to 100, not {text!r}")
    return ratios


def spread_table(results, ratios, configs, cpu=None):
    """{ratio: {config: (lowest, highest paired ratio to memcached, lowest, highest server CPU
    microseconds per operation)}}, None where there is nothing."""
    table = {}
    for r in ratios:
        base = results[r]["memcached"]
        row = {}
        for c in configs:
            paired = [o / b for o, b in zip(results[r][c], base) if b]
            per_op = (cpu or {}).get(r, {}).get(c) or []
            row[c] = (min(paired) if paired else None, max(paired) if paired else None,
                      min(per_op) if per_op else None, max(per_op) if per_op else None)
        table[r] = row
    return table


def median_table(results, ratios, configs, cpu=None):
    """{ratio: {config: (median ops/s, median paired ratio to memcached, median server CPU
    microseconds per operation or None)}}."""
    table = {}
    for r in ratios:
        base = results[r]["memcached"]
        row = {}
        for c in configs:
            ops = results[r][c]
            paired = [o / b for o, b in zip(ops, base) if b]
            per_op = (cpu or {}).get(r, {}).get(c) or []
            row[c] = (statistics.median(ops) if ops else None,
                      statistics.median(paired) if paired else None,
                      statistics.median(per_op) if per_op else None)
        table[r] = row
    return table


def _median_and_range(median, lo, hi):
    if median is None:
        return "-"
    if lo is None or hi is None:
        return f"{median:.2f}"
    return f"{median:.2f} ({lo:.2f}-{hi:.2f})"


def format_table(table, ratios, configs, names, spread=None):
    """The medians; with spread (spread_table), each ratio and CPU time followed by its
    range over the rounds."""
    lines = []
    width = max(len(names[c]) for c in configs) + 2
    rw, cw = (24, 24) if spread else (14, 18)
    lines.append(f"{'sets':>5}  {'server':<{width}}{'ops/s':>12}{'vs memcached':>{rw}}"
                 f"{'server CPU us/op':>{cw}}")
    for r in ratios:
        for i, c in enumerate(configs):
            ops, ratio, per_op = (tuple(table[r][c]) + (None,))[:3]
            lo_r, hi_r, lo_c, hi_c = spread[r][c] if spread else (None,) * 4
            ops_s = f"{ops:>12.0f}" if ops is not None else f"{'-':>12}"
            ratio_s = f"{_median_and_range(ratio, lo_r, hi_r):>{rw}}"
            cpu_s = f"{_median_and_range(per_op, lo_c, hi_c):>{cw}}"
            lines.append(f"{(str(r) + '%') if i == 0 else '':>5}  {names[c]:<{width}}{ops_s}{ratio_s}"
                         f"{cpu_s}")
    return "\n".join(lines)


def fastest(table, ratios, locus_configs):
    """(share of sets used, config, ratio) of the fastest locus-kv configuration at 30 %
    sets, or at the highest share measured if 30 is not among them."""
    r = 30 if 30 in ratios else max(ratios)
    scored = [(table[r][c][1], c) for c in locus_configs if table[r][c][1] is not None]
    if not scored:
        return r, None, None
    ratio, c = max(scored)
    return r, c, ratio


# ---------------------------------------------------------------- servers

def version_of(path):
    try:
        r = subprocess.run([path, "-V"], capture_output=True, text=True, timeout=20)
    except OSError as e:
        raise BenchError(f"cannot run {path}: {e}")
    return (r.stdout + r.stderr).strip().splitlines()[0] if (r.stdout + r.stderr).strip() else "?"


class Server:
    """One server configuration, started afresh for each run."""

    def __init__(self, path, is_memcached, args, logdir):
        self.path, self.is_memcached, self.args = path, is_memcached, args
        self.logpath = os.path.join(logdir, "server.log")

    def start(self):
        """The running server (a server.Server); BenchError with its output if it did not start."""
        try:
            return server.start(self.path, self.args, memcached=self.is_memcached, log=self.logpath)
        except server.ServerError as e:
            out = e.output.strip()
            if "in use" in out.lower():
                raise BenchError(f"{self.path} found no free port") from None
            raise BenchError(f"{' '.join(e.argv)} did not start (status {e.status}):\n{out}") from None


# ---------------------------------------------------------------- runs

def server_problems(stats, share):
    """What the server's own counters say went wrong in a run (empty: nothing)."""
    if not stats:
        return ["server's stats unreadable after the run"]
    problems = []
    if share > 0 and stats.get("cmd_set", 0) == 0:
        problems.append("the server stored nothing (cmd_set 0)")
    gets = stats.get("cmd_get", 0)
    if share < 100 and gets and stats.get("get_hits", 0) < gets / 2:
        problems.append(f"only {stats.get('get_hits', 0)} of {gets} gets hit on the server")
    return problems


def run_load(args, srv, share):
    """locus-kv-load against a started server: every key stored, then the timed run.
    (report, returncode, stderr, the server's CPU seconds over the timed run or None)."""
    opts = dict(sets_pct=share, threads=args.clients, connections=args.concurrency,
                keys=args.keys, key_size=KEY_SIZE, value_size=VALUE_SIZE, tls=args.tls_ca)
    pre = subprocess.run(kvload.command(args.locus_kv_load, HOST, srv.port, prefill="only", **opts),
                         capture_output=True, text=True, timeout=120)
    if pre.returncode != 0:
        return kvload.parse(pre.stdout), pre.returncode, pre.stderr, None
    cpu0 = server.cpu_seconds(srv.pid)
    try:
        run = subprocess.run(kvload.command(args.locus_kv_load, HOST, srv.port, prefill="none",
                                            duration=args.duration, **opts),
                             capture_output=True, text=True, timeout=args.duration + 60)
        rc, stdout, stderr = run.returncode, run.stdout, run.stderr
    except subprocess.TimeoutExpired:
        rc, stdout, stderr = "timeout", "", "locus-kv-load did not finish"
    cpu1 = server.cpu_seconds(srv.pid)
    cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    return kvload.parse(stdout), rc, stderr, cpu


def run_point(args, tmp, config, share):
    """One fresh server, one memcaslap (or locus-kv-load) run: (parsed output, problems).
    The parsed output also carries the server's own counters and its CPU time
    (server_cpu_s)."""
    srv = config.start()
    if args.tls_ca:
        srv.tls_context = kvload.client_context(args.tls_ca)
    stats, cpu = {}, None
    if args.client == "locus-kv-load":
        try:
            report, rc, stderr, cpu = run_load(args, srv, share)
            stats = server.numbers(srv.stats())
        finally:
            status = srv.stop(seconds=20)
        parsed = {"tps": report.get("ops_per_s"), "ops": report.get("ops"),
                  "run_s": report.get("seconds"), "load": report}
        if parsed["tps"] is not None:
            parsed["tps"] = int(round(parsed["tps"]))
        problems = kvload.problems(report, rc if rc != "timeout" else 1, stderr)
        return with_server(parsed, problems, srv, stats, cpu, status, share)
    try:
        cfg = memcaslap.write_config(os.path.join(tmp, f"memcaslap-{share}.cfg"), share)
        cmd = [args.memcaslap, "-s", f"{HOST}:{srv.port}", "-F", cfg,
               "-t", f"{args.duration}s", "-T", str(args.clients), "-c", str(args.concurrency)]
        if args.verify:
            cmd += ["-v", str(args.verify)]
        try:
            slap = subprocess.run(cmd, capture_output=True, text=True, timeout=args.duration + 60)
            rc, stdout, stderr = slap.returncode, slap.stdout, slap.stderr
        except subprocess.TimeoutExpired as e:
            rc, stdout, stderr = "timeout", e.stdout or "", "memcaslap did not finish"
            if isinstance(stdout, bytes):
                stdout = stdout.decode(errors="replace")
        stats = server.numbers(srv.stats())
        cpu = server.cpu_seconds(srv.pid)
    finally:
        status = srv.stop(seconds=20)
    parsed = memcaslap.parse(stdout)
    problems = memcaslap.problems(parsed, rc if rc != "timeout" else 1, stderr)
    return with_server(parsed, problems, srv, stats, cpu, status, share)


def with_server(parsed, problems, srv, stats, cpu, status, share):
    """A client's parsed output and problems, with the server's counters, its CPU time and
    what its counters and exit status say is wrong."""
    problems = problems + server_problems(stats, share)
    parsed["server_stats"] = {k: stats[k] for k in ("cmd_get", "cmd_set", "get_hits", "get_misses",
                                                  "curr_items", "evictions") if k in stats}
    parsed["server_cpu_s"] = cpu
    if status != 0:
        problems.append(f"server exit status {status} after SIGTERM: {srv.output().strip()[-300:]}")
    return parsed, problems


def run_capable(args, tmp, servers, names):
    failed_any = False
    for c, config in servers.items():
        srv = config.start()
        try:
            r = subprocess.run([args.memccapable, "-a", "-h", HOST, "-p", str(srv.port)],
                               capture_output=True, text=True, timeout=300)
        finally:
            srv.stop(seconds=20)
        results, summary = parse_capable(r.stdout + r.stderr)
        fails = [n for n, s in results.items() if s == "fail"]
        passed = sum(s == "pass" for s in results.values())
        print(f"{names[c]}: {passed}/{len(results)} passed, {len(fails)} failed, "
              f"{sum(s == 'skip' for s in results.values())} skipped (memccapable exit {r.returncode}): "
              f"{summary or 'no summary line'}")
        for n in fails:
            print(f"  fail: {n}")
        if not results:
            print("  memccapable printed no results:\n  " + (r.stdout + r.stderr).strip()[:500])
        failed_any |= bool(fails) or r.returncode != 0 or not results
    return 1 if failed_any else 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="kv-memcaslap", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10, help="seconds of each timed run of memcaslap or locus-kv-load (10)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="paired rounds, alternating which server goes first; medians reported (3)")
    ap.add_argument("--threads", type=int, default=4, help="server -t, both servers (4)")
    ap.add_argument("--memory", type=int, default=256, help="server -m in MB, both servers (256)")
    ap.add_argument("--maxconns", type=int, default=4096, help="server -c, both servers (4096)")
    ap.add_argument("--clients", type=int, default=2, help="memcaslap (or locus-kv-load) -T threads (2)")
    ap.add_argument("--concurrency", type=int, default=64,
                    help="memcaslap (or locus-kv-load) -c connections (64)")
    ap.add_argument("--ratios", type=parse_ratios, default=[10, 20, 25, 30],
                    help="percent of sets, comma-separated (10,20,25,30)")
    ap.add_argument("--sync", action="append", default=[], metavar="SPEC",
                    help="a locus-kv --sync configuration to compare; repeatable. Without any, "
                         "locus-kv runs with its default")
    ap.add_argument("--verify", type=float, default=0.0,
                    help="memcaslap -v: share of gets whose value is verified (0: none)")
    ap.add_argument("--json", metavar="FILE", help="also write every run's numbers here")
    ap.add_argument("--locus-kv", default=DEFAULT_LOCUS_KV, help=f"(default {DEFAULT_LOCUS_KV})")
    ap.add_argument("--memcached", default=DEFAULT_MEMCACHED, help=f"(default {DEFAULT_MEMCACHED})")
    ap.add_argument("--memcaslap", default=shutil.which("memcaslap") or "memcaslap")
    ap.add_argument("--memccapable", default=shutil.which("memccapable") or "memccapable")
    ap.add_argument("--client", choices=["memcaslap", "locus-kv-load"], default="memcaslap",
                    help="the load generator: memcaslap (default) or locus-kv-load (bench/kv_load.c, "
                         "which also speaks TLS)")
    ap.add_argument("--tls", action="store_true",
                    help="both servers with TLS on (-Z, a certificate made here with openssl), "
                         "locus-kv-load verifying it; needs --client locus-kv-load")
    ap.add_argument("--keys", type=int, default=10000,
                    help="locus-kv-load: distinct keys, each stored once before a timed run (10000)")
    ap.add_argument("--locus-kv-load", default=kvload.DEFAULT_PATH,
                    help=f"(default {kvload.DEFAULT_PATH})")
    ap.add_argument("--capable", action="store_true",
                    help="run memccapable -a against each server instead of measuring")
    args = ap.parse_args(argv)
    for name in ("duration", "rounds", "threads", "memory", "clients", "concurrency", "maxconns", "keys"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1")
    if not 0 <= args.verify <= 1:
        ap.error("--verify is a proportion from 0 to 1")
    if args.tls and args.client != "locus-kv-load":
        ap.error("--tls needs --client locus-kv-load (memcaslap has no TLS)")
    if args.tls and args.capable:
        ap.error("--capable runs memccapable, which has no TLS: not with --tls")
    if args.client == "locus-kv-load" and args.verify:
        ap.error("--verify is memcaslap's: locus-kv-load checks each value's length")
    tool = args.memccapable if args.capable else args.memcaslap
    if args.client == "locus-kv-load" and not args.capable:
        if not os.path.exists(args.locus_kv_load):
            ap.error(f"--locus-kv-load {args.locus_kv_load} does not exist (make release builds it)")
    elif not shutil.which(tool):
        ap.error(f"{tool} not found (Debian: apt-get install libmemcached-tools)")
    if args.tls and not shutil.which("openssl"):
        ap.error("--tls needs the openssl command to make the servers' certificate")
    for path, opt in ((args.locus_kv, "--locus-kv"), (args.memcached, "--memcached")):
        if not os.path.exists(path):
            ap.error(f"{opt} {path} does not exist" + (" (make release builds it)" if opt == "--locus-kv" else ""))

    try:
        return measure(args)
    except BenchError as e:
        log(f"kv-memcaslap: {e}")
        return 2


def measure(args):
    mc_version = version_of(args.memcached)
    kv_version = version_of(args.locus_kv)
    stand_in = kv_version.startswith("memcached")
    if stand_in and args.sync:
        log(f"kv-memcaslap: {args.locus_kv} is {kv_version}, not locus-kv: --sync is not passed "
            f"to it, so every configuration is plain memcached")
    common = ["-t", str(args.threads), "-m", str(args.memory), "-c", str(args.maxconns)]
    specs = args.sync or [None]
    configs = ["memcached"] + [f"locus-kv:{s}" if s else "locus-kv" for s in specs]
    names = {"memcached": "memcached"}
    for s, c in zip(specs, configs[1:]):
        names[c] = f"locus-kv --sync {s}" if s else "locus-kv"

    with tempfile.TemporaryDirectory() as tmp:
        args.tls_ca = None
        if args.tls:
            pem, key = kvload.make_certificate(tmp)
            common = common + kvload.server_args(pem, key)
            args.tls_ca = pem
        servers = {"memcached": Server(args.memcached, True, common, tmp)}
        for s, c in zip(specs, configs[1:]):
            extra = ["--sync", s] if s and not stand_in else []
            servers[c] = Server(args.locus_kv, stand_in, common + extra, tmp)
        if args.capable:
            print(f"kv-memcaslap --capable: memccapable -a against memcached = {mc_version} and "
                  f"locus-kv = {kv_version}" + (" (a stand-in: --sync not passed)" if stand_in else ""))
            return run_capable(args, tmp, servers, names)

        results = {r: {c: [] for c in configs} for r in args.ratios}
        cpu_per_op = {r: {c: [] for c in configs} for r in args.ratios}
        runs = []
        problems = []
        total = len(args.ratios) * len(configs) * args.rounds
        done = 0
        for rnd in range(args.rounds):
            order = configs if rnd % 2 == 0 else configs[::-1]
            for r in args.ratios:
                for c in order:
                    parsed, probs = run_point(args, tmp, servers[c], r)
                    done += 1
                    runs.append({"round": rnd + 1, "sets_pct": r, "server": names[c], **parsed,
                                 "problems": probs})
                    if parsed["tps"] is not None:
                        results[r][c].append(parsed["tps"])
                        if parsed.get("server_cpu_s") is not None and parsed.get("ops"):
                            cpu_per_op[r][c].append(parsed["server_cpu_s"] * 1e6 / parsed["ops"])
                    for p in probs:
                        problems.append(f"round {rnd + 1}, {r}% sets, {names[c]}: {p}")
                    log(f"[{done}/{total}] round {rnd + 1}, {r}% sets, {names[c]}: "
                        f"{parsed['tps'] if parsed['tps'] is not None else '-'} ops/s"
                        + (f" ({'; '.join(probs)})" if probs else ""))

    for r in args.ratios:
        if not results[r]["memcached"]:
            problems.append(f"{r}% sets: no memcached result to compare with")
    table = median_table(results, args.ratios, configs, cpu_per_op)
    spread = spread_table(results, args.ratios, configs, cpu_per_op)
    print(f"kv-memcaslap: {names['memcached']} = {mc_version}, locus-kv = {kv_version}"
          + (" (a stand-in: --sync not passed)" if stand_in else ""))
    client = args.client + (f" over {args.keys} keys, each stored first" if args.client != "memcaslap" else "")
    print(f"servers -t {args.threads} -m {args.memory} -c {args.maxconns}" + (", TLS on (-Z)" if args.tls else "")
          + f"; {client} -T {args.clients} -c {args.concurrency}" + (" over TLS" if args.tls else "")
          + f", {KEY_SIZE}-byte keys, {VALUE_SIZE}-byte values"
          + (f", verify {args.verify}" if args.verify else "")
          + f"; {args.duration} s per run, {args.rounds} round(s), medians; {os.cpu_count()} CPUs")
    print("vs memcached: median over the rounds of ops/s over memcached's ops/s in the same round,")
    print("(lowest-highest round); server CPU us/op: the server's user+system CPU time over the")
    print(f"operations {args.client} counted" + (" (the timed run's CPU time alone)" if args.client != "memcaslap" else ""))
    print()
    print(format_table(table, args.ratios, configs, names, spread))
    print()
    share, best, ratio = fastest(table, args.ratios, configs[1:])
    if best is None:
        print(f"fastest at {share}% sets: none measured")
    else:
        print(f"fastest locus-kv configuration at {share}% sets: {names[best]} ({ratio:.2f} x memcached)")
    if problems:
        print()
        print(f"problems ({len(problems)}):")
        for p in problems:
            print(f"  {p}")
    else:
        print(f"{args.client} reported no errors" + (" or verify failures" if args.verify else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"memcached": mc_version, "locus_kv": kv_version, "stand_in": stand_in,
                       "args": {k: v for k, v in vars(args).items()},
                       "configs": {c: names[c] for c in configs},
                       "ops_per_s": {str(r): {names[c]: results[r][c] for c in configs} for r in args.ratios},
                       "median": {str(r): {names[c]: {"ops_per_s": table[r][c][0], "vs_memcached": table[r][c][1],
                                                      "server_cpu_us_per_op": table[r][c][2],
                                                      "vs_memcached_range": spread[r][c][:2],
                                                      "server_cpu_us_per_op_range": spread[r][c][2:]}
                                           for c in configs} for r in args.ratios},
                       "fastest": {"sets_pct": share, "config": names.get(best), "vs_memcached": ratio},
                       "runs": runs, "problems": problems}, f, indent=1)
    return 1 if problems else 0

