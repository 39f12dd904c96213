"""CSV rows: flattened, written, read back with their types."""

import csv

from locus_tools.table import LEAD_COLUMNS, flatten, parse_cell, read_csv, write_csv


def test_flatten_nests_and_lists():
    assert flatten({"a": {"b": 1, "c": {"d": 2}}, "l": [1, 2, 3], "x": None}) == {
        "a.b": 1, "a.c.d": 2, "l": "1;2;3", "x": None}


def test_round_trip_keeps_types_and_puts_lead_columns_first(tmp_path):
    rows = [
        {"mops": 1.5, "series": "mutex", "x": 4, "figure": "f", "status": "ok", "ok": True,
         "busy": None, "server_requests": [10, 20], "spec": "async:lines=16,queue=32"},
        {"series": "ffwd", "x": 8, "figure": "f", "status": "fail", "error": 'said "no", twice',
         "extra": "only here"},
    ]
    path = tmp_path / "t.csv"
    cols = write_csv(path, rows)
    lead = [c for c in cols if c in LEAD_COLUMNS]
    assert cols[:len(lead)] == [c for c in LEAD_COLUMNS if c in lead]
    assert "extra" in cols and "mops" in cols
    with open(path, newline="") as f:
        header = next(csv.reader(f))
    assert header == cols
    back = read_csv(path)
    assert len(back) == 2
    a, b = back
    assert a["mops"] == 1.5 and a["x"] == 4 and a["ok"] is True and a["busy"] is None
    assert a["server_requests"] == "10;20"
    assert a["spec"] == "async:lines=16,queue=32"
    assert a["extra"] is None
    assert b["error"] == 'said "no", twice' and b["mops"] is None


def test_parse_cell():
    assert parse_cell("") is None
    assert parse_cell("false") is False
    assert parse_cell("12") == 12
    assert parse_cell("1e3") == 1000.0
    assert parse_cell("mpsc:locked,copy") == "mpsc:locked,copy"
