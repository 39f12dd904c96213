/*
 * Configuration: what the interposed functions do, decided once from the
 * environment at the first call of any of them.
 *
 * Not in a constructor: other libraries' constructors, which may run before
 * ours, lock mutexes too, and a mutex must be handled the same way from its
 * first lock to its last. So every interposed function first calls
 * lp_ready(), and the first call configures.
 *
 * A call made from inside the configuration itself (dlvsym, or an allocator
 * that takes pthread mutexes and is called by dlvsym or by a lock's setup)
 * must not wait for the configuration to finish: it would wait for itself.
 * Such calls do nothing and succeed. That is safe: until the configuration
 * is in force, every other thread that calls an interposed function waits in
 * lp_ready_slow() before touching its mutex, so no mutex is held by anyone
 * but this thread, and this thread's nested lock and unlock come in pairs
 * inside one call into the allocator, leaving the mutex's bytes as they were.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "preload.h"
#include "sync/lock_impl.h"

struct lp_config lp_cfg;
struct lp_real lp_real;
int lp_state;

static __thread int configuring;

void lp_say(const char *fmt, ...)
{
	char buf[1024];
	int saved = errno;
	int n = snprintf(buf, sizeof(buf), "locus-preload: ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	ssize_t w = write(2, buf, (size_t)n);
	(void)w;
	errno = saved;
}

/*
 * The next definition after ours, at the version Debian 12's x86-64 glibc
 * makes default (objdump -T libc.so.6): GLIBC_2.2.5 for the mutex functions,
 * GLIBC_2.3.2 for the condvar functions (2.2.5 is the old condvar ABI), 2.34
 * for the ones that moved from libpthread. If another interposer stands
 * between us and glibc (a sanitizer runtime, another preload), its
 * unversioned definition is the one to call, and dlvsym would skip it: so
 * the versioned symbol is used only when it comes from the same object as
 * the plain lookup.
 */
static void *next_fn(const char *name, const char *version)
{
	void *plain = dlsym(RTLD_NEXT, name);
	void *versioned = dlvsym(RTLD_NEXT, name, version);
	if (!plain || !versioned)
		return plain ? plain : versioned;
	Dl_info a, b;
	if (dladdr(plain, &a) && dladdr(versioned, &b) && a.dli_fbase != b.dli_fbase)
		return plain;
	return versioned;
}

#define RESOLVE(field, name, version)                                                              \
	lp_real.field = (__typeof__(lp_real.field))next_fn(name, version)

