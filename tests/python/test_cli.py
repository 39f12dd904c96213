"""tools/reproduce and tools/demo as a user runs them: exit codes and messages."""

import subprocess
import sys

from conftest import REPO
from test_figures import NAMES


def _run(*args, script="reproduce"):
    return subprocess.run([sys.executable, str(REPO / "tools" / script), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_list_names_every_figure():
    p = _run("--list")
    assert p.returncode == 0
    assert [line.split()[0] for line in p.stdout.splitlines()] == NAMES


def test_unknown_figure_exits_nonzero_and_lists_the_known_ones():
    p = _run("seed002-fig99")
    assert p.returncode == 2
    assert "unknown figure 'seed002-fig99'" in p.stderr
    for name in NAMES:
        assert name in p.stderr
    assert "Traceback" not in p.stderr


def test_bad_options_are_one_message_not_a_traceback(tmp_path):
    for args in (["seed002-fig9", "--duration", "0"], ["seed002-fig9", "--repeat", "0"],
                 ["seed002-fig9", "--frobnicate"], []):
        p = _run(*args)
        assert p.returncode == 2, args
        assert p.stderr.startswith("reproduce: ") and "Traceback" not in p.stderr, args
    p = _run("seed002-fig9", "--replot", "--out", tmp_path)
    assert p.returncode == 2 and "does not exist" in p.stderr


def test_missing_bench_is_explained(tmp_path):
    p = _run("seed002-fig9", "--quick", "--bench", tmp_path / "nope", "--out", tmp_path)
    assert p.returncode == 2
    assert "locus-bench not found" in p.stderr and "Traceback" not in p.stderr


def test_help_tells_about_figures_and_report():
    p = _run("--help")
    assert p.returncode == 0
    assert "report" in p.stdout and "seed000-fig3-5" in p.stdout and "Exit status" in p.stdout
    p = _run("report", "--help")
    assert p.returncode == 0 and "analysis" in p.stdout
    p = _run("--help", script="demo")
    assert p.returncode == 0 and "two minutes" in " ".join(p.stdout.split())


def test_report_of_nothing_says_so(tmp_path):
    p = _run("report", "--out", tmp_path / "none", "--dest", tmp_path / "dest")
    assert p.returncode == 0, p.stderr
    assert "No figures found" in (tmp_path / "dest/reproduction.md").read_text()


def test_install_script_is_valid_sh():
    assert subprocess.run(["sh", "-n", str(REPO / "scripts/install-python")]).returncode == 0
