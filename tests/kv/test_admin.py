"""The admin surface as memcached 1.6.18 answers it: shutdown, stats conns/sizes/detail/cachedump,
the lru_crawler commands and metadump, watch, cache_memlimit, slabs automove/reassign, verbosity,
and the field names of stats, stats settings, stats items and stats slabs.

Every expected reply below was first seen from memcached 1.6.18. Replies that memcached sends
asynchronously (metadump, watch log lines, a page move, a stopped crawler thread) are waited
for by polling with a deadline, never by sleeping.
"""

import re
import socket
import time

import pytest

MB = 1024 * 1024
WAIT_SECONDS = 10.0

# ---------------------------------------------------------------------------------------------
# Field names, in memcached 1.6.18's order (Debian's build, started with -m 64 -t 4, default
# options otherwise, after storing items of two sizes).

MEMCACHED_STATS = [
    "pid", "uptime", "time", "version", "libevent", "pointer_size", "rusage_user", "rusage_system",
    "max_connections", "curr_connections", "total_connections", "rejected_connections",
    "connection_structures", "response_obj_oom", "response_obj_count", "response_obj_bytes",
    "read_buf_count", "read_buf_bytes", "read_buf_bytes_free", "read_buf_oom", "reserved_fds",
    "cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "cmd_meta", "get_hits", "get_misses",
    "get_expired", "get_flushed", "delete_misses", "delete_hits", "incr_misses", "incr_hits",
    "decr_misses", "decr_hits", "cas_misses", "cas_hits", "cas_badval", "touch_hits",
    "touch_misses", "store_too_large", "store_no_memory", "auth_cmds", "auth_errors", "bytes_read",
    "bytes_written", "limit_maxbytes", "accepting_conns", "listen_disabled_num",
    "time_in_listen_disabled_us", "threads", "conn_yields", "hash_power_level", "hash_bytes",
    "hash_is_expanding", "slab_reassign_rescues", "slab_reassign_chunk_rescues",
    "slab_reassign_evictions_nomem", "slab_reassign_inline_reclaim", "slab_reassign_busy_items",
    "slab_reassign_busy_deletes", "slab_reassign_running", "slabs_moved", "lru_crawler_running",
    "lru_crawler_starts", "lru_maintainer_juggles", "malloc_fails", "log_worker_dropped",
    "log_worker_written", "log_watcher_skipped", "log_watcher_sent", "log_watchers",
    "unexpected_napi_ids", "round_robin_fallback", "bytes", "curr_items", "total_items",
    "slab_global_page_pool", "expired_unfetched", "evicted_unfetched", "evicted_active",
    "evictions", "reclaimed", "crawler_reclaimed", "crawler_items_checked", "lrutail_reflocked",
    "moves_to_cold", "moves_to_warm", "moves_within_lru", "direct_reclaims", "lru_bumps_dropped",
]

MEMCACHED_SETTINGS = [
    "maxbytes", "maxconns", "tcpport", "udpport", "inter", "verbosity", "oldest", "evictions",
    "domain_socket", "umask", "shutdown_command", "growth_factor", "chunk_size", "num_threads",
    "num_threads_per_udp", "stat_key_prefix", "detail_enabled", "reqs_per_event", "cas_enabled",
    "tcp_backlog", "binding_protocol", "auth_enabled_sasl", "auth_enabled_ascii", "item_size_max",
    "maxconns_fast", "hashpower_init", "slab_reassign", "slab_automove", "slab_automove_ratio",
    "slab_automove_window", "slab_chunk_max", "lru_crawler", "lru_crawler_sleep",
    "lru_crawler_tocrawl", "tail_repair_time", "flush_enabled", "dump_enabled", "hash_algorithm",
    "lru_maintainer_thread", "lru_segmented", "hot_lru_pct", "warm_lru_pct", "hot_max_factor",
    "warm_max_factor", "temp_lru", "temporary_ttl", "idle_timeout", "watcher_logbuf_size",
    "worker_logbuf_size", "read_buf_mem_limit", "track_sizes", "inline_ascii_response",
    "ssl_enabled", "ssl_chain_cert", "ssl_key", "ssl_verify_mode", "ssl_keyformat", "ssl_ciphers",
    "ssl_ca_cert", "ssl_wbuf_size", "ssl_session_cache", "ssl_kernel_tls", "ssl_min_version",
    "num_napi_ids", "memory_file",
]

# Settings that Debian's memcached reports because of how it was built: extstore (reported
# even when not in use). locus-kv does not build it (its -o ext_* are refused), so only
# memcached is held to them. (TLS's ssl_* lines and memory_file are reported by both.)
MEMCACHED_BUILD_SETTINGS = [
    "ext_item_size", "ext_item_age", "ext_low_ttl", "ext_recache_rate", "ext_wbuf_size",
    "ext_compact_under", "ext_drop_under", "ext_max_sleep", "ext_max_frag",
    "slab_automove_freeratio", "ext_drop_unread",
]

# "STAT items:<class>:<field> <value>", for each class that holds items.
MEMCACHED_ITEMS_PER_CLASS = [
    "number", "number_hot", "number_warm", "number_cold", "age_hot", "age_warm", "age",
    "mem_requested", "evicted", "evicted_nonzero", "evicted_time", "outofmemory", "tailrepairs",
    "reclaimed", "expired_unfetched", "evicted_unfetched", "evicted_active", "crawler_reclaimed",
    "crawler_items_checked", "lrutail_reflocked", "moves_to_cold", "moves_to_warm",
    "moves_within_lru", "direct_reclaims", "hits_to_hot", "hits_to_warm", "hits_to_cold",
    "hits_to_temp",
]

# "STAT <class>:<field> <value>", for each class that has pages.
MEMCACHED_SLABS_PER_CLASS = [
    "chunk_size", "chunks_per_page", "total_pages", "total_chunks", "used_chunks", "free_chunks",
    "free_chunks_end", "get_hits", "cmd_set", "delete_hits", "incr_hits", "decr_hits", "cas_hits",
    "cas_badval", "touch_hits",
]

# After the per-class lines of stats slabs.
MEMCACHED_SLABS_GLOBAL = [
    "active_slabs", "total_malloced",
]

# ---------------------------------------------------------------------------------------------
# Helpers

GET_LINE = re.compile(r"ts=\d+\.\d+ gid=\d+ type=item_get key=\S+ "
                      r"status=(found|not_found|flushed|expired) clsid=\d+ cfd=\d+ size=\d+")
STORE_LINE = re.compile(r"ts=\d+\.\d+ gid=\d+ type=item_store key=\S+ "
                        r"status=(stored|not_stored|exists|not_found|too_large|no_memory) "
                        r"cmd=(null|add|set|replace|append|prepend|cas|na) ttl=-?\d+ clsid=\d+ "
                        r"cfd=\d+ size=\d+")
EVICTION_LINE = re.compile(r"ts=\d+\.\d+ gid=\d+ type=eviction key=\S+ fetch=(yes|no) "
                           r"ttl=-?\d+ la=-?\d+ clsid=\d+ size=\d+")
METADUMP_LINE = re.compile(r"key=\S+ exp=-?\d+ la=\d+ cas=\d+ fetch=(yes|no) cls=\d+ size=\d+")
PREFIX_LINE = re.compile(r"PREFIX (\S*) get (\d+) hit (\d+) set (\d+) del (\d+)")
CONNS_LINE = re.compile(r"STAT (\d+):(addr|listen_addr|state|secs_since_last_cmd|UDP) (.*)")


def recv_more(c, deadline):
    """Append what arrives on c to c.buf; fail at the deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError(f"nothing more arrived in time; have {c.buf[-300:]!r}")
    c.sock.settimeout(left)
    try:
        chunk = c.sock.recv(1 << 16)
    except socket.timeout:
        raise TimeoutError(f"nothing more arrived in time; have {c.buf[-300:]!r}") from None
    if not chunk:
        raise ConnectionError(f"connection closed by the server; have {c.buf[-300:]!r}")
    c.buf += chunk


def raw_line(c, timeout=WAIT_SECONDS):
    """One line ending in \\n (watch and metadump lines end in a bare \\n), without its end."""
    deadline = time.monotonic() + timeout
    while b"\n" not in c.buf:
        recv_more(c, deadline)
    i = c.buf.index(b"\n") + 1
    out, c.buf = c.buf[:i], c.buf[i:]
    return out.rstrip(b"\r\n").decode()


def fields(line):
    """'a=1 b=x' -> {'a': '1', 'b': 'x'}."""
    return dict(part.split("=", 1) for part in line.split(" "))


def wait_for(check, what, timeout=WAIT_SECONDS):
    """Poll check() until it returns something true; fail with what after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def reply(c, cmd):
    """Send a one-line command and return its one-line reply."""
    c.send(cmd + "\r\n")
    return c.line()


