"""locus tools: run locus-bench sweeps, draw the seeds' figures on this machine, report.

The seeds measured on machines with 24 to 56 hardware threads; these tools map each
figure's setup onto the machine at hand (its CPU count and cache sizes) so that the shape
of a result, not its absolute numbers, can be compared.
"""

# How messages, usage lines and reports name the commands: the source tree's scripts
# (run with the project's venv), unless installed() says they are the installed ones.
REPRODUCE = "tools/reproduce"
DEMO = "tools/demo"
PYTHON = "build/venv/bin/python "
BENCH_DEFAULT = "$LOCUS_BENCH, else build/release/bench/locus-bench"
# Where output goes by default: the source tree's build/ and docs/, or the current directory.
FIGURES_DIR, REPORT_DIR, DEMO_DIR = "build/figures", "docs/results", "build/demo"


def installed():
    """Called by the installed scripts before they import anything else of the package."""
    global REPRODUCE, DEMO, PYTHON, BENCH_DEFAULT, FIGURES_DIR, REPORT_DIR, DEMO_DIR
    REPRODUCE, DEMO, PYTHON = "locus-reproduce", "locus-demo", ""
    BENCH_DEFAULT = "$LOCUS_BENCH, else the locus-bench installed beside this command"
    FIGURES_DIR = REPORT_DIR = "locus-figures"
    DEMO_DIR = "locus-demo"

