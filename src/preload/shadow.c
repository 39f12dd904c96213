/*
 * Shadows: the state we keep for a mutex, outside its 40 bytes.
 *
 * Where the pointer lives. glibc's pthread_mutex_t on x86-64 is
 * { __lock, __count, __owner, __nusers, __kind, __spins, __elision, __list };
 * __list (two pointers, bytes 24..39) is used only by robust mutexes, which
 * we never shadow. So the shadow pointer goes in __list.__prev, and every
 * other byte keeps glibc's meaning: __kind still says what type the mutex
 * is, for static initializers (PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP) as
 * much as for pthread_mutex_init; and a mutex that runs on glibc's
 * functions (a recursive one, or every one in profile-only mode) is a
 * genuine glibc mutex with a pointer in a field glibc ignores.
 *
 * Why not a table keyed by the mutex's address: programs free memory that
 * holds a mutex without pthread_mutex_destroy and reuse it, copy structures
 * that contain one, and realloc arrays of them; a table would hand the old
 * mutex's state to the new one. In place, the pointer travels with the
 * bytes, and a copied or stale pointer is caught because it must satisfy
 * three things before it is trusted: it points into our arena (so reading
 * through it is safe whatever the bytes held), at a shadow whose back
 * pointer is this very mutex (a copy at another address fails), of the
 * label this mutex's type calls for. Anything else is a mutex seen for the
 * first time: all-zero bytes (PTHREAD_MUTEX_INITIALIZER, calloc), glibc's
 * init, or a copy. It gets a new shadow, installed with a compare-and-swap so
 * that two first lockers agree on one.
 *
 * Shadows come from one reserved mapping (never malloc: the first lock of a
 * mutex may run before malloc is safe to call) and are recycled when their
 * mutex is destroyed or re-initialized. A mutex in memory freed without
 * destroy keeps its shadow until the same address is initialized again;
 * that memory is lost (a few hundred bytes per such mutex).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "preload.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#define ARENA_SHADOWS (1ull << 22) /* 4M mutexes: 1 GiB of address space, touched as used */

_Static_assert(sizeof(struct lp_shadow) == 256, "a shadow is four cache lines");
_Static_assert(__builtin_offsetof(pthread_mutex_t, __data.__list.__prev) == 24,
	       "glibc x86-64 mutex layout");

struct lp_shadow lp_shadow_real;
uint64_t lp_recycled_used, lp_recycled_acquisitions;

static struct lp_shadow *arena;
static uint64_t arena_next; /* shadows handed out so far */
static uint64_t next_id;
static struct lp_shadow *free_list;
static int free_lock;

static struct __pthread_internal_list **slot(pthread_mutex_t *m)
{
	return &m->__data.__list.__prev;
}

