"""memcached 1.6.18's command line, as a user of memcached expects it to work.

Every option memcached 1.6.18 takes is covered here: what it does (the server serves, listens
where it was told, writes its pid file, runs as its user, reports the setting in `stats
settings`), and how a bad value is refused (a nonzero status and a message). The tests pass
against Debian's memcached (LOCUS_KV=memcached) wherever locus-kv is meant to behave the same;
the ones marked locus_only check where locus-kv deliberately differs: it refuses, with a
message saying why, what it cannot honour (extstore, the proxy)
and garbage that memcached silently takes (`-p abc`, an extra argument).

The servers here are started by the `launch` fixture rather than conftest's `start`, since
many tests need their own -p/-l/-s/-u/-d. Against memcached, started as root, `-u root` comes
first on the command line (memcached refuses to run as root without -u); a test's own -u
overrides it. Everything started is stopped (SIGTERM, then SIGKILL) and every scratch file
removed at the end of each test, whatever its outcome.
"""

import os
import pwd
import re
import resource
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from kvlib import HOST, REPLY_SECONDS, STOP_SECONDS, Conn, free_port, target

# How long a server may take to start (or to refuse), and to go away once signalled.
DEADLINE = 10.0

# memcached 1.6.18's options (its shortopts and longopts).
MEMCACHED_SHORT = set("aAZpsUmMckhiVrvdluPfntDLRCbBISFXWYeoN")
MEMCACHED_LONG = {
    "unix-mask", "enable-shutdown", "enable-ssl", "port", "unix-socket", "udp-port",
    "memory-limit", "disable-evictions", "conn-limit", "lock-memory", "help", "license",
    "version", "enable-coredumps", "verbose", "daemon", "listen", "user", "pidfile",
    "slab-growth-factor", "slab-min-size", "threads", "enable-largepages",
    "max-reqs-per-event", "disable-cas", "listen-backlog", "protocol", "max-item-size",
    "enable-sasl", "disable-flush-all", "disable-dumping", "disable-watch", "auth-file",
    "memory-file", "extended", "napi-ids",
}


# ---------- helpers ----------

def poll(cond, what, seconds=DEADLINE, interval=0.02):
    """cond()'s first truthy value, or an AssertionError naming `what` after `seconds`."""
    end = time.monotonic() + seconds
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= end:
            raise AssertionError(f"gave up after {seconds} s waiting for {what}")
        time.sleep(interval)


class UnixConn(Conn):
    """kvlib's Conn over an AF_UNIX stream socket."""

    def __init__(self, path, timeout=REPLY_SECONDS):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
        except OSError:
            self.sock.close()
            raise
        self.timeout = timeout
        self.buf = b""


def connect(probe, timeout=REPLY_SECONDS):
    """A Conn to ("tcp", (host, port)) or ("unix", path)."""
    kind, where = probe
    return UnixConn(where, timeout) if kind == "unix" else Conn(where, timeout)


def try_connect(probe):
    try:
        return connect(probe)
    except OSError:
        return None


def poke(probe):
    """One connection attempt: memcached's main loop notices a signal or a shutdown only at
    its next event (its clock ticks once a second), and this is one."""
    c = try_connect(probe)
    if c:
        c.close()


def refuses_connections_fast(addr):
    """False as soon as something accepts at addr; True if the attempt was refused."""
    try:
        socket.create_connection(addr, timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def refuses_connections(addr):
    """True if nothing listens at addr (host, port)."""
    try:
        socket.create_connection(addr, timeout=2).close()
    except OSError:
        return True
    return False


def serves(c, key="opt"):
    """A set and a get work on connection c."""
    assert c.set(key, "value") == b"STORED\r\n"
    assert c.get(key) == b"value"


def proc_status(pid):
    """/proc/<pid>/status as a dict, or None once the process is gone (or a zombie)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except (FileNotFoundError, ProcessLookupError):
        return None
    if fields.get("State", "").startswith("Z"):
        return None
    return fields


def handles_sigterm(pid):
    """True if the process has a handler for SIGTERM (SigCgt in /proc/<pid>/status)."""
    status = proc_status(pid)
    return bool(status) and bool(int(status["SigCgt"], 16) & (1 << (signal.SIGTERM - 1)))


def read_pid(path):
    """The pid in a pid file once it holds a complete line, else None."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return None
    return int(text) if text.endswith("\n") and text.strip().isdigit() else None


def pids_running(cmd):
    """Live processes whose argv is exactly cmd (a command line with a unique scratch path)."""
    want = "\0".join(cmd) + "\0"
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline") as f:
                if f.read() == want and proc_status(int(d)):
                    found.append(int(d))
        except OSError:
            pass
    return found


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def listen_backlog(port):
    """The backlog of the socket listening on TCP port, as ss reports it (Send-Q)."""
    out = subprocess.run(["ss", "-ltn", f"sport = :{port}"], capture_output=True, text=True,
                         timeout=10).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith("LISTEN")]
    assert rows, f"ss shows nothing listening on port {port}:\n{out}"
    return {int(r[2]) for r in rows}


