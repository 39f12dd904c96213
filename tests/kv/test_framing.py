"""Lines, keys and data blocks at their limits: key length, line endings, long lines, item
size (-I), pipelining and a client that sends one byte at a time."""

import socket
import time

import pytest

K250 = "k" * 250
K251 = "k" * 251
BAD_LINE = "CLIENT_ERROR bad command line format\r\n"


def test_key_of_250_bytes_is_a_key(srv):
    with srv.conn() as c:
        c.call(f"set {K250} 0 0 1\r\nx\r\n", "STORED\r\n")
        c.call(f"get {K250}\r\n", f"VALUE {K250} 0 1\r\nx\r\nEND\r\n")
        c.call(f"touch {K250} 0\r\n", "TOUCHED\r\n")
        c.call(f"delete {K250}\r\n", "DELETED\r\n")


def test_key_of_251_bytes_is_refused_by_every_command(srv):
    with srv.conn() as c:
        # the data line that follows a refused set is read as a command
        c.call(f"set {K251} 0 0 1\r\nx\r\n", BAD_LINE + "ERROR\r\n")
        for cmd in [f"get {K251}", f"gets {K251}", f"delete {K251}", f"incr {K251} 1",
                    f"decr {K251} 1", f"touch {K251} 1", f"gat 0 {K251}"]:
            c.call(cmd + "\r\n", BAD_LINE)
        c.call("version\r\n", "VERSION ")
        c.line()


def test_a_long_key_inside_a_multi_key_get_fails_the_whole_get(srv):
    with srv.conn() as c:
        c.call("set a 0 0 1\r\n1\r\n", "STORED\r\n")
        c.call(f"get a {K250} a\r\n", "VALUE a 0 1\r\n1\r\nVALUE a 0 1\r\n1\r\nEND\r\n")
        # no VALUE for the key before the long one: only the error
        c.call(f"get a {K251} a\r\n", BAD_LINE)
        c.call(f"gets a {K251}\r\n", BAD_LINE)
        c.call("get a\r\n", "VALUE a 0 1\r\n1\r\nEND\r\n")


def test_bare_newline_ends_command_lines(srv):
    with srv.conn() as c:
        c.call("set nl 0 0 2\nab\r\nget nl\n", "STORED\r\nVALUE nl 0 2\r\nab\r\nEND\r\n")
        c.call("version\n", "VERSION ")
        c.line()
        c.call("delete nl\n", "DELETED\r\n")


def test_data_block_must_end_with_crlf(srv):
    with srv.conn() as c:
        c.call("set nl 0 0 2\nab\nget nl\n", "CLIENT_ERROR bad data chunk\r\nERROR\r\n")
        c.call("get nl\r\n", "END\r\n")


def test_a_line_over_2048_bytes_closes_the_connection(srv):
    with srv.conn() as c:
        c.send("x" * 2100)
        time.sleep(0.2)
        c.send("x" * 1000)
        assert c.closed(), "a 3100-byte line without an end was accepted"
    with srv.conn() as c:
        c.send("set " + "y" * 3000)
        assert c.closed(), "a 3004-byte set line without an end was accepted"
    with srv.conn() as c:
        c.call("version\r\n", "VERSION ")


def test_a_long_multi_key_get_is_not_a_long_line(srv):
    with srv.conn() as c:
        c.call("set key7 0 0 1\r\n7\r\nset key999 0 0 3\r\n999\r\n", "STORED\r\nSTORED\r\n")
        line = ("get " + " ".join(f"key{i}" for i in range(1000)) + "\r\n").encode()
        assert len(line) > 6000
        for i in range(0, len(line), 1500):   # arrives in pieces, most of them without an end
            c.send(line[i:i + 1500])
            time.sleep(0.05)
        c.expect("VALUE key7 0 1\r\n7\r\nVALUE key999 0 3\r\n999\r\nEND\r\n")


def test_http_request_closes_the_connection(srv):
    with srv.conn() as c:
        c.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert c.closed()
        assert c.buf == b"", f"replied to HTTP: {c.buf!r}"


ITEM_SIZES = {"1m": 1 << 20, "2m": 2 << 20, "512k": 512 << 10}


@pytest.mark.parametrize("item", ["default", "2m", "512k"])
def test_values_up_to_and_over_the_item_size(start, item):
    size = ITEM_SIZES["1m" if item == "default" else item]
    s = start(*([] if item == "default" else ["-I", item]))
    with s.conn(timeout=20) as c:
        assert int(c.stats("settings")["item_size_max"]) == size
        fits = b"%07d" % 1 * ((size - 1024) // 7)
        assert c.set("big", fits) == b"STORED\r\n"
        assert c.get("big") == fits
        # the item header counts towards -I: a value of exactly -I bytes does not fit
        for n in (size, size + 1, 2 * size):
            assert c.set("big", b"v" * n) == b"SERVER_ERROR object too large for cache\r\n", n
            assert c.get("big") is None, "the failed set left the old value in place"
            assert c.set("big", b"old") == b"STORED\r\n"
        c.call("version\r\n", "VERSION ")
        c.line()
        assert int(c.stats()["curr_items"]) == 1


def test_too_large_set_swallows_its_data_even_under_noreply(srv):
    with srv.conn() as c:
        body = (b"get big\r\n" * 222223)[:2000000]
        c.send(b"set big 0 0 2000000 noreply\r\n" + body + b"\r\n")
        c.call("get big\r\n", "END\r\n")


def test_pipelining_many_commands_in_one_write(srv):
    n = 500
    with srv.conn() as c:
        req = b"".join(b"set p%d 0 0 %d\r\n%d\r\nget p%d\r\nincr p%d 1\r\n" % (i, len(str(i)), i, i, i)
                       for i in range(n))
        c.send(req + b"version\r\n")
        for i in range(n):
            c.expect(b"STORED\r\nVALUE p%d 0 %d\r\n%d\r\nEND\r\n" % (i, len(str(i)), i))
            reply = c.line()
            assert int(reply) == i + 1, (i, reply)
        c.expect("VERSION ")
        c.line()


def test_a_client_that_half_closes_gets_every_reply(srv):
    """Many large replies pipelined, then shutdown(SHUT_WR): the server must run and answer
    every command it received before closing, even those it held back while its output
    was backed up."""
    size, n = 100000, 200
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    try:
        s.sendall(b"set big 0 0 %d\r\n%s\r\n" % (size, b"x" * size) + b"get big\r\n" * n)
        s.shutdown(socket.SHUT_WR)
        got = bytearray()
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            got += d
    finally:
        s.close()
    one = b"VALUE big 0 %d\r\n%s\r\nEND\r\n" % (size, b"x" * size)
    assert bytes(got) == b"STORED\r\n" + one * n, f"{got.count(b'END')} of {n} replies"


def test_a_command_sent_one_byte_at_a_time(srv):
    with srv.conn() as c:
        req = b"set slow 1 0 5\r\nhello\r\nget slow\r\nmn\r\n"
        for i in range(len(req)):
            c.send(req[i:i + 1])
            time.sleep(0.003)
        c.expect("STORED\r\nVALUE slow 1 5\r\nhello\r\nEND\r\nMN\r\n")
