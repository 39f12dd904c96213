"""kv-resources: what clients can make locus-kv and Debian's memcached hold, side by side.

Two experiments, each on a fresh server of each kind with the same -m, -t and -c:

  deaf     N clients (--clients, 300) each pipeline gets of one 100 KB value and never read
           the replies. Reported: the server's resident memory before and once it has
           stopped serving them, and how long a new client waits for one get meanwhile.
  shift    the cache is filled with --small-mb of 200-byte values, then --large-mb of
           4000-byte values are written (the size mix shifts; with --shift-seconds S, more
           of them until S seconds have passed), then 1000 more large keys.
           Reported: how many of those last 1000 are kept, the pages moved between slab
           classes (slabs_moved), total_malloced and resident memory.

Both servers are started by this script (memcached with -u root when run as root). Output:
a table on stdout and, with --json FILE, one JSON object per server and experiment.

  bench/kv-resources [--experiments deaf,shift] [--clients N] [--memory MB] [--threads T]
                     [--small-mb MB] [--large-mb MB] [--shift-seconds S]
                     [--locus-kv PATH] [--memcached PATH]
                     [--json FILE]

Standard library only.
"""

import argparse
import json
import os
import socket
import sys
import time

from . import server
from .bench import REPO

DEFAULT_LOCUS_KV = os.path.join(REPO, "build/release/src/kv/locus-kv")
DEFAULT_MEMCACHED = "/usr/bin/memcached"
HOST = server.HOST
VALUE = 100_000


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def rss_mb(pid):
    kb = server.rss_kb(pid)
    return kb / 1024 if kb is not None else float("nan")


def start(name, path, args):
    """A fresh server (name: locus-kv or memcached); exits with its output if it did not start."""
    try:
        return server.start(path, args, memcached=name == "memcached")
    except server.ServerError as e:
        raise SystemExit(f"{' '.join(e.argv)} did not start: {e.output[-500:]}")


