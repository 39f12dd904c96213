"""Many clients at once, under each --sync configuration of locus-kv (only the default one
against memcached): no lost increments, no lost compare-and-swap updates."""

import threading

CLIENTS = 12
INCRS_PER_CLIENT = 400
KEYS = 3
CAS_CLIENTS = 6
CAS_ATTEMPTS = 150


def run_threads(target, n):
    errors = []

    def wrap(i):
        try:
            target(i)
        except BaseException as e:   # reported by the main thread
            errors.append(f"client {i}: {e!r}")

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "clients still running after 120 s"
    assert not errors, "\n".join(errors[:5])


def test_concurrent_incr_loses_nothing(sync_server):
    s = sync_server
    with s.conn() as c:
        for k in range(KEYS):
            c.call(f"set ctr{k} 0 0 1\r\n0\r\n", "STORED\r\n")

    def client(i):
        with s.conn(timeout=30) as c:
            for j in range(INCRS_PER_CLIENT):
                key = f"ctr{(i + j) % KEYS}"
                if j % 50 == 49:   # some pipelined, most one at a time
                    c.send(f"incr {key} 1\r\nincr {key} 1\r\nget {key}\r\n")
                    int(c.line()), int(c.line())
                    c.until_end()
                else:
                    c.send(f"incr {key} 1\r\n")
                    int(c.line())

    run_threads(client, CLIENTS)
    per_client = INCRS_PER_CLIENT + INCRS_PER_CLIENT // 50
    with s.conn() as c:
        total = sum(int(c.get(f"ctr{k}")) for k in range(KEYS))
        assert total == CLIENTS * per_client
        st = c.stats()
        assert int(st["incr_hits"]) == CLIENTS * per_client


def test_concurrent_cas_loses_no_update(sync_server):
    s = sync_server
    with s.conn() as c:
        c.call("set cas 0 0 1\r\n0\r\n", "STORED\r\n")
    wins = [0] * CAS_CLIENTS
    clashes = [0] * CAS_CLIENTS

    def client(i):
        with s.conn(timeout=30) as c:
            for _ in range(CAS_ATTEMPTS):
                c.send("gets cas\r\n")
                head = c.line().split()
                assert head[0] == b"VALUE", head
                value = int(c.read(int(head[3]) + 2))
                c.expect("END\r\n")
                new = str(value + 1)
                c.send(f"cas cas 0 0 {len(new)} {int(head[4])}\r\n{new}\r\n")
                reply = c.line()
                if reply == b"STORED\r\n":
                    wins[i] += 1
                else:
                    assert reply == b"EXISTS\r\n", reply
                    clashes[i] += 1

    run_threads(client, CAS_CLIENTS)
    with s.conn() as c:
        assert int(c.get("cas")) == sum(wins)
        st = c.stats()
        assert int(st["cas_hits"]) == sum(wins)
        assert int(st["cas_badval"]) == sum(clashes)
    assert sum(wins) > 0


def test_concurrent_meta_arithmetic_and_deletes(sync_server):
    """ma with autovivify on keys that other clients delete: every reply is well-formed and
    the server keeps answering."""
    s = sync_server

    def client(i):
        with s.conn(timeout=30) as c:
            for j in range(200):
                key = f"m{j % 4}"
                if i % 3 == 0 and j % 7 == 0:
                    c.send(f"md {key}\r\n")
                    assert c.line() in (b"HD\r\n", b"NF\r\n")
                else:
                    c.send(f"ma {key} N0 J0 v\r\n")
                    head = c.line()
                    assert head.startswith(b"VA "), head
                    assert c.read(int(head.split()[1]) + 2).strip().isdigit()

    run_threads(client, 6)
    with s.conn() as c:
        c.call("mn\r\n", "MN\r\n")


STATS_CLIENTS = 8
STATS_OPS = 150
STATS_SIZES = (10, 500, 3000, 20000)   # a slab class each


def test_concurrent_counts_add_up_exactly(sync_server):
    """Clients on every worker set, get (hits and misses) and delete values of four sizes:
    the totals of "stats" and the per-class rows of "stats slabs" are exactly what they did,
    once their replies have come (each worker's counts reach the totals before its reply)."""
    s = sync_server
    sets = [0] * STATS_CLIENTS
    hits = [0] * STATS_CLIENTS
    misses = [0] * STATS_CLIENTS
    deletes = [0] * STATS_CLIENTS

    def client(i):
        with s.conn(timeout=30) as c:
            for j in range(STATS_OPS):
                size = STATS_SIZES[(i + j) % len(STATS_SIZES)]
                key = f"sum{i}:{j % 10}:{size}"
                if j % 10 == 9:
                    # one write: a set and a get in every class, counted in one event
                    c.send("".join(f"set p{i}:{n} 0 0 {n}\r\n{'p' * n}\r\nget p{i}:{n}\r\n"
                                   for n in STATS_SIZES))
                    for n in STATS_SIZES:
                        c.expect("STORED\r\n")
                        c.expect(f"VALUE p{i}:{n} 0 {n}\r\n")
                        c.read(n + 2)
                        c.expect("END\r\n")
                    sets[i] += len(STATS_SIZES)
                    hits[i] += len(STATS_SIZES)
                elif j % 5 == 4:
                    c.send(f"get nosuch{i}:{j}\r\n")
                    c.expect("END\r\n")
                    misses[i] += 1
                elif j % 5 == 3:
                    c.send(f"delete {key}\r\n")
                    reply = c.line()
                    assert reply in (b"DELETED\r\n", b"NOT_FOUND\r\n"), reply
                    deletes[i] += reply == b"DELETED\r\n"
                elif j % 2 == 0:
                    c.call(f"set {key} 0 0 {size}\r\n{'v' * size}\r\n", "STORED\r\n")
                    sets[i] += 1
                else:
                    c.send(f"get {key}\r\n")
                    head = c.line()
                    if head == b"END\r\n":
                        misses[i] += 1
                    else:
                        assert head.startswith(b"VALUE "), head
                        c.read(size + 2)
                        c.expect("END\r\n")
                        hits[i] += 1

    run_threads(client, STATS_CLIENTS)
    with s.conn() as c:
        st = c.stats()
        slabs = c.stats("slabs")
    assert int(st["cmd_set"]) == sum(sets)
    assert int(st["total_items"]) == sum(sets)
    assert int(st["get_hits"]) == sum(hits)
    assert int(st["get_misses"]) == sum(misses)
    assert int(st["cmd_get"]) == sum(hits) + sum(misses)
    assert int(st["delete_hits"]) == sum(deletes)
    classes = {k.split(":")[0] for k in slabs if k.split(":")[0].isdigit()}
    assert len(classes) >= len(STATS_SIZES)
    assert sum(int(slabs.get(f"{k}:get_hits", 0)) for k in classes) == sum(hits)
    assert sum(int(slabs.get(f"{k}:cmd_set", 0)) for k in classes) == sum(sets)
    assert sum(int(slabs.get(f"{k}:delete_hits", 0)) for k in classes) == sum(deletes)
