"""The Markdown report of reproduced figures (DEST/reproduction.md).

A report is regenerated whenever figures are re-measured, but whether a figure agrees with
its seed is a human judgement written into the report by hand. That text lives between
<!-- analysis:FIG --> and <!-- /analysis:FIG --> and is carried over verbatim on every
regeneration, including for figures that are not part of the new run.
"""

import datetime
import json
import re
import shutil
from pathlib import Path

from . import PYTHON, REPRODUCE, registry
from .figure import METRICS, aggregate, cycles_label, fmt_x, series_order, spread
from .table import read_csv

REPORT_NAME = "reproduction.md"
PLACEHOLDER = "*Agrees with the seed / differs from it: not written yet.*"
_ANALYSIS = re.compile(r"<!-- analysis:(\S+?) -->\n?(.*?)<!-- /analysis:\1 -->", re.DOTALL)


def read_analyses(text):
    """{figure: hand-written text} from an existing report."""
    return {m.group(1): m.group(2) for m in _ANALYSIS.finditer(text or "")}


def analysis_block(name, text=None):
    body = text if text is not None else PLACEHOLDER + "\n"
    if not body.endswith("\n"):
        body += "\n"
    return f"<!-- analysis:{name} -->\n{body}<!-- /analysis:{name} -->"


def _fmt(v, metric):
    if v is None:
        return "—"
    if metric == "iters_per_s":
        return f"{v / 1e3:.1f}k" if v < 1e6 else f"{v / 1e6:.2f}M"
    if metric == "mops":
        return f"{v:.2f}"
    if metric in ("cycles", "latency_cycles_mean", "latency_cycles_median"):
        return f"{v:.0f}"
    if metric == "insert_s":
        return f"{v:.2f}"
    return f"{v:.1f}"


def _best(values, names, higher):
    """(name, value) of the best present series among names, or (None, None)."""
    present = [(values[n], n) for n in names if values.get(n) is not None]
    if not present:
        return None, None
    v, n = max(present) if higher else min(present)
    return n, v


def summary_table(fig, rows, metric=None, with_ratios=True):
    """Markdown lines: one row per x, the figure's table metric per series, its ratios."""
    metric = metric or fig.table_metric
    series = series_order(rows)
    by_metric = {}

    def values_at(m):
        if m not in by_metric:
            agg = aggregate(rows, m)
            table = {}
            for s, pts in agg.items():
                for x, v, o in pts:
                    table.setdefault(x, {})[s] = (v, o)
            by_metric[m] = table
        return by_metric[m]

    main = values_at(metric)
    ranges = spread(rows, metric)
    ratios = fig.ratios(series) if with_ratios else []
    ratios = [r for r in ratios if any(s in series for s in r.num) and any(s in series for s in r.den)]
    bests = fig.best_of(series) if fig.best_of and with_ratios else []
    head = [fig.x_name]
    if fig.table_series:
        head += series
    head += [label for label, _ in bests] + [r.label for r in ratios]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    xs = sorted({r["x"] for r in rows})
    for x in xs:
        cells = [fmt_x(x)]
        at = main.get(x, {})
        if fig.table_series:
            for s in series:
                v, o = at.get(s, (None, False))
                lo, hi, n = ranges.get((s, x), (None, None, 0))
                cell = _fmt(v, metric) + ("*" if o and v is not None else "")
                if v is not None and n > 1:
                    cell += f" ({_fmt(lo, metric)}–{_fmt(hi, metric)})"
                cells.append(cell)
        plain = {s: v for s, (v, _) in at.items()}
        for label, names in bests:
            n, v = _best(plain, names, METRICS[metric][1])
            cells.append(f"{n} ({_fmt(v, metric)})" if n else "—")
        for r in ratios:
            m = r.metric or metric
            vals = {s: v for s, (v, _) in values_at(m).get(x, {}).items()}
            higher = METRICS[m][1]
            _, num = _best(vals, r.num, higher)
            _, den = _best(vals, r.den, higher)
            cells.append(f"{num / den:.2f}x" if num is not None and den else "—")
        lines.append("| " + " | ".join(cells) + " |")
    unit = cycles_label(rows) if metric == "cycles" else METRICS[metric][0]
    note = (f"Values: {unit}, median of repeats (and their range, min–max, where a point was "
            f"measured more than once); `*` = more threads than CPUs; — = failed or "
            f"not measured. Ratios compare the best of each group measured in the same run.")
    return [note, ""] + lines


def _figure_source(fig, out, dest):
    """Where fig's CSV is: the new run in out, else an earlier report's copy in dest."""
    for base in (Path(out), Path(dest)):
        if (base / f"{fig.name}.csv").exists():
            return base
    return None


