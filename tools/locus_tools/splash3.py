"""Splash-3's programs as written, with pthreads and on locus-dsm (issue 35's benchmark).

tools/splash3 --source DIR takes a checkout of Splash-3 (git clone
https://github.com/SakalisC/Splash-3; DIR is only read), copies its codes/ twice into
OUT/work and builds each chosen program in both copies with the program's own Makefile:

  pthreads   as written: the macro file the checkout's codes/Makefile.config names
             (codes/pthread_macros/pthread.m4.stougie in Splash-3)
  locus-dsm  make clean, then make MACROS=PREFIX/share/locus/splash/c.m4.locus
             CC="mpicc $(pkg-config --cflags locus-dsm)"
             LDFLAGS="-lm $(pkg-config --libs locus-dsm)"  (PKG_CONFIG_PATH: PREFIX's)

PREFIX is --prefix, else the prefix of the locus-dsm that pkg-config finds on its
PKG_CONFIG_PATH (install one with `make install PREFIX=DIR` in the locus tree).

Each program runs with pthreads with P threads for every P = nodes x threads, and on
locus-dsm as `mpiexec -n NODES ./PROGRAM` with P in its arguments (-pP) for every node
count, threads per node and protocol (LOCUS_DSM_PROTOCOL), with LD_LIBRARY_PATH set to
PREFIX's libraries. A program that reads standard input gets its input file on standard
input with pthreads and through LOCUS_DSM_STDIN=FILE on locus-dsm (mpiexec forwards at
most 64 KB). An input written for one P (barnes, fmm, water) is written anew for each P
into OUT/inputs. A run that outlives --timeout is killed, with every process it started,
and reported as timed out.

verified: yes or no where the program tests its own result (fft, lu, radix, cholesky:
-t), or where its result is compared with the pthreads run of the same P (water's
energies, ocean's and radiosity's result lines, fmm's positions, raytrace's picture,
volrend's frames); — where there is nothing to check (barnes prints no result: its exit
status only), for the pthreads run that is the reference, and where that reference
failed.

Times: wall time of the whole command, mpiexec's start-up included; `mpiexec -n N
/bin/true` is timed on its own for each N (the median of three) to show what is start-up.
The program's own time is its "Total time without initialization" (or COMPUTETIME) line
in the unit of its macro file's CLOCK: Splash-3's pthread file counts whole seconds,
locus's microseconds. ratio: the locus-dsm wall time over the pthreads wall time at the
same P.

Where the time went: every locus-dsm run has LOCUS_DSM_STATS=json, and the runtime's
line for each node (which node 0 prints at finalize, and the tool takes out of the output
before the checks read it) goes into the run's record ("dsm") and a table: per node, the
time split (busy, fault, sync, overhead, other; docs/dsm.md), the remote misses and
locks with their average wait, and the bytes sent; under it, whether the machine's idle
CPUs were asked to poll instead of halting during the runs (LOCUS_DSM_IDLE_POLL).

Writes OUT/table.md (Markdown) and OUT/results.jsonl (one JSON object per line: the
setting, each start-up measurement, each build, each run, each program skipped); the
builds' and runs' output in OUT/logs. Exit status 0 when every build succeeded and every
run exited 0 and passed its check (a program skipped for want of its input does not
count), 1 otherwise or when the tool refuses to start (a message says why), 2 for a
usage error.
"""

import argparse
import fnmatch
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

from . import dsmrun

PROTOCOLS = ("sc", "lrc", "avr")
SIZES = ("small", "readme", "large")
MARKER = ".splash3-work"  # OUT/work is the tool's own (it is deleted and copied anew)
BUILD_TIMEOUT = 900  # seconds for one program's make: a backstop, never reached normally


# ---------------------------------------------------------------------------------------
# Checks: each turns a run's standard output and the files it wrote into a verdict.
# verdict(out, files, ref) -> (True, "") or (False, why); ref is what result() took from
# the pthreads run of the same P (None when that run failed).

NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def last_digit(token):
    """One unit of the last digit a number is printed with ('1.025' -> 0.001,
    '8.0e-08' -> 1e-09); 0 for an integer, which must match exactly."""
    mant, _, exp = token.lower().partition("e")
    if "." not in mant and not exp:
        return 0.0
    return 10.0 ** (int(exp or 0) - len(mant.partition(".")[2]))


def numbers_agree(a, b, rel=0.0):
    """Two printed numbers agree to one unit of the last digit printed (a sum taken in
    another order may round the other way), or within rel of their size."""
    x, y = float(a), float(b)
    allowed = max(rel * max(abs(x), abs(y)), last_digit(a), last_digit(b))
    return abs(x - y) <= allowed * (1 + 1e-9)  # 1.026 - 1.025 is a hair over 0.001


def lines_agree(got, ref, rel=0.0):
    """The same words, and each number as numbers_agree says."""
    if NUM.sub("#", got).split() != NUM.sub("#", ref).split():
        return False
    return all(numbers_agree(a, b, rel) for a, b in zip(NUM.findall(got), NUM.findall(ref)))


def last_line(out):
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return lines[-1][:80] if lines else "(no output)"


@dataclass
class SelfCheck:
    """The program tests its own result and prints a line saying it passed."""
    passed: str  # regular expression for that line
    compares = False

    def describe(self):
        return f"its own test: a line `{self.passed.lstrip('^')}`"

    def result(self, out, files):
        return None

    def verdict(self, out, files, ref):
        if any(re.search(self.passed, line) for line in out.splitlines()):
            return True, ""
        return False, f"its test did not pass (last line: {last_line(out)})"


