#!/bin/sh
# Failure behaviour: a node that dies or leaves early ends every other node
# with an error naming it, within a bounded time; a wild access outside the
# shared region is a plain crash with a message, not a hang.
#   failure.sh MPIEXEC PROGRAM
# What Debian's hydra (MPICH 4.0.2) does when a process dies or exits early
# (strace of hydra_pmi_proxy; see docs/dsm.md "Failure" for the evidence):
#   - default clean-up: kill(-pgid, SIGKILL) to every other process group a
#     few ms later, with no catchable signal first. The test asks for a
#     nonzero exit in bounded time and for the failed node to be named by
#     someone: a survivor, the victim itself (early exit) or the launcher.
#   - -disable-auto-cleanup: SIGUSR1 to every process group first. If the
#     victim was killed by a signal, the proxy's main loop then SIGKILLs every
#     process as soon as it reaps the victim (usually 1-7 ms later; sometimes
#     only at the next event): survivors that get scheduled in between name
#     it, the others cannot, so "kill" keeps the weaker check. If the victim
#     exited (any status), nothing kills the survivors: every survivor can
#     name it, and the test requires each to.
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
# every_survivor_names VICTIM NODES [WHY]: each other node printed its own
# message naming VICTIM (and saying WHY, e.g. "was silent too long").
every_survivor_names() {
	k=0
	while [ "$k" -lt "$2" ]; do
		if [ "$k" -ne "$1" ] &&
			! grep -q "locus-dsm: node $k: node $1 (pid .*) ${3:-}.*before locus_dsm_finalize" "$OUT"; then
			echo "     node $k did not name node $1"
			return 1
		fi
		k=$((k + 1))
	done
}
outside_msg() { grep -q "outside the shared region" "$OUT"; }

for how in kill exit; do
	run "$how (default clean-up)" -n 4 "$PROG" $how 2
	expect "$how" "nonzero exit within ${LIMIT}s" bounded
	expect "$how" "failed node named" names_victim
	run "$how (-disable-auto-cleanup)" -disable-auto-cleanup -n 4 "$PROG" $how 2
	expect "$how/no-cleanup" "nonzero exit within ${LIMIT}s" bounded
	expect "$how/no-cleanup" "failed node named" names_victim
	if [ "$how" = exit ]; then
		expect "$how/no-cleanup" "every survivor names the failed node" \
			every_survivor_names 2 4
	fi
done
# A node dies while every other node waits for a shipped call to it: each
# caller leaves, the dead node named (nothing waits forever).
run "ship" -disable-auto-cleanup -n 4 "$PROG" ship 2
expect ship "nonzero exit within ${LIMIT}s" bounded
expect ship "every caller names the failed node" every_survivor_names 2 4
# A node that hangs (stopped: it neither exits nor says anything) on another
# host (LOCUS_DSM_HOST labels: no pidfd to watch): its silence names it. The
# survivor's exit then has the launcher kill the stopped node.
run "stop" -genv LOCUS_DSM_PEER_TIMEOUT_S 1 -n 1 -env LOCUS_DSM_HOST a "$PROG" stop 1 : \
	-n 1 -env LOCUS_DSM_HOST b "$PROG" stop 1
expect stop "nonzero exit within ${LIMIT}s" bounded
expect stop "the survivor names the silent node" every_survivor_names 1 2 "was silent too long"

# No failure: every node stopped at once for longer than the peer timeout and
# then resumed, as on a machine that runs nothing else for a while (processes
# at real-time priority on every CPU, a paused virtual machine). No node was
# silent while the other could listen: the run finishes. The sleep is how
# long the pause lasts, not a wait for anything.
pause_run() {
	dir=$(mktemp -d)
	mkfifo "$dir/in" "$dir/out"
	t0=$(date +%s)
	timeout -k 5 $((LIMIT + 30)) "$MPIEXEC" -genv LOCUS_DSM_PEER_TIMEOUT_S 1 \
		-genv LOCUS_DSM_DELAY_US 100000 -n 2 "$PROG" pause 0 <"$dir/in" >"$dir/out" 2>&1 &
	job=$!
	exec 3>"$dir/in" 4<"$dir/out"
	: >"$OUT"
	pids=
	while [ "$(echo $pids | wc -w)" -lt 2 ] && IFS= read -r line <&4; do
		echo "$line" >>"$OUT"
		case $line in "paused node "*) pids="$pids ${line##* pid }" ;; esac
	done
	cat <&4 >>"$OUT" &
	drain=$!
	if [ -n "$pids" ]; then
		kill -STOP $pids
		sleep 3
		kill -CONT $pids
	fi
	echo go >&3
	exec 3>&-
	wait $job
	rc=$?
	wait $drain
	exec 4<&-
	rm -r "$dir"
	secs=$(($(date +%s) - t0))
	echo "--- pause: exit $rc after ${secs}s"
	sed 's/^/    /' "$OUT" | head -40
}
pause_run
expect pause "every node stopped 3 s and resumed: the run finishes" [ "$rc" -eq 0 ]
expect pause "no node declared dead" sh -c "! grep -q 'before locus_dsm_finalize' '$OUT'"

run "outside" -n 2 "$PROG" outside 1
expect outside "nonzero exit within ${LIMIT}s" bounded
expect outside "crash reported as outside the shared region" outside_msg
exit $fail
