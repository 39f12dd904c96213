"""Debian's memcached under liblocus-preload's profiler, its mutexes named by what they do.

Seed 003 ran mutrace on memcached and named the hot mutexes with gdb's `info symbol`.
Debian's memcached is stripped, so here a mutex is named by behaviour instead: before the
load, the server gets K commands of each of four kinds, with a profile written (on
LOCUS_PROFILE_SIGNAL) between them, and the change in each mutex's acquisitions tells
which code locked it. From memcached 1.6's source:

  stats        stats_lock twice; slabs_lock, every LRU lock, every worker's stats mutex
               and LRU bump buffer once
  stats slabs  slabs_lock once; every worker's stats mutex
  stats items  every LRU lock; every worker's stats mutex
  get (misses) the item lock of each key's hash (4,096 of them at -t 4), and the serving
               worker's stats mutex

so, per command of each kind: a static mutex locked (2, 0, 0) times by (stats, stats
slabs, stats items) is stats_lock, (1, 1, 0) slabs_lock, (1, 0, 1) an LRU lock; a heap
mutex locked by all three is a worker's stats mutex, (1, 0, 0) a worker's LRU bump buffer,
and one only the gets locked is an item lock. Those are locus-kv's stats, slabs, alloc,
stats, alloc and hash sections. Every other mutex (connection queues, background threads)
is "other".

The stats probes wait until the server is quiet. memcached's LRU maintainer starts by
juggling each of its 63 slab classes every millisecond, each juggle locking slabs_lock,
and backs off by an eighth per idle round: slabs_lock is locked thousands of times a second
at first and still hundreds two seconds on, at a rate that falls steeply and depends on
when the machine runs the thread, so no one rate measured beside the probes can be taken
off their counts (on a loaded machine that left slabs_lock over half a probe off its
signature). So after the first gets, profiles are written QUIET_WINDOW apart until one
window saw no mutex locked faster than QUIET_RATE; that window and the last gets give the
background rate that is left.

Then the insert load runs and a last profile is written: each section's cost is its
mutexes' wait plus hold time during the load, the callers' time in them, as locus-kv's
--section-stats measures its own sections.
"""

import json
import os
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .bench import REPO

PROBE_K = 1000  # commands of each stats kind
GET_KEYS = 32_768  # distinct missing keys: every one of 4,096 item locks is hit (8 each)
GET_BATCH = 128  # keys per get command
SECTIONS = ["hash", "alloc", "slabs", "stats"]
NAMES = {"hash": "item locks", "alloc": "LRU locks and bump buffers", "slabs": "slabs_lock",
         "stats": "stats_lock + workers' stats mutexes", "other": "other mutexes"}
PROFILE_SIGNAL = "USR2"  # memcached 1.6 handles SIGUSR1 (graceful stop) and SIGHUP itself
# Locks a second of any one mutex while nothing is sent, below which the stats probes start:
# a probe slowed to a second by a loaded machine then gains under a fifth of its count.
QUIET_RATE = PROBE_K / 5
QUIET_WINDOW = 0.25  # seconds between the profiles that watch the server settle
QUIET_WINDOWS = 60  # at most this many; then the probes start all the same


def find_preload():
    """$LOCUS_PRELOAD, else the source tree's build, else one installed beside locus-kv
    on PATH (PREFIX/bin and PREFIX/lib); None if there is none."""
    env = os.environ.get("LOCUS_PRELOAD")
    if env:
        return Path(env)
    built = REPO / "build/release/src/preload/liblocus-preload.so"
    if built.exists():
        return built
    kv = shutil.which("locus-kv")
    if kv:
        lib = Path(kv).resolve().parent.parent / "lib" / "liblocus-preload.so"
        if lib.exists():
            return lib
    return None


def _send_all(port, lines, replies, end=b"END\r\n"):
    """Sends lines (bytes, pipelined) and reads until `replies` replies ending in `end`
    have come back (every reply here ends in END, and no other line does)."""
    tail, seen = b"", 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            s.sendall(b"".join(lines))
            while seen < replies:
                d = s.recv(1 << 20)
                if not d:
                    break
                buf = tail + d
                seen += buf.count(end)
                tail = buf[-(len(end) - 1):]  # too short to hold a whole `end` counted already
    except OSError as e:
        raise RuntimeError(f"probing memcached: {e} after {seen} of {replies} replies") from e
    if seen < replies:
        raise RuntimeError(f"memcached closed the connection after {seen} of {replies} replies")


@dataclass
class Snapshot:
    seconds: float  # since the server started
    rows: dict  # (id, address) -> the profile's row

    def acq(self, key):
        m = self.rows.get(key)
        return m["acquisitions"] if m else 0


