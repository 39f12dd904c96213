"""A memcached-compatible server started for a benchmark or a test, and read from outside.

locus-kv and Debian's memcached take the same options, so one start() serves both: it
picks a free port on 127.0.0.1, starts the server there (memcached with -u root when this
runs as root, since it refuses to run as root otherwise) and waits until the port accepts
a connection. A free port can be taken by another process before the server binds it, so
a server that exits saying the port is in use is started again on another one; any other
early exit is a refusal and raises ServerError with what the server printed.

Standard library only: the benchmarks and the test harnesses (tests/kv, tests/preload)
run with the system's python3 as well as with the project's venv.
"""

import os
import signal
import socket
import subprocess
import tempfile
import time

HOST = "127.0.0.1"
START_SECONDS = 10.0  # how long a server may take to accept its first connection
STOP_SECONDS = 30.0  # how long it may take to exit once signalled, before it is killed
ATTEMPTS = 3  # starts on fresh ports after losing a race for one


class ServerError(Exception):
    """A server did not start or stop as it should. argv: its command line; status: its
    exit status (None while it ran, or if it had to be killed); output: what it printed."""

    def __init__(self, message, output="", argv=(), status=None):
        super().__init__(message)
        self.output, self.argv, self.status = output, list(argv), status


def free_port(host=HOST):
    """A TCP port nothing listens on at this moment."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_answering(proc, port, seconds=START_SECONDS, host=HOST):
    """True once port accepts a connection; False if proc exits first or seconds pass."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.02)
    return False


def stop(proc, seconds=STOP_SECONDS, sig=signal.SIGTERM):
    """Signals proc (unless it has exited) and waits: its exit status, or None if it did
    not exit within seconds and was killed."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def command(path, port, args=(), memcached=False):
    """The command line of a server listening on HOST:port (TCP only) with args after."""
    argv = [str(path), "-l", HOST, "-p", str(port), "-U", "0", *map(str, args)]
    if memcached and os.geteuid() == 0:
        argv += ["-u", "root"]
    return argv


class Server:
    """One started server: argv, port, proc (its Popen), and what it printed."""

    def __init__(self, argv, port, proc, log, path, args, memcached):
        self.argv, self.port, self.proc = argv, port, proc
        self.path, self.args, self.memcached = path, args, memcached
        self._log, self._text = log, None
        self.tls_context = None  # an ssl.SSLContext when the port speaks TLS (-Z)

    @property
    def pid(self):
        return self.proc.pid

    @property
    def addr(self):
        return (HOST, self.port)

    def alive(self):
        return self.proc.poll() is None

    def output(self):
        """Everything the server has printed (stdout and stderr) so far."""
        if self._text is not None:
            return self._text
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def close(self):
        """Keeps the output and closes the file it was written to (once the server is gone)."""
        if self._text is None:
            self._text = self.output()
            self._log.close()

    def stop(self, sig=signal.SIGTERM, seconds=STOP_SECONDS):
        """Signals the server and waits: its exit status, or None if it had to be killed.
        Its output stays readable."""
        status = stop(self.proc, seconds, sig)
        self.close()
        return status

    def stats(self, sub=""):
        return read_stats(self.port, sub, context=self.tls_context)


def _log_file(path):
    """A file for a server's output, appended to so that reading it while the server
    writes (the two share one offset) loses nothing: at path, emptied, or anonymous."""
    if path is None:
        return tempfile.TemporaryFile(mode="a+b")
    open(path, "wb").close()
    return open(path, "a+b")


def start(path, args=(), *, memcached=False, env=None, preexec_fn=None, log=None,
          seconds=START_SECONDS, attempts=ATTEMPTS, server_class=Server):
    """Starts the server at path with args on a free port and waits until it answers.

    memcached: it is Debian's memcached (or one like it); env, preexec_fn: as for Popen;
    log: a path for its output (emptied at each start), else an anonymous file;
    server_class: Server or a subclass to return. Raises ServerError if it exits first
    (unless the port was in use: then it is started again on another, `attempts` times in
    all), or does not answer within `seconds` (then it is killed)."""
    args = [str(a) for a in args]
    output = ""
    for _ in range(attempts):
        port = free_port()
        argv = command(path, port, args, memcached)
        logf = _log_file(log)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf,
                                stderr=subprocess.STDOUT, env=env, preexec_fn=preexec_fn)
        server = server_class(argv, port, proc, logf, path, args, memcached)
        if wait_answering(proc, port, seconds):
            return server
        running = proc.poll() is None
        status = stop(proc, 5)
        server.close()
        output = server.output()
        if running:
            raise ServerError(f"{' '.join(argv)} did not accept connections within {seconds} s; "
                              f"output:\n{output}", output, argv, None)
        if "in use" not in output.lower():
            raise ServerError(f"{' '.join(argv)} exited with status {status}; output:\n{output}",
                              output, argv, status)
    raise ServerError(f"could not find a free port: {output}", output, argv, None)


def read_stats(port, sub="", host=HOST, timeout=10, context=None):
    """The reply to `stats SUB` as {name: text}; {} if the server cannot be reached.
    context: an ssl.SSLContext to talk TLS with (a port of a server started with -Z)."""
    data = b""
    try:
        with socket.create_connection((host, port), timeout=timeout) as plain, \
                (context.wrap_socket(plain) if context else plain) as s:
            s.sendall(f"stats {sub}".strip().encode() + b"\r\n")
            while not data.endswith(b"END\r\n"):
                d = s.recv(65536)
                if not d:
                    break
                data += d
    except OSError:
        return {}
    out = {}
    for line in data.decode(errors="replace").splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


def numbers(stats):
    """The whole-number fields of a stats reply as ints (the others left out)."""
    out = {}
    for name, text in stats.items():
        try:
            out[name] = int(text)
        except ValueError:
            pass
    return out


def cpu_seconds(pid):
    """User + system CPU time of a running process so far (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def rss_kb(pid):
    """A process's resident set size in KiB (VmRSS), or None if /proc does not say."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None
