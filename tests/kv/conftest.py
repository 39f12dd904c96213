"""Fixtures for the locus-kv black-box tests.

The server under test is $LOCUS_KV (default build/release/src/kv/locus-kv) or, with
LOCUS_KV=memcached, Debian's /usr/bin/memcached: the reference every test here passes against,
except those marked locus_only (they skip there). A missing locus-kv fails every test with the
reason; it is never skipped.

  server        a fresh server per test, with `server_args` (default none) after -p/-U/-l;
                override with @pytest.mark.parametrize("server_args", [["-m", "2"]])
  srv           a server shared by the tests of a module, emptied (flush_all) for each test
  start         a factory: start(*args) -> Server, stopped at the end of the test
  sync_server   a server for each --sync configuration in SYNC_CONFIGS (parametrize "sync")
  clock         moves the server's clock: debug_clock_advance on locus-kv (started with
                --debug-commands), real sleeps on memcached

Every server is stopped with SIGTERM and must exit with status 0 within a few seconds.
"""

import time

import pytest

from kvlib import ServerError, start_server, target

# --sync configurations the concurrency tests run under; None is locus-kv's default.
SYNC_CONFIGS = [None, "all=mutex", "all=ttas", "all=oyama", "hash=mcs,alloc=async", "all=ffwd",
                "all=flat", "all=stm"]


def pytest_configure(config):
    config.addinivalue_line("markers", "locus_only: needs locus-kv's extras; skipped against memcached")
    config.addinivalue_line("markers", "sleeps: waits for real seconds against memcached (expiry)")


def pytest_runtest_setup(item):
    if item.get_closest_marker("locus_only") and target()[1]:
        pytest.skip("locus-kv only (LOCUS_KV=memcached)")


@pytest.fixture(scope="session")
def kv():
    """(path, is_memcached) of the server under test; fails if the binary is missing."""
    path, is_memcached = target()
    if not path.exists():
        pytest.fail(f"server under test not found at {path}: build locus-kv (make release), "
                    f"set LOCUS_KV=/path/to/locus-kv, or LOCUS_KV=memcached for the reference",
                    pytrace=False)
    return path, is_memcached


@pytest.fixture
def is_memcached(kv):
    return kv[1]


class Starter:
    """start(*args) -> a running Server (or the test fails with the server's output);
    start.attempt(*args) raises ServerError instead; env= gives the server's environment.
    All are stopped after the test."""

    def __init__(self, kv):
        self.path, self.is_memcached = kv
        self.servers = []

    def attempt(self, *args, env=None):
        s = start_server(self.path, self.is_memcached, args, env=env)
        self.servers.append(s)
        return s

    def __call__(self, *args, env=None):
        try:
            return self.attempt(*args, env=env)
        except ServerError as e:
            pytest.fail(str(e), pytrace=False)

    def stop_all(self):
        errors = []
        for s in self.servers:
            try:
                s.stop()
            except ServerError as e:
                errors.append(str(e))
        return errors


@pytest.fixture
def start(kv):
    starter = Starter(kv)
    yield starter
    errors = starter.stop_all()
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)


@pytest.fixture(scope="module")
def shared_server(kv):
    """One plain server for a whole module (memcached takes a second to stop)."""
    starter = Starter(kv)
    starter()
    yield starter.servers[0]
    errors = starter.stop_all()
    if errors:
        pytest.fail("\n".join(errors), pytrace=False)


@pytest.fixture
def srv(shared_server):
    """The module's shared server, emptied with flush_all; fails if it has died."""
    assert shared_server.alive(), f"the server died; output:\n{shared_server.output()}"
    with shared_server.conn() as c:
        c.call("flush_all\r\n", "OK\r\n")
    return shared_server


@pytest.fixture
def server_args():
    return []


@pytest.fixture
def server(start, server_args):
    return start(*server_args)


@pytest.fixture(params=SYNC_CONFIGS, ids=lambda s: s or "default")
def sync(request):
    return request.param


@pytest.fixture
def sync_server(kv, start, sync):
    if sync is None:
        return start()
    if kv[1]:
        pytest.skip("--sync is locus-kv only")
    try:
        return start.attempt("--sync", sync)
    except ServerError as e:
        out = e.output.lower()
        if sync == "all=stm" and "stm" in out and ("unavailable" in out or "not available" in out):
            pytest.skip(f"this build has no stm: {e.output.strip()}")
        pytest.fail(str(e), pytrace=False)


class Clock:
    """advance(s): at least s seconds pass for the server, so that a ttl of s has surely run out.

    Instantly on locus-kv (debug_clock_advance s+1); on memcached by sleeping s+1.1 s, as its
    clock ticks once a second."""

    def __init__(self, server):
        self.server = server

    def advance(self, seconds):
        if self.server.is_memcached:
            time.sleep(seconds + 1.1)
            return
        with self.server.conn() as c:
            c.call(f"debug_clock_advance {seconds + 1}\r\n", "OK\r\n")


@pytest.fixture
def clock_server(kv, start, server_args):
    extra = [] if kv[1] else ["--debug-commands"]
    return start(*extra, *server_args)


@pytest.fixture
def clock(clock_server):
    return Clock(clock_server)
