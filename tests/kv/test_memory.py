"""Memory limit (-m): eviction keeps the server answering with the recent keys, and the
resident size stays near the limit."""

import os

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



def test_initial_malloc_hook_counts_against_the_limit(start):
    """T_MEMD_INITIAL_MALLOC (memcached's test hook, its t/64bit.t): the bytes given count as
    taken at the start, in total_malloced and against -m. With room for one 1 MB page left,
    400 KB values fill that page and the next one is refused (-M: an error, no eviction)."""
    taken = (64 << 20) - (2 << 20) + 32
    server = start("-m", "64", "-M", env=dict(os.environ, T_MEMD_INITIAL_MALLOC=str(taken)))
    with server.conn() as c:
        slabs = c.stats("slabs")
        assert int(slabs["total_malloced"]) == taken
        assert slabs["active_slabs"] == "0"
        size = 400 * 1024
        replies = []
        for i in range(5):
            c.send(b"set big%d 0 0 %d\r\n%s\r\n" % (i, size, b"a" * size))
            replies.append(c.line())
        assert replies[:2] == [b"STORED\r\n"] * 2, replies
        assert all(r.startswith(b"SERVER_ERROR ") for r in replies[2:]), replies
        assert c.stats("slabs")["active_slabs"] == "1"
