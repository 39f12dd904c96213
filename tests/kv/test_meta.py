"""Meta commands (mg ms md ma mn me) and their flags, as memcached 1.6.18 answers them.

Return flags come back in the order the request gave them; cas values are only compared with
each other, never to a number."""

import re

K251 = "k" * 251


def line_re(c, pattern):
    """Read one line and match it against pattern (a regex without the \\r\\n); the match."""
    line = c.line().decode()
    m = re.fullmatch(pattern + "\r\n", line)
    assert m, f"{line!r} does not match {pattern!r}"
    return m


def test_mn(srv):
    with srv.conn() as c:
        c.call("mn\r\n", "MN\r\n")


def test_ms_mg_basic(srv):
    with srv.conn() as c:
        c.call("ms foo 3\r\nbar\r\n", "HD\r\n")
        c.call("mg foo\r\n", "HD\r\n")
        c.call("mg foo v\r\n", "VA 3\r\nbar\r\n")
        c.call("get foo\r\n", "VALUE foo 0 3\r\nbar\r\nEND\r\n")
        c.call("ms empty 0\r\n\r\n", "HD\r\n")
        c.call("mg empty v s\r\n", "VA 0 s0\r\n\r\n")


def test_ms_mg_return_flags_in_request_order(srv):
    with srv.conn() as c:
        c.send("ms foo 3 T100 F5 c k O123\r\nbar\r\n")
        cas = line_re(c, r"HD c(\d+) kfoo O123").group(1)
        c.send("mg foo v f t c k O1 s\r\n")
        line_re(c, rf"VA 3 f5 t(100|99) c{cas} kfoo O1 s3")
        c.expect("bar\r\n")
        c.send("mg foo s k f v\r\n")
        line_re(c, r"VA 3 s3 kfoo f5")
        c.expect("bar\r\n")
        c.call("get foo\r\n", "VALUE foo 5 3\r\nbar\r\nEND\r\n")
        c.send("gets foo\r\n")
        assert c.line() == f"VALUE foo 5 3 {cas}\r\n".encode()
        c.expect("bar\r\nEND\r\n")


def test_mg_without_a_ttl_says_minus_one(srv):
    with srv.conn() as c:
        c.call("set foo 0 0 1\r\nx\r\n", "STORED\r\n")
        c.call("mg foo t v\r\n", "VA 1 t-1\r\nx\r\n")


def test_mg_miss_quiet_and_opaque(srv):
    with srv.conn() as c:
        c.call("mg missing v\r\n", "EN\r\n")
        c.call("mg missing\r\n", "EN\r\n")
        c.call("mg missing v q\r\nmg missing v q k O1\r\nmn\r\n", "MN\r\n")
        c.call("mg missing v k O7\r\n", "EN kmissing O7\r\n")
        c.call("ms foo 1\r\nx\r\n", "HD\r\n")
        c.call("mg foo v q\r\nmn\r\n", "VA 1\r\nx\r\nMN\r\n")   # q hides misses only


def test_mg_touch_with_T(srv):
    with srv.conn() as c:
        c.call("ms foo 3\r\nbar\r\n", "HD\r\n")
        c.call("mg foo T50 t v\r\n", "VA 3 t50\r\nbar\r\n")
        c.send("mg foo t\r\n")
        line_re(c, r"HD t(50|49)")


def test_mg_hit_before_and_last_access(srv):
    with srv.conn() as c:
        c.call("ms foo 3\r\nbar\r\n", "HD\r\n")
        c.send("mg foo h l\r\n")
        line_re(c, r"HD h0 l\d+")
        c.send("mg foo h l v\r\n")
        line_re(c, r"VA 3 h1 l\d+")
        c.expect("bar\r\n")


def test_base64_keys(srv):
    with srv.conn() as c:
        c.send("ms Zm9v 3 b k c\r\nbaz\r\n")
        line_re(c, r"HD kZm9v b c\d+")
        c.call("mg Zm9v b v k\r\n", "VA 3 kZm9v b\r\nbaz\r\n")
        c.call("get foo\r\n", "VALUE foo 0 3\r\nbaz\r\nEND\r\n")
        # not base64: refused, and the data block is swallowed with the command
        c.call("ms foo 3 b\r\nbar\r\n", "CLIENT_ERROR error decoding key\r\n")
        c.call("mg foo b\r\n", "CLIENT_ERROR error decoding key\r\n")
        c.call("mn\r\n", "MN\r\n")


