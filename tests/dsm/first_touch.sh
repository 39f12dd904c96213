#!/bin/sh
# Placement by first touch: with `locus-jacobi --first-touch 1` each worker
# writes its own rows before the timed phase, so in the timed phase a node
# fetches only the pages at its partition's edges; with node 0 initializing
# everything (the default), node 1 fetches its whole half. Read from the
# runtime's statistics (LOCUS_DSM_STATS=json: the pages each node sent; not
# its remote misses, as one miss may bring a walk's pages, or a column's).
#   first_touch.sh MPIEXEC JACOBI
set -u
MPIEXEC=$1
JACOBI=$2
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

# The most page messages a node sent in one run; the run must verify.
most_pages() {
	if ! LOCUS_DSM_STATS=json LOCUS_DSM_PROTOCOL=sc "$MPIEXEC" -n 2 "$JACOBI" -n 512 -i 4 "$@" \
		>"$OUT" 2>&1 </dev/null; then
		echo "first_touch: the run failed:" >&2
		cat "$OUT" >&2
		exit 1
	fi
	grep -q "verification passed" "$OUT" || { cat "$OUT" >&2; exit 1; }
	grep -o '"msgs_page": [0-9]*' "$OUT" | awk '{ if ($2 > m) m = $2 } END { print m + 0 }'
}

# 514 x 514 doubles twice: about 1030 pages, half of them node 1's.
spread=$(most_pages --first-touch 1)
node0=$(most_pages)
echo "first_touch: most pages a node sent: $spread with --first-touch 1, $node0 without"
if [ $((spread * 3)) -gt "$node0" ]; then
	echo "first_touch: with --first-touch 1 a node still sent $spread pages against $node0 without (expected the edges, and what the walks bring with them: at most a third)" >&2
	exit 1
fi
if [ "$node0" -lt 400 ]; then
	echo "first_touch: with node 0 initializing, node 0 sent only $node0 pages (expected node 1's half, ~500)" >&2
	exit 1
fi
