"""ASCII authentication (-Y FILE), as memcached 1.6.18 does it.

The file holds up to 8 "user:password" lines. Until a connection sends a "set" (any key, flags
and exptime) whose data is "user password", every line it sends is answered
"CLIENT_ERROR unauthenticated" and nothing is run; a wrong password is
"CLIENT_ERROR authentication failure". Every test here passes against memcached too."""

import pytest

from kvlib import ServerError

USERS = "alice:secret\nbob:pw2\n"


def auth_set(user_password, key="auth", extra=""):
    data = user_password.encode()
    return b"set %s 0 0 %d%s\r\n%s\r\n" % (key.encode(), len(data), extra.encode(), data)


@pytest.fixture
def auth_file(tmp_path):
    path = tmp_path / "auth"
    path.write_text(USERS)
    return path


@pytest.fixture
def auth_server(start, auth_file):
    return start("-Y", auth_file)


def ask(c, data, reply):
    """Send and read the one reply line expected."""
    c.send(data)
    c.expect(reply)


def test_auth_success_then_the_connection_serves(auth_server, auth_file):
    with auth_server.conn() as c:
        ask(c, auth_set("alice secret"), "STORED\r\n")
        ask(c, "set k 0 0 5\r\nhello\r\n", "STORED\r\n")
        ask(c, "get k\r\n", "VALUE k 0 5\r\nhello\r\nEND\r\n")
        ask(c, "mg k v\r\n", "VA 5\r\nhello\r\n")
        assert c.stats()["auth_cmds"] == "1" and c.stats()["auth_errors"] == "0"
        assert c.stats("settings")["auth_enabled_ascii"] == str(auth_file)
    with auth_server.conn() as c:
        # the key, flags, exptime and noreply of the authenticating set mean nothing
        ask(c, auth_set("bob pw2", key="anything", extra=" noreply"), "STORED\r\n")
        ask(c, "get auth\r\nget anything\r\n", "END\r\nEND\r\n")


def test_auth_wrong_password(auth_server):
    with auth_server.conn() as c:
        ask(c, auth_set("alice secreX"), "CLIENT_ERROR authentication failure\r\n")
        ask(c, "version\r\n", "CLIENT_ERROR unauthenticated\r\n")
        ask(c, auth_set("nobody secret"), "CLIENT_ERROR authentication failure\r\n")
        ask(c, auth_set("bob secret"), "CLIENT_ERROR authentication failure\r\n")
        ask(c, auth_set("alice secret"), "STORED\r\n")
        st = c.stats()
        assert (st["auth_cmds"], st["auth_errors"]) == ("4", "3")
        c.call("stats reset\r\n", "RESET\r\n")
        st = c.stats()
        assert (st["auth_cmds"], st["auth_errors"]) == ("0", "0")


@pytest.mark.parametrize("line", [
    "version", "get k", "gets k", "stats", "stats settings", "mg k v", "mn", "ms k 2",
    "delete k", "incr k 1", "touch k 0", "flush_all", "quit", "shutdown", "verbosity 1",
    "add k 0 0 12", "cas k 0 0 12 1", "SET k 0 0 12", "set k 0 0", "set k 0 0 x", "set k 0 0 -1",
    "bogus", "", "refresh_certs",
])
def test_commands_before_auth_are_refused(auth_server, line):
    with auth_server.conn() as c:
        ask(c, line + "\r\n", "CLIENT_ERROR unauthenticated\r\n")
        # still open, still unauthenticated, and nothing was run
        ask(c, "get k\r\n", "CLIENT_ERROR unauthenticated\r\n")
        ask(c, auth_set("alice secret"), "STORED\r\n")
        ask(c, "get k\r\n", "END\r\n")


@pytest.mark.parametrize("data,reply", [
    ("alice", "CLIENT_ERROR bad authentication token format"),
    ("alice:secret", "CLIENT_ERROR bad authentication token format"),
    ("", "CLIENT_ERROR bad authentication token format"),
    ("  alice secret", "STORED"),          # spaces separate, a run of them counts once
    ("alice secret extra", "STORED"),      # words after the password are ignored
    ("alice secret\r", "CLIENT_ERROR authentication failure"),
])
def test_auth_token_format(auth_server, data, reply):
    with auth_server.conn() as c:
        ask(c, auth_set(data), reply + "\r\n")


