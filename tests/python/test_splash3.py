"""tools/splash3 without Splash-3: a small tree in its layout made here (a Makefile.config
with m4 rules, a pthreads macro file, an FFT that tests itself and a WATER-NSQUARED that
reads its input from standard input) and a locus "install" made of a macro file and a
locus-dsm.pc. The programs' behaviour is steered by FAKE_* variables, which the tool passes
on to every run. They need make, m4, gcc, mpicc, mpiexec and pkg-config, as the tool does."""

import json
import os
import shutil
import textwrap

import pytest
from conftest import REPO, entry_point

from locus_tools import splash3
from locus_tools.bench import parse_json_lines

MAKEFILE_CONFIG = """\
CC := gcc
CFLAGS := -O1 -pthread
LDFLAGS := -lm
BASEDIR := $(shell dirname $(realpath $(lastword $(MAKEFILE_LIST))))
MACROS := $(BASEDIR)/pthread_macros/fake.m4
M4 := m4

$(TARGET): $(OBJS)
\t$(CC) $(CFLAGS) -o $(TARGET) $(OBJS) $(LDFLAGS)

clean:
\trm -rf *.c *.h *.o $(TARGET)

%.c: %.c.in
\t$(M4) $(MACROS) $< > $@

%.o: %.c
\t$(CC) -c $(CFLAGS) $<
"""

# What the macro files give the programs: which build they are in, and a time in the unit
# of their CLOCK (the pthreads file counts seconds with time(), locus's microseconds).
PTHREAD_MACROS = """\
divert(-1)
define(MAIN_ENV, `#define MODE "pthreads"
#define FAKE_TIME 2')
define(CLOCK, `{long time(); ($1) = time(0);}')
divert(0)
"""

LOCUS_MACROS = """\
divert(-1)
define(MAIN_ENV, `#define MODE "locus"
#define FAKE_TIME 2500000
static void fake_stdin(void) __attribute__((constructor));
static void fake_stdin(void)
{
	const char *f = getenv("LOCUS_DSM_STDIN");
	if (f && !freopen(f, "r", stdin))
		exit(3);
}')
define(CLOCK, `{struct timeval t; gettimeofday(&t, 0); ($1) = t.tv_sec * 1000000 + t.tv_usec;}')
divert(0)
"""

LOCUS_PC = """\
prefix=${pcfiledir}/../..
libdir=${prefix}/lib
includedir=${prefix}/include

Name: locus-dsm
Description: a stand-in for the tests of tools/splash3
Version: 9.8.7
Cflags: -I${includedir} -DFAKE_LOCUS_CFLAGS
Libs: -L${libdir}
"""

# Every process notes its pid (FAKE_PIDS) and hangs there with FAKE_HANG; under mpiexec
# only rank 0 goes on, as only rank 0 runs main on locus-dsm.
PROLOGUE = """\
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
MAIN_ENV
static int differs(void)
{
	const char *v = getenv("FAKE_DIFFER");
	return v && !strcmp(v, MODE);
}
static void start(void)
{
	const char *dir = getenv("FAKE_PIDS");
	if (dir) {
		char path[512];
		snprintf(path, sizeof path, "%s/%ld", dir, (long)getpid());
		FILE *f = fopen(path, "w");
		if (f)
			fclose(f);
	}
	if (getenv("FAKE_HANG"))
		for (;;)
			pause();
	const char *rank = getenv("PMI_RANK");
	if (rank && strcmp(rank, "0"))
		exit(0);
}
"""