def crawler(c, cmd):
    """An lru_crawler command, repeated while the crawler is busy (memcached's own LRU
    maintainer starts crawls by itself); returns the first other reply."""
    return wait_for(lambda: (lambda r: None if r.startswith(b"BUSY") else r)(reply(c, cmd)),
                    f"{cmd!r} to be answered with something other than BUSY")


def metadump_once(c, what):
    """lru_crawler metadump <what>: the dump lines (ending at END), or an error line (str)."""
    c.send(f"lru_crawler metadump {what}\r\n")
    deadline = time.monotonic() + WAIT_SECONDS
    while b"\n" not in c.buf:
        recv_more(c, deadline)
    if not (c.buf.startswith(b"key=") or c.buf.startswith(b"END\r\n")):
        return c.line().decode()
    while not (c.buf.startswith(b"END\r\n") or b"\nEND\r\n" in c.buf):
        recv_more(c, deadline)
    i = 5 if c.buf.startswith(b"END\r\n") else c.buf.index(b"\nEND\r\n") + 6
    out, c.buf = c.buf[:i], c.buf[i:]
    assert out.endswith(b"END\r\n")
    lines = out[:-5].decode().split("\n")
    assert lines[-1] == "", f"a dump line does not end in \\n: {out[-200:]!r}"
    return lines[:-1]


def metadump(c, what):
    """metadump_once, repeated while the crawler is busy."""
    def attempt():
        got = metadump_once(c, what)
        return None if isinstance(got, str) and got.startswith("BUSY") else [got]
    return wait_for(attempt, f"metadump {what} to run")[0]


def by_key(lines):
    """{key: {field: value}} of metadump lines (fails on an error reply instead of a dump)."""
    assert isinstance(lines, list), f"metadump answered {lines!r}"
    out = {}
    for line in lines:
        assert METADUMP_LINE.fullmatch(line), line
        f = fields(line)
        out[f["key"]] = f
    return out


def gets_cas(c, key):
    c.send(f"gets {key}\r\n")
    head = c.line().split()
    c.read(int(head[3]) + 2)
    c.expect("END\r\n")
    return int(head[4])


def store(c, key, size, exptime=0):
    assert c.set(key, b"v" * size, exptime=exptime) == b"STORED\r\n"


def fill(c, prefix, count, size):
    """count keys prefix0.. with size-byte values, pipelined, then a barrier."""
    value = b"v" * size
    for start in range(0, count, 500):
        c.send(b"".join(b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix.encode(), i, size, value)
                        for i in range(start, min(count, start + 500))))
    c.call("mn\r\n", "MN\r\n")


def item_classes(c):
    """{class id: number of items} from stats items."""
    out = {}
    for name, value in c.stats("items").items():
        _, cls, field = name.split(":")
        if field == "number":
            out[int(cls)] = int(value)
    return out


def slab_classes(c):
    """{class id: {field: value}} and the global fields, from stats slabs."""
    per, glob = {}, {}
    for name, value in c.stats("slabs").items():
        if ":" in name:
            cls, field = name.split(":")
            per.setdefault(int(cls), {})[field] = value
        else:
            glob[name] = value
    return per, glob


def stop_after_exit(server):
    """The server exited by itself: its status, and the fixture will not stop it again."""
    try:
        server.proc.wait(timeout=WAIT_SECONDS)
    except Exception:
        pytest.fail(f"the server did not exit; output:\n{server.output()}")
    return server.stop(check=False)


# ---------------------------------------------------------------------------------------------
# shutdown


def test_shutdown_is_refused_without_dash_A(srv):
    """Without -A, shutdown in every form answers 'ERROR: shutdown not enabled' and the server
    keeps serving."""
    with srv.conn() as c:
        for cmd in ["shutdown", "shutdown graceful", "shutdown foo", "shutdown graceful now"]:
            assert reply(c, cmd) == b"ERROR: shutdown not enabled\r\n", cmd
        assert c.stats("settings")["shutdown_command"] == "no"
        c.call("set a 0 0 1\r\nx\r\nget a\r\n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n")
    assert srv.alive()


def test_shutdown_bad_mode(start):
    """With -A, shutdown with an unknown mode or extra words answers 'CLIENT_ERROR invalid
    shutdown mode' (noreply is not special) and the server keeps running."""
    server = start("-A")
    with server.conn() as c:
        assert c.stats("settings")["shutdown_command"] == "yes"
        for cmd in ["shutdown foo", "shutdown graceful now", "shutdown noreply", "shutdown GRACEFUL"]:
            assert reply(c, cmd) == b"CLIENT_ERROR invalid shutdown mode\r\n", cmd
        c.call("version\r\n", "VERSION ")
        c.line()
    assert server.alive()


@pytest.mark.parametrize("cmd", ["shutdown", "shutdown graceful"])
def test_shutdown_closes_the_connection_and_exits_0(start, cmd):
    """With -A, shutdown (and shutdown graceful) sends no reply, closes the connection and the
    server exits with status 0."""
    server = start("-A")
    with server.conn() as other, server.conn() as c:
        other.call("version\r\n", "VERSION ")
        other.line()
        c.send(cmd + "\r\n")
        assert c.closed(), "the connection stayed open after shutdown"
        assert c.buf == b"", f"shutdown replied {c.buf!r}"
        assert stop_after_exit(server) == 0, server.output()
        assert other.closed(), "another connection stayed open after the server exited"


# ---------------------------------------------------------------------------------------------
# stats: unknown subcommands, trailing words, conns


def test_stats_unknown_subcommand_is_one_error_line(srv):
    """stats with an unknown subcommand answers the single line ERROR (no STAT lines, no END)."""
    with srv.conn() as c:
        for cmd in ["stats foo", "stats foo bar", "stats STATS", "stats time", "stats item"]:
            c.call(cmd + "\r\nversion\r\n", "ERROR\r\nVERSION ")
            c.line()


def test_stats_trailing_words_are_ignored(srv):
    """Words after a known stats subcommand are ignored, and 'stats' followed only by spaces is
    plain stats."""
    with srv.conn() as c:
        store(c, "tw", 10)
        for sub in ["settings", "items", "slabs", "sizes"]:
            assert c.stats(sub + " junk more").keys() == c.stats(sub).keys(), sub
        c.send("stats   \r\n")
        plain = c.until_end().decode()
        assert plain.startswith("STAT pid ") and "STAT curr_items " in plain
        c.call("stats reset junk\r\n", "RESET\r\n")
        c.call("stats detail dump junk\r\n", "END\r\n")


def test_stats_reset_zeroes_the_per_class_eviction_counts(start):
    """stats reset zeroes the counters of stats items too (evicted, evicted_unfetched, ...),
    as memcached's does; the number of items stays."""
    s = start("-m", "2")
    value = b"x" * 5000
    with s.conn(timeout=20) as c:
        c.send(b"".join(b"set r%d 0 0 %d noreply\r\n%s\r\n" % (i, len(value), value)
                        for i in range(1500)))
        c.call("version\r\n", "VERSION ")
        c.line()
        items = c.stats("items")
        evicted = {k: int(v) for k, v in items.items() if k.endswith(":evicted")}
        assert evicted and sum(evicted.values()) > 0, items
        numbers = {k: v for k, v in items.items() if k.endswith(":number")}
        c.call("stats reset\r\n", "RESET\r\n")
        after = c.stats("items")
        for field in ["evicted", "evicted_unfetched", "evicted_nonzero", "evicted_time",
                      "outofmemory", "lrutail_reflocked", "reclaimed", "hits_to_cold"]:
            for k, v in after.items():
                if k.endswith(":" + field):
                    assert v == "0", f"{k} is {v} after stats reset"
        assert {k: v for k, v in after.items() if k.endswith(":number")} == numbers
        assert c.stats()["evictions"] == "0"


