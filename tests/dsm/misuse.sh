#!/bin/sh
# The edges of the DSM API (tests/dsm/dsm_misuse.c says what each mode does):
# what must work works, under every protocol it concerns; every misuse ends
# the run with a message that names it, with a nonzero status, well within
# the peer timeout (LIMIT is a hang backstop, never a performance bound);
# a node's memory does not grow with the region's size.
#   misuse.sh MPIEXEC PROGRAM [asan]
set -u
MPIEXEC=$1
PROG=$2
SANITIZED=${3:-}
LIMIT=${LOCUS_MISUSE_LIMIT_S:-60}
DIR=$(mktemp -d)
OUT=$DIR/out
trap 'exec 3<&-; rm -rf "$DIR"' EXIT
fail=0

# mpiexec's standard input: a FIFO held open, never at end of file (hydra may
# die of SIGPIPE when every rank exits at once with its stdin at end of file;
# tests/dsm/cli.sh says more).
mkfifo "$DIR/stdin"
exec 3<>"$DIR/stdin"

# run NODES PROTOCOL ARGS...: output in $OUT, status in $rc.
run() {
	nodes=$1
	proto=$2
	shift 2
	LOCUS_DSM_PROTOCOL=$proto timeout -k 5 "$LIMIT" "$MPIEXEC" ${MPIEXEC_ARGS:-} -n "$nodes" \
		"$PROG" "$@" <&3 >"$OUT" 2>&1
	rc=$?
}

show() {
	sed 's/^/    /' "$OUT" | head -12
}

# works NODES PROTOCOL MODE [ARG]: exit 0 and "ok:" from node 0.
works() {
	run "$@"
	if [ "$rc" -ne 0 ] || ! grep -q "^ok: " "$OUT"; then
		echo "FAIL $3 ($2, $1 nodes): exit $rc"
		show
		fail=1
	else
		echo "ok   $3 ($2, $1 nodes): $(grep '^ok: ' "$OUT" | head -1)"
	fi
}

# named NODES MODE WORDS: a nonzero exit (not the backstop's), and WORDS in the output.
named() {
	nodes=$1
	mode=$2
	words=$3
	run "$nodes" sc "$mode"
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] ||
		! grep -q -e "$words" "$OUT" || grep -q "finished without a word" "$OUT"; then
		echo "FAIL $mode: exit $rc, want a message with '$words':"
		show
		fail=1
	else
		echo "ok   $mode: exit $rc: $(grep -e "$words" "$OUT" | head -1 | cut -c1-150)"
	fi
}

# every_node_told NODES MODE WORDS: as named, under -disable-auto-cleanup (the
# launcher kills nobody), and every node but 0 says it stops because of it.
every_node_told() {
	nodes=$1
	MPIEXEC_ARGS=-disable-auto-cleanup named "$@"
	k=1
	while [ "$k" -lt "$nodes" ]; do
		if ! grep -q "node $k: stopping: node 0 stopped the run: $3" "$OUT"; then
			echo "FAIL $2: node $k did not say why it stops"
			show
			fail=1
		fi
		k=$((k + 1))
	done
}

# 1. Sizes that wrap are refused; the allocator stays where it was.
works 2 sc alloc
# 2. The program's SIGSEGV handler, before or after init, with sigaction or
#    signal(), gets its own faults and never the runtime's.
for when in before after signal; do
	works 2 sc segv-$when
done
works 2 lrc segv-after
works 2 avr segv-before
# 3. Memory grows with the pages a program touches, not the region's size:
#    peak resident size with a 64g and a 16384g region within 10 MB of 256m.
#    (Under AddressSanitizer the sizes only have to run: its shadow memory
#    makes resident sizes a different measure.)
peak() { # peak NODES PROTOCOL SIZE: the largest node's peak RSS in kB
	LOCUS_DSM_SIZE=$3 run "$1" "$2" memory
	if [ "$rc" -ne 0 ]; then
		echo "FAIL memory ($2, $3): exit $rc" >&2
		show >&2
		echo 0
		return 1
	fi
	sed -n 's/.*peak_rss_kb \([0-9]*\).*/\1/p' "$OUT" | sort -n | tail -1
}
for proto in sc lrc avr; do
	base=$(peak 2 $proto 256m) || fail=1
	for size in 64g 16384g; do
		kb=$(peak 2 $proto $size) || fail=1
		if [ -z "$SANITIZED" ] && [ $((kb - base)) -gt 10240 ]; then
			echo "FAIL memory ($proto): peak RSS $kb kB with a $size region, $base kB with 256m"
			fail=1
		else
			echo "ok   memory ($proto): peak RSS $kb kB with a $size region, $base kB with 256m"
		fi
	done
done
# 4. A child of fork() is not a node.
works 2 sc fork
works 2 lrc fork
# 6. Lock state stays bounded once released: at most LOCUS_DSM_LOCK_KEEP (1024)
# locks kept on a node (and, under lrc, two barriers on); none at all without
# keeping.
works 2 sc locks 20000
works 3 lrc locks 20000
works 2 avr locks 2000
export LOCUS_DSM_LOCK_KEEP=16
works 2 sc locks 2000
works 3 lrc locks 2000
unset LOCUS_DSM_LOCK_KEEP
export LOCUS_DSM_LOCK_CACHE=0
works 2 sc locks 20000
works 3 lrc locks 20000
unset LOCUS_DSM_LOCK_CACHE
# 5. Misuse that used to hang: each named, the run ended.
named 2 team-return "thread 1 of the team returned from its function after 0 locus_dsm_barrier calls while thread 0 waits"
named 2 team-return-tb "returned from its function after 0 locus_dsm_team_barrier calls"
named 2 lock-finalize "locus_dsm_finalize while this node holds lock 7"
named 2 lock-barrier "deadlock: every node waits"
named 2 barrier-apart "node 1: waits at barrier object 0x[0-9a-f]* (home node 1, 2 participants): 1 thread"
every_node_told 3 lock-barrier "deadlock: every node waits"
named 2 barrier-before "locus_dsm_barrier called before locus_dsm_init"
named 2 alloc-before "locus_dsm_alloc called before locus_dsm_init"
named 2 barrier-after "locus_dsm_barrier called after locus_dsm_finalize"
named 2 extra-barrier "node 0 in locus_dsm_finalize, node 1 in locus_dsm_barrier"
every_node_told 3 extra-barrier "collective call 4 does not match across nodes: node 0 in locus_dsm_finalize, node 1 in locus_dsm_finalize, node 2 in locus_dsm_barrier"
named 2 two-threads "two threads of this node are in locus_dsm_barrier at once outside a team"
exit $fail
