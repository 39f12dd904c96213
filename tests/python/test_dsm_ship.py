"""tools/dsm-ship: shipped against page-based operations/s, the best page protocol, the goals,
from fake records and from a short real run of build/release/apps/locus-dsm-ship.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from locus_tools import dsm_ship as ship

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build/release"


def _rec(workload, nodes, delay, proto, shipped, ops_s, ok=True):
    return {"workload": workload, "nodes": nodes, "delay": delay, "protocol": proto,
            "ship": shipped, "ok": ok, "params": f"workload={workload} ops_per_s={ops_s}"}


def test_best_page_protocol_and_ratio():
    recs = [_rec("gups", 4, 0, "sc", 0, 1000), _rec("gups", 4, 0, "lrc", 0, 4000),
            _rec("gups", 4, 0, "sc", 1, 50000), _rec("gups", 4, 0, "lrc", 1, 30000),
            _rec("gups", 4, 500, "sc", 0, 100), _rec("gups", 4, 500, "sc", 1, 1500),
            _rec("counter", 4, 20, "sc", 0, 500), _rec("counter", 4, 20, "sc", 1, 4000)]
    assert ship.rate(ship.best(recs, "gups", 4, 0, 0)) == 4000  # lrc is the best page one
    g = "\n".join(ship.goals(recs))
    assert "no delay, 4 nodes: 12.5x (met; goal 5x)" in g  # 50000 / 4000
    assert "at 500 us, 4 nodes: 15.0x (NOT met; goal 20x)" in g
    assert "at 20 us, 4 nodes: 8.0x (NOT met; goal 10x)" in g


def test_a_run_that_failed_its_check_is_left_out():
    recs = [_rec("hash", 2, 0, "sc", 0, 9000, ok=False), _rec("hash", 2, 0, "lrc", 0, 100),
            _rec("hash", 2, 0, "sc", 1, 5000)]
    assert ship.rate(ship.best(recs, "hash", 2, 0, 0)) == 100
    assert "not measured" in ship.goal_line(recs, "x", "gups", 4, 0, 5)


def test_crossover_is_the_first_run_length_where_moving_pages_keeps_up():
    recs = []
    for k, page, shipped in ((1, 1000, 50000), (64, 40000, 60000), (512, 90000, 70000)):
        for ship_, rate_ in ((0, page), (1, shipped)):
            r = _rec("gups", 4, 0, "sc", ship_, rate_)
            r["run"] = k
            recs.append(r)
    assert ship.crossover(recs, 4, 0, [1, 64, 512]) == 512
    assert ship.crossover(recs, 4, 0, [1, 64]) is None


def test_page_runs_do_fewer_operations_at_longer_delays():
    assert ship.ops_for(1, 500, 20000) == 20000
    assert ship.ops_for(0, 0, 20000) > ship.ops_for(0, 20, 20000) > ship.ops_for(0, 500, 20000)
    assert ship.ops_for(0, 500, 100) >= 50


def test_real_run_writes_table_and_plot(tmp_path):
    if not (BUILD / "apps/locus-dsm-ship").exists() or not shutil.which("mpiexec"):
        pytest.fail("build/release/apps/locus-dsm-ship or mpiexec missing: run `make release`")
    p = subprocess.run([sys.executable, str(REPO / "tools/dsm-ship"), "--build", str(BUILD),
                        "--out", str(tmp_path), "--nodes", "2", "--delays", "0",
                        "--protocols", "sc", "--workloads", "counter,gups", "--ops", "300",
                        "--runs", "1,64"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    md = (tmp_path / "table.md").read_text()
    assert "| counter | 2 | 0 |" in md and "| gups | 2 | 0 |" in md
    runs = json.loads((tmp_path / "results.json").read_text())["runs"]
    assert len(runs) == 6 and all(r["ok"] for r in runs)  # and gups with K = 64, both ways
    assert "## Crossover: random updates in runs of K consecutive words, 2 nodes" in md
    assert (tmp_path / "ship.png").stat().st_size > 1000
    assert (tmp_path / "crossover.png").stat().st_size > 1000
