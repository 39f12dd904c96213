"""kv-memcached-tests: memcached's own test files (t/*.t) against locus-kv and Debian's memcached.

memcached's tests start the server as `<builddir>/memcached-debug` through `<builddir>/timedrun`,
with t/lib/MemcachedTest.pm, from the build directory. This tool makes such a directory for
each server under test (--work, default build/memcached-t/<server>): t/ taken from a memcached
checkout at the release the servers are compared at (--src, --tag 1.6.18: `git archive`, so
the checkout's own tree is not touched), memcached-debug a script that execs the server, and
timedrun one that execs its command (memcached's waits 600 s and forwards signals; an exec
keeps the server's pid, which the tests signal: SIGUSR1 for a graceful stop). Each file runs
with perl, one at a time (the tests time themselves against a clock; the machine is small),
each under --timeout seconds; a file passes when perl exits 0 (Test::More's verdict: every
test ran and passed).

  tools/kv-memcached-tests --src DIR [--tag 1.6.18] [--servers locus-kv,memcached]
                           [--locus-kv PATH] [--memcached PATH] [--timeout S]
                           [--work DIR] [--json FILE] [FILE.t ...]

Without FILEs every t/*.t of the tag runs except the proxy's (memcached 1.6.18 as Debian
builds it has no proxy). Prints one line per file and server as it goes, then a table:
the files passing on both, on one only, on neither. With --json, one object per file and
server (name, server, status, seconds, the last lines of its output).

Standard library only; needs perl with Test::More (Debian's perl) and git.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import io
import time

from .bench import REPO

DEFAULT_LOCUS_KV = os.path.join(REPO, "build/release/src/kv/locus-kv")
DEFAULT_MEMCACHED = "/usr/bin/memcached"
DEFAULT_WORK = os.path.join(REPO, "build/memcached-t")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# What the test files read besides t/: line-lengths.t checks doc/protocol.txt.
EXTRA_FILES = ["doc/protocol.txt"]


def extract_t(src, tag, dest):
    """dest/t (and EXTRA_FILES where src has them): memcached's at `tag` (a git
    checkout), else src's as they are."""
    for d in ("t", "doc"):
        if os.path.exists(os.path.join(dest, d)):
            shutil.rmtree(os.path.join(dest, d))
    if os.path.isdir(os.path.join(src, ".git")) or src.endswith(".git") or os.path.isfile(
            os.path.join(src, "HEAD")):
        def archive(paths):
            return subprocess.run(["git", "-C", src, "archive", "--format=tar", tag] + paths,
                                  capture_output=True, check=False)
        tar = archive(["t"] + EXTRA_FILES)
        if tar.returncode != 0:  # a release without them: t/ alone
            tar = archive(["t"])
        if tar.returncode != 0:
            raise SystemExit(f"git archive {tag} t in {src}: {tar.stderr.decode().strip()}")
        with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as tf:
            tf.extractall(dest)
    elif os.path.isdir(os.path.join(src, "t")):
        shutil.copytree(os.path.join(src, "t"), os.path.join(dest, "t"))
        for f in EXTRA_FILES:
            if os.path.isfile(os.path.join(src, f)):
                os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
                shutil.copy(os.path.join(src, f), os.path.join(dest, f))
    else:
        raise SystemExit(f"{src}: neither a memcached git checkout nor a directory with t/")


