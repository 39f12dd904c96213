"""A real client library (pymemcache) against the server: what applications will see."""

import pytest
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheClientError, MemcacheIllegalInputError


@pytest.fixture
def client(srv):
    c = Client(srv.addr, connect_timeout=5, timeout=5, default_noreply=False)
    yield c
    c.close()


def test_storage_commands(client):
    assert client.set("a", b"1", expire=0) is True
    assert client.get("a") == b"1"
    assert client.add("a", b"2") is False
    assert client.add("b", b"2") is True
    assert client.replace("a", b"3") is True
    assert client.replace("nope", b"3") is False
    assert client.append("a", b"4") is True
    assert client.prepend("a", b"0") is True
    assert client.get("a") == b"034"
    assert client.get_many(["a", "b", "nope"]) == {"a": b"034", "b": b"2"}


def test_noreply_storage(srv):
    c = Client(srv.addr, timeout=5, default_noreply=True)
    try:
        assert c.set("q", b"v") is True
        assert c.add("q", b"w") is True   # noreply cannot tell; the value shows it
        assert c.get("q") == b"v"
        c.set_many({"x": b"1", "y": b"2"})
        assert c.get_many(["x", "y"]) == {"x": b"1", "y": b"2"}
    finally:
        c.close()


def test_cas_and_gets(client):
    client.set("c", b"1")
    value, cas = client.gets("c")
    assert value == b"1" and cas is not None
    assert client.cas("c", b"2", cas) is True
    assert client.cas("c", b"3", cas) is False
    assert client.cas("nope", b"3", cas) is None
    assert client.get("c") == b"2"
    many = client.gets_many(["c", "nope"])
    assert set(many) == {"c"} and many["c"][0] == b"2"


def test_counters_touch_delete(client):
    client.set("n", b"10")
    assert client.incr("n", 5) == 15
    assert client.decr("n", 20) == 0
    assert client.incr("nope", 1) is None
    assert client.touch("n", 100) is True
    assert client.touch("nope", 100) is False
    assert client.delete("n") is True
    assert client.delete("n") is False
    client.set("t", b"text")
    with pytest.raises(MemcacheClientError, match="non-numeric"):
        client.incr("t", 1)


def test_flush_version_stats(client):
    client.set("f", b"1")
    assert client.flush_all() is True
    assert client.get("f") is None
    assert client.version()
    stats = client.stats()
    assert b"curr_items" in stats or "curr_items" in stats
    settings = client.stats("settings")
    assert settings


def test_client_side_checks_and_big_values(client):
    with pytest.raises(MemcacheIllegalInputError):
        client.set("k" * 251, b"x")
    big = bytes(range(256)) * 2048   # 512 KiB of every byte value
    assert client.set("big", big) is True
    assert client.get("big") == big
    assert client.raw_command("mn", "MN\r\n") == b""   # the reply up to its end
