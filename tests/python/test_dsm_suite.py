"""tools/dsm-suite's remote-miss report: the average over every node and the steps."""

from locus_tools import dsm_suite


def _rec(app, nodes, delay, misses, miss_s, steps_s, timed):
    rec = {"app": app, "nodes": nodes, "delay_us": delay, "protocol": "sc", "prefetch": 0,
           "time_s": 1.0, "ok": True, "sum_remote_misses": misses, "sum_remote_miss_s": miss_s,
           "sum_miss_steps": timed}
    for (key, _), s in zip(dsm_suite.MISS_STEPS, steps_s):
        rec["sum_" + key] = s
    return rec


def test_miss_average_is_over_every_node_and_steps_per_timed_miss():
    fast = _rec("jacobi", 2, 0, 400, 400 * 8e-6, [1e-4, 2e-4, 3e-4, 4e-4, 5e-4, 6e-4], 100)
    slow = _rec("sor", 4, 0, 10, 10 * 250e-6, [0] * 6, 10)
    delayed = _rec("jacobi", 2, 1000, 50, 50 * 2e-3, [0] * 6, 50)
    assert dsm_suite.miss_us(fast) == 8.0
    lines = dsm_suite.miss_table([fast, slow, delayed])
    rows = [line for line in lines if line.startswith("| jacobi") or line.startswith("| sor")]
    # only the runs at no emulated delay, in order
    assert rows == [
        "| jacobi | sc | 0 | 2 | 400 | 8.0 | met | 1.0 | 2.0 | 3.0 | 4.0 | 5.0 | 6.0 |",
        "| sor | sc | 0 | 4 | 10 | 250.0 | not met | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 |",
    ]


def test_no_table_without_misses_at_no_delay():
    assert dsm_suite.miss_table([_rec("jacobi", 1, 0, 0, 0, [0] * 6, 0)]) == []


def test_delays_take_microseconds_and_network_names():
    assert dsm_suite.parse_delays("0,500,rdma,tcp,seed,none") == [0, 500, "rdma", "tcp", "seed", 0]
    assert dsm_suite.delay_env(500) == {"LOCUS_DSM_DELAY_US": "500"}
    assert dsm_suite.delay_env("tcp") == {"LOCUS_DSM_NETWORK": "tcp"}
    assert [dsm_suite.delay_text(d) for d in (0, "seed")] == ["0 us", "seed"]
    for bad in ("-5", "ib", "1.5", ""):
        try:
            dsm_suite.parse_delays(bad)
        except ValueError:
            continue
        raise AssertionError(f"--delays {bad!r} was accepted")


def test_a_named_network_is_not_counted_at_no_delay():
    named = _rec("jacobi", 2, "rdma", 40, 40 * 5e-6, [0] * 6, 40)
    assert dsm_suite.miss_table([named]) == []
    table = dsm_suite.table([named], [])
    assert "| rdma | 2 |" in table


def test_suite_refuses_an_unknown_network(capsys):
    try:
        dsm_suite.main(["--delays", "0,ib", "--out", "/tmp/dsm-suite-refused"])
    except SystemExit as e:
        assert e.code == 2
    else:
        raise AssertionError("--delays 0,ib was accepted")
    assert "network names (none, rdma, tcp, seed)" in capsys.readouterr().err


def _nodes(*pairs):
    return [{"dsm_node": i, "idle_poll": p, "idle_poll_error": e} for i, (p, e) in enumerate(pairs)]


def test_idle_cpus_are_reported_over_the_runs_of_several_nodes():
    from locus_tools import dsmrun
    held = _nodes((1, 0), (1, 0))
    refused = _nodes((0, 13), (0, 13))
    off = _nodes((0, 0), (0, 0))
    alone = _nodes((0, 0))
    assert dsmrun.idle_summary([held, held, alone]) == (
        "Idle CPUs: asked to poll instead of halting in every one of the 2 runs of several "
        "nodes (LOCUS_DSM_IDLE_POLL).")
    mixed = dsmrun.idle_summary([held, refused, off])
    assert mixed.startswith("Idle CPUs, over the 3 runs of several nodes: asked to poll in 1; ")
    assert "not asked in 1 (/dev/cpu_dma_latency: Permission denied;" in mixed
    assert "left to the kernel in 1 (LOCUS_DSM_IDLE_POLL=0)" in mixed
    # one node asks nothing; a library older than the statistic reports nothing
    assert dsmrun.idle_summary([alone]) is None
    assert dsmrun.idle_summary([[{"dsm_node": 0}, {"dsm_node": 1}], None]) is None


def test_the_suite_table_says_whether_idle_cpus_polled():
    rec = _rec("jacobi", 2, 0, 40, 40 * 5e-6, [0] * 6, 40)
    rec["stats"] = _nodes((0, 13), (0, 13))
    table = dsm_suite.table([rec], [])
    assert "not asked in 1 (/dev/cpu_dma_latency: Permission denied;" in table
    rec["stats"] = _nodes((1, 0), (1, 0))
    assert "asked to poll instead of halting in every one of the 1 run of" in dsm_suite.table([rec], [])