FFT = PROLOGUE + """\
int main(int argc, char **argv)
{
	long p = 0;
	int test = 0;
	start();
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "-p", 2))
			p = atol(argv[i] + 2);
		if (!strcmp(argv[i], "-t"))
			test = 1;
	}
#ifdef FAKE_LOCUS_CFLAGS
	printf("built with pkg-config's cflags\\n");
#endif
	printf("mode %s P %ld\\n", MODE, p);
	printf("Total time without initialization :  %ld\\n", (long)FAKE_TIME);
	if (test)
		printf(differs() ? "TEST FAILED\\n" : "TEST PASSED\\n");
	/* The runtime's statistics, as node 0 prints them at finalize: after the
	   program's own lines, which the tool must still find as they were. */
	const char *stats = getenv("LOCUS_DSM_STATS");
	if (stats && !strcmp(stats, "json"))
		for (int n = 0; n < 2; n++)
			printf("{\\"dsm_node\\": %d, \\"total_s\\": 2.5, \\"busy_s\\": 1.25, "
			       "\\"fault_s\\": 0.5, \\"sync_s\\": 0.25, \\"overhead_s\\": 0.125, "
			       "\\"other_s\\": 0.375, \\"threads\\": 1, \\"remote_misses\\": %d, "
			       "\\"remote_miss_s\\": 0.004, \\"remote_locks\\": 0, "
			       "\\"remote_lock_s\\": 0.0, \\"msgs\\": 9, \\"bytes\\": 3000000, "
			       "\\"idle_poll\\": 1, \\"idle_poll_error\\": 0, "
			       "\\"twins\\": 7}\\n", n, 100 * (n + 1));
	return 0;
}
"""

WATER = PROLOGUE + """\
int main(void)
{
	char line[3][256];
	long p;
	start();
	for (int i = 0; i < 3; i++)
		if (!fgets(line[i], sizeof line[i], stdin)) {
			printf("mode %s: no input\\n", MODE);
			return 1;
		}
	p = atol(line[2]);
	printf("mode %s input P %ld\\n", MODE, p);
	printf("      3   %12.5f   %12.5f\\n", 1.5 * p, differs() ? 0.25 : 0.125);
	printf("COMPUTETIME (after initialization) = %ld\\n", (long)FAKE_TIME);
	printf("Exited Happily with XTT = %.4f\\n", 10.0 + p);
	return 0;
}
"""

WATER_INPUT = "  1.5e-16   512  3   6\n -1      3000     3  0\n1 6.212752\n"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def fake_splash(tmp_path):
    """A checkout in Splash-3's layout with fft and water-nsquared."""
    codes = tmp_path / "Splash-3" / "codes"
    write(codes / "Makefile.config", MAKEFILE_CONFIG)
    write(codes / "pthread_macros" / "fake.m4", PTHREAD_MACROS)
    for d, exe, src, name in (("kernels/fft", "FFT", FFT, "fft"),
                              ("apps/water-nsquared", "WATER-NSQUARED", WATER, "water")):
        depth = "../" * len(d.split("/"))
        write(codes / d / "Makefile",
              f"TARGET = {exe}\nOBJS = {name}.o\n\ninclude {depth}Makefile.config\n")
        write(codes / d / f"{name}.c.in", src)
    write(codes / "apps/water-nsquared/inputs/n512-p1", WATER_INPUT)
    return codes.parent


@pytest.fixture
def fake_prefix(tmp_path):
    prefix = tmp_path / "prefix"
    write(prefix / "share/locus/splash/c.m4.locus", LOCUS_MACROS)
    write(prefix / "lib/pkgconfig/locus-dsm.pc", LOCUS_PC)
    (prefix / "include").mkdir()
    return prefix


def listing(root):
    return sorted((str(p.relative_to(root)), p.read_bytes()) for p in root.rglob("*")
                  if p.is_file())


def run_tool(tmp_path, splash, prefix, *args):
    out = tmp_path / "out"
    rc = splash3.main(["--source", str(splash), "--prefix", str(prefix), "--out", str(out),
                       *map(str, args)])
    records, bad = parse_json_lines((out / "results.jsonl").read_text())
    assert not bad
    return rc, out, records


def runs(records):
    return [r for r in records if r["kind"] == "run"]


def table_rows(out):
    """The Runs table of table.md: one list of cells per row."""
    text = (out / "table.md").read_text()
    part = text.split("## Runs", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in part.splitlines() if line.startswith("|")]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]], rows[0]


