#!/bin/sh
# Failure behaviour: a node that dies or leaves early ends every other node
# with an error naming it, within a bounded time; a wild access outside the
# shared region is a plain crash with a message, not a hang.
#   failure.sh MPIEXEC PROGRAM
# Hydra (MPICH's mpiexec) SIGKILLs the survivors within milliseconds of a
# failure, with or without -disable-auto-cleanup, racing the survivors' own
# report; so the test asks for a nonzero exit in bounded time everywhere, and
# for the failed node to be named: by a survivor's message, or, when hydra's
# kill won the race, by the victim itself (early exit) or by the launcher's
# report of the kill.
set -u
MPIEXEC=$1
PROG=$2
LIMIT=${LOCUS_FAILURE_LIMIT_S:-30}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
fail=0

# run NAME NODES ARGS...: runs mpiexec, leaves output in $OUT, sets rc and secs.
run() {
	name=$1
	shift
	t0=$(date +%s)
	timeout -k 5 $((LIMIT + 30)) "$MPIEXEC" "$@" >"$OUT" 2>&1
	rc=$?
	secs=$(($(date +%s) - t0))
	echo "--- $name: exit $rc after ${secs}s"
	sed 's/^/    /' "$OUT" | head -40
}

expect() { # expect NAME CONDITION-DESCRIPTION TEST...
	name=$1
	what=$2
	shift 2
	if "$@"; then
		echo "ok   $name: $what"
	else
		echo "FAIL $name: $what"
		fail=1
	fi
}

bounded() { [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ "$secs" -le "$LIMIT" ]; }
victim_pid() { sed -n 's/^victim node [0-9]* pid \([0-9]*\).*/\1/p' "$OUT" | head -1; }
names_victim() {
	grep -q "node 2 (pid .*before locus_dsm_finalize" "$OUT" ||
		grep -q "node 2: exit without locus_dsm_finalize" "$OUT" ||
		{ grep -q "^victim node 2" "$OUT" && grep -q "Killed (signal 9)" "$OUT"; }
}
outside_msg() { grep -q "outside the shared region" "$OUT"; }

for how in kill exit; do
	run "$how (default clean-up)" -n 4 "$PROG" $how 2
	expect "$how" "nonzero exit within ${LIMIT}s" bounded
	expect "$how" "failed node named" names_victim
	run "$how (-disable-auto-cleanup)" -disable-auto-cleanup -n 4 "$PROG" $how 2
	expect "$how/no-cleanup" "nonzero exit within ${LIMIT}s" bounded
	expect "$how/no-cleanup" "failed node named" names_victim
done
run "outside" -n 2 "$PROG" outside 1
expect outside "nonzero exit within ${LIMIT}s" bounded
expect outside "crash reported as outside the shared region" outside_msg
exit $fail
