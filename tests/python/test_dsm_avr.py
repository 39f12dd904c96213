"""tools/dsm-avr: avr against sc (seed 004), its goal table and interval table from fake
records, and one real run of the applications of build/release under both protocols.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from locus_tools import dsm_avr as avr

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build/release"
SCRIPT = REPO / "tools/dsm-avr"


def _rec(app, proto, nodes, time_s, delay=1400, ok=True, **kw):
    return dict(app=app, protocol=proto, nodes=nodes, delay_us=delay, time_s=time_s, ok=ok,
                stats=[{}] * nodes, **kw)


def test_goal_ratio_per_node_count():
    recs = [_rec("jacobi", "sc", 2, 2.0), _rec("jacobi", "avr", 2, 1.0),
            _rec("jacobi", "sc", 4, 1.0), _rec("jacobi", "avr", 4, 1.0),
            _rec("water", "sc", 2, 1.0), _rec("water", "avr", 2, 2.0, delay=0)]
    g = avr.goal(recs)
    assert "| jacobi | 2 | 2.000 | 1.000 | 2.00 | K=1 | 1.000 | 2.00 | met |" in g
    assert "| jacobi | 4 | 1.000 | 1.000 | 1.00 | K=1 | 1.000 | 1.00 | not met |" in g
    assert "| water |" not in g  # no avr run at the goal's delay: no row


def test_goal_and_table_take_the_best_verified_pending():
    recs = [_rec("sor", "sc", 2, 3.0), _rec("sor", "avr", 2, 2.5, pending=1),
            _rec("sor", "avr", 2, 2.0, pending=2),
            _rec("sor", "avr", 2, 1.0, pending=4, ok=False)]  # fastest, but wrong
    g = avr.goal(recs)
    assert "| sor | 2 | 3.000 | 2.500 | 1.20 | K=2 | 2.000 | 1.50 | met |" in g
    t = avr.tables(recs)
    assert "| sc | avr K=1 | avr K=2 | avr K=4 | sc / avr K=1 |" in t
    assert "| sor | 1400 | 2 | 3.000 | 2.500 | 2.000 | 1.000 | 1.20 | K=2 | 1.50 | NO |" in t


def test_the_seeds_order_is_the_reference_when_it_ran():
    recs = [_rec("sor", "sc", 4, 2.0), _rec("sor", "avr", 4, 2.5, pending=1, ask=0),
            _rec("sor", "avr", 4, 1.0, pending=1, ask=1),
            _rec("sor", "avr", 4, 1.6, pending=4, ask=1)]
    g = avr.goal(recs)
    assert "| avr K=1 ask=0 (s) | sc / avr K=1 ask=0 |" in g
    assert "| sor | 4 | 2.000 | 2.500 | 0.80 | K=1 | 1.000 | 2.00 | met |" in g
    t = avr.tables(recs)
    assert "| sc | avr K=1 ask=0 | avr K=1 | avr K=4 | sc / avr K=1 ask=0 |" in t
    assert "| sor | 1400 | 4 | 2.000 | 2.500 | 1.000 | 1.600 | 0.80 | K=1 | 2.00 | yes |" in t
    seed = avr.avr_row(_rec("sor", "avr", 4, 2.5, pending=1, ask=0, sum_avr_asked=0))
    assert seed.startswith("| sor | 1400 | 4 | 1 ask=0 | 0 |")


def test_interval_row_sums_and_per_node_segments():
    r = _rec("sor", "avr", 2, 1.0, sum_avr_ckpt_read=3, sum_avr_ckpt_write=1,
             sum_avr_ckpt_upgrade=0, sum_avr_commits=3, sum_avr_roll_read=1,
             sum_avr_twins=8, sum_avr_asked=5, sum_avr_cp_s=0.004, sum_avr_op_s=0.2)
    row = avr.avr_row(r)
    # K 1; 4 intervals, 3 stood, 1 rolled back; none added, 5 asked; 2 twins each; Cp
    # 0.002 s per node, 1000 us each
    assert row.startswith("| sor | 1400 | 2 | 1 | 4 | 3/1/0 | 3 | 1 | 1/0/0 | 0 | 5 | 0 | 2.0 | "
                          "0 | 0.002 | 0.100 |")
    assert row.endswith("| 1000 |")


def test_bad_arguments_are_refused():
    for args in (["--apps", "nosuch"], ["--nodes", "0"], ["--delays", "x"], ["--pending", "0"],
                 ["--pending", "9"], ["--pending", "2,y"], ["--ask", "2"], ["--ask", "x"]):
        p = subprocess.run([sys.executable, str(SCRIPT)] + args, capture_output=True, text=True)
        assert p.returncode == 2 and "error" in p.stderr


def _jacobi_runs(out, pending, ask):
    """tools/dsm-avr on a 2-node jacobi at 200 us; its records."""
    if not (BUILD / "apps/locus-jacobi").exists() or not shutil.which("mpiexec"):
        pytest.fail("build/release/apps/locus-jacobi or mpiexec missing: run `make release`")
    p = subprocess.run([sys.executable, str(SCRIPT), "--build", str(BUILD), "--out", str(out),
                        "--apps", "jacobi", "--nodes", "2", "--delays", "200",
                        "--pending", pending, "--ask", ask],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads((out / "results.json").read_text())


def test_real_run_under_both_protocols(tmp_path):
    recs = _jacobi_runs(tmp_path, "1,4", "1")
    assert sorted(r["protocol"] for r in recs) == ["avr", "avr", "sc"]
    assert all(r["ok"] and r["time_s"] > 0 for r in recs)
    by_k = {r["pending"]: r for r in recs if r["protocol"] == "avr"}
    assert by_k[1]["env"]["LOCUS_DSM_AVR_PENDING"] == "1"
    assert by_k[4]["env"]["LOCUS_DSM_AVR_PENDING"] == "4"
    assert all(r["env"]["LOCUS_DSM_AVR_ASK"] == "1" for r in by_k.values())
    for a in by_k.values():
        opened = sum(a.get("sum_avr_ckpt_" + k, 0) for k in ("read", "write", "upgrade"))
        assert opened > 0  # jacobi's boundary pages move: avr opened intervals
    assert by_k[1].get("sum_avr_added", 0) == 0  # K=1: a second page ends the run
    assert "| jacobi | 200 | 2 |" in (tmp_path / "table.md").read_text()
    assert (tmp_path / "time_vs_nodes.png").stat().st_size > 0


def test_real_run_in_the_seeds_order_asks_for_nothing(tmp_path):
    recs = _jacobi_runs(tmp_path, "1", "0")
    seed = [r for r in recs if r["protocol"] == "avr"]
    assert len(seed) == 1 and seed[0]["env"]["LOCUS_DSM_AVR_ASK"] == "0"
    assert seed[0]["ok"] and sum(seed[0].get("sum_avr_ckpt_" + k, 0)
                                 for k in ("read", "write", "upgrade")) > 0
    assert seed[0].get("sum_avr_asked", -1) == 0