# ---------------------------------------------------------------------------------------
# The tool on the fake tree.

def test_both_builds_every_point_and_the_table(tmp_path, fake_splash, fake_prefix):
    before = listing(fake_splash)
    rc, out, records = run_tool(tmp_path, fake_splash, fake_prefix, "--apps",
                                "fft,water-nsquared,volrend", "--nodes", "1,2",
                                "--threads", "1,2", "--protocols", "sc,lrc")
    assert rc == 0
    assert listing(fake_splash) == before  # the checkout is only read

    setting = records[0]
    assert setting["kind"] == "setting" and setting["locus_version"] == "9.8.7"
    assert setting["clock_unit_s"] == {"pthreads": 1.0, "locus": 1e-6}
    assert [r["nodes"] for r in records if r["kind"] == "startup"] == [1, 2]
    builds = [(r["app"], r["mode"], r["ok"]) for r in records if r["kind"] == "build"]
    assert builds == [("fft", "pthreads", True), ("fft", "locus", True),
                      ("water-nsquared", "pthreads", True), ("water-nsquared", "locus", True)]
    locus_make = [r["command"] for r in records if r["kind"] == "build" and r["mode"] == "locus"]
    assert locus_make[0][1] == f"MACROS={fake_prefix}/share/locus/splash/c.m4.locus"
    assert locus_make[0][2].startswith("CC=mpicc ") and "-DFAKE_LOCUS_CFLAGS" in locus_make[0][2]
    assert locus_make[0][3].startswith("LDFLAGS=-lm -L")
    skipped = [r for r in records if r["kind"] == "skipped"]
    assert [(r["app"], r["why"]) for r in skipped] == [
        ("volrend", "not in the checkout (codes/apps/volrend/Makefile)")]

    got = runs(records)
    for app in ("fft", "water-nsquared"):
        mine = [r for r in got if r["app"] == app]
        # pthreads at P = 1, 2, 4; locus-dsm at 1x1, 1x2, 2x1, 2x2 under each protocol
        assert sorted((r["mode"], r["nodes"], r["threads"], r["P"], r["protocol"] or "")
                      for r in mine) == sorted(
            [("pthreads", 1, P, P, "") for P in (1, 2, 4)]
            + [("locus", n, t, n * t, p) for n in (1, 2) for t in (1, 2) for p in ("sc", "lrc")])
        for r in mine:
            assert r["status"] == "ok" and r["rc"] == 0
            log = (out / r["log"]).read_text()
            assert f"mode {r['mode']}" in log
            if r["mode"] == "locus":
                assert r["command"][:3] == ["mpiexec", "-n", str(r["nodes"])]
                assert r["own_time_s"] == pytest.approx(2.5)
                assert r["ratio"] > 0
            else:
                assert r["own_time_s"] == 2.0 and "ratio" not in r
            if app == "fft":
                assert f"-p{r['P']}" in r["command"] and "-t" in r["command"]
                assert r["verified"] is True
                assert ("built with pkg-config's cflags" in log) == (r["mode"] == "locus")
            else:
                # its input made for P; on stdin with pthreads, LOCUS_DSM_STDIN on locus-dsm
                assert f"input P {r['P']}" in log
                assert r["verified"] is (None if r["mode"] == "pthreads" else True)

    rows, header = table_rows(out)
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "app", "mode", "nodes×threads", "P", "wall (s)", "program (s)", "ratio to pthreads",
        "verified", "notes"]
    assert len(rows) == 2 * 11 + 1
    assert ["volrend", "—", "—", "—", "—", "—", "—", "—",
            "skipped: not in the checkout (codes/apps/volrend/Makefile)"] in rows
    fft = [r for r in rows if r[0] == "fft"]
    assert [r[1] for r in fft[:2]] == ["pthreads", "locus-dsm sc"]
    assert {(r[1], r[2], r[5], r[7]) for r in fft if r[3] == "4"} == {
        ("pthreads", "1×4", "2", "yes"), ("locus-dsm sc", "2×2", "2.50", "yes"),
        ("locus-dsm lrc", "2×2", "2.50", "yes")}
    assert all(r[6] != "—" for r in fft if r[1] != "pthreads")
    text = (out / "table.md").read_text()
    assert "| 1 |" in text.split("## mpiexec start-up")[1].split("## Runs")[0]


