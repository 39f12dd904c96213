"""locus-kv-load (bench/kv_load.c), the load generator bench/kv-memcaslap --client
locus-kv-load runs: its report, its refusals, and that --tls really talks TLS. No timing is
asserted: each run is a second long and only its counts are checked.

The program is $LOCUS_KV_LOAD, else the one built beside the locus-kv under test
(<build>/bench/locus-kv-load), else build/release's; it runs against either server."""

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from kvlib import REPO, free_port, target
from test_tls import certs, tls_opts  # noqa: F401 (the session's certificates)

KEYS = ["server", "tls", "verify", "threads", "connections", "sets_pct", "keys", "key_size",
        "value_size", "prefilled", "seconds", "ops", "ops_per_s", "gets", "sets", "get_hits",
        "get_misses", "errors", "client_cpu_s"]


def load_path():
    env = os.environ.get("LOCUS_KV_LOAD", "").strip()
    if env:
        return Path(env)
    path, is_memcached = target()
    if not is_memcached:
        beside = path.parent.parent.parent / "bench" / "locus-kv-load"
        if beside.exists():
            return beside
    return REPO / "build/release/bench/locus-kv-load"


@pytest.fixture(scope="module")
def load():
    path = load_path()
    if not path.exists():
        pytest.fail(f"locus-kv-load not found at {path}: make release builds it "
                    f"(or set LOCUS_KV_LOAD)", pytrace=False)
    return path


