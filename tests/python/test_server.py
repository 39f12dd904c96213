"""locus_tools.server, which every benchmark and test harness starts its servers with: a real
locus-kv started, read and stopped; a refusal, a lost race for a port, a server that never
answers and one that ignores SIGTERM, each reported the way the callers rely on."""

import os
import socket
import subprocess

import pytest

from locus_tools import server


def _script(tmp_path, body):
    """An executable that ignores the server options it is given and runs body (sh)."""
    path = tmp_path / "fake-server"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_free_port_can_be_bound():
    port = server.free_port()
    with socket.socket() as s:
        s.bind((server.HOST, port))


def test_command_line_listens_on_the_loopback_only():
    argv = server.command("/x/locus-kv", 1234, ["-t", 2])
    assert argv == ["/x/locus-kv", "-l", "127.0.0.1", "-p", "1234", "-U", "0", "-t", "2"]
    as_memcached = server.command("memcached", 1234, memcached=True)
    assert (as_memcached[-2:] == ["-u", "root"]) == (os.geteuid() == 0)


def test_locus_kv_starts_answers_stats_and_stops(kv_path, tmp_path):
    log = tmp_path / "kv.log"
    srv = server.start(kv_path, ["-t", "1", "-m", "8"], log=log)
    try:
        assert srv.alive() and srv.argv[:3] == [str(kv_path), "-l", "127.0.0.1"]
        stats = srv.stats()
        assert int(stats["pid"]) == srv.pid and stats["version"]
        numbers = server.numbers(stats)
        assert numbers["pid"] == srv.pid and "version" not in numbers
        assert server.cpu_seconds(srv.pid) >= 0 and server.rss_kb(srv.pid) > 0
    finally:
        status = srv.stop()
    assert status == 0 and not srv.alive()
    assert srv.output() == log.read_text()  # readable after the stop, from the file too
    assert server.read_stats(srv.port) == {}  # nobody there now


def test_a_refused_option_raises_with_the_servers_words(kv_path):
    with pytest.raises(server.ServerError) as e:
        server.start(kv_path, ["-t", "0"])
    assert e.value.status not in (0, None) and e.value.output.strip()
    assert e.value.argv[0] == str(kv_path) and "-t" in e.value.argv


def test_a_port_taken_before_the_server_binds_it_is_tried_again(kv_path, monkeypatch):
    taken = socket.socket()  # bound, as by another program's socket, but not listening
    taken.bind((server.HOST, 0))
    ports = [taken.getsockname()[1]]
    real = server.free_port
    monkeypatch.setattr(server, "free_port", lambda: ports.pop() if ports else real())
    try:
        srv = server.start(kv_path, ["-t", "1"])
        assert srv.port != taken.getsockname()[1]
        assert srv.stop() == 0
    finally:
        taken.close()


def test_every_port_taken_is_said(kv_path, monkeypatch):
    taken = socket.socket()
    taken.bind((server.HOST, 0))
    monkeypatch.setattr(server, "free_port", lambda: taken.getsockname()[1])
    try:
        with pytest.raises(server.ServerError, match="could not find a free port") as e:
            server.start(kv_path, ["-t", "1"], attempts=2)
        assert "in use" in e.value.output
    finally:
        taken.close()


def test_a_server_that_never_answers_is_killed(tmp_path):
    fake = _script(tmp_path, "echo starting; exec sleep 60")
    with pytest.raises(server.ServerError, match="did not accept connections within 0.5 s") as e:
        server.start(fake, seconds=0.5)
    assert e.value.status is None and "starting" in e.value.output


def test_stop_kills_what_ignores_sigterm(tmp_path):
    fake = _script(tmp_path, "trap '' TERM; echo ready; while :; do sleep 1; done")
    proc = subprocess.Popen([str(fake)], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"  # the trap is in place
    assert server.stop(proc, seconds=0.5) is None and proc.poll() is not None
    proc.stdout.close()