@dataclass
class LineCheck:
    """Result lines (those matching one of `patterns`, each with its relative tolerance)
    compared with the pthreads run's of the same P; `share` of them may differ."""
    patterns: list
    what: str
    share: float = 0.0
    compares = True

    def describe(self):
        return (f"{self.what}, compared with pthreads at the same P"
                + (f" ({self.share:.0%} of them may differ)" if self.share else ""))

    def result(self, out, files):
        picked = []
        for line in out.splitlines():
            for pattern, rel in self.patterns:
                if re.search(pattern, line):
                    picked.append((line.strip(), rel))
                    break
        return picked

    def verdict(self, out, files, ref):
        got = self.result(out, files)
        if len(got) != len(ref):
            return False, f"{len(got)} result lines, pthreads printed {len(ref)}"
        bad = [(g, r) for (g, rel), (r, _) in zip(got, ref) if not lines_agree(g, r, rel)]
        if len(bad) > int(self.share * len(ref)):
            return False, (f"{len(bad)} of {len(ref)} result lines differ from pthreads' "
                           f"(`{bad[0][0][:60]}` against `{bad[0][1][:60]}`)")
        return True, ""


@dataclass
class FileCheck:
    """Files the program writes (globs in its directory) compared byte by byte with the
    pthreads run's: the same names and sizes, at most `share` of each file's bytes
    different."""
    globs: list
    what: str
    share: float = 0.0
    compares = True

    def describe(self):
        return (f"{self.what} ({', '.join(self.globs)}), compared with pthreads at the same P"
                + (f" (up to {self.share:.0%} of each file's bytes may differ)"
                   if self.share else ", identical"))

    def result(self, out, files):
        return files

    def verdict(self, out, files, ref):
        if sorted(files) != sorted(ref):
            return False, f"wrote {len(files)} output files, pthreads {len(ref)}"
        for name in sorted(ref):
            a, b = files[name], ref[name]
            if len(a) != len(b):
                return False, f"{name}: {len(a)} bytes, pthreads' {len(b)}"
            diff = sum(x != y for x, y in zip(a, b))
            if diff > int(self.share * len(b)):
                return False, f"{name}: {diff} of {len(b)} bytes differ from pthreads'"
        return True, ""


@dataclass
class NoCheck:
    """Nothing to check: the program prints no result."""
    why: str
    compares = False

    def describe(self):
        return f"none: {self.why} (exit status only)"

    def result(self, out, files):
        return None

    def verdict(self, out, files, ref):
        return None, self.why


# ---------------------------------------------------------------------------------------
# The programs. Arguments take {P}. An input whose P is written in it (the checkout has
# it for a few P) is made for each P from the file for P=1, with P at (line, word).

@dataclass
class Stdin:
    path: str  # in the program's directory
    p_at: tuple = None  # (line, word) of P, 0-based; None: the file is used as it is
    sets: dict = field(default_factory=dict)  # other (line, word) -> value, e.g. a size
    what: str = ""  # what sets changes, for the table

    def text_for(self, template, P):
        lines = template.split("\n")
        for (i, n), value in {**self.sets, self.p_at: P}.items():
            w = list(re.finditer(r"\S+", lines[i]))[n]
            lines[i] = lines[i][:w.start()] + str(value) + lines[i][w.end():]
        return "\n".join(lines)


@dataclass
class App:
    name: str
    dir: str  # under codes/
    exe: str
    args: dict  # size -> arguments, with {P}
    check: object
    stdin: dict = field(default_factory=dict)  # size -> Stdin
    needs: dict = field(default_factory=dict)  # size -> other input files
    outputs: list = field(default_factory=list)  # files it writes (globs), removed first
    aliases: tuple = ()

    def __post_init__(self):
        # large: the README's inputs where no larger one is named
        for d in (self.args, self.stdin, self.needs):
            if "readme" in d and "large" not in d:
                d["large"] = d["readme"]

    def argv(self, size, P):
        return ["./" + self.exe] + [a.replace("{P}", str(P)) for a in self.args[size]]

    def shown(self, size):
        """The command with P for the processor count."""
        cmd = " ".join(["./" + self.exe] + [a.replace("{P}", "P") for a in self.args[size]])
        inp = self.stdin.get(size)
        if inp:
            cmd += f" < {inp.path}" + (f" (with P{', ' + inp.what if inp.what else ''})"
                                       if inp.p_at else "")
        return cmd

    def inputs(self, size):
        return list(self.needs.get(size, [])) + ([self.stdin[size].path]
                                                 if size in self.stdin else [])


def both(x):
    return {"small": x, "readme": x}


TEST_PASSED = SelfCheck(r"^TEST PASSED")
OCEAN_LINES = LineCheck([(r"^iter \d+, level \d+, residual norm", 1e-6)],
                        "the multigrid solver's iterations and residual norms (-o; "
                        "norms within 1e-6)")
WATER_LINES = LineCheck([(r"^\s*-?\d[-+0-9.eE\s]*$", 0.0), (r"^Exited Happily with XTT", 0.0)],
                        "the energies it prints and XTT")

