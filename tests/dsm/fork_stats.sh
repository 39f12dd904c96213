#!/bin/sh
# The statistics of a fork-style run are its threads': a node whose work
# arrived by locus_dsm_spawn reports that work (its threads, their stalls and
# remote misses, the time it waited for work as sync), not an idle node.
# Read from LOCUS_DSM_STATS=json; the program checks its own results.
#   fork_stats.sh MPIEXEC DSM_FORK PROTOCOL
set -u
MPIEXEC=$1
FORK=$2
PROTOCOL=$3
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

fail() {
	echo "fork_stats: $PROTOCOL: $*" >&2
	cat "$OUT" >&2
	exit 1
}

# field NODE NAME: a number from node NODE's line of the JSON statistics.
field() {
	grep "^{\"dsm_node\": $1," "$OUT" | grep -o "\"$2\": [0-9.e+-]*" | awk '{ print $2 }'
}

# run THREADS: the fork-style test program over 2 nodes (threads round robin,
# main is thread 0 on node 0); it must pass its own checks.
run() {
	if ! echo 3 | LOCUS_DSM_STATS=json LOCUS_DSM_PROTOCOL=$PROTOCOL \
		"$MPIEXEC" -n 2 "$FORK" "$1" 20 >"$OUT" 2>&1; then
		fail "the run of $1 threads failed"
	fi
	grep -q "^ok: " "$OUT" || fail "the run of $1 threads did not check out"
	for n in 0 1; do
		[ -n "$(field $n threads)" ] || fail "no statistics for node $n"
	done
}

# 4 threads: node 0 runs main and thread 2, node 1 threads 1 and 3; every
# thread takes a mutex homed at node 0 and writes a shared total there (a
# remote miss, which only counted threads count; lock acquisitions are
# counted for every thread, so they tell nothing here).
run 4
for n in 0 1; do
	t=$(field $n threads)
	[ "$t" -eq 2 ] || fail "node $n: $t threads (expected 2 at once)"
	s=$(field $n stalls)
	[ "$s" -gt 0 ] || fail "node $n: no stall of its threads counted"
done
m=$(field 1 remote_misses)
[ "$m" -gt 0 ] || fail "node 1: no remote miss counted (its threads write node 0's pages)"

# 2 threads: node 1's only thread is spawned after node 0 set everything up;
# until then node 1 waited for work, which is sync time.
run 2
t=$(field 1 threads)
[ "$t" -eq 1 ] || fail "node 1: $t threads (expected 1)"
awk -v s="$(field 1 sync_s)" 'BEGIN { exit !(s > 0) }' || fail "node 1: no sync time while it waited for its thread"
echo "fork_stats: $PROTOCOL: every node's statistics are its threads'"
