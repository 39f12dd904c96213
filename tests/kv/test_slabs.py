"""Slab pages: moved between classes as the size mix shifts (memcached's slab_automove), and
reused when their items have expired before new memory is taken. Run under ThreadSanitizer
too: pages move on the main thread while the workers store."""

import threading
import time

import pytest

from test_memory import fill


def slab_classes(c):
    """{class id: {field: int}} from stats slabs."""
    out = {}
    for name, value in c.stats("slabs").items():
        cls, _, field = name.partition(":")
        if field and cls.isdigit():
            out.setdefault(int(cls), {})[field] = int(value)
    return out


def class_of(c, key):
    """The class of key, just stored as the largest item so far: the class with the largest
    chunks among those holding items."""
    used = {k: v for k, v in slab_classes(c).items() if v.get("used_chunks", 0) > 0}
    return max(used, key=lambda k: used[k]["chunk_size"])


@pytest.mark.parametrize("server_args", [["-m", "16", "-o", "slab_automove=1,slab_automove_window=3"]])
def test_pages_move_to_the_class_that_needs_them(server):
    """After the cache is full of small values, large ones take over: pages move from the
    small values' class to the large values' one (memcached's slab_automove), so that the
    last 1000 large keys written all stay. Waits for the move as a condition, with a
    deadline; it never times anything."""
    large = 4000
    keep = 1000
    with server.conn(timeout=30) as c:
        fill(c, b"small", 100000, 200)             # about 28 MB of 200-byte values into 16 MB
        c.call(b"set probe 0 0 %d\r\n%s\r\n" % (large, b"L" * large), "STORED\r\n")
        big = class_of(c, "probe")
        per_page = slab_classes(c)[big]["chunks_per_page"]
        need = -(-keep // per_page) + 1             # pages for `keep` items, and one spare
        written, deadline = 0, time.monotonic() + 60
        while slab_classes(c)[big]["total_pages"] < need:
            assert time.monotonic() < deadline, (
                f"class {big} still has {slab_classes(c)[big]['total_pages']} pages of the {need} "
                f"that {keep} values of {large} bytes need, after {written} of them were written")
            fill(c, b"shift%d_" % written, 500, large)
            written += 500
        fill(c, b"last", keep, large)
        kept = sum(c.get(f"last{i}") == b"v" * large for i in range(keep))
        assert kept == keep, f"{kept} of the last {keep} large values were kept"
        st = c.stats()
        assert int(st["slabs_moved"]) >= need - 1, st["slabs_moved"]


@pytest.mark.locus_only
@pytest.mark.parametrize("server_args", [["-m", "64", "--no-lru-crawler", "-o", "slab_automove=0"]])
def test_expired_items_are_reused_before_new_memory(clock_server, clock):
    """A class whose page is full of expired items reuses their chunks for new items
    instead of taking a new page (memcached's do_item_alloc without its LRU maintainer)."""
    with clock_server.conn(timeout=30) as c:
        c.call("set k0 0 1 100\r\n" + "x" * 100 + "\r\n", "STORED\r\n")
        cls = class_of(c, "k0")
        per_page = slab_classes(c)[cls]["chunks_per_page"]
        c.send(b"".join(b"set k%d 0 1 100 noreply\r\n%s\r\n" % (i, b"x" * 100)
                        for i in range(1, per_page)))
        c.call("mn\r\n", "MN\r\n")
        before = slab_classes(c)[cls]
        assert before["free_chunks"] == 0 and before["total_pages"] == 1, before
        malloced = int(c.stats("slabs")["total_malloced"])
        clock.advance(1)
        fill(c, b"new", per_page, 100)
        after = slab_classes(c)[cls]
        assert after["total_pages"] == 1, after
        assert int(c.stats("slabs")["total_malloced"]) == malloced
        items = c.stats("items")
        assert int(items[f"items:{cls}:reclaimed"]) >= per_page, items
        assert int(c.stats()["reclaimed"]) >= per_page
        assert all(c.get(f"new{i}") == b"v" * 100 for i in range(0, per_page, 97))


def value_of(key, size):
    """What key holds: its own name repeated, so that a value copied to the wrong place, cut,
    or mixed with another shows."""
    k = key.encode() + b"|"
    return (k * (size // len(k) + 1))[:size]


@pytest.mark.parametrize("server_args", [["-m", "16", "-t", "4", "-o", "slab_automove=0"]])
def test_pages_move_while_clients_store_and_read(server):
    """slabs reassign, again and again, while four clients store and read values of two sizes:
    every value read back is the one stored for its key (items in a moved page are copied or
    evicted, never torn or mixed up), and the pages do move."""
    small, large, keys = 300, 3000, 400
    with server.conn(timeout=30) as c:
        c.call("slabs automove 0\r\n", "OK\r\n")
        for i in range(keys):
            c.set(f"s{i}", value_of(f"s{i}", small))
            c.set(f"l{i}", value_of(f"l{i}", large))
        fill(c, b"pad", 12000, small)               # the small class gets several pages
        c.set("s0", value_of("s0", small))
        src = class_of_size(c, small)
        c.set("l0", value_of("l0", large))
        dst = class_of_size(c, large)
        assert src != dst
        stop, errors = threading.Event(), []

        def client(n):
            try:
                with server.conn(timeout=30) as cc:
                    i = 0
                    while not stop.is_set():
                        key = f"{'sl'[i % 2]}{(i * 7 + n) % keys}"
                        size = small if key[0] == "s" else large
                        if i % 3 == 0:
                            assert cc.set(key, value_of(key, size)) == b"STORED\r\n"
                        else:
                            v = cc.get(key)
                            if v is not None and v != value_of(key, size):
                                errors.append((key, v[:40]))
                        i += 1
            except Exception as e:   # reported below; the test must not hang on it
                errors.append(repr(e))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        try:
            moved = 0
            deadline = time.monotonic() + 60
            while moved < 6 and time.monotonic() < deadline:
                a, b = (src, dst) if moved % 2 == 0 else (dst, src)
                before = int(c.stats()["slabs_moved"])
                c.send(f"slabs reassign {a} {b}\r\n")
                r = c.line()
                if r == b"OK\r\n":
                    while int(c.stats()["slabs_moved"]) == before:
                        assert time.monotonic() < deadline, (
                            f"the move of a page from class {a} to {b} never finished")
                        time.sleep(0.01)
                    moved += 1
                elif r.startswith(b"NOSPARE") and moved % 2 == 1:
                    moved += 1    # the large class is down to its last page: move on
                else:
                    assert r.startswith(b"BUSY") or r.startswith(b"NOSPARE"), r
                    time.sleep(0.01)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        assert not errors, errors[:5]
        assert moved == 6, f"{moved} of 6 page moves in 60 s"
        assert int(c.stats()["slabs_moved"]) >= 3
    assert server.alive()


def class_of_size(c, size):
    """The class the last stored item of this value size went to: the one whose chunk is the
    smallest that holds it among those with items."""
    fits = {k: v for k, v in slab_classes(c).items()
            if v.get("used_chunks", 0) > 0 and v["chunk_size"] >= size + 60}
    return min(fits, key=lambda k: fits[k]["chunk_size"])