APPS = [
    App("barnes", "apps/barnes", "BARNES", both([]),
        NoCheck("BARNES prints no result"),
        stdin={"small": Stdin("inputs/n8k-p1", (11, 0), {(1, 0): 1024}, "1024 bodies"),
               "readme": Stdin("inputs/n16384-p1", (11, 0))}),
    App("fmm", "apps/fmm", "FMM", both(["-o"]),
        LineCheck([(r"^P\s+\d+ :\s+Pos", 0.0)], "every particle's final position (-o)",
                  share=0.01),
        stdin={"small": Stdin("inputs/input.1.2048", (4, 0)),
               "readme": Stdin("inputs/input.1.16384", (4, 0))}),
    App("ocean-cont", "apps/ocean/contiguous_partitions", "OCEAN",
        {"small": ["-p{P}", "-n130", "-o"], "readme": ["-p{P}", "-n258", "-o"],
         "large": ["-p{P}", "-n514", "-o"]},
        OCEAN_LINES, aliases=("ocean",)),
    App("ocean-noncont", "apps/ocean/non_contiguous_partitions", "OCEAN",
        {"small": ["-p{P}", "-n130", "-o"], "readme": ["-p{P}", "-n258", "-o"],
         "large": ["-p{P}", "-n514", "-o"]},
        OCEAN_LINES),
    App("radiosity", "apps/radiosity", "RADIOSITY",
        {"small": ["-p", "{P}", "-ae", "5000", "-bf", "0.1", "-en", "0.05", "-batch"],
         "readme": ["-p", "{P}", "-ae", "5000", "-bf", "0.1", "-en", "0.05", "-room",
                    "-batch"]},
        LineCheck([(r"Iterations to converge", 0.0), (r"Number of patches", 0.0),
                   (r"Total number of elements", 0.05),
                   (r"Total number of interactions", 0.05)],
                  "iterations and patches; elements and interactions within 5% (its task "
                  "queues make them vary between runs)")),
    App("raytrace", "apps/raytrace", "RAYTRACE",
        {"small": ["-p{P}", "-m64", "inputs/teapot.env"],
         "readme": ["-p{P}", "-m64", "inputs/car.env"]},
        FileCheck(["inputs/*.rl"], "the picture"),
        needs={"small": ["inputs/teapot.env", "inputs/teapot.geo"],
               "readme": ["inputs/car.env", "inputs/car.geo"]},
        outputs=["inputs/*.rl"]),
    App("volrend", "apps/volrend", "VOLREND",
        {"small": ["{P}", "inputs/head-scaleddown4", "2"], "readme": ["{P}", "inputs/head", "8"]},
        FileCheck(["inputs/head*_1*"], "every frame", share=0.01),
        needs={"small": ["inputs/head-scaleddown4.den"], "readme": ["inputs/head.den"]},
        outputs=["inputs/head*_1*"]),
    App("water-nsquared", "apps/water-nsquared", "WATER-NSQUARED", both([]), WATER_LINES,
        stdin={**both(Stdin("inputs/n512-p1", (2, 0))),
               "large": Stdin("inputs/parsec_simmedium", (2, 0))}),
    App("water-spatial", "apps/water-spatial", "WATER-SPATIAL", both([]), WATER_LINES,
        stdin={**both(Stdin("inputs/n512-p1", (2, 0))),
               "large": Stdin("inputs/parsec_simmedium", (2, 0))}),
    App("cholesky", "kernels/cholesky", "CHOLESKY", both(["-p{P}", "-t"]),
        SelfCheck(r"^PASSED$"),
        stdin={"small": Stdin("inputs/tk14.O"), "readme": Stdin("inputs/tk15.O")}),
    App("fft", "kernels/fft", "FFT",
        {**both(["-p{P}", "-m16", "-t"]), "large": ["-p{P}", "-m22", "-t"]}, TEST_PASSED),
    App("lu-cont", "kernels/lu/contiguous_blocks", "LU",
        {"small": ["-p{P}", "-n256", "-t"], "readme": ["-p{P}", "-n512", "-t"],
         "large": ["-p{P}", "-n1024", "-t"]},
        TEST_PASSED, aliases=("lu",)),
    App("lu-noncont", "kernels/lu/non_contiguous_blocks", "LU",
        {"small": ["-p{P}", "-n256", "-t"], "readme": ["-p{P}", "-n512", "-t"],
         "large": ["-p{P}", "-n1024", "-t"]},
        TEST_PASSED),
    App("radix", "kernels/radix", "RADIX",
        {"small": ["-p{P}", "-n262144", "-t"], "readme": ["-p{P}", "-n1048576", "-t"],
         "large": ["-p{P}", "-n4194304", "-t"]},
        SelfCheck(r"^PASSED: All keys in place")),
]
BY_NAME = {a.name: a for a in APPS}
ALIASES = {alias: a.name for a in APPS for alias in a.aliases}

# The program's own time: the first line of these (an integer in CLOCK's unit).
OWN_TIME = [re.compile(r"^\s*Total time without initialization\s*:?\s*(\d+)\s*$"),
            re.compile(r"^\s*COMPUTETIME(?:\s*\(after initialization\))?\s*=\s*(\d+)\s*$")]


STATS_KEYS = ("total_s", "busy_s", "fault_s", "sync_s", "overhead_s", "other_s", "threads",
              "remote_misses", "remote_miss_s", "remote_locks", "remote_lock_s", "msgs",
              "bytes", "idle_poll", "idle_poll_error")


def split_stats(out):
    """(the output without the runtime's statistics lines, those lines' nodes, by node)."""
    keep, nodes = [], []
    for line in out.splitlines(keepends=True):
        if line.startswith('{"dsm_node"'):
            try:
                obj = json.loads(line)
            except ValueError:
                keep.append(line)
                continue
            nodes.append({"node": obj.get("dsm_node"),
                          **{k: obj[k] for k in STATS_KEYS if k in obj}})
        else:
            keep.append(line)
    return "".join(keep), sorted(nodes, key=lambda n: n["node"])