class Profiler:
    """The hooks KvInsert.run calls: probes once the server listens, a profile after the
    load. Its result is `.snaps`, one Snapshot after each probe (PROBES) and one after the
    load ("load"), which classify and summarize read."""

    def __init__(self, json_path, timeout=60):
        self.path = Path(json_path)
        self.timeout = timeout
        self.last_seconds = -1.0
        self.snaps = {}

    def env(self, preload, base=None):
        env = {k: v for k, v in (base or os.environ).items() if not k.startswith("LOCUS_")}
        env.update(LD_PRELOAD=str(preload), LOCUS_PROFILE=str(self.path),
                   LOCUS_PROFILE_TOP="0", LOCUS_PROFILE_SIGNAL=PROFILE_SIGNAL)
        return env

    def snapshot(self, proc):
        """Asks the server for a profile and waits until a newer complete one is there."""
        proc.send_signal(getattr(signal, "SIG" + PROFILE_SIGNAL))
        end = time.monotonic() + self.timeout
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"memcached exited (status {proc.returncode}) while "
                                   f"writing its profile")
            try:
                prof = json.loads(self.path.read_text())
            except (OSError, ValueError):
                prof = None  # not written yet, or half written
            if prof and prof.get("seconds", -1) > self.last_seconds:
                self.last_seconds = prof["seconds"]
                return Snapshot(prof["seconds"], {(m["id"], (m["mutex"] or {}).get("address")): m
                                                  for m in prof["mutexes"]})
            time.sleep(0.01)
        raise RuntimeError(f"memcached under liblocus-preload wrote no profile to {self.path} "
                           f"within {self.timeout} s of SIG{PROFILE_SIGNAL}")

    def started(self, proc, port):
        self.snaps["start"] = self.snapshot(proc)
        self._gets(port, 0, GET_KEYS // 2)
        self.snaps["gets1"] = self.snapshot(proc)
        self.settle(proc)
        for name, sub in (("stats", ""), ("slabs", " slabs"), ("items", " items")):
            _send_all(port, [f"stats{sub}\r\n".encode()] * PROBE_K, PROBE_K)
            self.snaps[name] = self.snapshot(proc)
        self._gets(port, GET_KEYS // 2, GET_KEYS)
        self.snaps["gets2"] = self.snapshot(proc)

    def settle(self, proc):
        """Waits for the first QUIET_WINDOW in which no mutex was locked faster than
        QUIET_RATE (the module text says why), at most QUIET_WINDOWS of them; that window
        is snaps["settle"] to snaps["quiet"]."""
        before = self.snaps["gets1"]
        for _ in range(QUIET_WINDOWS):
            time.sleep(QUIET_WINDOW)
            after = self.snapshot(proc)
            if _busiest_rate(before, after) <= QUIET_RATE:
                break
            before = after
        self.snaps["settle"], self.snaps["quiet"] = before, after

    @staticmethod
    def _gets(port, first, last):
        lines = []
        for i in range(first, last, GET_BATCH):
            keys = " ".join(f"locus-probe-{j}" for j in range(i, min(i + GET_BATCH, last)))
            lines.append(f"get {keys}\r\n".encode())
        _send_all(port, lines, len(lines))

    def loaded(self, proc, port):
        self.snaps["load"] = self.snapshot(proc)


def _busiest_rate(before, after):
    """Locks a second of the mutex locked most from one snapshot to the next."""
    span = after.seconds - before.seconds
    most = max((after.acq(key) - before.acq(key) for key in after.rows), default=0)
    return most / span if span > 0 else float("inf")


PROBES = ["start", "gets1", "settle", "quiet", "stats", "slabs", "items", "gets2"]
# Snapshots that end a stretch in which nothing locked static mutexes but the background.
QUIET = ["quiet", "gets2"]
# Locks per probe command, by memcached 1.6's source: (stats, stats slabs, stats items).
SIGNATURES = {(2, 0, 0): "stats",  # stats_lock: server_stats and get_stats
              (1, 1, 0): "slabs",  # slabs_lock: global_page_pool_size, slabs_stats
              (1, 0, 1): "alloc"}  # an LRU lock: item_stats_totals, item_stats


def classify(snaps, k=PROBE_K):
    """{mutex key: section or 'other'} from the probe snapshots (see the module text).

    Other threads (the LRU maintainer, mostly) lock static mutexes meanwhile at a rate
    of their own, low once the server has settled (see Profiler.settle). Nothing is sent
    in the quiet window and the gets lock no static mutex (an item lock and the worker's
    stats mutex are on the heap), so each static mutex's locks during those two give its
    background rate, and that rate times each stats probe's length is taken off its count
    for that probe. The gets before the server settled are not used for it: the rate
    then is the LRU maintainer's start, many times what it is during the probes.
    """
    keys = set().union(*(snaps[s].rows.keys() for s in PROBES + ["load"]))
    span = {b: snaps[b].seconds - snaps[a].seconds for a, b in zip(PROBES, PROBES[1:])}
    quiet = sum(span[q] for q in QUIET)
    out, got = {}, []
    for key in keys:
        d = {b: snaps[b].acq(key) - snaps[a].acq(key) for a, b in zip(PROBES, PROBES[1:])}
        if _heap(snaps, key):
            per = tuple(round(d[p] / k) for p in ("stats", "slabs", "items"))
            if min(per) >= 1:
                out[key] = "stats"  # a worker's own stats mutex: every stats kind locks it
            elif per == (1, 0, 0):
                out[key] = "alloc"  # a worker's LRU bump buffer: lru_total_bumps_dropped
            elif per == (0, 0, 0):
                out[key] = "hash?"  # an item lock, if it was first locked where they are
                if d["gets1"] + d["gets2"] > 0:
                    got.append(key)
            else:
                out[key] = "other"
            continue
        rate = sum(d[q] for q in QUIET) / quiet if quiet > 0 else 0.0
        per = tuple(round(max(0.0, d[p] - rate * span[p]) / k) for p in ("stats", "slabs", "items"))
        out[key] = SIGNATURES.get(per, "other")
    # The gets also lock a worker's connection queue (twice per new connection): item locks
    # are the heap mutexes untouched by the stats probes that were first locked where most
    # of those the gets locked were (memcached's item_lock), whether or not a probe key
    # hashed to them.
    sites = [_site(snaps, key) for key in got]
    common = max(set(sites), key=sites.count) if sites else None
    for key, kind in out.items():
        if kind == "hash?":
            out[key] = "hash" if _site(snaps, key) == common else "other"
    return out


def _first(snaps, key):
    return next(snap.rows[key] for snap in snaps.values() if key in snap.rows)


def _site(snaps, key):
    w = _first(snaps, key)["first_locked_at"] or {}
    return (w.get("object"), w.get("offset"))


def _heap(snaps, key):
    return not (_first(snaps, key)["mutex"] or {}).get("object")


@dataclass
class SectionCost:
    mutexes: int = 0
    acquisitions: int = 0
    contended: int = 0
    wait_ns: int = 0
    hold_ns: int = 0

    @property
    def time_ns(self):
        return self.wait_ns + self.hold_ns


@dataclass
class MemcachedProfile:
    sections: dict = field(default_factory=dict)  # section or "other" -> SectionCost
    named: dict = field(default_factory=dict)  # section or "other" -> mutexes named so

    def ranked(self):
        """[(section, share of the four sections' time)], most costly first."""
        total = sum(self.sections[s].time_ns for s in SECTIONS) or 1
        return sorted(((s, self.sections[s].time_ns / total) for s in SECTIONS),
                      key=lambda p: -p[1])

    def other_share(self):
        """The other mutexes' share of all mutex time during the load."""
        total = sum(c.time_ns for c in self.sections.values()) or 1
        return self.sections["other"].time_ns / total


def summarize(snaps, k=PROBE_K):
    """Each section's cost during the load: the last snapshot less the one before it."""
    kinds = classify(snaps, k)
    prof = MemcachedProfile({s: SectionCost() for s in SECTIONS + ["other"]},
                            {s: 0 for s in SECTIONS + ["other"]})
    before, after = snaps["gets2"].rows, snaps["load"].rows
    for key, kind in kinds.items():
        prof.named[kind] += 1
        m = after.get(key)
        if not m:
            continue
        b = before.get(key)
        acq = m["acquisitions"] - (b["acquisitions"] if b else 0)
        if acq <= 0:
            continue
        c = prof.sections[kind]
        c.mutexes += 1
        c.acquisitions += acq
        c.contended += m["contended"] - (b["contended"] if b else 0)
        c.wait_ns += m["wait_ns"]["total"] - (b["wait_ns"]["total"] if b else 0)
        c.hold_ns += m["hold_ns"]["total"] - (b["hold_ns"]["total"] if b else 0)
    return prof


def profile_memcached(kv, args, preload=None):
    """Runs one insert measurement (KvInsert kv, point args naming the memcached server)
    under the profiler: (MemcachedProfile, '') or (None, why there is none)."""
    preload = Path(preload) if preload else find_preload()
    if not preload or not preload.exists():
        return None, ("liblocus-preload.so not found: build it with `make release` (or set "
                      "LOCUS_PRELOAD)")
    if not Path(kv.memcached).exists():
        return None, "memcached not found: install memcached (scripts/install-deps)"
    with tempfile.TemporaryDirectory(prefix="locus-mcprofile-") as tmp:
        prof = Profiler(Path(tmp) / "profile.json")
        res = kv.run(args, env=prof.env(preload), hooks=prof)
        if not res.ok:
            return None, f"the profiling run failed: {res.error}"
    return summarize(prof.snaps), ""