def run(kv, *args):
    """Run the server binary to completion (for -h, -V, -i): (status, stdout, stderr)."""
    r = subprocess.run([str(kv[0]), *map(str, args)], capture_output=True, text=True,
                       timeout=DEADLINE, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout, r.stderr


class Proc:
    """A server process, its output in files; `started` once it accepted a connection at
    `probe`, or False if it exited first (a refusal)."""

    def __init__(self, cmd, probe, preexec=None):
        self.cmd, self.probe = cmd, probe
        self.port = None
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=self.err, preexec_fn=preexec)
        self.started = None

    @property
    def pid(self):
        return self.proc.pid

    @property
    def rc(self):
        return self.proc.poll()

    def _read(self, f):
        f.seek(0)
        return f.read().decode(errors="replace")

    def stdout(self):
        return self._read(self.out)

    def stderr(self):
        return self._read(self.err)

    def output(self):
        return self.stdout() + self.stderr()

    def describe(self):
        state = "running" if self.rc is None else f"status {self.rc}"
        return f"{' '.join(self.cmd)} ({state}); output:\n{self.output()}"

    def wait_ready(self):
        """True once the server accepts connections and has its SIGTERM handler in place
        (so that a stop is a graceful one: test_sigterm_as_soon_as_it_listens... checks the
        moment in between); False if it exited first."""
        end = time.monotonic() + DEADLINE
        accepted = False
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            if not accepted:
                c = try_connect(self.probe)
                if c:
                    c.close()
                    accepted = True
            if accepted and handles_sigterm(self.pid):
                return True
            time.sleep(0.02)
        self.proc.kill()
        self.proc.wait()
        raise AssertionError(f"neither accepted connections at {self.probe} nor exited within "
                             f"{DEADLINE} s: {self.describe()}")

    def conn(self, probe=None):
        return connect(probe or self.probe)

    def stop(self, sig=signal.SIGTERM):
        """Signal the server and wait for it (killed after STOP_SECONDS): its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            poke(self.probe)
            try:
                self.proc.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"did not exit within {STOP_SECONDS} s of "
                                     f"{signal.Signals(sig).name}: {self.describe()}") from None
        return self.proc.returncode

    def close(self):
        self.out.close()
        self.err.close()


class Launcher:
    """launch(*args) -> a started Proc (or the test fails); launch.refused(*args) -> a Proc
    that exited without serving (or the test fails); launch.attempt(*args) -> either.

    With base=True (the default) the command line starts with -p <free port> -U 0 -l
    127.0.0.1 and the test's arguments follow (a later -p overrides; a later -l adds).
    """

    def __init__(self, kv, scratch):
        self.path, self.is_memcached = kv
        self.scratch = scratch
        self.procs = []
        self.daemon_cmds = []

    def command(self, args, base=True):
        cmd = [str(self.path)]
        if self.is_memcached and os.geteuid() == 0:
            cmd += ["-u", "root"]
        port = None
        if base:
            port = free_port()
            cmd += ["-p", str(port), "-U", "0", "-l", HOST]
        return cmd + [str(a) for a in args], port

    def attempt(self, *args, base=True, probe=None, preexec=None):
        cmd, port = self.command(args, base)
        if probe is None:
            assert port is not None, "a probe is needed without the base arguments"
            probe = ("tcp", (HOST, port))
        p = Proc(cmd, probe, preexec)
        p.port = port
        self.procs.append(p)
        p.started = p.wait_ready()
        return p

    def __call__(self, *args, **kw):
        p = self.attempt(*args, **kw)
        if not p.started:
            pytest.fail(f"refused to start: {p.describe()}", pytrace=False)
        return p

    def refused(self, *args, **kw):
        p = self.attempt(*args, **kw)
        if p.started:
            text = p.describe()
            p.proc.kill()     # the test has failed already: no graceful stop to check
            p.proc.wait()
            pytest.fail(f"started, where a refusal was expected: {text}", pytrace=False)
        return p

    def cleanup(self):
        errors = []
        for p in self.procs:
            if p.rc is None:
                try:
                    rc = p.stop()
                    if rc != 0:
                        errors.append(f"exited with status {rc} after SIGTERM (expected 0): "
                                      f"{p.describe()}")
                except AssertionError as e:
                    errors.append(str(e))
            p.close()
        for cmd in self.daemon_cmds:
            for pid in pids_running(cmd):
                os.kill(pid, signal.SIGTERM)
                try:
                    poll(lambda: proc_status(pid) is None, f"daemon {pid} to exit", STOP_SECONDS)
                except AssertionError:
                    os.kill(pid, signal.SIGKILL)
                    errors.append(f"daemon {pid} ({' '.join(cmd)}) was still running at the "
                                  f"end of the test")
        return errors


@pytest.fixture
def scratch():
    d = Path(tempfile.mkdtemp(prefix="kv-options-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def launch(kv, scratch):
    launcher = Launcher(kv, scratch)
    yield launcher
    errors = launcher.cleanup()
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)


def needs_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (switching users)")


def memcache_user():
    try:
        return pwd.getpwnam("memcache")
    except KeyError:
        pytest.skip("no user memcache here")


def memcache_pidfile(scratch):
    """A pid file path in a directory user memcache owns (as /run/memcached); needs root."""
    needs_root()
    user = memcache_user()
    rundir = scratch / "run"
    rundir.mkdir()
    scratch.chmod(0o755)
    os.chown(rundir, user.pw_uid, user.pw_gid)
    return rundir / "memcached.pid"


# ---------- -h, -V, -i ----------

# Nothing memcached 1.6.18 has as an option is refused now (the binary protocol, SASL and the
# memory file are built), so -h names every option.
LOCUS_REFUSED_SHORT, LOCUS_REFUSED_LONG = set(), set()


def test_help_lists_every_memcached_option(kv):
    rc, out, err = run(kv, "-h")
    assert rc == 0, out + err
    want_short = MEMCACHED_SHORT if kv[1] else MEMCACHED_SHORT - LOCUS_REFUSED_SHORT
    want_long = MEMCACHED_LONG if kv[1] else MEMCACHED_LONG - LOCUS_REFUSED_LONG
    short = set(re.findall(r"^\s*-([A-Za-z])\b", out, re.M))
    assert not want_short - short, (
        f"-h does not list memcached's -{' -'.join(sorted(want_short - short))}")
    longs = {name.replace("_", "-") for name in re.findall(r"--([a-z][a-z_-]*)", out)}
    assert not want_long - longs, (
        f"-h does not list memcached's --{' --'.join(sorted(want_long - longs))}")


@pytest.mark.locus_only
def test_help_names_what_acts(kv):
    """-h names TLS, SASL, the binary protocol and the memory file, which act, and nothing
    refused (memcached's test suite reads -h to learn what is built in)."""
    rc, out, err = run(kv, "-h")
    assert rc == 0, out + err
    assert "(refused)" not in out
    assert "--enable-ssl" in out and "ssl_chain_cert" in out and "--auth-file" in out
    assert "--enable-sasl" in out and "binary" in out and "--memory-file" in out


def test_version_and_license_exit_0(kv):
    rc, out, err = run(kv, "-V")
    assert rc == 0 and not err, (rc, out, err)
    name = "memcached" if kv[1] else "locus-kv"
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].split()[0] == name and len(lines[0].split()) == 2, out
    rc, out, err = run(kv, "-i")
    assert rc == 0, (rc, out, err)
    assert out.strip(), "-i printed nothing"


