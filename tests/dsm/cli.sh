#!/bin/sh
# The DSM applications' command lines and the runtime's environment, as a user
# meets them: --help prints the usage and exits 0; a bad value, an unknown
# option, a missing value, a size that does not fit, and a bad or mismatched
# LOCUS_DSM_* variable each end with a message naming the option or variable
# and a nonzero status, before anything runs: never a crash, a hang, or a run
# that "verifies" something else than was asked.
#   cli.sh MPIEXEC APPDIR
set -u
MPIEXEC=$1
APPS=$2
OUT=$(mktemp)
DIR=$(mktemp -d)
trap 'exec 3<&-; rm -rf "$OUT" "$DIR"' EXIT
fail=0

# mpiexec's standard input: a FIFO held open read-write, which never reaches end of
# file. Hydra 4.0.2's mpiexec, given a stdin already at end of file (/dev/null, as
# under CI), dies of SIGPIPE without printing anything about once in 30-100 runs
# when every rank exits within milliseconds, as a refused command line makes them
# do (seen here under load: 3-10 of 300; with this stdin 0 of 900).
mkfifo "$DIR/stdin"
exec 3<>"$DIR/stdin"

# expect STATUS WORD CMD...: run CMD; the exit status must be STATUS and the output must
# hold WORD and no "verification passed".
expect() {
	want=$1
	word=$2
	shift 2
	timeout 60 "$@" <&3 >"$OUT" 2>&1
	rc=$?
	if [ "$rc" -ne "$want" ] || ! grep -q -e "$word" "$OUT" ||
		{ [ "$want" -ne 0 ] && grep -q "verification passed" "$OUT"; }; then
		echo "FAIL: $* -> exit $rc (want $want, and '$word' in the output):"
		sed 's/^/    /' "$OUT" | head -8
		fail=1
	fi
}

for app in jacobi sor gauss matmul lu fft radix water mpi-jacobi; do
	bin=$APPS/locus-$app
	flag=-n
	[ "$app" = fft ] && flag=-m
	expect 0 "usage: mpiexec" "$bin" --help
	expect 0 "$flag" "$bin" -h
	for bad in abc 0 -5 99999999999999999999 1.5 12x ""; do
		expect 2 "$flag $bad" "$MPIEXEC" -n 2 "$bin" "$flag" "$bad"
	done
	# 2^31 - 2: past every range but radix's, whose keys (32 GB) then do not fit a
	# region of 16g.
	if [ "$app" = radix ]; then
		expect 2 "LOCUS_DSM_SIZE" env LOCUS_DSM_SIZE=16g "$MPIEXEC" -n 2 "$bin" -n 2147483646
	else
		expect 2 "$flag 2147483646" "$MPIEXEC" -n 2 "$bin" "$flag" 2147483646
	fi
	if [ "$app" != mpi-jacobi ]; then
		for bad in 0 -1 65 abc; do
			expect 2 "--threads $bad" "$MPIEXEC" -n 2 "$bin" --threads "$bad"
		done
		expect 2 "--prefetch 2" "$MPIEXEC" -n 2 "$bin" --prefetch 2
	fi
	expect 2 "unknown option '-bogus'" "$MPIEXEC" -n 2 "$bin" -bogus 3
	expect 2 "$flag needs a value" "$bin" "$flag"
	expect 2 "unknown option 'stray'" "$bin" stray
done
expect 2 "not a multiple of -b" "$MPIEXEC" -n 2 "$APPS/locus-lu" -n 100 -b 32
# A size the region cannot hold: said, with the fix, not a crash.
expect 2 "LOCUS_DSM_SIZE" "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 100000

# The runtime's environment.
for v in -1 0 abc 99999999999999999999 16t 1x; do
	expect 1 "LOCUS_DSM_SIZE=$v" env LOCUS_DSM_SIZE="$v" "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
for var in LOCUS_DSM_DELAY_US LOCUS_DSM_PEER_TIMEOUT_S LOCUS_DSM_DELTA_US LOCUS_DSM_LOCK_HANDOFF \
	LOCUS_DSM_POLL_US LOCUS_DSM_SPIN_US; do
	expect 1 "$var=-5" env "$var=-5" "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
	expect 1 "$var=99999999999" env "$var=99999999999" "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
for v in 0 1000001 -3 many; do
	expect 1 "LOCUS_DSM_LOCK_KEEP=$v" env LOCUS_DSM_LOCK_KEEP=$v "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
# Sizes that are not whole pages, regions near address 0 or off a page boundary
# or past the top of user space, and delays that make every node look dead.
for v in 100000 4097; do
	expect 1 "LOCUS_DSM_SIZE=$v: not a whole number of 4096-byte pages" env LOCUS_DSM_SIZE=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
for v in 0x1000 0 0x7e9000000001 0x7fffffff0000 0xffffffffffff0000; do
	expect 1 "LOCUS_DSM_ADDR=$v: the region" env LOCUS_DSM_ADDR=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
expect 1 "LOCUS_DSM_DELAY_US=100000000: a page would take 100.000 s" \
	env LOCUS_DSM_DELAY_US=100000000 "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
