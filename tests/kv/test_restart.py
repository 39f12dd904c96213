"""The restartable cache (-e FILE): a graceful stop (SIGUSR1, "shutdown graceful") keeps every
item for the next start with the same file and settings; anything else starts clean.

memcached refuses a restart within the wall-clock second of the stop (it takes the clock for
having gone back); the tests against it wait for the next second before starting again.
"""

import os
import random
import re
import shutil
import signal
import time

import pytest

from kvlib import ServerError
from test_admin import metadump


def meta_of(path):
    return str(path) + ".meta"


def output_once_serving(server):
    """What the server printed by the time it answers a command: a server listens before
    its cache is open, so what the restart says is only there once it answers."""
    with server.conn() as c:
        c.call("version\r\n", "VERSION ")
        c.line()
    return server.output()


def graceful_stop(server):
    """SIGUSR1, and the server must exit with status 0."""
    server.stop(signal.SIGUSR1)


def next_second(server, path):
    """memcached refuses a restart within the second its stop wrote down (it takes that for
    the clock having gone back): wait for the wall clock to leave that second (a condition
    on the clock, not a guess at how long something takes)."""
    if not server.is_memcached or not os.path.exists(meta_of(path)):
        return
    with open(meta_of(path)) as f:
        stop_time = int(re.search(r"^Kstop_time (\d+)$", f.read(), re.M).group(1))
    while time.time() < stop_time + 1:
        time.sleep(0.05)