def test_stats_conns_lists_the_listener_and_each_connection(srv):
    """stats conns: per file descriptor, 'addr' (tcp:<ip>:<port>), 'listen_addr' (not for a
    listener), 'state' (conn_<name>) and 'secs_since_last_cmd'; the asking connection is in
    conn_parse_cmd, the listener in conn_listening."""
    with srv.conn() as idle, srv.conn() as c:
        idle.call("version\r\n", "VERSION ")
        idle.line()
        c.send("stats conns\r\n")
        text = c.until_end().decode()
        assert text.endswith("END\r\n")
        conns = {}
        for line in text.split("\r\n")[:-2]:
            m = CONNS_LINE.fullmatch(line)
            assert m, line
            conns.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
        for fd, f in conns.items():
            assert set(f) >= {"addr", "state", "secs_since_last_cmd"}, (fd, f)
            assert re.fullmatch(r"conn_[a-z_]+", f["state"]), f
            assert f["secs_since_last_cmd"].isdigit(), f
        server_addr = f"tcp:127.0.0.1:{srv.port}"
        listeners = [f for f in conns.values() if f["state"] == "conn_listening"]
        assert listeners and all("listen_addr" not in f for f in listeners), listeners
        assert server_addr in [f["addr"] for f in listeners]
        by_addr = {f["addr"]: f for f in conns.values()}
        me = by_addr[f"tcp:127.0.0.1:{c.sock.getsockname()[1]}"]
        assert me["state"] == "conn_parse_cmd" and me["listen_addr"] == server_addr, me
        other = by_addr[f"tcp:127.0.0.1:{idle.sock.getsockname()[1]}"]
        assert other["listen_addr"] == server_addr, other


# ---------------------------------------------------------------------------------------------
# stats sizes


def test_stats_sizes_is_disabled_by_default(srv):
    """Without -o track_sizes, stats sizes answers 'STAT sizes_status disabled' and END."""
    with srv.conn() as c:
        c.call("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n")
        assert c.stats("settings")["track_sizes"] == "no"


def test_stats_sizes_enable_and_disable(srv):
    """stats sizes_enable / sizes_disable answer one STAT line with no END; once enabled, stats
    sizes lists 'STAT <bytes> <count>' in 32-byte buckets for the items stored since."""
    with srv.conn() as c:
        try:
            c.call("stats sizes_enable\r\nversion\r\n", "STAT sizes_status enabled\r\nVERSION ")
            c.line()
            assert c.stats("settings")["track_sizes"] == "yes"
            c.call("stats sizes_enable\r\nversion\r\n", "STAT sizes_status enabled\r\nVERSION ")
            c.line()
            store(c, "sz:a", 3)
            store(c, "sz:b", 300)
            sizes = c.stats("sizes")
            assert len(sizes) == 2, sizes
            buckets = sorted(int(k) for k in sizes)
            assert all(b % 32 == 0 for b in buckets), sizes
            assert buckets[1] >= 300 + buckets[0] - 32, sizes
            assert sorted(sizes.values()) == ["1", "1"], sizes
            c.call("stats sizes_disable\r\nversion\r\n", "STAT sizes_status disabled\r\nVERSION ")
            c.line()
            c.call("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n")
            assert c.stats("settings")["track_sizes"] == "no"
            c.call("stats sizes_disable\r\nversion\r\n", "STAT sizes_status disabled\r\nVERSION ")
            c.line()
        finally:
            c.send("stats sizes_disable\r\n")
            c.line()


def test_track_sizes_option(start):
    """-o track_sizes turns the size histogram on from the start."""
    server = start("-o", "track_sizes")
    with server.conn() as c:
        assert c.stats("settings")["track_sizes"] == "yes"
        c.call("stats sizes\r\n", "END\r\n")
        store(c, "a", 10)
        store(c, "b", 10)
        sizes = c.stats("sizes")
        assert len(sizes) == 1 and list(sizes.values()) == ["2"], sizes
        assert int(next(iter(sizes))) % 32 == 0


def test_sizes_enable_needs_cas(start):
    """With -C, stats sizes_enable answers 'sizes_status error' and 'sizes_error
    cas_support_disabled' (no END) and the histogram stays off."""
    server = start("-C")
    with server.conn() as c:
        c.call("stats sizes_enable\r\nversion\r\n",
               "STAT sizes_status error\r\nSTAT sizes_error cas_support_disabled\r\nVERSION ")
        c.line()
        c.call("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n")


# ---------------------------------------------------------------------------------------------
# stats detail


def prefix_dump(c, cmd="stats detail dump"):
    c.send(cmd + "\r\n")
    text = c.until_end().decode()
    out = {}
    for line in text.split("\r\n")[:-2]:
        m = PREFIX_LINE.fullmatch(line)
        assert m, line
        assert m.group(1) not in out, f"prefix {m.group(1)!r} twice"
        out[m.group(1)] = tuple(int(m.group(i)) for i in range(2, 6))
    return out


def test_stats_detail_counts_per_prefix(srv):
    """stats detail on/off answer OK; with it on, text get/gets/gat count a get (and a hit),
    set/add/cas/append... a set (stored or not), delete a del (found or not), per key prefix
    up to ':'; dump lists 'PREFIX <p> get <n> hit <n> set <n> del <n>' lines and END; off stops
    counting but keeps the counts; stats reset clears them."""
    with srv.conn() as c:
        try:
            c.call("stats reset\r\n", "RESET\r\n")
            c.call("stats detail dump\r\n", "END\r\n")
            assert c.stats("settings")["detail_enabled"] == "no"
            c.call("stats detail on\r\n", "OK\r\n")
            assert c.stats("settings")["detail_enabled"] == "yes"
            assert c.stats("settings")["stat_key_prefix"] == ":"
            store(c, "p:1", 1)
            store(c, "p:2", 1)
            c.call("get p:1 p:3 q:1 nokey\r\n", "VALUE p:1 0 1\r\nv\r\nEND\r\n")
            c.call("delete p:1\r\n", "DELETED\r\n")
            c.call("delete p:9\r\n", "NOT_FOUND\r\n")
            store(c, "q:x", 1)
            c.call("add p:2 0 0 1\r\nz\r\n", "NOT_STORED\r\n")
            c.call("touch p:2 0\r\n", "TOUCHED\r\n")
            c.call("gat 0 p:2\r\n", "VALUE p:2 0 1\r\nv\r\nEND\r\n")
            assert gets_cas(c, "p:2") > 0
            assert prefix_dump(c) == {"p": (4, 3, 3, 2), "q": (1, 0, 1, 0)}
            c.call("stats detail off\r\n", "OK\r\n")
            assert c.stats("settings")["detail_enabled"] == "no"
            c.call("get p:2\r\n", "VALUE p:2 0 1\r\nv\r\nEND\r\n")
            store(c, "r:1", 1)
            assert prefix_dump(c) == {"p": (4, 3, 3, 2), "q": (1, 0, 1, 0)}
            c.call("stats reset\r\n", "RESET\r\n")
            c.call("stats detail dump\r\n", "END\r\n")
        finally:
            c.call("stats detail off\r\nstats reset\r\n", "OK\r\nRESET\r\n")


def test_stats_detail_bad_arguments(srv):
    """stats detail without on|off|dump (or with another word, or in upper case) answers
    'CLIENT_ERROR usage: stats detail on|off|dump'; words after on/off are ignored."""
    with srv.conn() as c:
        for cmd in ["stats detail", "stats detail foo", "stats detail ON", "stats detail 1"]:
            assert reply(c, cmd) == b"CLIENT_ERROR usage: stats detail on|off|dump\r\n", cmd
        try:
            assert reply(c, "stats detail on extra") == b"OK\r\n"
            assert c.stats("settings")["detail_enabled"] == "yes"
            assert reply(c, "stats detail off extra") == b"OK\r\n"
            assert c.stats("settings")["detail_enabled"] == "no"
        finally:
            c.call("stats detail off\r\nstats reset\r\n", "OK\r\nRESET\r\n")


def test_dash_D_sets_the_delimiter_and_enables_detail(start):
    """-D <char> makes <char> the prefix delimiter and turns detail on; a key starting with the
    delimiter counts under the empty prefix, a key without it is not counted."""
    server = start("-D", "#")
    with server.conn() as c:
        st = c.stats("settings")
        assert st["stat_key_prefix"] == "#" and st["detail_enabled"] == "yes", st
        store(c, "p#1", 1)
        store(c, "p:1", 1)
        c.call("get p#1 p:1 #y\r\n", "VALUE p#1 0 1\r\nv\r\nVALUE p:1 0 1\r\nv\r\nEND\r\n")
        assert prefix_dump(c) == {"p": (1, 1, 1, 0), "": (1, 0, 0, 0)}
        c.send("stats detail dump\r\n")
        assert b"PREFIX  get 1 hit 0 set 0 del 0\r\n" in c.until_end()