expect 1 "LOCUS_DSM_PEER_TIMEOUT_S=10 s" \
	env LOCUS_DSM_DELAY_US=5000000 "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
expect 1 "with LOCUS_DSM_DELAY_NS_PER_BYTE=2000000" env LOCUS_DSM_DELAY_NS_PER_BYTE=2000000 \
	"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
# ... the bound moves with the timeout, and a delay under it runs.
expect 1 "LOCUS_DSM_PEER_TIMEOUT_S=1 s" env LOCUS_DSM_DELAY_US=500000 LOCUS_DSM_PEER_TIMEOUT_S=1 \
	"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
expect 0 "verification passed" env LOCUS_DSM_DELAY_US=100000 LOCUS_DSM_PEER_TIMEOUT_S=1 \
	"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
# Named networks: each runs and verifies; an unknown name is refused with the names.
for n in none rdma tcp seed; do
	expect 0 "verification passed" env LOCUS_DSM_NETWORK=$n "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 32 -i 1
done
expect 1 "LOCUS_DSM_NETWORK=ib: expected none, rdma" env LOCUS_DSM_NETWORK=ib \
	"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
# ... the preset's delay counts against the peer timeout like an explicit one.
expect 1 "(from LOCUS_DSM_NETWORK=seed)" env LOCUS_DSM_NETWORK=seed LOCUS_DSM_DELAY_US=600000 \
	LOCUS_DSM_PEER_TIMEOUT_S=1 "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
# Polling while a fault waits (off by default) still verifies.
expect 0 "verification passed" env LOCUS_DSM_POLL_US=100 "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 64 -i 2
expect 1 "LOCUS_DSM_SWITCH=some" env LOCUS_DSM_SWITCH=some "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
# Answers left to the communication thread still verify; a bad value is named.
expect 0 "verification passed" env LOCUS_DSM_TAKE_ANSWERS=0 "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 64 -i 2
for v in 2 yes; do
	expect 1 "LOCUS_DSM_TAKE_ANSWERS=$v" env LOCUS_DSM_TAKE_ANSWERS=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
# Idle CPUs left to the kernel still verify; a bad value is named.
expect 0 "verification passed" env LOCUS_DSM_IDLE_POLL=0 LOCUS_DSM_STATS=1 "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 64 -i 2
grep -q "idle CPUs as the kernel chose" "$OUT" ||
	{ echo "FAIL: LOCUS_DSM_IDLE_POLL=0 did not leave idle CPUs to the kernel"; fail=1; }
expect 1 "LOCUS_DSM_IDLE_POLL=on" env LOCUS_DSM_IDLE_POLL=on "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
# Homes of locus_dsm_alloc: either deal verifies; a bad value is named; nodes set
# differently get no block, and node 0 names the setting.
for h in blocks spread; do
	expect 0 "verification passed" env LOCUS_DSM_HOMES=$h "$MPIEXEC" -n 3 "$APPS/locus-jacobi" -n 64 -i 2
done
expect 1 "LOCUS_DSM_HOMES=rows: expected blocks" env LOCUS_DSM_HOMES=rows \
	"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
expect 2 "the same LOCUS_DSM_HOMES" "$MPIEXEC" -n 1 env LOCUS_DSM_HOMES=spread "$APPS/locus-jacobi" -n 16 -i 1 : \
	-n 1 env LOCUS_DSM_HOMES=blocks "$APPS/locus-jacobi" -n 16 -i 1
# One node: the region is plain memory (not one fault), whatever the protocol, and
# the protocol named is the one asked for; LOCUS_DSM_ONE_NODE=protocol keeps the
# protocol's faults (and lrc's twins, for pages that are not private: every page
# is private to the one node, unless LOCUS_DSM_LRC_PRIVATE=0).
expect 1 "LOCUS_DSM_ONE_NODE=some" env LOCUS_DSM_ONE_NODE=some "$MPIEXEC" -n 1 "$APPS/locus-jacobi" -n 16 -i 1
for p in sc lrc avr; do
	expect 0 "protocol $p" env LOCUS_DSM_PROTOCOL=$p LOCUS_DSM_STATS=json "$MPIEXEC" -n 1 \
		"$APPS/locus-jacobi" -n 256 -i 4 --threads 2
	grep -q '"faults_read": 0, "faults_write": 0, "faults_upgrade": 0, "faults_local": 0' "$OUT" ||
		{ echo "FAIL: one node under $p faulted:"; grep faults "$OUT" | head -2; fail=1; }
done
expect 0 "protocol lrc" env LOCUS_DSM_PROTOCOL=lrc LOCUS_DSM_ONE_NODE=protocol LOCUS_DSM_STATS=json \
	LOCUS_DSM_LRC_PRIVATE=0 "$MPIEXEC" -n 1 "$APPS/locus-jacobi" -n 256 -i 4
