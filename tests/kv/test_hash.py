"""The hash table's size, as memcached reports it: 2^16 buckets at the start whatever -m is
(-o hashpower=N: 2^N), doubling once it holds more than 1.5 items per bucket (in the
background: hash_is_expanding says when), never with -o no_hashexpand."""

import time

import pytest

WAIT_SECONDS = 30


def load(c, n, prefix="z"):
    """n empty items, pipelined; returns once the server has run every set."""
    batch = 5000
    for start in range(0, n, batch):
        c.send(b"".join(b"set %s%d 0 0 0 noreply\r\n\r\n" % (prefix.encode(), i)
                        for i in range(start, min(n, start + batch))))
    c.call("version\r\n", "VERSION ")
    c.line()


def wait_level(c, level):
    """The stats once hash_power_level is `level` and no doubling is under way."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        st = c.stats()
        if st["hash_power_level"] == str(level) and st["hash_is_expanding"] == "0":
            return st
        assert time.monotonic() < deadline, f"hash_power_level {st['hash_power_level']}"
        time.sleep(0.05)


@pytest.mark.parametrize("server_args", [["-m", "128"]])
def test_starts_at_16_and_doubles_past_one_and_a_half_per_bucket(server):
    with server.conn() as c:
        st = c.stats()
        assert st["hash_power_level"] == "16"
        assert st["hash_bytes"] == str(8 << 16)
        assert st["hash_is_expanding"] == "0"
        load(c, 3 << 15)  # 1.5 per bucket: not more
        assert c.stats()["hash_power_level"] == "16"
        load(c, 1, prefix="one")
        st = wait_level(c, 17)
        assert st["hash_bytes"] == str(8 << 17)
        for i in range(0, 3 << 15, 997):
            assert c.get(f"z{i}") == b""


@pytest.mark.parametrize("server_args", [["-o", "hashpower=20"]])
def test_hashpower_sets_the_start(server):
    with server.conn() as c:
        st = c.stats()
        assert st["hash_power_level"] == "20" and st["hash_bytes"] == str(8 << 20)
        assert c.stats("settings")["hashpower_init"] == "20"


def test_no_hashexpand_keeps_the_size(start):
    """Beside a server that doubles: once it has, the other still has not."""
    fixed, grows = start("-o", "hashpower=13,no_hashexpand"), start("-o", "hashpower=13")
    with fixed.conn() as f, grows.conn() as g:
        load(f, 13000)
        load(g, 13000)
        wait_level(g, 14)
        st = f.stats()
        assert st["hash_power_level"] == "13" and st["hash_is_expanding"] == "0"
        assert f.get("z12999") == b""