def fill(c, n, prefix="k", sizes=(1, 10, 100, 1000, 5000, 20000)):
    """Store n items of various sizes, flags and TTLs; return {key: (value, flags)}."""
    want = {}
    for i in range(n):
        key = f"{prefix}{i}"
        size = sizes[i % len(sizes)]
        value = (f"{key}:" * (size // len(key) + 1))[:size].encode()
        flags = (i * 7919) % 65536
        exptime = 0 if i % 3 else 3600
        assert c.set(key, value, flags=flags, exptime=exptime) == b"STORED\r\n"
        want[key] = (value, flags)
    return want


def gets_all(c, keys):
    """{key: (value, flags, cas)} of the keys found, by gets."""
    out = {}
    for key in keys:
        c.send(f"gets {key}\r\n")
        head = c.line()
        if head == b"END\r\n":
            continue
        _, k, flags, n, cas = head.split()
        data = c.read(int(n) + 2)[:-2]
        c.expect("END\r\n")
        out[k.decode()] = (data, int(flags), int(cas))
    return out


def ttl_of(c, key):
    c.send(f"mg {key} t\r\n")
    line = c.line().split()
    assert line[0] == b"HD", line
    return int(line[1][1:])


def test_memory_file_setting(start, tmp_path):
    path = tmp_path / "mem"
    s = start("-m", "64", "-e", path)
    with s.conn() as c:
        assert c.stats("settings")["memory_file"] == str(path)
        # Its size is fixed: memcached refuses to change it at run time.
        c.call("cache_memlimit 100\r\n", "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n")
    assert os.path.getsize(path) == 64 << 20
    plain = start()
    with plain.conn() as c:
        assert c.stats("settings")["memory_file"] == "(null)"


def test_graceful_stop_keeps_every_item(start, tmp_path):
    path = tmp_path / "mem"
    s = start("-m", "64", "-e", path)
    assert "[restart] no metadata save file, starting with a clean cache" in output_once_serving(s)
    with s.conn() as c:
        want = fill(c, 600)
        before = gets_all(c, want)
        assert len(before) == len(want)
        ttls = {k: ttl_of(c, k) for k in list(want)[:30] if ttl_of(c, k) != -1}
        c.call("incr counter 1\r\n", "NOT_FOUND\r\n")
        c.set("counter", "41")
        c.call("incr counter 1\r\n", "42\r\n")
        stats = c.stats()
    graceful_stop(s)
    assert "Gracefully stopping" in s.output()
    assert os.path.exists(meta_of(path))
    next_second(s, path)
    s2 = start("-m", "64", "-e", path)
    with s2.conn() as c:
        after = gets_all(c, want)
        # The metadata are read once: a crash from here on must not find them again.
        assert not os.path.exists(meta_of(path))
        assert after == before  # value, flags and cas, every one
        for k, ttl in ttls.items():
            left = ttl_of(c, k)
            assert 0 < left <= ttl
        assert c.get("counter") == b"42"
        c.call("incr counter 1\r\n", "43\r\n")
        st = c.stats()
        assert int(st["curr_items"]) == int(stats["curr_items"])
        # The cas counter continues: a new item's cas is above every old one.
        c.set("new", "x")
        newcas = gets_all(c, ["new"])["new"][2]
        assert newcas > max(v[2] for v in before.values())


def test_shutdown_graceful_keeps_items(start, tmp_path):
    path = tmp_path / "mem"
    s = start("-A", "-m", "64", "-e", path)
    with s.conn() as c:
        c.set("a", "one", flags=5)
        c.send("shutdown graceful\r\n")
        assert c.closed()
    s.proc.wait(timeout=30)  # it stops by itself, saving on the way
    assert s.stop(check=False) == 0
    next_second(s, path)
    s2 = start("-m", "64", "-e", path)
    with s2.conn() as c:
        c.send("get a\r\n")
        assert c.until_end() == b"VALUE a 5 3\r\none\r\nEND\r\n"


def test_items_expire_while_stopped(start, tmp_path):
    path = tmp_path / "mem"
    s = start("-m", "64", "-e", path)
    with s.conn() as c:
        c.set("short", "bo", exptime=2)
        c.set("long", "mo", exptime=100)
    set_at = time.time()
    graceful_stop(s)
    # The short one's TTL runs out while the server is stopped (the clock is the wall's).
    while time.time() < set_at + 3.2:
        time.sleep(0.1)
    s2 = start("-m", "64", "-e", path)
    with s2.conn() as c:
        assert c.get("short") is None
        assert c.get("long") == b"mo"


def test_fill_past_memory_then_restart(start, tmp_path):
    """Items evicted, pages moved between classes: what the server held at its stop, every
    key of it with its cas and exptime, is what it holds after (metadump, all classes)."""
    path = tmp_path / "mem"
    args = ("-m", "40", "-e", path)
    s = start(*args)
    with s.conn() as c:
        for i in range(4000):
            size = 100 if i < 2000 else 9000
            c.send(f"set key{i} {i} {0 if i % 2 else 3000} {size} noreply\r\n" + "v" * size + "\r\n")
        c.send("version\r\n")
        assert c.line().startswith(b"VERSION")  # every set before it has run
    with s.conn() as c:
        before = sorted(metadump(c, "all"))
        stats = c.stats()
    assert int(stats["evictions"]) > 0
    graceful_stop(s)
    next_second(s, path)
    s2 = start(*args)
    with s2.conn() as c:
        after = sorted(metadump(c, "all"))
        # la= (last access) and exp= are absolute times: unchanged across the stop.
        assert after == before
        st = c.stats()
        assert int(st["curr_items"]) == len(before)
        # And the cache works on: new items in, old ones out as memory asks.
        for i in range(3000):
            c.send(f"set more{i} 0 0 9000 noreply\r\n" + "w" * 9000 + "\r\n")
        assert c.set("last", "x") == b"STORED\r\n"
        assert c.get("last") == b"x"


def test_changed_settings_start_clean(start, tmp_path):
    path = tmp_path / "mem"
    for changed, key, old in ((("-m", "65"), "maxbytes", str(64 << 20)),
                              (("-m", "64", "-I", "2m"), "item_size_max", str(1 << 20)),
                              (("-m", "64", "-n", "64"), "chunk_size", "48"),
                              (("-m", "64", "-C"), "use_cas", "true")):
        s = start("-m", "64", "-e", path)
        with s.conn() as c:
            c.set("a", "kept?")
        graceful_stop(s)
        next_second(s, path)
        s2 = start(*changed, "-e", path)
        out = output_once_serving(s2)
        assert f"[restart] restart incompatible due to setting for [{key}] [old value: {old}]" in out
        assert "[restart] failed to validate metadata, starting with a clean cache" in out
        with s2.conn() as c:
            assert c.get("a") is None
            c.set("b", "works")
            assert c.get("b") == b"works"
        s2.stop()
        assert not os.path.exists(meta_of(path))


def test_unclean_stop_starts_empty(start, tmp_path):
    path = tmp_path / "mem"
    s = start("-m", "64", "-e", path)
    with s.conn() as c:
        c.set("a", "one")
    s.stop(signal.SIGKILL, check=False)
    s2 = start("-m", "64", "-e", path)
    assert "[restart] no metadata save file, starting with a clean cache" in output_once_serving(s2)
    with s2.conn() as c:
        assert c.get("a") is None
        c.set("a", "two")
    graceful_stop(s2)
    next_second(s2, path)
    # A clean restart, then a crash: the metadata were used up at the start.
    s3 = start("-m", "64", "-e", path)
    with s3.conn() as c:
        assert c.get("a") == b"two"
    s3.stop(signal.SIGKILL, check=False)
    s4 = start("-m", "64", "-e", path)
    with s4.conn() as c:
        assert c.get("a") is None
    # SIGTERM is no graceful stop either (memcached saves only on SIGUSR1).
    with s4.conn() as c:
        c.set("a", "three")
    s4.stop()
    assert not os.path.exists(meta_of(path))


def test_empty_metadata_refused(start, tmp_path):
    path = tmp_path / "mem"
    open(meta_of(path), "w").close()
    with pytest.raises(ServerError) as e:
        start.attempt("-m", "64", "-e", path)
    assert "[restart] Failed to read a tag from metadata file" in e.value.output
    assert e.value.status != 0


def test_too_small_for_the_classes(start, tmp_path):
    with pytest.raises(ServerError) as e:
        start.attempt("-m", "8", "-e", tmp_path / "mem")
    assert "max memory must be at least 39 megabytes" in e.value.output


@pytest.mark.locus_only
def test_second_server_on_the_file_refused(start, tmp_path):
    path = tmp_path / "mem"
    start("-m", "64", "-e", path)
    with pytest.raises(ServerError) as e:
        start.attempt("-m", "64", "-e", path)
    assert "cannot lock the memory file" in e.value.output


def saved_pair(start, tmp_path):
    """A memory file and its metadata from a graceful stop, with the items stored."""
    path = tmp_path / "mem"
    s = start("-m", "48", "-e", path)
    with s.conn() as c:
        want = fill(c, 300, sizes=(5, 50, 500, 3000))
        want = {k: v for k, v in gets_all(c, want).items()}
    graceful_stop(s)
    return path, want


def check_served(start, path, want, meta=None):
    """Start on path (with meta as FILE.meta): refused with a [restart] message, or serving
    either every item as saved or none of them, never some other value."""
    if meta is not None:
        with open(meta_of(path), "wb") as f:
            f.write(meta)
    try:
        s = start.attempt("-m", "48", "-e", path)
        output_once_serving(s)
    except (ServerError, OSError) as e:
        # Refused (it listens before it reads the file, so it may have been reached first).
        if isinstance(e, ServerError):
            status, out = e.status, e.output
        else:
            s.proc.wait(timeout=30)
            status = s.stop(check=False)
            out = s.output()
        assert status not in (None, 0) and status > 0, (status, out)  # refused, not killed
        assert "[restart]" in out, out
        os.unlink(meta_of(path))
        return "refused"
    with s.conn() as c:
        got = gets_all(c, want)
        assert got in ({}, want), (len(got), len(want))
        c.set("fresh", "x")
        assert c.get("fresh") == b"x"
    s.stop()
    return "kept" if got else "clean"


@pytest.mark.locus_only
def test_fuzzed_metadata(start, tmp_path):
    """Truncated, edited and garbled metadata: refused or ignored with a message, or (when the
    edit changed nothing that matters) every item kept; never a crash, never a partial cache."""
    path, want = saved_pair(start, tmp_path)
    meta = open(meta_of(path), "rb").read()
    pristine = tmp_path / "mem.pristine"
    shutil.copyfile(path, pristine)
    lines = meta.split(b"\n")
    rnd = random.Random(37)
    cases = [meta[:n] for n in (1, 9, len(meta) // 3, len(meta) // 2, len(meta) - 30, len(meta) - 1)]
    for _ in range(12):  # bytes flipped
        b = bytearray(meta)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        cases.append(bytes(b))
    for i in range(1, len(lines) - 1, max(1, len(lines) // 10)):  # a line dropped, doubled
        cases.append(b"\n".join(lines[:i] + lines[i + 1:]))
        cases.append(b"\n".join(lines[:i] + [lines[i]] + lines[i:]))
    cases += [b"\x00" * 200, b"Tlocus-kv\n" + b"Kmaxbytes 1\n" * 50, b"Tmain\nKmaxbytes 1\n",
              os.urandom(4096), meta.replace(b"Kpages_1 ", b"Kpages_1 99999,"),
              meta.replace(b"Kitems_", b"Kitems_9")]
    for case in cases:
        shutil.copyfile(pristine, path)
        check_served(start, path, want, case)
    # The untouched pair still restores everything.
    shutil.copyfile(pristine, path)
    assert check_served(start, path, want, meta) == "kept"


@pytest.mark.locus_only
def test_damaged_memory_file(start, tmp_path):
    """Valid metadata beside a memory file cut short or zeroed: the counts do not match what
    the stop saved, so the cache starts clean."""
    path, want = saved_pair(start, tmp_path)
    meta = open(meta_of(path), "rb").read()
    pristine = tmp_path / "mem.pristine"
    shutil.copyfile(path, pristine)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 4)
    assert check_served(start, path, want, meta) == "clean"
    shutil.copyfile(pristine, path)
    with open(path, "r+b") as f:
        f.write(b"\x00" * (1 << 20))  # the first page: slab class 1's items
    assert check_served(start, path, want, meta) == "clean"
    shutil.copyfile(pristine, path)
    assert check_served(start, path, want, meta) == "kept"


def test_restart_keeps_the_table_size(start, tmp_path):
    """As memcached: the table is made as large as it was, though its items have gone."""
    from test_hash import load, wait_level
    path = tmp_path / "mem"
    s = start("-m", "128", "-e", path)
    with s.conn() as c:
        load(c, 1 << 17)
        wait_level(c, 17)
        c.send(b"".join(b"delete z%d noreply\r\n" % i for i in range(1 << 17)))
        c.set("kept", "yes")
        assert int(c.stats()["curr_items"]) == 1
    graceful_stop(s)
    next_second(s, path)
    s2 = start("-m", "128", "-e", path)
    with s2.conn() as c:
        assert c.stats()["hash_power_level"] == "17"
        assert c.get("kept") == b"yes"