static int resolve_real(void)
{
	RESOLVE(mutex_init, "pthread_mutex_init", "GLIBC_2.2.5");
	RESOLVE(mutex_destroy, "pthread_mutex_destroy", "GLIBC_2.2.5");
	RESOLVE(mutex_lock, "pthread_mutex_lock", "GLIBC_2.2.5");
	RESOLVE(mutex_trylock, "pthread_mutex_trylock", "GLIBC_2.34");
	RESOLVE(mutex_timedlock, "pthread_mutex_timedlock", "GLIBC_2.34");
	RESOLVE(mutex_clocklock, "pthread_mutex_clocklock", "GLIBC_2.34");
	RESOLVE(mutex_unlock, "pthread_mutex_unlock", "GLIBC_2.2.5");
	RESOLVE(cond_init, "pthread_cond_init", "GLIBC_2.3.2");
	RESOLVE(cond_destroy, "pthread_cond_destroy", "GLIBC_2.3.2");
	RESOLVE(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
	RESOLVE(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
	RESOLVE(cond_clockwait, "pthread_cond_clockwait", "GLIBC_2.34");
	RESOLVE(cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
	RESOLVE(cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
	/* clocklock and clockwait are newer (2.30); everything else must exist. */
	return lp_real.mutex_init && lp_real.mutex_destroy && lp_real.mutex_lock &&
			       lp_real.mutex_trylock && lp_real.mutex_timedlock &&
			       lp_real.mutex_unlock && lp_real.cond_init && lp_real.cond_destroy &&
			       lp_real.cond_wait && lp_real.cond_timedwait && lp_real.cond_signal &&
			       lp_real.cond_broadcast
		       ? 0
		       : -1;
}

static const char known_help[] =
	"known: tas ttas ticket mcs clh futex, or mutex (the original); options after a colon, "
	"comma-separated: spinpark|spin|park, spins=N; tas, ttas, futex: antistarve|barge; "
	"ttas: backoff|nobackoff|backoff_max=N; mcs: cr|nocr; ticket, clh, mcs: "
	"admit|admit=N|strict";

/* The spec with every default spelled out, for the profile's header. */
static void canonical_spec(const struct lock *l, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s:", locus_lock_kind_name((locus_lock_kind)l->kind));
	n += lock_wait_format(&l->wait, buf + n, (size_t)n < len ? len - (size_t)n : 0);
	struct lock_opts o = {.backoff_max = l->backoff_max, .flags = l->flags, .admit = l->admit};
	lock_kind_format((locus_lock_kind)l->kind, &o, buf + n,
			 (size_t)n < len ? len - (size_t)n : 0);
}

/*
 * LOCUS_LOCK: a lock spec (replace), "mutex[...]" (the original), unset or
 * empty (the original). Anything unknown: one line naming what is known, and
 * the original mutexes; never an exit, the host program must run.
 */
static void configure_lock(void)
{
	const char *spec = getenv("LOCUS_LOCK");
	snprintf(lp_cfg.lock_spec, sizeof(lp_cfg.lock_spec), "pthread");
	if (!spec || !*spec)
		return;
	if (strncmp(spec, "mutex", 5) == 0 && (spec[5] == '\0' || spec[5] == ':')) {
		if (spec[5])
			lp_say("LOCUS_LOCK=%s: mutex takes no options; running with the original "
			       "pthread mutexes",
			       spec);
		return;
	}
	int rc = lock_init_spec(&lp_cfg.tpl, spec);
	if (rc == ENOENT) {
		lp_say("unknown lock '%s' in LOCUS_LOCK (%s); running with the original pthread "
		       "mutexes",
		       spec, known_help);
		return;
	}
	if (rc != 0) {
		lp_say("bad option in LOCUS_LOCK=%s (%s); running with the original pthread "
		       "mutexes",
		       spec, known_help);
		return;
	}
	canonical_spec(&lp_cfg.tpl, lp_cfg.lock_spec, sizeof(lp_cfg.lock_spec));
	/* The template is a configuration, never locked; drop what init allocated
	   (clh's first node) and keep the fields that lp_lock_init copies. */
	lock_destroy(&lp_cfg.tpl);
	lp_cfg.mode = LP_REPLACE;
}

/* LOCUS_PROFILE: unset, "" or "0" off; "1" text on stderr; else also JSON to that path. */
static void configure_profile(void)
{
	const char *p = getenv("LOCUS_PROFILE");
	lp_cfg.top = 10;
	if (!p || !*p || strcmp(p, "0") == 0)
		return;
	lp_cfg.profiling = 1;
	if (strcmp(p, "1") != 0)
		snprintf(lp_cfg.json_path, sizeof(lp_cfg.json_path), "%s", p);
	const char *top = getenv("LOCUS_PROFILE_TOP");
	uint32_t n;
	if (top && *top && parse_num_u32(top, 0, LP_TOP_LIMIT, &n) != 0)
		lp_say("LOCUS_PROFILE_TOP=%s is not a number from 0 to %u; showing 10", top,
		       LP_TOP_LIMIT);
	else if (top && *top)
		lp_cfg.top = n ? n : LP_TOP_LIMIT;
}

static void after_fork_child(void)
{
	lp_shadow_after_fork();
	if (lp_cfg.profiling)
		lp_profile_after_fork();
}

static void configure(void)
{
	if (resolve_real() != 0) {
		/* Without the originals nothing can run; this cannot happen with glibc. */
		lp_say("cannot find glibc's pthread functions: %s", dlerror());
		abort();
	}
	lp_cfg.pid = getpid();
	configure_lock();
	configure_profile();
	if (lp_cfg.mode == LP_PASS && lp_cfg.profiling)
		lp_cfg.mode = LP_PROFILE;
	if (lp_cfg.mode == LP_PASS)
		return;
	if (lp_shadow_setup() != 0) {
		lp_say("cannot reserve memory for mutex state; running with the original pthread "
		       "mutexes, no profile");
		lp_cfg.mode = LP_PASS;
		lp_cfg.profiling = 0;
		return;
	}
	pthread_atfork(NULL, NULL, after_fork_child);
	if (lp_cfg.profiling)
		lp_profile_setup();
}

int lp_ready_slow(void)
{
	if (configuring)
		return 0;
	int expected = 0;
	if (cas_acquire_both(&lp_state, &expected, 1)) {
		configuring = 1;
		configure();
		configuring = 0;
		st_release(&lp_state, 2);
		return 1;
	}
	while (ld_acquire(&lp_state) != 2)
		sched_yield();
	return 1;
}

void lp_lock_init(struct lock *l)
{
	lock_init(l, (locus_lock_kind)lp_cfg.tpl.kind, &lp_cfg.tpl.wait);
	struct lock_opts o = {.backoff_max = lp_cfg.tpl.backoff_max,
			      .flags = lp_cfg.tpl.flags,
			      .admit = lp_cfg.tpl.admit};
	lock_apply_opts(l, &o);
}