def _section(fig, base, out, dest, analyses):
    rows = read_csv(base / f"{fig.name}.csv")
    meta_path = base / f"{fig.name}.meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    failed = [r for r in rows if r.get("status") != "ok"]
    mapping = meta.get("mapping") or next((r.get("mapping") for r in rows if r.get("mapping")), "")
    lines = [f"## {fig.seed_ref}: {fig.caption}", "", f"`{fig.name}`" + (
        " (from an earlier run: its CSV was already in the report's folder)" if base != Path(out) else ""), ""]
    if mapping:
        lines += [f"**Setup here.** {mapping}", ""]
    if meta:
        lines += [
            f"**Measured** {meta.get('started', '?')}: {len(rows) - len(failed)} measurements, "
            f"{len(failed)} failed, "
            + (f"{meta['records']:,} records each" if meta.get("records")
               else f"{meta.get('duration_s', '?')} s each")
            + ", repeat "
            f"{meta.get('repeat', 1)}{', quick' if meta.get('quick') else ''}; took "
            f"{meta.get('elapsed_s', '?')} s. Command: `{meta.get('command', '?')}`",
            "",
        ]
    if (base / f"{fig.name}.png").exists() or (Path(dest) / f"{fig.name}.png").exists():
        lines += [f"![{fig.name}]({fig.name}.png)", ""]
    lines += summary_table(fig, rows) + [""]
    for metric in fig.more_tables:
        lines += summary_table(fig, rows, metric, with_ratios=False) + [""]
    if failed:
        lines.append("Failed points (the bench's words):")
        lines.append("")
        for r in failed[:10]:
            lines.append(f"- {r['series']} at {fig.x_name}={fmt_x(r['x'])}: {r.get('error') or '?'}")
        if len(failed) > 10:
            lines.append(f"- … and {len(failed) - 10} more (see {fig.name}.csv)")
        lines.append("")
    lines += [analysis_block(fig.name, analyses.get(fig.name)), ""]
    return lines


def write_report(out, dest, machine, name=REPORT_NAME, now=None, command=None):
    """Writes dest/name from the figures in out (or earlier copies in dest); returns its path.

    The PNG and CSV of every figure found in out are copied into dest as FIG.png and
    FIG.csv, so the report and its pictures travel together.
    """
    out, dest = Path(out), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / name
    analyses = read_analyses(path.read_text()) if path.exists() else {}
    now = now or datetime.datetime.now()
    command = command or f"{REPRODUCE} report --out {out} --dest {dest}"

    figures = []
    for fig in registry.FIGURES.values():
        base = _figure_source(fig, out, dest)
        if base is None:
            continue
        if base == out and out.resolve() != dest.resolve():
            for ext in ("png", "csv"):
                src = out / f"{fig.name}.{ext}"
                if src.exists():
                    shutil.copyfile(src, dest / f"{fig.name}.{ext}")
        figures.append((fig, base))

    commands = []
    for fig, base in figures:
        meta_path = base / f"{fig.name}.meta.json"
        if meta_path.exists():
            cmd = json.loads(meta_path.read_text()).get("command")
            if cmd and cmd not in commands:
                commands.append(cmd)
    lines = [
        "# The seeds' figures, measured on this machine",
        "",
        f"Generated by `{command}` on "
        f"{now.strftime('%Y-%m-%d %H:%M')}.",
        "",
        f"**Machine:** {machine.long()}.",
        "",
        "The seeds measured machines with 24 (seeds 000 and 003) and 56 (seed 002) hardware threads; "
        "every figure below maps their thread counts onto this machine's CPUs and says how. "
        "Absolute numbers on a shared machine move by tens of percent between runs: read the "
        "shapes and the ratios of mechanisms measured in the same run. Points with more "
        "threads (clients + servers) than CPUs are drawn hollow and their series marked `*`.",
        "",
        "Commands:",
        "",
        "```sh",
        *([PYTHON + c for c in commands] or ["make figures"]),
        f"{PYTHON}{command}",
        "```",
        "",
    ]
    if not figures:
        lines += [f"No figures found in {out}: run `{REPRODUCE} all` first.", ""]
    for fig, base in figures:
        lines += _section(fig, base, out, dest, analyses)
    shown = {fig.name for fig, _ in figures}
    orphans = {k: v for k, v in analyses.items() if k not in shown}
    if orphans:
        lines += ["## Analyses of figures not in this report", "",
                  "Kept from the previous report; their measurements are not here now.", ""]
        for name, text in orphans.items():
            lines += [f"### {name}", "", analysis_block(name, text), ""]
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path
