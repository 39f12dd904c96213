"""The segmented LRU and its maintainer thread, as memcached 1.6.18's: the "lru" command's
replies, the settings it and -o change, items moving between the hot, warm, cold and
temporary segments of a class as it fills, expired items reclaimed by the maintainer without
anyone asking for them, and the statistics named as memcached names them (some only while
the maintainer runs).

The maintainer works in the background, on both servers: a test waits for what it should do
as a condition, with a generous deadline, and never times it."""

import time

import pytest

from test_admin import MEMCACHED_ITEMS_PER_CLASS, reply, wait_for

WAIT_SECONDS = 60.0
LARGE = 66560   # memcached's lru-maintainer.t value: a class of a few chunks per page

# stats lines memcached prints only while its LRU maintainer runs
MAINTAINER_STATS = ["lru_maintainer_juggles", "evicted_active", "moves_to_cold", "moves_to_warm",
                    "moves_within_lru", "direct_reclaims", "lru_bumps_dropped"]
MAINTAINER_ITEMS = ["number_hot", "number_warm", "number_cold", "age_hot", "age_warm",
                    "evicted_active", "moves_to_cold", "moves_to_warm", "moves_within_lru",
                    "direct_reclaims", "hits_to_hot", "hits_to_warm", "hits_to_cold",
                    "hits_to_temp"]


def settings(c):
    return c.stats("settings")


def per_class(c, cls):
    """{field: value} of stats items for one class."""
    prefix = f"items:{cls}:"
    return {k[len(prefix):]: v for k, v in c.stats("items").items() if k.startswith(prefix)}


def item_fields(c):
    """stats items' field names of the first class listed, in order."""
    names = []
    first = None
    for k in c.stats("items"):
        _, cls, field = k.split(":")
        first = first or cls
        if cls == first:
            names.append(field)
    return names


def class_holding(c, key):
    """The class of the one item stored with key's size (stats items after storing it alone)."""
    classes = {k.split(":")[1] for k in c.stats("items")}
    assert len(classes) == 1, classes
    return classes.pop()


def store_large(c, key, exptime=0):
    c.call(b"set %s 0 %d %d\r\n%s\r\n" % (key.encode(), exptime, LARGE, b"B" * LARGE),
           "STORED\r\n")


# ---------- the lru command ----------

def test_lru_mode_replies(server):
    """lru mode flat|segmented: OK, and stats settings' lru_segmented follows; another mode,
    or none, is ERROR; noreply silences the OK."""
    with server.conn() as c:
        assert settings(c)["lru_segmented"] == "yes"
        assert reply(c, "lru mode flat") == b"OK\r\n"
        assert settings(c)["lru_segmented"] == "no"
        assert reply(c, "lru mode segmented") == b"OK\r\n"
        assert settings(c)["lru_segmented"] == "yes"
        for bad in ["lru mode", "lru mode hot", "lru mode FLAT", "lru", "lru foo", "lru foo bar"]:
            assert reply(c, bad) == b"ERROR\r\n", bad
        c.send("lru mode flat noreply\r\n")
        c.call("mn\r\n", "MN\r\n")
        assert settings(c)["lru_segmented"] == "no"


def test_lru_tune_replies(server):
    """lru tune <hot pct> <warm pct> <hot factor> <warm factor>: OK and the settings change;
    memcached's two refusals in its words; a word that is not a number, or too few, ERROR."""
    with server.conn() as c:
        s = settings(c)
        assert (s["hot_lru_pct"], s["warm_lru_pct"], s["hot_max_factor"], s["warm_max_factor"]) \
            == ("20", "40", "0.20", "2.00")
        assert reply(c, "lru tune 10 30 0.5 3.25") == b"OK\r\n"
        s = settings(c)
        assert (s["hot_lru_pct"], s["warm_lru_pct"], s["hot_max_factor"], s["warm_max_factor"]) \
            == ("10", "30", "0.50", "3.25")
        assert reply(c, "lru tune 50 31 0.2 2") == b"ERROR hot and warm pcts must not exceed 80\r\n"
        assert reply(c, "lru tune 20 40 0 2") == \
            b"ERROR hot/warm age factors must be greater than 0\r\n"
        assert reply(c, "lru tune 20 40 0.2 -1") == \
            b"ERROR hot/warm age factors must be greater than 0\r\n"
        for bad in ["lru tune 20 40 x 2", "lru tune 20 -40 0.2 2", "lru tune 20 40 0.2",
                    "lru tune"]:
            assert reply(c, bad) == b"ERROR\r\n", bad
        s = settings(c)
        assert (s["hot_lru_pct"], s["warm_lru_pct"]) == ("10", "30"), "a refusal changed them"


