"""TLS (-Z, -o ssl_*, -l notls:, refresh_certs), as memcached 1.6.18 (Debian's is built with
it) offers it. Every test here passes against memcached too, except those marked locus_only.

The certificates are made for the session with the openssl command (scripts/install-deps
installs it): two server certificates (a and b), a CA, a client certificate that CA signed and
one it did not."""

import os
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest

from kvlib import (REPLY_SECONDS, STOP_SECONDS, BinConn, Conn, Op, ServerError, Status,
                   free_port, request)

DEADLINE = 10.0


def openssl(*args, cwd):
    subprocess.run(["openssl", *map(str, args)], cwd=cwd, check=True, capture_output=True,
                   stdin=subprocess.DEVNULL, timeout=60)


def self_signed(d, name, cn):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj",
            f"/CN={cn}", cwd=d)


class Certs:
    def __init__(self, d):
        self.dir = d
        for name in ["a", "b", "ca", "rogue"]:
            self_signed(d, name, name)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=client", cwd=d)
        openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", "client.pem", "-days", "2", cwd=d)

    def __getattr__(self, name):
        """certs.a_pem is <dir>/a.pem, certs.client_key <dir>/client.key."""
        base, _, ext = name.rpartition("_")
        if not base:
            raise AttributeError(name)
        return self.dir / f"{base}.{ext}"

    def pem(self, name):
        return (self.dir / f"{name}.pem").read_text()


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    if not shutil.which("openssl"):
        pytest.fail("the openssl command is needed to make the tests' certificates "
                    "(scripts/install-deps installs it)", pytrace=False)
    return Certs(tmp_path_factory.mktemp("tls"))


def tls_opts(certs, name="a", *extra):
    return ["-Z", "-o", ",".join([f"ssl_chain_cert={certs.dir / (name + '.pem')}",
                                  f"ssl_key={certs.dir / (name + '.key')}", *extra])]


def client_context(cert=None, key=None, max_version=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert, key)
    if max_version:
        ctx.maximum_version = max_version
    return ctx


class TLSConn(Conn):
    """kvlib's Conn over TLS."""

    def __init__(self, addr, context=None, timeout=REPLY_SECONDS):
        raw = socket.create_connection(addr, timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = (context or client_context()).wrap_socket(raw)
        except BaseException:
            raw.close()
            raise
        self.timeout = timeout
        self.buf = b""

    def peer_pem(self):
        return ssl.DER_cert_to_PEM_cert(self.sock.getpeercert(binary_form=True))


class TLSBinConn(TLSConn, BinConn):
    """The binary protocol over TLS."""


def serves(c, key="tls"):
    c.call(f"set {key} 0 0 5\r\nhello\r\n", "STORED\r\n")
    c.call(f"get {key}\r\n", f"VALUE {key} 0 5\r\nhello\r\nEND\r\n")


def version(c):
    c.call("version\r\n", "VERSION ")
    c.line()


def poll(cond, what, seconds=DEADLINE):
    end = time.monotonic() + seconds
    while True:
        value = cond()
        if value:
            return value
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.05)


def refused(start, *args):
    """The server refused to start: its output."""
    with pytest.raises(ServerError) as e:
        start.attempt(*args)
    assert e.value.status != 0, e.value.output
    return e.value.output


def closed_by_server(sock, seconds=REPLY_SECONDS):
    """True once the server has closed sock (EOF or reset), whatever it sent before."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def client_hello():
    """The bytes a TLS client sends first (its ClientHello)."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = client_context().wrap_bio(inc, out)
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return out.read()


# ---------- serving ----------

