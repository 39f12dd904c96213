"""Connection memory, as memcached bounds and counts it: response objects (one per reply a
connection owes, one per key of a multi-key get) and read buffers, 16 KB units of each
worker; `-o read_buf_mem_limit=MB` gives the workers MB between them. Past a worker's share a
multi-key get ends with "SERVER_ERROR out of memory writing get response", a pipeline of
commands whose replies have nowhere to go closes its connection, and stats counts it
(response_obj_oom); other clients go on being served. The stats response_obj_* and read_buf_*
count what is held at the time."""

import select
import socket
import time

import pytest

# memcached's t/conn-limits.t: 1 MB split between 32 workers, one 16 KB read buffer and one
# 16 KB bundle of response objects each.
LIMITED = ["-o", "read_buf_mem_limit=1", "-t", "32", "-R", "500"]
UNIT = 16384
OOM_GET = b"SERVER_ERROR out of memory writing get response\r\n"


def stat(c, name):
    return int(c.stats()[name])


@pytest.mark.parametrize("server_args", [LIMITED])
def test_a_huge_multiget_past_the_limit_gets_an_error_and_the_connection_goes_on(server):
    with server.conn() as c:
        before = stat(c, "response_obj_oom")
        c.call(b"get" + b" foo" * 500 + b"\r\n", OOM_GET)
        assert stat(c, "response_obj_oom") > before
        # The same connection goes on: a get that fits is answered.
        c.call("set foo 0 0 3\r\nbar\r\n", "STORED\r\n")
        assert c.get("foo") == b"bar"
        c.call(b"get" + b" foo" * 5 + b"\r\n", b"VALUE foo 0 3\r\nbar\r\n" * 5 + b"END\r\n")
    with server.conn() as fresh:
        assert fresh.get("foo") == b"bar"


@pytest.mark.parametrize("server_args", [LIMITED])
def test_stacked_meta_gets_past_the_limit_close_the_connection(server):
    with server.conn() as c:
        before = stat(c, "response_obj_oom")
        with server.conn() as s:
            s.send(b"mg foo v\r\n" * 500)
            assert s.closed(), "the connection stayed open past the limit"
            assert s.buf == b"", f"replies were sent before the close: {s.buf[:80]!r}"
        assert stat(c, "response_obj_oom") > before
        # Others are still served, on every worker.
        for _ in range(4):
            with server.conn() as other:
                other.call("mn\r\n", "MN\r\n")


@pytest.mark.locus_only
@pytest.mark.parametrize("server_args", [LIMITED])
def test_a_multiget_of_large_values_paced_by_its_reader_fits_the_limit(server):
    """Values are sent from the items, and a get's replies that went out give their response
    objects back: 300 keys of 2000 bytes (600 KB, about 20 times a worker's share) arrive
    whole to a client that reads them. (memcached makes every key's response object before
    it sends any, and answers SERVER_ERROR: docs/kv.md.)"""
    value = b"v" * 2000
    with server.conn(timeout=20) as c:
        for i in range(300):
            c.call(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(value), value), "STORED\r\n")
        keys = b" ".join(b"k%d" % i for i in range(300))
        c.send(b"get " + keys + b"\r\n")
        want = b"".join(b"VALUE k%d 0 2000\r\n%s\r\n" % (i, value) for i in range(300))
        c.expect(want + b"END\r\n")


def test_stats_count_the_responses_and_buffers_held(server):
    with server.conn() as c:
        st = c.stats()
        # This stats command owes its own reply while it counts.
        assert int(st["response_obj_count"]) >= 1
        assert int(st["response_obj_bytes"]) >= UNIT
        assert int(st["read_buf_count"]) >= 1
        assert int(st["read_buf_bytes"]) == int(st["read_buf_count"]) * UNIT
        assert 0 <= int(st["read_buf_bytes_free"]) <= int(st["read_buf_bytes"])
        assert st["response_obj_oom"] == "0" and st["read_buf_oom"] == "0"
        # Unread replies hold response objects until they have gone out.
        deaf = socket.socket()
        deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        deaf.connect(server.addr)
        try:
            c.call(b"set big 0 0 200000\r\n%s\r\n" % (b"x" * 200000), "STORED\r\n")
            deaf.sendall(b"get big\r\n" * 20)
            held = wait_for(c, lambda st: int(st["response_obj_count"]) >= 2)
            assert int(held["response_obj_count"]) >= 2, held["response_obj_count"]
        finally:
            deaf.close()
        # Once the reader has gone, they are given back.
        after = wait_for(c, lambda st: int(st["response_obj_count"]) == 1)
        assert after["response_obj_count"] == "1"


