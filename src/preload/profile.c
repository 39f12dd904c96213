/*
 * The profile: per-mutex counters (kept in the shadow, written by the holder,
 * see preload.h), a log-scale histogram of waits for the p99, and the report
 * at exit or on a signal, as a mutrace-like table on stderr and as JSON.
 *
 * The report neither allocates nor uses stdio (it formats into a buffer and
 * writes to a file descriptor), so that it may run from a signal handler;
 * its one call that is not async-signal-safe is dladdr, for symbol names.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/parse.h"
#include "preload.h"

#define HIST_MAX (1u << 18) /* histograms: one per contended mutex, 2 KiB each */

static uint64_t *hist_arena;
static uint64_t hist_next;
static uint64_t base_ticks, base_ns;

/* ---- recording ---------------------------------------------------------- */

/*
 * Four buckets per power of two: bucket i >= 8 holds [ (4+s) << (e-2),
 * (5+s) << (e-2) ) for e = i/4, s = i%4, so a percentile read from it is
 * within 25% of the true value; values below 4 have a bucket each.
 */
static unsigned bucket_of(uint64_t v)
{
	if (v < 4)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	return e * 4 + (unsigned)((v >> (e - 2)) & 3);
}

static uint64_t bucket_top(unsigned i)
{
	if (i < 4)
		return i;
	unsigned e = i / 4, s = i % 4;
	if (e >= 61)
		return UINT64_MAX;
	return ((5ull + s) << (e - 2)) - 1;
}

static uint64_t *hist_alloc(void)
{
	if (!hist_arena)
		return NULL;
	uint64_t i = faa_relaxed(&hist_next, 1);
	if (i >= HIST_MAX)
		return NULL;
	return hist_arena + i * LP_HIST_BUCKETS;
}

/* Only the holder writes: a plain add, as relaxed accesses so that a report
   running meanwhile reads whole values. */
static inline void bump(uint64_t *p, uint64_t by)
{
	st_relaxed(p, ld_relaxed(p) + by);
}

void lp_prof_acquired(struct lp_shadow *sh, pthread_t self, uint64_t now, int contended,
		      uint64_t waited)
{
	struct lp_stats *s = &sh->st;
	bump(&s->acquisitions, 1);
	if (!pthread_equal(s->last_owner, self)) {
		if (s->last_owner)
			bump(&s->changes, 1);
		st_relaxed(&s->last_owner, self);
	}
	if (contended) {
		bump(&s->contended, 1);
		bump(&s->wait_total, waited);
		if (waited > s->wait_max)
			st_relaxed(&s->wait_max, waited);
		if (!s->hist)
			st_release(&s->hist, hist_alloc());
		if (s->hist)
			bump(&s->hist[bucket_of(waited)], 1);
	}
	st_relaxed(&s->t_acquired, now);
	st_relaxed(&s->depth, 1);
}

void lp_prof_released(struct lp_shadow *sh, uint64_t now)
{
	struct lp_stats *s = &sh->st;
	uint64_t held = now - s->t_acquired;
	bump(&s->hold_total, held);
	if (held > s->hold_max)
		st_relaxed(&s->hold_max, held);
	st_relaxed(&s->depth, 0);
}

/* ---- output ------------------------------------------------------------- */

struct out {
	int fd;
	size_t n;
	char buf[8192];
};