def test_tls_get_set_meta_round_trip(start, certs):
    s = start(*tls_opts(certs))
    with TLSConn(s.addr) as c:
        assert c.sock.version() in ("TLSv1.2", "TLSv1.3")
        assert c.peer_pem() == certs.pem("a")
        serves(c)
        c.call("ms m 3 T0\r\nabc\r\nmg m v f\r\n", "HD\r\nVA 3 f0\r\nabc\r\n")
        c.call("md m q\r\nmn\r\n", "MN\r\n")
        c.call("incr n 1\r\nset n 0 0 1\r\n5\r\nincr n 2\r\n", "NOT_FOUND\r\nSTORED\r\n7\r\n")
        big = bytes(range(256)) * 2000  # 512000 bytes: many TLS records each way
        c.send(b"set big 0 0 %d\r\n%s\r\n" % (len(big), big))
        c.expect("STORED\r\n")
        c.send("get big\r\n")
        c.expect(b"VALUE big 0 %d\r\n%s\r\nEND\r\n" % (len(big), big))
        st = c.stats()
        assert "ssl_handshake_errors" in st and "time_since_server_cert_refresh" in st
        names = list(st)
        assert names.index("log_watchers") < names.index("ssl_handshake_errors") < \
            names.index("time_since_server_cert_refresh") < names.index("unexpected_napi_ids")


@pytest.mark.parametrize("protocol", ["auto", "binary"])
def test_tls_binary_protocol(start, certs, protocol):
    """The binary protocol over TLS: -B auto decides on the first decrypted byte."""
    s = start(*tls_opts(certs), "-B", protocol)
    with TLSBinConn(s.addr) as b:
        big = bytes(range(256)) * 2000
        assert b.set("tb", big, flags=3).status == Status.SUCCESS
        assert b.get("tb")[:2] == (3, big)
        b.send(b"".join(request(Op.GETKQ, k, opaque=i) for i, k in
                        enumerate(["tb", "none", "tb"])) + request(Op.NOOP, opaque=9))
        assert [(r.key, r.opaque) for r in b.responses_until(9)] == [
            (b"tb", 0), (b"tb", 2), (b"", 9)]
        assert b.stats("settings")["ssl_enabled"] == "yes"
    if protocol == "auto":
        with TLSConn(s.addr) as c:
            serves(c)


def test_tls_pipelined_gets_of_large_values(start, certs):
    """Replies that back up past what the socket takes: TLS writes are retried as the client
    reads, and every reply arrives whole and in order."""
    s = start(*tls_opts(certs))
    value = b"v" * 100000
    with TLSConn(s.addr, timeout=30) as c:
        c.send(b"set lv 0 0 %d\r\n%s\r\n" % (len(value), value))
        c.expect("STORED\r\n")
        c.send(b"get lv\r\n" * 50 + b"mn\r\n")
        one = b"VALUE lv 0 %d\r\n%s\r\nEND\r\n" % (len(value), value)
        for _ in range(50):
            c.expect(one)
        c.expect("MN\r\n")


