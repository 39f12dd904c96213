"""tools/dsm-mt and locus_tools.dsmrun: running a DSM application with threads and
reading its statistics (seed 001 Table 2), with the real applications of build/release.
"""

import shutil
from pathlib import Path

import pytest

from locus_tools import dsm_mt as mt
from locus_tools import dsmrun

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build/release"


def _need_apps():
    if not (BUILD / "apps/locus-water").exists() or not shutil.which("mpiexec"):
        pytest.fail("build/release/apps/locus-water or mpiexec missing: run `make release`")


def test_run_reads_result_and_every_nodes_statistics():
    _need_apps()
    rec = dsmrun.run(str(BUILD), "water", ["-n", "64", "-s", "1", "--threads", "3"], 2,
                     {"LOCUS_DSM_DELAY_US": "0"}, timeout=120)
    assert rec["ok"] and rec["rc"] == 0, rec
    assert rec["threads"] == 3 and len(rec["stats"]) == 2
    assert sorted(s["dsm_node"] for s in rec["stats"]) == [0, 1]
    # 3 barriers per step by each of 3 threads, and the one that ends the timed phase.
    assert all(s["threads"] == 3 and s["barrier_waits"] == 3 * 3 + 1 for s in rec["stats"])
    assert all(s["barriers"] == 3 + 1 for s in rec["stats"])
    assert rec["sum_barrier_waits"] == 20
    assert rec["sum_stalls"] >= rec["sum_barrier_waits"]
    assert dsmrun.per(rec, "barrier_wait_s", "barrier_waits") == pytest.approx(
        rec["sum_barrier_wait_s"] / 20 * 1e6)


def test_run_reports_a_failed_command():
    _need_apps()
    rec = dsmrun.run(str(BUILD), "water", ["--threads", "0"], 1, timeout=60)
    assert not rec["ok"] and rec["rc"] == 2 and rec["time_s"] is None
    assert "--threads 0" in rec["stderr"]


def test_per_is_zero_without_events():
    assert dsmrun.per({"sum_x_s": 1.0, "sum_x": 0}, "x_s", "x") == 0.0
    assert dsmrun.per({"sum_x_s": 1.0, "sum_x": 4}, "x_s", "x") == 250000.0


def test_mt_overhead_is_switches_times_cost_taken_out_of_other():
    rec = {"stats": [{}, {}], "sum_switches": 2000, "other_s": 0.05}
    mt.split_other(rec, 10000.0)  # 1000 switches per node x 10 us = 0.01 s
    assert rec["mt_s"] == pytest.approx(0.01) and rec["rest_s"] == pytest.approx(0.04)
    rec = {"stats": [{}], "sum_switches": 10 ** 6, "other_s": 0.05}
    mt.split_other(rec, 10000.0)  # never more than other
    assert rec["mt_s"] == pytest.approx(0.05) and rec["rest_s"] == pytest.approx(0.0)


def test_labels_name_the_variants():
    lab = [mt.label({"threads": t, "prefetch": p, "switch": w})
           for t, p, w in [(1, 0, "all"), (4, 0, "all"), (1, 1, "all"), (4, 1, "all"),
                           (4, 1, "sync")]]
    assert lab == ["O", "4T", "P", "4TP", "4TPs"]


def test_dsm_mt_table_and_figures(tmp_path):
    _need_apps()
    args = type("A", (), {"nodes": 2, "protocol": "sc", "delay": 0, "threads": "1,2"})()
    recs = []
    for t, pf, sw in [(1, 0, "all"), (2, 0, "all"), (1, 1, "all"), (2, 1, "sync")]:
        r = dsmrun.run(str(BUILD), "jacobi",
                       ["-n", "32", "-i", "2", "--threads", str(t), "--prefetch", str(pf)], 2,
                       {"LOCUS_DSM_DELAY_US": "0", "LOCUS_DSM_SWITCH": sw}, timeout=120)
        r.update(threads=t, prefetch=pf, switch=sw)
        mt.split_other(r, 2000.0)
        recs.append(r)
        assert r["ok"], r
    md = mt.table(recs, args, 2000.0)
    for name in ("O", "2T", "P", "2TPs"):
        assert f"| jacobi | {name} |" in md
    assert "2000 ns" in md
    mt.plot(recs, str(tmp_path), args, lambda r: not r["prefetch"], "fig4.png", "t")
    mt.plot(recs, str(tmp_path), args, lambda r: True, "fig5.png", "t")
    assert (tmp_path / "fig4.png").stat().st_size > 1000
    assert (tmp_path / "fig5.png").stat().st_size > 1000
