"""The text protocol over UDP (-U <port>), as memcached 1.6 speaks it.

Every datagram starts with an 8-byte header of four big-endian 16-bit fields: request id,
sequence number, datagrams in the message, reserved. A request is one datagram (total 1); the
server ignores any other, and one with no command after the header. A reply message is cut into
datagrams of at most 1400 bytes, header included (1392 bytes of reply each), all carrying the
request's id, seq 0..n-1 and total n. memcached sends each response object as its own message:
the reply to each command of a datagram, and for a multi-key get each found key's value, the
last key's message carrying the END.

Tests that depend on the order in which datagrams are served run the server with -t 1: with
more workers, memcached reads the UDP socket from every worker thread, so two datagrams sent
back to back may be served in either order.
"""

import os
import socket
import struct
import time
from collections import namedtuple

import pytest

from kvlib import HOST, REPLY_SECONDS, ServerError

HEADER = struct.Struct("!HHHH")
DATAGRAM_MAX = 1400
PAYLOAD_MAX = DATAGRAM_MAX - HEADER.size

Header = namedtuple("Header", "id seq total reserved")


def udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Udp:
    """A UDP client of one server: sends requests with fresh ids and reads the datagrams back."""

    def __init__(self, port, timeout=REPLY_SECONDS):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:   # room for a multi-datagram reply that arrives while the test is not reading
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        except OSError:
            pass
        self.sock.connect((HOST, port))   # only the server's datagrams are received
        self.timeout = timeout
        self.next_id = int.from_bytes(os.urandom(2), "big")

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def fresh_id(self):
        self.next_id = (self.next_id + 1) & 0xFFFF
        return self.next_id

    def send(self, payload, rid=None, seq=0, total=1, reserved=0):
        """Send payload under a header; returns the request id."""
        if isinstance(payload, str):
            payload = payload.encode()
        rid = self.fresh_id() if rid is None else rid
        self.sock.send(HEADER.pack(rid, seq, total, reserved) + payload)
        return rid

    def send_raw(self, data):
        self.sock.send(data)

    def datagram(self):
        """The next datagram as (Header, payload); TimeoutError if none within the timeout."""
        deadline = time.monotonic() + self.timeout
        self.sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            d = self.sock.recv(1 << 17)
        except socket.timeout:
            raise TimeoutError(f"no datagram within {self.timeout} s") from None
        assert len(d) >= HEADER.size, f"a datagram shorter than a header: {d!r}"
        assert len(d) <= DATAGRAM_MAX, f"a datagram of {len(d)} bytes (at most {DATAGRAM_MAX})"
        return Header(*HEADER.unpack_from(d)), d[HEADER.size:]

    def message(self, rid):
        """One reply message to request rid: its headers in sequence order and its bytes,
        reassembled by sequence number. Checks every header of it."""
        first = self.datagram()
        h = first[0]
        assert h.id == rid, f"a datagram for request {h.id}, expected {rid}: {first!r:.200}"
        assert h.reserved == 0, h
        if h.total == 0:   # memcached's bare header for an empty response
            assert h.seq == 0 and first[1] == b"", first
            return [h], b""
        parts = [first]
        while len(parts) < h.total:
            parts.append(self.datagram())
        for hh, _ in parts:
            assert (hh.id, hh.total, hh.reserved) == (rid, h.total, 0), (hh, h)
        parts.sort(key=lambda p: p[0].seq)
        assert [hh.seq for hh, _ in parts] == list(range(h.total)), [hh for hh, _ in parts]
        for hh, payload in parts[:-1]:
            assert len(payload) == PAYLOAD_MAX, (hh, len(payload))
        assert 0 < len(parts[-1][1]) <= PAYLOAD_MAX
        return [hh for hh, _ in parts], b"".join(p for _, p in parts)

    def ask(self, payload, **kw):
        """Send one request and return its reply: one message's bytes."""
        rid = self.send(payload, **kw)
        return self.message(rid)[1]


def start_udp(start, *args):
    """A server listening on TCP (srv.port) and on a free UDP port (srv.udp_port)."""
    for attempt in range(3):
        port = udp_port()
        try:
            s = start.attempt("-U", str(port), *args)
        except ServerError as e:
            if attempt == 2:
                pytest.fail(str(e), pytrace=False)
            continue   # lost a race for the UDP port
        s.udp_port = port
        return s


