"""SASL authentication (-S) on the binary protocol, with Cyrus SASL (libsasl2), as memcached
1.6.18 does it: libsasl2's configuration is memcached.conf in $SASL_CONF_PATH (here: mech_list
and a sasldb the tests make with saslpasswd2), -S makes the server binary-only, and a
connection may run nothing but the SASL commands and VERSION before it authenticates (anything
else is answered "Auth failure." and the connection closes). Every test here passes against
memcached too."""

import hashlib
import hmac
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kvlib import Op, ServerError, Status, arith_extras, request, set_extras

REALM = "locus.test"
USERS = {"alice": "secret", "bob": "pw2"}


@pytest.fixture(scope="module")
def sasl_conf(tmp_path_factory):
    """A directory holding memcached.conf and the sasldb it names."""
    if not shutil.which("saslpasswd2"):
        pytest.fail("saslpasswd2 (Debian's sasl2-bin) is needed to make the tests' SASL "
                    "database (scripts/install-deps installs it)", pytrace=False)
    d = tmp_path_factory.mktemp("sasl")
    db = d / "sasldb"
    for user, password in USERS.items():
        subprocess.run(["saslpasswd2", "-f", str(db), "-c", "-a", "memcached", "-u", REALM,
                        "-p", user], input=password.encode(), check=True, capture_output=True)
    (d / "memcached.conf").write_text(f"mech_list: plain cram-md5\nsasldb_path: {db}\n")
    return d


def sasl_env(conf):
    env = dict(os.environ)
    env.pop("SASL_CONF_PATH", None)
    if conf:
        env["SASL_CONF_PATH"] = str(conf)
    return env


@pytest.fixture
def sasl_server(start, sasl_conf):
    return start("-S", env=sasl_env(sasl_conf))


def plain(user="alice", password=None):
    password = USERS.get(user, "x") if password is None else password
    return f"\0{user}@{REALM}\0{password}"


def auth(b, user="alice", password=None):
    return b.call(Op.SASL_AUTH, "PLAIN", plain(user, password))


def authed(server):
    b = server.bconn()
    r = auth(b)
    assert (r.status, r.value) == (Status.SUCCESS, b"Authenticated"), r
    return b


def refused_after(b, op=Op.GET, key="k", value="", extras=b""):
    """op is answered "Auth failure." and the connection closes."""
    b.send(request(op, key, value, extras, opaque=3) + request(Op.NOOP, opaque=4))
    r = b.response()
    assert (r.opcode, r.status, r.opaque, r.value) == (op, Status.AUTH_ERROR, 3, b"Auth failure.")
    assert b.closed() and b.buf == b""


def test_mechanisms_version_and_settings(sasl_server):
    with sasl_server.bconn() as b:
        r = b.call(Op.SASL_LIST_MECHS)
        assert r.status == Status.SUCCESS and sorted(r.value.split()) == [b"CRAM-MD5", b"PLAIN"]
        assert b.call(Op.VERSION).value.startswith(b"1.6.18")
        assert auth(b).status == Status.SUCCESS
        st = b.stats("settings")
        assert (st["auth_enabled_sasl"], st["binding_protocol"]) == ("yes", "binary")


@pytest.mark.parametrize("op,key,value,extras", [
    (Op.GET, "k", "", b""), (Op.SET, "k", "v", set_extras()), (Op.NOOP, "", "", b""),
    (Op.STAT, "", "", b""), (Op.FLUSH, "", "", b""), (Op.QUIT, "", "", b""),
    (Op.DELETE, "k", "", b""), (Op.INCR, "k", "", arith_extras(1, 0)), (0x50, "", "", b""),
    (Op.GET, "k" * 300, "", b""),
], ids=["get", "set", "noop", "stat", "flush", "quit", "delete", "incr", "unknown", "long-key"])
def test_nothing_but_sasl_before_auth(sasl_server, op, key, value, extras):
    with authed(sasl_server) as a:
        a.set("k", "kept")
        with sasl_server.bconn() as b:
            refused_after(b, op, key, value, extras)
        assert a.get("k")[1] == b"kept"
        assert a.stats()["cmd_flush"] == "0"


def test_plain_then_serves(sasl_server):
    with authed(sasl_server) as b:
        assert b.set("x", "somevalue", flags=3).status == Status.SUCCESS
        assert b.get("x")[:2] == (3, b"somevalue")
        assert b.call(Op.DELETE, "x").status == Status.SUCCESS
        st = b.stats()
        assert (st["auth_cmds"], st["auth_errors"]) == ("1", "0")


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("nobody", "secret"),
                                           ("bob", "secret"), ("alice", "")])
def test_wrong_credentials(sasl_server, user, password):
    """Auth failure; the connection stays open but unauthenticated."""
    with sasl_server.bconn() as b:
        r = auth(b, user, password)
        assert (r.status, r.value) == (Status.AUTH_ERROR, b"Auth failure.")
        refused_after(b)
    with authed(sasl_server) as b:
        st = b.stats()
        assert (st["auth_cmds"], st["auth_errors"]) == ("2", "1")


def test_unknown_mechanism(sasl_server):
    with sasl_server.bconn() as b:
        r = b.call(Op.SASL_AUTH, "FOO", plain())
        assert (r.status, r.value) == (Status.AUTH_ERROR, b"Auth failure.")
        # a name longer than 32 bytes is refused before libsasl2 sees it; the data is dropped
        r = b.call(Op.SASL_AUTH, "X" * 40, plain())
        assert (r.status, r.value) == (Status.EINVAL, b"Invalid arguments")
        assert auth(b).status == Status.SUCCESS
        st = b.stats()
        assert (st["auth_cmds"], st["auth_errors"]) == ("2", "1")


