"""The report: tables from CSVs, PNGs copied, hand-written analysis kept across regeneration."""

import json

from locus_tools import registry
from locus_tools.plot import draw
from locus_tools.report import PLACEHOLDER, read_analyses, write_report
from locus_tools.table import write_csv


def _fake_run(out, machine, add=(4.0, 6.0), sqrt=(2.0, 4.0)):
    """A seed002-fig9 result without running anything: CSV, meta and PNG."""
    rows = []
    for series, values in (("add", add), ("sqrt", sqrt)):
        for servers, mops in zip((1, 2), values):
            rows.append({"figure": "seed002-fig9", "series": series, "x_name": "servers",
                         "x": servers, "status": "ok", "error": "", "mops": mops,
                         "oversubscribed": servers == 2, "mapping": "fake mapping"})
    rows.append({"figure": "seed002-fig9", "series": "sqrt", "x_name": "servers", "x": 3,
                 "status": "fail", "error": "child crashed", "mapping": "fake mapping"})
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "seed002-fig9.csv", rows)
    (out / "seed002-fig9.meta.json").write_text(json.dumps(
        {"command": "tools/reproduce seed002-fig9 --out X", "duration_s": 1.0, "repeat": 1,
         "started": "2024-01-01T00:00:00", "elapsed_s": 3.0, "mapping": "fake mapping"}))
    draw(registry.get("seed002-fig9"), rows, machine, path=out / "seed002-fig9.png")


def test_report_has_machine_commands_table_and_pictures(tmp_path, machine):
    out, dest = tmp_path / "out", tmp_path / "dest"
    _fake_run(out, machine)
    path = write_report(out, dest, machine)
    text = path.read_text()
    assert path == dest / "reproduction.md"
    assert (dest / "seed002-fig9.png").read_bytes() == (out / "seed002-fig9.png").read_bytes()
    assert (dest / "seed002-fig9.csv").exists()
    assert machine.long() in text
    assert "tools/reproduce seed002-fig9 --out X" in text
    assert "![seed002-fig9](seed002-fig9.png)" in text
    assert "fake mapping" in text
    assert "| servers | add | sqrt | add / sqrt |" in text
    assert "| 1 | 4.00 | 2.00 | 2.00x |" in text
    assert "| 2 | 6.00* | 4.00* | 1.50x |" in text
    assert "| 3 | — | — | — |" in text
    assert "child crashed" in text
    assert read_analyses(text) == {"seed002-fig9": PLACEHOLDER + "\n"}
    assert "seed002-fig3" not in text  # not measured: no section


def test_analysis_survives_regeneration(tmp_path, machine):
    out, dest = tmp_path / "out", tmp_path / "dest"
    _fake_run(out, machine)
    path = write_report(out, dest, machine)
    mine = "Agrees: sqrt needs more servers.\n\nSecond paragraph, with `code`.\n"
    text = path.read_text().replace(PLACEHOLDER + "\n", mine)
    # an analysis of a figure that is not measured any more must not be lost either
    text += "\n<!-- analysis:seed002-fig3 -->\nOld words on Figure 3.\n<!-- /analysis:seed002-fig3 -->\n"
    path.write_text(text)

    _fake_run(out, machine, add=(5.0, 7.0))  # new numbers
    text2 = write_report(out, dest, machine).read_text()
    analyses = read_analyses(text2)
    assert analyses["seed002-fig9"] == mine
    assert analyses["seed002-fig3"] == "Old words on Figure 3.\n"
    assert "| 1 | 5.00 | 2.00 | 2.50x |" in text2
    assert PLACEHOLDER not in text2


def test_report_falls_back_to_an_earlier_copy_in_dest(tmp_path, machine):
    out, dest = tmp_path / "out", tmp_path / "dest"
    _fake_run(out, machine)
    write_report(out, dest, machine)
    text = write_report(tmp_path / "empty", dest, machine).read_text()
    assert "seed002-fig9" in text and "from an earlier run" in text
