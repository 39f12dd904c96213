#!/usr/bin/env python3
"""Runs programs under LD_PRELOAD=liblocus-preload.so and checks what they did and
what the profile says. Standard library only; ctest runs one lock per test.

  preload_driver.py prog --preload SO --prog PRELOAD_PROG --lock SPEC
      SPEC is a lock spec, "mutex" (the original, by name), "profile-only"
      (no LOCUS_LOCK) or an unknown name (must be reported, then run as original).
  preload_driver.py memcached --preload SO --lock SPEC|original
      Debian's memcached: memccapable -a, a short memcaslap load, the profile.
      Exits 77 (skip) if memcached or libmemcached-tools is missing.

Every child runs under a timeout; the memcached server is always killed.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from locus_tools import memcaslap, server  # noqa: E402

KINDS = ["tas", "ttas", "ticket", "mcs", "clh", "futex"]
TOP_LIMIT = 65536  # LP_TOP_LIMIT: the most rows LOCUS_PROFILE_TOP may ask for
SKIP = 77


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def base_env(preload, spec, profile=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCUS_")}
    env["LD_PRELOAD"] = preload
    if spec not in ("profile-only", "original"):
        env["LOCUS_LOCK"] = spec
    if profile:
        env["LOCUS_PROFILE"] = profile
        env["LOCUS_PROFILE_TOP"] = "100"
    return env


def expected_lock(spec):
    """(lock name in the profile, replaced?) for a spec."""
    name = spec.split(":")[0]
    if name in KINDS:
        return name, True
    return "pthread", False


def check_numbers(m, what):
    w, h = m["wait_ns"], m["hold_ns"]
    check(m["contended"] <= m["acquisitions"], f"{what}: contended > acquisitions")
    check(m["owner_changes"] < m["acquisitions"], f"{what}: owner changes >= acquisitions")
    check(w["avg"] <= w["max"] and w["p99"] <= w["max"], f"{what}: wait avg/p99 above max: {w}")
    check(w["max"] <= w["total"], f"{what}: wait max above total: {w}")
    check(h["avg"] <= h["max"] <= h["total"], f"{what}: hold avg <= max <= total fails: {h}")
    if m["contended"] == 0:
        check(w["total"] == 0, f"{what}: waited without contention")


def in_order(a, b):
    """Whether row a may come before row b: most contended first, then most waited, then
    most used, then by id. Waits are ticks rounded to ns, so rows with the same rounded
    wait may be in either order unless both are uncontended (then both waited 0 ticks)."""
    if a["contended"] != b["contended"]:
        return a["contended"] > b["contended"]
    wa, wb = a["wait_ns"]["total"], b["wait_ns"]["total"]
    if wa != wb:
        return wa > wb
    if a["contended"]:
        return True
    return (-a["acquisitions"], a["id"]) < (-b["acquisitions"], b["id"])


def check_order(profile, what):
    rows = profile["mutexes"]
    bad = [i for i in range(1, len(rows)) if not in_order(rows[i - 1], rows[i])]
    check(not bad, f"{what}: rows out of order at {bad[:5]}")


def find_by_symbol(profile, symbol):
    for m in profile["mutexes"]:
        if (m["first_locked_at"] or {}).get("symbol") == symbol:
            return m
    raise Failure(f"no mutex first locked in {symbol} in the profile: "
                  + ", ".join(str((m["first_locked_at"] or {}).get("symbol")) for m in profile["mutexes"]))


# ---- the test program -------------------------------------------------------

PARTS = ["early", "counter", "many_threads", "producer_consumer", "timed_waits",
         "trylock_timedlock", "recursive_errorcheck", "lifecycle", "fork"]


def prog_args(spec):
    # A spinning waiter that outnumbers the cores waits out preempted holders:
    # slow, not wrong. Keep spinning policies at one worker per CPU.
    if re.search(r"[:,]spin(,|$)", spec):
        return {"threads": 2, "iters": 5000, "many": 3, "items": 300}
    if spec.startswith("clh"):
        return {"threads": 4, "iters": 3000, "many": 32, "items": 3000}
    return {"threads": 4, "iters": 20000, "many": 32, "items": 5000}


def run_prog(args, spec, profile):
    a = prog_args(spec)
    cmd = [args.prog] + [x for k, v in a.items() for x in (f"--{k}", str(v))]
    env = base_env(args.preload, spec, profile)
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired as e:
        raise Failure(f"{' '.join(cmd)} hung (LOCUS_LOCK={spec}); output so far: {e.stdout}")
    took = time.monotonic() - start
    print(f"  {spec}{' profiled' if profile else ''}: exit {p.returncode} in {took:.2f} s")
    sys.stdout.write("".join("    " + l + "\n" for l in p.stdout.splitlines() if not l.startswith("ok ")))
    check(p.returncode == 0, f"exit status {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    for part in PARTS:
        check(f"ok {part}\n" in p.stdout, f"part {part} did not pass:\n{p.stdout}")
    check(p.stdout.rstrip().endswith("all ok"), f"no 'all ok':\n{p.stdout}")
    return p, a


def check_stderr_lock(spec, stderr):
    said = [l for l in stderr.splitlines() if l.startswith("locus-preload:") and "LOCUS_LOCK" in l]
    name = spec.split(":")[0]
    if name in KINDS or spec in ("mutex", "profile-only"):
        check(not said, f"unexpected message for LOCUS_LOCK={spec}: {said}")
        return
    check(len(said) == 1, f"expected one line naming the known locks, got {said}")
    line = said[0]
    check(f"unknown lock '{spec}'" in line, f"does not name the unknown lock: {line}")
    for k in KINDS + ["mutex"]:
        check(re.search(rf"\b{k}\b", line), f"known lock {k} not listed: {line}")
    check("original" in line, f"does not say it runs the original mutexes: {line}")


def cmd_prog(args):
    spec = args.lock
    p, a = run_prog(args, spec, None)
    check_stderr_lock(spec, p.stderr)
    check("locus-preload: profile" not in p.stderr, "a profile without LOCUS_PROFILE")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "profile.json")
        p, a = run_prog(args, spec, path)
        check_stderr_lock(spec, p.stderr)
        check(os.path.exists(path), f"no JSON profile at {path}; stderr:\n{p.stderr}")
        with open(path) as f:
            text = f.read()
    try:
        prof = json.loads(text)
    except ValueError as e:
        raise Failure(f"the JSON profile does not parse: {e}\n{text[:2000]}")
    lock, replaced = expected_lock(spec)

    # the text table on stderr
    check(re.search(r"^locus-preload: profile of preload_prog \(pid \d+\), lock ", p.stderr, re.M),
          f"no profile header on stderr:\n{p.stderr}")
    check("Mutex#" in p.stderr and "First locked at" in p.stderr, "no table header")
    rows = [l for l in p.stderr.splitlines() if "prog_counter_run+" in l]
    check(len(rows) == 1, f"the counter mutex is not in the table:\n{p.stderr}")
    check(re.search(rf"\s{re.escape(lock)}\s", rows[0]), f"table row does not say {lock}: {rows[0]}")

    # the JSON
    check(prof["tool"] == "locus-preload", "tool")
    check(prof["replaced"] is replaced, f"replaced should be {replaced}")
    check(prof["lock"].split(":")[0] == lock, f"lock {prof['lock']}, expected {lock}")
    check(prof["mutexes_used"] >= 10, f"only {prof['mutexes_used']} mutexes used")
    check(prof["mutexes_contended"] >= 1, "no contended mutex")
    listed = prof["mutexes_used"] - prof["mutexes_destroyed_unlisted"]
    check(len(prof["mutexes"]) == min(100, listed), f"{len(prof['mutexes'])} listed, expected {listed}")
    conts = [m["contended"] for m in prof["mutexes"]]
    check(conts == sorted(conts, reverse=True), f"not ordered by contention: {conts}")
    for m in prof["mutexes"]:
        check_numbers(m, f"mutex #{m['id']}")
    check_order(prof, "the profile")

    c = find_by_symbol(prof, "prog_counter_run")
    want = 1 + a["threads"] * a["iters"]
    check(c["acquisitions"] == want, f"counter mutex: {c['acquisitions']} acquisitions, expected {want}")
    check(c["contended"] >= 1, "counter mutex: no contended acquisition")
    check(c["owner_changes"] >= 1, "counter mutex: no owner change")
    check(c["lock"] == lock and c["type"] == "normal" and c["fallback"] is False,
          f"counter mutex: lock {c['lock']} type {c['type']} fallback {c['fallback']}")
    check(c["wait_ns"]["total"] > 0 and c["hold_ns"]["total"] > 0, "counter mutex: no times")
    check(c["mutex"] and c["mutex"]["symbol"] == "prog_counter_mutex",
          f"counter mutex not named by its symbol: {c['mutex']}")
    check(c["first_locked_at"]["object"].endswith("preload_prog"), "first locked: object")

    r = find_by_symbol(prof, "prog_recursive_run")
    check(r["lock"] == "pthread" and r["type"] == "recursive" and r["fallback"] is replaced,
          f"recursive mutex: lock {r['lock']} type {r['type']} fallback {r['fallback']}")
    check(r["acquisitions"] == 7, f"recursive mutex: {r['acquisitions']} acquisitions, expected 7")
    check(r["trylock_busy"] >= 1, "recursive mutex: the other thread's failed trylock")
    top = prof["mutexes"][0]
    print(f"  most contended: #{top['id']} {top['contended']} of {top['acquisitions']}, first locked in "
          f"{top['first_locked_at']['symbol']}; counter mutex: {c['contended']} contended")


def cmd_env(args):
    """Bad LOCUS_PROFILE_TOP and LOCUS_PROFILE_SIGNAL values: a warning and the default."""
    small = [args.prog, "--threads", "2", "--iters", "200", "--many", "12", "--items", "100"]
    cases = [("70000", 10), ("abc", 10), ("-1", 10), ("99999999999999999999", 10), ("0", TOP_LIMIT),
             ("3", 3), ("5000", 5000)]
    for top, rows in cases:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "profile.json")
            env = base_env(args.preload, "mcs", path)
            env["LOCUS_PROFILE_TOP"] = top
            env["LOCUS_PROFILE_SIGNAL"] = "12x"
            p = subprocess.run(small, env=env, capture_output=True, text=True, timeout=150)
            check(p.returncode == 0, f"LOCUS_PROFILE_TOP={top}: exit {p.returncode}\n{p.stderr}")
            warned = f"LOCUS_PROFILE_TOP={top} is not a number from 0 to {TOP_LIMIT}; showing 10" in p.stderr
            check(warned == (rows == 10), f"LOCUS_PROFILE_TOP={top}: warning {warned}:\n{p.stderr}")
            check("LOCUS_PROFILE_SIGNAL=12x is not a signal; ignored" in p.stderr,
                  f"no warning for LOCUS_PROFILE_SIGNAL=12x:\n{p.stderr}")
            with open(path) as f:
                prof = json.load(f)
            listed = prof["mutexes_used"] - prof["mutexes_destroyed_unlisted"]
            check(len(prof["mutexes"]) == min(rows, listed),
                  f"LOCUS_PROFILE_TOP={top}: {len(prof['mutexes'])} rows of {listed}, expected {min(rows, listed)}")
            check_order(prof, f"LOCUS_PROFILE_TOP={top}")
            print(f"  LOCUS_PROFILE_TOP={top}: {len(prof['mutexes'])} rows of {listed}, warned {warned}")


# ---- memcached ------------------------------------------------------------------

def cmd_memcached(args):
    tools = {n: shutil.which(n) for n in ("memcached", "memccapable", "memcaslap")}
    missing = [n for n, p in tools.items() if not p]
    if missing:
        print(f"SKIP: not installed: {', '.join(missing)} (Debian: memcached libmemcached-tools)")
        return SKIP
    spec = args.lock
    lock, replaced = expected_lock(spec)
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        prof_path = os.path.join(tmp, "profile.json")
        cfg = memcaslap.write_config(os.path.join(tmp, "cfg"), 10)
        env = base_env(args.preload, spec, prof_path)
        env["LOCUS_PROFILE_SIGNAL"] = "USR2"
        try:
            srv = server.start(tools["memcached"], ["-t", "4", "-m", "64", "-c", "1024"],
                               memcached=True, env=env, log=os.path.join(tmp, "memcached.log"))
        except server.ServerError as e:
            print(f"  {e}")
            raise Failure("memcached did not start")
        port = srv.port
        try:
            start = time.monotonic()
            cap = subprocess.run([tools["memccapable"], "-h", "127.0.0.1", "-p", str(port), "-a", "-t", "10"],
                                 capture_output=True, text=True, timeout=120)
            print(f"  memccapable -a: exit {cap.returncode} in {time.monotonic() - start:.1f} s")
            check(cap.returncode == 0 and "All tests passed" in cap.stdout,
                  f"memccapable failed (exit {cap.returncode}):\n{cap.stdout}\n{cap.stderr}")
            slap = subprocess.run([tools["memcaslap"], "-s", f"127.0.0.1:{port}", "-F", cfg, "-t", "3s",
                                   "-T", "2", "-c", "32", "-v", "0.1"],
                                  capture_output=True, text=True, timeout=60)
            m = memcaslap.parse(slap.stdout)
            check(slap.returncode == 0 and m["tps"] is not None,
                  f"memcaslap failed:\n{slap.stdout}\n{slap.stderr}")
            check(m.get("verify_failed") == 0, f"memcaslap found wrong values:\n{slap.stdout}")
            print(f"  memcaslap 3 s, 10% sets: {m['ops']} ops, {m['tps']} ops/s, verify_failed 0")
            check(m["ops"] > 0, "no operations")
            # the profile on a signal, while it runs
            srv.proc.send_signal(signal.SIGUSR2)
            end = time.monotonic() + 10
            while time.monotonic() < end and "locus-preload: profile of memcached" not in srv.output():
                time.sleep(0.1)
            check(srv.alive(), "memcached died on LOCUS_PROFILE_SIGNAL")
        finally:
            status = srv.stop()
        out = srv.output()
        check(status is not None, "memcached did not exit on SIGTERM")
        headers = out.count("locus-preload: profile of memcached")
        check(headers == 2, f"expected a profile on SIGUSR2 and one at exit, got {headers}:\n{out}")
        check(os.path.exists(prof_path), f"no profile written at exit; memcached said:\n{out}")
        with open(prof_path) as f:
            prof = json.load(f)
    check(prof["replaced"] is replaced, f"replaced should be {replaced}")
    check(prof["lock"].split(":")[0] == lock, f"lock {prof['lock']}, expected {lock}")
    check(prof["program"].endswith("memcached"), "program")
    check(prof["mutexes_used"] >= 10, f"only {prof['mutexes_used']} mutexes used")
    contended = [m for m in prof["mutexes"] if m["contended"] > 0]
    check(contended, "no contended mutex in memcached's profile")
    for m in prof["mutexes"]:
        check_numbers(m, f"mutex #{m['id']}")
        where = m["first_locked_at"]
        check(where["object"], f"mutex #{m['id']}: first locked at an unknown place")
    check_order(prof, "memcached's profile")
    if replaced:
        check(any(m["lock"] == lock for m in contended), f"no contended {lock} mutex")
    print(f"  profile: {prof['mutexes_used']} mutexes used, {prof['mutexes_contended']} contended; top five:")
    for m in prof["mutexes"][:5]:
        w = m["first_locked_at"]
        at = (f"{w['symbol']}+{w['offset']:#x}" if w["symbol"]
              else f"{os.path.basename(w['object'])}+{w['offset']:#x}")
        mu = m["mutex"]
        name = (mu["symbol"] or f"{os.path.basename(mu['object'])}+{mu['offset']:#x}") if mu and mu["object"] \
            else "heap"
        print(f"    #{m['id']:<6} {m['lock']:<8} {m['type']:<10} locked {m['acquisitions']:>8} "
              f"contended {m['contended']:>7} wait {m['wait_ns']['total'] / 1e6:9.3f} ms  "
              f"first locked at {at}  mutex {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["prog", "env", "memcached"])
    ap.add_argument("--preload", required=True)
    ap.add_argument("--prog")
    ap.add_argument("--lock", required=True)
    args = ap.parse_args()
    args.preload = os.path.abspath(args.preload)
    check(os.path.exists(args.preload), f"no {args.preload}")
    try:
        if args.what == "prog":
            cmd_prog(args)
            rc = 0
        elif args.what == "env":
            cmd_env(args)
            rc = 0
        else:
            rc = cmd_memcached(args)
    except Failure as e:
        print(f"FAIL ({args.what}, LOCUS_LOCK={args.lock}): {e}")
        return 1
    if rc == 0:
        print(f"PASS ({args.what}, LOCUS_LOCK={args.lock})")
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