def wait_for(c, cond, tries=400):
    """Stats once cond holds on them (every 25 ms), or the last ones read."""
    for _ in range(tries):
        st = c.stats()
        if cond(st):
            return st
        time.sleep(0.025)
    return st


@pytest.mark.parametrize("server_args", [["-o", "read_buf_mem_limit=2"]])
def test_the_limit_is_shown_in_bytes(server):
    with server.conn() as c:
        assert c.stats("settings")["read_buf_mem_limit"] == str(2 << 20)


def test_an_incr_does_not_change_a_value_being_sent(server):
    """A value waiting to be sent to a slow reader is sent as it was when read: an incr
    meanwhile makes a new item rather than changing it in place (as memcached)."""
    number = b"5" + b" " * 1500
    with server.conn() as c:
        c.call(b"set big 0 0 1000000\r\n%s\r\n" % (b"x" * 1000000), "STORED\r\n")
        c.call(b"set n 0 0 %d\r\n%s\r\n" % (len(number), number), "STORED\r\n")
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(server.addr)
        slow.settimeout(10)
        try:
            slow.sendall(b"get big\r\nget n\r\n")
            # Both gets have run once the server counted their hits (big's reply is still
            # far from sent: the reader has not read).
            wait_for(c, lambda st: int(st["get_hits"]) >= 2)
            c.call("incr n 1\r\n", "6\r\n")
            want = (b"VALUE big 0 1000000\r\n" + b"x" * 1000000 + b"\r\nEND\r\n" +
                    b"VALUE n 0 %d\r\n%s\r\nEND\r\n" % (len(number), number))
            got = b""
            while len(got) < len(want):
                d = slow.recv(1 << 20)
                if not d:
                    break
                got += d
            assert got == want, got[-200:]
        finally:
            slow.close()
        assert c.get("n").rstrip() == b"6"


@pytest.mark.parametrize("server_args", [["-o", "read_buf_mem_limit=1", "-t", "1", "-c", "1024"]])
def test_clients_holding_read_buffers_past_the_limit_are_closed_and_counted(server):
    """1 MB for one worker is 64 read buffers. Clients that send half a command each hold
    one; those past the limit find none and are closed (read_buf_oom). Once the others go,
    their buffers serve new clients."""
    hogs = []
    try:
        for _ in range(80):
            s = socket.create_connection(server.addr, timeout=5)
            s.sendall(b"get foo")   # no end of line: the buffer is kept for the rest
            hogs.append(s)
        closed = count_closed(hogs, want=80 - 64)
        assert closed >= 80 - 64, f"{closed} of 80 closed with room for 64 read buffers"
    finally:
        for s in hogs:
            s.close()
    with server.conn() as c:
        st = wait_for(c, lambda st: int(st["read_buf_oom"]) > 0)
        assert int(st["read_buf_oom"]) >= 80 - 64
        assert int(st["read_buf_count"]) <= 64
        c.call("set k 0 0 1\r\nv\r\n", "STORED\r\n")


def count_closed(socks, want, seconds=10.0):
    """How many of socks the server closes, waiting until `want` have or seconds pass."""
    open_, closed = list(socks), 0
    deadline = time.monotonic() + seconds
    while closed < want and open_ and time.monotonic() < deadline:
        ready, _, _ = select.select(open_, [], [], max(0.0, deadline - time.monotonic()))
        for s in ready:
            try:
                gone = s.recv(1) == b""
            except ConnectionResetError:
                gone = True
            if gone:
                closed += 1
                open_.remove(s)
    return closed
