"""Rows to CSV and back.

A figure's CSV has one row per measurement (or per failed point): the figure's own columns
first (series, x, ...), then every field of the bench's JSON line, flattened. Reading it
back restores numbers, booleans and empty cells (None), so a figure can be redrawn and a
report summarized from the CSV alone.
"""

import csv
import json

# The columns every figure writes first, in this order; the rest follow as first seen.
LEAD_COLUMNS = [
    "figure", "series", "x_name", "x", "panel", "total_threads", "clients",
    "rep", "status", "error",
]


def flatten(record, prefix=""):
    """{'a': {'b': 1}, 'l': [1, 2]} -> {'a.b': 1, 'l': '1;2'}: one cell per leaf."""
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        elif isinstance(value, (list, tuple)):
            flat[name] = ";".join(_cell(v) for v in value)
        else:
            flat[name] = value
    return flat


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def columns_of(rows):
    """The lead columns that any row has, then every other column in first-seen order."""
    seen = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    lead = [c for c in LEAD_COLUMNS if c in seen]
    rest = [c for c in seen if c not in LEAD_COLUMNS]
    return lead + rest


def write_csv(path, rows):
    """Writes rows (dicts, already flat or not) with a header; returns the column list."""
    flat_rows = [flatten(r) for r in rows]
    cols = columns_of(flat_rows)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in flat_rows:
            w.writerow([_cell(r.get(c)) for c in cols])
    return cols


def parse_cell(text):
    """'' -> None, 'true' -> True, '12' -> 12, '1.5' -> 1.5, anything else stays text."""
    if text == "":
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def read_csv(path):
    """Rows as dicts with typed values (see parse_cell)."""
    with open(path, newline="") as f:
        return [{k: parse_cell(v) for k, v in row.items()} for row in csv.DictReader(f)]