# ---------------------------------------------------------------------------------------------
# stats cachedump


def test_stats_cachedump_replies(srv):
    """stats cachedump <class> <limit> answers 'ITEM <key> [<n> b; <t> s]' lines and END; fewer
    than two arguments is 'CLIENT_ERROR bad command line', a non-number 'CLIENT_ERROR bad command
    line format', a class of 64 or more 'CLIENT_ERROR Illegal slab id'."""
    with srv.conn() as c:
        store(c, "cd", 5)
        for cmd in ["stats cachedump 1 0", "stats cachedump 1 1", "stats cachedump 63 0",
                    "stats cachedump 0 0", "stats cachedump 1 2 3"]:
            c.send(cmd + "\r\n")
            lines = c.until_end().decode().split("\r\n")[:-2]
            assert all(re.fullmatch(r"ITEM \S+ \[\d+ b; \d+ s\]", line) for line in lines), lines
        for cmd in ["stats cachedump", "stats cachedump 1"]:
            assert reply(c, cmd) == b"CLIENT_ERROR bad command line\r\n", cmd
        for cmd in ["stats cachedump x 1", "stats cachedump 1 y", "stats cachedump -1 0"]:
            assert reply(c, cmd) == b"CLIENT_ERROR bad command line format\r\n", cmd
        for cmd in ["stats cachedump 64 0", "stats cachedump 200 1"]:
            assert reply(c, cmd) == b"CLIENT_ERROR Illegal slab id\r\n", cmd


def test_dash_X_disables_dumping(start):
    """With -X, stats cachedump answers 'CLIENT_ERROR stats cachedump not allowed' and
    lru_crawler metadump 'ERROR metadump not allowed'."""
    server = start("-X")
    with server.conn() as c:
        assert c.stats("settings")["dump_enabled"] == "no"
        assert reply(c, "stats cachedump 1 0") == b"CLIENT_ERROR stats cachedump not allowed\r\n"
        for what in ["all", "hash", "1", "0"]:
            assert reply(c, f"lru_crawler metadump {what}") == b"ERROR metadump not allowed\r\n"


# ---------------------------------------------------------------------------------------------
# lru_crawler metadump


def test_metadump_lines(srv):
    """lru_crawler metadump all answers no first line, then one line per live item,
    'key=<uri-encoded key> exp=<-1 or unix time> la=<unix time> cas=<n> fetch=<yes|no>
    cls=<class> size=<n>' ending in a bare \\n, then END\\r\\n; the connection stays usable."""
    with srv.conn() as c:
        now = int(c.stats()["time"])
        store(c, "md:x/y~z.-_", 3)
        c.call("set md2 5 1000 10\r\n0123456789\r\n", "STORED\r\n")
        store(c, "mdbig", 3000)
        c.call("get md:x/y~z.-_\r\n", "VALUE md:x/y~z.-_ 0 3\r\nvvv\r\nEND\r\n")
        cas2 = gets_cas(c, "md2")
        cas1 = gets_cas(c, "md:x/y~z.-_")
        dump = by_key(metadump(c, "all"))
        assert set(dump) == {"md%3Ax%2Fy~z.-_", "md2", "mdbig"}, dump
        a, b, big = dump["md%3Ax%2Fy~z.-_"], dump["md2"], dump["mdbig"]
        assert a["exp"] == "-1" and big["exp"] == "-1"
        assert abs(int(b["exp"]) - (now + 1000)) <= 5, (b, now)
        for f in dump.values():
            assert abs(int(f["la"]) - now) <= 5, (f, now)
            assert int(f["size"]) > 0
        assert int(a["cas"]) == cas1 and int(b["cas"]) == cas2
        assert a["fetch"] == "yes" and b["fetch"] == "yes" and big["fetch"] == "no"
        classes = item_classes(c)
        assert a["cls"] == b["cls"] and big["cls"] != a["cls"], dump
        assert {int(a["cls"]), int(big["cls"])} <= set(classes), classes
        assert int(big["size"]) > 3000
        c.call("version\r\n", "VERSION ")
        c.line()


def test_metadump_hash_and_class_lists(srv):
    """metadump hash walks the hash table (the same items); metadump <id>[,<id>...] dumps only
    those classes; an empty class answers just END."""
    with srv.conn() as c:
        store(c, "h1", 10)
        store(c, "h2", 10)
        store(c, "hbig", 3000)
        keys = set(by_key(metadump(c, "hash")))
        assert keys == {"h1", "h2", "hbig"}, keys
        small = int(by_key(metadump(c, "all"))["h1"]["cls"])
        bigcls = int(by_key(metadump(c, "all"))["hbig"]["cls"])
        assert set(by_key(metadump(c, str(small)))) == {"h1", "h2"}
        assert set(by_key(metadump(c, f"{small},{bigcls}"))) == {"h1", "h2", "hbig"}
        assert set(by_key(metadump(c, str(bigcls)))) == {"hbig"}
        assert metadump(c, "63") == []


def test_metadump_skips_flushed_items(srv):
    """Items invalidated by flush_all are not dumped: metadump all then answers END alone."""
    with srv.conn() as c:
        store(c, "f1", 10)
        assert set(by_key(metadump(c, "all"))) == {"f1"}
        c.call("flush_all\r\n", "OK\r\n")
        assert metadump(c, "all") == []
        assert metadump(c, "hash") == []


def test_metadump_errors(srv):
    """metadump of class 0, 64 or more, a non-number or a key answers 'BADCLASS invalid class
    id'; no argument or two arguments answer ERROR."""
    with srv.conn() as c:
        store(c, "e1", 10)
        for what in ["0", "64", "200", "foo", "e1", "1,x", "-1", "all,1"]:
            assert metadump_once(c, what) == "BADCLASS invalid class id\r\n", what
        assert reply(c, "lru_crawler metadump") == b"ERROR\r\n"
        assert reply(c, "lru_crawler metadump all x") == b"ERROR\r\n"


# ---------------------------------------------------------------------------------------------
# lru_crawler crawl, sleep, tocrawl, enable, disable


def test_lru_crawler_crawl(srv):
    """lru_crawler crawl all|<id>[,<id>...] answers OK; class 0, 64+, or a non-number answer
    'BADCLASS invalid class id'; crawl hash 'ERROR an unknown error happened'; a missing or
    unknown subcommand ERROR."""
    with srv.conn() as c:
        store(c, "c1", 10)
        for what in ["all", "1", "1,2,3", "63"]:
            assert crawler(c, f"lru_crawler crawl {what}") == b"OK\r\n", what
        assert crawler(c, "lru_crawler crawl hash") == b"ERROR an unknown error happened\r\n"
        for what in ["0", "64", "x", "1,x", "-1"]:
            assert reply(c, f"lru_crawler crawl {what}") == b"BADCLASS invalid class id\r\n", what
        for cmd in ["lru_crawler", "lru_crawler crawl", "lru_crawler crawl 1 2", "lru_crawler foo",
                    "lru_crawler foo bar", "lru_crawler enable now"]:
            assert reply(c, cmd) == b"ERROR\r\n", cmd


