"""The classic text commands and every reply string, over a raw socket, as memcached 1.6.18
answers them (each expected reply below was first seen from memcached)."""

import pytest


def test_set_get_gets(srv):
    with srv.conn() as c:
        c.call("set a 5 0 3\r\nabc\r\n", "STORED\r\n")
        c.call("get a\r\n", "VALUE a 5 3\r\nabc\r\nEND\r\n")
        c.send("gets a\r\n")
        head = c.line().split()
        assert head[:4] == [b"VALUE", b"a", b"5", b"3"] and len(head) == 5 and head[4].isdigit()
        c.expect("abc\r\nEND\r\n")
        c.call("get nope\r\n", "END\r\n")
        c.call("set empty 0 0 0\r\n\r\n", "STORED\r\n")
        c.call("get empty\r\n", "VALUE empty 0 0\r\n\r\nEND\r\n")


def test_flags_are_32_bit_and_kept(srv):
    with srv.conn() as c:
        c.call("set f 4294967295 0 1\r\nx\r\n", "STORED\r\n")
        c.call("get f\r\n", "VALUE f 4294967295 1\r\nx\r\nEND\r\n")


def test_multi_key_get_in_order_with_repeats_and_misses(srv):
    with srv.conn() as c:
        c.call("set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\n", "STORED\r\nSTORED\r\n")
        c.call("get b nope a b\r\n", "VALUE b 0 1\r\n2\r\nVALUE a 0 1\r\n1\r\nVALUE b 0 1\r\n2\r\nEND\r\n")


def test_add_replace(srv):
    with srv.conn() as c:
        c.call("add a 0 0 1\r\nx\r\n", "STORED\r\n")
        c.call("add a 0 0 1\r\ny\r\n", "NOT_STORED\r\n")
        c.call("replace zz 0 0 1\r\nx\r\n", "NOT_STORED\r\n")
        c.call("replace a 7 0 2\r\nyy\r\n", "STORED\r\n")
        c.call("get a zz\r\n", "VALUE a 7 2\r\nyy\r\nEND\r\n")


def test_append_prepend_keep_flags(srv):
    with srv.conn() as c:
        c.call("set a 3 0 3\r\nabc\r\n", "STORED\r\n")
        c.call("append a 9 0 2\r\nde\r\n", "STORED\r\n")
        c.call("prepend a 9 0 2\r\nzz\r\n", "STORED\r\n")
        c.call("get a\r\n", "VALUE a 3 7\r\nzzabcde\r\nEND\r\n")
        c.call("append nope 0 0 2\r\nde\r\n", "NOT_STORED\r\n")
        c.call("prepend nope 0 0 2\r\nde\r\n", "NOT_STORED\r\n")
        c.call("get nope\r\n", "END\r\n")


def gets_cas(c, key):
    c.send(f"gets {key}\r\n")
    head = c.line().split()
    c.read(int(head[3]) + 2)
    c.expect("END\r\n")
    return int(head[4])


def test_cas(srv):
    with srv.conn() as c:
        c.call("cas nope 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n")
        c.call("set a 0 0 1\r\nx\r\n", "STORED\r\n")
        unique = gets_cas(c, "a")
        c.call(f"cas a 0 0 1 {unique + 1000}\r\ny\r\n", "EXISTS\r\n")
        c.call(f"cas a 2 0 1 {unique}\r\ny\r\n", "STORED\r\n")
        c.call(f"cas a 0 0 1 {unique}\r\nz\r\n", "EXISTS\r\n")
        c.call("get a\r\n", "VALUE a 2 1\r\ny\r\nEND\r\n")
        assert gets_cas(c, "a") != unique


