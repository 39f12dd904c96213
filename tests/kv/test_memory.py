"""Memory limit (-m): eviction keeps the server answering with the recent keys, and the
resident size stays near the limit."""

import time

import pytest

from kvlib import rss_kb

# Resident memory allowed on top of -m: code, thread stacks, connection buffers, the hash
# table, allocator slack. Generous on purpose: the test is about not growing with the data.
RSS_OVERHEAD_MB = 40


def fill(c, prefix, count, size, batch=200):
    """Store count keys prefix0.. with size-byte values, pipelined in batches."""
    value = b"v" * size
    for start in range(0, count, batch):
        n = min(batch, count - start)
        c.send(b"".join(b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix, i, size, value)
                        for i in range(start, start + n)))
        c.call("mn\r\n", "MN\r\n")   # a barrier: every set before it has been handled


@pytest.mark.parametrize("server_args", [["-m", "2"]])
def test_eviction_under_a_small_limit(server):
    count, size = 12000, 1000   # about 12 MB into 2 MB
    with server.conn(timeout=20) as c:
        fill(c, b"key", count, size)
        c.call("version\r\n", "VERSION ")
        c.line()
        early = sum(c.get(f"key{i}") is not None for i in range(100))
        recent = sum(c.get(f"key{i}") == b"v" * size for i in range(count - 100, count))
        assert early == 0, f"{early} of the first 100 keys survived 12 MB written into 2 MB"
        assert recent >= 90, f"only {recent} of the last 100 keys are there"
        st = c.stats()
        assert int(st["evictions"]) > 0, st
        assert int(st["curr_items"]) < count // 3, st["curr_items"]
        assert int(st["bytes"]) <= 2 << 20, st["bytes"]
        # and it still stores and serves
        c.call("set after 0 0 5\r\nhello\r\nget after\r\n", "STORED\r\nVALUE after 0 5\r\nhello\r\nEND\r\n")


@pytest.mark.parametrize("server_args", [["-m", "8"]])
def test_resident_memory_stays_near_the_limit(server):
    with server.conn(timeout=30) as c:
        fill(c, b"a", 12000, 4000)        # 48 MB of 4000-byte values
        fill(c, b"b", 40000, 100)         # and 4 MB of small ones
        rss = rss_kb(server.pid) / 1024
        assert rss < 8 + RSS_OVERHEAD_MB, f"VmRSS {rss:.1f} MB after 52 MB into -m 8"
        assert int(c.stats()["evictions"]) > 0
        c.call("set after 0 0 5\r\nhello\r\nget after\r\n", "STORED\r\nVALUE after 0 5\r\nhello\r\nEND\r\n")


def slab_classes(c):
    """{class id: {field: int}} from stats slabs."""
    out = {}
    for name, value in c.stats("slabs").items():
        cls, _, field = name.partition(":")
        if field and cls.isdigit():
            out.setdefault(int(cls), {})[field] = int(value)
    return out


def class_of(c, key):
    """The slab class holding key (from lru_crawler metadump on memcached, from the
    classes' used chunks otherwise): the class with the largest chunk that holds items."""
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
