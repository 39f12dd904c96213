"""memcached's binary protocol (-B auto, the default, and -B binary), as memcached 1.6.18 speaks it.

A request is a 24-byte header (magic 0x80, opcode, key length, extras length, body length,
opaque, cas), then extras, key and value; a response echoes the opcode and opaque, with a status
and the item's cas. The quiet opcodes (GETQ, SETQ, ...) send nothing on success, and a GETQ or
GETKQ nothing on a miss; errors are always sent. With -B auto each connection's first byte
decides: 0x80 is binary, anything else text. Every test here passes against memcached too
(only the text after "1.6.18" in VERSION differs); hostile input is test_binary_input.py's,
SASL test_sasl.py's.
"""

import struct

import pytest

from kvlib import (HEADER, Op, Status, arith_extras, exptime_extras, request, responses,
                   set_extras)
from test_udp import Udp, udp_port


def flags_of(r):
    return struct.unpack(">I", r.extras)[0]


def number(r):
    return struct.unpack(">Q", r.value)[0]


@pytest.fixture
def b(srv):
    with srv.bconn() as c:
        yield c


# ---------- version, noop, negotiation ----------

def test_version_and_noop(b):
    r = b.call(Op.VERSION, opaque=7)
    assert (r.opcode, r.status, r.opaque, r.cas) == (Op.VERSION, Status.SUCCESS, 7, 0)
    assert r.value.startswith(b"1.6.18")
    r = b.call(Op.NOOP, opaque=0xDEADBEEF)
    assert (r.opcode, r.status, r.opaque, r.key, r.value) == (Op.NOOP, 0, 0xDEADBEEF, b"", b"")


def test_auto_negotiates_per_connection(srv):
    """-B auto: a connection starting with 0x80 speaks binary, another on the same server
    text, and both see the same items."""
    with srv.bconn() as b, srv.conn() as t:
        assert b.set("both", "from binary", flags=5).status == Status.SUCCESS
        t.call("get both\r\n", "VALUE both 5 11\r\nfrom binary\r\nEND\r\n")
        t.call("set other 9 0 4\r\ntext\r\n", "STORED\r\n")
        assert b.get("other")[:2] == (9, b"text")
        assert t.stats("settings")["binding_protocol"] == "auto-negotiate"
        assert b.stats("settings")["binding_protocol"] == "auto-negotiate"


# ---------- get, set, add, replace ----------

def test_set_then_every_get(b):
    r = b.set("k", "value", flags=0xCAFEF00D)
    assert r.status == Status.SUCCESS and r.cas != 0 and r.value == b""
    cas = r.cas
    for op, with_key in [(Op.GET, False), (Op.GETK, True), (Op.GETQ, False), (Op.GETKQ, True)]:
        r = b.call(op, "k", opaque=op)
        assert (r.opcode, r.status, r.opaque, r.cas) == (op, Status.SUCCESS, op, cas), r
        assert flags_of(r) == 0xCAFEF00D and r.value == b"value"
        assert r.key == (b"k" if with_key else b"")


def test_misses(b):
    r = b.call(Op.GET, "nokey", opaque=1)
    assert (r.status, r.key, r.value, r.extras, r.cas) == (Status.KEY_ENOENT, b"", b"Not found",
                                                            b"", 0)
    r = b.call(Op.GETK, "nokey", opaque=2)
    assert (r.status, r.key, r.value) == (Status.KEY_ENOENT, b"nokey", b"")
    # the quiet ones say nothing: the NOOP after them is the next response
    b.send(request(Op.GETQ, "nokey", opaque=3) + request(Op.GETKQ, "nokey", opaque=4) +
           request(Op.GATQ, "nokey", extras=exptime_extras(), opaque=5) +
           request(Op.GATKQ, "nokey", extras=exptime_extras(), opaque=6) +
           request(Op.NOOP, opaque=7))
    assert b.response().opaque == 7


def test_add_and_replace(b):
    r = b.set("a", "one", op=Op.REPLACE)
    assert (r.status, r.value) == (Status.KEY_ENOENT, b"Not found")
    assert b.set("a", "one", flags=1, op=Op.ADD).status == Status.SUCCESS
    r = b.set("a", "two", op=Op.ADD)
    assert (r.status, r.value) == (Status.KEY_EEXISTS, b"Data exists for key.")
    assert b.set("a", "three", flags=3, op=Op.REPLACE).status == Status.SUCCESS
    assert b.get("a")[:2] == (3, b"three")