int lp_shadow_setup(void)
{
	void *p = mmap(NULL, ARENA_SHADOWS * sizeof(struct lp_shadow), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	arena = p;
	return 0;
}

/* The free list is touched only when a mutex is first locked or destroyed. */
static void free_list_lock(void)
{
	while (xchg_acquire(&free_lock, 1))
		sched_yield();
}

static void free_list_unlock(void)
{
	st_release(&free_lock, 0);
}

static struct lp_shadow *shadow_alloc(void)
{
	free_list_lock();
	struct lp_shadow *sh = free_list;
	if (sh)
		free_list = sh->next_free;
	free_list_unlock();
	if (sh)
		return sh;
	uint64_t i = faa_relaxed(&arena_next, 1);
	if (i >= ARENA_SHADOWS) {
		st_relaxed(&arena_next, ARENA_SHADOWS);
		return NULL;
	}
#if defined(__SANITIZE_ADDRESS__)
	/* Queue nodes are malloc'd and referenced from shadows: let the leak
	   checker see the arena, a chunk at a time as it is used. */
	if (i % 4096 == 0)
		__lsan_register_root_region(&arena[i], 4096 * sizeof(*arena));
#endif
	return &arena[i];
}

/* Back to the free list; the mutex must no longer point here. */
static void shadow_free(struct lp_shadow *sh)
{
	if (sh->label == LP_LOCUS && ld_relaxed(&sh->owner) == 0)
		lock_destroy(&sh->lock);
	st_relaxed(&sh->mutex, NULL);
	st_release(&sh->state, SH_FREE);
	free_list_lock();
	sh->next_free = free_list;
	free_list = sh;
	free_list_unlock();
}

/*
 * The mutex is gone (destroyed, re-initialized, or its bytes now say another
 * type). A profiled shadow that saw contention stays for the report; one
 * that was only used is added to the totals and recycled.
 */
static void shadow_retire(struct lp_shadow *sh)
{
	if (lp_cfg.profiling && ld_relaxed(&sh->st.contended) > 0) {
		st_relaxed(&sh->mutex, NULL);
		st_release(&sh->state, SH_DEAD);
		return;
	}
	if (lp_cfg.profiling && ld_relaxed(&sh->st.acquisitions) > 0) {
		faa_relaxed(&lp_recycled_used, 1);
		faa_relaxed(&lp_recycled_acquisitions, ld_relaxed(&sh->st.acquisitions));
	}
	shadow_free(sh);
}

/* A shadow pointer read from a mutex's bytes, if it may be trusted for m. */
static struct lp_shadow *validate(pthread_mutex_t *m, void *p, uint32_t label)
{
	struct lp_shadow *sh = p;
	if (sh == &lp_shadow_real)
		return sh;
	uintptr_t off = (uintptr_t)sh - (uintptr_t)arena;
	if (off >= ARENA_SHADOWS * sizeof(struct lp_shadow) || off % sizeof(struct lp_shadow))
		return NULL;
	if (ld_relaxed(&sh->mutex) != m || ld_relaxed(&sh->label) != label)
		return NULL;
	return sh;
}

/* A pointer to our own shadow for m, of any label (to retire it). */
static struct lp_shadow *ours(pthread_mutex_t *m, void *p)
{
	struct lp_shadow *sh = p;
	uintptr_t off = (uintptr_t)sh - (uintptr_t)arena;
	if (!arena || off >= ARENA_SHADOWS * sizeof(struct lp_shadow) ||
	    off % sizeof(struct lp_shadow) || ld_relaxed(&sh->mutex) != m)
		return NULL;
	return sh;
}

struct lp_shadow *lp_shadow_peek(pthread_mutex_t *m, uint32_t label)
{
	return validate(m, ld_acquire(slot(m)), label);
}

/* Reset a profile, keeping (zeroed) the histogram a recycled shadow already has. */
static void stats_clear(struct lp_stats *st)
{
	uint64_t *hist = st->hist;
	memset(st, 0, sizeof(*st));
	if (hist)
		memset(hist, 0, LP_HIST_BUCKETS * sizeof(*hist));
	st->hist = hist;
}

static void shadow_prepare(struct lp_shadow *sh, pthread_mutex_t *m, uint32_t label, void *caller)
{
	stats_clear(&sh->st);
	sh->label = label;
	sh->id = aaf_relaxed(&next_id, 1);
	sh->first_caller = caller;
	sh->owner = 0;
	sh->next_free = NULL;
	if (label == LP_LOCUS)
		lp_lock_init(&sh->lock);
	st_relaxed(&sh->mutex, m);
	st_release(&sh->state, SH_LIVE);
}

struct lp_shadow *lp_shadow_get(pthread_mutex_t *m, uint32_t label, void *caller)
{
	void *seen = ld_acquire(slot(m));
	struct lp_shadow *sh = validate(m, seen, label);
	if (lp_likely(sh != NULL))
		return sh;
	struct lp_shadow *fresh = shadow_alloc();
	if (fresh)
		shadow_prepare(fresh, m, label, caller);
	for (;;) {
		/* Either install ours or adopt the one another first locker installed. */
		struct lp_shadow *mine = fresh ? fresh : &lp_shadow_real;
		if (cas_acqrel(slot(m), (struct __pthread_internal_list **)&seen,
			       (struct __pthread_internal_list *)mine)) {
			struct lp_shadow *old = ours(m, seen);
			if (old)
				shadow_retire(old); /* the bytes now say another type */
			return mine;
		}
		sh = validate(m, seen, label);
		if (sh) {
			if (fresh)
				shadow_free(fresh);
			return sh;
		}
	}
}

/* Only a pointer to our own shadow is cleared: the bytes may be a robust
   mutex's list, which is glibc's. */
void lp_shadow_detach(pthread_mutex_t *m)
{
	void *p = ld_acquire(slot(m));
	struct lp_shadow *sh = ours(m, p);
	if (sh && cas_acqrel_relaxed(slot(m), (struct __pthread_internal_list **)&p, NULL))
		shadow_retire(sh);
	else if (p == &lp_shadow_real)
		st_release(slot(m), NULL);
}

struct lp_shadow *lp_shadow_at(uint64_t i)
{
	return &arena[i];
}

uint64_t lp_shadow_count(void)
{
	return arena ? ld_acquire(&arena_next) : 0;
}

/*
 * In a forked child only the forking thread exists. A locus lock held by it
 * stays held by it; one held by another thread stays held for good (as
 * glibc's would); a free one is re-initialized, because a queue lock or a
 * ticket lock remembers its waiters, and the waiters of the parent are not
 * in the child: handing the lock to one of them would lose it. A held lock
 * is re-initialized too when the holder is this thread, and taken again, so
 * that its queue holds no ghost either. (A thread that had just acquired a
 * lock but not yet recorded itself as owner looks free here; the child
 * then sees it free, where glibc's child would see it held.)
 */
void lp_shadow_after_fork(void)
{
	free_lock = 0;
	pthread_t self = pthread_self();
	uint64_t n = lp_shadow_count();
	for (uint64_t i = 0; i < n; i++) {
		struct lp_shadow *sh = &arena[i];
		if (sh->state == SH_DEAD) {
			/* the parent's profile; the child's is its own */
			sh->state = SH_FREE;
			sh->mutex = NULL;
			sh->next_free = free_list;
			free_list = sh;
			continue;
		}
		if (sh->state != SH_LIVE)
			continue;
		if (sh->label == LP_LOCUS && (sh->owner == 0 || pthread_equal(sh->owner, self))) {
			lp_lock_init(&sh->lock);
			if (sh->owner)
				lock_lock(&sh->lock);
		}
		stats_clear(&sh->st);
		if (sh->owner) {
			/* a hold in progress goes on in the child */
			sh->st.last_owner = sh->owner;
			sh->st.t_acquired = ticks();
			sh->st.depth = 1;
		}
	}
}