def test_lru_crawler_sleep_and_tocrawl(srv):
    """lru_crawler sleep <usec> (at most 1000000) and tocrawl <n> answer OK and show in stats
    settings; a non-number is 'CLIENT_ERROR bad command line format', a sleep over a second
    'CLIENT_ERROR sleep must be one second or less'."""
    with srv.conn() as c:
        before = c.stats("settings")
        try:
            assert reply(c, "lru_crawler sleep 250") == b"OK\r\n"
            assert reply(c, "lru_crawler tocrawl 7") == b"OK\r\n"
            st = c.stats("settings")
            assert st["lru_crawler_sleep"] == "250" and st["lru_crawler_tocrawl"] == "7", st
            assert reply(c, "lru_crawler sleep 1000000") == b"OK\r\n"
            assert c.stats("settings")["lru_crawler_sleep"] == "1000000"
            assert reply(c, "lru_crawler sleep 1000001") == \
                b"CLIENT_ERROR sleep must be one second or less\r\n"
            for cmd in ["lru_crawler sleep x", "lru_crawler sleep -1", "lru_crawler tocrawl x",
                        "lru_crawler tocrawl -1", "lru_crawler tocrawl 1.5"]:
                assert reply(c, cmd) == b"CLIENT_ERROR bad command line format\r\n", cmd
            for cmd in ["lru_crawler sleep", "lru_crawler tocrawl", "lru_crawler sleep 1 2"]:
                assert reply(c, cmd) == b"ERROR\r\n", cmd
            assert reply(c, "lru_crawler tocrawl 0") == b"OK\r\n"
            assert c.stats("settings")["lru_crawler_tocrawl"] == "0"
        finally:
            c.send(f"lru_crawler sleep {before['lru_crawler_sleep']}\r\n"
                   f"lru_crawler tocrawl {before['lru_crawler_tocrawl']}\r\n")
            c.line()
            c.line()


def test_lru_crawler_disable_and_enable(start):
    """lru_crawler enable on a running crawler answers 'ERROR failed to start lru crawler
    thread'; disable answers OK (again OK when stopped); once stopped, crawl and metadump answer
    'CLIENT_ERROR lru crawler disabled'; enable starts it again (OK)."""
    server = start()
    with server.conn() as c:
        store(c, "k", 10)
        assert reply(c, "lru_crawler enable") == b"ERROR failed to start lru crawler thread\r\n"
        assert reply(c, "lru_crawler disable") == b"OK\r\n"
        wait_for(lambda: c.stats("settings")["lru_crawler"] == "no", "the crawler to stop")
        assert reply(c, "lru_crawler disable") == b"OK\r\n"
        assert reply(c, "lru_crawler crawl 1") == b"CLIENT_ERROR lru crawler disabled\r\n"
        assert reply(c, "lru_crawler crawl 0") == b"CLIENT_ERROR lru crawler disabled\r\n"
        assert metadump_once(c, "all") == "CLIENT_ERROR lru crawler disabled\r\n"
        assert reply(c, "lru_crawler enable") == b"OK\r\n"
        assert c.stats("settings")["lru_crawler"] == "yes"
        assert reply(c, "lru_crawler enable") == b"ERROR failed to start lru crawler thread\r\n"
        assert set(by_key(metadump(c, "all"))) == {"k"}


@pytest.mark.locus_only
def test_lru_crawler_enable_right_after_disable(start):
    """disable answers once the crawler thread is gone (memcached answers at once, and an
    enable right after may fail there; docs/kv.md): an enable sent right after starts a new
    one (OK), never 'failed to start' (test_lru_crawler_disable_and_enable's occasional
    failure, which this took from every run of this test to none)."""
    server = start()
    with server.conn() as c:
        for _ in range(100):  # both in one write: the enable comes right after the answer
            c.send("lru_crawler disable\r\nlru_crawler enable\r\n")
            assert (c.line(), c.line()) == (b"OK\r\n", b"OK\r\n")


def test_no_lru_crawler_option(start):
    """With -o no_lru_crawler, crawl and metadump answer 'CLIENT_ERROR lru crawler disabled'
    (before any argument check) until lru_crawler enable."""
    server = start("-o", "no_lru_crawler")
    with server.conn() as c:
        assert c.stats("settings")["lru_crawler"] == "no"
        for cmd in ["lru_crawler crawl 1", "lru_crawler crawl 0", "lru_crawler crawl all"]:
            assert reply(c, cmd) == b"CLIENT_ERROR lru crawler disabled\r\n", cmd
        assert metadump_once(c, "all") == "CLIENT_ERROR lru crawler disabled\r\n"
        assert reply(c, "lru_crawler sleep 5") == b"OK\r\n"
        assert reply(c, "lru_crawler enable") == b"OK\r\n"
        assert metadump(c, "all") == []


def test_lru_crawler_busy(start):
    """While a crawl runs, another crawl or a metadump answers 'BUSY currently processing
    crawler request' and stats shows lru_crawler_running 1 (a 5000-item crawl sleeping a
    second per 1000 items takes seconds)."""
    server = start()
    with server.conn() as c, server.conn() as d:
        fill(c, "b", 5000, 10)
        assert reply(c, "lru_crawler sleep 1000000") == b"OK\r\n"
        assert crawler(c, "lru_crawler crawl all") == b"OK\r\n"
        assert reply(c, "lru_crawler crawl all") == b"BUSY currently processing crawler request\r\n"
        assert reply(c, "lru_crawler crawl 1") == b"BUSY currently processing crawler request\r\n"
        assert metadump_once(d, "all") == "BUSY currently processing crawler request\r\n"
        assert c.stats()["lru_crawler_running"] == "1"


# ---------------------------------------------------------------------------------------------
# watch


def watcher(server, args=""):
    """A connection that has become a log watcher (it has read the OK)."""
    w = server.conn()
    w.call(f"watch {args}".strip() + "\r\n", "OK\r\n")
    return w


def lines_until(w, key):
    """Watch lines up to and including the first one about key (which is uri-encoded)."""
    out = []
    while True:
        line = raw_line(w)
        out.append(line)
        if f" key={key} " in line:
            return out


def test_watch_fetchers(start):
    """watch (= watch fetchers) answers OK, then one line per key fetched by any connection,
    'ts=<s>.<us> gid=<n> type=item_get key=<uri-encoded> status=found|not_found|flushed|expired
    clsid=<n> cfd=<fd> size=<value bytes>' ending in \\n; commands sent by the watcher get no
    reply. (Without the LRU maintainer and the crawler, so that nothing reclaims the expired
    item before the get meets it.)"""
    srv = start("-o", "no_lru_maintainer,no_lru_crawler")
    with srv.conn() as c:
        for args in ["", "fetchers"]:
            with watcher(srv, args) as w:
                w.send("version\r\n")
                store(c, "w:a", 3)
                c.call("set w:e 0 -1 1\r\nx\r\n", "STORED\r\n")
                c.call("get w:a w:none\r\n", "VALUE w:a 0 3\r\nvvv\r\nEND\r\n")
                c.call("get w:e\r\n", "END\r\n")
                store(c, "w:f", 1)
                c.call("flush_all\r\n", "OK\r\n")
                c.call("get w:f\r\n", "END\r\n")
                c.call("get w:end\r\n", "END\r\n")
                lines = lines_until(w, "w%3Aend")
                for line in lines:
                    assert GET_LINE.fullmatch(line), line
                got = [fields(line) for line in lines]
                found = [f for f in got if f["key"] == "w%3Aa" and f["status"] == "found"]
                assert len(found) == 1 and found[0]["size"] == "3" and found[0]["clsid"] != "0"
                none = [f for f in got if f["key"] == "w%3Anone"]
                assert [(f["status"], f["clsid"], f["size"]) for f in none] == [("not_found", "0", "0")]
                assert [f for f in got if f["key"] == "w%3Ae"][-1]["status"] == "expired"
                assert [f for f in got if f["key"] == "w%3Af"][-1]["status"] == "flushed"
                assert got[-1]["status"] == "not_found"


def test_watch_mutations(srv):
    """watch mutations: one line per store, 'ts=... gid=... type=item_store key=<key>
    status=stored|not_stored|exists|not_found cmd=set|add|replace|append|prepend|cas ttl=<s>
    clsid=<n> cfd=<fd> size=<value bytes>'; no item_get lines."""
    with srv.conn() as c, watcher(srv, "mutations") as w:
        store(c, "m:a", 3)
        c.call("add m:a 0 0 1\r\nx\r\n", "NOT_STORED\r\n")
        c.call("set m:t 0 1000 2\r\nxy\r\n", "STORED\r\n")
        c.call("cas m:none 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n")
        c.send("gets m:a\r\n")
        cas = int(c.line().split()[4])
        c.until_end()
        c.call(f"cas m:a 0 0 1 {cas + 1}\r\nx\r\n", "EXISTS\r\n")   # a cas not the item's
        c.call("replace m:none 0 0 1\r\nx\r\n", "NOT_STORED\r\n")
        c.call("append m:a 0 0 2\r\nzz\r\n", "STORED\r\n")
        store(c, "m:end", 1)
        lines = lines_until(w, "m%3Aend")
        for line in lines:
            assert STORE_LINE.fullmatch(line), line
        got = [(f["key"], f["status"], f["cmd"], f["size"]) for f in map(fields, lines)]
        assert got == [("m%3Aa", "stored", "set", "3"), ("m%3Aa", "not_stored", "add", "1"),
                       ("m%3At", "stored", "set", "2"), ("m%3Anone", "not_found", "cas", "1"),
                       ("m%3Aa", "exists", "cas", "1"), ("m%3Anone", "not_stored", "replace", "1"),
                       ("m%3Aa", "stored", "append", "5"), ("m%3Aend", "stored", "set", "1")]
        ttls = {f["key"]: int(f["ttl"]) for f in map(fields, lines)}
        assert ttls["m%3Aa"] == 0 and 990 <= ttls["m%3At"] <= 1000, ttls
        assert fields(lines[0])["clsid"] != "0"