def own_time(out):
    for pattern in OWN_TIME:
        for line in out.splitlines():
            m = pattern.match(line)
            if m:
                return int(m.group(1))
    return None


def clock_unit(macro_file):
    """Seconds per unit of CLOCK in a SPLASH macro file: 1 for time(), 1e-6 for
    gettimeofday or a count in microseconds; None when it cannot be told."""
    try:
        with open(macro_file, errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"define\(\s*`?CLOCK'?\s*,(.*?)(?:\ndefine\(|\ndivert|\Z)", text, re.S)
    if not m:
        return None
    body = m.group(1)
    if re.search(r"gettimeofday|1e6|1000000|usec", body):
        return 1e-6
    if re.search(r"\btime\s*\(", body):
        return 1.0
    return None


# ---------------------------------------------------------------------------------------
# Commands, the install, the checkout.

class Refusal(Exception):
    """A condition the user must fix; its text says which and how."""


def need_commands(names):
    gone = [n for n in names if not shutil.which(n)]
    if gone:
        raise Refusal(f"{', '.join(gone)} not found on PATH; tools/splash3 needs "
                      + ", ".join(names) + " (Debian: build-essential m4 mpich libmpich-dev "
                      "pkg-config; sh scripts/install-deps installs them)")


def splash_codes(path):
    """The checkout's codes/ directory (DIR/codes, or DIR when it is codes/ itself)."""
    if not os.path.isdir(path):
        raise Refusal(f"--source {path}: no such directory (a checkout of Splash-3: git clone "
                      "https://github.com/SakalisC/Splash-3)")
    for codes in (os.path.join(path, "codes"), path):
        if os.path.isfile(os.path.join(codes, "Makefile.config")):
            return os.path.realpath(codes)
    raise Refusal(f"--source {path}: no codes/Makefile.config there: not a checkout of "
                  "Splash-3 (git clone https://github.com/SakalisC/Splash-3)")


def pthread_macros(codes):
    """The macro file the checkout's Makefile.config names ($(BASEDIR) is codes/)."""
    with open(os.path.join(codes, "Makefile.config"), errors="replace") as f:
        m = re.search(r"^\s*MACROS\s*[:?]?=\s*(\S+)", f.read(), re.M)
    if not m:
        return None
    return m.group(1).replace("$(BASEDIR)", codes).replace("${BASEDIR}", codes)


def compiler(codes):
    """The C compiler the checkout's Makefile.config uses for pthreads, when it says."""
    with open(os.path.join(codes, "Makefile.config"), errors="replace") as f:
        m = re.search(r"^\s*CC\s*[:?]?=\s*(\S+)", f.read(), re.M)
    if not m:
        return None
    return m.group(1).replace("$(TOOLCHAIN_PREFIX)", os.environ.get("TOOLCHAIN_PREFIX", ""))