def test_mg_vivify_on_miss_wins_once(srv):
    with srv.conn() as c:
        c.send("mg newkey N30 v c t s\r\n")
        cas = line_re(c, r"VA 0 c(\d+) t30 s0 W").group(1)
        c.expect("\r\n")
        c.send("mg newkey N30 v c t\r\n")
        line_re(c, rf"VA 0 c{cas} t(30|29) Z")
        c.expect("\r\n")
        c.call("ms newkey 1\r\nx\r\n", "HD\r\n")
        c.call("mg newkey v N30\r\n", "VA 1\r\nx\r\n")


def test_ms_modes(srv):
    with srv.conn() as c:
        c.call("ms foo 3\r\nbar\r\n", "HD\r\n")
        c.call("ms foo 2 ME\r\nxx\r\n", "NS\r\n")
        c.call("ms new 2 ME\r\nxx\r\n", "HD\r\n")
        c.call("ms foo 2 MA\r\naa\r\n", "HD\r\n")
        c.call("ms foo 2 MP\r\npp\r\n", "HD\r\n")
        c.call("mg foo v\r\n", "VA 7\r\nppbaraa\r\n")
        c.call("ms nope 2 MA\r\naa\r\n", "NS\r\n")
        c.call("ms nope 2 MP\r\naa\r\n", "NS\r\n")
        c.call("ms nope 2 MR\r\naa\r\n", "NS\r\n")
        c.call("ms nope 2 MA N60\r\naa\r\n", "NS\r\n")
        c.call("mg nope v\r\n", "EN\r\n")
        c.call("ms foo 1 MR\r\nr\r\n", "HD\r\n")
        c.call("ms foo 1 MS\r\ns\r\n", "HD\r\n")
        c.call("mg foo v\r\n", "VA 1\r\ns\r\n")
        c.call("ms foo 1 MX\r\nx\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n")
        c.call("mg foo v\r\n", "VA 1\r\ns\r\n")


def test_ms_compare_cas_and_quiet(srv):
    with srv.conn() as c:
        c.send("ms foo 1 c\r\n1\r\n")
        cas = line_re(c, r"HD c(\d+)").group(1)
        c.call(f"ms foo 1 C{int(cas) + 1000}\r\n2\r\n", "EX\r\n")
        c.call("ms nope 1 C1\r\n2\r\n", "NF\r\n")
        c.call(f"ms foo 1 C{cas}\r\n3\r\n", "HD\r\n")
        c.call(f"ms foo 1 C{cas}\r\n4\r\n", "EX\r\n")
        c.call("mg foo v\r\n", "VA 1\r\n3\r\n")
        # q hides HD but not the failures
        c.call("ms foo 1 q\r\nq\r\nms foo 1 q C1\r\nq\r\nms foo 1 q ME\r\nq\r\nmn\r\n", "EX\r\nNS\r\nMN\r\n")


def test_ms_invalidate_and_expired_at_once(srv):
    with srv.conn() as c:
        c.call("ms foo 1 I\r\nz\r\n", "HD\r\n")
        c.call("mg foo v\r\n", "VA 1\r\nz\r\n")
        c.call("ms foo 2 T-1\r\nab\r\n", "HD\r\n")
        c.call("mg foo v\r\n", "EN\r\n")


def test_ms_errors(srv):
    with srv.conn() as c:
        c.call("ms foo\r\n", "CLIENT_ERROR bad command line format\r\n")
        c.call("ms foo x\r\nabc\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n")
        c.call("ms foo 2\r\nabc\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n")
        c.call("mg foo v\r\n", "EN\r\n")
        c.call(f"ms {K251} 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n")
        c.call("mn\r\n", "MN\r\n")


