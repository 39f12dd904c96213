"""Running locus-bench and reading its JSON lines.

locus-bench runs every measurement in a child process of its own and reports a failed one
on stderr without a JSON line, so a caller learns of a failure by a missing line and the
exit status. This module turns one invocation into a Result that carries either the parsed
measurements or the reason there are none, and never raises for a failed measurement:
a sweep keeps going and the point is drawn as missing.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BENCH = REPO / "build/release/bench/locus-bench"

# Mechanisms whose critical section runs on a dedicated server thread: in seed 000's
# terms the asynchronous mode, where a figure's "threads" counts the server too.
SERVER_MECHANISMS = ("ffwd", "async", "mpsc")

# What `fetchadd --help` listed when these tools were written; used only when the help
# cannot be read, so that --list and the registry still work without a binary.
FALLBACK_MECHANISMS = [
    "mutex", "tas", "ttas", "ticket", "mcs", "clh", "futex", "oyama", "ccsynch",
    "ffwd", "async", "flat", "mpsc", "stm",
]
FALLBACK_PEERS = ["peer:atomic", "peer:ck_ticket", "peer:ck_mcs", "peer:pthread_spin"]


class BenchError(Exception):
    """The benchmark binary cannot be used at all (missing, not executable)."""


def mechanism_name(spec):
    """'async:queue=32,servers=1' -> 'async'; 'peer:atomic' stays whole."""
    if spec.startswith("peer:"):
        return spec
    return spec.split(":", 1)[0]


def is_server_mechanism(spec):
    return mechanism_name(spec) in SERVER_MECHANISMS


def parse_json_lines(text):
    """The measurements in a bench's stdout: one JSON object per line.

    Lines that are not JSON objects are skipped (stdout should carry nothing else, but a
    stray line must not lose the measurements around it); returns (records, bad_lines).
    """
    records, bad = [], []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        if isinstance(obj, dict):
            records.append(obj)
        else:
            bad.append(line)
    return records, bad


def split_records(lines, command):
    """A run's JSON lines as (measurements of `command`, summaries, other lines).

    With --repeat N > 1 the bench follows each column with summary lines ("summary": true),
    and fetchadd --floor adds the floor's own measurements ("bench": "pingpong"); a caller
    that takes every record for one measurement must not see either.
    """
    records, summaries, others = [], [], []
    for rec in lines:
        if rec.get("summary"):
            summaries.append(rec)
        elif rec.get("bench", command) != command:
            others.append(rec)
        else:
            records.append(rec)
    return records, summaries, others


@dataclass
class Result:
    argv: list
    returncode: int
    records: list = field(default_factory=list)  # one per measurement of the command
    error: str = ""  # why records are missing, from the bench's stderr
    # --repeat N > 1: one per (mechanism, column), {"summary": true, "median", "min", "max",
    # "rank", "ties", ...}, after each column's measurements
    summaries: list = field(default_factory=list)
    # Lines of other measurements in the same run (fetchadd --floor: the pingpong floor)
    others: list = field(default_factory=list)

    @property
    def ok(self):
        return bool(self.records) and not self.error

    def command(self):
        return shlex.join(str(a) for a in self.argv)


def _failure_reason(stderr, returncode):
    """The bench's own words for a failure: its stderr lines that are not the table."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    useful = [l for l in lines if "locus-bench" in l or "error" in l.lower() or "unknown" in l]
    reason = "; ".join(useful[-3:]) or (lines[-1] if lines else "")
    return reason or f"exit status {returncode}"


class Bench:
    """One locus-bench binary."""

    def __init__(self, path=None):
        path = path or os.environ.get("LOCUS_BENCH") or DEFAULT_BENCH
        self.path = Path(path)
        self._help = {}

    def check(self):
        """Raises BenchError with a message that says how to get the binary."""
        if not self.path.exists():
            raise BenchError(
                f"locus-bench not found at {self.path}: build it with `make release`, "
                "or pass --bench PATH (or set LOCUS_BENCH)"
            )
        if not os.access(self.path, os.X_OK):
            raise BenchError(f"{self.path} is not executable")

    def help(self, command):
        """The text of `locus-bench COMMAND --help`, or None when the command does not exist."""
        if command not in self._help:
            try:
                p = subprocess.run(
                    [str(self.path), command, "--help"],
                    capture_output=True, text=True, timeout=30,
                )
                self._help[command] = p.stdout if p.returncode == 0 else None
            except (OSError, subprocess.TimeoutExpired):
                self._help[command] = None
        return self._help[command]

    def has(self, command):
        return self.help(command) is not None

    def mechanisms(self, command="fetchadd"):
        """Executor names from the help's 'Executor mechanisms:' line."""
        text = self.help(command) or self.help("fetchadd") or ""
        m = re.search(r"^Executor mechanisms:\s*(.+)$", text, re.MULTILINE)
        return m.group(1).split() if m else list(FALLBACK_MECHANISMS)

    def peers(self):
        """Peer names (peer:...) from fetchadd's help."""
        text = self.help("fetchadd") or ""
        found = re.findall(r"^\s+(peer:[A-Za-z0-9_]+)\s", text, re.MULTILINE)
        return list(dict.fromkeys(found)) or list(FALLBACK_PEERS)

    def run(self, command, args, duration, timeout=None):
        """Runs `locus-bench COMMAND ARGS --duration D --json` and parses its lines.

        The bench kills a measurement itself after 10 x duration + 10 s; the timeout here
        only guards against a bench that hangs outside its children.
        """
        argv = [str(self.path), command, *[str(a) for a in args], "--duration", f"{duration:g}", "--json"]
        if timeout is None:
            timeout = 30 * duration + 60
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Result(argv, -1, error=f"no answer within {timeout:.0f} s; killed")
        except OSError as e:
            return Result(argv, -1, error=f"cannot run {argv[0]}: {e.strerror}")
        lines, bad = parse_json_lines(p.stdout)
        records, summaries, others = split_records(lines, command)
        result = Result(argv, p.returncode, records, summaries=summaries, others=others)
        if p.returncode != 0 or not records:
            result.error = _failure_reason(p.stderr, p.returncode)
            if bad:
                result.error += f" (unparsed output: {bad[0][:80]})"
        return result


class Progress:
    """'[12/40] seed000-fig3-5 n2=256 mpsc ... 1.23e+06 it/s' on stderr, one line a point."""

    def __init__(self, total, stream=None):
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr

    def start(self, text):
        self.done += 1
        width = len(str(self.total))
        self.stream.write(f"[{self.done:>{width}}/{self.total}] {text} ... ")
        self.stream.flush()

    def finish(self, text):
        self.stream.write(text + "\n")
        self.stream.flush()
