"""memcached-preload: Debian's unmodified memcached, its original pthread mutexes
against each locus lock swapped in with LD_PRELOAD=liblocus-preload.so, under
memcaslap load with 10% and 30% sets; and the profiler's top five mutexes.

Seed 003 asked (its Figure 2) how memcached does when its locks are swapped
for others, and changed memcached's source to find out; this asks the same of
the binary Debian ships. Every configuration runs in the same invocation,
interleaved round by round, and is reported as a ratio to the original
mutexes of the same round: absolute numbers on a shared 2-core machine move
by tens of percent between runs. A figure, not a test.

  bench/memcached-preload [--duration S] [--locks LIST] [--threads N]
                          [--sets 10,30] [--clients T] [--concurrency C]
                          [--rounds R] [--preload SO] [--json FILE]

"original+profile" is the original mutexes with LOCUS_PROFILE=1: its ratio is
the profiler's overhead on memcached, and its profile gives the top five.
Needs memcached and libmemcached-tools (memcaslap). Standard library only.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from . import memcaslap, server
from .bench import REPO
from .memcaslap import KEY_SIZE, VALUE_SIZE

DEFAULT_PRELOAD = os.path.join(REPO, "build/release/src/preload/liblocus-preload.so")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_point(args, tmp, lock, set_share, profile):
    """One memcached, one memcaslap run: (ops/s, profile or None)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCUS_")}
    env["LD_PRELOAD"] = args.preload
    if lock != "original":
        env["LOCUS_LOCK"] = lock
    prof_path = os.path.join(tmp, "profile.json")
    if os.path.exists(prof_path):
        os.unlink(prof_path)
    if profile:
        env["LOCUS_PROFILE"] = prof_path
        env["LOCUS_PROFILE_TOP"] = "5"
    cfg = memcaslap.write_config(os.path.join(tmp, f"cfg{set_share}"), set_share)
    try:
        srv = server.start(args.memcached, ["-t", str(args.threads), "-m", str(args.memory),
                                            "-c", "4096"],
                           memcached=True, env=env, log=os.path.join(tmp, "memcached.log"))
    except server.ServerError as e:
        sys.exit(f"memcached did not start: {e.output}")
    try:
        slap = subprocess.run([args.memcaslap, "-s", f"{server.HOST}:{srv.port}", "-F", cfg,
                               "-t", f"{args.duration}s", "-T", str(args.clients), "-c", str(args.concurrency)],
                              capture_output=True, text=True, timeout=args.duration + 60)
    finally:
        srv.stop()
    out = srv.output()
    if "locus-preload: unknown lock" in out or "locus-preload: bad option" in out:
        sys.exit(f"LOCUS_LOCK={lock}: {out.strip()}")
    tps = memcaslap.parse(slap.stdout)["tps"]
    if slap.returncode != 0 or tps is None:
        sys.exit(f"memcaslap failed for {lock}:\n{slap.stdout}\n{slap.stderr}")
    prof = None
    if profile:
        with open(prof_path) as f:
            prof = json.load(f)
    return tps, prof