def test_lru_temp_ttl_replies(server):
    """lru temp_ttl <ttl>: OK, the temporary LRU on with that ttl; a negative ttl turns it off;
    a word that is not a number is ERROR."""
    with server.conn() as c:
        assert (settings(c)["temp_lru"], settings(c)["temporary_ttl"]) == ("no", "61")
        assert reply(c, "lru temp_ttl 30") == b"OK\r\n"
        assert (settings(c)["temp_lru"], settings(c)["temporary_ttl"]) == ("yes", "30")
        assert reply(c, "lru temp_ttl -1") == b"OK\r\n"
        assert (settings(c)["temp_lru"], settings(c)["temporary_ttl"]) == ("no", "30")
        assert reply(c, "lru temp_ttl ten") == b"ERROR\r\n"
        assert reply(c, "lru temp_ttl") == b"ERROR\r\n"


@pytest.mark.parametrize("server_args", [["-o", "no_lru_maintainer"]])
def test_lru_without_the_maintainer(server):
    """Without the maintainer (-o no_lru_maintainer) the LRU is flat: lru mode and lru temp_ttl
    are ERROR, lru tune still OK; the maintainer's statistics are not printed."""
    with server.conn() as c:
        s = settings(c)
        assert (s["lru_maintainer_thread"], s["lru_segmented"]) == ("no", "no")
        assert reply(c, "lru mode segmented") == b"ERROR\r\n"
        assert reply(c, "lru temp_ttl 30") == b"ERROR\r\n"
        assert reply(c, "lru tune 10 30 0.5 3") == b"OK\r\n"
        c.call("set k 0 0 1\r\nx\r\n", "STORED\r\n")
        stats = c.stats()
        assert not [n for n in MAINTAINER_STATS if n in stats], stats
        assert item_fields(c) == [n for n in MEMCACHED_ITEMS_PER_CLASS if n not in MAINTAINER_ITEMS]


@pytest.mark.parametrize("server_args", [["-o", "hot_lru_pct=10,warm_lru_pct=50,hot_max_factor=0.5,"
                                          "warm_max_factor=3,temporary_ttl=30"]])
def test_lru_settings_from_the_command_line(server):
    """-o hot_lru_pct, warm_lru_pct, hot_max_factor, warm_max_factor and temporary_ttl show in
    stats settings, and stats items then has number_temp after number_cold."""
    with server.conn() as c:
        s = settings(c)
        assert [s[k] for k in ["lru_maintainer_thread", "lru_segmented", "hot_lru_pct",
                               "warm_lru_pct", "hot_max_factor", "warm_max_factor", "temp_lru",
                               "temporary_ttl"]] == \
            ["yes", "yes", "10", "50", "0.50", "3.00", "yes", "30"]
        c.call("set k 0 0 1\r\nx\r\n", "STORED\r\n")
        want = list(MEMCACHED_ITEMS_PER_CLASS)
        want.insert(want.index("number_cold") + 1, "number_temp")
        assert item_fields(c) == want


# ---------- the segments ----------

