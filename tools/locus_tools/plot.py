"""Drawing a figure's rows with matplotlib (no display needed).

Conventions shared by every figure, so they read alike:
- one line per series, medians of repeats, failed points left as gaps;
- a point measured with more threads than CPUs is drawn hollow, and its series is
  labelled with '*' and explained in the legend;
- bar panels (a few series at one or two x, seed 002 Figures 12 and 13) draw a group of
  bars per x, one per series, with the range of repeats as an error bar;
- the title names the seed's figure and this machine; the footnote says how the seed's
  setup was mapped onto this machine and which points failed.
"""

import textwrap

try:
    import matplotlib
except ImportError:
    raise SystemExit("locus tools: drawing the figures needs Python's matplotlib "
                     "(pip install matplotlib; in a source tree, scripts/install-python)")

matplotlib.use("Agg")  # before anything imports pyplot: files only, never a window

from matplotlib.figure import Figure as MplFigure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

from .figure import METRICS, aggregate, cycles_label, fmt_x, series_order, spread  # noqa: E402

OVERSUB_NOTE = "* hollow: more threads than CPUs"
MARKERS = ["o", "s", "^", "D", "v", "<", ">", "p", "h", "X", "P", "*", "d", "8", "H", "1", "2"]


def _short_number(v, _pos=None):
    """Tick labels: 1, 16, 1K, 64K, 1M."""
    if v <= 0:
        return "0"
    for suffix, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if v >= scale and v % scale == 0:
            return f"{int(v // scale)}{suffix}"
    return f"{v:g}"


def _colors(n):
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _set_xscale(ax, scale, xs):
    if scale == "log2":
        ax.set_xscale("log", base=2)
    elif scale == "symlog2":
        ax.set_xscale("symlog", base=2, linthresh=1, linscale=0.5)
    if scale in ("log2", "symlog2") and xs:
        ticks = sorted(set(xs))
        while len(ticks) > 12:
            ticks = ticks[::2]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(_short_number))


def title_of(fig, machine, width=100):
    head = textwrap.fill(f"{fig.seed_ref}: {fig.caption}", width)
    return f"{head}\nmeasured on this machine: {machine.short()}"


def _footnote(fig, rows, mapping):
    failed = [r for r in rows if r.get("status") != "ok"]
    text = f"Setup here: {mapping}" if mapping else ""
    if failed:
        where = ", ".join(f"{r['series']} at {fig.x_name}={fmt_x(r['x'])}" for r in failed[:6])
        more = f" and {len(failed) - 6} more" if len(failed) > 6 else ""
        text += f"  Failed (gaps): {where}{more}; see the CSV's error column."
    return "\n".join(textwrap.wrap(text, 150))


def _busy_basis(rows, panel):
    """Server busy is a share of time for ffwd/async and of dequeues for mpsc: say which."""
    if panel.metric != "server_busy_pct":
        return ""
    basis = {}
    for r in rows:
        if r.get("status") == "ok" and r.get("server_busy_basis"):
            basis.setdefault(r["server_busy_basis"], []).append(r["mechanism"].split(":")[0])
    if not basis:
        return ""
    parts = [f"{b} ({', '.join(dict.fromkeys(m))})" for b, m in basis.items()]
    return "\nshare of " + "; of ".join(parts)


def _draw_bars(ax, fig, panel, rows, data, colors):
    """A group of bars per x, one bar per series; returns (handles, labels, any oversub)."""
    xs = sorted({x for pts in data.values() for x, _, _ in pts})
    ranges = spread(rows, panel.metric, panel.group)
    width = 0.8 / max(1, len(data))
    handles, labels, any_oversub = [], [], False
    for i, (series, pts) in enumerate(data.items()):
        oversub = any(o for _, _, o in pts)
        any_oversub |= oversub
        for x, v, o in pts:
            pos = xs.index(x) + (i - (len(data) - 1) / 2) * width
            lo, hi, n = ranges.get((series, x), (v, v, 1))
            ax.bar([pos], [v], width=width * 0.9, color="none" if o else colors[series],
                   edgecolor=colors[series], linewidth=1.5,
                   yerr=[[v - lo], [hi - v]] if n > 1 else None, ecolor="0.2", capsize=3)
            ax.annotate(f"{v:.3g}", xy=(pos, hi if n > 1 else v), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7)
        handles.append(Patch(facecolor="none" if all(o for _, _, o in pts) else colors[series],
                             edgecolor=colors[series], linewidth=1.5))
        labels.append(series + (" *" if oversub else ""))
    ax.set_xticks(range(len(xs)), [fmt_x(x) for x in xs])
    ax.set_xlim(-0.6, len(xs) - 0.4)
    return handles, labels, any_oversub


