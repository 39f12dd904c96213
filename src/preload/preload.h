/*
 * liblocus-preload internals.
 *
 * The library replaces pthread_mutex_* and pthread_cond_* of an unmodified
 * program (interpose.c defines the exported names and calls the lp_*
 * functions here; tests link the lp_* functions directly). Which of three
 * things a call does is decided once, at the first call (config.c):
 *
 *   LP_PASS     the original glibc functions, nothing else
 *   LP_PROFILE  the original functions, and a profile of every mutex
 *   LP_REPLACE  a locus lock for every mutex whose type a locus lock can
 *               honour, the original functions for the others; our own
 *               condition variable for every condvar; profile if asked
 *
 * Where a mutex's state lives (shadow.c): glibc's pthread_mutex_t has 40
 * bytes on x86-64 and a locus_lock needs more, so a mutex that we track gets
 * a "shadow" object, found through a pointer kept inside the mutex's own
 * bytes (see shadow.c for which bytes and why that is safe).
 */
#ifndef LOCUS_PRELOAD_H
#define LOCUS_PRELOAD_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "locus/lock.h"
#include "sync/lock_impl.h"

#define lp_likely(x)   __builtin_expect(!!(x), 1)
#define lp_unlikely(x) __builtin_expect(!!(x), 0)

enum lp_mode { LP_PASS = 0, LP_PROFILE, LP_REPLACE };

/*
 * What a tracked mutex is. LP_LOCUS: a locus lock. The others run on glibc's
 * implementation; LP_PTHREAD is a normal mutex (profile-only mode), the rest
 * are types a locus lock cannot honour, named so in the profile.
 * LP_UNTRACKED (robust, process-shared) never gets a shadow: glibc uses the
 * bytes where the shadow pointer would go, or another process shares them.
 */
enum lp_label {
	LP_LOCUS = 0,
	LP_PTHREAD,
	LP_RECURSIVE,
	LP_ERRORCHECK,
	LP_PI,
	LP_PP,
	LP_NLABELS,
	LP_UNTRACKED = LP_NLABELS
};

/* The original functions, found with dlvsym(RTLD_NEXT) (config.c). */
struct lp_real {
	int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
	int (*mutex_destroy)(pthread_mutex_t *);
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *);
	int (*cond_destroy)(pthread_cond_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			      const struct timespec *);
	int (*cond_signal)(pthread_cond_t *);
	int (*cond_broadcast)(pthread_cond_t *);
};

struct lp_config {
	int mode;	     /* enum lp_mode */
	int profiling;	     /* LOCUS_PROFILE set */
	struct lock tpl;     /* LP_REPLACE: the configuration every new lock copies */
	char lock_spec[96];  /* canonical spec, or "pthread" */
	char json_path[512]; /* "" = text only */
	unsigned top;	     /* LOCUS_PROFILE_TOP, 1..LP_TOP_LIMIT */
	int pid;	     /* of the process that configured (a forked child differs) */
};

extern struct lp_config lp_cfg;

/* Most rows the profile prints (LOCUS_PROFILE_TOP=0 asks for this many). */
#define LP_TOP_LIMIT 65536
extern struct lp_real lp_real;

/* ---- configuration (config.c) ------------------------------------------ */

extern int lp_state; /* 2 once configured */
int lp_ready_slow(void);

/*
 * 1 when the configuration is in force; 0 for a call made from inside our own
 * initialization (dlsym or an allocator calling back into pthread_mutex_*):
 * such a call does nothing (config.c says why that is safe).
 */
static inline int lp_ready(void)
{
	if (lp_likely(ld_acquire(&lp_state) == 2))
		return 1;
	return lp_ready_slow();
}

/* Print one line on stderr, "locus-preload: ...", without stdio. */
void lp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- shadows (shadow.c) ------------------------------------------------ */

/* Per-mutex profile. Written only by the thread holding the mutex (so plain
   relaxed loads and stores, no read-modify-write), except try_busy. */
struct lp_stats {
	uint64_t acquisitions;
	uint64_t changes; /* acquisitions by a thread other than the previous holder */
	uint64_t contended;
	uint64_t wait_total, wait_max; /* ticks, contended acquisitions only */
	uint64_t hold_total, hold_max; /* ticks */
	uint64_t try_busy;	       /* trylocks that failed (atomic add) */
	uint64_t t_acquired;	       /* tick of the current hold's start */
	pthread_t last_owner;
	uint64_t *hist; /* LP_HIST_BUCKETS wait counts (profile.c), made at the first wait */
	uint32_t depth; /* holds of a recursive mutex by its owner */
};

#define LP_HIST_BUCKETS 256

enum { SH_FREE = 0, SH_LIVE, SH_DEAD };