def describe(m):
    w = m["first_locked_at"]
    at = f"{w['symbol']}+{w['offset']:#x}" if w["symbol"] else f"{os.path.basename(w['object'] or '?')}+{w['offset']:#x}"
    mu = m["mutex"]
    if not mu:
        where = "destroyed"
    elif mu["object"]:
        where = mu["symbol"] or f"{os.path.basename(mu['object'])}+{mu['offset']:#x}"
    else:
        where = "heap"
    return at, where


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10, help="seconds of memcaslap per point (10)")
    ap.add_argument("--locks", default="tas,ttas,ticket,mcs,clh,futex",
                    help="LOCUS_LOCK specs, comma-separated; use ';' between specs that have options")
    ap.add_argument("--threads", type=int, default=4, help="memcached -t (4)")
    ap.add_argument("--memory", type=int, default=256, help="memcached -m, MB (256)")
    ap.add_argument("--sets", default="10,30", help="percent of sets, comma-separated (10,30)")
    ap.add_argument("--clients", type=int, default=2, help="memcaslap -T threads (2)")
    ap.add_argument("--concurrency", type=int, default=64, help="memcaslap -c (64)")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds; the median is reported (1)")
    ap.add_argument("--no-profile", action="store_true", help="skip the original+profile runs")
    ap.add_argument("--preload", default=DEFAULT_PRELOAD)
    ap.add_argument("--json", help="also write the results here (JSON)")
    args = ap.parse_args(argv)

    args.memcached = shutil.which("memcached")
    args.memcaslap = shutil.which("memcaslap")
    if not args.memcached or not args.memcaslap:
        sys.exit("needs memcached and memcaslap (Debian: apt-get install memcached libmemcached-tools)")
    if not os.path.exists(args.preload):
        sys.exit(f"no {args.preload}: build it (make build)")
    args.preload = os.path.abspath(args.preload)
    sep = ";" if ";" in args.locks else ","
    locks = [l for l in args.locks.split(sep) if l]
    sets = [int(s) for s in args.sets.split(",")]
    configs = ["original"] + ([] if args.no_profile else ["original+profile"]) + locks
    version = subprocess.run([args.memcached, "-V"], capture_output=True, text=True).stdout.strip()

    results = {s: {c: [] for c in configs} for s in sets}
    ratios = {s: {c: [] for c in configs} for s in sets}
    profiles = {}
    total = len(sets) * len(configs) * args.rounds
    done = 0
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for s in sets:
                base = None
                for c in configs:
                    lock = "original" if c.startswith("original") else c
                    tps, prof = run_point(args, tmp, lock, s, c == "original+profile")
                    done += 1
                    if c == "original":
                        base = tps
                    results[s][c].append(tps)
                    ratios[s][c].append(tps / base)
                    if prof:
                        profiles[s] = prof
                    log(f"[{done}/{total}] round {r + 1}, {s}% sets, {c}: {tps} ops/s ({tps / base:.2f})")

    print(f"memcached-preload: {version} (Debian, unmodified) -t {args.threads} -m {args.memory}; "
          f"memcaslap -T {args.clients} -c {args.concurrency}, {KEY_SIZE}-byte keys, {VALUE_SIZE}-byte values; "
          f"{args.duration} s per point, {args.rounds} round(s), median; {os.cpu_count()} CPUs")
    print("ratio: ops/s over the original mutexes' in the same round")
    print()
    head = f"{'lock':<18}" + "".join(f"{f'{s}% sets ops/s':>18}{'ratio':>8}" for s in sets)
    print(head)
    for c in configs:
        row = f"{c:<18}"
        for s in sets:
            row += f"{statistics.median(results[s][c]):>18.0f}{statistics.median(ratios[s][c]):>8.2f}"
        print(row)
    for s in sets:
        prof = profiles.get(s)
        if not prof:
            continue
        print()
        print(f"profile of the original mutexes, {s}% sets: {prof['mutexes_used']} mutexes used, "
              f"{prof['mutexes_contended']} contended; top five by contended acquisitions")
        print(f"{'#':>6} {'locked':>10} {'changed':>9} {'cont.':>8} {'wait ms':>9} {'avg us':>8} {'p99 us':>8} "
              f"{'hold ms':>9}  {'type':<10} first locked at / mutex")
        for m in prof["mutexes"][:5]:
            at, where = describe(m)
            print(f"{m['id']:>6} {m['acquisitions']:>10} {m['owner_changes']:>9} {m['contended']:>8} "
                  f"{m['wait_ns']['total'] / 1e6:>9.2f} {m['wait_ns']['avg'] / 1e3:>8.2f} "
                  f"{m['wait_ns']['p99'] / 1e3:>8.2f} {m['hold_ns']['total'] / 1e6:>9.2f}  {m['type']:<10} "
                  f"{at} / {where}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"memcached": version, "args": {k: v for k, v in vars(args).items()},
                       "ops_per_s": {str(s): results[s] for s in sets},
                       "ratio": {str(s): ratios[s] for s in sets},
                       "profiles": {str(s): p for s, p in profiles.items()}}, f, indent=1)

