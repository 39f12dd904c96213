#!/bin/sh
# Placement by first touch: with `locus-jacobi --first-touch 1` each worker
# writes its own rows before the timed phase, so in the timed phase a node
# fetches only the pages at its partition's edges; with node 0 initializing
# everything (the default), node 1 fetches its whole half. Read from the
# runtime's statistics (LOCUS_DSM_STATS=json: remote misses per node).
#   first_touch.sh MPIEXEC JACOBI
set -u
MPIEXEC=$1
JACOBI=$2
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

# The largest remote_misses over the nodes of one run; the run must verify.
most_misses() {
	if ! LOCUS_DSM_STATS=json LOCUS_DSM_PROTOCOL=sc "$MPIEXEC" -n 2 "$JACOBI" -n 512 -i 4 "$@" \
		>"$OUT" 2>&1 </dev/null; then
		echo "first_touch: the run failed:" >&2
		cat "$OUT" >&2
		exit 1
	fi
	grep -q "verification passed" "$OUT" || { cat "$OUT" >&2; exit 1; }
	grep -o '"remote_misses": [0-9]*' "$OUT" | awk '{ if ($2 > m) m = $2 } END { print m + 0 }'
}

# 514 x 514 doubles twice: about 1030 pages, half of them node 1's.
spread=$(most_misses --first-touch 1)
node0=$(most_misses)
echo "first_touch: most remote misses on a node: $spread with --first-touch 1, $node0 without"
if [ "$spread" -ge 100 ]; then
	echo "first_touch: with --first-touch 1 a node still fetched $spread pages (expected the edges only)" >&2
	exit 1
fi
if [ "$node0" -le 200 ]; then
	echo "first_touch: with node 0 initializing, node 1 fetched only $node0 pages (expected its half, ~500)" >&2
	exit 1
fi