@pytest.fixture
def usrv(start):
    """A server with UDP on, default worker threads."""
    return start_udp(start)


@pytest.fixture
def usrv1(start):
    """A server with UDP on and one worker thread: datagrams are served in the order sent."""
    return start_udp(start, "-t", "1")


def tcp_reply(srv, request, end=b"END\r\n"):
    with srv.conn() as c:
        c.send(request)
        return c.until_end(end)


def test_set_then_get(usrv):
    with Udp(usrv.udp_port) as u:
        assert u.ask("set k 5 0 5\r\nhello\r\n") == b"STORED\r\n"
        assert u.ask("get k\r\n") == b"VALUE k 5 5\r\nhello\r\nEND\r\n"
        assert u.ask("gets nope\r\n") == b"END\r\n"
        # the reply to a one-datagram request: seq 0, total 1, reserved 0, the request's id
        rid = u.send("version\r\n")
        h, payload = u.datagram()
        assert h == Header(rid, 0, 1, 0)
        assert payload.startswith(b"VERSION ") and payload.endswith(b"\r\n")
    # a set over UDP is stored like any other
    with usrv.conn() as c:
        assert c.get("k") == b"hello"


def test_set_of_a_large_value_in_one_datagram(usrv):
    value = bytes(range(256)) * 200   # 51200 bytes: one request datagram, many reply datagrams
    with Udp(usrv.udp_port) as u:
        assert u.ask(b"set big 0 0 %d\r\n%s\r\n" % (len(value), value)) == b"STORED\r\n"
    with usrv.conn() as c:
        assert c.get("big") == value


