"""Items larger than slab_chunk_max (memcached's chunked items): stored as a header and a chain
of chunks of at most slab_chunk_max bytes, so that they take about their size in memory rather
than one chunk of -I bytes. Every reader of a value is checked with values that are their
key's name repeated (a piece copied to the wrong place, cut or mixed with another shows), at
sizes around the chunk boundaries: get, gets, gat, meta get, the binary protocol, append and
prepend, cas, a restart with -e, and the page mover's rescue of chunks. Run under ASan and
ThreadSanitizer too: the concurrency test sends held chunked values from many connections
while pages of the chunks' class move."""

import os
import random
import signal
import struct
import threading
import time

import pytest

from kvlib import Op, Status, set_extras
from test_restart import meta_of, next_second

CHUNK = 4096    # -o slab_chunk_max=4096 (bytes, as memcached 1.6.18 reads it)
SMALL_CHUNKS = ["-m", "64", "-o", f"slab_chunk_max={CHUNK}"]


def value_of(key, size, version=0):
    """key's name (and a version) repeated to size bytes."""
    k = f"{key}.{version}|".encode()
    return (k * (size // len(k) + 1))[:size]


def boundary_sizes():
    """Value sizes around every place a chunk could end: multiples of slab_chunk_max, and of
    slab_chunk_max less a chunk header (56 bytes here, 48 in memcached), less the "\\r\\n"
    and the item header, for one to three chunks; and up to the largest value of -I 1m."""
    sizes = {1, 100, CHUNK - 200}
    for k in (1, 2, 3):
        for room in (CHUNK, CHUNK - 56, CHUNK - 48):
            for d in (-70, -60, -59, -58, -3, -2, -1, 0, 1, 2):
                sizes.add(k * room + d)
    sizes |= {100000, 512 * 1024, 1000000, (1 << 20) - 80}
    return sorted(sizes)


def slab_rows(c):
    out = {}
    for name, value in c.stats("slabs").items():
        cls, _, field = name.partition(":")
        if field and cls.isdigit():
            out.setdefault(int(cls), {})[field] = int(value)
    return out


@pytest.mark.parametrize("server_args", [SMALL_CHUNKS])
def test_values_around_chunk_boundaries(server):
    """Every size reads back whole with get, gets and gat, and under its flags; bytes counted
    per item stay near its size (a chain of chunks, not an -I chunk)."""
    sizes = boundary_sizes()
    with server.conn(timeout=30) as c:
        for i, n in enumerate(sizes):
            key = f"b{n}"
            assert c.set(key, value_of(key, n), flags=i) == b"STORED\r\n", n
        for i, n in enumerate(sizes):
            key = f"b{n}"
            want = value_of(key, n)
            c.send(f"get {key}\r\n")
            assert c.line() == f"VALUE {key} {i} {n}\r\n".encode()
            assert c.read(n + 2) == want + b"\r\n", n
            c.expect("END\r\n")
            c.send(f"gets {key}\r\n")
            assert c.line().startswith(f"VALUE {key} {i} {n} ".encode())
            assert c.read(n + 2) == want + b"\r\n", n
            c.expect("END\r\n")
            c.send(f"gat 100 {key}\r\n")
            assert c.line() == f"VALUE {key} {i} {n}\r\n".encode()
            assert c.read(n + 2) == want + b"\r\n", n
            c.expect("END\r\n")
        # A multi-key get of chunked values, sent from the items.
        keys = [f"b{n}" for n in sizes if n > CHUNK][:12]
        c.send(("get " + " ".join(keys) + "\r\n").encode())
        for key in keys:
            n = int(key[1:])
            assert c.line() == f"VALUE {key} {sizes.index(n)} {n}\r\n".encode()
            assert c.read(n + 2) == value_of(key, n) + b"\r\n"
        c.expect("END\r\n")
        st = c.stats()
        assert int(st["curr_items"]) == len(sizes)
        # Each chunked value takes its size plus less than one chunk (and a header), not -I.
        assert int(st["bytes"]) < sum(sizes) + len(sizes) * (CHUNK + 600), st["bytes"]


@pytest.mark.parametrize("server_args", [SMALL_CHUNKS])
def test_largest_value_and_one_byte_more(server):
    """-I 1m's largest value (memcached's: 1 MB less the item header, cas, key and its NUL
    and the "\\r\\n") is chunked and stored; one byte more is too large."""
    with server.conn(timeout=30) as c:
        key = "k"
        n = (1 << 20) - 48 - 8 - 2 - 2
        assert c.set(key, value_of(key, n)) == b"STORED\r\n"
        assert c.get(key) == value_of(key, n)
        c.send(b"set k2 0 0 %d\r\n%s\r\n" % (n + 1, b"x" * (n + 1)))
        assert c.line() == b"SERVER_ERROR object too large for cache\r\n"


@pytest.mark.parametrize("server_args", [SMALL_CHUNKS])
def test_append_and_prepend_across_chunk_boundaries(server):
    """Appends and prepends of a few bytes carry a value over one chunk boundary after
    another; then a chunked value appended to a chunked one, and prepended."""
    with server.conn(timeout=30) as c:
        for cmd in ("append", "prepend"):
            key = f"{cmd}er"
            want = b"seed"
            assert c.set(key, want) == b"STORED\r\n"
            i = 0
            while len(want) < 3 * CHUNK + 200:
                part = b"%d-" % i + b"x" * (i % 37)
                c.call(b"%s %s 0 0 %d\r\n%s\r\n" % (cmd.encode(), key.encode(), len(part), part),
                       "STORED\r\n")
                want = want + part if cmd == "append" else part + want
                assert c.get(key) == want, (cmd, len(want))
                i += 1
            big = value_of("big", 2 * CHUNK + 77)
            c.call(b"%s %s 0 0 %d\r\n%s\r\n" % (cmd.encode(), key.encode(), len(big), big),
                   "STORED\r\n")
            want = want + big if cmd == "append" else big + want
            assert c.get(key) == want
        # Appending past -I is NOT_STORED and leaves the value alone.
        n = (1 << 20) - 48 - 8 - 6 - 2 - 100
        assert c.set("full", value_of("full", n)) == b"STORED\r\n"
        c.call(b"append full 0 0 200\r\n%s\r\n" % (b"y" * 200), "NOT_STORED\r\n")
        assert c.get("full") == value_of("full", n)


@pytest.mark.parametrize("server_args", [SMALL_CHUNKS])
def test_cas_and_incr_on_chunked_values(server):
    """gets' cas replaces a chunked value, a stale one does not; incr on a chunked value is
    non-numeric (memcached: too large to be a number)."""
    with server.conn(timeout=30) as c:
        n = 3 * CHUNK + 5
        assert c.set("c", value_of("c", n)) == b"STORED\r\n"
        c.send("gets c\r\n")
        cas = int(c.line().split()[4])
        c.read(n + 2)
        c.expect("END\r\n")
        new = value_of("c", n + 9000, 1)
        c.call(b"cas c 0 0 %d %d\r\n%s\r\n" % (len(new), cas, new), "STORED\r\n")
        c.call(b"cas c 0 0 %d %d\r\n%s\r\n" % (len(new), cas, new), "EXISTS\r\n")
        assert c.get("c") == new
        num = b"1" + b" " * (2 * CHUNK)
        assert c.set("num", num) == b"STORED\r\n"
        c.call("incr num 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
        assert c.get("num") == num


@pytest.mark.parametrize("server_args", [SMALL_CHUNKS])
def test_meta_commands_on_chunked_values(server):
    """ms stores a chunked value, mg returns it with its flags, size and cas; ma refuses it."""
    with server.conn(timeout=30) as c:
        for n in (CHUNK - 60, CHUNK + 1, 5 * CHUNK - 1, 200000):
            key = f"m{n}"
            v = value_of(key, n)
            c.call(b"ms %s %d F7 T0\r\n%s\r\n" % (key.encode(), n, v), "HD\r\n")
            c.send(f"mg {key} s v f k\r\n")
            assert c.line() == f"VA {n} s{n} f7 k{key}\r\n".encode()
            assert c.read(n + 2) == v + b"\r\n"
            c.send(f"mg {key} v q\r\nmn\r\n")
            assert c.line() == f"VA {n}\r\n".encode()
            assert c.read(n + 2) == v + b"\r\n"
            c.expect("MN\r\n")
        c.call("ma m200000\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")


@pytest.mark.parametrize("server_args", [SMALL_CHUNKS])
def test_binary_protocol_on_chunked_values(server):
    """Binary set, get, getk, gat and append of chunked values."""
    with server.bconn(timeout=30) as b:
        for n in (CHUNK - 100, CHUNK, 2 * CHUNK + 3, 300000):
            key = f"bin{n}".encode()
            v = value_of(key.decode(), n)
            assert b.set(key, v, flags=9).status == Status.SUCCESS
            flags, got, cas = b.get(key)
            assert (flags, got) == (9, v) and cas
            r = b.call(Op.GETK, key)
            assert (r.status, r.key, r.value) == (Status.SUCCESS, key, v)
            r = b.call(Op.GAT, key, extras=struct.pack(">I", 100))
            assert (r.status, r.value) == (Status.SUCCESS, v)
            r = b.call(Op.APPEND, key, b"+tail")
            assert r.status == Status.SUCCESS
            assert b.get(key)[1] == v + b"+tail"
        r = b.call(Op.SET, b"huge", b"z" * (2 << 20), set_extras())
        assert r.status == Status.E2BIG


@pytest.mark.parametrize("server_args", [["-m", "64", "-o", "no_chunked_items"]])
def test_no_chunked_items(server):
    """-o no_chunked_items: slab_chunk_max is the page, so the largest class holds 1 MB items
    whole (memcached's); values still read back whole."""
    with server.conn(timeout=30) as c:
        assert c.stats("settings")["slab_chunk_max"] == str(1 << 20)
        for n in (5000, 600000, 1000000):
            assert c.set(f"n{n}", value_of(f"n{n}", n)) == b"STORED\r\n"
            assert c.get(f"n{n}") == value_of(f"n{n}", n)
        assert max(r["chunk_size"] for r in slab_rows(c).values()) == 1 << 20


@pytest.mark.parametrize("server_args", [["-m", "60", "-o", "slab_chunk_max=4096,slab_automove=0"]])
def test_many_11k_items_fit(server):
    """memcached's slabs-reassign-chunked: 5100 values of 11000 bytes into 60 MB. Chunked, they
    take three 4 KB chunks each and more than 4000 stay (one -I chunk each kept 60)."""
    value = b"C" * 11000
    with server.conn(timeout=30) as c:
        for start in range(0, 5100, 300):
            c.send(b"".join(b"set nfoo%d 0 0 11000 noreply\r\n%s\r\n" % (i, value)
                            for i in range(start, min(start + 300, 5100))))
            c.call("mn\r\n", "MN\r\n")
        assert int(c.stats()["curr_items"]) > 4000
        hits = sum(c.get(f"nfoo{i}") == value for i in range(5100))
        assert hits > 4000


def chunk_class(c):
    """The class of slab_chunk_max: chunk_size 4096."""
    return next(k for k, v in slab_rows(c).items() if v["chunk_size"] == CHUNK)


@pytest.mark.parametrize("server_args", [["-m", "60", "-o", "slab_chunk_max=4096,slab_automove=0"]])
def test_page_moves_rescue_chunks(server):
    """Pages of the chunks' class moved to the pool: chunks in them are copied to free chunks
    of the class (slab_reassign_chunk_rescues) or their items go; every value still there
    reads back whole, and new values find the pooled pages."""
    with server.conn(timeout=30) as c:
        keys = 3000
        for start in range(0, keys, 300):
            c.send(b"".join(b"set r%d 0 0 11000 noreply\r\n%s\r\n" % (i, value_of(f"r{i}", 11000))
                            for i in range(start, start + 300)))
            c.call("mn\r\n", "MN\r\n")
        # Free chunks in the class, in pages other than the one moved first.
        c.send(b"".join(b"delete r%d noreply\r\n" % i for i in range(keys - 600, keys)))
        c.call("mn\r\n", "MN\r\n")
        cls = chunk_class(c)
        moved = 0
        deadline = time.monotonic() + 30
        while moved < 3:
            before = int(c.stats()["slabs_moved"])
            c.send(f"slabs reassign {cls} 0\r\n")
            r = c.line()
            assert r in (b"OK\r\n", b"BUSY currently processing reassign request\r\n"), r
            while int(c.stats()["slabs_moved"]) == before:
                assert time.monotonic() < deadline, "a page move never finished"
                time.sleep(0.01)
            moved += r == b"OK\r\n"
        st = c.stats()
        assert int(st["slab_reassign_chunk_rescues"]) > 0, st
        assert int(st["slab_global_page_pool"]) > 0
        hits = 0
        for i in range(keys - 600):
            v = c.get(f"r{i}")
            assert v is None or v == value_of(f"r{i}", 11000), i
            hits += v is not None
        assert hits > keys - 600 - 3 * 256, hits    # at most the moved pages' items went


@pytest.mark.locus_only
def test_restart_keeps_chunked_items(start, tmp_path):
    """-e: a graceful stop and a start with the same file bring chunked values back whole,
    counted in the same bytes, their chunks no one's free chunks (new values do not overwrite
    them)."""
    path = tmp_path / "mem"
    args = ("-m", "64", "-e", path, "-o", f"slab_chunk_max={CHUNK}")
    s = start(*args)
    sizes = [10, CHUNK - 60, CHUNK + 1, 3 * CHUNK, 11000, 100000, 900000]
    with s.conn(timeout=30) as c:
        for i, n in enumerate(sizes):
            assert c.set(f"e{i}", value_of(f"e{i}", n), flags=i) == b"STORED\r\n"
        before = c.stats()
    s.stop(signal.SIGUSR1)
    assert os.path.exists(meta_of(path))
    next_second(s, path)
    s2 = start(*args)
    with s2.conn(timeout=30) as c:
        for i, n in enumerate(sizes):
            c.send(f"get e{i}\r\n")
            assert c.line() == f"VALUE e{i} {i} {n}\r\n".encode()
            assert c.read(n + 2) == value_of(f"e{i}", n) + b"\r\n"
            c.expect("END\r\n")
        after = c.stats()
        assert after["curr_items"] == before["curr_items"]
        assert after["bytes"] == before["bytes"]
        for i in range(200):
            assert c.set(f"new{i}", value_of(f"new{i}", 7000 + i)) == b"STORED\r\n"
        for i, n in enumerate(sizes):
            assert c.get(f"e{i}") == value_of(f"e{i}", n)
    assert "[restart]" not in s2.output() or "failed" not in s2.output(), s2.output()


@pytest.mark.parametrize("server_args", [["-m", "48", "-t", "4", "-o",
                                          "slab_chunk_max=16384,slab_automove=0"]])
def test_concurrent_large_values_stay_whole(server):
    """Eight clients (more than the CPUs) store and read values of 1 KB to 300 KB under few
    keys while pages of the chunks' class move (at least ten moves, and 3000 reads): every
    value read is one that was stored for its key, whole (a version the key held), never torn
    or mixed with another."""
    keys = 24
    sizes = [1000, 16000, 16384, 16500, 40000, 100000, 300000]
    stop, errors, reads = threading.Event(), [], [0]

    def client(n):
        rnd = random.Random(n)
        try:
            with server.conn(timeout=30) as c:
                while not stop.is_set():
                    k = rnd.randrange(keys)
                    key = f"w{k}"
                    if rnd.random() < 0.4:
                        version = rnd.randrange(1000)
                        size = sizes[(k + version) % len(sizes)]
                        assert c.set(key, value_of(key, size, version)) == b"STORED\r\n"
                    else:
                        v = c.get(key)
                        if v is None:
                            continue
                        head = v[:v.index(b"|") + 1] if b"|" in v else b""
                        version = int(head.split(b".")[1][:-1]) if head.count(b".") == 1 else -1
                        size = sizes[(k + version) % len(sizes)] if version >= 0 else -1
                        if len(v) != size or v != value_of(key, size, version):
                            errors.append((key, len(v), v[:40]))
                        reads[0] += 1
        except Exception as e:   # reported below; the test must not hang on it
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    try:
        with server.conn(timeout=30) as c:
            deadline = time.monotonic() + 120
            moves = 0
            while (reads[0] < 3000 or moves < 10) and not errors:
                assert time.monotonic() < deadline, f"{reads[0]} reads, {moves} moves in 120 s"
                rows = slab_rows(c)
                cls = next((k for k, v in rows.items() if v["chunk_size"] == 16384), None)
                if cls and rows[cls]["total_pages"] > 2:
                    c.send(f"slabs reassign {cls} 0\r\n")
                    c.line()
                time.sleep(0.01)
                moves = int(c.stats()["slabs_moved"])
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors[:5]
    assert moves > 0
    assert server.alive()


def test_udp_get_of_chunked_values(start):
    """A get over UDP of values chained in chunks: the reply, cut into datagrams, is the value
    whole, as over TCP."""
    from test_udp import Udp, start_udp
    s = start_udp(start, "-m", "64", "-o", f"slab_chunk_max={CHUNK}")
    sizes = (CHUNK - 60, CHUNK + 1, 3 * CHUNK + 7, 20000)
    with s.conn() as c:
        for n in sizes:
            assert c.set(f"u{n}", value_of(f"u{n}", n), flags=3) == b"STORED\r\n"
    with Udp(s.udp_port) as u:
        for n in sizes:
            got = u.ask(f"get u{n}\r\n")
            assert got == b"VALUE u%d 3 %d\r\n%s\r\nEND\r\n" % (n, n, value_of(f"u{n}", n))


@pytest.mark.parametrize("server_args", [["-m", "64", "-o", "slab_chunk_max=4096,slab_automove=0"]])
def test_page_move_rescues_chunked_items_headers(server):
    """A moved page of the class chunked items' headers are in (with small items around them):
    the headers are copied to free chunks of the class and the copies linked in their place,
    so every chunked value still reads back whole, and so does every small item."""
    with server.conn(timeout=30) as c:
        heads = 300
        for i in range(heads):
            assert c.set(f"h{i}", value_of(f"h{i}", 11000)) == b"STORED\r\n"
        rows = slab_rows(c)
        hcls = min(k for k, v in rows.items() if v.get("used_chunks", 0) >= heads)
        size, per_page = rows[hcls]["chunk_size"], rows[hcls]["chunks_per_page"]
        small = size - 70      # an item of 6-byte key and this value fills a chunk of hcls
        n = int(2.5 * per_page) - heads
        for start in range(0, n, 500):
            c.send(b"".join(b"set t%d 0 0 %d noreply\r\n%s\r\n" % (i, small, value_of(f"t{i}", small))
                            for i in range(start, min(start + 500, n))))
            c.call("mn\r\n", "MN\r\n")
        assert slab_rows(c)[hcls]["total_pages"] == 3
        first = n - int(1.5 * per_page)     # those stored in the second and third pages
        for start in range(first, n, 500):
            c.send(b"".join(b"delete t%d noreply\r\n" % i for i in range(start, min(start + 500, n))))
            c.call("mn\r\n", "MN\r\n")
        before = c.stats()
        c.call(f"slabs reassign {hcls} 0\r\n", "OK\r\n")
        deadline = time.monotonic() + 30
        while int(c.stats()["slabs_moved"]) == int(before["slabs_moved"]):
            assert time.monotonic() < deadline, "the page move never finished"
            time.sleep(0.01)
        st = c.stats()
        assert int(st["slab_reassign_rescues"]) > int(before["slab_reassign_rescues"])
        assert int(st["slab_reassign_evictions_nomem"]) == 0, st
        for i in range(heads):
            assert c.get(f"h{i}") == value_of(f"h{i}", 11000), i
        for i in range(0, first, 7):
            assert c.get(f"t{i}") == value_of(f"t{i}", small), i


@pytest.mark.parametrize("server_args", [["-m", "8", "-o", "slab_chunk_max=4096,slab_automove=0"]])
def test_every_chunk_comes_back(server):
    """Chunked values stored, replaced, appended to, evicted (8 MB is too small for them
    all), with page moves among them; once every key is deleted no class has a chunk in use:
    no header or chunk is lost on any of those paths."""
    rnd = random.Random(7)
    keys = 400
    with server.conn(timeout=30) as c:
        for round_ in range(3):
            for i in range(keys):
                n = rnd.choice((10, CHUNK - 60, CHUNK + 5, 9000, 3 * CHUNK, 70000))
                assert c.set(f"k{i}", value_of(f"k{i}", n, round_)) == b"STORED\r\n"
                if i % 5 == 0:
                    c.send(b"append k%d 0 0 4100\r\n%s\r\n" % (i, b"a" * 4100))
                    assert c.line() in (b"STORED\r\n", b"NOT_STORED\r\n")
            c.send(b"set toolarge 0 0 %d\r\n%s\r\n" % (2 << 20, b"z" * (2 << 20)))
            assert c.line() == b"SERVER_ERROR object too large for cache\r\n"
            cls = chunk_class(c)
            c.send(f"slabs reassign {cls} 0\r\n")
            assert c.line() in (b"OK\r\n", b"NOSPARE source class has no spare pages\r\n",
                                b"BUSY currently processing reassign request\r\n")
        assert int(c.stats()["evictions"]) > 0
        for i in range(keys):
            c.send(f"delete k{i}\r\n")
            assert c.line() in (b"DELETED\r\n", b"NOT_FOUND\r\n")
        deadline = time.monotonic() + 30
        while True:    # a page move still under way holds nothing once it ends
            rows = slab_rows(c)
            used = {k: v["used_chunks"] for k, v in rows.items() if v.get("used_chunks")}
            if not used:
                break
            assert time.monotonic() < deadline, used
            time.sleep(0.05)
        assert c.stats()["curr_items"] == "0"
        assert c.stats()["bytes"] == "0"