def test_a_result_that_differs_from_pthreads_or_fails_its_test(tmp_path, fake_splash,
                                                                fake_prefix, monkeypatch):
    monkeypatch.setenv("FAKE_DIFFER", "locus")
    rc, out, records = run_tool(tmp_path, fake_splash, fake_prefix, "--apps",
                                "fft,water-nsquared", "--nodes", "2", "--threads", "1",
                                "--protocols", "sc")
    assert rc == 1
    got = {(r["app"], r["mode"]): r for r in runs(records)}
    assert got[("fft", "pthreads")]["verified"] is True
    assert got[("fft", "locus")]["verified"] is False
    assert got[("fft", "locus")]["why"] == "its test did not pass (last line: TEST FAILED)"
    assert got[("water-nsquared", "pthreads")]["verified"] is None
    water = got[("water-nsquared", "locus")]
    assert water["verified"] is False and "differ from pthreads'" in water["why"]
    rows, _ = table_rows(out)
    assert [r[7] for r in rows] == ["yes", "no", "—", "no"]


def test_a_run_past_its_timeout_is_ended_and_reported(tmp_path, fake_splash, fake_prefix,
                                                      monkeypatch):
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("FAKE_HANG", "1")
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    rc, out, records = run_tool(tmp_path, fake_splash, fake_prefix, "--apps", "fft",
                                "--nodes", "2", "--threads", "1", "--protocols", "sc",
                                "--timeout", "10")
    assert rc == 1
    got = runs(records)
    assert [(r["mode"], r["status"], r["verified"], r["why"]) for r in got] == [
        ("pthreads", "timeout", False, "timed out after 10 s"),
        ("locus", "timeout", False, "timed out after 10 s")]
    rows, _ = table_rows(out)
    assert [(r[4], r[7], r[8]) for r in rows] == [("> 10", "no", "timed out after 10 s")] * 2
    # nothing it started is left: not the program, not mpiexec's ranks (each noted its pid;
    # 10 s leaves a loaded machine time to start them before the kill)
    started = list(pids.iterdir())
    assert len(started) >= 1
    for p in started:
        assert not splash3.running(int(p.name)), f"pid {p.name} outlived the timeout"


def test_a_failed_build_is_reported_and_the_other_build_still_runs(tmp_path, fake_splash,
                                                                  fake_prefix):
    (fake_prefix / "share/locus/splash/c.m4.locus").write_text(
        "divert(-1)\ndefine(MAIN_ENV, `#error this macro file is broken')\ndivert(0)\n")
    rc, out, records = run_tool(tmp_path, fake_splash, fake_prefix, "--apps", "fft",
                                "--nodes", "1", "--threads", "1", "--protocols", "sc")
    assert rc == 1
    build = [r for r in records if r["kind"] == "build" and r["mode"] == "locus"][0]
    assert not build["ok"] and "this macro file is broken" in (out / build["log"]).read_text()
    assert [(r["mode"], r["verified"]) for r in runs(records)] == [("pthreads", True)]
    rows, _ = table_rows(out)
    assert rows[0][:2] == ["fft", "locus-dsm"] and rows[0][8].startswith("build failed: logs/")


def test_an_input_missing_from_the_checkout_is_a_skip(tmp_path, fake_splash, fake_prefix):
    (fake_splash / "codes/apps/water-nsquared/inputs/n512-p1").unlink()
    rc, out, records = run_tool(tmp_path, fake_splash, fake_prefix, "--apps", "water-nsquared",
                                "--nodes", "1", "--threads", "1")
    assert rc == 0 and not runs(records)
    rows, _ = table_rows(out)
    assert rows == [["water-nsquared", "—", "—", "—", "—", "—", "—", "—",
                     "skipped: input missing (inputs/n512-p1)"]]


