"""Modes the command line switches: -M (an error instead of evicting) and -C (no CAS), as
memcached 1.6.18 behaves with them."""

import time

import pytest

from test_memory import fill


@pytest.mark.parametrize("server_args", [["-M", "-m", "2"]])
def test_disable_evictions_refuses_new_items_when_full(server):
    """-M: once memory is full a set is refused with memcached's error, nothing is evicted,
    and what was stored first is still there."""
    size = 1000
    with server.conn(timeout=20) as c:
        c.call(b"set first 0 0 %d\r\n%s\r\n" % (size, b"f" * size), "STORED\r\n")
        refused = None
        for i in range(6000):   # about 6 MB into 2 MB
            r = c.set(f"k{i}", b"v" * size)
            if r != b"STORED\r\n":
                refused = r
                break
        assert refused == b"SERVER_ERROR out of memory storing object\r\n", refused
        st = c.stats()
        assert st["evictions"] == "0", st["evictions"]
        assert c.get("first") == b"f" * size
        assert c.stats("settings")["evictions"] == "off"
        # deleting makes room again
        c.call("delete first\r\n", "DELETED\r\n")
        c.call("delete k0\r\n", "DELETED\r\n")
        assert c.set("again", b"a" * size) == b"STORED\r\n"


@pytest.mark.parametrize("server_args", [["-C"]])
def test_disable_cas_shows_zero_and_fails_every_cas(server):
    """-C: gets shows a cas of 0, and cas fails with EXISTS on an item (NOT_FOUND without one),
    whatever unique it is given."""
    with server.conn() as c:
        c.call("set k 3 0 1\r\nx\r\ngets k\r\n", "STORED\r\nVALUE k 3 1 0\r\nx\r\nEND\r\n")
        c.call("cas k 0 0 1 0\r\ny\r\n", "EXISTS\r\n")
        c.call("cas k 0 0 1 1\r\ny\r\n", "EXISTS\r\n")
        c.call("cas nope 0 0 1 1\r\ny\r\n", "NOT_FOUND\r\n")
        c.call("get k\r\n", "VALUE k 3 1\r\nx\r\nEND\r\n")
        c.call("mg k c v\r\n", "VA 1 c0\r\nx\r\n")
        assert c.stats("settings")["cas_enabled"] == "no"


@pytest.mark.parametrize("server_args", [["-C"]])
def test_disable_cas_flushes_by_the_second(clock_server, clock):
    """-C: without cas values memcached marks a flush by the second, so an item stored in
    the same second as flush_all 0 is flushed too (its t/flush-all.t expects to see that at
    least once in 50 tries); one stored in a later second is kept."""
    with clock_server.conn() as c:
        flushed = 0
        for _ in range(50):
            c.call("flush_all 0\r\nset foo 0 0 3\r\nnew\r\n", "OK\r\nSTORED\r\n")
            c.send("get foo\r\n")
            if c.line() == b"END\r\n":
                flushed += 1
                break
            c.expect("new\r\nEND\r\n")
        assert flushed == 1
        c.call("set kept 0 0 1\r\nx\r\nflush_all 0\r\n", "STORED\r\nOK\r\n")
        clock.advance(0)
        c.call("set foo 0 0 3\r\nnew\r\nget foo kept\r\n",
               "STORED\r\nVALUE foo 0 3\r\nnew\r\nEND\r\n")


def test_flush_all_with_cas_keeps_what_is_stored_right_after(srv):
    """With cas values (no -C) the flush cuts at the cas counter: an item stored right
    after flush_all, in the same second, is kept every time."""
    with srv.conn() as c:
        for _ in range(50):
            c.call("flush_all 0\r\nset foo 0 0 3\r\nnew\r\nget foo\r\n",
                   "OK\r\nSTORED\r\nVALUE foo 0 3\r\nnew\r\nEND\r\n")


@pytest.mark.parametrize("server_args", [["-R", "3", "-t", "1"]])
def test_requests_per_event_yields_and_answers_everything(server):
    """-R 3: a connection with 100 pipelined commands runs 3 at a time, letting the worker's
    other connections in between (counted as conn_yields); every reply still arrives, in
    order."""
    with server.conn() as c, server.conn() as other:
        c.call("set a 0 0 1\r\n1\r\n", "STORED\r\n")
        before = int(c.stats()["conn_yields"])
        c.send(b"get a\r\n" * 100 + b"mn\r\n")
        other.call("get a\r\n", "VALUE a 0 1\r\n1\r\nEND\r\n")
        c.expect(b"VALUE a 0 1\r\n1\r\nEND\r\n" * 100 + b"MN\r\n")
        assert int(c.stats()["conn_yields"]) > before
        assert c.stats("settings")["reqs_per_event"] == "3"


@pytest.mark.parametrize("server_args", [["-o", "idle_timeout=1"]])
def test_idle_timeout_closes_idle_connections(server):
    """-o idle_timeout=1: a connection that sends nothing more is closed within a few seconds
    and counted in idle_kicks; one that keeps sending commands stays."""
    with server.conn() as idle, server.conn() as busy:
        idle.call("version\r\n", "VERSION ")
        idle.line()
        deadline = time.monotonic() + 10
        closed = False
        while time.monotonic() < deadline and not closed:
            busy.call("mn\r\n", "MN\r\n")       # active: never idle for a whole second
            closed = idle.closed(seconds=0.2)
        assert closed, "an idle connection stayed open past idle_timeout"
        busy.call("mn\r\n", "MN\r\n")
        st = busy.stats()
        assert int(st["idle_kicks"]) >= 1, st.get("idle_kicks")
        assert busy.stats("settings")["idle_timeout"] == "1"