def test_quiet_mutations_are_silent(b):
    b.send(request(Op.SETQ, "q", "v1", set_extras(4)) +
           request(Op.ADDQ, "q2", "v2", set_extras()) +
           request(Op.REPLACEQ, "q", "v3", set_extras(6)) +
           request(Op.APPENDQ, "q", "+") + request(Op.PREPENDQ, "q", "-") +
           request(Op.INCRQ, "n", extras=arith_extras(1, 10)) +
           request(Op.DECRQ, "n", extras=arith_extras(3)) +
           request(Op.DELETEQ, "q2") + request(Op.NOOP, opaque=99))
    r = b.response()
    assert (r.opcode, r.opaque) == (Op.NOOP, 99), r
    assert b.get("q")[:2] == (6, b"-v3+")
    assert b.get("q2") is None
    assert b.get("n")[1] == b"7 "      # in place, padded with a space, as memcached


def test_quiet_errors_are_sent(b):
    """A quiet command's failure is answered (binary protocol rule)."""
    b.send(request(Op.REPLACEQ, "absent", "v", set_extras(), opaque=1) +
           request(Op.DELETEQ, "absent", opaque=2) +
           request(Op.INCRQ, "absent", extras=arith_extras(1, 0, 0xFFFFFFFF), opaque=3) +
           request(Op.APPENDQ, "absent", "x", opaque=4) + request(Op.NOOP, opaque=5))
    got = [(r.opcode, r.status, r.opaque) for r in b.responses_until(5)]
    assert got == [(Op.REPLACEQ, Status.KEY_ENOENT, 1), (Op.DELETEQ, Status.KEY_ENOENT, 2),
                   (Op.INCRQ, Status.KEY_ENOENT, 3), (Op.APPENDQ, Status.NOT_STORED, 4),
                   (Op.NOOP, Status.SUCCESS, 5)]


def test_pipelined_multiget(b):
    """GETKQ for many keys then a NOOP: the hits, in order, then the NOOP."""
    for i in range(0, 100, 3):
        b.send(request(Op.SETQ, f"m{i}", f"value{i}" * 20, set_extras(i)))
    b.send(b"".join(request(Op.GETKQ, f"m{i}", opaque=i) for i in range(100)) +
           request(Op.NOOP, opaque=1000))
    got = b.responses_until(1000)
    assert [(r.key, r.value, flags_of(r)) for r in got[:-1]] == [
        (f"m{i}".encode(), f"value{i}".encode() * 20, i) for i in range(0, 100, 3)]


def test_large_value_in_pieces(b):
    """A 700 KB value sent in pieces that cut headers and values anywhere, and read back."""
    value = bytes(range(256)) * 2800
    data = request(Op.SET, "big", value, set_extras(1))
    for i in range(0, len(data), 65521):
        b.send(data[i:i + 65521])
    assert b.response().status == Status.SUCCESS
    assert b.get("big")[1] == value


def test_too_large(srv, b):
    """A value over -I: E2BIG "Too large.", the value dropped; a failed set also takes the old
    value away, as memcached's does; the connection goes on."""
    assert b.set("tl", "small").status == Status.SUCCESS
    r = b.set("tl", b"x" * (1024 * 1024 + 1))
    assert (r.status, r.value) == (Status.E2BIG, b"Too large.")
    assert b.get("tl") is None
    assert b.set("tl2", "small").status == Status.SUCCESS
    r = b.set("tl2", b"x" * (1024 * 1024 + 1), op=Op.ADD)
    assert r.status == Status.E2BIG
    assert b.get("tl2")[1] == b"small"
    assert b.call(Op.NOOP).status == Status.SUCCESS


# ---------- cas ----------

