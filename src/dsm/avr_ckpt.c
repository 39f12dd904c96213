/*
 * avr, the application thread's half (seed 004 §2.3.3–2.3.7): checkpoint at
 * a fault, keep running on the page as it is while the request is in flight,
 * log every access to it, then prove the run valid against the page that
 * came — or roll the thread back to the fault. proto_avr.c is the
 * communication thread's half; avr.h says what they share.
 *
 * Everything here runs in the init thread: in its SIGSEGV and SIGTRAP
 * handlers, on an alternate signal stack (restoring the application's stack
 * must not overwrite the handler's own frames), or in a locus-dsm call.
 *
 * An interval:
 *   open     a fault the protocol cannot resolve here: save the registers
 *            (with the FP/SSE/AVX state the kernel saved in the signal
 *            frame) and the stack from the interrupted stack pointer (less
 *            the red zone) to the stack's top; ask; twin P.
 *   run      every fault on an awaited page (P, and the pages added below)
 *            grants the access for one instruction (the trap flag) and logs
 *            the bytes it may touch; the SIGTRAP after it takes the access
 *            away again. A first write to another page twins it. A fault on
 *            another page that sc cannot resolve here adds it to the
 *            awaited pages — its twin, log and reply slot — while fewer
 *            than LOCUS_DSM_AVR_PENDING are (beyond the seed, its §4.2).
 *            The run ends at:
 *              - a fault on another page that cannot be added;
 *              - a fault on an awaited page once its reply is in (the seed
 *                waits for another request to end the run; a thread
 *                spinning on P would then never see the value it waits for);
 *              - the deadlock counter: LOCUS_DSM_AVR_DEADLOCK faults on
 *                awaited pages while a request held here may be what another
 *                node's interval waits for — rolled back at once if a reply
 *                is not in;
 *              - an access whose size cannot be bounded (a string
 *                instruction, an x87/XSAVE state save);
 *              - a write to P when P's request asks for a read-only copy;
 *              - any locus-dsm call, and locus_dsm_avr_pause;
 *              - AVR_NUDGE_SIGNAL from the communication thread (the reply
 *                is in and a request waits for the interval): the run
 *                stands or is rolled back there — rolled back only when the
 *                thread is in the program's own code, not in a library
 *                that may hold a lock (else the next nudge tries again).
 *   resolve  wait for every reply — unless a request held here may be what
 *            another node's interval waits for (two nodes can each hold a
 *            page the other's reply needs: the seed's deadlock counter
 *            covers only the run, not this wait), then roll back at once;
 *            any logged byte whose value in its page's reply differs from
 *            that page's twin, or a readable page lost meanwhile
 *            (proto_avr.c), means the run read something another node has
 *            since changed: roll back. Otherwise each awaited page becomes
 *            its reply with this node's changes (the bytes that differ from
 *            the twin) on top, and the run stands.
 *   rollback every twin back over its page, each awaited page as it came (or
 *            as it was), the
 *            stack copied back and the saved registers resumed: the thread
 *            runs the faulting access again, as if the interval never
 *            happened.
 *
 * Access sizes: a fault gives the first byte an access touches, not its
 * length. The instruction is not decoded beyond its prefixes: a legacy or
 * SSE instruction touches at most 16 bytes, a VEX or EVEX one at most 64, so
 * the log marks [address, address + 16 or 64) — never too few bytes, so a
 * read that differs is always caught, at the price of a rollback when
 * another node wrote within those bytes. Writes are marked too and also
 * compared (an instruction that writes may have read the old value first;
 * seed §2.3.4), and P's merge keeps exactly the bytes that differ from the
 * twin, so a write window wider than the write loses nothing.
 *
 * What is not rolled back: memory outside the shared region and the stack
 * (heap and globals), and anything outside the process. A program keeps
 * what it computes between faults in shared memory or local variables, and
 * wraps I/O in locus_dsm_avr_pause/resume (docs/dsm.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "avr.h"
#include "common/futex.h"
#include "internal.h"

#if LOCUS_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define TRAP_FLAG    0x100ull
#define ALTSTACK     (256u << 10)
#define TWIN_PAGES   4096u /* twins one interval may keep */
#define FP_MAX	     8192u
#define STACK_MAX    (64ull << 20)
#define FP_XSTATE_M1 0x46505853u