grep -q '"faults_local": 0,' "$OUT" && { echo "FAIL: LOCUS_DSM_ONE_NODE=protocol did not fault"; fail=1; }
grep -q '"twins": 0,' "$OUT" && { echo "FAIL: LOCUS_DSM_LRC_PRIVATE=0 made no twins"; fail=1; }
expect 0 "protocol lrc" env LOCUS_DSM_PROTOCOL=lrc LOCUS_DSM_ONE_NODE=protocol LOCUS_DSM_STATS=json \
	"$MPIEXEC" -n 1 "$APPS/locus-jacobi" -n 256 -i 4 --first-touch 1
grep -q '"twins": 0,' "$OUT" || { echo "FAIL: one node's private pages were twinned"; fail=1; }
grep -q '"faults_read": 0, "faults_write": 0, "faults_upgrade": 0, "faults_local": 0' "$OUT" ||
	{ echo "FAIL: one node's private pages faulted after their first touch"; fail=1; }
for v in 2 -1 yes; do
	expect 1 "LOCUS_DSM_LRC_PRIVATE=$v" env LOCUS_DSM_PROTOCOL=lrc LOCUS_DSM_LRC_PRIVATE=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
for v in 2 -1 yes 01; do
	expect 1 "LOCUS_DSM_LRC_PUSH=$v" env LOCUS_DSM_PROTOCOL=lrc LOCUS_DSM_LRC_PUSH=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
	expect 1 "LOCUS_DSM_LRC_MOVE=$v" env LOCUS_DSM_PROTOCOL=lrc LOCUS_DSM_LRC_MOVE=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
	expect 1 "LOCUS_DSM_LRC_BLOCKS=$v" env LOCUS_DSM_PROTOCOL=lrc LOCUS_DSM_LRC_BLOCKS=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
# Unset, private pages are off where messages are slow (the seed's network): each
# node then twins the rows it writes, as with LOCUS_DSM_LRC_PRIVATE=0, and more
# than with LOCUS_DSM_LRC_PRIVATE=1.
twins() { grep -o '"twins": [0-9]*' "$OUT" | head -1 | cut -d' ' -f2; }
for pv in "" 0 1; do
	expect 0 "verification passed" env LOCUS_DSM_NETWORK=seed LOCUS_DSM_PROTOCOL=lrc \
		LOCUS_DSM_LRC_PRIVATE=$pv LOCUS_DSM_STATS=json \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 128 -i 2 --first-touch 1
	eval "twins_$pv=\$(twins)"
done
[ "$twins_" = "$twins_0" ] && [ "${twins_:-0}" -gt "${twins_1:-0}" ] ||
	{ echo "FAIL: at the seed's delay, twins unset $twins_, off $twins_0, on $twins_1"; fail=1; }
for v in 0 1025 -5 99999999999; do
	expect 1 "LOCUS_DSM_RUN=$v" env LOCUS_DSM_RUN=$v "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
for v in -5 12q 99999999999g; do
	expect 1 "LOCUS_DSM_GC_BYTES=$v" env LOCUS_DSM_GC_BYTES=$v "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
expect 0 "protocol lrc" env LOCUS_DSM_PROTOCOL=lrc LOCUS_DSM_RUN=1 LOCUS_DSM_GC_BYTES=4k \
	"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 3
for v in 0 -1 x 1000001; do
	expect 1 "LOCUS_DSM_AVR_DEADLOCK=$v" env LOCUS_DSM_PROTOCOL=avr LOCUS_DSM_AVR_DEADLOCK=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
for v in 0 9 -1 y; do
	expect 1 "LOCUS_DSM_AVR_PENDING=$v" env LOCUS_DSM_PROTOCOL=avr LOCUS_DSM_AVR_PENDING=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
for v in 2 -1 yes; do
	expect 1 "LOCUS_DSM_AVR_ASK=$v" env LOCUS_DSM_PROTOCOL=avr LOCUS_DSM_AVR_ASK=$v \
		"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
done
expect 1 "LOCUS_DSM_AVR_DEADLOK: unknown variable" env LOCUS_DSM_PROTOCOL=avr \
	LOCUS_DSM_AVR_DEADLOK=5 "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
expect 0 "protocol avr" env LOCUS_DSM_PROTOCOL=avr LOCUS_DSM_AVR_DEADLOCK=5 LOCUS_DSM_AVR_PENDING=1 \
	LOCUS_DSM_AVR_ASK=0 \
	"$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 3
expect 1 "LOCUS_DSM_PROTOCOL" env LOCUS_DSM_PROTOCOL=nosuch "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
expect 1 "LOCUS_DSM_SIZE differs between nodes" "$MPIEXEC" -n 1 -env LOCUS_DSM_SIZE 64m \
	"$APPS/locus-jacobi" -n 16 -i 1 : -n 1 -env LOCUS_DSM_SIZE 128m "$APPS/locus-jacobi" -n 16 -i 1
# ... and the same values on every node still run.
expect 0 "verification passed" env LOCUS_DSM_SIZE=64m "$MPIEXEC" -n 2 "$APPS/locus-jacobi" -n 16 -i 1
expect 0 "2 nodes x 3 threads" "$MPIEXEC" -n 2 "$APPS/locus-water" -n 64 -s 1 --threads 3
exit $fail
