"""Replies at the edges, byte for byte as memcached 1.6.18 sends them: the largest value at a
given -I, how incr reads a stored number, gat with no key, numbers past 32 bits in flags,
exptimes and lengths, mg's t, and me's fields.

memcached reads every number of a command line with strtol/strtoul/strtoull (64 bits) and then
keeps 32 bits of exptimes, lengths and flags, so values past 2^31 or 2^32 are truncated rather
than refused; only what does not fit 64 bits, or a '-' before an unsigned number that leaves it
negative as a signed one, is an error."""

import re

import pytest

BAD_LINE = b"CLIENT_ERROR bad command line format\r\n"
BAD_EXPTIME = b"CLIENT_ERROR invalid exptime argument\r\n"
BAD_DELTA = b"CLIENT_ERROR invalid numeric delta argument\r\n"
NON_NUMERIC = b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
TOO_LARGE = b"SERVER_ERROR object too large for cache\r\n"

ITEM_SIZES = {"512k": 512 << 10, "1m": 1 << 20, "2m": 2 << 20}


def memcached_item_size(nkey, flags, nbytes):
    """An item's size as memcached 1.6 counts it (ITEM_ntotal): its 48-byte header, 8 bytes of
    cas, the key and a NUL, 4 bytes of client flags only when they are not 0, then the value and
    its "\\r\\n". This is the size "me" reports, and the one -I limits."""
    return 48 + 8 + nkey + 1 + (4 if flags else 0) + nbytes + 2


def largest_value(item_size_max, nkey, flags):
    """The longest value memcached stores under -I item_size_max: the item's size above may
    reach -I exactly (slabs_clsid refuses only a size above it). Items larger than
    slab_chunk_max (512 KB by default) are stored in chunks, but the limit is still this count."""
    return item_size_max - memcached_item_size(nkey, flags, 0)


def memcached_slab_classes(chunk_size=48, factor=1.25, slab_chunk_max=512 << 10):
    """memcached 1.6's slab class sizes (slabs_init) with -n chunk_size and -f factor: the first
    holds the 48-byte header plus chunk_size, each next is factor times the previous (cut to an
    integer, then rounded up to 8), until a size reaches slab_chunk_max / factor; the last class
    is slab_chunk_max."""
    sizes, size = [], 48 + chunk_size
    while len(sizes) < 62 and size < slab_chunk_max / factor:
        size += -size % 8
        sizes.append(size)
        size = int(size * factor)
    return sizes + [slab_chunk_max]


def memcached_class_of(size):
    """The class (1-based) memcached files an item of `size` bytes under: the smallest that
    holds it; a larger (chunked) item counts under the last."""
    sizes = memcached_slab_classes()
    return next((i + 1 for i, s in enumerate(sizes) if size <= s), len(sizes))


def ms_cas(c, line, data):
    """Run an ms with the c flag; the new cas."""
    c.send(line + b"\r\n" + data + b"\r\n")
    m = re.fullmatch(rb"HD c(\d+)\r\n", c.line())
    assert m, line
    return int(m.group(1))


def me_line(c, key):
    """me's reply as (key, {field: value}); fails unless it has exactly me's six fields in order."""
    c.send(b"me " + key + b"\r\n")
    line = c.line()
    m = re.fullmatch(rb"ME (\S+) exp=(-?\d+) la=(\d+) cas=(\d+) fetch=(yes|no) cls=(\d+) "
                     rb"size=(\d+)\r\n", line)
    assert m, line
    names = ("exp", "la", "cas", "fetch", "cls", "size")
    fields = dict(zip(names, m.groups()[1:]))
    for n in ("exp", "la", "cas", "cls", "size"):
        fields[n] = int(fields[n])
    fields["fetch"] = fields["fetch"].decode()
    return m.group(1), fields


def mg_ttl(c, key):
    """What "mg <key> t" reports: the t value, or None on a miss."""
    c.send(b"mg " + key + b" t\r\n")
    line = c.line()
    if line == b"EN\r\n":
        return None
    m = re.fullmatch(rb"HD t(-?\d+)\r\n", line)
    assert m, line
    return int(m.group(1))