def test_mg_errors(srv):
    with srv.conn() as c:
        c.call("mg\r\n", "ERROR\r\n")
        c.call("mg foo zz\r\n", "CLIENT_ERROR invalid flag\r\n")
        c.call("mg foo v v\r\n", "CLIENT_ERROR duplicate flag\r\n")
        c.call(f"mg {K251} v\r\n", "CLIENT_ERROR bad command line format\r\n")
        c.call("mn\r\n", "MN\r\n")


def test_md(srv):
    with srv.conn() as c:
        c.call("ms foo 1\r\n1\r\n", "HD\r\n")
        c.call("md foo\r\n", "HD\r\n")
        c.call("md foo\r\n", "NF\r\n")
        c.call("mg foo v\r\n", "EN\r\n")
        c.call("md foo k O5\r\n", "NF kfoo O5\r\n")
        # q hides HD only: a miss still answers NF
        c.call("ms foo 1\r\n1\r\n", "HD\r\n")
        c.call("md foo q\r\nmd foo q\r\nmn\r\n", "NF\r\nMN\r\n")


def test_md_compare_cas(srv):
    with srv.conn() as c:
        c.send("ms foo 1 c\r\n1\r\n")
        cas = int(line_re(c, r"HD c(\d+)").group(1))
        c.call(f"md foo C{cas + 1000}\r\n", "EX\r\n")
        c.call(f"md foo C{cas}\r\n", "HD\r\n")
        c.call("mg foo\r\n", "EN\r\n")


def test_md_invalidate_marks_stale_and_hands_out_one_win(srv):
    with srv.conn() as c:
        c.send("ms foo 1 c\r\n1\r\n")
        cas = int(line_re(c, r"HD c(\d+)").group(1))
        c.call("md foo I T30\r\n", "HD\r\n")
        c.send("mg foo v c t\r\n")
        cas2 = line_re(c, r"VA 1 c(\d+) t(30|29) X W").group(1)
        assert int(cas2) != cas
        c.expect("1\r\n")
        c.send("mg foo v c t\r\n")
        line_re(c, rf"VA 1 c{cas2} t(30|29) Z X")
        c.expect("1\r\n")


def test_ma(srv):
    with srv.conn() as c:
        c.call("ma cnt\r\n", "NF\r\n")
        c.call("ma cnt N0 J13\r\n", "HD\r\n")   # created with the initial value J
        c.call("mg cnt v\r\n", "VA 2\r\n13\r\n")
        c.call("ma cnt v\r\n", "VA 2\r\n14\r\n")
        c.call("ma cnt v D5\r\n", "VA 2\r\n19\r\n")
        c.call("ma cnt v MD D100\r\n", "VA 1\r\n0\r\n")
        c.call("ma cnt v M- D1\r\n", "VA 1\r\n0\r\n")
        c.call("ma cnt v MI\r\n", "VA 1\r\n1\r\n")
        c.send("ma cnt v M+ D2 t c\r\n")
        line_re(c, r"VA 1 t-1 c\d+")
        c.expect("3\r\n")
        # like incr, ma may rewrite "19" in place, padded: "3 " (see test_commands)
        assert c.get("cnt") in (b"3", b"3 ")
        c.call("ma cnt q\r\nma nope q\r\nmn\r\n", "NF\r\nMN\r\n")   # q hides HD only
        assert c.get("cnt") in (b"4", b"4 ")


