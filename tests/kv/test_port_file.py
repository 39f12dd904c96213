"""MEMCACHED_PORT_FILENAME: the server writes the ports it listens on to that file, as
memcached does ("TCP INET: <port>", "UDP INET6: <port>", ... one line per bound socket, the
TCP ones first), so that whoever starts it on port -1 (any free port) can find it. memcached's
own test suite starts every server that way."""

import os
import re
import signal
import socket
import subprocess
import time

import pytest

from kvlib import HOST, REPLY_SECONDS, STOP_SECONDS, Conn, free_port

DEADLINE = 10.0


class PortFileServer:
    """The server started with MEMCACHED_PORT_FILENAME set and the given arguments."""

    def __init__(self, kv, path, args):
        self.path = path
        argv = [str(kv[0])]
        if kv[1] and os.geteuid() == 0:
            argv += ["-u", "root"]
        self.argv = argv + [str(a) for a in args]
        env = dict(os.environ, MEMCACHED_PORT_FILENAME=str(path))
        self.proc = subprocess.Popen(self.argv, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def text(self):
        """The port file once the server has written it (it renames it into place whole)."""
        end = time.monotonic() + DEADLINE
        while not self.path.exists():
            assert self.proc.poll() is None, f"{self.argv} exited: {self.output()}"
            assert time.monotonic() < end, f"no {self.path} after {DEADLINE} s"
            time.sleep(0.02)
        return self.path.read_text()

    def output(self):
        return self.proc.communicate(timeout=STOP_SECONDS)[0].decode(errors="replace")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        out = self.output()
        assert self.proc.returncode == 0, f"exit status {self.proc.returncode}: {out}"


@pytest.fixture
def port_file_server(kv, tmp_path):
    started = []

    def start(*args):
        s = PortFileServer(kv, tmp_path / "ports", args)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.stop()


def test_port_file_names_the_listening_port(port_file_server):
    port = free_port()
    s = port_file_server("-l", HOST, "-p", port, "-U", "0")
    assert s.text() == f"TCP INET: {port}\n"
    with Conn((HOST, port)) as c:
        c.call("version\r\n", "VERSION ")


def test_port_file_with_any_free_port(port_file_server):
    """-p -1 and -U -1: the kernel picks each port; the file says which, TCP first."""
    s = port_file_server("-l", HOST, "-p", "-1", "-U", "-1")
    m = re.fullmatch(r"TCP INET: (\d+)\nUDP INET: (\d+)\n", s.text())
    assert m, s.text()
    tcp, udp = int(m.group(1)), int(m.group(2))
    with Conn((HOST, tcp)) as c:
        c.call("set pf 0 0 2\r\nok\r\nget pf\r\n", "STORED\r\nVALUE pf 0 2\r\nok\r\nEND\r\n")
        st = c.stats("settings")
        assert (st["tcpport"], st["udpport"]) == ("-1", "-1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(REPLY_SECONDS)
        u.sendto(b"\x00\x07\x00\x00\x00\x01\x00\x00get pf\r\n", (HOST, udp))
        reply, _ = u.recvfrom(2048)
        assert reply[8:] == b"VALUE pf 0 2\r\nok\r\nEND\r\n", reply


def test_port_file_not_written_for_a_unix_socket(port_file_server, tmp_path):
    sock = tmp_path / "sock"
    s = port_file_server("-s", sock)
    end = time.monotonic() + DEADLINE
    while not sock.exists() and time.monotonic() < end:
        time.sleep(0.02)
    assert sock.exists() and s.proc.poll() is None
    s.stop()
    assert not (tmp_path / "ports").exists()


@pytest.mark.parametrize("listen", [[], ["-l", HOST]])
def test_no_port_at_all_runs_and_writes_an_empty_port_file(port_file_server, listen):
    """-p 0 and -U 0 without -s: nothing to listen on, and the server still starts, runs and
    writes an empty port file, as memcached does (its t/issue_67.t starts it with -p 0)."""
    s = port_file_server(*listen, "-p", "0", "-U", "0")
    assert s.text() == ""
    assert s.proc.poll() is None
    s.stop()