def test_step_without_start(sasl_server):
    with sasl_server.bconn() as b:
        r = b.call(Op.SASL_STEP, "PLAIN", plain())
        assert (r.status, r.value) == (Status.AUTH_ERROR, b"Auth failure.")
        refused_after(b)


def test_cram_md5(sasl_server):
    """A two-step mechanism: AUTH answers "continue" with the challenge, STEP finishes."""
    with sasl_server.bconn() as b:
        r = b.call(Op.SASL_AUTH, "CRAM-MD5")
        assert r.status == Status.AUTH_CONTINUE and r.value.startswith(b"<"), r
        digest = hmac.new(b"pw2", r.value, hashlib.md5).hexdigest()
        r = b.call(Op.SASL_STEP, "CRAM-MD5", f"bob@{REALM} {digest}")
        assert (r.status, r.value) == (Status.SUCCESS, b"Authenticated")
        assert b.set("c", "v").status == Status.SUCCESS
    with sasl_server.bconn() as b:
        r = b.call(Op.SASL_AUTH, "CRAM-MD5")
        r = b.call(Op.SASL_STEP, "CRAM-MD5", f"bob@{REALM} {'0' * 32}")
        assert r.status == Status.AUTH_ERROR
        refused_after(b)


def test_every_sasl_command_starts_over(sasl_server):
    """As memcached: a SASL command marks the connection unauthenticated first, so listing the
    mechanisms, or a failed attempt, after success takes it back."""
    with authed(sasl_server) as b:
        assert b.call(Op.SASL_LIST_MECHS).status == Status.SUCCESS
        refused_after(b)
    with authed(sasl_server) as b:
        assert auth(b, password="wrong").status == Status.AUTH_ERROR
        refused_after(b)


def test_connections_authenticate_alone(sasl_server):
    with sasl_server.bconn() as b, authed(sasl_server) as a:
        assert auth(b, password="wrong").status == Status.AUTH_ERROR
        assert a.set("x", "v").status == Status.SUCCESS
        refused_after(b, Op.SET, "x", "w", set_extras())
        assert a.get("x")[1] == b"v"


def test_stats_reset_zeroes_the_counts(sasl_server):
    with sasl_server.bconn() as b:
        auth(b, password="wrong")
    with authed(sasl_server) as b:
        st = b.stats()
        assert (st["auth_cmds"], st["auth_errors"]) == ("2", "1")
        assert b.stats("reset") == {}
        st = b.stats()
        assert (st["auth_cmds"], st["auth_errors"]) == ("0", "0")


def test_text_client_is_not_served(sasl_server):
    """-S is binary-only: text is read as a request header, and closes the connection."""
    with sasl_server.conn() as t:
        t.send("get k\r\n" + "x" * 40)
        assert t.closed() and t.buf == b""


def test_auth_data_in_pieces(start, sasl_conf):
    """The data of an AUTH may come in pieces; the worker serves others meanwhile."""
    s = start("-S", "-t", "1", env=sasl_env(sasl_conf))
    data = request(Op.SASL_AUTH, "PLAIN", plain(), opaque=8)
    with s.bconn() as b:
        b.send(data[:30])
        with s.bconn() as other:
            assert other.call(Op.VERSION).status == Status.SUCCESS
        b.send(data[30:])
        r = b.response()
        assert (r.status, r.opaque) == (Status.SUCCESS, 8)


def test_auth_data_too_large(sasl_server):
    """Data that would not fit one item of memcached's (512 KB here) is "Out of memory", and
    dropped."""
    with sasl_server.bconn() as b:
        r = b.call(Op.SASL_AUTH, "PLAIN", b"\0alice\0" + b"x" * (600 * 1024))
        assert (r.status, r.value) == (Status.ENOMEM, b"Out of memory")
        assert auth(b).status == Status.SUCCESS


# ---------- the command line ----------

@pytest.mark.parametrize("args,says", [
    (["-B", "ascii"], "You cannot allow the ASCII protocol while using SASL."),
    (["-B", "auto"], "You cannot allow the ASCII protocol while using SASL."),
    (["-B", "binary", "-B", "ascii"], "You cannot allow the ASCII protocol while using SASL."),
    (["-U", "11299"], "Cannot enable UDP while using binary SASL authentication."),
])
def test_sasl_option_conflicts_refused(start, sasl_conf, args, says):
    with pytest.raises(ServerError) as e:
        start.attempt("-S", *args, env=sasl_env(sasl_conf))
    assert e.value.status != 0 and says in e.value.output, e.value.output


def test_sasl_without_a_configuration_refused(start):
    if any(Path(p).exists() for p in ("/etc/sasl/memcached.conf", "/etc/sasl2/memcached.conf")):
        pytest.skip("this machine has a SASL configuration for memcached")
    with pytest.raises(ServerError) as e:
        start.attempt("-S", env=sasl_env(None))
    assert e.value.status != 0 and "Error initializing sasl." in e.value.output, e.value.output


@pytest.mark.parametrize("protocol", ["binary", "auto"])
def test_ascii_auth_with_binary_refused(start, tmp_path, protocol):
    path = tmp_path / "auth"
    path.write_text("alice:secret\n")
    with pytest.raises(ServerError) as e:
        start.attempt("-Y", path, "-B", protocol)
    assert e.value.status != 0 and ("You cannot allow the BINARY protocol while using ascii "
                                    "authentication tokens.") in e.value.output, e.value.output