def test_cas_on_set_add_replace(b):
    r = b.set("c", "v", cas=12345)
    assert (r.status, r.value) == (Status.KEY_ENOENT, b"Not found")
    first = b.set("c", "v1").cas
    r = b.set("c", "v2", cas=first + 1)
    assert (r.status, r.value) == (Status.KEY_EEXISTS, b"Data exists for key.")
    second = b.set("c", "v2", cas=first)
    assert second.status == Status.SUCCESS and second.cas not in (0, first)
    assert b.get("c")[1:] == (b"v2", second.cas)
    # replay of the old cas fails; add and replace with a cas are cas operations too
    assert b.set("c", "v3", cas=first).status == Status.KEY_EEXISTS
    assert b.set("c", "v3", cas=second.cas, op=Op.REPLACE).status == Status.SUCCESS
    assert b.set("c", "v4", cas=b.get("c")[2], op=Op.ADD).status == Status.SUCCESS
    assert b.get("c")[1] == b"v4"


def test_cas_matches_the_text_protocol(srv, b):
    cas = b.set("x", "val", flags=2).cas
    with srv.conn() as t:
        t.call("gets x\r\n", f"VALUE x 2 3 {cas}\r\nval\r\nEND\r\n")
        t.call(f"cas x 3 0 4 {cas}\r\nnew!\r\n", "STORED\r\n")
    flags, value, cas2 = b.get("x")
    assert (flags, value) == (3, b"new!") and cas2 != cas


def test_append_prepend_with_cas(b):
    r = b.call(Op.APPEND, "ap", "x")
    assert (r.status, r.value) == (Status.NOT_STORED, b"Not stored.")
    cas = b.set("ap", "mid", flags=7).cas
    r = b.call(Op.APPEND, "ap", "-end", cas=cas + 1)
    assert r.status == Status.KEY_EEXISTS
    r = b.call(Op.APPEND, "ap", "-end", cas=cas)
    assert r.status == Status.SUCCESS and r.cas != cas
    assert b.call(Op.PREPEND, "ap", "start-").status == Status.SUCCESS
    assert b.get("ap")[:2] == (7, b"start-mid-end")


def test_delete_with_cas(b):
    cas = b.set("d", "v").cas
    r = b.call(Op.DELETE, "d", cas=cas + 1)
    assert (r.status, r.value) == (Status.KEY_EEXISTS, b"Data exists for key.")
    assert b.call(Op.DELETE, "d", cas=cas).status == Status.SUCCESS
    r = b.call(Op.DELETE, "d")
    assert (r.status, r.value) == (Status.KEY_ENOENT, b"Not found")


# ---------- incr, decr ----------

def test_incr_decr(b):
    r = b.call(Op.INCR, "n", extras=arith_extras(5, 10))
    assert r.status == Status.SUCCESS and number(r) == 10 and r.cas != 0   # created: initial
    r = b.call(Op.INCR, "n", extras=arith_extras(5, 10))
    assert number(r) == 15
    assert b.get("n")[:2] == (0, b"15")
    r = b.call(Op.DECR, "n", extras=arith_extras(100))
    assert number(r) == 0                                                  # decr stops at 0
    b.set("n", str(2 ** 64 - 1))
    assert number(b.call(Op.INCR, "n", extras=arith_extras(2))) == 1         # incr wraps
    r = b.call(Op.INCR, "absent", extras=arith_extras(1, 0, 0xFFFFFFFF))
    assert (r.status, r.value) == (Status.KEY_ENOENT, b"Not found")
    b.set("text", "abc")
    r = b.call(Op.INCR, "text", extras=arith_extras())
    assert (r.status, r.value) == (Status.DELTA_BADVAL,
                                   b"Non-numeric server-side value for incr or decr")
    b.set("empty", "")
    assert b.call(Op.DECR, "empty", extras=arith_extras(), cas=1).status == Status.DELTA_BADVAL


def test_incr_with_cas(b):
    cas = b.set("ic", "100").cas
    assert b.call(Op.INCR, "ic", extras=arith_extras(1), cas=cas + 1).status == \
        Status.KEY_EEXISTS
    r = b.call(Op.INCR, "ic", extras=arith_extras(999), cas=cas)
    assert number(r) == 1099 and r.cas != cas
    assert b.get("ic")[2] == r.cas


# ---------- touch, gat ----------

