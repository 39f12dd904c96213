"""memcaslap (libmemcached-tools), the load generator of the memcached experiments: the
configuration file that sets its key and value sizes and its share of sets, and its report.
"""

import re

KEY_SIZE, VALUE_SIZE = 64, 1024  # the seeds' experiments' sizes, in bytes

# its counters, as "name: number" lines
COUNTERS = ("cmd_get", "cmd_set", "get_misses", "verify_misses", "verify_failed", "expired_get",
            "unexpired_unget", "written_bytes", "read_bytes", "object_bytes")
RUN_LINE = re.compile(r"^Run time: ([\d.]+)s Ops: (\d+) TPS: (\d+) Net_rate: ([\d.]+)M/s", re.M)


def write_config(path, sets_pct):
    """Writes a configuration of KEY_SIZE keys, VALUE_SIZE values and sets_pct % sets (the
    rest gets) to path; returns path."""
    with open(path, "w") as f:
        f.write(f"key\n{KEY_SIZE} {KEY_SIZE} 1\nvalue\n{VALUE_SIZE} {VALUE_SIZE} 1\n"
                f"cmd\n0 {sets_pct / 100:.2f}\n1 {1 - sets_pct / 100:.2f}\n")
    return path


def parse(stdout):
    """memcaslap's final report as a dict: the counters found, and run_s, ops, tps,
    net_mb_s from its last 'Run time:' line (None if there is none)."""
    out = {}
    for name in COUNTERS:
        m = re.search(rf"^{name}: (\d+)\s*$", stdout, re.M)
        if m:
            out[name] = int(m.group(1))
    runs = RUN_LINE.findall(stdout)
    if runs:
        run_s, ops, tps, net = runs[-1]
        out.update(run_s=float(run_s), ops=int(ops), tps=int(tps), net_mb_s=float(net))
    else:
        out.update(run_s=None, ops=None, tps=None, net_mb_s=None)
    return out


def problems(parsed, returncode=0, stderr=""):
    """What is wrong with one memcaslap run, as short sentences (empty: nothing)."""
    found = []
    if returncode != 0:
        found.append(f"memcaslap exited with status {returncode}")
    if parsed.get("tps") is None:
        found.append("no 'Run time: ... TPS:' line in memcaslap's output")
    elif parsed["tps"] == 0:
        found.append("0 ops/s")
    # memcaslap's own get_misses are not listed: it gets keys it has not set yet (both
    # servers show them at 25-30 % sets); a server's own counters tell more.
    for name in ("verify_misses", "verify_failed"):
        if parsed.get(name):
            found.append(f"{name}: {parsed[name]}")
    err = "\n".join(line for line in stderr.splitlines() if line.strip())
    if err:
        found.append("memcaslap stderr: " + err[:500])
    return found