def test_get_of_a_value_larger_than_a_datagram(usrv):
    value = (b"0123456789abcdef\r\n" * 1200)[:20000]
    with usrv.conn() as c:
        assert c.set("big", value, flags=7) == b"STORED\r\n"
    want = tcp_reply(usrv, b"get big\r\n")
    assert want == b"VALUE big 7 20000\r\n" + value + b"\r\nEND\r\n"
    n = -(-len(want) // PAYLOAD_MAX)
    with Udp(usrv.udp_port) as u:
        rid = u.send("get big\r\n")
        headers, got = u.message(rid)
        assert headers == [Header(rid, seq, n, 0) for seq in range(n)]
        assert got == want
        # the next request's reply starts a new message at seq 0
        assert u.ask("get nope\r\n") == b"END\r\n"


def test_reply_datagrams_are_cut_at_1392_bytes_of_reply(usrv):
    # "VALUE v 0 <4 digits>\r\n" is 16 bytes and "\r\nEND\r\n" 7: n + 23 bytes of reply
    with Udp(usrv.udp_port) as u:
        for size, datagrams in [(PAYLOAD_MAX, 1), (PAYLOAD_MAX + 1, 2), (2 * PAYLOAD_MAX, 2),
                                (2 * PAYLOAD_MAX + 1, 3)]:
            n = size - 23
            value = b"v" * n
            assert u.ask(b"set v 0 0 %d\r\n%s\r\n" % (n, value)) == b"STORED\r\n"
            rid = u.send("get v\r\n")
            headers, got = u.message(rid)
            assert len(headers) == datagrams, (n, headers)
            assert got == b"VALUE v 0 %d\r\n%s\r\nEND\r\n" % (n, value)
            assert len(got) == size


def test_multi_key_get_sends_a_message_per_value(usrv):
    big = bytes(range(97, 123)) * 150   # 3900 bytes: 3 datagrams
    with usrv.conn() as c:
        for k, v in [("a", b"1"), ("big", big), ("c", b"33")]:
            assert c.set(k, v) == b"STORED\r\n"
    with Udp(usrv.udp_port) as u:
        # a found key's value is one message; the last key's message carries END
        rid = u.send("get a big c\r\n")
        got = [u.message(rid)[1] for _ in range(3)]
        assert got == [b"VALUE a 0 1\r\n1\r\n", b"VALUE big 0 3900\r\n" + big + b"\r\n",
                       b"VALUE c 0 2\r\n33\r\nEND\r\n"]
        # a missing key after a found one adds nothing; a missing last key leaves END alone
        rid = u.send("get a big zz c yy\r\n")
        msgs = [u.message(rid) for _ in range(4)]
        assert [m[1] for m in msgs] == [b"VALUE a 0 1\r\n1\r\n",
                                        b"VALUE big 0 3900\r\n" + big + b"\r\n",
                                        b"VALUE c 0 2\r\n33\r\n", b"END\r\n"]
        assert [len(m[0]) for m in msgs] == [1, 3, 1, 1]
        # the messages together are the TCP reply
        assert b"".join(m[1] for m in msgs) == tcp_reply(usrv, b"get a big zz c yy\r\n")
        # and nothing else was sent: the next reply is the next datagram
        assert u.ask("get c\r\n") == b"VALUE c 0 2\r\n33\r\nEND\r\n"


def test_multi_key_get_starting_with_misses_sends_a_bare_header_first(usrv):
    # memcached sends the leading misses' empty response as a header alone, total 0
    with usrv.conn() as c:
        assert c.set("a", b"x") == b"STORED\r\n"
    with Udp(usrv.udp_port) as u:
        rid = u.send("get zz yy a\r\n")
        assert u.message(rid) == ([Header(rid, 0, 0, 0)], b"")
        assert u.message(rid)[1] == b"VALUE a 0 1\r\nx\r\nEND\r\n"
        rid = u.send("get zz yy\r\n")
        assert u.message(rid) == ([Header(rid, 0, 0, 0)], b"")
        assert u.message(rid)[1] == b"END\r\n"
        # a single missing key: just END
        assert u.ask("get zz\r\n") == b"END\r\n"


def test_each_command_of_a_datagram_gets_its_own_message(usrv):
    with Udp(usrv.udp_port) as u:
        rid = u.send("set n 0 0 1\r\n5\r\nincr n 3\r\nget n\r\nbogus\r\n")
        msgs = [u.message(rid) for _ in range(4)]
        assert [m[1] for m in msgs] == [b"STORED\r\n", b"8\r\n", b"VALUE n 0 1\r\n8\r\nEND\r\n",
                                        b"ERROR\r\n"]
        assert all(m[0] == [Header(rid, 0, 1, 0)] for m in msgs)


def test_noreply_sends_nothing(usrv1):
    with Udp(usrv1.udp_port) as u:
        quiet = [u.send("set q 0 0 2 noreply\r\nqq\r\n"),
                 u.send("add q 0 0 1 noreply\r\nx\r\n"),        # fails: still nothing
                 u.send("append q 0 0 1 noreply\r\nr\r\n"),
                 u.send("incr nope 1 noreply\r\n"),
                 u.send("delete nope noreply\r\n"),
                 u.send("touch q 0 noreply\r\n")]
        # the first datagram back answers the request after them
        rid = u.send("get q\r\n")
        h, payload = u.datagram()
        assert h.id == rid, f"{h} {payload!r}: a reply to a noreply request {quiet}?"
        assert (h.seq, h.total, payload) == (0, 1, b"VALUE q 0 3\r\nqqr\r\nEND\r\n")
        # noreply and a reply in one datagram: only the reply
        rid = u.send("set r 0 0 1 noreply\r\n1\r\nget r\r\n")
        assert u.message(rid) == ([Header(rid, 0, 1, 0)], b"VALUE r 0 1\r\n1\r\nEND\r\n")
        assert u.ask("version\r\n").startswith(b"VERSION ")


def test_malformed_datagrams_are_dropped_and_the_server_keeps_serving(usrv1):
    set_x = b"set x 0 0 1\r\nx\r\n"
    with Udp(usrv1.udp_port) as u:
        dropped = [
            b"",                                   # empty
            b"\x00\x01\x00\x00\x00",               # shorter than a header
            b"\x00\x02\x00\x00\x00\x01\x00",       # 7 bytes
            HEADER.pack(3, 0, 1, 0),               # a header and no command
            HEADER.pack(4, 0, 2, 0) + set_x,       # first of a two-datagram request
            HEADER.pack(5, 1, 2, 0) + set_x,       # second of one
            HEADER.pack(6, 0, 0, 0) + set_x,       # total 0
            HEADER.pack(7, 0, 0x100, 0) + set_x,   # total 256: the byte order matters
            HEADER.pack(8, 0, 0xFFFF, 0) + set_x,
        ]
        for d in dropped:
            u.send_raw(d)
        # the first datagram back answers the request after them
        rid = u.send("get x\r\n")
        h, payload = u.datagram()
        assert (h, payload) == (Header(rid, 0, 1, 0), b"END\r\n")
        # the sequence number and the reserved field of a request are not checked
        assert u.ask("version\r\n", seq=5).startswith(b"VERSION ")
        rid = u.send("version\r\n", reserved=0xABCD)
        h, payload = u.datagram()
        assert h == Header(rid, 0, 1, 0) and payload.startswith(b"VERSION ")
        # a command line without its newline is dropped; the next datagram is served
        rid_lost = u.send("get x")
        rid = u.send("set x 0 0 1\r\ny\r\n")
        h, payload = u.datagram()
        assert h.id == rid and h.id != rid_lost and payload == b"STORED\r\n"
        # ids are echoed as sent, 0 and 0xffff included
        for rid in (0, 0xFFFF, 0x8000):
            assert u.message(u.send("get x\r\n", rid=rid))[1] == b"VALUE x 0 1\r\ny\r\nEND\r\n"
        # an unknown command or a bad line is answered as over TCP
        assert u.ask("\n") == b"ERROR\r\n"
        assert u.ask("get " + "k" * 251 + "\r\n") == b"CLIENT_ERROR bad command line format\r\n"
    assert usrv1.alive()


def test_stats_over_udp(usrv):
    with Udp(usrv.udp_port) as u:
        u.ask("get nope\r\n")
        rid = u.send("stats\r\n")
        headers, got = u.message(rid)
        assert [(h.seq, h.total) for h in headers] == [(i, len(headers)) for i in range(len(headers))]
        assert got.startswith(b"STAT pid ") and got.endswith(b"\r\nEND\r\n")
        stats = dict(line.split(" ", 2)[1:] for line in got.decode().split("\r\n")[:-2])
        assert int(stats["pid"]) == usrv.pid
        assert int(stats["get_misses"]) >= 1
        settings = u.ask("stats settings\r\n").decode()
        assert f"STAT udpport {usrv.udp_port}\r\n" in settings
        assert f"STAT tcpport {usrv.port}\r\n" in settings


def test_tcp_works_alongside_udp(usrv):
    with usrv.conn() as c, Udp(usrv.udp_port) as u:
        assert c.set("t", b"tcp") == b"STORED\r\n"
        assert u.ask("get t\r\n") == b"VALUE t 0 3\r\ntcp\r\nEND\r\n"
        assert u.ask("set u 0 0 3\r\nudp\r\n") == b"STORED\r\n"
        assert c.get("u") == b"udp"
        u.send_raw(HEADER.pack(1, 0, 2, 0) + b"get t\r\n")   # dropped
        u.send_raw(b"\xff")                                     # dropped
        c.call("version\r\n", "VERSION ")
        c.line()
        assert u.ask("delete t\r\n") == b"DELETED\r\n"
        assert c.get("t") is None
    # new TCP connections are still accepted
    with usrv.conn() as c:
        c.call("get u\r\n", "VALUE u 0 3\r\nudp\r\nEND\r\n")


def test_replies_go_to_each_sender(usrv):
    """Several clients, requests in flight at once over every worker: each reply comes back to
    the socket that asked, under its id."""
    clients = [Udp(usrv.udp_port) for _ in range(4)]
    try:
        for i, u in enumerate(clients):
            assert u.ask(f"set c{i} 0 0 1\r\n{i}\r\n") == b"STORED\r\n"
        sent = []
        for _ in range(20):
            for i, u in enumerate(clients):
                sent.append((u, u.send(f"get c{i}\r\n"), i))
        for i, u in enumerate(clients):
            want = {rid for uu, rid, _ in sent if uu is u}
            got = {}
            while len(got) < len(want):
                h, payload = u.datagram()
                assert h.id in want and h.id not in got, h
                assert (h.seq, h.total, h.reserved) == (0, 1, 0)
                got[h.id] = payload
            assert set(got.values()) == {f"VALUE c{i} 0 1\r\n{i}\r\nEND\r\n".encode()}
    finally:
        for u in clients:
            u.close()