def test_ma_wraps_and_errors(srv):
    with srv.conn() as c:
        c.call("ms cnt 20\r\n18446744073709551615\r\n", "HD\r\n")
        c.call("ma cnt v\r\n", "VA 1\r\n0\r\n")
        c.call("ms txt 3\r\nabc\r\n", "HD\r\n")
        c.call("ma txt\r\n", "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
        c.call("ma cnt Dxyz\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n")
        c.call("ma cnt MZ\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n")
        c.call("mn\r\n", "MN\r\n")


def test_me(srv):
    with srv.conn() as c:
        c.call("set cnt 0 0 1\r\n5\r\n", "STORED\r\n")
        c.send("me cnt\r\n")
        line_re(c, r"ME cnt exp=-1 la=\d+ cas=\d+ fetch=no cls=\d+ size=\d+")
        c.call("get cnt\r\n", "VALUE cnt 0 1\r\n5\r\nEND\r\n")
        c.send("me cnt\r\n")
        line_re(c, r"ME cnt exp=-1 la=\d+ cas=\d+ fetch=yes cls=\d+ size=\d+")
        c.call("touch cnt 100\r\n", "TOUCHED\r\n")
        c.send("me cnt\r\n")
        # exp is the clock minus the expiry time: negative while the item lives
        line_re(c, r"ME cnt exp=-(100|99) la=\d+ cas=\d+ fetch=yes cls=\d+ size=\d+")
        c.call("me nope\r\n", "EN\r\n")


def test_meta_and_classic_share_items(srv):
    with srv.conn() as c:
        c.call("set a 9 0 2\r\nhi\r\n", "STORED\r\n")
        c.send("gets a\r\n")
        cas = c.line().split()[4].decode()
        c.expect("hi\r\nEND\r\n")
        c.call("mg a v f c\r\n", f"VA 2 f9 c{cas}\r\nhi\r\n")
        c.call("md a\r\n", "HD\r\n")
        c.call("get a\r\n", "END\r\n")


def test_ms_with_an_older_cas_and_invalidate_stores_a_stale_value(srv):
    """ms C<older cas> I stores anyway, marked stale: the next fetch gets X and wins W, the
    one after sees Z X; without I the same older cas is refused (EX)."""
    with srv.conn() as c:
        cas = []
        for v in ("v1", "v2", "v3"):
            c.send(f"ms st 2 c\r\n{v}\r\n")
            cas.append(int(c.line().split()[1][1:]))
        c.send(f"ms st 2 C{cas[1]} I c\r\nv4\r\n")
        reply = c.line().split()
        assert reply[0] == b"HD" and int(reply[1][1:]) > cas[2], reply
        c.call("mg st v\r\n", "VA 2 X W\r\nv4\r\n")
        c.call("mg st v\r\n", "VA 2 Z X\r\nv4\r\n")
        c.call(f"ms st 2 C{cas[1]} c\r\nv5\r\n", "EX c0\r\n")
        c.call("mg st v\r\n", "VA 2 Z X\r\nv4\r\n")


def test_ms_stale_store_keeps_the_ttl_and_the_handed_out_token(srv):
    """After md I T30 and a fetch that won the recache token, ms C<older cas> I T90 stores
    the value as stale but keeps the item's ttl (not T90) and the token already sent: the
    next fetch sees X and Z, and does not win W again (memcached's t/metaget.t)."""
    with srv.conn() as c:
        c.call("ms inv 3\r\nmoo\r\n", "HD\r\n")
        c.send("ms inv 3 c\r\nmoo\r\n")
        cas = int(line_re(c, r"HD c(\d+)").group(1))   # 2 or more: C{cas - 1} is not C0
        c.call("md inv I T30\r\n", "HD\r\n")
        c.send("mg inv v t\r\n")
        line_re(c, r"VA 3 t(30|29) X W")
        c.expect("moo\r\n")
        c.call(f"ms inv 1 I T90 C{cas - 1}\r\nf\r\n", "HD\r\n")
        c.send("mg inv v t\r\n")
        line_re(c, r"VA 1 t(30|29|28) Z X")
        c.expect("f\r\n")


def test_ms_append_and_prepend_compare_cas(srv):
    """As memcached: ms in append or prepend mode given C needs the cas to match."""
    with srv.conn() as c:
        c.send("ms ap 1 c\r\nx\r\n")
        cas = int(line_re(c, r"HD c(\d+)").group(1))
        c.call(f"ms ap 1 MA C{cas + 1}\r\ny\r\n", "EX\r\n")
        c.call(f"ms ap 1 MP C{cas + 1}\r\ny\r\n", "EX\r\n")
        c.call(f"ms ap 1 MA C{cas}\r\ny\r\n", "HD\r\n")
        c.call("mg ap v\r\n", "VA 2\r\nxy\r\n")


def test_ma_of_an_empty_value_is_not_a_number_whatever_the_cas(srv):
    with srv.conn() as c:
        c.call("ms e 0\r\n\r\n", "HD\r\n")
        c.call("ma e C99999\r\n",
               "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
