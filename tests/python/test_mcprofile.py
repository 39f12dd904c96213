"""Naming memcached's mutexes by what they do (tools/locus_tools/mcprofile.py): the
classification on made-up profiles, and one real run of Debian's memcached under
liblocus-preload, whose numbers follow from memcached's source."""

import pytest

from locus_tools import mcprofile as M
from locus_tools import seed003

K = M.PROBE_K


def _row(mid, acq, *, static=True, site=0x100, wait=0, hold=0):
    return {"id": mid, "acquisitions": acq, "contended": 1 if wait else 0,
            "wait_ns": {"total": wait}, "hold_ns": {"total": hold},
            "mutex": {"address": hex(0x1000 + mid), "object": "/usr/bin/memcached" if static else None},
            "first_locked_at": {"object": "/usr/bin/memcached", "offset": site}}


def _snaps(mutexes, seconds=None):
    """mutexes: {id: (static, site, [acquisitions after each probe], (wait, hold) at the end)}."""
    names = M.PROBES + ["load"]
    seconds = seconds or [0.1 * i for i in range(len(names))]
    out = {}
    for i, name in enumerate(names):
        rows = {}
        for mid, (static, site, acqs, (wait, hold)) in mutexes.items():
            if acqs[i]:
                last = name == "load"
                r = _row(mid, acqs[i], static=static, site=site, wait=wait if last else 0,
                         hold=hold if last else 0)
                rows[(mid, r["mutex"]["address"])] = r
        out[name] = M.Snapshot(seconds[i], rows)
    return out


def _cum(*deltas):
    acc, out = 0, []
    for d in deltas:
        acc += d
        out.append(acc)
    return out


# Deltas per interval: start, gets1, settle, quiet, stats, slabs, items, gets2, load.
MEMCACHED_LIKE = {
    1: (True, 0x10, _cum(1, 0, 0, 0, 2 * K, 0, 0, 0, 5000), (0, 300)),  # stats_lock
    2: (True, 0x20, _cum(1, 0, 0, 0, K, K, 0, 0, 5000), (9000, 4000)),  # slabs_lock
    3: (True, 0x30, _cum(1, 0, 0, 0, K, 0, K, 0, 5000), (0, 200)),  # an LRU lock
    4: (True, 0x30, _cum(1, 0, 0, 0, K, 0, K, 0, 0), (0, 0)),  # an LRU lock of an unused class
    5: (False, 0x40, _cum(1, 9000, 0, 0, K, 3 * K, K, 9000, 20000), (0, 100)),  # a worker's stats
    6: (False, 0x50, _cum(0, 3, 0, 0, 0, 0, 0, 5, 2500), (100, 900)),  # item locks
    7: (False, 0x50, _cum(0, 0, 0, 0, 0, 0, 0, 4, 2500), (0, 800)),
    8: (False, 0x50, _cum(0, 0, 0, 0, 0, 0, 0, 0, 2500), (0, 700)),  # no probe key hashed here
    9: (True, 0x60, _cum(1, 0, 0, 0, K, 0, 0, 0, 5000), (0, 50)),  # `stats` locks it once: other
    10: (True, 0x70, _cum(0, 0, 0, 0, 0, 0, 0, 0, 5000), (0, 2000)),  # the load alone: other
    11: (False, 0x80, _cum(0, 0, 0, 0, K, K, K, 0, 0), (0, 0)),  # heap, every stats kind: stats
    12: (False, 0x90, _cum(0, 0, 0, 0, K, 0, 0, 0, 0), (0, 0)),  # heap, `stats` once: a bump buffer
    13: (False, 0xA0, _cum(2, 2, 0, 0, 0, 0, 0, 0, 2), (0, 0)),  # a worker's connection queue
}


def _kinds(snaps):
    return {key[0]: kind for key, kind in M.classify(snaps).items()}


def test_each_mutex_is_named_by_the_probes_that_lock_it():
    assert _kinds(_snaps(MEMCACHED_LIKE)) == {
        1: "stats", 2: "slabs", 3: "alloc", 4: "alloc", 5: "stats", 6: "hash", 7: "hash",
        8: "hash", 9: "other", 10: "other", 11: "stats", 12: "alloc", 13: "other"}


def test_background_locking_is_taken_off_at_the_rate_seen_while_quiet():
    # The LRU maintainer locks slabs_lock 400 times a second: during the 2-second `stats`
    # probe that is 800 more, which alone would round 1.8 K to 2 (stats_lock's signature).
    rate = 400
    # start, gets1, settle, quiet, stats, slabs, items, gets2, load
    spans = [0, 1, 1, 1, 2, 1, 1, 1, 1]
    secs = _cum(*spans)
    noisy = dict(MEMCACHED_LIKE)
    noisy[2] = (True, 0x20, _cum(1, rate, rate, rate, K + 2 * rate, K + rate, rate, rate, 5000),
                (9000, 4000))
    assert _kinds(_snaps(noisy, secs))[2] == "slabs"
    # Without the rate (no locks while quiet) the same counts would not be slabs_lock.
    quiet = dict(noisy)
    quiet[2] = (True, 0x20, _cum(1, rate, rate, 0, K + 2 * rate, K + rate, rate, 0, 5000),
                (9000, 4000))
    assert _kinds(_snaps(quiet, secs))[2] != "slabs"