def test_every_store_changes_the_cas_unique(srv):
    with srv.conn() as c:
        seen = set()
        for cmd in ["set", "replace", "append", "prepend"]:
            assert c.set("a", "v", cmd=cmd) == b"STORED\r\n"
            seen.add(gets_cas(c, "a"))
        c.call("incr nope 1\r\n", "NOT_FOUND\r\n")
        c.call("set n 0 0 1\r\n1\r\nincr n 1\r\n", "STORED\r\n2\r\n")
        assert len(seen) == 4
        c.call("touch a 100\r\n", "TOUCHED\r\n")
        assert gets_cas(c, "a") in seen   # touch keeps it


def test_touch_gat_gats(srv):
    with srv.conn() as c:
        c.call("set a 5 0 3\r\nabc\r\n", "STORED\r\n")
        c.call("touch a 100\r\n", "TOUCHED\r\n")
        c.call("touch nope 1\r\n", "NOT_FOUND\r\n")
        c.call("gat 0 a nope\r\n", "VALUE a 5 3\r\nabc\r\nEND\r\n")
        c.send("gats 0 a\r\n")
        head = c.line().split()
        assert head[:4] == [b"VALUE", b"a", b"5", b"3"] and head[4].isdigit()
        c.expect("abc\r\nEND\r\n")
        c.call("gat 100 nope\r\n", "END\r\n")


def test_delete(srv):
    with srv.conn() as c:
        c.call("set a 0 0 1\r\nx\r\n", "STORED\r\n")
        c.call("delete a\r\n", "DELETED\r\n")
        c.call("delete a\r\n", "NOT_FOUND\r\n")
        c.call("get a\r\n", "END\r\n")
        # memcached still takes a time of 0 for old clients, and refuses any other
        c.call("delete a 0\r\n", "NOT_FOUND\r\n")
        c.call("delete a 5\r\n", "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n")


def test_incr_decr(srv):
    with srv.conn() as c:
        c.call("incr nope 1\r\n", "NOT_FOUND\r\n")
        c.call("decr nope 1\r\n", "NOT_FOUND\r\n")
        c.call("set n 3 0 1\r\n5\r\n", "STORED\r\n")
        c.call("incr n 10\r\n", "15\r\n")
        c.call("decr n 3\r\n", "12\r\n")
        c.call("get n\r\n", "VALUE n 3 2\r\n12\r\nEND\r\n")
        c.call("incr n 18446744073709551603\r\n", "18446744073709551615\r\n")


def test_incr_wraps_at_2_64_and_decr_stops_at_0(srv):
    with srv.conn() as c:
        c.call("set n 0 0 20\r\n18446744073709551615\r\n", "STORED\r\n")
        c.call("incr n 1\r\n", "0\r\n")
        c.call("set n 0 0 20\r\n18446744073709551610\r\n", "STORED\r\n")
        c.call("incr n 10\r\n", "4\r\n")
        c.call("set d 0 0 2\r\n10\r\n", "STORED\r\n")
        c.call("decr d 100\r\n", "0\r\n")
        c.call("decr d 1\r\n", "0\r\n")


def test_shorter_counter_may_keep_its_length_padded_with_spaces(srv):
    """memcached rewrites a counter in place when no one else holds the item: a result shorter
    than the stored value keeps the length, padded with spaces ("9  "); otherwise (another
    reference, as its LRU thread may hold) it stores the digits alone. Either is accepted; a
    longer result always grows the value."""
    with srv.conn() as c:
        c.call("set d 0 0 3\r\n100\r\n", "STORED\r\n")
        c.call("decr d 91\r\n", "9\r\n")
        assert c.get("d") in (b"9", b"9  ")
        c.call("incr d 91\r\n", "100\r\n")
        c.call("incr d 900\r\n", "1000\r\n")
        c.call("get d\r\n", "VALUE d 0 4\r\n1000\r\nEND\r\n")
        c.call("set n 0 0 20\r\n18446744073709551615\r\nincr n 1\r\n", "STORED\r\n0\r\n")
        assert c.get("n") in (b"0", b"0" + b" " * 19)