# ---------- Debian's service command line: -m -p -u -l -c -t -P -v ----------

def test_debian_service_command_line(kv, launch, scratch):
    """/etc/memcached.conf as Debian's service runs it, started as root: the server runs as
    user memcache and writes its pid file (in a directory memcache owns, as /run/memcached)."""
    pidfile = memcache_pidfile(scratch)
    user = memcache_user()
    port = free_port()
    s = launch("-m", "64", "-p", port, "-u", "memcache", "-l", HOST, "-c", "1024", "-t", "4",
               "-P", pidfile, "-v", base=False, probe=("tcp", (HOST, port)))
    with s.conn() as c:
        serves(c)
        st = c.stats("settings")
    assert st["maxbytes"] == str(64 << 20) and st["maxconns"] == "1024"
    assert st["num_threads"] == "4" and st["tcpport"] == str(port) and st["verbosity"] == "1"
    assert poll(lambda: read_pid(pidfile), "the pid file") == s.pid
    status = proc_status(s.pid)
    assert status["Uid"].split() == [str(user.pw_uid)] * 4, status["Uid"]
    assert status["Gid"].split() == [str(user.pw_gid)] * 4, status["Gid"]
    assert s.stop() == 0, s.describe()
    if kv[1]:
        # memcached removes its pid file only when it daemonized (-d)
        assert pidfile.exists()
    else:
        assert not pidfile.exists(), "the pid file was left behind"


def test_sigterm_as_soon_as_it_listens_is_a_clean_stop(kv, launch, scratch):
    """A service manager may stop the server the moment it accepts connections: that is
    still a graceful stop, with status 0 (and locus-kv's pid file removed)."""
    for i in range(3):
        pidfile = scratch / f"kv{i}.pid"
        cmd, port = launch.command(["-P", pidfile])
        s = Proc(cmd, ("tcp", (HOST, port)))
        launch.procs.append(s)
        # no pause between attempts: the signal comes the moment the port accepts
        end = time.monotonic() + DEADLINE
        while refuses_connections_fast((HOST, port)):
            assert s.rc is None and time.monotonic() < end, f"did not start: {s.describe()}"
        rc = s.stop()
        assert rc == 0, f"status {rc} after SIGTERM: {s.describe()}"
        if not kv[1]:
            assert not pidfile.exists(), "the pid file was left behind"