def test_watch_fetchers_and_mutations(srv):
    """watch fetchers mutations gets both kinds of lines, in each connection's order."""
    with srv.conn() as c, watcher(srv, "fetchers mutations") as w:
        store(c, "fm:a", 1)
        c.call("get fm:a\r\n", "VALUE fm:a 0 1\r\nv\r\nEND\r\n")
        c.call("get fm:end\r\n", "END\r\n")
        got = [fields(line) for line in lines_until(w, "fm%3Aend")]
        kinds = [(f["type"], f["key"], f["status"]) for f in got]
        stored = kinds.index(("item_store", "fm%3Aa", "stored"))
        assert ("item_get", "fm%3Aa", "found") in kinds[stored + 1:], kinds


def test_watch_fetchers_inside_other_commands(srv):
    """As memcached logs an item_get for every lookup of a key, watch fetchers mutations shows
    one for each store (not_found for a new key, then the item_store line; found, with the old
    value's size, for an existing one), incr, delete, touch, mg and ms."""
    with srv.conn() as c, watcher(srv, "fetchers mutations") as w:
        c.call("set o:a 0 0 1\r\nx\r\n", "STORED\r\n")
        c.call("set o:a 0 0 3\r\nxyz\r\n", "STORED\r\n")
        c.call("add o:a 0 0 1\r\nx\r\n", "NOT_STORED\r\n")
        c.call("replace o:none 0 0 1\r\nx\r\n", "NOT_STORED\r\n")
        c.call("append o:a 0 0 1\r\nw\r\n", "STORED\r\n")
        c.call("incr o:n 1\r\n", "NOT_FOUND\r\n")
        c.call("delete o:a\r\n", "DELETED\r\n")
        c.call("touch o:a 10\r\n", "NOT_FOUND\r\n")
        c.call("mg o:a v\r\n", "EN\r\n")
        c.call("ms o:m 1\r\nx\r\n", "HD\r\n")
        c.call("get o:end\r\n", "END\r\n")
        got = [fields(line) for line in lines_until(w, "o%3Aend")]
        seen = [(f["type"], f["key"], f["status"], f["size"]) for f in got]
        assert seen == [
            ("item_get", "o%3Aa", "not_found", "0"), ("item_store", "o%3Aa", "stored", "1"),
            ("item_get", "o%3Aa", "found", "1"), ("item_store", "o%3Aa", "stored", "3"),
            ("item_get", "o%3Aa", "found", "3"), ("item_store", "o%3Aa", "not_stored", "1"),
            ("item_get", "o%3Anone", "not_found", "0"),
            ("item_store", "o%3Anone", "not_stored", "1"),
            ("item_get", "o%3Aa", "found", "3"), ("item_store", "o%3Aa", "stored", "4"),
            ("item_get", "o%3An", "not_found", "0"),
            ("item_get", "o%3Aa", "found", "4"),
            ("item_get", "o%3Aa", "not_found", "0"),
            ("item_get", "o%3Aa", "not_found", "0"),
            ("item_get", "o%3Am", "not_found", "0"), ("item_store", "o%3Am", "stored", "1"),
            ("item_get", "o%3Aend", "not_found", "0")], seen
        assert [f["cmd"] for f in got if f["type"] == "item_store"] == \
            ["set", "set", "add", "replace", "append", "set"]
        port = c.sock.getsockname()[1]
        conns = c.stats("conns")
        fd = [k.split(":")[0] for k, v in conns.items() if v == f"tcp:127.0.0.1:{port}"]
        assert {f["cfd"] for f in got} == set(fd), (got, conns)


def test_watch_and_metadump_after_pipelined_commands(srv):
    """watch, and lru_crawler metadump, sent in the same packet after another command whose
    reply has not gone out yet: memcached's 'ERROR cannot pipeline other commands before
    watch' (metadump), and the connection stays a normal one."""
    with srv.conn() as c:
        c.send("version\r\nwatch\r\n")
        assert c.line().startswith(b"VERSION ")
        assert c.line() == b"ERROR cannot pipeline other commands before watch\r\n"
        c.send("set p 0 0 1\r\nx\r\nlru_crawler metadump all\r\n")
        assert c.line() == b"STORED\r\n"
        assert c.line() == b"ERROR cannot pipeline other commands before metadump\r\n"
        c.call("get p\r\n", "VALUE p 0 1\r\nx\r\nEND\r\n")


def test_watch_listed_in_stats(srv):
    """A watcher shows as state conn_watch in stats conns, and in stats log_watchers."""
    with watcher(srv) as w, srv.conn() as c:
        port = w.sock.getsockname()[1]
        conns = c.stats("conns")
        fd = [k.split(":")[0] for k, v in conns.items() if v == f"tcp:127.0.0.1:{port}"]
        assert len(fd) == 1 and conns[f"{fd[0]}:state"] == "conn_watch", conns
        wait_for(lambda: int(c.stats()["log_watchers"]) >= 1, "log_watchers to count the watcher")


def test_watch_bad_arguments(srv):
    """watch with an unknown word answers ERROR and the connection stays a normal one; every
    known flag is accepted."""
    with srv.conn() as c:
        for cmd in ["watch foo", "watch fetchers foo", "watch FETCHERS"]:
            assert reply(c, cmd) == b"ERROR\r\n", cmd
        c.call("version\r\n", "VERSION ")
        c.line()
    for args in ["rawcmds", "evictions", "sysevents", "connevents", "proxyreqs", "proxyevents",
                 "proxyuser", "fetchers mutations evictions"]:
        watcher(srv, args).close()


def test_watch_evictions(start):
    """watch evictions: one line per evicted item, 'ts=... gid=... type=eviction key=<key>
    fetch=yes|no ttl=<-1 or s> la=<s since access> clsid=<n> size=<value bytes>'; nothing else."""
    server = start("-m", "2")
    with server.conn(timeout=20) as c, watcher(server, "evictions") as w:
        fill(c, "ev", 2400, 1000)
        evictions = int(c.stats()["evictions"])
        assert evictions > 0
        classes = item_classes(c)
        assert len(classes) == 1
        line = raw_line(w)
        assert EVICTION_LINE.fullmatch(line), line
        f = fields(line)
        assert re.fullmatch(r"ev\d+", f["key"]) and int(f["key"][2:]) < 2400, f
        assert (f["fetch"], f["ttl"], f["size"]) == ("no", "-1", "1000"), f
        assert int(f["clsid"]) in classes, (f, classes)
        w.sock.settimeout(0)
        try:
            w.buf += w.sock.recv(1 << 20)
        except BlockingIOError:
            pass
        for line in w.buf.decode().split("\n")[:-1]:
            assert EVICTION_LINE.fullmatch(line) or re.fullmatch(r"skipped=\d+", line), line


def test_watch_skipped_line_arrives_once_the_watcher_reads(start):
    """A watcher that does not read while 80000 lookups are logged loses lines; once it reads
    again, with a lookup now and then to log a new line (as memcached's t/watcher.t does:
    memcached reports the loss only when a later line finds room), a "skipped=<n>" line
    arrives, then real lines. (Lines that waited for the output to drain used to stay
    behind until the next one was logged, and the count with them: t/watcher.t hung so over
    its Unix socket. Over TCP's larger buffers this test did not catch that stall; it checks
    the skipped= report itself.)"""
    server = start("-o", "watcher_logbuf_size=8")
    w = watcher(server, "fetchers")
    spacer = "X" * 180
    with server.conn() as c:
        batch = 500
        for start_at in range(0, 80000, batch):
            c.send("".join(f"get foo{i}{spacer}\r\n" for i in range(start_at, start_at + batch)))
            c.expect("END\r\n" * batch)
        for n in range(1000000):
            if n % 100 == 0:
                c.call("get foo\r\n", "END\r\n")
            line = raw_line(w)
            if line.startswith("skipped="):
                assert int(line[len("skipped="):]) > 0, line
                break
        assert GET_LINE.fullmatch(raw_line(w)), "no real line after the skipped= line"
        w.close()