def test_incr_errors(srv):
    with srv.conn() as c:
        c.call("set t 0 0 2\r\nxy\r\n", "STORED\r\n")
        c.call("incr t 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
        c.call("decr t 1\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
        c.call("set n 0 0 1\r\n1\r\n", "STORED\r\n")
        for delta in ["abc", "-1", "18446744073709551616", "1x"]:
            c.call(f"incr n {delta}\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n")
        c.call("incr n\r\n", "ERROR\r\n")
        c.call("get n\r\n", "VALUE n 0 1\r\n1\r\nEND\r\n")


def test_flush_all(srv):
    with srv.conn() as c:
        c.call("set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\n", "STORED\r\nSTORED\r\n")
        c.call("flush_all\r\n", "OK\r\n")
        c.call("get a b\r\n", "END\r\n")
        # stored right after the flush, in the same second: kept
        c.call("set a 0 0 1\r\nz\r\n", "STORED\r\n")
        c.call("get a\r\n", "VALUE a 0 1\r\nz\r\nEND\r\n")
        c.call("flush_all 0\r\n", "OK\r\n")
        c.call("get a\r\n", "END\r\n")
        c.call("flush_all noreply\r\nflush_all 0 noreply\r\nversion\r\n", "VERSION ")
        c.line()
        c.call("flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n")


def test_flush_all_with_a_delay_keeps_items_until_then(srv):
    with srv.conn() as c:
        c.call("set a 0 0 1\r\nx\r\n", "STORED\r\n")
        c.call("flush_all 100\r\n", "OK\r\n")
        c.call("get a\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n")


def test_version_verbosity_quit(srv):
    with srv.conn() as c:
        c.send("version\r\n")
        line = c.line()
        assert line.startswith(b"VERSION ") and len(line.split()) == 2, line
        c.call("verbosity 1\r\n", "OK\r\n")
        c.call("verbosity 0\r\n", "OK\r\n")
        c.call("verbosity 1 noreply\r\nverbosity\r\n", "ERROR\r\n")
        c.call("verbosity x\r\n", "CLIENT_ERROR bad command line format\r\n")
        c.send("quit\r\nversion\r\n")
        assert c.closed(), "quit did not close the connection"
        assert c.buf == b"", f"reply after quit: {c.buf!r}"


def test_unknown_and_malformed_commands(srv):
    with srv.conn() as c:
        c.call("bogus\r\n", "ERROR\r\n")
        c.call("bogus noreply\r\n", "ERROR\r\n")
        c.call("\r\n", "ERROR\r\n")
        c.call("get\r\n", "ERROR\r\n")
        c.call("set a\r\n", "ERROR\r\n")
        c.call("touch a\r\n", "ERROR\r\n")
        c.call("GET a\r\n", "ERROR\r\n")    # commands are case-sensitive
        # a bad number in a storage command: the error, then the data line is a command of its own
        c.call("set a 0 0 x\r\nabc\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n")
        c.call("set a x 0 1\r\n", "CLIENT_ERROR bad command line format\r\n")
        c.call("set a 0 0 -1\r\n", "CLIENT_ERROR bad command line format\r\n")
        c.call("version\r\n", "VERSION ")
        c.line()


def test_bad_data_chunk_keeps_the_old_value(srv):
    with srv.conn() as c:
        c.call("set a 0 0 3\r\nold\r\n", "STORED\r\n")
        # 3 bytes announced, "abcd\r\n" sent: "abc" then "d\r" is not the terminator; the
        # leftover "\n" is an empty command line
        c.call("set a 0 0 3\r\nabcd\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n")
        c.call("get a\r\n", "VALUE a 0 3\r\nold\r\nEND\r\n")
        c.call("set b 0 0 2\r\nabc\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n")
        c.call("get b\r\n", "END\r\n")



@pytest.mark.parametrize("cmd", ["set", "add", "replace", "append", "prepend", "cas"])
def test_noreply_storage(srv, cmd):
    with srv.conn() as c:
        if cmd in ("replace", "append", "prepend", "cas"):
            c.call("set k 0 0 1\r\nv\r\n", "STORED\r\n")
        unique = gets_cas(c, "k") if cmd == "cas" else None
        arg = f" {unique}" if cmd == "cas" else ""
        c.send(f"{cmd} k 0 0 1{arg} noreply\r\nx\r\n")
        c.nothing()
        expect = {"set": b"x", "add": b"x", "replace": b"x", "append": b"vx", "prepend": b"xv",
                  "cas": b"x"}[cmd]
        assert c.get("k") == expect
        # a failing one is silent too
        fail = {"set": None, "add": "add k", "replace": "replace nope", "append": "append nope",
                "prepend": "prepend nope", "cas": "cas k"}[cmd]
        if fail:
            c.send(f"{fail} 0 0 1{arg} noreply\r\ny\r\n")
            c.nothing()
            assert c.get("k") == expect


def test_noreply_other_commands(srv):
    with srv.conn() as c:
        c.send("set n 0 0 1 noreply\r\n5\r\nincr n 3 noreply\r\ndecr n 1 noreply\r\n"
               "touch n 10 noreply\r\ndelete nope noreply\r\nincr nope 1 noreply\r\n")
        c.nothing()
        c.call("get n\r\n", "VALUE n 0 1\r\n7\r\nEND\r\n")
        c.send("delete n noreply\r\nflush_all noreply\r\nverbosity 1 noreply\r\n")
        c.nothing()
        c.call("get n\r\n", "END\r\n")
        # a refused delta under noreply is silent as well
        c.send("set n 0 0 1 noreply\r\n5\r\nincr n abc noreply\r\n")
        c.nothing()


def test_stats(server):
    with server.conn() as c:
        c.call("set a 0 0 1\r\nx\r\nget a\r\nget nope\r\n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\nEND\r\n")
        st = c.stats()
        for name in ["pid", "uptime", "time", "version", "curr_connections", "total_connections",
                     "cmd_get", "cmd_set", "get_hits", "get_misses", "curr_items", "total_items",
                     "bytes", "evictions", "limit_maxbytes", "threads"]:
            assert name in st, f"stats has no {name}"
        assert int(st["pid"]) == server.pid
        assert st["cmd_get"] == "2" and st["get_hits"] == "1" and st["get_misses"] == "1"
        assert st["cmd_set"] == "1" and st["curr_items"] == "1" and int(st["bytes"]) > 0
        assert int(st["curr_connections"]) >= 1
        c.call("stats reset\r\n", "RESET\r\n")
        st = c.stats()
        assert st["cmd_get"] == "0" and st["get_hits"] == "0" and st["cmd_set"] == "0"
        assert st["curr_items"] == "1"   # reset clears counters, not the cache
        c.call("stats bogus\r\n", "ERROR\r\n")


def test_stats_settings_items_slabs(server):
    with server.conn() as c:
        c.call("set a 0 0 1\r\nx\r\n", "STORED\r\n")
        st = c.stats("settings")
        assert int(st["tcpport"]) == server.port
        for name in ["maxbytes", "maxconns", "item_size_max", "num_threads", "evictions"]:
            assert name in st, f"stats settings has no {name}"
        items = c.stats("items")
        numbers = {k: v for k, v in items.items() if k.startswith("items:") and k.endswith(":number")}
        assert sum(int(v) for v in numbers.values()) == 1, items
        slabs = c.stats("slabs")
        assert "active_slabs" in slabs and "total_malloced" in slabs, slabs


def test_keys_may_hold_control_characters(srv):
    """memcached splits on spaces only; memcaslap's keys start with eight 0x10 bytes."""
    key = b"\x10" * 8 + b"k\x01\x7f\tz"
    with srv.conn() as c:
        c.call(b"set " + key + b" 3 0 2\r\nhi\r\n", "STORED\r\n")
        c.call(b"get " + key + b"\r\n", b"VALUE " + key + b" 3 2\r\nhi\r\nEND\r\n")
        c.call(b"delete " + key + b"\r\n", "DELETED\r\n")
