"""Helpers for the locus-kv black-box tests: the server under test and a raw-socket client.

The server is $LOCUS_KV (default build/release/src/kv/locus-kv), or Debian's memcached when
LOCUS_KV=memcached (or a path whose file name is memcached): memcached is the reference these
tests were checked against, and the tests that need locus-kv's extras skip there.
"""

import os
import signal
import socket
import struct
import sys
import time
from collections import namedtuple
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from locus_tools import server  # noqa: E402
from locus_tools.server import ServerError  # noqa: E402

HOST, free_port = server.HOST, server.free_port

DEFAULT_LOCUS_KV = REPO / "build/release/src/kv/locus-kv"
MEMCACHED = Path("/usr/bin/memcached")

# How long a stopped server may take to exit, and how long a reply may take to arrive.
STOP_SECONDS = 5.0
REPLY_SECONDS = 5.0


def target():
    """(path, is_memcached) of the server under test, from $LOCUS_KV."""
    env = os.environ.get("LOCUS_KV", "").strip()
    if env == "memcached":
        return MEMCACHED, True
    path = Path(env) if env else DEFAULT_LOCUS_KV
    if not path.is_absolute():
        path = (Path.cwd() / path)
    return path, path.name == "memcached"


def rss_kb(pid):
    """A process's resident set size in KiB (VmRSS)."""
    kb = server.rss_kb(pid)
    if kb is None:
        raise AssertionError("no VmRSS")
    return kb


class Server(server.Server):
    """One running server process on 127.0.0.1:port, which a test stops strictly: it must
    exit with status 0 within STOP_SECONDS of the signal."""

    stopped = None   # the exit status once stop() has seen it

    @property
    def is_memcached(self):
        return self.memcached

    def conn(self, timeout=REPLY_SECONDS):
        return Conn(self.addr, timeout)

    def bconn(self, timeout=REPLY_SECONDS):
        """A binary-protocol connection (BinConn)."""
        return BinConn(self.addr, timeout)

    def stop(self, sig=signal.SIGTERM, check=True):
        """Signal the server and wait: it must exit with status 0 within STOP_SECONDS."""
        if self.stopped is not None:
            return self.stopped
        name = Path(self.path).name
        if not self.alive():
            rc = self.stopped = self.proc.returncode
            self.close()
            if check:
                raise ServerError(f"{name} {' '.join(self.args)} had already exited "
                                  f"(status {rc}) before it was stopped; output:\n{self.output()}",
                                  self.output())
            return rc
        rc = super().stop(sig, STOP_SECONDS)
        if rc is None:
            raise ServerError(f"{name} did not exit within {STOP_SECONDS} s of "
                              f"{signal.Signals(sig).name}; output:\n{self.output()}")
        self.stopped = rc
        if check and rc != 0:
            raise ServerError(f"{name} exited with status {rc} after "
                              f"{signal.Signals(sig).name} (expected 0); output:\n{self.output()}")
        return rc


def start_server(path, is_memcached, args=(), wait=10.0, env=None):
    """Start the server on a free port and wait until it accepts connections.

    Raises ServerError with the server's output if it exits first (a refused option, say)."""
    return server.start(path, args, memcached=is_memcached, env=env, seconds=wait,
                        server_class=Server)