@pytest.mark.parametrize("server_args", [["-m", "6"]])
def test_items_move_to_cold_and_a_fetched_one_to_warm(server):
    """memcached's lru-maintainer.t: filling a class moves items from hot to cold
    (moves_to_cold); an item fetched twice is moved to warm (moves_to_warm) and survives the
    evictions that follow, which take cold items."""
    with server.conn(timeout=30) as c:
        store_large(c, "canary")
        cls = class_holding(c, "canary")
        for i in range(30):
            store_large(c, f"key{i}")
        wait_for(lambda: int(per_class(c, cls)["moves_to_cold"]) > 0,
                 "the maintainer to move items from hot to cold", WAIT_SECONDS)
        for _ in range(2):
            assert c.get("canary") == b"B" * LARGE
        wait_for(lambda: int(per_class(c, cls)["moves_to_warm"]) > 0,
                 "the twice-fetched canary to move to warm", WAIT_SECONDS)
        for i in range(30, 100):
            store_large(c, f"key{i}")
        assert int(c.stats()["evictions"]) > 0
        assert c.get("canary") == b"B" * LARGE
        items = per_class(c, cls)
        assert int(items["number_warm"]) >= 1, items
        assert int(items["hits_to_hot"]) + int(items["hits_to_cold"]) \
            + int(items["hits_to_warm"]) == 3, items


@pytest.mark.parametrize("server_args", [["-m", "6"]])
def test_new_items_are_hot_until_the_maintainer_moves_them(server):
    """A new item starts in hot; a class holding many more bytes than hot's 20 % share
    has most of its items in cold once the maintainer has had its way."""
    with server.conn(timeout=30) as c:
        store_large(c, "first")
        cls = class_holding(c, "first")
        items = per_class(c, cls)
        assert int(items["number"]) == 1
        assert int(items["number_hot"]) + int(items["number_cold"]) == 1, items
        for i in range(40):
            store_large(c, f"key{i}")

        def shaped():
            it = per_class(c, cls)
            n, hot, cold = int(it["number"]), int(it["number_hot"]), int(it["number_cold"])
            return hot + int(it["number_warm"]) + cold == n and hot <= n // 4 and cold > n // 2
        wait_for(shaped, "hot to be trimmed to its share", WAIT_SECONDS)


@pytest.mark.parametrize("server_args", [["-m", "2", "-o", "temporary_ttl=61"]])
def test_temporary_items_are_not_evicted(server):
    """memcached's lru-maintainer.t: with temporary_ttl, an item whose ttl is at most that goes
    to the temporary LRU (not hot), and is never evicted, even unfetched, while a fill of
    longer-lived items evicts."""
    with server.conn(timeout=30) as c:
        assert settings(c)["temp_lru"] == "yes"
        store_large(c, "canary", exptime=30)
        cls = class_holding(c, "canary")
        items = per_class(c, cls)
        assert (items["number_hot"], items["number_temp"]) == ("0", "1"), items
        for i in range(100):
            store_large(c, f"key{i}", exptime=3600)
        items = per_class(c, cls)
        assert int(items["evicted"]) > 0, items
        assert int(items["number_hot"]) > 0, items
        assert items["number_temp"] == "1", items
        assert c.get("canary") == b"B" * LARGE
        assert per_class(c, cls)["hits_to_temp"] == "1"


@pytest.mark.parametrize("server_args", [["-m", "6"]])
def test_flat_mode_drains_into_cold(server):
    """lru mode flat: the maintainer drains hot and warm into cold, one list as memcached's
    compat mode; segmented again, new items are hot."""
    with server.conn(timeout=30) as c:
        store_large(c, "a")
        cls = class_holding(c, "a")
        for i in range(10):
            store_large(c, f"key{i}")
        assert reply(c, "lru mode flat") == b"OK\r\n"
        wait_for(lambda: per_class(c, cls)["number_cold"] == per_class(c, cls)["number"],
                 "every item to drain into cold", WAIT_SECONDS)
        assert per_class(c, cls)["number"] == "11"


# ---------- expiry ----------