def run(load, *args, timeout=60):
    return subprocess.run([str(load), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def report(r):
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout
    return json.loads(lines[0])


def test_a_run_reports_one_json_line(load, server):
    r = run(load, "-s", f"127.0.0.1:{server.port}", "-t", "1", "-c", "4", "-T", "2", "-r", "25",
            "-k", "100", "--value-size", "100")
    assert r.returncode == 0, r.stderr
    rep = report(r)
    assert list(rep) == KEYS
    assert rep["server"] == f"127.0.0.1:{server.port}"
    assert (rep["tls"], rep["verify"], rep["threads"], rep["connections"]) == (False, False, 2, 4)
    assert (rep["sets_pct"], rep["keys"], rep["key_size"], rep["value_size"]) == (25, 100, 64, 100)
    assert rep["prefilled"] == 100 and rep["errors"] == 0
    assert rep["ops"] == rep["gets"] + rep["sets"] > 0
    assert rep["gets"] == rep["get_hits"] and rep["get_misses"] == 0   # every key stored first
    assert rep["seconds"] >= 1 and rep["ops_per_s"] > 0
    assert " ops/s (" in r.stderr
    with server.conn() as c:
        st = c.stats()
        assert int(st["curr_items"]) == 100
        assert int(st["cmd_set"]) >= 100 + rep["sets"]
        assert int(st["get_hits"]) >= rep["get_hits"]


def test_prefill_only_stores_every_key_and_stops(load, server):
    r = run(load, "-s", f"127.0.0.1:{server.port}", "-k", "300", "--prefill-only", "-c", "3")
    assert r.returncode == 0, r.stderr
    rep = report(r)
    assert (rep["prefilled"], rep["ops"], rep["seconds"]) == (300, 0, 0)
    assert "stored 300 keys" in r.stderr
    with server.conn() as c:
        assert c.stats()["curr_items"] == "300"
        key = "kv" + "299".rjust(62, "0")    # 64 bytes, the default --key-size
        c.call(f"get {key}\r\n", f"VALUE {key} 0 1024\r\n")
        assert len(c.until_end()) == 1024 + 2 + 5


def test_all_sets_and_all_gets(load, server):
    for share, (gets, sets) in ((100, (0, None)), (0, (None, 0))):
        rep = report(run(load, "-s", f"127.0.0.1:{server.port}", "-t", "1", "-c", "2", "-r",
                         share, "-k", "10"))
        assert rep["errors"] == 0
        assert (rep["gets"] if gets == 0 else rep["sets"]) == 0
        assert rep["ops"] > 0


@pytest.mark.parametrize("bad, says", [
    (["--no-such"], "unknown option '--no-such'"),
    (["-c", "0"], "--connections wants a whole number from 1 to 65536, not '0'"),
    (["-r", "101"], "--sets wants a whole number from 0 to 100"),
    (["-t", "x"], "--duration wants a whole number"),
    (["--value-size", "1048577"], "--value-size wants a whole number from 1 to 1048576"),
    (["-s", "127.0.0.1"], "--server wants HOST:PORT"),
    (["-s", "127.0.0.1:70000"], "--server's port wants a whole number from 1 to 65535"),
    (["--ca", "x.pem"], "--ca needs --tls"),
    (["-k", "1000", "--key-size", "4"], "--key-size 4 is too short for 1000 keys"),
    (["--prefill-only", "--no-prefill"], "contradict"),
    (["extra"], "unexpected argument 'extra'"),
    (["-s"], "-s needs a value"),
])
def test_bad_options_are_refused(load, bad, says):
    r = run(load, *bad)
    assert r.returncode == 64, r.stderr
    assert says in r.stderr and "--help" in r.stderr
    assert r.stdout == ""


def test_help_tells_every_option(load):
    r = run(load, "--help")
    assert r.returncode == 0
    for opt in ["--server", "--connections", "--threads", "--sets", "--keys", "--key-size",
                "--value-size", "--duration", "--tls", "--ca", "--no-prefill", "--prefill-only"]:
        assert opt in r.stdout, opt
    assert r.stderr == ""


def test_no_server_there(load):
    r = run(load, "-s", f"127.0.0.1:{free_port()}", "-t", "1")
    assert r.returncode == 2
    assert "cannot connect to 127.0.0.1:" in r.stderr and "refused" in r.stderr
    assert r.stdout == ""


def test_a_host_that_does_not_resolve(load):
    r = run(load, "-s", "no-such-host.invalid:11211", "-t", "1")
    assert r.returncode == 2
    assert "cannot resolve no-such-host.invalid" in r.stderr


def test_tls_against_a_plain_port_fails_the_handshake(load, server):
    r = run(load, "-s", f"127.0.0.1:{server.port}", "-t", "1", "--tls")
    assert r.returncode == 2
    assert "TLS handshake with 127.0.0.1:" in r.stderr and "failed" in r.stderr


def test_tls_round_trip_verified_against_the_ca(load, start, certs):  # noqa: F811
    s = start(*tls_opts(certs))
    r = run(load, "-s", f"127.0.0.1:{s.port}", "-t", "1", "-c", "4", "-k", "50", "-r", "30",
            "--tls", "--ca", certs.a_pem)
    assert r.returncode == 0, r.stderr
    rep = report(r)
    assert (rep["tls"], rep["verify"], rep["prefilled"], rep["errors"]) == (True, True, 50, 0)
    assert rep["gets"] == rep["get_hits"] > 0 and rep["sets"] > 0
    assert ", TLS)" in r.stderr
    # the server saw TLS sessions: a plain client on its port gets nothing through
    plain = run(load, "-s", f"127.0.0.1:{s.port}", "-t", "1", "-c", "1", "-k", "1")
    assert plain.returncode == 1
    assert "error(s); the first: a connection failed or closed" in plain.stderr
    assert report(plain)["prefilled"] == 0


def test_tls_with_the_wrong_ca_is_refused(load, start, certs):  # noqa: F811
    s = start(*tls_opts(certs))
    r = run(load, "-s", f"127.0.0.1:{s.port}", "-t", "1", "--tls", "--ca", certs.b_pem)
    assert r.returncode == 2
    assert "TLS handshake" in r.stderr and "certificate" in r.stderr


def test_a_ca_file_that_does_not_load(load, start, certs, tmp_path):  # noqa: F811
    s = start(*tls_opts(certs))
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate\n")
    r = run(load, "-s", f"127.0.0.1:{s.port}", "-t", "1", "--tls", "--ca", bad)
    assert r.returncode == 2
    assert f"cannot load the CA certificates in {bad}" in r.stderr


def test_a_server_that_answers_wrongly_is_an_error(load):
    """A peer that answers every request with ERROR: the run ends with status 1 and says what
    it got."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(4)
    port = lsock.getsockname()[1]
    proc = subprocess.Popen([str(load), "-s", f"127.0.0.1:{port}", "-t", "1", "-c", "1", "-k", "1",
                             "--no-prefill", "-r", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        conn, _ = lsock.accept()
        conn.settimeout(30)
        with conn:
            while True:
                try:
                    data = conn.recv(4096)
                except OSError:
                    break
                if not data:
                    break
                conn.sendall(b"ERROR\r\n" * data.count(b"\r\n"))
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        lsock.close()
    assert proc.returncode == 1, err
    assert "the first: get answered 'ERROR'" in err
    rep = json.loads(out)
    assert rep["errors"] > 0 and rep["get_hits"] == 0