def test_auth_data_must_end_in_crlf(auth_server):
    with auth_server.conn() as c:
        ask(c, b"set a 0 0 12\r\nalice secretXX", "CLIENT_ERROR bad command line termination\r\n")
        ask(c, auth_set("alice secret"), "STORED\r\n")


def test_auth_replies_to_a_pipeline_once(auth_server):
    """memcached answers an unauthenticated connection with one response that each line's reply
    replaces until it is sent: lines that arrive together get the last one's answer."""
    with auth_server.conn() as c:
        c.call(b"get a\r\nget b\r\n" + auth_set("alice secret"), "STORED\r\n")
        c.call("version\r\n", "VERSION ")
        c.line()
    with auth_server.conn() as c:
        c.call(auth_set("alice secrXt") + b"version\r\nversion\r\n",
               "CLIENT_ERROR unauthenticated\r\n")
        c.nothing()


def test_auth_data_in_pieces(start, auth_file):
    """The authenticating set's data may come in pieces (one holding a newline); the worker
    serves its other connections meanwhile."""
    s = start("-t", "1", "-Y", auth_file)
    with s.conn() as c, s.conn() as other:
        c.send(b"set a 0 0 14\r\nalice secret \n")
        c.nothing()
        ask(other, auth_set("bob pw2"), "STORED\r\n")
        ask(other, "version\r\n", "VERSION ")
        other.line()
        ask(c, b"\r\n", "STORED\r\n")


def test_auth_runaway_input_is_closed(auth_server):
    """No newline within 2048 bytes, or a set whose data cannot fit the 16 KB read buffer:
    memcached closes the connection."""
    with auth_server.conn() as c:
        c.send("x" * 3000)
        assert c.closed()
    with auth_server.conn() as c:
        c.send(b"set a 0 0 16383\r\n" + b"x" * 16383 + b"\r\n")
        assert c.closed()
    with auth_server.conn() as c:
        data = b"alice secret" + b" " * (16382 - 12)
        c.call(b"set a 0 0 16382\r\n%s\r\n" % data, "STORED\r\n")


def test_auth_file_keeps_eight_users(start, tmp_path):
    path = tmp_path / "auth9"
    path.write_text("".join(f"u{i}:p{i}\n" for i in range(9)))
    s = start("-Y", path)
    for i, reply in [(0, "STORED"), (7, "STORED"), (8, "CLIENT_ERROR authentication failure")]:
        with s.conn() as c:
            ask(c, auth_set(f"u{i} p{i}"), reply + "\r\n")


def test_auth_password_with_a_colon(start, tmp_path):
    """The user ends at the first ':'; the password is the rest of the line."""
    path = tmp_path / "auth"
    path.write_text("carol:pa:ss\n")
    with start("-Y", path).conn() as c:
        ask(c, auth_set("carol pa:ss"), "STORED\r\n")


@pytest.mark.parametrize("text", ["noseparator\nbob:pw\n", "alice:secret\n\nbob:pw\n",
                                  "alice:secret\nbob"])
def test_malformed_auth_file_refused_at_start(start, tmp_path, text):
    path = tmp_path / "auth"
    path.write_text(text)
    with pytest.raises(ServerError) as e:
        start.attempt("-Y", path)
    assert (f"Authfile [{path}] has a malformed entry. Should be 'user:password'"
            in e.value.output), e.value.output
    assert e.value.status != 0


def test_missing_auth_file_refused_at_start(start, tmp_path):
    path = tmp_path / "none"
    with pytest.raises(ServerError) as e:
        start.attempt("-Y", path)
    assert f"Could not open authfile [{path}] for reading" in e.value.output, e.value.output
    assert e.value.status != 0


def test_auth_with_udp_refused(start, auth_file):
    with pytest.raises(ServerError) as e:
        start.attempt("-Y", auth_file, "-U", "11299")
    assert "Cannot use UDP with ascii authentication enabled" in e.value.output, e.value.output