def test_unknown_user_is_refused(launch):
    needs_root()
    p = launch.refused("-u", "nosuchuser")
    assert "can't find the user nosuchuser to switch to" in p.stderr(), p.describe()
    assert p.rc == 67, p.describe()   # EX_NOUSER


def test_pid_file_warns_about_a_running_pid(launch, scratch):
    pidfile = scratch / "kv.pid"
    pidfile.write_text(f"{os.getpid()}\n")
    s = launch("-P", pidfile)
    assert poll(lambda: read_pid(pidfile) == s.pid, "the server's pid in the pid file")
    assert s.stop() == 0
    assert (f"WARNING: The pid file contained the following (running) pid: {os.getpid()}"
            in s.output()), s.describe()


# ---------- -d ----------

def test_daemon_detaches_serves_and_removes_its_pid_file(launch, scratch):
    port = free_port()
    pidfile = scratch / "kv.pid"
    cmd, _ = launch.command(["-d", "-p", port, "-U", "0", "-l", HOST, "-P", pidfile], base=False)
    launch.daemon_cmds.append(cmd)
    with tempfile.TemporaryFile() as out:
        starter = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            rc = starter.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            starter.kill()
            starter.wait()
            raise AssertionError("-d: the command did not return") from None
        out.seek(0)
        text = out.read().decode(errors="replace")
    assert rc == 0, f"-d: status {rc}; output:\n{text}"
    pid = poll(lambda: read_pid(pidfile), "the daemon's pid file")
    assert pid != starter.pid
    status = proc_status(pid)
    assert status, f"the pid file names {pid}, which is not running"
    assert int(status["PPid"]) != os.getpid(), "the daemon is a child of the test"
    with open(f"/proc/{pid}/stat") as f:
        session = int(f.read().rsplit(")", 1)[1].split()[3])
    assert session == pid, "the daemon does not lead its own session"
    with poll(lambda: try_connect(("tcp", (HOST, port))), "the daemon to accept") as c:
        serves(c)
        assert c.stats()["pid"] == str(pid)
    os.kill(pid, signal.SIGTERM)
    poke(("tcp", (HOST, port)))
    poll(lambda: proc_status(pid) is None, f"the daemon {pid} to exit after SIGTERM")
    poll(lambda: not pidfile.exists(), "the daemon's pid file to be removed")


@pytest.mark.locus_only
def test_daemon_reports_a_port_in_use_before_detaching(launch, scratch):
    """memcached forks before it binds, so -d returns 0 even when the port is taken;
    locus-kv binds first and says so on the terminal, with a nonzero status."""
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        cmd, _ = launch.command(["-d", "-p", port, "-U", "0", "-l", HOST,
                                 "-P", scratch / "kv.pid"], base=False)
        launch.daemon_cmds.append(cmd)
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=DEADLINE)
    assert r.returncode != 0, r
    assert "in use" in r.stderr.lower(), r.stderr


# ---------- -s, -a ----------

@pytest.mark.parametrize("mask", [None, "0766"])
def test_unix_socket(kv, launch, scratch, mask):
    """-s: the server listens on the socket only (not on -p); -a: the file's mode (700)."""
    path = scratch / "kv.sock"
    port = free_port()
    args = ["-s", path, "-p", port] + (["-a", mask] if mask else [])
    s = launch(*args, base=False, probe=("unix", path))
    st_mode = os.stat(path).st_mode
    assert stat.S_ISSOCK(st_mode)
    assert stat.S_IMODE(st_mode) == int(mask or "0700", 8), oct(stat.S_IMODE(st_mode))
    with s.conn() as c:
        serves(c)
    assert refuses_connections((HOST, port)), "-s: still listening on TCP"
    assert s.stop() == 0
    if kv[1]:
        assert path.exists()     # memcached leaves its socket file behind
    else:
        assert not path.exists(), "the socket file was left behind"


def test_unix_socket_replaces_a_stale_socket_file(launch, scratch):
    path = scratch / "kv.sock"
    with socket.socket(socket.AF_UNIX) as stale:
        stale.bind(str(path))
    s = launch("-s", path, base=False, probe=("unix", path))
    with s.conn() as c:
        serves(c)


def test_unix_socket_over_a_regular_file_is_refused(launch, scratch):
    path = scratch / "kv.sock"
    path.write_text("not a socket")
    p = launch.refused("-s", path, base=False, probe=("unix", path))
    assert p.rc != 0 and p.output().strip(), p.describe()
    assert path.read_text() == "not a socket"


def test_unix_socket_in_stats_settings(launch, scratch):
    path = scratch / "kv.sock"
    s = launch("-s", path, "-a", "0766", base=False, probe=("unix", path))
    with s.conn() as c:
        st = c.stats("settings")
    got = {k: st.get(k) for k in ("domain_socket", "umask")}
    assert got == {"domain_socket": str(path), "umask": "766"}


# ---------- -l, -p, -b ----------