enum { WHY_FAULT, WHY_REPLY, WHY_DEADLOCK, WHY_SYNC, WHY_UNSIZED, WHY_FULL, WHY_NUDGE };

static struct {
	int ready;
	uintptr_t stack_lo, stack_hi; /* the init thread's stack */
	void *altstack;
	struct sigaction old_trap, old_nudge;
	uintptr_t text_lo, text_hi; /* the program's own code */
	volatile int busy;	    /* in a handler or a resolution: no nudge */
	/* the open interval */
	int open, stepping, rollback_pending;
	struct {
		int upgrade;	 /* owned here: read-write, no log */
		int write_ok;	 /* its request asks for ownership */
	} slot[AVR_MAX_PENDING]; /* by slot of avr.page[], avr.npages in use */
	unsigned step_slot;	 /* the one the trap flag steps */
	unsigned narrow;	 /* await one page only: the last interval gave way */
	uint32_t faults;	 /* on awaited pages, for the deadlock counter */
	uint64_t op_from;	 /* when the run (user work) began */
	/* the checkpoint */
	gregset_t gregs;
	sigset_t mask;
	size_t fp_len;
	uintptr_t sp_lo;
	size_t stack_len, stack_cap;
	char *stack_buf;
	_Alignas(64) char fp[FP_MAX]; /* 64: an XSAVE area's alignment, as in the signal frame */
	/* twins: each awaited page's, then the pages written in the interval */
	char *ptwin; /* slot i's at i * page size */
	char *twins;
	size_t twin_of[TWIN_PAGES], ntwins;
	uint64_t *rbits, *wbits; /* bytes the run may have read / written, slot i's
				    at i * page size / 64 words */
} ck;

static __thread int ck_thread; /* this thread may speculate (the init thread) */

/* The application's stack holds ASan's redzones: read and write it without
   the checks (what it holds is just bytes here). */