@pytest.mark.parametrize("server_args", [["-m", "6", "-o", "no_lru_crawler"]])
def test_expired_items_are_reclaimed_by_the_maintainer(clock_server, clock):
    """memcached's lru-maintainer.t: ten items with a ttl of 1 are all reclaimed once they have
    expired, without a get or a crawl (the crawler is off): the maintainer finds them at the
    lists' tails. reclaimed counts them, curr_items drops to 0."""
    with clock_server.conn() as c:
        for i in range(10):
            c.call(f"set ifoo{i} 0 1 2\r\nok\r\n", "STORED\r\n")
        assert c.stats()["curr_items"] == "10"
        clock.advance(1)
        st = wait_for(lambda: (lambda s: s if s["reclaimed"] == "10" else None)(c.stats()),
                      "the maintainer to reclaim the ten expired items", WAIT_SECONDS)
        assert (st["curr_items"], st["crawler_reclaimed"], st["get_expired"]) == ("0", "0", "0")
        assert st["expired_unfetched"] == "10"


@pytest.mark.parametrize("server_args", [["-m", "3"]])
def test_a_small_cache_of_many_small_items_stores_without_error(server):
    """memcached's lru-maintainer.t regression: 15000 items with 200-byte keys into -m 3, then
    one more set is STORED (no out of memory)."""
    stub = "X" * 200
    with server.conn(timeout=30) as c:
        for start in range(1, 15001, 500):
            c.send("".join(f"set {stub}{i} 0 0 2 noreply\r\nok\r\n"
                           for i in range(start, start + 500)))
        c.call("mn\r\n", "MN\r\n")
        c.call(f"set {stub}20001 0 0 2\r\nok\r\n", "STORED\r\n")


@pytest.mark.parametrize("server_args", [["-m", "6"]])
def test_stats_reset_zeroes_the_moves(server):
    """stats reset zeroes the per-class moves_* counters, as memcached's: once the class is in
    shape (nothing left to move), a reset leaves moves_to_cold at 0."""
    with server.conn(timeout=30) as c:
        store_large(c, "first")
        cls = class_holding(c, "first")
        for i in range(30):
            store_large(c, f"key{i}")
        wait_for(lambda: int(per_class(c, cls)["moves_to_cold"]) > 0,
                 "the maintainer to move items from hot to cold", WAIT_SECONDS)

        def reset_to_zero():
            c.call("stats reset\r\n", "RESET\r\n")
            return per_class(c, cls)["moves_to_cold"] == "0"
        wait_for(reset_to_zero, "moves_to_cold to read 0 after stats reset", WAIT_SECONDS)


def test_gets_and_touches_counted_as_memcached(server):
    """gat, gats, mg with T and touch count as touches, a get or mg without T as a get (which
    alone counts in hits_to_*); a miss of mg with T, whose T changed nothing, as a get's miss."""
    with server.conn() as c:
        c.call("set a 0 0 1\r\nx\r\n", "STORED\r\n")
        c.call("gat 10 a b\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n")
        c.send("gats 10 a\r\n")
        c.until_end()
        c.call("mg a v T10\r\n", "VA 1\r\nx\r\n")
        c.call("mg zz v T10\r\n", "EN\r\n")
        c.call("mg a v\r\n", "VA 1\r\nx\r\n")
        c.call("touch a 5\r\n", "TOUCHED\r\n")
        st = c.stats()
        assert {k: st[k] for k in ["cmd_get", "cmd_touch", "get_hits", "get_misses", "touch_hits",
                                   "touch_misses"]} == \
            {"cmd_get": "2", "cmd_touch": "5", "get_hits": "1", "get_misses": "1",
             "touch_hits": "4", "touch_misses": "1"}, st
        cls = class_holding(c, "a")
        items = per_class(c, cls)
        assert sum(int(items[f"hits_to_{s}"]) for s in ["hot", "warm", "cold", "temp"]) == 1
        slabs = c.stats("slabs")
        assert (slabs[f"{cls}:get_hits"], slabs[f"{cls}:touch_hits"]) == ("1", "4"), slabs