@pytest.mark.parametrize("form", ["comma", "repeated"])
def test_listen_on_several_addresses(launch, form):
    port = free_port()
    listen = (["-l", "127.0.0.1,127.0.0.2"] if form == "comma"
              else ["-l", "127.0.0.1", "-l", "127.0.0.2"])
    s = launch("-p", port, "-U", "0", *listen, base=False, probe=("tcp", (HOST, port)))
    for host in ("127.0.0.1", "127.0.0.2"):
        with s.conn(("tcp", (host, port))) as c:
            serves(c, f"k{host}")
    assert refuses_connections(("127.0.0.3", port)), "listening beyond the -l addresses"
    with s.conn() as c:
        assert c.stats("settings")["inter"] == "127.0.0.1,127.0.0.2"


def test_listen_host_port_form(launch):
    """-l host:port listens on that port, not on -p's; stats settings still reports -p."""
    port, other = free_port(), free_port()
    s = launch("-p", port, "-U", "0", "-l", f"127.0.0.1:{other}", base=False,
               probe=("tcp", (HOST, other)))
    with s.conn() as c:
        serves(c)
        st = c.stats("settings")
    assert refuses_connections((HOST, port)), "also listening on -p's port"
    assert st["inter"] == f"127.0.0.1:{other}" and st["tcpport"] == str(port)


def test_listen_host_port_pairs(launch):
    p1, p2 = free_port(), free_port()
    s = launch("-U", "0", "-l", f"127.0.0.1:{p1},127.0.0.2:{p2}", base=False,
               probe=("tcp", (HOST, p1)))
    with s.conn(("tcp", ("127.0.0.2", p2))) as c:
        serves(c)
    assert refuses_connections(("127.0.0.2", p1)) and refuses_connections(("127.0.0.1", p2))


def test_listen_ipv6_loopback(launch):
    if not ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    port, v6port = free_port(), free_port()
    s = launch("-p", port, "-U", "0", "-l", f"[::1]:{v6port}", base=False,
               probe=("tcp", ("::1", v6port)))
    with s.conn() as c:
        serves(c)
    assert refuses_connections((HOST, v6port)) and refuses_connections((HOST, port))


def test_listen_same_address_twice(launch):
    """memcached ignores a -l it already has (as Debian's memcached.conf plus a second -l
    127.0.0.1 would give): the server starts and listens once."""
    port = free_port()
    s = launch("-p", port, "-U", "0", "-l", HOST, "-l", HOST, base=False,
               probe=("tcp", (HOST, port)))
    with s.conn() as c:
        serves(c)
        assert c.stats("settings")["inter"] == HOST


def test_listen_backlog(launch):
    if not shutil.which("ss"):
        pytest.skip("no ss here to read a listen backlog")
    s = launch("-b", "16")
    assert listen_backlog(s.port) == {16}
    s2 = launch()
    assert listen_backlog(s2.port) == {1024}


def test_port_in_use_is_refused(launch):
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        p = launch.refused("-p", port)
    assert p.rc != 0 and "in use" in p.output().lower(), p.describe()


# ---------- options that start a server that serves ----------

START_AND_SERVE = [
    ["-M"], ["-L"], ["-k"], ["-r"], ["-D", ":"], ["-X"], ["-W"], ["-N", "1"], ["-R", "5"],
    ["-C"], ["-F"], ["-A"], ["-B", "ascii"], ["-B", "auto"], ["-b", "16"], ["-U", "0"],
    ["-t", "1"], ["-c", "64"], ["-f", "1.5"], ["-n", "64"], ["-m", "2"], ["-vv"],
    ["-I", "2m"], ["-m", "4096", "-I", "1024m"],
]


@pytest.mark.parametrize("args", START_AND_SERVE, ids=" ".join)
def test_option_starts_and_serves(launch, args):
    s = launch(*args)
    with s.conn() as c:
        # a pipeline of commands is answered in full (-R limits only how many run per event)
        c.send("".join(f"set p{i} 0 0 1\r\n{i % 10}\r\n" for i in range(40)))
        c.expect("STORED\r\n" * 40)
        c.send("".join(f"get p{i}\r\n" for i in range(40)))
        c.expect("".join(f"VALUE p{i} 0 1\r\n{i % 10}\r\nEND\r\n" for i in range(40)))


LONG_FORMS = ["--threads=2", "--conn-limit=64", "--memory-limit=8", "--max-item-size=2m",
              "--disable-flush-all", "--listen-backlog=16", "--verbose"]


def test_long_options(launch, kv):
    port = free_port()
    user = ["--user=root"] if kv[1] and os.geteuid() == 0 else []
    s = launch(*user, f"--port={port}", "--udp-port=0", f"--listen={HOST}", *LONG_FORMS,
               base=False, probe=("tcp", (HOST, port)))
    with s.conn() as c:
        serves(c)
        c.call("flush_all\r\n", "CLIENT_ERROR flush_all not allowed\r\n")
        st = c.stats("settings")
    got = {k: st[k] for k in ("num_threads", "maxconns", "maxbytes", "item_size_max",
                              "verbosity", "tcpport")}
    assert got == {"num_threads": "2", "maxconns": "64", "maxbytes": str(8 << 20),
                   "item_size_max": str(2 << 20), "verbosity": "1", "tcpport": str(port)}