def test_touch_and_gat(b):
    cas = b.set("t", "toast", flags=9, exptime=100).cas
    r = b.call(Op.TOUCH, "t", extras=exptime_extras(1000))
    assert (r.status, flags_of(r), r.key, r.value, r.cas) == (Status.SUCCESS, 9, b"", b"", cas)
    r = b.call(Op.GAT, "t", extras=exptime_extras(1000))
    assert (flags_of(r), r.key, r.value) == (9, b"", b"toast")
    r = b.call(Op.GATK, "t", extras=exptime_extras(1000))
    assert (r.key, r.value) == (b"t", b"toast")
    r = b.call(Op.TOUCH, "absent", extras=exptime_extras(10))
    assert (r.status, r.value) == (Status.KEY_ENOENT, b"Not found")
    r = b.call(Op.GATK, "absent", extras=exptime_extras(10))
    assert (r.status, r.key) == (Status.KEY_ENOENT, b"absent")


def test_touch_expires(clock_server, clock):
    with clock_server.bconn() as b:
        b.set("short", "v", exptime=100)
        b.set("long", "v", exptime=2)
        b.call(Op.TOUCH, "short", extras=exptime_extras(2))
        assert b.call(Op.GAT, "long", extras=exptime_extras(100)).status == Status.SUCCESS
        clock.advance(2)
        assert b.get("short") is None
        assert b.get("long")[1] == b"v"


def test_gat_counts_as_a_touch(start):
    """As memcached: a gat (binary or text) counts in cmd_touch and touch_hits/misses, not in
    cmd_get and get_hits/misses."""
    s = start()
    with s.bconn() as b, s.conn() as t:
        b.set("g", "v")
        b.call(Op.GAT, "g", extras=exptime_extras())
        b.call(Op.TOUCH, "nope", extras=exptime_extras())
        t.call("gat 0 g nope\r\n", "VALUE g 0 1\r\nv\r\nEND\r\n")
        st = t.stats()
        assert (st["cmd_touch"], st["touch_hits"], st["touch_misses"]) == ("4", "2", "2")
        assert (st["cmd_get"], st["get_hits"], st["get_misses"]) == ("0", "0", "0")


# ---------- flush, quit ----------

def test_flush(b):
    before = int(b.stats()["cmd_flush"])
    b.set("f1", "v")
    assert b.call(Op.FLUSH).status == Status.SUCCESS
    assert b.get("f1") is None
    b.set("f2", "v")
    b.send(request(Op.FLUSHQ) + request(Op.NOOP, opaque=3))
    assert b.response().opaque == 3
    assert b.get("f2") is None
    assert int(b.stats()["cmd_flush"]) == before + 2


def test_flush_with_delay(clock_server, clock):
    with clock_server.bconn() as b:
        b.set("later", "v")
        assert b.call(Op.FLUSH, extras=exptime_extras(2)).status == Status.SUCCESS
        assert b.get("later")[1] == b"v"
        clock.advance(2)
        assert b.get("later") is None


@pytest.mark.parametrize("server_args", [["-F"]])
def test_flush_disabled(server):
    with server.bconn() as b:
        r = b.call(Op.FLUSH)
        assert (r.status, r.value) == (Status.AUTH_ERROR, b"Auth failure.")


def test_quit(srv):
    with srv.bconn() as b:
        r = b.call(Op.QUIT, opaque=4)
        assert (r.opcode, r.status, r.opaque) == (Op.QUIT, Status.SUCCESS, 4)
        assert b.closed()
    with srv.bconn() as b:
        b.send(request(Op.QUITQ) + request(Op.NOOP))
        assert b.closed() and b.buf == b""


# ---------- stat ----------

def test_stat_matches_the_text_stats(srv, b):
    """A stat with no key is the text protocol's "stats": the same names, in the same order,
    each a response (key: name, value: value), then an empty one."""
    with srv.conn() as t:
        t.send("stats\r\n")
        text = [line.split(b" ")[1].decode() for line in t.until_end().split(b"\r\n")
                if line.startswith(b"STAT ")]
    assert list(b.stats()) == text
    settings = b.stats("settings")
    assert settings["binding_protocol"] == "auto-negotiate" and settings["cas_enabled"] == "yes"
    assert settings["auth_enabled_sasl"] == "no"