def draw(fig, rows, machine, path=None, mapping=None):
    """Draws fig's panels from rows; saves a PNG at path if given; returns the Figure."""
    panels = fig.panels
    ncols = 1 if len(panels) == 1 else 2
    nrows = (len(panels) + ncols - 1) // ncols
    series_all = series_order(rows)
    many = len(series_all) > 8
    width = (9 if ncols == 1 else 14) + (3 if many else 0)
    height = 1.4 + 4.4 * nrows
    mfig = MplFigure(figsize=(width, height), dpi=100, layout="constrained")
    keys = list(dict.fromkeys(fig.color_key(s) for s in series_all))
    key_color = dict(zip(keys, _colors(len(keys))))
    colors = {s: key_color[fig.color_key(s)] for s in series_all}
    markers = {s: MARKERS[i % len(MARKERS)] for i, s in enumerate(series_all)}
    if mapping is None:
        mapping = next((r.get("mapping") for r in rows if r.get("mapping")), "")

    for i, panel in enumerate(panels):
        ax = mfig.add_subplot(nrows, ncols, i + 1)
        data = aggregate(rows, panel.metric, panel.group)
        xs = []
        handles, labels = [], []
        any_oversub = False
        if panel.kind == "bar":
            handles, labels, any_oversub = _draw_bars(ax, fig, panel, rows, data, colors)
            data = {}  # drawn
        for series, pts in data.items():
            style = {"linestyle": "-", "linewidth": 1.5, **fig.series_style(series, series_all)}
            oversub = any(o for _, _, o in pts)
            any_oversub |= oversub
            label = series + (" *" if oversub else "")
            px = [p[0] for p in pts]
            xs += px
            ax.plot(px, [p[1] for p in pts], color=colors[series], **style)
            # Markers apart from the line: filled where T <= CPUs, hollow where not.
            for x, y, o in pts:
                ax.plot([x], [y], linestyle="none", marker=markers[series], markersize=6,
                        color=colors[series],
                        markerfacecolor="none" if o else colors[series])
            all_oversub = all(o for _, _, o in pts)
            handles.append(Line2D([], [], color=colors[series], marker=markers[series],
                                  markerfacecolor="none" if all_oversub else colors[series],
                                  **style))
            labels.append(label)
        if panel.kind != "bar":
            _set_xscale(ax, panel.xscale, xs)
        if panel.yscale == "log":
            ax.set_yscale("log")
        elif panel.ylim0:
            ax.set_ylim(bottom=0)
        if panel.vlines:
            for x, text in panel.vlines(machine):
                ax.axvline(x, linestyle=":", color="0.35", linewidth=1.2)
                ax.annotate(text, xy=(x, 1), xycoords=("data", "axes fraction"),
                            xytext=(3, -4), textcoords="offset points", rotation=90,
                            va="top", fontsize=8, color="0.3")
        ylabel = cycles_label(rows) if panel.metric == "cycles" else METRICS[panel.metric][0]
        ax.set_ylabel(ylabel)
        ax.set_xlabel(fig.x_label)
        ax.set_title(panel.title + _busy_basis(rows, panel), fontsize=11)
        ax.grid(True, which="major", alpha=0.3)
        if any_oversub:
            handles.append(Line2D([], [], linestyle="none", marker="o", color="0.4",
                                  markerfacecolor="none"))
            labels.append(OVERSUB_NOTE)
        if not handles:
            ax.text(0.5, 0.5, "no measurement", transform=ax.transAxes, ha="center")
            continue
        if many:
            ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      borderaxespad=0)
        else:
            ax.legend(handles, labels, fontsize=8)

    mfig.suptitle(title_of(fig, machine, width=int(width * 10.5)), fontsize=12)
    note = _footnote(fig, rows, mapping)
    if note:
        # Constrained layout does not see free text: keep a strip at the bottom for it.
        lines = note.count("\n") + 1
        bottom = (0.15 + 0.15 * lines) / height
        mfig.get_layout_engine().set(rect=(0, bottom, 1, 1 - bottom))
        mfig.text(0.01, 0.01, note, fontsize=8, va="bottom", ha="left", color="0.25")
    if path:
        mfig.savefig(path)
    return mfig


def legend_labels(mfig):
    """Every legend entry's text, panel by panel: what a test asserts on."""
    out = []
    for ax in mfig.axes:
        leg = ax.get_legend()
        out.append([t.get_text() for t in leg.get_texts()] if leg else [])
    return out


def series_labels(mfig):
    """The series drawn (legend texts without the '*' mark and the note), all panels."""
    names = []
    for labels in legend_labels(mfig):
        for text in labels:
            if text == OVERSUB_NOTE:
                continue
            name = text[:-2] if text.endswith(" *") else text
            if name not in names:
                names.append(name)
    return names