__attribute__((no_sanitize_address, noinline)) static void raw_copy(void *dst, const void *src,
								    size_t n)
{
	volatile char *d = dst;
	const volatile char *s = src;
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

/* How many bytes, from the fault address, the instruction at ip may touch;
   0 when it cannot be bounded. */
static unsigned access_window(const uint8_t *ip)
{
	for (int i = 0; i < 14; i++) {
		uint8_t b = ip[i];
		switch (b) {
		case 0x26:
		case 0x2e:
		case 0x36:
		case 0x3e:
		case 0x64:
		case 0x65:
		case 0x66:
		case 0x67:
		case 0xf0:
		case 0xf2:
		case 0xf3:
			continue;
		}
		if ((b & 0xf0) == 0x40)
			continue; /* REX */
		if (b == 0xc4 || b == 0xc5 || b == 0x62)
			return 64; /* VEX, EVEX: up to a 512-bit vector */
		if ((b >= 0xa4 && b <= 0xa7) || (b >= 0xaa && b <= 0xaf))
			return 0; /* string instructions */
		if (b == 0x0f && (ip[i + 1] == 0xae || ip[i + 1] == 0xc7))
			return 0; /* fxsave/xsave family, cmpxchg16b and kin */
		if ((b == 0xd9 || b == 0xdd) &&
		    (((ip[i + 1] >> 3) & 7) == 4 || ((ip[i + 1] >> 3) & 7) == 6))
			return 0; /* x87 environment and state */
		return 16;
	}
	return 0;
}

static void set_bits(uint64_t *bits, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		bits[i / 64] |= 1ull << (i % 64);
}

static int post(size_t page, uint32_t flags)
{
	struct dsm_req r = {.kind = DSM_REQ_FAULT, .a = page, .b = flags};
	dsm_call(&r);
	return (int)r.result;
}

static size_t fp_size(const void *fp)
{
	uint32_t magic, ext;
	memcpy(&magic, (const char *)fp + 464, 4);
	memcpy(&ext, (const char *)fp + 468, 4);
	if (magic == FP_XSTATE_M1 && ext >= 512 && ext <= FP_MAX)
		return ext;
	return 512;
}

/* Make uc the checkpoint: the thread resumes at the faulting access. */
static void restore_into(ucontext_t *uc)
{
#if LOCUS_ASAN
	__asan_unpoison_memory_region((void *)ck.stack_lo, ck.stack_hi - ck.stack_lo);
#endif
	raw_copy((void *)ck.sp_lo, ck.stack_buf, ck.stack_len);
	memcpy(uc->uc_mcontext.gregs, ck.gregs, sizeof(ck.gregs));
	if (uc->uc_mcontext.fpregs && ck.fp_len) {
		size_t n = fp_size(uc->uc_mcontext.fpregs);
		memcpy(uc->uc_mcontext.fpregs, ck.fp, n < ck.fp_len ? n : ck.fp_len);
	}
	uc->uc_sigmask = ck.mask;
}

static size_t bit_words(void)
{
	return dsm.page_size / 64;
}

static unsigned nslots(void)
{
	return ld_acquire(&avr.npages);
}

/* Slot i's page in the application's view. */
static char *view(unsigned i)
{
	return dsm.app + avr.page[i] * dsm.page_size;
}

/* Did the run read (or write over) a byte of slot's page that its reply changed? */
static int read_conflict(unsigned slot)
{
	const unsigned char *tw = (const unsigned char *)ck.ptwin + slot * dsm.page_size;
	const unsigned char *ar = (const unsigned char *)avr.arrived + slot * dsm.page_size;
	const uint64_t *rb = ck.rbits + slot * bit_words(), *wb = ck.wbits + slot * bit_words();
	for (size_t w = 0; w < bit_words(); w++) {
		uint64_t m = rb[w] | wb[w];
		while (m) {
			size_t i = w * 64 + (size_t)__builtin_ctzll(m);
			m &= m - 1;
			if (tw[i] != ar[i])
				return 1;
		}
	}
	return 0;
}

/* slot's page := its reply, with this node's changes since the twin on top. */
static void merge(unsigned slot)
{
	uint64_t *cur = (uint64_t *)dsm_page_alias(avr.page[slot]);
	const uint64_t *tw = (const uint64_t *)(ck.ptwin + slot * dsm.page_size);
	const uint64_t *ar = (const uint64_t *)(avr.arrived + slot * dsm.page_size);
	for (size_t i = 0; i < dsm.page_size / 8; i++) {
		uint64_t c = cur[i], t = tw[i], a = ar[i];
		if (c == t) {
			cur[i] = a;
		} else if (a != t) {
			unsigned char *cb = (unsigned char *)&cur[i];
			const unsigned char *tb = (const unsigned char *)&tw[i];
			const unsigned char *ab = (const unsigned char *)&ar[i];
			for (int k = 0; k < 8; k++)
				if (cb[k] == tb[k])
					cb[k] = ab[k];
		}
	}
}

/*
 * Phase 3: end the open interval. uc is the interrupted context when called
 * from a signal handler, NULL from a locus-dsm call. Returns 0 when the run
 * stands; after a rollback it does not return to a NULL caller (the thread
 * resumes at the checkpoint), and returns 1 to a handler, whose uc is then
 * the checkpoint.
 */
static int resolve(ucontext_t *uc, int why)
{
	uint64_t t0 = mono_ns();
	if (ck.stepping) {
		ck.stepping = 0;
		if (uc)
			uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TRAP_FLAG;
	}
	int roll = 0; /* 1 + LOCUS_DSM_AVR_ROLL_* */
	if (!avr_all_in()) {
		/* Waiting while another node waits for a page held here could be
		   waiting for each other: give way (the communication thread
		   wakes this wait when it starts holding such a request). */
		if (why == WHY_DEADLOCK || ld_acquire(&avr.held)) {
			roll = 1 + LOCUS_DSM_AVR_ROLL_DEADLOCK;
		} else {
			struct dsm_stall st;
			dsm_stall_begin(&st, STALL_FAULT);
			for (uint32_t n;
			     (n = ld_acquire(&avr.reply)) < nslots() && !ld_acquire(&avr.held);)
				futex_wait(&avr.reply, n);
			uint64_t t1 = mono_ns();
			dsm_stall_end(&st, t1, DSM_LOCAL);
			PROTO_STAT_ADD(AVR_ST_WAIT_NS, t1 - t0);
			t0 = t1;
			if (!avr_all_in())
				roll = 1 + LOCUS_DSM_AVR_ROLL_DEADLOCK;
		}
	}
	if (!roll && ld_acquire(&avr.conflict))
		roll = 1 + LOCUS_DSM_AVR_ROLL_TAKEN;
	for (unsigned i = 0; !roll && i < nslots(); i++)
		if (!ck.slot[i].upgrade && read_conflict(i))
			roll = 1 + LOCUS_DSM_AVR_ROLL_READ;
	if (roll && why == WHY_NUDGE) {
		uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
		if (ip < ck.text_lo || ip >= ck.text_hi)
			return -1; /* maybe inside a library: not here */
	}
	PROTO_STAT_ADD(AVR_ST_OP_NS, t0 - ck.op_from);
	if (!roll) {
		for (unsigned i = 0; i < nslots(); i++)
			if (!ck.slot[i].upgrade)
				merge(i);
		post(avr.page[0], AVR_END);
		ck.open = 0;
		ck.narrow = 0;
		PROTO_STAT_ADD(AVR_ST_COMMITS, 1);
		PROTO_STAT_ADD(AVR_ST_RES_NS, mono_ns() - t0);
		return 0;
	}
	for (size_t i = 0; i < ck.ntwins; i++)
		memcpy(dsm_page_alias(ck.twin_of[i]), ck.twins + i * dsm.page_size, dsm.page_size);
	for (unsigned i = 0; i < nslots(); i++)
		memcpy(dsm_page_alias(avr.page[i]), ck.ptwin + i * dsm.page_size, dsm.page_size);
	post(avr.page[0], AVR_END | AVR_ROLLBACK);
	ck.open = 0;
	PROTO_STAT_ADD(AVR_ST_ROLL_READ + roll - 1, 1);
	/* Gave way to another node: run the access again awaiting one page,
	   as the seed does, until an interval stands. Several nodes each
	   awaiting pages the others hold would otherwise give way to each other
	   again and again (on 4 nodes, 9 in 10 of radix's intervals awaiting up
	   to 4 pages were rolled back so). */
	if (roll - 1 == LOCUS_DSM_AVR_ROLL_DEADLOCK)
		ck.narrow = 1;
	PROTO_STAT_ADD(AVR_ST_ROL_NS, mono_ns() - t0);
	if (uc) {
		restore_into(uc);
		return 1;
	}
	ck.rollback_pending = 1;
	ck.busy = 0;	/* the interval is closed: a nudge now does nothing */
	raise(SIGTRAP); /* the handler resumes the checkpoint: no return here */
	dsm_fatal("avr: a rollback returned to the call that asked for it");
}

/* Log one access to slot i's page and let it run for one instruction. Its
   reply in ends the run: a thread spinning on the page would otherwise
   never see the value it waits for. */
static int log_access(unsigned i, char *addr, int write, ucontext_t *uc)
{
	if (avr_all_in() || ((ld_acquire(&avr.done) >> i) & 1))
		return resolve(uc, WHY_REPLY), 1;
	if (write && !ck.slot[i].write_ok)
		return resolve(uc, WHY_FAULT), 1;
	if (++ck.faults >= avr_set.deadlock && ld_acquire(&avr.held))
		return resolve(uc, WHY_DEADLOCK), 1;
	unsigned w = access_window((const uint8_t *)uc->uc_mcontext.gregs[REG_RIP]);
	if (!w)
		return resolve(uc, WHY_UNSIZED), 1;
	size_t off = (size_t)(addr - view(i));
	size_t end = off + w < dsm.page_size ? off + w : dsm.page_size;
	set_bits((write ? ck.wbits : ck.rbits) + i * bit_words(), off, end);
	PROTO_STAT_ADD(AVR_ST_LOGGED, 1);
	mprotect(view(i), dsm.page_size, write ? PROT_READ | PROT_WRITE : PROT_READ);
	uc->uc_mcontext.gregs[REG_EFL] |= (greg_t)TRAP_FLAG;
	ck.stepping = 1;
	ck.step_slot = i;
	return 1;
}

/* The interval's first access to a tracked page: a read marks it read and
   lets it be read; a write to a page this node may write twins it. Returns
   1 when done, 0 when the page is not (or no longer) tracked for this
   access, -1 when there is no room for another twin. */
static int track(size_t page, int write)
{
	int done = 0;
	avr_lock();
	uint8_t s = avr.state[page];
	if (write && (s & AVR_PROT)) {
		if (ck.ntwins == TWIN_PAGES) {
			done = -1;
		} else {
			memcpy(ck.twins + ck.ntwins * dsm.page_size, dsm_page_alias(page),
			       dsm.page_size);
			ck.twin_of[ck.ntwins++] = page;
			avr.state[page] = (uint8_t)((s & ~AVR_PROT) | AVR_TWIN | AVR_SEEN);
			dsm_region_protect(page, 1, PROT_READ | PROT_WRITE);
			PROTO_STAT_ADD(AVR_ST_TWINS, 1);
			done = 1;
		}
	} else if (!write && (s & (AVR_PROT | AVR_RO))) {
		avr.state[page] = (uint8_t)(s | AVR_SEEN);
		dsm_region_protect(page, 1, PROT_READ);
		done = 1;
	}
	avr_unlock();
	return done;
}

static int is_opened(int res)
{
	return res == AVR_OPENED || res == AVR_OPENED_WRITE || res == AVR_OPENED_UPGRADE;
}

/* The communication thread has awaited a page in the last slot (res says
   how): an empty log, and its twin, the page as the run begins on it. */
static unsigned await_slot(int res)
{
	unsigned i = nslots() - 1;
	ck.slot[i].upgrade = res == AVR_OPENED_UPGRADE;
	ck.slot[i].write_ok = res != AVR_OPENED;
	memset(ck.rbits + i * bit_words(), 0, dsm.page_size / 8);
	memset(ck.wbits + i * bit_words(), 0, dsm.page_size / 8);
	memcpy(ck.ptwin + i * dsm.page_size, dsm_page_alias(avr.page[i]), dsm.page_size);
	return i;
}

static int ensure_stack_buf(size_t len)
{
	if (len <= ck.stack_cap)
		return 0;
	size_t cap = ck.stack_cap ? ck.stack_cap : 1u << 20;
	while (cap < len)
		cap *= 2;
	void *b = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return -1;
	if (ck.stack_buf)
		munmap(ck.stack_buf, ck.stack_cap);
	ck.stack_buf = b;
	ck.stack_cap = cap;
	return 0;
}

/* Phase 1: checkpoint, ask, and run on. Returns 1 when the fault is dealt
   with, 0 when the caller resolves it as sc. */
static int open_interval(size_t page, char *addr, int write, ucontext_t *uc)
{
	uint64_t t0 = mono_ns();
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t lo = (sp - 128) & ~(uintptr_t)7; /* the red zone is live */
	if (lo < ck.stack_lo || sp >= ck.stack_hi || ck.stack_hi - lo > STACK_MAX ||
	    ensure_stack_buf(ck.stack_hi - lo) != 0) {
		PROTO_STAT_ADD(AVR_ST_SC_OTHER, 1);
		return 0;
	}
	ck.sp_lo = lo;
	ck.stack_len = ck.stack_hi - lo;
	raw_copy(ck.stack_buf, (void *)lo, ck.stack_len);
	memcpy(ck.gregs, uc->uc_mcontext.gregs, sizeof(ck.gregs));
	ck.gregs[REG_EFL] &= ~(greg_t)TRAP_FLAG;
	ck.fp_len = 0;
	if (uc->uc_mcontext.fpregs) {
		ck.fp_len = fp_size(uc->uc_mcontext.fpregs);
		memcpy(ck.fp, uc->uc_mcontext.fpregs, ck.fp_len);
	}
	ck.mask = uc->uc_sigmask;

	struct dsm_stall st;
	dsm_stall_begin(&st, STALL_FAULT);
	int res = post(page, (write ? AVR_WRITE : 0) | AVR_OPEN);
	uint64_t t1 = mono_ns();
	if (!is_opened(res)) { /* sc resolved it */
		t1 = dsm_stall_end(&st, t1, res);
		st_release(&dsm.resume_ns[page], t1);
		return 1;
	}
	dsm_stall_end(&st, t1, DSM_LOCAL);
	ck.open = 1;
	ck.faults = 0;
	ck.ntwins = 0;
	unsigned i = await_slot(res);
	PROTO_STAT_ADD(AVR_ST_CKPT_READ + (ck.slot[i].upgrade ? LOCUS_DSM_AVR_CKPT_UPGRADE
					   : write	      ? LOCUS_DSM_AVR_CKPT_WRITE
							      : LOCUS_DSM_AVR_CKPT_READ),
		       1);
	ck.op_from = mono_ns();
	PROTO_STAT_ADD(AVR_ST_CP_NS, ck.op_from - t0);
	if (ck.slot[i].upgrade)
		return 1;
	return log_access(i, addr, write, uc);
}

static int avr_fault(size_t page, char *addr, int write, ucontext_t *uc);

int dsm_avr_fault(size_t page, char *addr, int write, void *uctx)
{
	if (!ck.ready)
		return 0;
	ck.busy = 1;
	int r = avr_fault(page, addr, write, uctx);
	ck.busy = 0;
	return r;
}

static int avr_fault(size_t page, char *addr, int write, ucontext_t *uc)
{
	/* Only the init thread speculates, and only while no other thread of
	   its node touches the region: never in a fork-style run (spawn.c). */
	if (!ck_thread || dsm_self.team > 1 || dsm_fork_mode) {
		PROTO_STAT_ADD(AVR_ST_SC_THREADS, 1);
		return 0;
	}
	if (ck.open) {
		int i = avr_slot_of(page);
		if (i >= 0 && !ck.slot[i].upgrade)
			return log_access((unsigned)i, addr, write, uc);
		if (ld_relaxed(&avr.state[page]) & (AVR_PROT | AVR_RO)) {
			int t = track(page, write);
			if (t > 0)
				return 1;
			if (t < 0)
				return resolve(uc, WHY_FULL), 1;
		}
		uint32_t flags = (write ? AVR_WRITE : 0) | AVR_LOCAL;
		if (i < 0 && !ck.narrow && nslots() < avr_set.pending)
			flags |= AVR_ADD;
		int res = post(page, flags);
		if (is_opened(res)) { /* awaited too: the run goes on */
			i = (int)await_slot(res);
			return ck.slot[i].upgrade ? 1 : log_access((unsigned)i, addr, write, uc);
		}
		if (res != AVR_REMOTE)
			return 1; /* resolved here; the interval goes on */
		if (resolve(uc, WHY_FAULT))
			return 1;
	}
	if (dsm_self.locks > 0) {
		PROTO_STAT_ADD(AVR_ST_SC_LOCK, 1);
		return 0;
	}
	if (dsm_self.avr_paused > 0) {
		PROTO_STAT_ADD(AVR_ST_SC_PAUSED, 1);
		return 0;
	}
	return open_interval(page, addr, write, uc);
}

/* A fault outside the region while a run is unvalidated may come from a
   value the run should not have read (a pointer from a page that changed
   elsewhere): resolve first. A rollback runs the thread again from the
   checkpoint; a run that stands makes the fault the program's own. */
int dsm_avr_stray(void *uctx)
{
	if (!ck_thread || !ck.open || ck.busy)
		return 0;
	ck.busy = 1;
	int r = resolve(uctx, WHY_FAULT);
	ck.busy = 0;
	return r == 1;
}

void dsm_avr_sync(void)
{
	if (!ck_thread)
		return;
	/* Busy before ck.open is read: a nudge that came between the read and
	   the resolution would resolve the interval itself, and this resolution
	   would then close it a second time. */
	ck.busy = 1;
	fence_signal();
	if (ck.open)
		resolve(NULL, WHY_SYNC);
	ck.busy = 0;
}

static void on_nudge(int sig, siginfo_t *si, void *uctx)
{
	(void)sig;
	(void)si;
	if (!ck_thread || !ck.open || ck.busy || ck.stepping || !avr_all_in())
		return;
	int saved_errno = errno;
	ck.busy = 1;
	resolve(uctx, WHY_NUDGE);
	ck.busy = 0;
	errno = saved_errno;
}

/* The main program's executable segment (the first object listed). */
static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			ck.text_lo = info->dlpi_addr + ph->p_vaddr;
			ck.text_hi = ck.text_lo + ph->p_memsz;
			break;
		}
	}
	return 1;
}