def write_exec(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def make_builddir(src, tag, work, server_path):
    """A directory memcached's tests run from, whose memcached-debug is server_path."""
    os.makedirs(work, exist_ok=True)
    extract_t(src, tag, work)
    # The tests add -o relaxed_privileges, a name only builds with the privilege drop
    # (seccomp) know; Debian's memcached is built without it and refuses the name, so it
    # is taken out of the line for memcached (locus-kv accepts it).
    drop = ""
    if not os.path.basename(server_path).startswith("locus-kv"):
        drop = ('for a; do shift; if [ "$a" = -o ] && [ "${1:-}" = relaxed_privileges ]; then '
                'skip=1; continue; fi; if [ "${skip:-}" = 1 ]; then skip=; continue; fi; '
                'set -- "$@" "$a"; done\n')
    write_exec(os.path.join(work, "memcached-debug"),
               f"#!/bin/sh\n{drop}exec {server_path} \"$@\"\n")
    # memcached's timedrun forks, waits and forwards signals; exec keeps the pid instead.
    write_exec(os.path.join(work, "timedrun"), "#!/bin/sh\nshift\nexec \"$@\"\n")


def files_of(work, wanted):
    if wanted:
        return [os.path.basename(f) for f in wanted]
    names = sorted(f for f in os.listdir(os.path.join(work, "t")) if f.endswith(".t"))
    return [f for f in names if not f.startswith("proxy")]


def run_file(work, name, timeout):
    """(status, seconds, output tail): status pass, fail or timeout."""
    t0 = time.monotonic()
    p = subprocess.Popen(["perl", os.path.join("t", name)], cwd=work, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        status = "pass" if p.returncode == 0 else "fail"
    except subprocess.TimeoutExpired:
        status = "timeout"
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
    # The servers a file started are in its process group: none outlives it.
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    out = out.decode(errors="replace")
    tail = "\n".join(out.strip().splitlines()[-15:])
    return status, time.monotonic() - t0, tail


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=os.environ.get("MEMCACHED_SRC"),
                    help="a memcached git checkout (or a directory with t/); $MEMCACHED_SRC")
    ap.add_argument("--tag", default="1.6.18", help="the release whose t/ is run (1.6.18)")
    ap.add_argument("--servers", default="locus-kv,memcached",
                    help="comma-separated, from locus-kv and memcached (default: %(default)s)")
    ap.add_argument("--locus-kv", default=os.environ.get("LOCUS_KV", DEFAULT_LOCUS_KV),
                    help="the locus-kv binary ($LOCUS_KV, else %(default)s)")
    ap.add_argument("--memcached", default=DEFAULT_MEMCACHED,
                    help="the memcached binary (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds a test file may run before it is ended and counted as "
                         "failed (default: %(default)g)")
    ap.add_argument("--work", default=DEFAULT_WORK,
                    help="where each server's build directory is made (default: %(default)s)")
    ap.add_argument("--json", metavar="FILE",
                    help="also write one JSON object per file and server to FILE")
    ap.add_argument("files", nargs="*", metavar="FILE.t",
                    help="test files of t/ to run (default: all but the proxy's)")
    a = ap.parse_args(argv)
    if not a.src:
        ap.error("--src: a memcached checkout is needed "
                 "(git clone https://github.com/memcached/memcached)")
    paths = {"locus-kv": os.path.abspath(a.locus_kv), "memcached": a.memcached}
    servers = [s for s in a.servers.split(",") if s]
    for s in servers:
        if s not in paths:
            ap.error(f"--servers: unknown server {s!r} (locus-kv, memcached)")
        if not os.access(paths[s], os.X_OK):
            raise SystemExit(f"{s}: {paths[s]} is not an executable")
    works = {}
    for s in servers:
        works[s] = os.path.join(a.work, s)
        make_builddir(a.src, a.tag, works[s], paths[s])
    names = files_of(works[servers[0]], a.files)
    results = {}
    records = []
    for name in names:
        for s in servers:
            status, secs, tail = run_file(works[s], name, a.timeout)
            results[(name, s)] = status
            records.append({"file": name, "server": s, "status": status,
                            "seconds": round(secs, 1), "tail": tail})
            log(f"{name:32s} {s:10s} {status:8s} {secs:6.1f}s")
            if status != "pass":
                log("    " + tail.replace("\n", "\n    "))
    if a.json:
        with open(a.json, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    print(f"{'file':32s} " + " ".join(f"{s:10s}" for s in servers))
    for name in names:
        print(f"{name:32s} " + " ".join(f"{results[(name, s)]:10s}" for s in servers))
    for s in servers:
        n = sum(1 for name in names if results[(name, s)] == "pass")
        print(f"{s}: {n} of {len(names)} pass")
    if len(servers) == 2:
        only = [n for n in names if results[(n, servers[1])] == "pass"
                and results[(n, servers[0])] != "pass"]
        print(f"pass on {servers[1]} only: {' '.join(only) if only else '-'}")
    return 0 if all(v == "pass" for v in results.values()) else 1
