#!/bin/sh
# Doorbells: the files nodes share to wake each other (src/dsm/bell.c) are
# gone after a normal run, after a peer dies and after a failed start-up;
# nodes labelled as on different hosts (LOCUS_DSM_HOST) reach no doorbell
# across the labels and still run correctly through the timed sleeps.
#   bell.sh MPIEXEC PROGRAM
set -u
MPIEXEC=$1
PROG=$2
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
fail=0

run() { # run NAME ARGS...: mpiexec ARGS, output in $OUT, exit status in rc
	name=$1
	shift
	timeout -k 5 120 "$MPIEXEC" "$@" >"$OUT" 2>&1
	rc=$?
	echo "--- $name: exit $rc"
	sed 's/^/    /' "$OUT" | head -30
}

check() { # check NAME WHAT TEST...
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

# Every node printed its pid (NODES of them) and none left a file behind.
no_files_left() {
	pids=$(sed -n 's/^bell-pid \([0-9]*\)$/\1/p' "$OUT")
	[ "$(echo "$pids" | grep -c .)" -eq "$1" ] || return 1
	for p in $pids; do
		for f in /dev/shm/locus-dsm."$p".*; do
			[ -e "$f" ] && echo "    left behind: $f" && return 1
		done
	done
	return 0
}

run one-host -n 4 "$PROG" run 40
check one-host "every node ran and checked its doorbells" [ "$rc" -eq 0 ]
check one-host "4 nodes ok" [ "$(grep -c 'ok: doorbells reach 3 nodes' "$OUT")" -eq 4 ]
check one-host "no doorbell file left" no_files_left 4

run two-hosts -n 2 -env LOCUS_DSM_HOST a "$PROG" run 40 : -n 2 -env LOCUS_DSM_HOST b "$PROG" run 40
check two-hosts "runs correctly across the labels" [ "$rc" -eq 0 ]
check two-hosts "each node reaches only its label's other node" \
	[ "$(grep -c 'ok: doorbells reach 1 nodes' "$OUT")" -eq 4 ]
check two-hosts "no doorbell file left" no_files_left 4

run peer-exits -n 3 "$PROG" exit 2
check peer-exits "the run fails" [ "$rc" -ne 0 ]
check peer-exits "no doorbell file left" no_files_left 3

run start-fails -n 1 -env LOCUS_DSM_SIZE 64m "$PROG" run 1 : -n 2 -env LOCUS_DSM_SIZE 128m "$PROG" run 1
check start-fails "the start-up is refused" grep -q "LOCUS_DSM_SIZE differs" "$OUT"
check start-fails "no doorbell file left" no_files_left 3

exit $fail