def test_large_inputs_take_their_own_files(tmp_path, fake_splash, fake_prefix):
    # the fake checkout has water's README input only: --size large looks for PARSEC's
    rc, out, records = run_tool(tmp_path, fake_splash, fake_prefix, "--apps", "water-nsquared",
                                "--nodes", "1", "--threads", "1", "--size", "large")
    assert rc == 0 and not runs(records)
    rows, _ = table_rows(out)
    assert rows[0][-1] == "skipped: input missing (inputs/parsec_simmedium)"


def test_every_program_has_every_size():
    for app in splash3.APPS:
        for size in splash3.SIZES:
            assert app.argv(size, 4)[0] == "./" + app.exe
            assert all(isinstance(f, str) for f in app.inputs(size))
    large = {a.name: a for a in splash3.APPS}
    assert "-m22" in large["fft"].argv("large", 2)
    assert "-n4194304" in large["radix"].argv("large", 2)
    assert large["barnes"].argv("large", 2) == large["barnes"].argv("readme", 2)
    assert large["water-nsquared"].inputs("large") == ["inputs/parsec_simmedium"]


# ---------------------------------------------------------------------------------------
# What it refuses, and how it says so.

def refusal(capsys, argv):
    rc = splash3.main(argv)
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("splash3: ")
    return err