class Conn:
    """A raw text-protocol connection: send bytes, read exact replies with a timeout."""

    def __init__(self, addr, timeout=REPLY_SECONDS):
        self.sock = socket.create_connection(addr, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no reply within {self.timeout} s; have {self.buf[:200]!r}")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            raise TimeoutError(f"no reply within {self.timeout} s; have {self.buf[:200]!r}") from None
        if not chunk:
            raise ConnectionError(f"connection closed by the server; have {self.buf[:200]!r}")
        self.buf += chunk

    def read(self, n):
        """Exactly n bytes."""
        deadline = time.monotonic() + self.timeout
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def line(self):
        """One reply line with its \\r\\n."""
        deadline = time.monotonic() + self.timeout
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        i = self.buf.index(b"\r\n") + 2
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def expect(self, reply):
        """Read len(reply) bytes and check that they are reply."""
        if isinstance(reply, str):
            reply = reply.encode()
        got = self.read(len(reply))
        assert got == reply, f"expected {reply[:300]!r}, got {got[:300]!r} (then {self.buf[:100]!r})"

    def call(self, data, reply):
        self.send(data)
        self.expect(reply)

    def until_end(self, end=b"END\r\n"):
        """Everything up to and including the line end (a get's or stats' reply)."""
        deadline = time.monotonic() + self.timeout
        while True:
            if self.buf.startswith(end):
                i = len(end)
                break
            j = self.buf.find(b"\r\n" + end)
            if j >= 0:
                i = j + 2 + len(end)
                break
            self._fill(deadline)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def nothing(self, seconds=0.2):
        """Assert that nothing arrives for a while (a noreply command)."""
        self.sock.settimeout(seconds)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            chunk = None
        assert not self.buf and chunk is None, f"expected no reply, got {self.buf + (chunk or b'<closed>')!r}"

    def closed(self, seconds=REPLY_SECONDS):
        """True if the server closes the connection within seconds (discarding any data)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                return False
            except (ConnectionResetError, BrokenPipeError):
                return True
            if not chunk:
                return True
            self.buf += chunk
        return False

    def get(self, key):
        """The value of key (bytes) or None, by a plain get."""
        if isinstance(key, str):
            key = key.encode()
        self.send(b"get " + key + b"\r\n")
        head = self.line()
        if head == b"END\r\n":
            return None
        parts = head.split()
        assert parts[0] == b"VALUE" and parts[1] == key, head
        data = self.read(int(parts[3]) + 2)
        assert data.endswith(b"\r\n")
        self.expect(b"END\r\n")
        return data[:-2]

    def set(self, key, value, flags=0, exptime=0, cmd="set"):
        if isinstance(key, str):
            key = key.encode()
        if isinstance(value, str):
            value = value.encode()
        self.send(b"%s %s %d %d %d\r\n%s\r\n" % (cmd.encode(), key, flags, exptime, len(value), value))
        return self.line()

    def stats(self, sub=""):
        self.send(f"stats {sub}".strip() + "\r\n")
        out = {}
        for line in self.until_end().split(b"\r\n"):
            if line.startswith(b"STAT "):
                _, name, value = line.decode().split(" ", 2)
                out[name] = value
        return out


# ---------- the binary protocol ----------

class Op:
    """memcached's binary opcodes."""
    GET, SET, ADD, REPLACE, DELETE, INCR, DECR, QUIT, FLUSH, GETQ, NOOP, VERSION = range(12)
    GETK, GETKQ, APPEND, PREPEND, STAT = 0x0C, 0x0D, 0x0E, 0x0F, 0x10
    SETQ, ADDQ, REPLACEQ, DELETEQ, INCRQ, DECRQ, QUITQ, FLUSHQ, APPENDQ, PREPENDQ = range(0x11, 0x1B)
    VERBOSITY, TOUCH, GAT, GATQ = 0x1B, 0x1C, 0x1D, 0x1E
    SASL_LIST_MECHS, SASL_AUTH, SASL_STEP, GATK, GATKQ = 0x20, 0x21, 0x22, 0x23, 0x24


class Status:
    """memcached's binary response statuses."""
    SUCCESS, KEY_ENOENT, KEY_EEXISTS, E2BIG, EINVAL, NOT_STORED, DELTA_BADVAL = range(7)
    AUTH_ERROR, AUTH_CONTINUE, UNKNOWN_COMMAND, ENOMEM = 0x20, 0x21, 0x81, 0x82


HEADER = struct.Struct(">BBHBBHIIQ")  # magic opcode keylen extlen datatype vbucket/status body opaque cas

Response = namedtuple("Response", "magic opcode status opaque cas extras key value")


def request(op, key=b"", value=b"", extras=b"", opaque=0, cas=0, magic=0x80, keylen=None,
            bodylen=None):
    """One binary request's bytes; keylen and bodylen may be given to lie about the lengths."""
    key = key.encode() if isinstance(key, str) else key
    value = value.encode() if isinstance(value, str) else value
    if keylen is None:
        keylen = len(key)
    if bodylen is None:
        bodylen = len(extras) + len(key) + len(value)
    return HEADER.pack(magic, op, keylen, len(extras), 0, 0, bodylen, opaque, cas) + extras + key + value


def set_extras(flags=0, exptime=0):
    return struct.pack(">II", flags, exptime)


def arith_extras(delta=1, initial=0, exptime=0):
    return struct.pack(">QQI", delta, initial, exptime)


def exptime_extras(exptime=0):
    return struct.pack(">I", exptime)


def responses(data):
    """The responses in data (whole ones), as Response tuples."""
    out = []
    while len(data) >= HEADER.size:
        magic, op, keylen, extlen, _, status, body, opaque, cas = HEADER.unpack_from(data)
        rest = data[HEADER.size:HEADER.size + body]
        assert len(rest) == body, f"a response cut short: {data!r:.200}"
        out.append(Response(magic, op, status, opaque, cas, rest[:extlen],
                            rest[extlen:extlen + keylen], rest[extlen + keylen:]))
        data = data[HEADER.size + body:]
    assert not data, f"bytes after the responses: {data!r:.200}"
    return out


class BinConn(Conn):
    """A raw binary-protocol connection: requests built with request(), responses read whole."""

    def call(self, op, key=b"", value=b"", extras=b"", opaque=0, cas=0):
        """Send one request and read one response."""
        self.send(request(op, key, value, extras, opaque, cas))
        return self.response()

    def response(self):
        head = self.read(HEADER.size)
        magic, op, keylen, extlen, _, status, body, opaque, cas = HEADER.unpack(head)
        assert magic == 0x81, f"not a response: {head!r}"
        data = self.read(body)
        return Response(magic, op, status, opaque, cas, data[:extlen], data[extlen:extlen + keylen],
                        data[extlen + keylen:])

    def responses_until(self, opaque):
        """Every response up to and including the one carrying opaque (a NOOP's, say)."""
        out = []
        while True:
            r = self.response()
            out.append(r)
            if r.opaque == opaque:
                return out

    def get(self, key, op=Op.GET):
        """(flags, value, cas), or None on a miss."""
        r = self.call(op, key)
        if r.status == Status.KEY_ENOENT:
            return None
        assert r.status == Status.SUCCESS, r
        return struct.unpack(">I", r.extras)[0], r.value, r.cas

    def set(self, key, value, flags=0, exptime=0, cas=0, op=Op.SET):
        return self.call(op, key, value, set_extras(flags, exptime), cas=cas)

    def stats(self, sub=""):
        """A stat request's responses as a dict, up to the empty one that ends them."""
        self.send(request(Op.STAT, sub))
        out = {}
        while True:
            r = self.response()
            assert r.status == Status.SUCCESS, r
            if not r.key:
                return out
            out[r.key.decode()] = r.value.decode()