def test_tls_gets_of_chunked_values(start, certs):
    """Values chained in 4 KB chunks (-o slab_chunk_max=4096) go out over TLS a chunk at a
    time: each reply whole and in order, the pieces in their places."""
    s = start(*tls_opts(certs), "-o", "slab_chunk_max=4096")
    values = {n: (b"%d|" % n * (n // 3 + 1))[:n] for n in (4000, 4097, 12345, 100000)}
    with TLSConn(s.addr, timeout=30) as c:
        for n, v in values.items():
            c.send(b"set c%d 0 0 %d\r\n%s\r\n" % (n, n, v))
            c.expect("STORED\r\n")
        c.send(b"".join(b"get c%d\r\n" % n for n in values) * 10 + b"mn\r\n")
        for _ in range(10):
            for n, v in values.items():
                c.expect(b"VALUE c%d 0 %d\r\n%s\r\nEND\r\n" % (n, n, v))
        c.expect("MN\r\n")


def test_tls_stats_settings(start, certs):
    s = start(*tls_opts(certs, "a", f"ssl_ca_cert={certs.ca_pem}", "ssl_verify_mode=1",
                        "ssl_min_version=3", "ssl_wbuf_size=32", "ssl_session_cache",
                        "ssl_ciphers=HIGH"))
    with TLSConn(s.addr) as c:
        st = c.stats("settings")
    names = list(st)
    want = {"ssl_enabled": "yes", "ssl_chain_cert": str(certs.a_pem), "ssl_key": str(certs.a_key),
            "ssl_verify_mode": "1", "ssl_keyformat": "1", "ssl_ciphers": "HIGH",
            "ssl_ca_cert": str(certs.ca_pem), "ssl_wbuf_size": str(32 * 1024),
            "ssl_session_cache": "yes", "ssl_kernel_tls": "no", "ssl_min_version": "tlsv1.3"}
    assert {k: st.get(k) for k in want} == want
    order = [names.index(k) for k in want]
    assert order == sorted(order) and names.index("inline_ascii_response") < order[0] and \
        order[-1] < names.index("num_napi_ids"), names


def test_tls_settings_without_tls(server):
    with server.conn() as c:
        st = c.stats("settings")
        assert "ssl_handshake_errors" not in c.stats()
    want = {"ssl_enabled": "no", "ssl_chain_cert": "(null)", "ssl_key": "(null)",
            "ssl_verify_mode": "0", "ssl_keyformat": "1", "ssl_ciphers": "NULL",
            "ssl_ca_cert": "NULL", "ssl_wbuf_size": "16384", "ssl_session_cache": "no",
            "ssl_kernel_tls": "no", "ssl_min_version": "tlsv1.2"}
    assert {k: st.get(k) for k in want} == want


def test_tls_min_version(start, certs):
    s = start(*tls_opts(certs, "a", "ssl_min_version=3"))
    with TLSConn(s.addr) as c:
        assert c.sock.version() == "TLSv1.3"
        version(c)
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        with TLSConn(s.addr, client_context(max_version=ssl.TLSVersion.TLSv1_2)) as c:
            version(c)


def test_tls_unix_socket_stays_plain(kv, certs, tmp_path):
    """memcached speaks TLS on TCP only: its Unix socket stays plain under -Z."""
    sock = tmp_path / "sock"
    argv = [str(kv[0]), *(["-u", "root"] if kv[1] and os.geteuid() == 0 else []),
            *tls_opts(certs), "-s", str(sock)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    def accepting():
        # The file exists from bind(); a connect before listen() is refused.
        if proc.poll() is not None:
            return "exited"
        u = socket.socket(socket.AF_UNIX)
        u.settimeout(REPLY_SECONDS)
        try:
            u.connect(str(sock))
        except OSError:
            u.close()
            return None
        return u

    try:
        u = poll(accepting, "the Unix socket to accept")
        assert u != "exited", "the server exited before its Unix socket accepted"
        with u:
            u.sendall(b"version\r\n")
            assert u.recv(100).startswith(b"VERSION ")
    finally:
        proc.terminate()
        out = proc.communicate(timeout=STOP_SECONDS)[0]
    assert proc.returncode == 0, out


# ---------- -l notls: ----------

def test_tls_notls_listener_beside_a_tls_one(start, certs):
    plain_port = free_port()
    s = start(*tls_opts(certs), "-l", f"notls:127.0.0.1:{plain_port}")
    with TLSConn(s.addr) as t, Conn(("127.0.0.1", plain_port)) as p:
        t.call("set shared 0 0 3\r\nabc\r\n", "STORED\r\n")
        p.call("get shared\r\n", "VALUE shared 0 3\r\nabc\r\nEND\r\n")
        p.call("set shared 0 0 3\r\nxyz\r\n", "STORED\r\n")
        t.call("get shared\r\n", "VALUE shared 0 3\r\nxyz\r\nEND\r\n")
        assert p.stats("settings")["inter"] == f"127.0.0.1,notls:127.0.0.1:{plain_port}"
    with socket.create_connection(s.addr, timeout=REPLY_SECONDS) as raw:
        raw.sendall(b"version\r\n")   # plain text to the TLS listener: no reply, closed
        assert closed_by_server(raw)


def test_tls_notls_without_tls_refused(kv):
    """Run alone, not by `start`: the server has bound its other listener when it refuses, and
    a probe of that one could take it for a start."""
    argv = [str(kv[0]), *(["-u", "root"] if kv[1] and os.geteuid() == 0 else []),
            "-U", "0", "-l", f"notls:127.0.0.1:{free_port()}"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=DEADLINE,
                       stdin=subprocess.DEVNULL)
    assert r.returncode != 0, r
    assert "'notls' option is valid only when SSL is enabled" in r.stdout + r.stderr, r


# ---------- refusals at start ----------

@pytest.mark.parametrize("case", ["no files", "missing chain", "chain is a key", "missing key",
                                  "key of another certificate", "key is a certificate",
                                  "missing CA", "CA is a key", "bad ciphers"])
def test_tls_bad_certificate_or_key_refused(start, certs, case):
    d = certs.dir
    args, says = {
        "no files": (["-Z"], "Error loading the certificate chain: "),
        "missing chain": (tls_opts(certs, "none"), f"Error loading the certificate chain: "
                                                   f"{d / 'none.pem'} : "),
        "chain is a key": (["-Z", "-o", f"ssl_chain_cert={d / 'a.key'},ssl_key={d / 'a.key'}"],
                           f"Error loading the certificate chain: {d / 'a.key'} : "),
        "missing key": (["-Z", "-o", f"ssl_chain_cert={d / 'a.pem'},ssl_key={d / 'none.key'}"],
                        f"Error loading the key: {d / 'none.key'} : "),
        "key of another certificate": (
            ["-Z", "-o", f"ssl_chain_cert={d / 'a.pem'},ssl_key={d / 'b.key'}"],
            f"Error loading the key: {d / 'b.key'} : "),
        "key is a certificate": (
            ["-Z", "-o", f"ssl_chain_cert={d / 'a.pem'},ssl_key={d / 'a.pem'}"],
            f"Error loading the key: {d / 'a.pem'} : "),
        "missing CA": (tls_opts(certs, "a", f"ssl_ca_cert={d / 'none.pem'}"),
                       f"Error loading the CA certificate: {d / 'none.pem'} : "),
        "CA is a key": (tls_opts(certs, "a", f"ssl_ca_cert={d / 'ca.key'}"),
                        f"Error loading the CA certificate: {d / 'ca.key'} : "),
        "bad ciphers": (tls_opts(certs, "a", "ssl_ciphers=BOGUS"),
                        "Error setting the provided cipher(s): BOGUS"),
    }[case]
    out = refused(start, *args)
    assert says in out, out


@pytest.mark.parametrize("opt,says", [
    ("ssl_verify_mode=4", "Invalid ssl_verify_mode. Use help to see valid options."),
    ("ssl_verify_mode=-1", "Invalid ssl_verify_mode. Use help to see valid options."),
    ("ssl_verify_mode=x", "could not parse argument to ssl_verify_mode"),
    ("ssl_min_version=4", "Invalid ssl_min_version. Use help to see valid options."),
    ("ssl_min_version=tlsv1.3", "could not parse argument to ssl_min_version"),
    ("ssl_keyformat=PEM", "could not parse argument to ssl_keyformat"),
    ("ssl_wbuf_size=-1", "could not parse argument to ssl_wbuf_size"),
    ("ssl_bogus=1", 'Illegal suboption "ssl_bogus=1"'),
])
def test_tls_bad_option_values_refused(start, certs, opt, says):
    out = refused(start, *tls_opts(certs, "a", opt))
    assert says in out, out


# ---------- client certificates ----------

def exchange(addr, context):
    """True if a TLS client with context gets a reply to version; False if the server refuses
    it (during the handshake, or with an alert or a close right after it)."""
    try:
        with TLSConn(addr, context) as c:
            version(c)
        return True
    except (ssl.SSLError, ConnectionError, TimeoutError, OSError):
        return False


@pytest.mark.parametrize("mode,accepted", [
    (0, {"none", "signed", "unsigned"}),   # no certificate asked for
    (1, {"none", "signed"}),               # asked for; one that does not verify is refused
    (2, {"signed"}),                       # required
    (3, {"signed"}),                       # required, once
])
def test_tls_verify_mode(start, certs, mode, accepted):
    s = start(*tls_opts(certs, "a", f"ssl_verify_mode={mode}", f"ssl_ca_cert={certs.ca_pem}"))
    clients = {"none": client_context(),
               "signed": client_context(certs.client_pem, certs.client_key),
               "unsigned": client_context(certs.rogue_pem, certs.rogue_key)}
    got = {name for name, ctx in clients.items() if exchange(s.addr, ctx)}
    assert got == accepted
    with TLSConn(s.addr, clients["signed"]) as c:
        serves(c)


def test_tls_verify_mode_without_ca_refuses_client_certificates(start, certs):
    """ssl_verify_mode=2 with no ssl_ca_cert: no client certificate can verify."""
    s = start(*tls_opts(certs, "a", "ssl_verify_mode=2"))
    assert not exchange(s.addr, client_context(certs.client_pem, certs.client_key))
    assert not exchange(s.addr, client_context())


# ---------- refresh_certs ----------

def test_tls_refresh_certs(start, certs, tmp_path):
    pem, key = tmp_path / "server.pem", tmp_path / "server.key"
    shutil.copy(certs.a_pem, pem)
    shutil.copy(certs.a_key, key)
    s = start("-Z", "-o", f"ssl_chain_cert={pem},ssl_key={key}")
    with TLSConn(s.addr) as old:
        assert old.peer_pem() == certs.pem("a")
        shutil.copy(certs.b_pem, pem)
        shutil.copy(certs.b_key, key)
        old.call("refresh_certs\r\n", "OK\r\n")
        st = old.stats()
        assert int(st["time_since_server_cert_refresh"]) <= int(st["uptime"])
        with TLSConn(s.addr) as new:
            assert new.peer_pem() == certs.pem("b")
            serves(new, "after")
        serves(old, "before")   # a connection keeps the session it has
        old.call("refresh_certs noreply\r\nversion\r\n", "VERSION ")
        old.line()
        # a file that cannot be read: the reason, and the certificate in use stays
        pem.unlink()
        old.call("refresh_certs\r\n", f"Error loading the certificate chain: {pem} : ")
        assert b"No such file" in old.line()
        with TLSConn(s.addr) as new:
            assert new.peer_pem() == certs.pem("b")
        old.call("refresh_certs noreply\r\n", f"Error loading the certificate chain: {pem} : ")
        old.line()


def test_tls_clients_at_work_while_certificates_refresh(start, certs):
    """Clients on every worker store and read over TLS, and new ones connect, while another
    refreshes the certificates again and again: every reply is right."""
    s = start(*tls_opts(certs))
    errors = []

    def client(n):
        try:
            for round_ in range(3):
                with TLSConn(s.addr, timeout=30) as c:
                    for i in range(40):
                        v = f"{n}-{round_}-{i}"
                        c.call(f"set k{n} 0 0 {len(v)}\r\n{v}\r\n", "STORED\r\n")
                        c.call(f"get k{n}\r\n", f"VALUE k{n} 0 {len(v)}\r\n{v}\r\nEND\r\n")
        except Exception as e:  # reported below, with the others
            errors.append(f"client {n}: {e!r}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    with TLSConn(s.addr, timeout=30) as admin:
        for _ in range(20):
            admin.call("refresh_certs\r\n", "OK\r\n")
    for t in threads:
        t.join()
    assert not errors, errors


def test_tls_refresh_certs_without_tls(server):
    with server.conn() as c:
        c.call("refresh_certs\r\nrefresh_certs noreply\r\n",
               "Error TLS not enabled\r\nError TLS not enabled\r\n")


@pytest.mark.locus_only
def test_tls_refresh_certs_keeps_the_context_when_a_key_does_not_match(start, certs, tmp_path):
    """memcached puts the new certificate in place before it finds the key does not match it,
    and every handshake fails from then on; locus-kv builds the new context apart and keeps
    the old one (docs/kv.md)."""
    pem, key = tmp_path / "server.pem", tmp_path / "server.key"
    shutil.copy(certs.a_pem, pem)
    shutil.copy(certs.a_key, key)
    s = start("-Z", "-o", f"ssl_chain_cert={pem},ssl_key={key}")
    shutil.copy(certs.b_pem, pem)
    with TLSConn(s.addr) as c:
        c.call("refresh_certs\r\n", f"Error loading the key: {key} : ")
        assert b"key values mismatch" in c.line()
    with TLSConn(s.addr) as c:
        assert c.peer_pem() == certs.pem("a")
        serves(c)


@pytest.mark.locus_only
def test_tls_key_in_the_chain_file(start, certs, tmp_path):
    """memcached's -h: ssl_key is the private key "if not part of the -ssl_chain_cert"; without
    it locus-kv reads the key from the chain file (memcached 1.6.18 refuses)."""
    both = tmp_path / "both.pem"
    both.write_text(certs.pem("a") + certs.a_key.read_text())
    s = start("-Z", "-o", f"ssl_chain_cert={both}")
    with TLSConn(s.addr) as c:
        serves(c)
        assert c.stats("settings")["ssl_key"] == "(null)"


# ---------- clients that do not speak TLS, or stop half way ----------

def handshake_errors(addr):
    with TLSConn(addr) as c:
        return int(c.stats()["ssl_handshake_errors"])


def test_tls_plain_text_to_a_tls_port(start, certs):
    """A client that speaks plain text to a TLS port is closed and holds nobody up: with one
    worker, a TLS client is served meanwhile. locus-kv counts it in ssl_handshake_errors;
    memcached counts it only if the text was there at its first handshake step (a race), so
    only locus-kv is held to that (docs/kv.md)."""
    s = start("-t", "1", *tls_opts(certs))
    before = handshake_errors(s.addr)
    with socket.create_connection(s.addr, timeout=REPLY_SECONDS) as p, TLSConn(s.addr) as c:
        p.sendall(b"get a\r\n")
        assert closed_by_server(p)
        serves(c)
    if not s.is_memcached:
        poll(lambda: handshake_errors(s.addr) > before, "ssl_handshake_errors to count it")


def test_tls_client_stops_in_the_middle_of_the_handshake(start, certs):
    """Clients that stop half way through their ClientHello, or after it, keep their
    connections and nothing else: with one worker, other clients are served meanwhile."""
    s = start("-t", "1", *tls_opts(certs))
    hello = client_hello()
    half = socket.create_connection(s.addr, timeout=REPLY_SECONDS)
    whole = socket.create_connection(s.addr, timeout=REPLY_SECONDS)
    try:
        half.sendall(hello[:40])
        whole.sendall(hello)
        with TLSConn(s.addr) as c:
            serves(c)
        whole.settimeout(REPLY_SECONDS)
        assert whole.recv(65536)            # the server's flight: it waits for the rest
        for stalled in (half, whole):
            stalled.settimeout(0.2)
            with pytest.raises(socket.timeout):
                stalled.recv(65536)         # still open, waiting
        with TLSConn(s.addr) as c:
            serves(c, "again")
    finally:
        half.close()
        whole.close()
    with TLSConn(s.addr) as c:
        version(c)


# ---------- with authentication ----------

def test_tls_with_auth(start, certs, tmp_path):
    auth = tmp_path / "auth"
    auth.write_text("alice:secret\n")
    s = start(*tls_opts(certs), "-Y", auth)
    with TLSConn(s.addr) as c:
        c.call("get k\r\n", "CLIENT_ERROR unauthenticated\r\n")
        c.call("set a 0 0 12\r\nalice secret\r\n", "STORED\r\n")
        serves(c)