def test_stat_subcommands(start):
    b = start().bconn()
    b.set("s", "v")
    assert b.stats("items")["items:1:number"] == "1"
    assert "1:chunk_size" in b.stats("slabs")
    assert "cmd_get" not in b.stats("items")
    b.send(request(Op.STAT, "bogus", opaque=5))
    r = b.response()
    assert (r.opcode, r.status, r.opaque, r.value) == (Op.STAT, Status.KEY_ENOENT, 5,
                                                       b"Not found")
    # detail on/off/dump, and reset: an empty response alone (dump: one "detailed" first)
    assert b.stats("detail on") == {}
    b.get("pre:fix")
    assert "PREFIX pre get 1 hit 0" in b.stats("detail dump")["detailed"]
    assert b.stats("detail off") == {}
    r = b.call(Op.STAT, "detail bogus")
    assert r.status == Status.KEY_ENOENT
    assert b.stats("reset") == {}
    assert b.stats()["cmd_get"] == "0"


def test_stat_sizes_enable_has_no_end(b):
    """As memcached: sizes_enable and sizes_disable answer one response, without the empty
    one that ends a list."""
    b.send(request(Op.STAT, "sizes_enable", opaque=1) + request(Op.STAT, "sizes_disable",
                                                                  opaque=2))
    r1, r2 = b.response(), b.response()
    assert (r1.opaque, r1.key, r1.value) == (1, b"sizes_status", b"enabled")
    assert (r2.opaque, r2.key, r2.value) == (2, b"sizes_status", b"disabled")
    assert b.call(Op.NOOP, opaque=3).opaque == 3


def test_binary_commands_count_in_stats(start):
    """Binary commands count in the same statistics as text ones, as memcached counts them."""
    s = start()
    with s.bconn() as b:
        b.set("k", "12")
        b.get("k")
        b.get("miss")
        b.call(Op.INCR, "k", extras=arith_extras(1))
        b.call(Op.INCR, "created", extras=arith_extras(1, 5))       # neither a miss nor a set
        b.call(Op.DECR, "nope", extras=arith_extras(1, 0, 0xFFFFFFFF))
        b.call(Op.DELETE, "k")
        b.call(Op.DELETE, "k")
        b.set("big", b"x" * (2 << 20))                              # not store_too_large
        st = b.stats()
    want = {"cmd_get": "2", "get_hits": "1", "get_misses": "1", "cmd_set": "1",
            "incr_hits": "1", "incr_misses": "0", "decr_misses": "1", "delete_hits": "1",
            "delete_misses": "1", "store_too_large": "0", "curr_items": "1", "total_items": "2"}
    assert {k: st[k] for k in want} == want


# ---------- what is not a command ----------

@pytest.mark.parametrize("op", [Op.VERBOSITY, 0x1F, 0x30, 0x50, 0xFF])
def test_unknown_opcodes(b, op):
    """Opcodes memcached 1.6.18 does not run (VERBOSITY among them) get "Unknown command",
    and the connection goes on."""
    r = b.call(op, value="body", opaque=11)
    assert (r.opcode, r.status, r.opaque, r.value) == (op, Status.UNKNOWN_COMMAND, 11,
                                                       b"Unknown command")
    assert b.call(Op.NOOP, opaque=12).opaque == 12


@pytest.mark.parametrize("op,key,value", [(Op.SASL_LIST_MECHS, "", ""),
                                          (Op.SASL_AUTH, "PLAIN", "\0u\0p"),
                                          (Op.SASL_STEP, "PLAIN", "data")])
def test_sasl_commands_without_sasl(b, op, key, value):
    r = b.call(op, key, value)
    assert (r.status, r.value) == (Status.UNKNOWN_COMMAND, b"Unknown command")
    assert b.call(Op.NOOP, opaque=12).opaque == 12


# ---------- -B ----------

@pytest.mark.parametrize("server_args", [["-B", "binary"]])
def test_binary_only(server):
    with server.bconn() as b:
        assert b.set("k", "v").status == Status.SUCCESS
        assert b.stats("settings")["binding_protocol"] == "binary"
    with server.conn() as t:
        # text is read as a header: 24 bytes whose first is not 0x80 close the connection
        t.send("get k\r\n" + "x" * 17)
        assert t.closed() and t.buf == b""