def test_lock_memory(launch):
    s = launch("-k")
    locked = int(proc_status(s.pid)["VmLck"].split()[0])
    assert locked > 0 or "mlockall() failed" in s.output(), s.describe()


def test_lock_memory_as_user_memcache(launch, scratch):
    """-k with -u memcache (Debian's memcached.conf has -k commented out): the user's locked
    memory limit is small, so mlockall fails; the server says so and serves, and its pid file
    names it."""
    pidfile = memcache_pidfile(scratch)
    s = launch("-k", "-u", "memcache", "-P", pidfile)
    with s.conn() as c:
        serves(c)
    assert poll(lambda: read_pid(pidfile), "the pid file") == s.pid
    locked = int(proc_status(s.pid)["VmLck"].split()[0])
    assert locked > 0 or "mlockall() failed" in s.output(), s.describe()


def test_enable_coredumps_raises_the_core_limit(launch):
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    if hard == 0:
        pytest.skip("the hard core file limit is 0 here")

    def no_core():
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))

    def core_limits(pid):
        with open(f"/proc/{pid}/limits") as f:
            line = next(x for x in f if x.startswith("Max core file size"))
        return line.split()[4:6]    # soft, hard

    assert core_limits(launch(preexec=no_core).pid)[0] == "0"
    soft, hard_now = core_limits(launch("-r", preexec=no_core).pid)
    assert soft != "0" and soft == hard_now, (soft, hard_now)


def test_disable_flush_all(launch):
    s = launch("-F")
    with s.conn() as c:
        assert c.set("keep", "v") == b"STORED\r\n"
        c.call("flush_all\r\n", "CLIENT_ERROR flush_all not allowed\r\n")
        c.call("flush_all 0\r\n", "CLIENT_ERROR flush_all not allowed\r\n")
        c.send("flush_all noreply\r\n")
        assert c.get("keep") == b"v"


def test_shutdown_command_needs_enable_shutdown(launch):
    with launch().conn() as c:
        c.call("shutdown\r\n", "ERROR: shutdown not enabled\r\n")
    s = launch("-A")
    with s.conn() as c:
        c.call("shutdown bogus\r\n", "CLIENT_ERROR invalid shutdown mode\r\n")
        c.send("shutdown\r\n")
        assert c.closed()
    poke(s.probe)
    poll(lambda: s.rc is not None, "the server to exit after shutdown")
    assert s.rc == 0, s.describe()


def test_disable_evictions_refuses_stores_when_full(launch):
    """-M: once memory is full a set fails with memcached's out-of-memory error, and the
    items stored earlier stay."""
    s = launch("-m", "2", "-M")
    value = "x" * 100000
    with s.conn() as c:
        for i in range(200):
            reply = c.set(f"k{i}", value)
            if reply != b"STORED\r\n":
                break
        assert reply == b"SERVER_ERROR out of memory storing object\r\n", (i, reply)
        assert c.get("k0") == value.encode()


def test_disable_cas(launch):
    """-C: items carry no CAS value: gets reports 0."""
    with launch("-C").conn() as c:
        assert c.set("a", "x") == b"STORED\r\n"
        c.call("gets a\r\n", "VALUE a 0 1 0\r\nx\r\nEND\r\n")


def test_udp_port_0_is_off(launch):
    s = launch("-U", "0")
    with s.conn() as c:
        assert c.stats("settings")["udpport"] == "0"


def test_udp_get(launch):
    """-U <port>: a get over UDP, each datagram framed by memcached's 8-byte header
    (request id, sequence number, datagram count, reserved)."""
    udp = free_port()
    s = launch("-U", udp)
    with s.conn() as c:
        assert c.set("u", "hello") == b"STORED\r\n"
        assert c.stats("settings")["udpport"] == str(udp)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(REPLY_SECONDS)
        u.sendto(struct.pack("!HHHH", 4242, 0, 1, 0) + b"get u\r\n", (HOST, udp))
        data = u.recv(65536)
    assert struct.unpack("!HHHH", data[:8]) == (4242, 0, 1, 0), data[:8]
    assert data[8:] == b"VALUE u 0 5\r\nhello\r\nEND\r\n", data


# ---------- stats settings ----------

DEFAULT_SETTINGS = {
    "maxbytes": str(64 << 20), "maxconns": "1024", "udpport": "0", "verbosity": "0",
    "evictions": "on", "cas_enabled": "yes", "flush_enabled": "yes", "shutdown_command": "no",
    "tcp_backlog": "1024", "item_size_max": str(1 << 20), "growth_factor": "1.25",
    "chunk_size": "48", "num_threads": "4", "lru_crawler": "yes",
}