def test_not_a_checkout(tmp_path, capsys, fake_prefix):
    err = refusal(capsys, ["--source", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")])
    assert "nowhere: no such directory" in err and "git clone" in err
    (tmp_path / "empty").mkdir()
    err = refusal(capsys, ["--source", str(tmp_path / "empty"), "--out", str(tmp_path / "o")])
    assert "no codes/Makefile.config there: not a checkout of Splash-3" in err


def test_out_inside_the_checkout_is_refused(tmp_path, capsys, fake_splash, fake_prefix):
    err = refusal(capsys, ["--source", str(fake_splash), "--prefix", str(fake_prefix),
                           "--out", str(fake_splash / "codes" / "out")])
    assert "inside the Splash-3 checkout" in err
    assert not (fake_splash / "codes" / "out").exists()


def test_a_missing_command_is_named(tmp_path, capsys, fake_splash, fake_prefix, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for cmd in ("make", "m4", "gcc", "mpiexec", "pkg-config"):  # no mpicc
        os.symlink(shutil.which(cmd), bin_dir / cmd)
    monkeypatch.setenv("PATH", str(bin_dir))
    err = refusal(capsys, ["--source", str(fake_splash), "--prefix", str(fake_prefix),
                           "--out", str(tmp_path / "o")])
    assert err.startswith("splash3: mpicc not found on PATH")


def test_not_a_locus_install(tmp_path, capsys, fake_splash, monkeypatch):
    (tmp_path / "notlocus").mkdir()
    err = refusal(capsys, ["--source", str(fake_splash), "--prefix", str(tmp_path / "notlocus"),
                           "--out", str(tmp_path / "o")])
    assert "no locus-dsm.pc" in err and "not a locus install" in err
    monkeypatch.setenv("PKG_CONFIG_PATH", "")
    monkeypatch.setenv("PKG_CONFIG_LIBDIR", str(tmp_path / "notlocus"))
    err = refusal(capsys, ["--source", str(fake_splash), "--out", str(tmp_path / "o")])
    assert "pkg-config finds no locus-dsm" in err and "--prefix" in err


def test_an_install_without_the_macro_file(tmp_path, capsys, fake_splash, fake_prefix):
    (fake_prefix / "share/locus/splash/c.m4.locus").unlink()
    err = refusal(capsys, ["--source", str(fake_splash), "--prefix", str(fake_prefix),
                           "--out", str(tmp_path / "o")])
    assert "no share/locus/splash/c.m4.locus" in err


def test_the_default_prefix_is_pkg_configs(tmp_path, fake_splash, fake_prefix, monkeypatch):
    monkeypatch.setenv("PKG_CONFIG_PATH", str(fake_prefix / "lib/pkgconfig"))
    out = tmp_path / "out"
    assert splash3.main(["--source", str(fake_splash), "--apps", "fft", "--nodes", "1",
                         "--threads", "1", "--protocols", "sc", "--out", str(out)]) == 0
    setting = parse_json_lines((out / "results.jsonl").read_text())[0][0]
    assert setting["prefix"] == str(fake_prefix.resolve())


def test_an_out_directory_it_did_not_make_is_kept(tmp_path, capsys, fake_splash, fake_prefix):
    (tmp_path / "o" / "work").mkdir(parents=True)
    err = refusal(capsys, ["--source", str(fake_splash), "--prefix", str(fake_prefix),
                           "--out", str(tmp_path / "o")])
    assert "was not made by tools/splash3" in err


@pytest.mark.parametrize("args, message", [
    (["--nodes", "1,x"], "--nodes takes a comma-separated list"),
    (["--threads", "0"], "--nodes and --threads take whole numbers >= 1"),
    (["--protocols", "sc,mesi"], "--protocols: mesi unknown; from sc,lrc,avr"),
    (["--apps", "fft,quicksort"], "--apps: quicksort unknown"),
    (["--timeout", "0"], "--timeout takes seconds > 0"),
    (["--size", "huge"], "invalid choice: 'huge'"),
])
def test_bad_arguments(capsys, args, message):
    with pytest.raises(SystemExit) as e:
        splash3.main(["--source", "x"] + args)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_help_names_every_program_and_what_it_does():
    r = entry_point("tools/splash3", "--help")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "(or lu)" in text and "(or ocean)" in text
    for name in splash3.BY_NAME:
        assert f"  {name} " in text
    for words in ("--source DIR", "LOCUS_DSM_STDIN", "/bin/true",
                  "pthread.m4.stougie", "c.m4.locus", "timed out", "results.jsonl"):
        assert words in text, words


# ---------------------------------------------------------------------------------------
# The pieces.

def test_printed_numbers_agree_to_their_last_digit():
    assert splash3.numbers_agree("1.025", "1.026")
    assert not splash3.numbers_agree("1.025", "1.027")
    assert splash3.numbers_agree("8.0e-08", "8.1e-08")
    assert not splash3.numbers_agree("12", "13")
    assert splash3.numbers_agree("1.00000", "1.00001", rel=1e-4)
    assert splash3.lines_agree("iter 3, norm 1.5e-07", "iter 3, norm 1.6e-07")
    assert not splash3.lines_agree("iter 3, norm 1.5e-07", "iter 4, norm 1.5e-07")
    assert not splash3.lines_agree("iter 3", "step 3")


def test_an_input_is_written_for_each_P():
    s = splash3.Stdin("inputs/n", (2, 0), {(0, 1): 64}, "64 molecules")
    assert s.text_for(WATER_INPUT, 8) == "  1.5e-16   64  3   6\n -1      3000     3  0\n8 6.212752\n"


def test_the_programs_own_time_and_its_unit(tmp_path):
    assert splash3.own_time("x\nTotal time without initialization :   1234\n") == 1234
    assert splash3.own_time("COMPUTETIME (after initialization) = 77\n") == 77
    assert splash3.own_time("COMPUTETIME   =     9\n") == 9
    assert splash3.own_time("nothing\n") is None
    for text, unit in ((PTHREAD_MACROS, 1.0), (LOCUS_MACROS, 1e-6),
                       ("define(CLOCK, `{($1) = locus_dsm_now() * 1e6;}')\n", 1e-6),
                       ("define(CLOCK, `{($1) = ticks();}')\n", None), ("", None)):
        f = tmp_path / "m4"
        f.write_text(text)
        assert splash3.clock_unit(str(f)) == unit, text
    assert splash3.clock_unit(str(tmp_path / "absent")) is None


def test_the_installed_macro_file_counts_microseconds():
    assert splash3.clock_unit(str(REPO / "src/dsm/splash/c.m4.locus")) == 1e-6


def test_the_table_takes_every_record_kind():
    meta = {"command": "tools/splash3 ...", "splash": "/s", "splash_commit": "", "prefix": "/p",
            "locus_version": "1", "cpus": 2, "size": "small", "timeout": 5.0,
            "apps": ["fft"]}
    recs = [{"kind": "run", "app": "fft", "mode": "pthreads", "protocol": None, "nodes": 1,
             "threads": 2, "P": 2, "wall_s": 0.5, "own_time": 0, "own_time_unit_s": 1.0,
             "status": "ok", "verified": True, "why": ""},
            {"kind": "run", "app": "fft", "mode": "locus", "protocol": "lrc", "nodes": 2,
             "threads": 1, "P": 2, "wall_s": 1.25, "own_time": 750000,
             "own_time_unit_s": 1e-6, "status": "ok", "verified": True, "why": "",
             "ratio": 2.5}]
    text = splash3.table(meta, [{"nodes": 2, "wall_s": 0.25}], recs)
    assert "| fft | pthreads | 1×2 | 2 | 0.500 | <1 | — | yes |  |" in text
    assert "| fft | locus-dsm lrc | 2×1 | 2 | 1.25 | 0.750 | 2.50 | yes |  |" in text
    assert "| 2 | 0.250 |" in text
    assert json.dumps(recs)  # the records are what results.jsonl holds


def test_where_the_time_went_per_node(tmp_path, fake_splash, fake_prefix):
    rc, out, records = run_tool(tmp_path, fake_splash, fake_prefix, "--apps",
                                "fft,water-nsquared", "--nodes", "2", "--threads", "1",
                                "--protocols", "sc")
    assert rc == 0
    got = {(r["app"], r["mode"]): r for r in runs(records)}
    fft = got[("fft", "locus")]
    # the statistics lines are the runtime's, not the program's: its test still passes
    assert fft["verified"] is True
    assert [n["node"] for n in fft["dsm"]] == [0, 1]
    assert fft["dsm"][1]["remote_misses"] == 200 and fft["dsm"][0]["busy_s"] == 1.25
    assert "twins" not in fft["dsm"][0]  # what the table shows, not every counter
    assert got[("fft", "pthreads")]["dsm"] == []  # only locus-dsm runs ask for them
    assert got[("water-nsquared", "locus")]["dsm"] == []  # a run that printed none
    text = (out / "table.md").read_text()
    part = text.split("## Where locus-dsm's time went", 1)[1].split("## Programs", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in part.splitlines() if line.startswith("| fft")]
    assert rows == [
        ["fft", "locus-dsm sc", "2×1", "0", "1", "1.250", "0.500", "0.250", "0.125", "0.375",
         "100 (40)", "0 (—)", "3.0"],
        ["fft", "locus-dsm sc", "2×1", "1", "1", "1.250", "0.500", "0.250", "0.125", "0.375",
         "200 (20)", "0 (—)", "3.0"]]
    # and whether the machine's idle CPUs polled, over the one run that printed statistics
    assert ("Idle CPUs: asked to poll instead of halting in every one of the 1 run of several "
            "nodes") in part


def test_a_failure_is_named_by_its_cause_not_by_lrc_keeping_metadata():
    err = ("locus-dsm: node 0: lrc keeps 131072 KiB of records, diffs and twins, 4 times "
           "LOCUS_DSM_GC_BYTES (32768 KiB), with no locus_dsm_barrier since it passed it\n"
           "locus-dsm: node 1: fatal: a peer died\n")
    assert splash3.failure(1, err, 10) == "exit 1: locus-dsm: node 1: fatal: a peer died"
    assert splash3.failure(1, err.splitlines()[0] + "\n", 10) == "exit 1: " + err.splitlines()[0][:100]