def pkg_config(args, pcdir=None):
    env = dict(os.environ)
    if pcdir:
        env["PKG_CONFIG_PATH"] = pcdir + (":" + env["PKG_CONFIG_PATH"]
                                          if env.get("PKG_CONFIG_PATH") else "")
    p = subprocess.run(["pkg-config"] + args + ["locus-dsm"], env=env, capture_output=True,
                       text=True, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


@dataclass
class Locus:
    prefix: str
    pcdir: str
    libdir: str
    macros: str
    cflags: str
    libs: str
    version: str

    def make_vars(self):
        return [f"MACROS={self.macros}", f"CC=mpicc {self.cflags}".strip(),
                f"LDFLAGS=-lm {self.libs}"]

    def env(self, base):
        env = dict(base)
        for var, d in (("PKG_CONFIG_PATH", self.pcdir), ("LD_LIBRARY_PATH", self.libdir)):
            env[var] = d + (":" + env[var] if env.get(var) else "")
        return env


def find_locus(prefix):
    """The locus install at prefix, or (prefix None) the one pkg-config finds."""
    if prefix is None:
        rc, pcdir, err = pkg_config(["--variable=pcfiledir"])
        if rc:
            raise Refusal("pkg-config finds no locus-dsm (PKG_CONFIG_PATH="
                          f"{os.environ.get('PKG_CONFIG_PATH', '')!r}): give --prefix, or "
                          "install locus with `make install PREFIX=DIR` and set "
                          "PKG_CONFIG_PATH=DIR/lib/pkgconfig")
        _, found, _ = pkg_config(["--variable=prefix"])
        prefix = os.path.realpath(found)
    else:
        if not os.path.isdir(prefix):
            raise Refusal(f"--prefix {prefix}: no such directory")
        prefix = os.path.realpath(prefix)
        dirs = [os.path.join(prefix, d) for d in ("lib/pkgconfig", "lib64/pkgconfig",
                                                   "share/pkgconfig")]
        libroot = os.path.join(prefix, "lib")
        if os.path.isdir(libroot):
            dirs += sorted(os.path.join(libroot, d, "pkgconfig") for d in os.listdir(libroot))
        found = [d for d in dirs if os.path.isfile(os.path.join(d, "locus-dsm.pc"))]
        if not found:
            raise Refusal(f"--prefix {prefix}: no locus-dsm.pc under lib/pkgconfig, "
                          "lib/*/pkgconfig or share/pkgconfig: not a locus install "
                          "(make install PREFIX=DIR in the locus tree makes one)")
        pcdir = found[0]
    pcdir = os.path.realpath(pcdir)
    macros = os.path.join(prefix, "share", "locus", "splash", "c.m4.locus")
    if not os.path.isfile(macros):
        raise Refusal(f"{prefix} has no share/locus/splash/c.m4.locus: a locus install "
                      "without the Splash macro set (install a newer locus)")
    got = {}
    for what in ("--cflags", "--libs", "--variable=libdir", "--modversion"):
        rc, text, err = pkg_config([what], pcdir)
        if rc:
            raise Refusal(f"pkg-config {what} locus-dsm failed (PKG_CONFIG_PATH={pcdir}): "
                          f"{err or 'no message'}")
        got[what] = text
    return Locus(prefix, pcdir, os.path.realpath(got["--variable=libdir"]), macros,
                 got["--cflags"], got["--libs"], got["--modversion"])


def within(path, root):
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def prepare_work(out, codes):
    """OUT/work/{pthreads,locus}/codes: fresh copies of the checkout's codes/."""
    work = os.path.join(out, "work")
    if os.path.exists(work):
        if not os.path.exists(os.path.join(work, MARKER)):
            raise Refusal(f"{work} exists and was not made by tools/splash3: give another --out")
        shutil.rmtree(work)
    os.makedirs(work)
    open(os.path.join(work, MARKER), "w").close()
    copies = {}
    for mode in ("pthreads", "locus"):
        copies[mode] = os.path.join(work, mode, "codes")
        shutil.copytree(codes, copies[mode], symlinks=True)
    return copies


# ---------------------------------------------------------------------------------------
# Running a command with a timeout that ends everything it started.

def descendants(pid):
    """Every process under pid (read from /proc)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def running(pid):
    """pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop(proc):
    """Ends proc and every process under it: mpiexec's proxies start sessions of their
    own, so its process group is not enough; SIGTERM first (mpiexec then ends its ranks),
    SIGKILL for whatever is left."""
    pids = [proc.pid] + descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + 5
        while time.monotonic() < end:
            proc.poll()
            pids = [p for p in pids if running(p)] + [p for p in descendants(proc.pid)
                                                     if p not in pids]
            if not pids:
                break
            time.sleep(0.05)
        if not pids:
            break
    proc.wait()


def execute(cmd, cwd, env, stdin, timeout, out, err=None):
    """Runs cmd; (exit status, or None when it outlived timeout, wall seconds). Its
    output goes to the file out, its errors to err (None: to out as well)."""
    with open(stdin or os.devnull, "rb") as fin, open(out, "wb") as fout, \
            open(err or os.devnull, "wb") as ferr:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=fin, stdout=fout,
                                stderr=ferr if err else subprocess.STDOUT,
                                start_new_session=True)
        try:
            t1 = exited(proc, timeout)
            if t1 is None:
                stop(proc)
                return None, time.monotonic() - t0
            return proc.wait(), t1 - t0
        except BaseException:  # ^C: nothing it started outlives the tool
            stop(proc)
            raise


def exited(proc, timeout):
    """When proc exited (time.monotonic()), or None if it outlived timeout seconds. Read
    as its pidfd turns readable: Popen.wait(timeout=...) looks in sleeps that grow to
    50 ms, which added up to 50 ms to every wall time (a quarter of a short program's)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfds: the polling wait
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return time.monotonic()
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            if poller.poll(max(1, int(left * 1000) + 1)):
                return time.monotonic()
    finally:
        os.close(fd)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def failure(rc, err, timeout):
    """Why a run that did not exit 0 failed, in a phrase."""
    if rc is None:
        return f"timed out after {timeout:g} s"
    if rc < 0:
        return f"killed by {signal.Signals(-rc).name}"
    for line in err.splitlines():
        # (a node's word that lrc keeps its metadata is not why a run failed)
        if line.startswith("locus-dsm:") and " lrc keeps " not in line:
            return f"exit {rc}: {line[:200]}"
    m = re.search(r"EXIT STRING: (.*)", err)
    if m:
        return f"exit {rc}: {m.group(1).strip()[:100]}"
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    return f"exit {rc}" + (f": {lines[-1][:100]}" if lines else "")


def collect(appdir, globs):
    """The files matching globs in appdir: name -> bytes."""
    found = {}
    for g in globs:
        d, pat = os.path.split(g)
        full = os.path.join(appdir, d)
        for n in sorted(os.listdir(full)) if os.path.isdir(full) else []:
            if fnmatch.fnmatch(n, pat) and os.path.isfile(os.path.join(full, n)):
                with open(os.path.join(full, n), "rb") as f:
                    found[os.path.join(d, n)] = f.read()
    return found


def remove_outputs(appdir, globs):
    """A file an earlier run left must not pass for this run's."""
    for name in collect(appdir, globs):
        os.remove(os.path.join(appdir, name))


# ---------------------------------------------------------------------------------------
# Building.

def clean(appdir, log, env):
    """make clean, then what m4 made (X beside X.in) wherever make clean leaves it: the
    generated files do not depend on MACROS, so a stale one would keep the old macros."""
    execute(["make", "clean"], appdir, env, None, BUILD_TIMEOUT, log)
    for root, _, names in os.walk(appdir):
        for n in names:
            if n.endswith(".in") and os.path.exists(os.path.join(root, n[:-3])):
                os.remove(os.path.join(root, n[:-3]))