struct lp_shadow {
	pthread_mutex_t *mutex; /* the mutex this belongs to (validates the pointer) */
	uint32_t state;		/* SH_* */
	uint32_t label;		/* enum lp_label */
	uint64_t id;		/* creation order, the profile's "Mutex #" */
	void *first_caller;	/* return address of the first lock */
	pthread_t owner;	/* holder (0 when free): fork repair, destroy, unlock checks */
	struct lp_shadow *next_free;
	struct lock lock; /* LP_LOCUS only (lock_state.h: a locus_lock's insides) */
	struct lp_stats st;
} __attribute__((aligned(LOCUS_CACHELINE)));

/*
 * The shadow of m for a mutex of this label, made on first use (caller is
 * recorded as where it was first locked). NULL if none could be made (the
 * arena is full; then the mutex stays on glibc's implementation for good,
 * see shadow.c).
 */
struct lp_shadow *lp_shadow_get(pthread_mutex_t *m, uint32_t label, void *caller);
/* The shadow of m if it has a valid one of this label, else NULL. */
struct lp_shadow *lp_shadow_peek(pthread_mutex_t *m, uint32_t label);
/* Marker shadow: this mutex stays on glibc's functions (arena exhausted). */
extern struct lp_shadow lp_shadow_real;
/* m is being initialized or destroyed: detach (and retire) its shadow. */
void lp_shadow_detach(pthread_mutex_t *m);
/* Arena setup; -1 if the memory could not be reserved. */
int lp_shadow_setup(void);
/* In a forked child: repair locus locks and reset the profile (shadow.c). */
void lp_shadow_after_fork(void);
/* Iterate over every shadow ever made (for the report). */
struct lp_shadow *lp_shadow_at(uint64_t i);
uint64_t lp_shadow_count(void);
/* Totals of destroyed mutexes whose shadow was recycled. */
extern uint64_t lp_recycled_used, lp_recycled_acquisitions;

/* glibc's __kind bits (nptl's pthreadP.h; stable ABI since the static
   initializers put them in programs). */
#define GL_KIND_MASK 3
#define GL_ROBUST    16
#define GL_PI	     32
#define GL_PP	     64
#define GL_PSHARED   128
#define GL_ELISION   (256 | 512) /* lock elision hints: no bearing on the type */

/* What label a mutex of this glibc __kind gets in the current mode. */
static inline uint32_t lp_label_of(const pthread_mutex_t *m, int replace)
{
	int k = ld_relaxed(&m->__data.__kind);
	if (lp_likely((k & ~GL_ELISION) == 0))
		return replace ? LP_LOCUS : LP_PTHREAD; /* normal */
	if (k & (GL_ROBUST | GL_PSHARED))
		return LP_UNTRACKED;
	if (k & GL_PI)
		return LP_PI;
	if (k & GL_PP)
		return LP_PP;
	return (k & GL_KIND_MASK) == 1	 ? LP_RECURSIVE
	       : (k & GL_KIND_MASK) == 2 ? LP_ERRORCHECK
	       : replace		 ? LP_LOCUS
					 : LP_PTHREAD;
}

/* Initialize a fresh shadow's locus lock from lp_cfg.tpl. */
void lp_lock_init(struct lock *l);

/* ---- mutexes (mutex.c) --------------------------------------------------- */

int lp_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr);
int lp_mutex_destroy(pthread_mutex_t *m);
int lp_mutex_lock(pthread_mutex_t *m, void *caller);
int lp_mutex_trylock(pthread_mutex_t *m, void *caller);
int lp_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime, void *caller);
int lp_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime,
		       void *caller);
int lp_mutex_unlock(pthread_mutex_t *m);

/*
 * Profile-only mode: glibc's condvar wait releases and reacquires m inside
 * glibc; record the release before it (returns what to pass to _end, maybe
 * NULL) and the reacquisition after it (counted, not timed).
 */
struct lp_shadow *lp_mutex_wait_begin(pthread_mutex_t *m);
void lp_mutex_wait_end(struct lp_shadow *sh);

/* ---- condition variables (cond.c) ---------------------------------------- */

int lp_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr);
int lp_cond_destroy(pthread_cond_t *c);
int lp_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, void *caller);
int lp_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime,
		      void *caller);
int lp_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
		      const struct timespec *abstime, void *caller);
int lp_cond_signal(pthread_cond_t *c);
int lp_cond_broadcast(pthread_cond_t *c);

/* ---- profile (profile.c) ------------------------------------------------- */

void lp_profile_setup(void);
/* Record, by the new holder, an acquisition at tick `now`; waited = ticks spent
   waiting if contended. */
void lp_prof_acquired(struct lp_shadow *sh, pthread_t self, uint64_t now, int contended,
		      uint64_t waited);
/* Record, by the holder, the end of a hold at tick `now`. */
void lp_prof_released(struct lp_shadow *sh, uint64_t now);
/* Write the report: text to fd text_fd (-1: none), JSON to json_path (NULL/"": none). */
void lp_profile_write(int text_fd, const char *json_path);
/* The report at exit or on the profile signal: once per process. */
void lp_profile_report(void);
/* In a forked child: the report is the child's own. */
void lp_profile_after_fork(void);

#endif