SETTINGS_CASES = [
    ([], DEFAULT_SETTINGS),
    (["-c", "100"], {"maxconns": "100"}),
    (["-v"], {"verbosity": "1"}),
    (["-vv"], {"verbosity": "2"}),
    (["-t", "2"], {"num_threads": "2"}),
    (["-m", "8"], {"maxbytes": str(8 << 20)}),
    (["-I", "2m"], {"item_size_max": str(2 << 20)}),
    (["-f", "1.5"], {"growth_factor": "1.50"}),
    (["-n", "64"], {"chunk_size": "64"}),
    (["-M"], {"evictions": "off"}),
    (["-C"], {"cas_enabled": "no"}),
    (["-F"], {"flush_enabled": "no"}),
    (["-A"], {"shutdown_command": "yes"}),
    (["-b", "16"], {"tcp_backlog": "16"}),
    (["-o", "no_lru_crawler"], {"lru_crawler": "no"}),
]


@pytest.mark.parametrize("args,want", SETTINGS_CASES,
                         ids=[" ".join(a) or "defaults" for a, _ in SETTINGS_CASES])
def test_stats_settings_follow_the_options(launch, args, want):
    s = launch(*args)
    with s.conn() as c:
        st = c.stats("settings")
    want = {"tcpport": str(s.port), "inter": HOST, **want}
    got = {k: st.get(k, "<missing>") for k in want}
    assert got == want


# ---------- -I ----------

I_REFUSED = [
    # (args, memcached's message, when locus-kv is meant to print it too)
    (["-I", "1000"], "Item max size cannot be less than 1024 bytes."),
    (["-I", "0"], "Item max size cannot be less than 1024 bytes."),
    (["-I", "abc"], None),
    (["-I", "2g"], None),          # memcached: no g suffix: 2 bytes, "less than 1024 bytes"
    (["-m", "4096", "-I", "1g"], None),
    (["-m", "4", "-I", "4m"], "Cannot set item size limit higher than 1/2 of memory max"),
    (["-I", "1g"], None),
    (["-m", "4096", "-I", "1025m"], "Cannot set item size limit higher than a gigabyte."),
    # memcached: -I must be a multiple of its slab chunk size (512k by default), and at least it
    (["-I", "1023k"], None),
    (["-I", "1500k"], None),
    (["-I", "100k"], None),
    (["-I", "1k"], None),
    (["-I", "1024"], None),
]


@pytest.mark.parametrize("args,message", I_REFUSED, ids=[" ".join(a) for a, _ in I_REFUSED])
def test_item_size_refused(launch, args, message):
    p = launch.refused(*args)
    assert p.rc == 64, p.describe()    # EX_USAGE, as memcached
    assert p.stderr().strip(), f"refused without a message: {p.describe()}"
    if message:
        assert message in p.stderr(), p.describe()


I_STARTS = [(["-I", "512k"], 512 << 10), (["-I", "2m"], 2 << 20), (["-I", "3m"], 3 << 20),
            (["-m", "1", "-I", "512k"], 512 << 10), (["-m", "2", "-I", "1m"], 1 << 20),
            (["-m", "4096", "-I", "1024m"], 1 << 30), (["-I", "1048576"], 1 << 20)]


@pytest.mark.parametrize("args,size", I_STARTS, ids=[" ".join(a) for a, _ in I_STARTS])
def test_item_size_accepted(launch, args, size):
    with launch(*args).conn() as c:
        assert c.stats("settings")["item_size_max"] == str(size)


# ---------- -o ----------

EXTENDED_START = ["modern", "hashpower=20", "slab_reassign", "slab_automove=1", "lru_crawler",
                  "no_lru_crawler", "lru_maintainer", "idle_timeout=10", "maxconns_fast",
                  "tail_repair_time=10", "no_modern", "hash_algorithm=xxh3", "track_sizes",
                  "modern,slab_reassign,slab_automove=1,hashpower=20"]


@pytest.mark.parametrize("opts", EXTENDED_START)
def test_extended_option_starts(launch, opts):
    with launch("-o", opts).conn() as c:
        serves(c)


@pytest.mark.parametrize("opts,shown", [("bogus", "bogus"), ("bogus=3", "bogus=3"),
                                        ("item_size_max=2m", "item_size_max=2m"),
                                        ("modern,bogus", "bogus")])
def test_unknown_extended_option_refused_as_memcached(launch, opts, shown):
    """memcached 1.6 has no -o item_size_max (that was 1.4's); an unknown name: its words on
    stderr, status 1."""
    p = launch.refused("-o", opts)
    assert p.rc == 1, p.describe()
    assert f'Illegal suboption "{shown}"' in p.stderr(), p.describe()


@pytest.mark.parametrize("opts", ["tail_repair_time=0", "hashpower", "hashpower=5",
                                  "hashpower=33", "slab_automove=3", "hash_algorithm=foo",
                                  "lru_crawler_sleep=2000000", "hot_lru_pct=90",
                                  "slab_automove_window=2", "temporary_ttl"])
