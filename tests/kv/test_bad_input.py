"""Garbage in: a few thousand random and mutated command lines and data blocks over several
connections at once. Whatever the replies, the server must survive and keep serving.

The seed is fixed (LOCUS_KV_FUZZ_SEED overrides it) so that a failure can be replayed."""

import os
import random
import socket
import threading

CONNECTIONS = 4
LINES_PER_CONNECTION = 900
SEED = int(os.environ.get("LOCUS_KV_FUZZ_SEED", "20261123"))

COMMANDS = [
    b"set k%d 0 0 %d", b"add k%d 1 100 %d", b"replace k%d 2 -1 %d", b"append k%d 0 0 %d",
    b"prepend k%d 0 0 %d", b"cas k%d 0 0 %d 1", b"set k%d 4294967295 2592001 %d noreply",
    b"get k%d k%d", b"gets k%d", b"gat 10 k%d", b"gats 0 k%d k%d", b"touch k%d %d", b"delete k%d",
    b"incr k%d %d", b"decr k%d %d", b"flush_all %d", b"version", b"verbosity %d", b"stats",
    b"stats items", b"stats slabs", b"stats settings", b"mn", b"mg k%d v c f t s k O%d q",
    b"ms k%d %d T%d F%d c I", b"ms k%d %d MA N%d", b"md k%d q I T%d", b"ma k%d N0 J%d D%d v",
    b"me k%d", b"mg k%d b v", b"ms azE%d %d b",
]
FUNNY = [b"", b" ", b"  ", b"\t", b"\0", b"\r", b"\n", b"\r\n", b"\xff", b"-1", b"18446744073709551616",
         b"99999999999999999999999", b"4294967296", b"noreply", b"k" * 251, b"x" * 300, b"%s", b"=",
         b"get", b"END", b"VALUE", b"\x80\x81"]


def mutate(rng, line):
    for _ in range(rng.randint(0, 3)):
        op = rng.randrange(6)
        i = rng.randint(0, len(line))
        if op == 0 and line:
            line = line[:i] + line[i + 1:]
        elif op == 1:
            line = line[:i] + rng.choice(FUNNY) + line[i:]
        elif op == 2:
            line = line[:i] + bytes([rng.randrange(256)]) + line[i:]
        elif op == 3:
            toks = line.split(b" ")
            rng.shuffle(toks)
            line = b" ".join(toks)
        elif op == 4:
            line = line[:i]
        else:
            line = line + b" " + rng.choice(FUNNY)
    return line


def make_line(rng):
    if rng.random() < 0.08:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 80))) + b"\r\n"
    tmpl = rng.choice(COMMANDS)
    args = tuple(rng.choice([rng.randint(0, 20), rng.randint(0, 3000), rng.randint(-5, 5)])
                 for _ in range(tmpl.count(b"%d")))
    line = tmpl % args
    data = b""
    if tmpl.startswith((b"set", b"add", b"replace", b"append", b"prepend", b"cas", b"ms")):
        n = args[1] if len(args) > 1 else 0
        n = n + rng.choice([0, 0, 0, 1, -1, 2]) if rng.random() < 0.3 else n
        data = bytes(rng.choice(b"abc0123\r\n ") for _ in range(max(0, min(n, 4000)))) + \
            rng.choice([b"\r\n", b"\r\n", b"\n", b"", b"\r"])
    if rng.random() < 0.5:
        line = mutate(rng, line)
    return line + rng.choice([b"\r\n", b"\r\n", b"\n"]) + data


def drain(sock):
    """Read what has arrived; False once the server has closed the connection."""
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return False
    except (BlockingIOError, socket.timeout):
        return True
    except OSError:
        return False


def test_random_and_mutated_input_does_not_break_the_server(server):
    closes = [0] * CONNECTIONS

    def client(i):
        rng = random.Random(SEED * 100 + i)
        sock = socket.create_connection(server.addr)
        sock.settimeout(0.005)
        for n in range(LINES_PER_CONNECTION):
            try:
                sock.sendall(make_line(rng))
                ok = drain(sock) if n % 4 == 3 else True
            except OSError:
                ok = False
            if not ok:
                closes[i] += 1
                sock.close()
                sock = socket.create_connection(server.addr)
                sock.settimeout(0.005)
        sock.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert server.alive(), f"the server died; output:\n{server.output()}"
    with server.conn() as c:
        c.call("version\r\n", "VERSION ")
        c.line()
        c.call("set after 0 0 5\r\nhello\r\nget after\r\n", "STORED\r\nVALUE after 0 5\r\nhello\r\nEND\r\n")
        c.call("mn\r\n", "MN\r\n")