class Conn:
    def __init__(self, port, timeout=60):
        self.s = socket.create_connection((HOST, port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.s.close()

    def until(self, end):
        while end not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                raise ConnectionError("closed")
            self.buf += d
        i = self.buf.index(end) + len(end)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def call(self, req, end=b"\r\n"):
        self.s.sendall(req)
        return self.until(end)

    def stats(self, sub=b""):
        out = {}
        for line in self.call(b"stats " + sub + b"\r\n", b"END\r\n").split(b"\r\n"):
            p = line.split(b" ", 2)
            if len(p) == 3 and p[0] == b"STAT":
                out[p[1].decode()] = p[2].decode()
        return out

    def fill(self, prefix, count, size, batch=500):
        value = b"v" * size
        for start in range(0, count, batch):
            n = min(batch, count - start)
            self.s.sendall(b"".join(b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix, i, size, value)
                                    for i in range(start, start + n)) + b"mn\r\n")
            self.until(b"MN\r\n")


def deaf(srv, clients):
    c = Conn(srv.port)
    c.call(b"set big 0 0 %d\r\n%s\r\n" % (VALUE, b"x" * VALUE))
    before = rss_mb(srv.pid)
    socks = []
    try:
        for _ in range(clients):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect((HOST, srv.port))
            s.setblocking(False)
            req = b"get big\r\n" * 20000
            try:
                while req:
                    req = req[s.send(req):]
            except BlockingIOError:
                pass
            socks.append(s)
        last, same = None, 0
        deadline = time.monotonic() + 60
        while same < 3 and time.monotonic() < deadline:
            hits = c.stats()["get_hits"]
            same = same + 1 if hits == last else 0
            last = hits
            time.sleep(0.1)
        after = rss_mb(srv.pid)
        t0 = time.monotonic()
        other = Conn(srv.port, timeout=30)
        other.call(b"get nokey\r\n", b"END\r\n")
        wait_ms = (time.monotonic() - t0) * 1000
        other.close()
    finally:
        for s in socks:
            s.close()
        c.close()
    return {"clients": clients, "rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1),
            "new_client_get_ms": round(wait_ms, 2)}


def shift(srv, name, small_mb, large_mb, seconds):
    c = Conn(srv.port)
    small, large = 200, 4000
    c.fill(b"s", small_mb * (1 << 20) // small, small)
    log(f"  {name}: {small_mb} MB of {small}-byte values written")
    t0 = time.monotonic()
    c.fill(b"l", large_mb * (1 << 20) // large, large)
    rounds = 0
    while time.monotonic() - t0 < seconds:   # the size mix stays shifted this long
        c.fill(b"r%d_" % rounds, 8 * (1 << 20) // large, large)
        rounds += 1
    took = time.monotonic() - t0
    log(f"  {name}: {large_mb + 8 * rounds} MB of {large}-byte values written "
        f"in {took:.1f} s")
    c.fill(b"last", 1000, large)
    kept = 0
    for i in range(1000):
        r = c.call(b"get last%d\r\n" % i, b"END\r\n")
        kept += r.startswith(b"VALUE")
    st, slabs = c.stats(), c.stats(b"slabs")
    c.close()
    return {"small_mb": small_mb, "large_mb": large_mb + 8 * rounds,
            "shift_s": round(took, 1), "last_1000_kept": kept,
            "slabs_moved": int(st.get("slabs_moved", -1)), "evictions": int(st["evictions"]),
            "total_malloced_mb": round(int(slabs["total_malloced"]) / (1 << 20), 1),
            "rss_mb": round(rss_mb(srv.pid), 1)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", default="deaf,shift")
    ap.add_argument("--clients", type=int, default=300)
    ap.add_argument("--memory", type=int, default=64, help="-m of both servers (MB)")
    ap.add_argument("--threads", type=int, default=4, help="-t of both servers")
    ap.add_argument("--small-mb", type=int, default=512)
    ap.add_argument("--large-mb", type=int, default=512)
    ap.add_argument("--shift-seconds", type=float, default=0,
                    help="keep writing large values until this many seconds have passed since "
                         "they began (memcached's automover needs its 30 s window filled)")
    ap.add_argument("--locus-kv", default=DEFAULT_LOCUS_KV)
    ap.add_argument("--memcached", default=DEFAULT_MEMCACHED)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    exps = [e for e in a.experiments.split(",") if e]
    for e in exps:
        if e not in ("deaf", "shift"):
            ap.error(f"unknown experiment {e!r} (known: deaf, shift)")
    if a.clients < 1 or a.memory < 8 or a.small_mb < 1 or a.large_mb < 1 or a.shift_seconds < 0:
        ap.error("--clients >= 1, --memory >= 8, --small-mb and --large-mb >= 1, "
                 "--shift-seconds >= 0")
    servers = [("locus-kv", a.locus_kv), ("memcached", a.memcached)]
    for name, path in servers:
        if not os.access(path, os.X_OK):
            ap.error(f"{name} not found at {path}")
    common = ["-m", str(a.memory), "-t", str(a.threads), "-c", str(max(1024, a.clients + 64))]
    rows = []
    for e in exps:
        for name, path in servers:
            log(f"{e}: {name}")
            s = start(name, path, common)
            try:
                r = (deaf(s, a.clients) if e == "deaf"
                     else shift(s, name, a.small_mb, a.large_mb, a.shift_seconds))
            finally:
                s.stop(seconds=10)
            rows.append({"experiment": e, "server": name, **r})
    for e in exps:
        part = [r for r in rows if r["experiment"] == e]
        keys = [k for k in part[0] if k not in ("experiment", "server")]
        print(f"\n{e}: " + ", ".join(f"{k}" for k in keys))
        for r in part:
            print(f"  {r['server']:10s} " + "  ".join(f"{k}={r[k]}" for k in keys))
    if a.json:
        with open(a.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")