@pytest.mark.parametrize("server_args", [["-B", "ascii"]])
def test_ascii_only(server):
    with server.conn() as t:
        assert t.stats("settings")["binding_protocol"] == "ascii"
        t.send(request(Op.NOOP))              # its opcode is a newline
        assert t.line() == b"ERROR\r\n"       # the bytes before it are a line of text


def test_response_header_fields(b):
    """magic 0x81, the request's opcode and opaque, data type 0, status in the vbucket's place."""
    b.set("h", "v")
    b.send(request(Op.GETK, "h", opaque=0x01020304))
    head = b.read(HEADER.size)
    magic, op, keylen, extlen, datatype, status, body, opaque, cas = HEADER.unpack(head)
    assert (magic, op, keylen, extlen, datatype, status, body, opaque) == (
        0x81, Op.GETK, 1, 4, 0, 0, 6, 0x01020304)
    assert b.read(body) == b"\0\0\0\0hv"


def test_keys_are_bytes(b):
    """Binary keys may hold any byte (spaces, newlines, NUL)."""
    key = b"a key\r\nwith\0bytes"
    assert b.set(key, "v").status == Status.SUCCESS
    assert b.get(key)[1] == b"v"
    assert b.get(b"a key") is None


@pytest.mark.parametrize("server_args", [["-C"]])
def test_without_cas(server):
    """-C: every cas is 0, and a cas sent with a set is ignored (memcached keeps none)."""
    with server.bconn() as b:
        r = b.set("k", "v", cas=5)
        assert (r.status, r.cas) == (Status.SUCCESS, 0)
        assert b.get("k") == (0, b"v", 0)
        assert b.call(Op.DELETE, "k", cas=5).status == Status.KEY_EEXISTS


def test_clients_see_each_others_writes(srv):
    """Binary clients on several workers, and a text one, see each other's writes once a
    write's NOOP has come back (the NOOP follows the quiet set on its connection)."""
    conns = [srv.bconn() for _ in range(4)]
    try:
        for i, c in enumerate(conns):
            c.send(request(Op.SETQ, f"multi{i}", f"v{i}", set_extras(i)) +
                   request(Op.NOOP, opaque=i))
            assert c.response().opaque == i
        with srv.conn() as t:
            for i, c in enumerate(conns):
                other = conns[(i + 1) % 4]
                assert other.get(f"multi{i}")[:2] == (i, f"v{i}".encode())
                assert t.get(f"multi{i}") == f"v{i}".encode()
    finally:
        for c in conns:
            c.close()


# ---------- UDP ----------

@pytest.mark.parametrize("protocol", ["auto", "ascii"])
def test_udp(start, protocol):
    """Over UDP a datagram whose payload starts with 0x80 is binary, whatever -B says (as
    memcached); each response is its own message, and a quiet command's is the empty message
    (a bare header) when it is the first of its datagram, else nothing."""
    port = udp_port()
    start("-U", port, "-B", protocol, "-t", "1")
    with Udp(port) as u:
        rid = u.send(request(Op.SET, "u", "value", set_extras(4), opaque=1) +
                     request(Op.GET, "u", opaque=2))
        (r1,), (r2,) = responses(u.message(rid)[1]), responses(u.message(rid)[1])
        assert (r1.opcode, r1.status, r1.opaque) == (Op.SET, Status.SUCCESS, 1)
        assert (r2.opaque, r2.value, r2.cas) == (2, b"value", r1.cas)
        rid = u.send(request(Op.SETQ, "q", "v", set_extras()) + request(Op.GETQ, "none") +
                     request(Op.NOOP, opaque=3))
        assert u.message(rid)[1] == b""
        (r,) = responses(u.message(rid)[1])
        assert (r.opcode, r.opaque) == (Op.NOOP, 3)
        big = bytes(range(256)) * 12
        rid = u.send(request(Op.SETQ, "big", big, set_extras()))
        assert u.message(rid)[1] == b""
        rid = u.send(request(Op.GETK, "big", opaque=4))
        (r,) = responses(u.message(rid)[1])
        assert (r.key, r.value) == (b"big", big)
        rid = u.send(b"get q\r\n")
        assert u.message(rid)[1] == b"VALUE q 0 1\r\nv\r\nEND\r\n"
