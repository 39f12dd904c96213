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
    # A TTL the test's own clock.advance ends, not the wall clock: on a loaded machine
    # (ThreadSanitizer) storing a page of items took over a second, and the LRU maintainer
    # reclaimed the first ones before the page was full.
    ttl = 3600
    with clock_server.conn(timeout=30) as c:
        c.call(f"set k0 0 {ttl} 100\r\n" + "x" * 100 + "\r\n", "STORED\r\n")
        cls = class_of(c, "k0")
        per_page = slab_classes(c)[cls]["chunks_per_page"]
        c.send(b"".join(b"set k%d 0 %d 100 noreply\r\n%s\r\n" % (i, ttl, b"x" * 100)
                        for i in range(1, per_page)))
        c.call("mn\r\n", "MN\r\n")
        before = slab_classes(c)[cls]
        assert before["free_chunks"] == 0 and before["total_pages"] == 1, before
        malloced = int(c.stats("slabs")["total_malloced"])
        clock.advance(ttl)
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


def wait_stat(c, name, ok, what, seconds=30, sub=""):
    """The stats once ok(int(stats[name])) holds; fails with `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        st = c.stats(sub)
        if ok(int(st[name])):
            return st
        assert time.monotonic() < deadline, f"{what}: {name} is {st[name]}"
        time.sleep(0.05)


@pytest.mark.parametrize("server_args", [["-m", "60", "-o", "slab_reassign,slab_automove,"
                                          "lru_crawler,slab_automove_window=3"]])
def test_deleted_items_pages_go_back_to_the_pool(server):
    """memcached's slabs-reassign2: half of 5000 11 KB items deleted, the class's free pages
    go to the global pool within seconds (their live items rescued into its free chunks),
    so 7 KB items then find memory instead of evicting; after flush_all nearly all of it."""
    with server.conn(timeout=30) as c:
        value = b"B" * 11000
        c.send(b"".join(b"set nfoo%d 0 0 11000 noreply\r\n%s\r\n" % (i, value)
                        for i in range(1, 5001)))
        n = int(c.stats()["curr_items"])
        assert n > 4000
        c.send(b"".join(b"delete nfoo%d noreply\r\n" % i for i in range(2, n + 1, 2)))
        wait_stat(c, "slab_global_page_pool", lambda v: v > 24, "pages back to the pool")
        value = b"B" * 7000
        c.send(b"".join(b"set ifoo%d 0 0 7000 noreply\r\n%s\r\n" % (i, value)
                        for i in range(1, 5001)))
        st = c.stats()
        assert int(st["evictions"]) < 2000, st["evictions"]
        assert int(st["slab_reassign_rescues"]) > 0
        kept = sum(c.get(f"ifoo{i}") is not None for i in range(1, 5001))
        assert kept > 2000
        c.call("flush_all\r\n", "OK\r\n")
        wait_stat(c, "slab_global_page_pool", lambda v: v > 50, "pages back after flush_all")
        assert c.stats("slabs")["total_malloced"] == str(60 << 20)


@pytest.mark.parametrize("server_args", [["-m", "4", "-o", "slab_reassign"]])
def test_second_reassign_right_after_the_first(server, is_memcached):
    """memcached's slabs_reassign: two moves of a page from the 70 KB class to the 20 KB one,
    the second asked for as soon as the first said OK. memcached's mover thread is done
    before the next command arrives unless the machine is busy, when it says BUSY: against
    it, BUSY is asked again; locus-kv empties the page before it answers."""
    with server.conn(timeout=30) as c:
        for i in range(1, 61):
            c.call(b"set bfoo%d 0 0 70000\r\n%s\r\n" % (i, b"x" * 70000), "STORED\r\n")
        for i in range(1, 61):
            c.call(b"set sfoo%d 0 0 20000\r\n%s\r\n" % (i, b"y" * 20000), "STORED\r\n")
        classes = slab_classes(c)
        big = max(classes, key=lambda k: classes[k]["chunk_size"])
        small = min(classes, key=lambda k: classes[k]["chunk_size"])
        c.call(f"slabs reassign {big} {small}\r\n", "OK\r\n")
        deadline = time.monotonic() + 30
        while True:
            c.send(f"slabs reassign {big} {small}\r\n")
            reply = c.line()
            if reply == b"OK\r\n" or not is_memcached:
                break
            assert reply.startswith(b"BUSY") and time.monotonic() < deadline, reply
        assert reply == b"OK\r\n"
        assert int(c.stats()["slabs_moved"]) >= 1
        c.call(b"set bfoo61 0 0 70000\r\n%s\r\n" % (b"x" * 70000), "STORED\r\n")
        c.call(b"set sfoo61 0 0 20000\r\n%s\r\n" % (b"y" * 20000), "STORED\r\n")


def evict_grow_shrink_delete(c, evict_seconds=0.0):
    """dyn-maxbytes' steps on c's server (-m 3): evictions (going on for evict_seconds at
    least), the limit raised to 16 MB and memory taken, the limit lowered to 8 MB, every item
    deleted. The memory taken then."""
    value = b"B" * 66560
    start = time.monotonic()
    i = 0
    while i < 40 or time.monotonic() - start < evict_seconds:
        c.call(b"set key%d 0 0 66560\r\n%s\r\n" % (i % 40, value), "STORED\r\n")
        i += 1
    assert int(c.stats()["evictions"]) > 0
    c.call("cache_memlimit 16\r\n", "OK\r\n")
    for i in range(40, 150):
        c.call(b"set key%d 0 0 66560\r\n%s\r\n" % (i, value), "STORED\r\n")
    malloced = int(c.stats("slabs")["total_malloced"])
    assert malloced > 8 << 20
    c.call("cache_memlimit 8\r\n", "OK\r\n")
    for i in range(150):
        c.send(f"delete key{i}\r\n")
        assert c.line() in (b"DELETED\r\n", b"NOT_FOUND\r\n")
    return malloced


@pytest.mark.locus_only
@pytest.mark.parametrize("server_args", [["-m", "3", "-o", "slab_automove_window=3600"]])
def test_the_automove_window_is_seconds_not_samples(clock_server, clock):
    """The evictions that mark a class busy are forgotten once slab_automove_window seconds
    of server time have passed, however few samples the main thread took meanwhile (on a
    loaded machine it samples late; memcached's dyn-maxbytes.t then failed here, the early
    evictions held in a window counted in samples). The window here is an hour, 36000
    samples; the evictions go on for half a second, so that samples see them. Then the
    clock moves past the window, again until the class's free pages have gone back (a sample
    taken just after a move may still report the last growth: the next move forgets it).
    Counted in samples, the window would keep the class busy for an hour."""
    with clock_server.conn(timeout=30) as c:
        malloced = evict_grow_shrink_delete(c, evict_seconds=0.5)
        deadline = time.monotonic() + 30
        while int(c.stats("slabs")["total_malloced"]) >= malloced:
            assert time.monotonic() < deadline, "memory not given back"
            clock.advance(3600)
            time.sleep(0.2)


@pytest.mark.parametrize("server_args", [["-m", "3", "-o", "slab_automove_window=3"]])
def test_total_malloced_goes_down_after_cache_memlimit_shrinks(server):
    """memcached's dyn-maxbytes: the limit raised, memory taken, the limit lowered, every item
    deleted: the pages the automover gives the pool above the limit go back to the system."""
    with server.conn(timeout=30) as c:
        malloced = evict_grow_shrink_delete(c)
        wait_stat(c, "total_malloced", lambda v: v < malloced, "memory given back", sub="slabs")