def test_the_lru_maintainers_start_is_not_taken_for_the_background():
    # memcached's LRU maintainer starts by locking slabs_lock thousands of times a second
    # (every slab class each millisecond) and backs off: the first gets and the settling
    # see that, the probes, made once the server is quiet, do not. Taken as the rate, the
    # start would leave nothing of the probes' counts.
    start = dict(MEMCACHED_LIKE)
    start[2] = (True, 0x20, _cum(1, 5000, 20000, 0, K, K, 0, 0, 5000), (9000, 4000))
    assert _kinds(_snaps(start))[2] == "slabs"


def test_counts_off_every_signature_name_no_mutex_slabs_lock():
    # Locks by something else during the `stats` probe (0.6 K more) put slabs_lock's
    # counts at (1.6, 1, 0) K: that is no signature, and no mutex is named slabs_lock.
    burst = dict(MEMCACHED_LIKE)
    burst[2] = (True, 0x20, _cum(1, 0, 0, 0, K + 6 * K // 10, K, 0, 0, 5000), (9000, 4000))
    kinds = _kinds(_snaps(burst))
    assert kinds[2] == "other" and "slabs" not in kinds.values()


def _settling(monkeypatch, busiest):
    """A Profiler whose snapshots come from made-up windows of QUIET_WINDOW s in which the
    busiest mutex was locked busiest[i] times; returns it and how many it asked for."""
    monkeypatch.setattr(M.time, "sleep", lambda s: None)
    prof = M.Profiler("unused.json")
    acq = _cum(1, *busiest)
    snaps = [M.Snapshot(0.1 + M.QUIET_WINDOW * i, {(1, "0x1001"): _row(1, a)})
             for i, a in enumerate(acq)]
    prof.snaps["gets1"] = snaps[0]
    asked = []
    prof.snapshot = lambda proc: asked.append(1) or snaps[len(asked)]
    prof.settle(proc=None)
    return prof, len(asked)


def test_the_probes_wait_for_the_first_quiet_window(monkeypatch):
    calm = int(M.QUIET_RATE * M.QUIET_WINDOW)  # locks in a window at the quiet rate
    prof, asked = _settling(monkeypatch, [1386, 378, 126, calm + 13, calm, 63, 0])
    assert asked == 5
    window = (prof.snaps["settle"], prof.snaps["quiet"])
    assert window[1].acq((1, "0x1001")) - window[0].acq((1, "0x1001")) == calm
    assert window[1].seconds - window[0].seconds == pytest.approx(M.QUIET_WINDOW)


def test_a_server_that_never_settles_is_probed_after_the_last_window(monkeypatch):
    monkeypatch.setattr(M, "QUIET_WINDOWS", 3)
    prof, asked = _settling(monkeypatch, [1386] * 5)
    assert asked == 3
    assert prof.snaps["quiet"].seconds == pytest.approx(0.1 + 3 * M.QUIET_WINDOW)


def test_section_costs_are_the_load_interval_only():
    prof = M.summarize(_snaps(MEMCACHED_LIKE))
    slabs = prof.sections["slabs"]
    assert (slabs.mutexes, slabs.acquisitions, slabs.wait_ns, slabs.hold_ns) == (1, 5000, 9000, 4000)
    assert prof.sections["hash"].acquisitions == 2500 * 3
    assert prof.sections["hash"].time_ns == 100 + 900 + 800 + 700
    assert prof.named == {"hash": 3, "alloc": 3, "slabs": 1, "stats": 3, "other": 3}
    ranked = dict(prof.ranked())
    assert max(ranked, key=ranked.get) == "slabs" and abs(sum(ranked.values()) - 1) < 1e-9
    assert prof.other_share() == pytest.approx(2050 / (13000 + 2500 + 200 + 400 + 2050))


def test_covering_and_combining_profiles():
    assert seed003.covering([("hash", 0.83), ("stats", 0.08), ("slabs", 0.06), ("alloc", 0.03)]) == ["hash"]
    assert seed003.covering([("a", 0.3), ("b", 0.3), ("c", 0.3), ("d", 0.1)]) == ["a", "b", "c"]
    kv = [("hash", 0.83), ("stats", 0.08), ("slabs", 0.06), ("alloc", 0.03)]
    mc = [("slabs", 0.60), ("hash", 0.26), ("alloc", 0.10), ("stats", 0.04)]
    assert seed003.combine(kv) == ["hash"]
    assert seed003.combine(kv, mc) == ["hash", "slabs"]


def test_debian_memcached_mutexes_are_named_as_its_source_says():
    """A real profile: memcached -t 4 has 4,096 item locks, 256 LRU locks and an LRU bump
    buffer per worker, one slabs_lock, and stats_lock plus one stats mutex per worker;
    every insert allocates under
    slabs_lock, so the load locks it at least N times."""
    kv = seed003.KvInsert()
    why = kv.missing() or ("" if M.find_preload() else "liblocus-preload.so not built")
    if why:
        pytest.fail(why)
    n = 6000
    prof, why = M.profile_memcached(kv, seed003._args(seed003.MEMCACHED, "", 4, 4, n))
    assert prof is not None, why
    assert prof.named["slabs"] == 1 and prof.named["alloc"] == 256 + 4 and prof.named["stats"] == 5, \
        prof.named
    assert 4000 <= prof.named["hash"] <= 4096
    assert prof.sections["slabs"].acquisitions >= n
    assert prof.sections["hash"].acquisitions >= n  # each insert locks its key's item lock
    assert all(prof.sections[s].time_ns > 0 for s in ("hash", "slabs", "stats"))


def test_a_missing_preload_is_reported_not_raised(tmp_path):
    prof, why = M.profile_memcached(seed003.KvInsert(), seed003._args(seed003.MEMCACHED, "", 4, 4, 120),
                                    preload=tmp_path / "none.so")
    assert prof is None and "liblocus-preload.so not found" in why