def test_bad_extended_value_refused(launch, opts):
    p = launch.refused("-o", opts)
    assert p.rc != 0 and p.stderr().strip(), p.describe()


@pytest.mark.parametrize("opts,message", [
    ("hot_lru_pct=50,warm_lru_pct=40", "hot_lru_pct + warm_lru_pct cannot be more than 80% combined"),
    ("no_lru_maintainer,temporary_ttl=30", "temporary_ttl requires lru_maintainer to be enabled"),
    ("temporary_ttl=30,no_modern", "temporary_ttl requires lru_maintainer to be enabled")])
def test_lru_settings_refused_as_memcached(launch, opts, message):
    """The LRU settings memcached checks together, with its words and status 64."""
    p = launch.refused("-o", opts)
    assert p.rc == 64 and message in p.stderr(), p.describe()


@pytest.mark.parametrize("opts", ["lru_segmented", "no_lru_segmented"])
def test_lru_segmented_is_not_an_extended_option(launch, opts):
    """memcached 1.6.18 has no -o lru_segmented (lru_maintainer and "lru mode" set it)."""
    p = launch.refused("-o", opts)
    assert p.rc == 1 and f'Illegal suboption "{opts}"' in p.stderr(), p.describe()


@pytest.mark.locus_only
@pytest.mark.parametrize("opts,why", [("ext_path={scratch}/extstore:64m", "extstore"),
                                      ("ext_page_size=8", "extstore")])
def test_extstore_extended_options_refused(launch, scratch, opts, why):
    """Debian's memcached has extstore built in and takes these; locus-kv has none and says
    so. (TLS's ssl_* act: test_tls.py.)"""
    p = launch.refused("-o", opts.format(scratch=scratch))
    assert p.rc != 0, p.describe()
    assert opts.split("=")[0] in p.stderr() and why in p.stderr(), p.describe()


@pytest.mark.locus_only
def test_accepted_options_are_noted_under_verbose(launch):
    """Options locus-kv takes without acting on them each get a note under -v, none without."""
    noted = [["-L"], ["-N", "1"]]
    flat = [a for opt in noted for a in opt]
    quiet = launch(*flat)
    assert quiet.stop() == 0
    assert "note" not in quiet.output(), quiet.describe()
    loud = launch("-v", *flat, "-o", "modern")
    assert loud.stop() == 0
    notes = [line for line in loud.output().splitlines() if "note" in line]
    for opt in [o[0] for o in noted] + ["-o"]:
        assert any(f"{opt}:" in line for line in notes), f"no note for {opt}: {notes}"


# ---------- bad values ----------

BOTH_REFUSE = [
    ["-p", "70000"], ["-t", "0"], ["-t", "abc"], ["-c", "-1"], ["-c", "0"], ["-m", "0"],
    ["-m", "abc"], ["-f", "0.5"], ["-f", "abc"], ["-n", "0"], ["-n", "abc"], ["-R", "0"],
    ["-N", "0"], ["-t", "4", "-N", "8"], ["-B", "foo"], ["-q"], ["--no-such-option"],
    ["-p"], ["-D"],
]


@pytest.mark.parametrize("args", BOTH_REFUSE, ids=" ".join)
def test_bad_value_refused(launch, args):
    p = launch.refused(*args)
    assert p.rc != 0, p.describe()
    assert p.stderr().strip(), f"refused without a message: {p.describe()}"


@pytest.mark.parametrize("listen", [
    "192.0.2.1", "127.0.0.1:abc", "[::1",
    # memcached hands the port to getaddrinfo, which takes 70000 (as 70000 - 65536)
    pytest.param("127.0.0.1:70000", marks=pytest.mark.locus_only),
])
def test_bad_listen_address_refused(launch, listen):
    """An address that cannot be listened on (192.0.2.1 is not this host's) or read."""
    port = free_port()
    p = launch.refused("-p", port, "-U", "0", "-l", listen, base=False,
                       probe=("tcp", (HOST, port)))
    assert p.rc != 0, p.describe()
    assert p.stderr().strip(), f"refused without a message: {p.describe()}"


MEMCACHED_TAKES_GARBAGE = [
    # memcached reads these with atoi/strtol and carries on
    (["-p", "abc"], "-p"), (["-p", "-2"], "-p"), (["-U", "abc"], "-U"), (["-U", "70000"], "-U"),
    (["-b", "abc"], "-b"), (["-a", "xyz"], "-a"), (["extra"], "extra"),
]


@pytest.mark.locus_only
@pytest.mark.parametrize("args,named", MEMCACHED_TAKES_GARBAGE,
                         ids=[" ".join(a) for a, _ in MEMCACHED_TAKES_GARBAGE])
def test_garbage_memcached_takes_is_refused(launch, args, named):
    p = launch.refused(*args)
    assert p.rc == 64, p.describe()
    assert named in p.stderr(), p.describe()