def build(app, codes, mode, locus, logs, base_env):
    """Builds app in the copy at codes; (ok, the make command, log file)."""
    appdir = os.path.join(codes, app.dir)
    log = os.path.join(logs, f"{app.name}-{mode}-build.log")
    env = locus.env(base_env) if mode == "locus" else dict(base_env)
    clean(appdir, os.path.join(logs, f"{app.name}-{mode}-clean.log"), env)
    cmd = ["make"] + (locus.make_vars() if mode == "locus" else [])
    rc, _ = execute(cmd, appdir, env, None, BUILD_TIMEOUT, log)
    ok = rc == 0 and os.path.isfile(os.path.join(appdir, app.exe))
    return ok, cmd, log


# ---------------------------------------------------------------------------------------
# The table.

def fmt_s(x):
    if x is None:
        return "—"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def fmt_ratio(x):
    return "—" if x is None else f"{x:.2f}" if x < 10 else f"{x:.0f}"


def fmt_own(run):
    raw, unit = run.get("own_time"), run.get("own_time_unit_s")
    if raw is None:
        return "—"
    if unit is None:
        return f"{raw} (unit unknown)"
    if unit == 1.0:
        return "<1" if raw == 0 else str(raw)
    return fmt_s(raw * unit)


def fmt_verified(v):
    return "—" if v is None else "yes" if v else "no"


def avg_us(total_s, count):
    return f"{1e6 * total_s / count:.0f}" if count else "—"