CONN_LINE = re.compile(r"ts=\d+\.\d+ gid=\d+ type=(conn_new|conn_close) rip=(\S+) rport=(\d+) "
                       r"transport=tcp(?: reason=(\w+))? cfd=(\d+)")


def conn_lines(w, port):
    """The conn_new and conn_close lines of the client on this port (lines about other
    connections, such as the closing of the one that found the server up, are skipped)."""
    found = {}
    while len(found) < 2:
        line = raw_line(w)
        m = CONN_LINE.fullmatch(line)
        assert m, line
        if int(m.group(3)) == port:
            assert m.group(1) not in found and (found or m.group(1) == "conn_new"), line
            found[m.group(1)] = m
    return found["conn_new"], found["conn_close"]


def test_watch_connevents(start):
    """watch connevents: a conn_new line for each accepted connection (its address and fd)
    and a conn_close line with the reason: normal after quit or the client's close, error
    after a protocol error, as memcached's t/watcher.t checks."""
    server = start()
    w = watcher(server, "connevents")
    for ending, reason in (("quit\r\n", "normal"), (None, "normal"),
                           ("GET / HTTP/1.1\r\n", "error")):
        c = server.conn()
        c.call("version\r\n", "VERSION ")
        c.line()
        port = c.sock.getsockname()[1]
        if ending:
            c.send(ending)
        else:
            c.close()
        new, closed = conn_lines(w, port)
        assert new.group(4) is None and new.group(2) == "127.0.0.1", new.group(0)
        assert closed.group(2, 5) == new.group(2, 5)
        assert closed.group(4) == reason, (ending, closed.group(0))
        c.close()
    w.close()


def test_watcher_limit(start):
    """The 21st watcher is refused with 'WATCHER_TOO_MANY log watcher limit reached'."""
    server = start()
    watchers = []
    try:
        for _ in range(20):
            watchers.append(watcher(server))
        with server.conn() as c:
            assert reply(c, "watch") == b"WATCHER_TOO_MANY log watcher limit reached\r\n"
    finally:
        for w in watchers:
            w.close()


def test_dash_W_disables_watch(start):
    """With -W, watch answers 'CLIENT_ERROR watch commands not allowed'."""
    server = start("-W")
    with server.conn() as c:
        for cmd in ["watch", "watch fetchers", "watch foo"]:
            assert reply(c, cmd) == b"CLIENT_ERROR watch commands not allowed\r\n", cmd


# ---------------------------------------------------------------------------------------------
# cache_memlimit, slabs automove, slabs reassign, verbosity


def test_cache_memlimit(srv):
    """cache_memlimit <MB> answers OK and sets stats settings maxbytes and stats limit_maxbytes;
    under 8 'MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m', over 1000000000
    'MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes', a non-number ERROR; noreply
    silences it."""
    with srv.conn() as c:
        before = int(c.stats("settings")["maxbytes"]) // MB
        try:
            assert reply(c, "cache_memlimit 100") == b"OK\r\n"
            assert c.stats("settings")["maxbytes"] == str(100 * MB)
            assert c.stats()["limit_maxbytes"] == str(100 * MB)
            assert reply(c, "cache_memlimit 8") == b"OK\r\n"
            assert c.stats("settings")["maxbytes"] == str(8 * MB)
            for cmd in ["cache_memlimit 7", "cache_memlimit 0"]:
                assert reply(c, cmd) == \
                    b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n", cmd
            assert reply(c, "cache_memlimit 1000000001") == \
                b"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"
            for cmd in ["cache_memlimit", "cache_memlimit x", "cache_memlimit -1",
                        "cache_memlimit 10.5", "cache_memlimit 1 2 3"]:
                assert reply(c, cmd) == b"ERROR\r\n", cmd
            assert c.stats("settings")["maxbytes"] == str(8 * MB)
            c.call("cache_memlimit 32 noreply\r\nversion\r\n", "VERSION ")
            c.line()
            assert c.stats("settings")["maxbytes"] == str(32 * MB)
            c.call("cache_memlimit 5 noreply\r\ncache_memlimit x noreply\r\nversion\r\n",
                   "VERSION ")
            c.line()
            assert reply(c, "cache_memlimit 48 junk") == b"OK\r\n"
            assert c.stats("settings")["maxbytes"] == str(48 * MB)
        finally:
            c.send(f"cache_memlimit {before}\r\n")
            c.line()


def test_slabs_automove(srv):
    """slabs automove 0|1|2 answers OK and sets stats settings slab_automove; 'slabs automove
    ratio <f>' sets slab_automove_ratio (%.2f); a level over 2 or a bad ratio answers ERROR, a
    non-number level 'CLIENT_ERROR bad command line format'; noreply silences it."""
    with srv.conn() as c:
        before = c.stats("settings")
        try:
            for level in ["0", "2", "1"]:
                assert reply(c, f"slabs automove {level}") == b"OK\r\n"
                assert c.stats("settings")["slab_automove"] == level
            assert reply(c, "slabs automove ratio 0.5") == b"OK\r\n"
            assert c.stats("settings")["slab_automove_ratio"] == "0.50"
            for cmd in ["slabs automove 3", "slabs automove ratio", "slabs automove ratio x",
                        "slabs automove", "slabs", "slabs foo", "slabs foo bar"]:
                assert reply(c, cmd) == b"ERROR\r\n", cmd
            for cmd in ["slabs automove x", "slabs automove -1"]:
                assert reply(c, cmd) == b"CLIENT_ERROR bad command line format\r\n", cmd
            c.call("slabs automove 0 noreply\r\nslabs automove 7 noreply\r\n"
                   "slabs automove ratio 0.3 noreply\r\nversion\r\n", "VERSION ")
            c.line()
            st = c.stats("settings")
            assert st["slab_automove"] == "0" and st["slab_automove_ratio"] == "0.30", st
            assert reply(c, "slabs automove 2 junk") == b"OK\r\n"
            assert c.stats("settings")["slab_automove"] == "2"
        finally:
            c.send(f"slabs automove {before['slab_automove']}\r\n"
                   f"slabs automove ratio {before['slab_automove_ratio']}\r\n")
            c.line()
            c.line()


def test_slabs_reassign_errors(srv):
    """slabs reassign <src> <dst>: equal classes answer 'SAME src and dst class are identical'
    (checked first), a class below 0 or above the largest 'BADCLASS invalid src or dst class
    id', a non-number 'CLIENT_ERROR bad command line format', a wrong word count ERROR."""
    with srv.conn() as c:
        for cmd in ["slabs reassign 1 1", "slabs reassign 99 99", "slabs reassign 5 5"]:
            assert reply(c, cmd) == b"SAME src and dst class are identical\r\n", cmd
        for cmd in ["slabs reassign 1 64", "slabs reassign 64 1", "slabs reassign 200 1",
                    "slabs reassign 1 -2", "slabs reassign -5 1"]:
            assert reply(c, cmd) == b"BADCLASS invalid src or dst class id\r\n", cmd
        for cmd in ["slabs reassign x 1", "slabs reassign 1 y", "slabs reassign 1.5 2"]:
            assert reply(c, cmd) == b"CLIENT_ERROR bad command line format\r\n", cmd
        for cmd in ["slabs reassign", "slabs reassign 1", "slabs reassign 1 2 3",
                    "slabs reassign 1 2 noreply"]:
            assert reply(c, cmd) == b"ERROR\r\n", cmd


