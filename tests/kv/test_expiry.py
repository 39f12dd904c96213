"""Expiry: relative and absolute times, touch/gat, flush_all with a delay.

Against memcached the clock really has to pass: the tests marked `sleeps` wait about 3 s each.
Against locus-kv it is moved with debug_clock_advance (the server runs with --debug-commands)."""

import time

import pytest

THIRTY_DAYS = 2592000   # larger exptimes are absolute Unix times


def test_negative_exptime_expires_at_once(srv):
    with srv.conn() as c:
        c.call("set a 0 -1 1\r\nx\r\n", "STORED\r\n")
        c.call("get a\r\n", "END\r\n")
        c.call("set a 0 0 1\r\nx\r\ntouch a -1\r\n", "STORED\r\nTOUCHED\r\n")
        c.call("get a\r\n", "END\r\n")
        # gat returns the value, then it is gone
        c.call("set a 0 0 1\r\nx\r\ngat -1 a\r\n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n")
        c.call("get a\r\n", "END\r\n")
        c.call("ms a 1 T-1\r\nx\r\nmg a v\r\n", "HD\r\nEN\r\n")


def test_relative_up_to_30_days_absolute_beyond(srv):
    now = int(time.time())
    with srv.conn() as c:
        c.call(f"set rel 0 {THIRTY_DAYS} 1\r\nx\r\n", "STORED\r\n")   # 30 days from now
        c.call(f"set abs1 0 {THIRTY_DAYS + 1} 1\r\nx\r\n", "STORED\r\n")   # 1970-01-31: past
        c.call(f"set past 0 {now - 10} 1\r\nx\r\n", "STORED\r\n")
        c.call(f"set future 0 {now + 1000} 1\r\nx\r\n", "STORED\r\n")
        c.call("get rel abs1 past future\r\n",
               "VALUE rel 0 1\r\nx\r\nVALUE future 0 1\r\nx\r\nEND\r\n")
        c.send("mg future t\r\n")
        t = int(c.line().split()[1][1:])
        assert 990 <= t <= 1001, t


@pytest.mark.sleeps
def test_ttl_touch_and_gat_change_the_expiry(clock_server, clock):
    with clock_server.conn() as c:
        c.send("set gone 0 1 1\r\nx\r\n"
               "set kept 0 100 1\r\nx\r\n"
               "set touched_up 0 1 1\r\nx\r\ntouch touched_up 100\r\n"
               "set touched_down 0 100 1\r\nx\r\ntouch touched_down 1\r\n"
               "set gat_down 0 100 1\r\nx\r\ngat 1 gat_down\r\n"
               "set gats_up 0 1 1\r\nx\r\ngats 100 gats_up\r\n"
               "ms meta_down 1 T100\r\nx\r\nmg meta_down T1\r\n"
               "set forever 0 0 1\r\nx\r\n")
        c.expect("STORED\r\n" * 2 + "STORED\r\nTOUCHED\r\n" * 2 + "STORED\r\nVALUE gat_down 0 1\r\nx\r\nEND\r\n"
                 "STORED\r\nVALUE gats_up 0 1 ")
        c.line()
        c.expect("x\r\nEND\r\nHD\r\nHD\r\nSTORED\r\n")
        clock.advance(1)
        c.call("get gone kept touched_up touched_down gat_down gats_up meta_down forever\r\n",
               "VALUE kept 0 1\r\nx\r\nVALUE touched_up 0 1\r\nx\r\nVALUE gats_up 0 1\r\nx\r\n"
               "VALUE forever 0 1\r\nx\r\nEND\r\n")
        c.call("touch gone 100\r\n", "NOT_FOUND\r\n")


@pytest.mark.sleeps
def test_flush_all_with_a_delay(clock_server, clock):
    with clock_server.conn() as c:
        c.call("set before 0 0 1\r\nx\r\nflush_all 2\r\n", "STORED\r\nOK\r\n")
        c.call("set after 0 0 1\r\nx\r\n", "STORED\r\n")
        c.call("get before after\r\n", "VALUE before 0 1\r\nx\r\nVALUE after 0 1\r\nx\r\nEND\r\n")
        clock.advance(2)
        # everything stored before the deadline is gone, also what came after the command
        c.call("get before after\r\n", "END\r\n")
        c.call("set new 0 0 1\r\nx\r\nget new\r\n", "STORED\r\nVALUE new 0 1\r\nx\r\nEND\r\n")


def test_debug_clock_advance_needs_the_option(srv):
    with srv.conn() as c:
        c.call("debug_clock_advance 5\r\n", "ERROR\r\n")


@pytest.mark.locus_only
def test_debug_clock_moves_ttls_exactly(clock_server, clock):
    now = int(time.time())
    with clock_server.conn() as c:
        c.call("set ten 0 10 1\r\nx\r\n", "STORED\r\n")
        c.call(f"set abs 0 {now + 100} 1\r\nx\r\n", "STORED\r\n")
        c.call(f"set month 0 {THIRTY_DAYS} 1\r\nx\r\n", "STORED\r\n")
        c.call("set regat 0 10 1\r\nx\r\ngat 100 regat\r\n", "STORED\r\nVALUE regat 0 1\r\nx\r\nEND\r\n")
        c.call("debug_clock_advance 5\r\n", "OK\r\n")
        c.send("mg ten t v\r\n")
        assert c.line() in (b"VA 1 t5\r\n", b"VA 1 t4\r\n")
        c.expect("x\r\n")
        c.call("debug_clock_advance 6\r\n", "OK\r\n")
        c.call("get ten abs regat\r\n", "VALUE abs 0 1\r\nx\r\nVALUE regat 0 1\r\nx\r\nEND\r\n")
        c.call("debug_clock_advance 40\r\n", "OK\r\n")   # 51 s in
        c.call("get abs regat\r\n", "VALUE abs 0 1\r\nx\r\nVALUE regat 0 1\r\nx\r\nEND\r\n")
        c.call("debug_clock_advance 51\r\n", "OK\r\n")   # 102 s in
        c.call("get abs regat\r\n", "END\r\n")
        c.call(f"debug_clock_advance {THIRTY_DAYS - 200}\r\n", "OK\r\n")
        c.call("get month\r\n", "VALUE month 0 1\r\nx\r\nEND\r\n")
        c.call("debug_clock_advance 200\r\n", "OK\r\n")
        c.call("get month\r\n", "END\r\n")


@pytest.mark.locus_only
def test_debug_clock_flush_all_delay(clock_server, clock):
    with clock_server.conn() as c:
        c.call("set a 0 0 1\r\nx\r\nflush_all 10\r\n", "STORED\r\nOK\r\n")
        c.call("debug_clock_advance 5\r\n", "OK\r\n")
        c.call("get a\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n")
        c.call("debug_clock_advance 6\r\n", "OK\r\n")
        c.call("get a\r\n", "END\r\n")
        c.call("set a 0 0 1\r\ny\r\nget a\r\n", "STORED\r\nVALUE a 0 1\r\ny\r\nEND\r\n")


@pytest.mark.locus_only
def test_debug_clock_advance_replies(clock_server):
    with clock_server.conn() as c:
        c.call("debug_clock_advance 0\r\n", "OK\r\n")
        c.call("debug_clock_advance 1\r\n", "OK\r\n")
        c.call("version\r\n", "VERSION ")