static void on_trap(int sig, siginfo_t *si, void *uctx)
{
	ucontext_t *uc = uctx;
	int saved_errno = errno;
	if (ck_thread && ck.rollback_pending) {
		ck.rollback_pending = 0;
		restore_into(uc);
	} else if (ck_thread && ck.stepping) {
		ck.stepping = 0;
		uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TRAP_FLAG;
		if (ck.open && !ck.slot[ck.step_slot].upgrade)
			mprotect(view(ck.step_slot), dsm.page_size, PROT_NONE);
	} else {
		/* Not ours: what was there before handles it (or the default
		   action ends the process, as it would have). */
		sigaction(SIGTRAP, &ck.old_trap, NULL);
		if (si->si_code <= 0)
			raise(sig);
	}
	errno = saved_errno;
}

int dsm_avr_init(void)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return -1;
	int rc = pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	if (rc != 0)
		return -1;
	ck.stack_lo = (uintptr_t)addr;
	ck.stack_hi = (uintptr_t)addr + size;
	size_t ps = dsm.page_size;
	ck.altstack =
		mmap(NULL, ALTSTACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t k = avr_set.pending;
	ck.ptwin = mmap(NULL, k * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck.twins = mmap(NULL, (size_t)TWIN_PAGES * ps, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ck.rbits = calloc(k * (ps / 64), sizeof(uint64_t));
	ck.wbits = calloc(k * (ps / 64), sizeof(uint64_t));
	if (ck.altstack == MAP_FAILED || ck.ptwin == MAP_FAILED || ck.twins == MAP_FAILED ||
	    !ck.rbits || !ck.wbits || ensure_stack_buf(1) != 0)
		return -1;
	stack_t ss = {.ss_sp = ck.altstack, .ss_size = ALTSTACK};
	if (sigaltstack(&ss, NULL) != 0)
		return -1;
	dl_iterate_phdr(find_text, NULL);
	avr.thread = pthread_self();
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, AVR_NUDGE_SIGNAL);
	if (sigaction(SIGTRAP, &sa, &ck.old_trap) != 0)
		return -1;
	sa.sa_sigaction = on_nudge;
	if (sigaction(AVR_NUDGE_SIGNAL, &sa, &ck.old_nudge) != 0)
		return -1;
	ck_thread = 1;
	ck.ready = 1;
	return 0;
}

void dsm_avr_fini(void)
{
	if (!ck.ready)
		return;
	ck.ready = 0;
	ck_thread = 0;
	sigaction(SIGTRAP, &ck.old_trap, NULL);
	sigaction(AVR_NUDGE_SIGNAL, &ck.old_nudge, NULL);
	stack_t ss = {.ss_flags = SS_DISABLE};
	sigaltstack(&ss, NULL);
	/* A later locus_dsm_init starts from nothing. */
	munmap(ck.altstack, ALTSTACK);
	munmap(ck.ptwin, (size_t)avr_set.pending * dsm.page_size);
	munmap(ck.twins, (size_t)TWIN_PAGES * dsm.page_size);
	munmap(ck.stack_buf, ck.stack_cap);
	free(ck.rbits);
	free(ck.wbits);
	memset(&ck, 0, sizeof(ck));
}

void locus_dsm_avr_pause(void)
{
	dsm_avr_sync();
	dsm_self.avr_paused++;
}

void locus_dsm_avr_resume(void)
{
	if (dsm_self.avr_paused > 0)
		dsm_self.avr_paused--;
}