def test_slabs_reassign_moves_a_page(start):
    """A source class with fewer than 2 pages answers 'NOSPARE source class has no spare
    pages' ('-1' = any class: BADCLASS when none has 2); with 2+ pages reassign answers OK and
    a page moves: slabs_moved 1, the source loses a page and the destination gains one."""
    server = start()
    with server.conn(timeout=20) as c:
        assert reply(c, "slabs automove 0") == b"OK\r\n"
        assert reply(c, "slabs reassign 2 1") == b"NOSPARE source class has no spare pages\r\n"
        assert reply(c, "slabs reassign 0 1") == b"NOSPARE source class has no spare pages\r\n"
        assert reply(c, "slabs reassign -1 1") == b"BADCLASS invalid src or dst class id\r\n"
        store(c, "small", 10)
        dst = next(iter(item_classes(c)))
        fill(c, "r", 2000, 1000)
        src = [cls for cls in item_classes(c) if cls != dst]
        assert len(src) == 1
        src = src[0]
        per, _ = slab_classes(c)
        pages = int(per[src]["total_pages"])
        assert pages >= 2 and per[dst]["total_pages"] == "1", per
        assert reply(c, f"slabs reassign {dst} {src}") == \
            b"NOSPARE source class has no spare pages\r\n"
        assert reply(c, f"slabs reassign {src} {dst}") == b"OK\r\n"
        wait_for(lambda: (lambda st: st["slabs_moved"] == "1" and st["slab_reassign_running"] == "0")
                 (c.stats()), "the page move to finish")
        per, _ = slab_classes(c)
        assert int(per[src]["total_pages"]) == pages - 1, per[src]
        assert per[dst]["total_pages"] == "2", per[dst]
        c.call("get small\r\n", "VALUE small 0 10\r\nvvvvvvvvvv\r\nEND\r\n")


def test_no_slab_reassign_option(start):
    """With -o no_slab_reassign, slabs reassign answers 'CLIENT_ERROR slab reassignment
    disabled' before any argument check; slabs automove still answers OK."""
    server = start("-o", "no_slab_reassign")
    with server.conn() as c:
        assert c.stats("settings")["slab_reassign"] == "no"
        for cmd in ["slabs reassign 1 2", "slabs reassign 1 1", "slabs reassign x 1"]:
            assert reply(c, cmd) == b"CLIENT_ERROR slab reassignment disabled\r\n", cmd
        assert reply(c, "slabs automove 1") == b"OK\r\n"


def test_verbosity(srv):
    """verbosity <n> answers OK and sets stats settings verbosity (capped at 2); a non-number
    answers 'CLIENT_ERROR bad command line format', no argument or too many ERROR; noreply
    silences both OK and the error."""
    with srv.conn() as c:
        try:
            assert reply(c, "verbosity 1") == b"OK\r\n"
            assert c.stats("settings")["verbosity"] == "1"
            assert reply(c, "verbosity 5") == b"OK\r\n"
            assert c.stats("settings")["verbosity"] == "2"
            for cmd in ["verbosity x", "verbosity -1", "verbosity 1.5"]:
                assert reply(c, cmd) == b"CLIENT_ERROR bad command line format\r\n", cmd
            for cmd in ["verbosity", "verbosity 1 2 3", "verbosity 2 noreply x"]:
                assert reply(c, cmd) == b"ERROR\r\n", cmd
            c.call("verbosity 0 noreply\r\nverbosity x noreply\r\nverbosity noreply\r\n"
                   "version\r\n", "VERSION ")
            c.line()
            assert c.stats("settings")["verbosity"] == "0"
            assert reply(c, "verbosity 1 junk") == b"OK\r\n"
            assert c.stats("settings")["verbosity"] == "1"
        finally:
            c.send("verbosity 0\r\n")
            c.line()


# ---------------------------------------------------------------------------------------------
# field names of stats, stats settings, stats items, stats slabs


def test_stats_has_exactly_memcacheds_fields(start):
    """stats reports memcached's fields and no others (memcached's t/stats.t counts them):
    every field of MEMCACHED_STATS by default; without the crawler, not its two, and without
    the LRU maintainer, not its juggles nor the segmented LRU's figures."""
    off = {"lru_crawler_running", "lru_crawler_starts", "lru_maintainer_juggles",
           "evicted_active", "moves_to_cold", "moves_to_warm", "moves_within_lru",
           "direct_reclaims", "lru_bumps_dropped"}
    with start().conn() as c:
        assert set(c.stats()) ^ set(MEMCACHED_STATS) == set()
    with start("-o", "no_lru_crawler,no_lru_maintainer").conn() as c:
        assert set(c.stats()) ^ (set(MEMCACHED_STATS) - off) == set()


def test_stats_field_names_and_simple_values(start):
    """With -m 64 -t 4 and items of two sizes, stats, stats settings, stats items (per class
    holding items) and stats slabs (per class with pages, then the totals) report every field
    memcached 1.6.18 reports, with the values that follow from the commands sent."""
    server = start("-m", "64", "-t", "4")
    with server.conn() as c:
        for i in range(3):
            store(c, f"s{i}", 10)
        for i in range(2):
            store(c, f"b{i}", 2000)
        c.call("get s0 nope\r\n", "VALUE s0 0 10\r\nvvvvvvvvvv\r\nEND\r\n")

        st = c.stats()
        missing = [f for f in MEMCACHED_STATS if f not in st]
        assert not missing, f"stats lacks {missing}"
        assert st["pid"] == str(server.pid)
        assert abs(int(st["time"]) - time.time()) < 30, st["time"]
        expect = {"cmd_get": 2, "get_hits": 1, "get_misses": 1, "cmd_set": 5, "curr_items": 5,
                  "total_items": 5, "threads": 4, "limit_maxbytes": 64 * MB, "evictions": 0,
                  "max_connections": 1024, "delete_hits": 0, "cmd_touch": 0, "cmd_flush": 0}
        assert {k: int(st[k]) for k in expect} == expect
        assert int(st["bytes"]) > 3 * 10 + 2 * 2000

        se = c.stats("settings")
        wanted = MEMCACHED_SETTINGS + (MEMCACHED_BUILD_SETTINGS if server.is_memcached else [])
        missing = [f for f in wanted if f not in se]
        assert not missing, f"stats settings lacks {missing}"
        expect = {"maxbytes": str(64 * MB), "maxconns": "1024", "tcpport": str(server.port),
                  "udpport": "0", "inter": "127.0.0.1", "verbosity": "0", "evictions": "on",
                  "num_threads": "4", "growth_factor": "1.25", "chunk_size": "48",
                  "item_size_max": str(MB), "cas_enabled": "yes", "stat_key_prefix": ":",
                  "detail_enabled": "no", "shutdown_command": "no", "flush_enabled": "yes",
                  "dump_enabled": "yes", "lru_crawler": "yes", "slab_reassign": "yes",
                  "track_sizes": "no", "domain_socket": "NULL", "oldest": "0"}
        assert {k: se[k] for k in expect} == expect

        items = c.stats("items")
        classes = item_classes(c)
        assert sorted(classes.values()) == [2, 3], classes
        small = [cls for cls, n in classes.items() if n == 3][0]
        big = [cls for cls, n in classes.items() if n == 2][0]
        for cls in classes:
            missing = [f for f in MEMCACHED_ITEMS_PER_CLASS if f"items:{cls}:{f}" not in items]
            assert not missing, f"stats items lacks {missing} for class {cls}"
            parts = sum(int(items[f"items:{cls}:number_{lru}"]) for lru in ["hot", "warm", "cold"])
            assert parts == classes[cls]
            assert items[f"items:{cls}:evicted"] == "0" and items[f"items:{cls}:outofmemory"] == "0"

        per, glob = slab_classes(c)
        assert set(per) == {small, big}, per
        missing = [f for f in MEMCACHED_SLABS_GLOBAL if f not in glob]
        assert not missing, f"stats slabs lacks {missing}"
        for cls, used, sets, hits in [(small, 3, 3, 1), (big, 2, 2, 0)]:
            missing = [f for f in MEMCACHED_SLABS_PER_CLASS if f not in per[cls]]
            assert not missing, f"stats slabs lacks {missing} for class {cls}"
            f = {k: int(v) for k, v in per[cls].items()}
            assert f["chunks_per_page"] == MB // f["chunk_size"], f
            assert f["total_pages"] == 1 and f["total_chunks"] == f["chunks_per_page"], f
            assert f["used_chunks"] == used and f["free_chunks"] == f["total_chunks"] - used, f
            assert (f["cmd_set"], f["get_hits"], f["free_chunks_end"]) == (sets, hits, 0), f
        assert (small, per[small]["chunk_size"]) == (1, "96")
        assert (big, per[big]["chunk_size"]) == (15, "2320")
        assert glob["active_slabs"] == "2" and glob["total_malloced"] == str(2 * MB), glob
