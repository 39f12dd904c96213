"""locus-kv-load (bench/kv_load.c), the load generator that also speaks TLS: its command
line, its report (one JSON line on stdout), what is wrong with a run, and the certificate a
benchmark makes for servers started with -Z.
"""

import json
import os
import ssl
import subprocess

from .bench import REPO

DEFAULT_PATH = os.path.join(REPO, "build/release/bench/locus-kv-load")

def command(path, host, port, *, sets_pct, threads, connections, keys, key_size, value_size,
            duration=None, tls=None, prefill="before"):
    """Its argv. tls: None, or the CA file to verify the server against; prefill: 'before'
    (store every key, then the timed run), 'only' (store every key and stop) or 'none'."""
    argv = [str(path), "-s", f"{host}:{port}", "-T", str(threads), "-c", str(connections),
            "-r", str(sets_pct), "-k", str(keys), "--key-size", str(key_size),
            "--value-size", str(value_size)]
    if duration is not None:
        argv += ["-t", str(duration)]
    if tls:
        argv += ["--tls", "--ca", str(tls)]
    if prefill == "only":
        argv.append("--prefill-only")
    elif prefill == "none":
        argv.append("--no-prefill")
    return argv


def parse(stdout):
    """Its report as a dict (the last JSON line on stdout); {} if there is none."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return {}
    return {}


def problems(report, returncode=0, stderr=""):
    """What is wrong with one run, as short sentences (empty: nothing)."""
    found = []
    if returncode != 0:
        found.append(f"locus-kv-load exited with status {returncode}")
    if not report:
        found.append("no JSON report on locus-kv-load's stdout")
    else:
        if report.get("errors"):
            found.append(f"locus-kv-load counted {report['errors']} error(s)")
        if report.get("seconds") and not report.get("ops"):
            found.append("0 ops/s")
    other = [line for line in stderr.splitlines()
             if line.strip() and not (line.startswith("locus-kv-load: stored ")
                                      or (line.startswith("locus-kv-load: ") and " ops/s (" in line))]
    if other:
        found.append("locus-kv-load stderr: " + "\n".join(other)[:500])
    return found


def make_certificate(directory):
    """A self-signed server certificate and key made with the openssl command (ECDSA P-256,
    as the kv tests make theirs): (pem path, key path). The certificate is also the CA the
    client verifies against."""
    pem, key = os.path.join(directory, "server.pem"), os.path.join(directory, "server.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", pem,
                    "-days", "2", "-subj", "/CN=localhost"],
                   check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
    return pem, key


def server_args(pem, key):
    """The options that put a memcached (or locus-kv) on TLS with that certificate."""
    return ["-Z", "-o", f"ssl_chain_cert={pem},ssl_key={key}"]


def client_context(ca):
    """An ssl context that talks to those servers (stats over TLS), verifying against ca."""
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    return ctx