static void out_flush(struct out *o)
{
	size_t off = 0;
	while (off < o->n) {
		ssize_t w = write(o->fd, o->buf + off, o->n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	o->n = 0;
}

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	char tmp[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	if (o->n + (size_t)n > sizeof(o->buf))
		out_flush(o);
	memcpy(o->buf + o->n, tmp, (size_t)n);
	o->n += (size_t)n;
}

/* A JSON string, or null. */
static void out_jstr(struct out *o, const char *s)
{
	if (!s) {
		outf(o, "null");
		return;
	}
	outf(o, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			outf(o, "\\%c", c);
		else if (c < 0x20)
			outf(o, "\\u%04x", c);
		else
			outf(o, "%c", c);
	}
	outf(o, "\"");
}

/* ---- the report ------------------------------------------------------------ */

/* One mutex's numbers, read once (other threads may still be running). */
struct row {
	const struct lp_shadow *sh;
	uint64_t id;
	pthread_mutex_t *mutex; /* NULL once destroyed */
	void *caller;
	uint32_t label;
	uint64_t acq, changes, cont, try_busy;
	uint64_t wait_total, wait_max, wait_p99, hold_total, hold_max;
};

static void read_row(const struct lp_shadow *sh, struct row *r)
{
	const struct lp_stats *s = &sh->st;
	r->sh = sh;
	r->id = sh->id;
	r->mutex = ld_relaxed(&sh->mutex);
	r->caller = sh->first_caller;
	r->label = sh->label;
	r->acq = ld_relaxed(&s->acquisitions);
	r->changes = ld_relaxed(&s->changes);
	r->cont = ld_relaxed(&s->contended);
	r->try_busy = ld_relaxed(&s->try_busy);
	r->wait_total = ld_relaxed(&s->wait_total);
	r->wait_max = ld_relaxed(&s->wait_max);
	r->hold_total = ld_relaxed(&s->hold_total);
	r->hold_max = ld_relaxed(&s->hold_max);
	r->wait_p99 = 0;
	const uint64_t *h = ld_acquire(&s->hist);
	if (h && r->cont) {
		uint64_t n = 0;
		for (unsigned i = 0; i < LP_HIST_BUCKETS; i++)
			n += ld_relaxed(&h[i]);
		uint64_t need = (n * 99 + 99) / 100, seen = 0;
		for (unsigned i = 0; i < LP_HIST_BUCKETS && n; i++) {
			seen += ld_relaxed(&h[i]);
			if (seen >= need) {
				r->wait_p99 = bucket_top(i);
				break;
			}
		}
		if (r->wait_p99 > r->wait_max)
			r->wait_p99 = r->wait_max;
	}
}

/* Order of the table: most contended first, then most waited, then most used. */
static int row_before(const struct row *a, const struct row *b)
{
	if (a->cont != b->cont)
		return a->cont > b->cont;
	if (a->wait_total != b->wait_total)
		return a->wait_total > b->wait_total;
	if (a->acq != b->acq)
		return a->acq > b->acq;
	return a->id < b->id;
}

/* The kept rows: static (the report may run in a signal handler, so it cannot
   allocate); untouched pages of it cost no memory. */
static struct row top[LP_TOP_LIMIT];

struct summary {
	unsigned ntop;
	uint64_t used, contended, acquisitions, waited;
	uint64_t recycled; /* destroyed without contention: in the totals, not listed */
	double ticks_per_ns;
	double seconds;
};

/*
 * Selecting the `limit` first rows of n in O(n log limit): while collecting,
 * top[0..ntop) is a heap whose root is the row that would be listed last, so
 * a new row either replaces the root or is not kept; at the end the heap is
 * sorted in place into table order (the last row extracted first, to the end).
 */
static int row_after(const struct row *a, const struct row *b)
{
	return row_before(b, a);
}

static void heap_down(unsigned at, unsigned n)
{
	for (;;) {
		unsigned last = at, l = 2 * at + 1, r = l + 1;
		if (l < n && row_after(&top[l], &top[last]))
			last = l;
		if (r < n && row_after(&top[r], &top[last]))
			last = r;
		if (last == at)
			return;
		struct row t = top[at];
		top[at] = top[last];
		top[last] = t;
		at = last;
	}
}

static void heap_up(unsigned at)
{
	while (at > 0) {
		unsigned up = (at - 1) / 2;
		if (!row_after(&top[at], &top[up]))
			return;
		struct row t = top[at];
		top[at] = top[up];
		top[up] = t;
		at = up;
	}
}

static void keep_row(struct summary *sum, const struct row *r, unsigned limit)
{
	if (sum->ntop < limit) {
		top[sum->ntop] = *r;
		heap_up(sum->ntop++);
	} else if (row_before(r, &top[0])) {
		top[0] = *r;
		heap_down(0, sum->ntop);
	}
}

static void heap_sort(unsigned n)
{
	while (n > 1) {
		struct row t = top[0];
		top[0] = top[--n];
		top[n] = t;
		heap_down(0, n);
	}
}

/* Totals over every mutex; the `limit` first rows, in table order, in `top`. */
static void collect(struct summary *sum, unsigned limit)
{
	memset(sum, 0, sizeof(*sum));
	if (limit > LP_TOP_LIMIT)
		limit = LP_TOP_LIMIT;
	uint64_t n = lp_shadow_count();
	for (uint64_t i = 0; i < n; i++) {
		const struct lp_shadow *sh = lp_shadow_at(i);
		uint32_t state = ld_acquire(&sh->state);
		if (state != SH_LIVE && state != SH_DEAD)
			continue;
		struct row r;
		read_row(sh, &r);
		if (r.acq == 0)
			continue;
		sum->used++;
		sum->acquisitions += r.acq;
		sum->waited += r.wait_total;
		if (r.cont)
			sum->contended++;
		keep_row(sum, &r, limit);
	}
	heap_sort(sum->ntop);
	sum->recycled = ld_relaxed(&lp_recycled_used);
	sum->used += sum->recycled;
	sum->acquisitions += ld_relaxed(&lp_recycled_acquisitions);
}

/* Ticks per nanosecond, measured since setup (at least 10 ms of it). */
static double calibrate(double *seconds)
{
	uint64_t ns = mono_ns();
	while (ns - base_ns < 10000000ull)
		ns = mono_ns();
	uint64_t t = ticks();
	*seconds = (double)(ns - base_ns) / NS_PER_S;
#if defined(__x86_64__) || defined(__i386__)
	return (double)(t - base_ticks) / (double)(ns - base_ns);
#else
	(void)t;
	return 1.0;
#endif
}

static const char *const type_names[LP_NLABELS] = {
	[LP_LOCUS] = "normal",		[LP_PTHREAD] = "normal", [LP_RECURSIVE] = "recursive",
	[LP_ERRORCHECK] = "errorcheck", [LP_PI] = "pi",		 [LP_PP] = "pp",
};

static const char *lock_name(uint32_t label)
{
	return label == LP_LOCUS ? locus_lock_kind_name((locus_lock_kind)lp_cfg.tpl.kind)
				 : "pthread";
}

/* "sym+0x1c (object)" or "object+0x1234", for a code or data address. */
struct where {
	const char *object; /* basename */
	const char *path;
	const char *symbol;
	uintptr_t offset; /* from the symbol, else from the object's base */
	int found;
};

static void locate(const void *addr, struct where *w)
{
	Dl_info info;
	memset(w, 0, sizeof(*w));
	if (!addr || !dladdr(addr, &info) || !info.dli_fname)
		return;
	w->found = 1;
	w->path = info.dli_fname;
	const char *slash = strrchr(info.dli_fname, '/');
	w->object = slash ? slash + 1 : info.dli_fname;
	if (!*w->object)
		w->object = program_invocation_short_name;
	if (info.dli_sname && info.dli_saddr) {
		w->symbol = info.dli_sname;
		w->offset = (uintptr_t)addr - (uintptr_t)info.dli_saddr;
	} else {
		w->offset = (uintptr_t)addr - (uintptr_t)info.dli_fbase;
	}
}

static void where_text(char *buf, size_t len, const struct where *w, const void *addr)
{
	if (!w->found)
		snprintf(buf, len, "%p", addr);
	else if (w->symbol)
		snprintf(buf, len, "%s+0x%lx (%s)", w->symbol, (unsigned long)w->offset, w->object);
	else
		snprintf(buf, len, "%s+0x%lx", w->object, (unsigned long)w->offset);
}

static double ms(uint64_t ticks, double tpn)
{
	return (double)ticks / tpn / 1e6;
}

static double us(uint64_t ticks, double tpn)
{
	return (double)ticks / tpn / 1e3;
}

static void write_text(int fd, const struct summary *sum)
{
	static struct out o;
	double t = sum->ticks_per_ns;
	o.fd = fd;
	o.n = 0;
	outf(&o,
	     "locus-preload: profile of %s (pid %d), lock %s, %.2f s: %llu mutexes used, %llu "
	     "contended, %llu acquisitions\n",
	     program_invocation_short_name, (int)getpid(), lp_cfg.lock_spec, sum->seconds,
	     (unsigned long long)sum->used, (unsigned long long)sum->contended,
	     (unsigned long long)sum->acquisitions);
	outf(&o,
	     "locus-preload: top %u by contended acquisitions (Cont.: had to wait; wait times over "
	     "those; pthread/TYPE: left to glibc)\n",
	     sum->ntop);
	outf(&o, "%7s %10s %9s %9s %9s %12s %11s %11s %11s %12s %11s %11s  %-18s %s\n", "Mutex#",
	     "Locked", "Changed", "Cont.", "TryBusy", "tot.Wait[ms]", "avg.Wait[us]",
	     "p99.Wait[us]", "max.Wait[us]", "tot.Hold[ms]", "avg.Hold[us]", "max.Hold[us]", "Lock",
	     "First locked at [mutex]");
	for (unsigned i = 0; i < sum->ntop; i++) {
		const struct row *r = &top[i];
		char lock[48], first[256], mutex[256];
		if (r->label == LP_LOCUS || r->label == LP_PTHREAD)
			snprintf(lock, sizeof(lock), "%s", lock_name(r->label));
		else
			snprintf(lock, sizeof(lock), "pthread/%s", type_names[r->label]);
		struct where w;
		locate(r->caller, &w);
		where_text(first, sizeof(first), &w, r->caller);
		if (!r->mutex) {
			snprintf(mutex, sizeof(mutex), "destroyed");
		} else {
			locate(r->mutex, &w);
			if (w.found)
				where_text(mutex, sizeof(mutex), &w, r->mutex);
			else
				snprintf(mutex, sizeof(mutex), "%p", (void *)r->mutex);
		}
		outf(&o,
		     "%7llu %10llu %9llu %9llu %9llu %12.3f %11.3f %11.3f %11.3f %12.3f %11.3f "
		     "%11.3f  %-18s %s [%s]\n",
		     (unsigned long long)r->id, (unsigned long long)r->acq,
		     (unsigned long long)r->changes, (unsigned long long)r->cont,
		     (unsigned long long)r->try_busy, ms(r->wait_total, t),
		     r->cont ? us(r->wait_total / r->cont, t) : 0.0, us(r->wait_p99, t),
		     us(r->wait_max, t), ms(r->hold_total, t),
		     us(r->acq ? r->hold_total / r->acq : 0, t), us(r->hold_max, t), lock, first,
		     mutex);
	}
	out_flush(&o);
}

static unsigned long long ns_of(uint64_t ticks, double tpn)
{
	return (unsigned long long)((double)ticks / tpn + 0.5);
}

static void json_where(struct out *o, const void *addr)
{
	struct where w;
	locate(addr, &w);
	outf(o, "{\"address\": \"%p\", \"object\": ", addr);
	out_jstr(o, w.found ? w.path : NULL);
	outf(o, ", \"symbol\": ");
	out_jstr(o, w.symbol);
	outf(o, ", \"offset\": %lu}", (unsigned long)w.offset);
}

static void write_json(int fd, const struct summary *sum)
{
	static struct out o;
	double t = sum->ticks_per_ns;
	o.fd = fd;
	o.n = 0;
	outf(&o, "{\"tool\": \"locus-preload\", \"program\": ");
	out_jstr(&o, program_invocation_name);
	outf(&o, ", \"pid\": %d, \"lock\": ", (int)getpid());
	out_jstr(&o, lp_cfg.lock_spec);
	outf(&o,
	     ", \"replaced\": %s, \"seconds\": %.3f, \"mutexes_used\": %llu, "
	     "\"mutexes_contended\": %llu, \"mutexes_destroyed_unlisted\": %llu, "
	     "\"acquisitions\": %llu, \"order\": \"contended\", \"mutexes\": [",
	     lp_cfg.mode == LP_REPLACE ? "true" : "false", sum->seconds,
	     (unsigned long long)sum->used, (unsigned long long)sum->contended,
	     (unsigned long long)sum->recycled, (unsigned long long)sum->acquisitions);
	for (unsigned i = 0; i < sum->ntop; i++) {
		const struct row *r = &top[i];
		outf(&o, "%s\n  {\"rank\": %u, \"id\": %llu, \"lock\": \"%s\", \"type\": \"%s\", ",
		     i ? "," : "", i + 1, (unsigned long long)r->id, lock_name(r->label),
		     type_names[r->label]);
		outf(&o, "\"fallback\": %s, \"destroyed\": %s, ",
		     lp_cfg.mode == LP_REPLACE && r->label != LP_LOCUS ? "true" : "false",
		     r->mutex ? "false" : "true");
		outf(&o,
		     "\"acquisitions\": %llu, \"owner_changes\": %llu, \"contended\": %llu, "
		     "\"trylock_busy\": %llu, ",
		     (unsigned long long)r->acq, (unsigned long long)r->changes,
		     (unsigned long long)r->cont, (unsigned long long)r->try_busy);
		outf(&o,
		     "\"wait_ns\": {\"total\": %llu, \"avg\": %llu, \"p99\": %llu, \"max\": "
		     "%llu}, ",
		     ns_of(r->wait_total, t), r->cont ? ns_of(r->wait_total / r->cont, t) : 0,
		     ns_of(r->wait_p99, t), ns_of(r->wait_max, t));
		outf(&o, "\"hold_ns\": {\"total\": %llu, \"avg\": %llu, \"max\": %llu}, ",
		     ns_of(r->hold_total, t), r->acq ? ns_of(r->hold_total / r->acq, t) : 0,
		     ns_of(r->hold_max, t));
		outf(&o, "\"mutex\": ");
		if (r->mutex)
			json_where(&o, r->mutex);
		else
			outf(&o, "null");
		outf(&o, ", \"first_locked_at\": ");
		json_where(&o, r->caller);
		outf(&o, "}");
	}
	outf(&o, "\n]}\n");
	out_flush(&o);
}

void lp_profile_write(int text_fd, const char *json_path)
{
	static struct summary sum;
	unsigned limit = lp_cfg.top;
	collect(&sum, limit ? limit : 1);
	sum.ticks_per_ns = calibrate(&sum.seconds);
	if (text_fd >= 0)
		write_text(text_fd, &sum);
	if (json_path && *json_path) {
		int fd = open(json_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			lp_say("cannot write the profile to %s: %s", json_path, strerror(errno));
			return;
		}
		write_json(fd, &sum);
		close(fd);
	}
}

static int reported_pid;

/* Once per process; a forked child writes JSON to PATH.<pid>, and nothing if it locked nothing. */
void lp_profile_report(void)
{
	if (!lp_cfg.profiling || ld_acquire(&lp_state) != 2)
		return;
	int pid = getpid();
	if (xchg_acqrel(&reported_pid, pid) == pid)
		return;
	char path[sizeof(lp_cfg.json_path) + 16];
	snprintf(path, sizeof(path), "%s", lp_cfg.json_path);
	if (pid != lp_cfg.pid) {
		static struct summary probe;
		collect(&probe, 1);
		if (probe.used == 0)
			return;
		if (*path)
			snprintf(path, sizeof(path), "%s.%d", lp_cfg.json_path, pid);
	}
	lp_profile_write(2, path);
}

void lp_profile_after_fork(void)
{
	base_ticks = ticks();
	base_ns = mono_ns();
}

static void on_signal(int sig)
{
	(void)sig;
	int saved = errno;
	lp_profile_write(2, lp_cfg.json_path);
	errno = saved;
}

/* LOCUS_PROFILE_SIGNAL: USR1, SIGUSR2, HUP or a number: write the profile then too. */
static void setup_signal(void)
{
	const char *s = getenv("LOCUS_PROFILE_SIGNAL");
	if (!s || !*s)
		return;
	if (strncmp(s, "SIG", 3) == 0)
		s += 3;
	uint32_t num = 0;
	int sig = strcmp(s, "USR1") == 0		     ? SIGUSR1
		  : strcmp(s, "USR2") == 0		     ? SIGUSR2
		  : strcmp(s, "HUP") == 0		     ? SIGHUP
		  : parse_num_u32(s, 1, NSIG - 1, &num) == 0 ? (int)num
							     : 0;
	if (sig <= 0 || sig == SIGKILL || sig == SIGSTOP) {
		lp_say("LOCUS_PROFILE_SIGNAL=%s is not a signal; ignored", s);
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

void lp_profile_setup(void)
{
	void *p = mmap(NULL, (size_t)HIST_MAX * LP_HIST_BUCKETS * sizeof(uint64_t),
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	hist_arena = p == MAP_FAILED ? NULL : p;
	base_ticks = ticks();
	base_ns = mono_ns();
	setup_signal();
}