# --- (a) the largest value ---------------------------------------------------------------------


@pytest.mark.parametrize("item", ["1m", "2m", "512k"])
def test_largest_value_is_item_size_max_less_memcached_item_header(start, item):
    size = ITEM_SIZES[item]
    s = start("-I", item)
    with s.conn(timeout=30) as c:
        assert int(c.stats("settings")["item_size_max"]) == size
        for key in (b"k", b"k" * 250):
            for flags in (0, 1):
                n = largest_value(size, len(key), flags)
                value = bytes(range(256)) * (n // 256) + b"v" * (n % 256)
                assert c.set(key, value, flags=flags) == b"STORED\r\n", (item, len(key), flags, n)
                c.send(b"get " + key + b"\r\n")
                assert c.line() == b"VALUE %s %d %d\r\n" % (key, flags, n)
                assert c.read(n + 2) == value + b"\r\n"
                c.expect("END\r\n")
                # One byte more is refused after its data is read; the refused set removes
                # the value it would have replaced.
                assert c.set(key, b"w" * (n + 1), flags=flags) == TOO_LARGE, (item, len(key), flags)
                c.call(b"get " + key + b"\r\n", "END\r\n")
        # Nonzero flags take 4 more bytes of the item; a value of -I bytes never fits.
        n = largest_value(size, 1, 0)
        assert c.set("f", b"x" * n, flags=0) == b"STORED\r\n"
        assert c.set("f", b"x" * n, flags=7) == TOO_LARGE
        assert c.set("f", b"x" * size) == TOO_LARGE
        c.call("version\r\n", "VERSION ")
        c.line()


def test_largest_value_default_item_size(server):
    with server.conn(timeout=30) as c:
        n = largest_value(1 << 20, 3, 0)
        assert n == 1048514  # 1 MiB less 59 bytes and the 3-byte key
        assert c.set("big", b"b" * n) == b"STORED\r\n"
        assert c.get("big") == b"b" * n
        assert c.set("big", b"b" * (n + 1)) == TOO_LARGE
        assert c.get("big") is None


def test_append_past_the_limit_is_not_stored(server):
    # The joined item cannot be allocated: memcached answers NOT_STORED and keeps the old value.
    with server.conn(timeout=30) as c:
        n = largest_value(1 << 20, 3, 5)
        assert c.set("big", b"b" * (n - 1), flags=5) == b"STORED\r\n"
        assert c.set("big", b"ab", cmd="append") == b"NOT_STORED\r\n"
        assert c.set("big", b"ab", cmd="prepend") == b"NOT_STORED\r\n"
        assert c.set("big", b"a", cmd="append") == b"STORED\r\n"
        assert c.set("big", b"a", cmd="prepend") == b"NOT_STORED\r\n"
        c.send("get big\r\n")
        assert c.line() == b"VALUE big 5 %d\r\n" % n
        assert c.read(n + 2) == b"b" * (n - 1) + b"a\r\n"
        c.expect("END\r\n")


# --- (b) incr/decr read the value with strtoull --------------------------------------------------

# (stored value, command, reply). The value is read as strtoull reads it: leading whitespace
# (space, tab, CR, LF, ...), an optional sign, digits, then the end or whitespace (anything after
# that is ignored); a '-' makes a value that is negative as int64 non-numeric, and more than
# 2^64 - 1 is non-numeric too. (A value of nothing but whitespace is not here: memcached's
# strtoull then reads on past the value into whatever memory follows the item.)
ARITH = [
    (b" 5", b"incr k 1", b"6"),
    (b"  5", b"incr k 1", b"6"),
    (b"+5", b"incr k 1", b"6"),
    (b"5 ", b"incr k 1", b"6"),
    (b"\t5\t", b"incr k 1", b"6"),
    (b"\r\n5", b"incr k 1", b"6"),
    (b"5 x", b"incr k 1", b"6"),
    (b"5\t7", b"incr k 1", b"6"),
    (b"05", b"incr k 1", b"6"),
    (b"000000000000000000005", b"incr k 1", b"6"),
    (b"-0", b"incr k 1", b"1"),
    (b"-18446744073709551615", b"incr k 1", b"2"),
    (b"18446744073709551615", b"incr k 1", b"0"),
    (b" 5", b"decr k 10", b"0"),
    (b"5", b"incr k 18446744073709551615", b"4"),
    (b"5", b"incr k -18446744073709551615", b"6"),
    (b"5", b"incr k +3", b"8"),
    (b"5", b"incr k 3\tx", b"8"),
    (b"5", b"decr k -0", b"5"),
    (b"5x", b"incr k 1", None),
    (b"+ 5", b"incr k 1", None),
    (b"0x5", b"incr k 1", None),
    (b"-1", b"incr k 1", None),
    (b"-1", b"decr k 1", None),
    (b"-5", b"incr k 1", None),
    (b"18446744073709551616", b"incr k 1", None),
    (b"99999999999999999999", b"decr k 1", None),
    (b"", b"incr k 1", None),
]


@pytest.mark.parametrize("value,command,result", ARITH, ids=[repr(a[0]) + " " + a[1].decode()
                                                             for a in ARITH])
def test_incr_decr_read_the_value_as_strtoull(srv, value, command, result):
    with srv.conn() as c:
        assert c.set("k", value) == b"STORED\r\n"
        if result is None:
            c.call(command + b"\r\n", NON_NUMERIC)
            assert c.get("k") == value
            return
        c.call(command + b"\r\n", result + b"\r\n")
        # A result no longer than the value is written in place, padded with spaces.
        assert c.get("k") == (result.ljust(len(value)) if len(result) <= len(value) else result)


def test_incr_decr_delta_is_strtoull(srv):
    with srv.conn() as c:
        assert c.set("k", b"5") == b"STORED\r\n"
        c.call("incr k 18446744073709551616\r\n", BAD_DELTA)
        c.call("decr k -1\r\n", BAD_DELTA)
        c.call("incr k -9223372036854775807\r\n", BAD_DELTA)
        c.call("incr k 5x\r\n", BAD_DELTA)
        c.call("incr k -9223372036854775809\r\n", b"9223372036854775812\r\n")
        c.call("incr nokey -18446744073709551615\r\n", "NOT_FOUND\r\n")


# --- (c) gat with an exptime and no key ----------------------------------------------------------


def test_gat_with_no_key_is_a_get_of_nothing(srv):
    with srv.conn() as c:
        c.call("gat 0\r\n", "END\r\n")
        c.call("gats 0\r\n", "END\r\n")
        c.call("gat 100 \r\n", "END\r\n")
        c.call("gats  -1\r\n", "END\r\n")
        c.call("gat 4294967296\r\n", "END\r\n")
        c.call("gat\r\n", "ERROR\r\n")
        c.call("gats\r\n", "ERROR\r\n")
        c.call("gat abc\r\n", BAD_EXPTIME)
        c.call("gat abc k\r\n", BAD_EXPTIME)
        c.call("gat 1x k\r\n", BAD_EXPTIME)
        c.call("gat 9223372036854775808 k\r\n", BAD_EXPTIME)
        c.call("gat -9223372036854775809 k\r\n", BAD_EXPTIME)


# --- (d) flags and exptimes past 32 bits -------------------------------------------------------


@pytest.mark.parametrize("flags,stored", [
    (b"4294967295", 4294967295), (b"4294967296", 0), (b"4294967297", 1),
    (b"18446744073709551615", 4294967295), (b"9223372036854775808", 0),
    (b"-18446744073709551615", 1), (b"-0", 0), (b"+5", 5), (b"\t5", 5), (b"5\tx", 5),
])
def test_flags_are_read_as_64_bits_and_cut_to_32(srv, flags, stored):
    with srv.conn() as c:
        c.call(b"set k " + flags + b" 0 1\r\nv\r\n", "STORED\r\n")
        c.call("get k\r\n", b"VALUE k %d 1\r\nv\r\nEND\r\n" % stored)


@pytest.mark.parametrize("flags", [b"18446744073709551616", b"-1", b"-4294967296", b"5x",
                                   b"9223372036854775808\t-"])
def test_flags_refused(srv, flags):
    with srv.conn() as c:
        # The line is refused and its data block is then read as a command.
        c.call(b"set k " + flags + b" 0 1\r\nv\r\n", BAD_LINE + b"ERROR\r\n")
        c.call("get k\r\n", "END\r\n")


def test_exptime_is_read_as_64_bits_and_cut_to_int32(srv):
    with srv.conn() as c:
        # 2^32 is 0: never expires.
        c.call("set k 0 4294967296 1\r\nv\r\n", "STORED\r\n")
        assert mg_ttl(c, b"k") == -1
        c.call("set k 0 -9223372036854775808 1\r\nv\r\n", "STORED\r\n")
        assert mg_ttl(c, b"k") == -1
        # 2^32 + 3600 is 3600 seconds from now; so is -2^32 + 3600.
        for exptime in (b"4294970896", b"-4294963696"):
            c.call(b"set k 0 " + exptime + b" 1\r\nv\r\n", "STORED\r\n")
            assert mg_ttl(c, b"k") in (3600, 3599)
        # 2^31 is INT32_MIN and 2^63 - 1 is -1: negative, so already expired.
        for exptime in (b"2147483648", b"9223372036854775807"):
            c.call(b"set k 0 " + exptime + b" 1\r\nv\r\nget k\r\n", "STORED\r\nEND\r\n")
        # Outside a 64-bit long, or junk after the digits: refused, and the data block is then
        # read as a command.
        for exptime in (b"9223372036854775808", b"-9223372036854775809", b"1x"):
            c.call(b"set k 0 " + exptime + b" 1\r\nv\r\n", BAD_LINE + b"ERROR\r\n")


def test_touch_and_gat_exptime_cut_to_int32(srv):
    with srv.conn() as c:
        c.call("set k 0 100 1\r\nv\r\ntouch k 4294967296\r\n", "STORED\r\nTOUCHED\r\n")
        assert mg_ttl(c, b"k") == -1
        c.call("touch k 2147483648\r\n", "TOUCHED\r\n")
        c.call("get k\r\n", "END\r\n")
        c.call("touch k 9223372036854775808\r\n", BAD_EXPTIME)
        c.call("set k 0 100 1\r\nv\r\ngat 4294967296 k\r\n", "STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n")
        assert mg_ttl(c, b"k") == -1
        # The value comes back, then it has expired.
        c.call("gat 2147483648 k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n")
        c.call("get k\r\n", "END\r\n")


# --- (e) mg's t -------------------------------------------------------------------------------


def test_mg_t_is_minus_one_without_expiry(srv):
    with srv.conn() as c:
        c.call("set k 0 0 1\r\n5\r\nmg k t\r\n", "STORED\r\nHD t-1\r\n")
        c.call("mg k t v\r\n", "VA 1 t-1\r\n5\r\n")
        c.call("mg k s t f\r\n", "HD s1 t-1 f0\r\n")
        c.call("ma k t\r\n", "HD t-1\r\n")
        c.call("ma k t v\r\n", "VA 1 t-1\r\n7\r\n")
        c.call("ms k 1 T0\r\n5\r\nmg k t\r\n", "HD\r\nHD t-1\r\n")
        c.call("ms k 1 T4294967296\r\n5\r\nmg k t\r\n", "HD\r\nHD t-1\r\n")
        c.call("set k 0 100 1\r\n5\r\ntouch k 0\r\nmg k t\r\n", "STORED\r\nTOUCHED\r\nHD t-1\r\n")
        c.call("set k 0 100 1\r\n5\r\ngat 0 k\r\nmg k t\r\n",
               "STORED\r\nVALUE k 0 1\r\n5\r\nEND\r\nHD t-1\r\n")
        c.call("set k 0 100 1\r\n5\r\nmg k T0 t\r\n", "STORED\r\nHD t-1\r\n")
        c.call("ma fresh N0 t\r\n", "HD t-1\r\n")
        c.call("mg fresh2 N0 t\r\n", "HD t-1 W\r\n")


def test_mg_t_before_T_reports_the_ttl_before_the_touch(srv):
    # memcached walks the flags in the order given: a t before T sees the old exptime.
    with srv.conn() as c:
        c.call("set k 0 0 1\r\n5\r\nmg k t T100\r\n", "STORED\r\nHD t-1\r\n")
        assert mg_ttl(c, b"k") in (100, 99)
        c.send("mg k t T0\r\n")
        assert re.fullmatch(rb"HD t(100|99)\r\n", c.line())
        assert mg_ttl(c, b"k") == -1
        c.call("mg k t T-1\r\n", "HD t-1\r\n")
        c.call("mg k t\r\n", "EN\r\n")


# --- (f) me -----------------------------------------------------------------------------------


@pytest.mark.parametrize("nbytes", [0, 1, 30, 36, 100, 1000, 5000, 100000, 600000])
@pytest.mark.parametrize("flags", [0, 7])
def test_me_size_is_memcached_item_size(srv, nbytes, flags):
    with srv.conn(timeout=20) as c:
        assert c.set("key", b"x" * nbytes, flags=flags) == b"STORED\r\n"
        key, f = me_line(c, b"key")
        assert key == b"key"
        assert f["size"] == memcached_item_size(3, flags, nbytes)


@pytest.mark.parametrize("nbytes", [1, 30, 36, 60, 100, 1000, 5000, 100000, 524128, 600000])
def test_me_cls_is_memcached_slab_class(srv, nbytes):
    with srv.conn(timeout=20) as c:
        assert c.set("key", b"x" * nbytes) == b"STORED\r\n"
        _, f = me_line(c, b"key")
        assert f["cls"] == memcached_class_of(memcached_item_size(3, 0, nbytes))


def test_me_fields(srv):
    with srv.conn() as c:
        cas = ms_cas(c, b"ms key 1 c", b"v")
        key, f = me_line(c, b"key")
        assert key == b"key"
        assert f["exp"] == -1 and f["cas"] == cas and f["fetch"] == "no"
        assert f["size"] == 63 and f["cls"] == 1
        # me does not count as a fetch; a get does.
        assert me_line(c, b"key")[1]["fetch"] == "no"
        assert c.get("key") == b"v"
        assert me_line(c, b"key")[1]["fetch"] == "yes"
        # exp is the clock minus the expiry time: negative while the item lives.
        cas = ms_cas(c, b"ms key 1 T3600 F5 c", b"v")
        _, f = me_line(c, b"key")
        assert -3600 <= f["exp"] <= -3599 and f["cas"] == cas and f["size"] == 67
        c.call("me nokey\r\n", "EN\r\n")
        c.call("me\r\n", BAD_LINE)
        c.call(b"me " + b"k" * 251 + b"\r\n", BAD_LINE)
        c.call("me ab= b\r\n", BAD_LINE)


def test_me_base64_key_is_printed_reencoded(srv):
    with srv.conn() as c:
        c.call("ms Zm9v 1 b\r\nv\r\n", "HD\r\n")
        assert me_line(c, b"Zm9v b")[0] == b"Zm9v"
        assert me_line(c, b"Zm9v!! b")[0] == b"Zm9v"
        assert me_line(c, b"Zm9v b x")[0] == b"Zm9v"
        c.call("me Zm9v x\r\n", "EN\r\n")


def test_me_prints_the_key_as_the_item_was_stored(srv):
    # Base64 in the reply exactly when the item was stored with a base64 key, however me asks.
    with srv.conn() as c:
        c.call("ms Zm9v 1 b\r\nv\r\n", "HD\r\n")
        assert me_line(c, b"foo")[0] == b"Zm9v"
        c.call("set bar 0 0 1\r\nv\r\n", "STORED\r\n")
        assert me_line(c, b"YmFy b")[0] == b"bar"


# --- (g) lengths past 32 bits ------------------------------------------------------------------


def test_set_length_is_read_as_64_bits_and_cut_to_int32(srv):
    with srv.conn() as c:
        # 2^32 is a length of 0: the data block is just "\r\n".
        c.call("set k 0 0 4294967296\r\n\r\n", "STORED\r\n")
        c.call("get k\r\n", "VALUE k 0 0\r\n\r\nEND\r\n")
        c.call("set k 0 0 4294967297\r\nv\r\n", "STORED\r\n")
        c.call("get k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n")
        c.call("set k 0 0 -4294967295\r\nw\r\n", "STORED\r\n")
        c.call("get k\r\n", "VALUE k 0 1\r\nw\r\nEND\r\n")
        # A block longer than 0 bytes: the first two bytes are not "\r\n", then the rest of the
        # line is a command of its own.
        c.call("set k 0 0 4294967296\r\nv\r\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n")


@pytest.mark.parametrize("length", [b"4294967295", b"-1", b"2147483646", b"2147483647",
                                    b"2147483648", b"9223372036854775808", b"-9223372036854775809",
                                    b"1x", b"x"])
def test_set_bad_length_swallows_nothing_and_keeps_the_connection(srv, length):
    with srv.conn() as c:
        c.call(b"set k 0 0 " + length + b"\r\n", BAD_LINE)
        c.call("set k 0 0 1\r\nv\r\n", "STORED\r\n")
        c.call(b"set k 0 0 " + length + b" noreply\r\nget k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n")


# --- the others --------------------------------------------------------------------------------


def test_cas_unique_is_strtoull(srv):
    with srv.conn() as c:
        c.call("cas k 0 0 1 abc\r\nv\r\n", BAD_LINE + b"ERROR\r\n")
        c.call("cas k 0 0 1 -1\r\nv\r\n", BAD_LINE + b"ERROR\r\n")
        c.call("cas k 0 0 1 18446744073709551616\r\nv\r\n", BAD_LINE + b"ERROR\r\n")
        c.call("cas k 0 0 1 18446744073709551615\r\nv\r\n", "NOT_FOUND\r\n")
        c.call("set k 0 0 1\r\nv\r\n", "STORED\r\n")
        c.call("cas k 0 0 1 -18446744073709551615\r\nw\r\n", "EXISTS\r\n")


def test_verbosity_level_is_strtoul(srv):
    with srv.conn() as c:
        c.call("verbosity abc\r\n", BAD_LINE)
        c.call("verbosity -1\r\n", BAD_LINE)
        c.call("verbosity 18446744073709551616\r\n", BAD_LINE)
        c.call("verbosity\r\n", "ERROR\r\n")
        c.call("verbosity 4294967296\r\n", "OK\r\n")
        c.call("verbosity 1\tx\r\n", "OK\r\n")
        c.call("verbosity 0\r\n", "OK\r\n")


def test_flush_all_delay_is_strtol_cut_to_int32(srv):
    with srv.conn() as c:
        c.call("set k 0 0 1\r\nv\r\nflush_all -1\r\nget k\r\n", "STORED\r\nOK\r\nEND\r\n")
        # 2^31 is INT32_MIN and 2^32 is 0: both flush now.
        c.call("set k 0 0 1\r\nv\r\nflush_all 2147483648\r\nget k\r\n", "STORED\r\nOK\r\nEND\r\n")
        c.call("set k 0 0 1\r\nv\r\nflush_all 4294967296\r\nget k\r\n", "STORED\r\nOK\r\nEND\r\n")
        c.call("flush_all abc\r\n", BAD_EXPTIME)
        c.call("flush_all 9223372036854775808\r\n", BAD_EXPTIME)
        # noreply silences the error too.
        c.call("flush_all abc noreply\r\nmn\r\n", "MN\r\n")


def test_failed_set_drops_the_old_value_without_counting_a_delete(start):
    """As memcached: a set too large for the cache removes the key's old value, and that is not
    a delete in the statistics."""
    s = start()
    with s.conn() as c:
        c.call("set k 0 0 1\r\nv\r\n", "STORED\r\n")
        big = b"x" * (1024 * 1024 + 1)
        c.call(b"set k 0 0 %d\r\n%s\r\n" % (len(big), big), TOO_LARGE)
        assert c.get("k") is None
        st = c.stats()
        assert (st["delete_hits"], st["delete_misses"], st["store_too_large"]) == ("0", "0", "1")