def time_table(records):
    """Per node of every locus-dsm run: the runtime's own account of its time."""
    rows = [r for r in records if r["kind"] == "run" and r.get("dsm")]
    if not rows:
        return []
    lines = ["", "## Where locus-dsm's time went", "",
             "Per node, from the runtime's statistics (LOCUS_DSM_STATS=json): seconds busy "
             "(its threads' CPU), stalled in faults and in synchronization, the communication "
             "thread's overhead, and other (descheduled, or not measured); remote misses and "
             "remote lock acquisitions, with their average wait; megabytes sent.", "",
             "| app | mode | nodes×threads | node | threads | busy | fault | sync | overhead "
             "| other | remote misses (avg µs) | remote locks (avg µs) | MB sent |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for n in r["dsm"]:
            secs = " | ".join(f"{n.get(k, 0):.3f}" for k in
                              ("busy_s", "fault_s", "sync_s", "overhead_s", "other_s"))
            lines.append(
                f"| {r['app']} | {mode_label(r)} | {r['nodes']}×{r['threads']} | {n['node']} | "
                f"{n.get('threads', '—')} | {secs} | {n.get('remote_misses', 0)} "
                f"({avg_us(n.get('remote_miss_s', 0), n.get('remote_misses', 0))}) | "
                f"{n.get('remote_locks', 0)} "
                f"({avg_us(n.get('remote_lock_s', 0), n.get('remote_locks', 0))}) | "
                f"{n.get('bytes', 0) / 1e6:.1f} |")
    idle = dsmrun.idle_summary([r["dsm"] for r in rows])
    if idle:
        lines += ["", idle]
    return lines


def mode_label(run):
    return "pthreads" if run["mode"] == "pthreads" else f"locus-dsm {run['protocol']}"


def table(meta, startup, records):
    lines = ["# Splash-3 with pthreads and on locus-dsm", "",
             f"`{meta['command']}`", "",
             f"Splash-3: {meta['splash']} {meta['splash_commit'][:12]}; "
             f"locus-dsm {meta['locus_version']} from {meta['prefix']}; {meta['cpus']} CPUs; "
             f"inputs: {meta['size']}; timeout {meta['timeout']:g} s per run.", "",
             "## mpiexec start-up", "",
             "| nodes | `mpiexec -n N /bin/true` (s) |", "|---|---|"]
    for s in startup:
        lines.append(f"| {s['nodes']} | {fmt_s(s['wall_s'])} |")
    lines += ["", "## Runs", "",
              "wall: the whole command, start-up included. program: the program's own "
              "time without initialization (pthreads: Splash-3's CLOCK counts whole "
              "seconds, <1 is 0). ratio: wall over pthreads' wall at the same P.", "",
              "| app | mode | nodes×threads | P | wall (s) | program (s) | ratio to pthreads "
              "| verified | notes |", "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if r["kind"] == "skipped":
            lines.append(f"| {r['app']} | — | — | — | — | — | — | — | skipped: {r['why']} |")
        elif r["kind"] == "build" and not r["ok"]:
            lines.append(f"| {r['app']} | {'pthreads' if r['mode'] == 'pthreads' else 'locus-dsm'}"
                         f" | — | — | — | — | — | no | build failed: {r['log']} |")
        elif r["kind"] == "run":
            wall = fmt_s(r["wall_s"]) if r["status"] != "timeout" else f"> {meta['timeout']:g}"
            lines.append(f"| {r['app']} | {mode_label(r)} | {r['nodes']}×{r['threads']} | "
                         f"{r['P']} | {wall} | {fmt_own(r)} | {fmt_ratio(r.get('ratio'))} | "
                         f"{fmt_verified(r['verified'])} | {r['why']} |")
    lines += time_table(records)
    lines += ["", "## Programs", "", "| app | directory | command | check |", "|---|---|---|---|"]
    for name in meta["apps"]:
        app = BY_NAME[name]
        lines.append(f"| {name} | codes/{app.dir} | `{app.shown(meta['size'])}` | "
                     f"{app.check.describe()} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------

def parse_list(text, what, ap, cast=int):
    try:
        xs = [cast(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        ap.error(f"{what} takes a comma-separated list ({text!r})")
    if not xs:
        ap.error(f"{what}: an empty list")
    return list(dict.fromkeys(xs))


def programs_help():
    out = ["programs (--apps; small inputs, P = the processor count):"]
    for a in APPS:
        names = a.name + (f" (or {', '.join(a.aliases)})" if a.aliases else "")
        out.append(f"  {names:22s} {a.shown('small')}")
    return "\n".join(out)


def parser():
    doc = __doc__.split("\n\n", 1)
    ap = argparse.ArgumentParser(
        description=doc[0],
        epilog=doc[1] + "\n" + programs_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", "--splash", dest="splash", required=True, metavar="DIR",
                    help="a checkout of Splash-3 (DIR/codes is copied; DIR is never written)")
    ap.add_argument("--prefix", help="a locus install (default: the prefix of the locus-dsm "
                                     "pkg-config finds)")
    ap.add_argument("--apps", default="all",
                    help="comma-separated programs (default: all of them)")
    ap.add_argument("--nodes", default="1,2,4", help="node counts (default: %(default)s)")
    ap.add_argument("--threads", default="1,2",
                    help="threads per node (default: %(default)s); P = nodes x threads")
    ap.add_argument("--protocols", default="sc,lrc",
                    help="from sc,lrc,avr (default: %(default)s)")
    ap.add_argument("--size", choices=SIZES, default="small",
                    help="small: inputs that run in seconds (default); readme: Splash-3 "
                         "README's recommended inputs (those missing from the checkout "
                         "are skipped); large: larger ones for fft (-m22), lu (-n1024), "
                         "ocean (-n514), radix (4M keys) and the waters (3375 "
                         "molecules), where locus-dsm's start and the serial set-up "
                         "weigh less; the README's for the others")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds per run; a run still going then is killed and reported "
                         "as timed out (default: %(default)g)")
    ap.add_argument("--out", default="build/splash3",
                    help="work copies, logs, table.md and results.jsonl (default: "
                         "%(default)s)")
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    nodes = parse_list(a.nodes, "--nodes", ap)
    threads = parse_list(a.threads, "--threads", ap)
    protocols = parse_list(a.protocols, "--protocols", ap, str)
    if min(nodes) < 1 or min(threads) < 1:
        ap.error("--nodes and --threads take whole numbers >= 1")
    if not a.timeout > 0:
        ap.error("--timeout takes seconds > 0")
    bad = [p for p in protocols if p not in PROTOCOLS]
    if bad:
        ap.error(f"--protocols: {','.join(bad)} unknown; from {','.join(PROTOCOLS)}")
    names = (list(BY_NAME) if a.apps == "all"
             else [ALIASES.get(n, n) for n in parse_list(a.apps, "--apps", ap, str)])
    bad = [n for n in names if n not in BY_NAME]
    if bad:
        ap.error(f"--apps: {','.join(bad)} unknown; from {','.join(BY_NAME)} "
                 f"(or {','.join(ALIASES)})")
    names = list(dict.fromkeys(names))
    try:
        return measure(a, names, nodes, threads, protocols, argv)
    except Refusal as e:
        print(f"splash3: {e}", file=sys.stderr)
        return 1


def say(text):
    print(f"[splash3] {text}", flush=True)


def measure(a, names, nodes, threads, protocols, argv):
    codes = splash_codes(a.splash)
    if within(a.out, os.path.dirname(codes)):
        raise Refusal(f"--out {a.out} is inside the Splash-3 checkout, which is never "
                      "written: give a directory outside it")
    cc = compiler(codes) or "gcc"
    need_commands(["make", "m4", cc, "mpicc", "mpiexec", "pkg-config"])
    locus = find_locus(a.prefix)
    out = os.path.realpath(a.out)
    logs, inputs = os.path.join(out, "logs"), os.path.join(out, "inputs")
    for d in (logs, inputs):
        os.makedirs(d, exist_ok=True)
    copies = prepare_work(out, codes)
    units = {"pthreads": clock_unit(pthread_macros(copies["pthreads"]) or ""),
             "locus": clock_unit(locus.macros)}
    commit = subprocess.run(["git", "-C", os.path.dirname(codes), "rev-parse", "HEAD"],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    meta = {"kind": "setting",
            "command": "tools/splash3 " + " ".join(sys.argv[1:] if argv is None else argv),
            "splash": os.path.dirname(codes),
            "splash_commit": commit.stdout.strip() if commit.returncode == 0 else "",
            "prefix": locus.prefix, "locus_version": locus.version,
            "pthread_macros": pthread_macros(codes), "locus_macros": locus.macros,
            "locus_make": locus.make_vars(), "clock_unit_s": units,
            "apps": names, "nodes": nodes, "threads": threads, "protocols": protocols,
            "size": a.size, "timeout": a.timeout, "cpus": os.cpu_count()}
    jsonl = open(os.path.join(out, "results.jsonl"), "w")

    def record(obj):
        jsonl.write(json.dumps(obj) + "\n")
        jsonl.flush()
        return obj

    record(meta)
    base_env = dict(os.environ)
    startup = []
    for n in nodes:
        walls = []
        for i in range(3):
            log = os.path.join(logs, f"startup-{n}-{i}.log")
            rc, wall = execute(["mpiexec", "-n", str(n), "/bin/true"], out, base_env, None,
                               a.timeout, log)
            if rc != 0:
                raise Refusal(f"`mpiexec -n {n} /bin/true` failed "
                              f"({failure(rc, read(log), a.timeout)}): see {log}")
            walls.append(wall)
        startup.append(record({"kind": "startup", "nodes": n, "wall_s": statistics.median(walls),
                               "walls_s": walls}))
        say(f"mpiexec -n {n} /bin/true: {fmt_s(startup[-1]['wall_s'])} s")

    Ps = sorted({n * t for n in nodes for t in threads})
    records, failed = [], False
    for name in names:
        app = BY_NAME[name]
        appdir = {m: os.path.join(copies[m], app.dir) for m in copies}
        if not os.path.isfile(os.path.join(appdir["pthreads"], "Makefile")):
            why = f"not in the checkout (codes/{app.dir}/Makefile)"
        else:
            gone = [f for f in app.inputs(a.size)
                    if not os.path.isfile(os.path.join(appdir["pthreads"], f))]
            why = f"input missing ({', '.join(gone)})" if gone else ""
        if why:
            records.append(record({"kind": "skipped", "app": name, "why": why}))
            say(f"{name}: skipped: {why}")
            continue
        built = {}
        for mode in ("pthreads", "locus"):
            ok, cmd, log = build(app, copies[mode], mode, locus, logs, base_env)
            built[mode] = ok
            rec = record({"kind": "build", "app": name, "mode": mode, "ok": ok,
                          "command": cmd, "dir": appdir[mode], "log": os.path.relpath(log, out)})
            if not ok:
                records.append(rec)
                failed = True
                say(f"{name}: the {mode} build failed: see {log}")
        for P in Ps:
            stdin = None
            inp = app.stdin.get(a.size)
            if inp and inp.p_at:
                with open(os.path.join(appdir["pthreads"], inp.path), errors="replace") as f:
                    template = f.read()
                stdin = os.path.join(inputs, f"{name}-{os.path.basename(inp.path)}-P{P}")
                with open(stdin, "w") as f:
                    f.write(inp.text_for(template, P))
            elif inp:
                stdin = os.path.join(appdir["pthreads"], inp.path)
            points = [("pthreads", 1, P, "")] + [("locus", n, P // n, p) for n in nodes
                                                  for t in threads if n * t == P
                                                  for p in protocols]
            ref = pthreads_wall = None
            for mode, n, t, proto in points:
                if not built[mode]:
                    continue
                rec, result = run_one(app, a, mode, n, t, proto, P, appdir[mode], stdin,
                                      locus, base_env, logs, units[mode], ref, out)
                if mode == "pthreads":
                    ref, pthreads_wall = (result if rec["status"] == "ok" else None,
                                          rec["wall_s"] if rec["status"] == "ok" else None)
                elif rec["status"] == "ok" and pthreads_wall:
                    rec["ratio"] = rec["wall_s"] / pthreads_wall
                failed |= rec["status"] != "ok" or rec["verified"] is False
                records.append(record(rec))
                say(f"{name:14s} {mode_label(rec):17s} {n}x{t} P={P}: "
                    f"{fmt_s(rec['wall_s'])} s, verified {fmt_verified(rec['verified'])}"
                    + (f" ({rec['why']})" if rec["why"] else ""))
    jsonl.close()
    text = table(meta, startup, records)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    print(text, end="")
    say(f"wrote {a.out}/table.md and {a.out}/results.jsonl; logs in {a.out}/logs")
    return 1 if failed else 0


def run_one(app, a, mode, n, t, proto, P, appdir, stdin, locus, base_env, logs, unit, ref,
            out):
    """One run of app, checked: (its record, the result a comparison takes)."""
    cmd = app.argv(a.size, P)
    env = dict(base_env)
    tag = "pthreads" if mode == "pthreads" else f"{n}x{t}-{proto}"
    log = os.path.join(logs, f"{app.name}-P{P}-{tag}")
    if mode == "locus":
        env = locus.env(env)
        env["LOCUS_DSM_PROTOCOL"] = proto
        env["LOCUS_DSM_STATS"] = "json"  # where the time went (split_stats)
        if stdin:
            env["LOCUS_DSM_STDIN"] = stdin
        cmd = ["mpiexec", "-n", str(n)] + cmd
    remove_outputs(appdir, app.outputs)
    rc, wall = execute(cmd, appdir, env, None if mode == "locus" else stdin, a.timeout,
                       log + ".out", log + ".err")
    stdout, stderr = read(log + ".out"), read(log + ".err")
    stdout, dsm = split_stats(stdout) if mode == "locus" else (stdout, [])
    rec = {"kind": "run", "app": app.name, "mode": mode, "protocol": proto or None,
           "nodes": n, "threads": t, "P": P, "command": cmd, "dir": appdir,
           "stdin": stdin, "rc": rc, "wall_s": wall, "own_time": own_time(stdout),
           "own_time_unit_s": unit, "verified": None, "why": "",
           "log": os.path.relpath(log, out) + ".out", "dsm": dsm}
    if rec["own_time"] is not None and unit is not None:
        rec["own_time_s"] = rec["own_time"] * unit
    files = collect(appdir, app.outputs)
    result = app.check.result(stdout, files)
    if rc != 0:
        rec.update(status="timeout" if rc is None else "failed", verified=False,
                   why=failure(rc, stderr, a.timeout))
        return rec, None
    rec["status"] = "ok"
    if not app.check.compares:
        ok, why = app.check.verdict(stdout, files, None)
        rec.update(verified=ok, why=why)
    elif mode == "pthreads":
        if result:
            rec["why"] = "the reference for locus-dsm at this P"
        else:
            rec.update(verified=False, why="no result to compare with")
    elif not ref:
        rec["why"] = "nothing to compare with: the pthreads run failed"
    else:
        ok, why = app.check.verdict(stdout, files, ref)
        rec.update(verified=ok, why=why)
    return rec, result
