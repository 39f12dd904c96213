/*
 * The executor: one interface over every mechanism, chosen by a spec string.
 *
 * A mechanism is a row in `mechs`: its name, what it is, the options it
 * takes and how to parse and print them, how to open, run and close it, and
 * how a thread drains its posts. Adding a mechanism is adding a row; the
 * spec parser, the error messages, --help, locus_cs_spec() and
 * locus_cs_drain() all read this table and nothing else.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "locus/combine.h"
#include "locus/cs.h"
#include "locus/delegate.h"
#include "locus/lock.h"
#include "locus/stm.h"
#include "sync/stm_impl.h"
#include "common/atomic.h"
#include "common/parse.h"
#include "sync/combine_impl.h"
#include "sync/deleg.h"
#include "sync/fatal.h"
#include "sync/lock_clh.h"
#include "sync/lock_impl.h"
#include "sync/lock_mcs.h"
#include "sync/mpsc.h"
#include "sync/thread_exit.h"

#define SPEC_MAX 256

struct mech;

struct locus_cs {
	union {
		struct lock lock;   /* lock_state.h: a locus_lock's insides, without its padding */
		struct oyama oyama; /* combine_impl.h: as the lock, without the padding */
		struct ccsynch ccsynch;
		struct {
			unsigned server;
			struct dl_async_cfg cfg;
		} dl;
		struct mpsc *mpsc;
		int stm_strict; /* stm: transactions skip the admission gate */
		void *ext;	/* the provider's handle */
	} u;
	const struct mech *m;
	/* m->run, or guarded_run when sections run between the provider's
	   enter and leave: locus_cs_run's one indirect call */
	uint64_t (*run)(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c);
	/* m->post, or post_by_run for a mechanism that runs sections in place */
	int (*post)(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		    void *ctx);
	void *state;
	char spec[SPEC_MAX];
} __attribute__((aligned(LOCUS_CACHELINE)));

/* Options of one spec, already split; parsing fills these in. */
struct opts {
	locus_wait wait;
	struct lock_opts lock;
	uint32_t pass;
	const char *method;
	/* delegation */
	uint32_t servers; /* 0: whatever runs, else 1 */
	uint32_t server;  /* UINT32_MAX: round robin */
	uint32_t lines;
	uint32_t queue; /* UINT32_MAX: 2 x lines; 0: direct */
	struct mpsc_opts mpsc;
	uint32_t policy; /* flat */
	uint32_t bound;
};

struct mech {
	const char *name;
	const char *summary;
	const char *options; /* for usage; NULL: takes none */
	int takes_wait;
	/* Apply one option not handled generically: 1 taken, 0 unknown, -1 bad value. */
	int (*option)(struct opts *o, const char *opt);
	int (*open)(locus_cs *cs, const struct opts *o);
	uint64_t (*run)(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c);
	/* NULL: post runs at once and calls back (synchronous mechanisms) */
	int (*post)(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		    void *ctx);
	void (*close)(locus_cs *cs);
	/* NULL: the sections run on the calling threads */
	int (*stats)(const locus_cs *cs, struct locus_cs_server_stats *out);
	/* Print every option of an open executor, defaults included, so that the
	   spec reopens the same configuration; NULL: the mechanism has none. */
	int (*format)(const locus_cs *cs, const struct opts *o, char *buf, size_t len);
	/* Complete the calling thread's posts of this family; 1 if any were
	   outstanding. NULL: post completes before it returns. Rows may share one:
	   a second call finds nothing outstanding and costs one look. */
	int (*drain)(void);
	locus_lock_kind kind; /* for the lock mechanisms */
};

/*
 * The calling thread's last error. The buffer is allocated at its first
 * error and freed at its exit, so that the library's thread-local data stays
 * small (common/tls.h: it must fit the C library's reserve when the library
 * is loaded with dlopen).
 */
#define ERR_MAX 1024
static __thread char *errbuf;	    /* ERR_MAX bytes, once this thread had an error */
static __thread const char *errmsg; /* what locus_cs_error says; NULL: nothing */

static void err_release(void)
{
	free(errbuf);
	errbuf = NULL;
	errmsg = NULL;
}

const char *locus_cs_error(void)
{
	return errmsg ? errmsg : "";
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	if (!errbuf) {
		errbuf = malloc(ERR_MAX);
		if (!errbuf) {
			errmsg = "out of memory (for this error's message)";
			return;
		}
		sync_exit_arm(EXIT_ERRBUF, err_release);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errbuf, ERR_MAX, fmt, ap);
	va_end(ap);
	errmsg = errbuf;
}

/* ---- option values ------------------------------------------------------ */

/*
 * Every numeric option and the values it may take. The parsers below read
 * their bounds here, and so do the error messages; spins and backoff_max are
 * parsed by wait.c and lock.c with the same bounds.
 */
struct range {
	const char *name;
	uint32_t min, max;
};

static const struct range ranges[] = {
	{"spins", 0, UINT32_MAX},
	{"backoff_max", 1, UINT32_MAX},
	{"admit", 2, UINT32_MAX},
	{"pass", 1, UINT32_MAX},
	{"servers", 1, LOCUS_DELEGATE_SERVERS_MAX},
	{"server", 0, LOCUS_DELEGATE_SERVERS_MAX - 1},
	{"slots", 1, LOCUS_DELEGATE_SERVERS_MAX},
	{"slot", 0, LOCUS_DELEGATE_SERVERS_MAX - 1},
	{"lines", 1, LOCUS_DELEGATE_LINES_MAX},
	{"queue", 1, LOCUS_DELEGATE_QUEUE_MAX},
	{"bound", 1, UINT32_MAX},
	{"capacity", 1, MPSC_CAPACITY_MAX},
};

/* The range of option `opt` ("name=value"), or NULL if it is not numeric. */
static const struct range *range_of(const char *opt)
{
	size_t len = strcspn(opt, "=");
	if (opt[len] != '=')
		return NULL;
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (strlen(ranges[i].name) == len && memcmp(ranges[i].name, opt, len) == 0)
			return &ranges[i];
	return NULL;
}

/*
 * If opt is "name=N": 1 and *out = N when N is a decimal number within
 * name's range, -1 when it is not; 0 if opt is not name=.
 */
static int num_option(const char *opt, const char *name, uint32_t *out)
{
	size_t len = strlen(name);
	if (strncmp(opt, name, len) != 0 || opt[len] != '=')
		return 0;
	const struct range *r = range_of(opt);
	return parse_num_u32(opt + len + 1, r->min, r->max, out) == 0 ? 1 : -1;
}

static int ttas_option(struct opts *o, const char *opt)
{
	return lock_kind_option(LOCUS_LOCK_TTAS, opt, &o->lock);
}

static int tas_option(struct opts *o, const char *opt)
{
	return lock_kind_option(LOCUS_LOCK_TAS, opt, &o->lock);
}

static int futex_option(struct opts *o, const char *opt)
{
	return lock_kind_option(LOCUS_LOCK_FUTEX, opt, &o->lock);
}

static int mcs_option(struct opts *o, const char *opt)
{
	return lock_kind_option(LOCUS_LOCK_MCS, opt, &o->lock);
}

static int ticket_option(struct opts *o, const char *opt)
{
	return lock_kind_option(LOCUS_LOCK_TICKET, opt, &o->lock);
}

static int clh_option(struct opts *o, const char *opt)
{
	return lock_kind_option(LOCUS_LOCK_CLH, opt, &o->lock);
}

static int server_option(struct opts *o, const char *opt)
{
	int r = num_option(opt, "servers", &o->servers);
	return r ? r : num_option(opt, "server", &o->server);
}

static int async_option(struct opts *o, const char *opt)
{
	int r = server_option(o, opt);
	if (!r)
		r = num_option(opt, "lines", &o->lines);
	if (!r)
		r = num_option(opt, "queue", &o->queue);
	if (!r && strcmp(opt, "direct") == 0) {
		o->queue = 0;
		r = 1;
	}
	return r;
}

static int mpsc_option(struct opts *o, const char *opt)
{
	struct mpsc_opts *m = &o->mpsc;
	if (strcmp(opt, "lockfree") == 0 || strcmp(opt, "locked") == 0) {
		m->lockfree = opt[4] == 'f';
		return 1;
	}
	if (strcmp(opt, "zerocopy") == 0 || strcmp(opt, "copy") == 0) {
		m->zerocopy = opt[0] == 'z';
		return 1;
	}
	/* The seed's names for two of the waiting policies (wait.h parses the rest). */
	if (strcmp(opt, "spinblock") == 0 || strcmp(opt, "block") == 0) {
		o->wait.kind = opt[0] == 's' ? LOCUS_WAIT_SPINPARK : LOCUS_WAIT_PARK;
		return 1;
	}
	if (strcmp(opt, "batch") == 0 || strcmp(opt, "nobatch") == 0) {
		m->batch = opt[0] == 'b';
		return 1;
	}
	return num_option(opt, "capacity", &m->capacity);
}

static int flat_option(struct opts *o, const char *opt)
{
	static const char *const policies[] = {[DL_FLAT_QUEUE] = "queue",
					       [DL_FLAT_BLOCKED] = "blocked",
					       [DL_FLAT_DOORBELL] = "doorbell"};
	for (uint32_t p = DL_FLAT_QUEUE; p <= DL_FLAT_DOORBELL; p++)
		if (strcmp(opt, policies[p]) == 0) {
			o->policy = p;
			return 1;
		}
	int r = num_option(opt, "bound", &o->bound);
	if (r > 0)
		o->policy = DL_FLAT_BOUND;
	if (!r)
		r = num_option(opt, "slots", &o->servers);
	if (!r)
		r = num_option(opt, "slot", &o->server);
	if (!r)
		r = num_option(opt, "lines", &o->lines);
	return r;
}

static int combine_option(struct opts *o, const char *opt)
{
	return num_option(opt, "pass", &o->pass);
}

#ifdef LOCUS_HAVE_STM
static int stm_option(struct opts *o, const char *opt)
{
	if (strcmp(opt, "ml_wt") == 0 || strcmp(opt, "gl_wt") == 0 ||
	    strcmp(opt, "serialirr") == 0) {
		o->method = opt;
		return 1;
	}
	if (strcmp(opt, "admit") == 0 || strcmp(opt, "strict") == 0) {
		if (opt[0] == 's')
			o->lock.flags |= LOCK_STRICT;
		else
			o->lock.flags &= ~LOCK_STRICT;
		return 1;
	}
	return 0;
}
#endif

/* ---- locks ---------------------------------------------------------------- */

static int lock_open(locus_cs *cs, const struct opts *o)
{
	int rc = lock_init(&cs->u.lock, cs->m->kind, &o->wait);
	if (rc) {
		fail("%s: cannot initialize: %s", cs->m->name, strerror(rc));
		return -1;
	}
	lock_apply_opts(&cs->u.lock, &o->lock);
	return 0;
}

static uint64_t lock_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	lock_lock(&cs->u.lock);
	uint64_t r = fn(cs->state, a, b, c);
	lock_unlock(&cs->u.lock);
	return r;
}

/* A lock kind's own run: its functions called directly, not through
   lock_lock's switch (one indirect jump fewer at each lock and unlock). */
#define KIND_RUN(kind, lockf, unlockf)                                                             \
	static uint64_t kind##_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)  \
	{                                                                                          \
		lockf(&cs->u.lock);                                                                \
		uint64_t r = fn(cs->state, a, b, c);                                               \
		unlockf(&cs->u.lock);                                                              \
		return r;                                                                          \
	}
KIND_RUN(tas, tas_lock, word_unlock)
KIND_RUN(ttas, ttas_lock, word_unlock)
KIND_RUN(futex, futex_lock, word_unlock)
KIND_RUN(ticket, ticket_lock, ticket_unlock)
KIND_RUN(mcs, mcs_lock_inline, mcs_unlock_inline)
KIND_RUN(clh, clh_lock_inline, clh_unlock_inline)

static void lock_close(locus_cs *cs)
{
	lock_destroy(&cs->u.lock);
}

/* ---- combining ------------------------------------------------------------ */

static int oyama_open(locus_cs *cs, const struct opts *o)
{
	return oyama_init(&cs->u.oyama, &o->wait, o->pass);
}

static uint64_t oyama_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	return oyama_combine(&cs->u.oyama, fn, cs->state, a, b, c);
}

static void oyama_close(locus_cs *cs)
{
	oyama_destroy(&cs->u.oyama);
}

static int ccsynch_open(locus_cs *cs, const struct opts *o)
{
	return ccsynch_init(&cs->u.ccsynch, &o->wait, o->pass);
}

static uint64_t ccsynch_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	return ccsynch_combine(&cs->u.ccsynch, fn, cs->state, a, b, c);
}

static void ccsynch_close(locus_cs *cs)
{
	ccsynch_destroy(&cs->u.ccsynch);
}

/* ---- delegation ----------------------------------------------------------- */

static int dl_open(locus_cs *cs, const struct opts *o)
{
	char err[256];
	if (dl_acquire(o->servers, err, sizeof(err)) != 0) {
		fail("%s: %s", cs->m->name, err);
		return -1;
	}
	unsigned n = dl_nservers();
	if (o->server != UINT32_MAX && o->server >= n) {
		fail("%s: server=%u but the runtime has %u server%s (0..%u)", cs->m->name,
		     o->server, n, n == 1 ? "" : "s", n - 1);
		dl_release();
		return -1;
	}
	cs->u.dl.server = o->server != UINT32_MAX ? o->server : dl_next_server();
	cs->u.dl.cfg.serial = dl_cfg_serial();
	cs->u.dl.cfg.lines = o->lines;
	cs->u.dl.cfg.queue = o->queue == UINT32_MAX ? 2 * o->lines : o->queue;
	cs->u.dl.cfg.wait = o->wait;
	return 0;
}

/* Closing drains the closing thread, so its own posts complete and call back. */
static void dl_close(locus_cs *cs)
{
	(void)cs;
	locus_cs_drain();
	dl_release();
}

static int dl_stats(const locus_cs *cs, struct locus_cs_server_stats *out)
{
	struct locus_delegate_stats st;

	if (locus_delegate_stats(cs->u.dl.server, &st))
		return -1;
	*out = (struct locus_cs_server_stats){
		.requests = st.requests, .busy_ns = st.busy_ns, .alive_ns = st.alive_ns};
	return 0;
}

static uint64_t ffwd_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	return dl_ffwd_run(cs->u.dl.server, &cs->u.dl.cfg.wait, fn, cs->state, a, b, c);
}

static uint64_t async_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	return dl_async_run(cs->u.dl.server, &cs->u.dl.cfg, fn, cs->state, a, b, c);
}

static int async_post(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		      void *ctx)
{
	return dl_async_post(cs->u.dl.server, &cs->u.dl.cfg, fn, cs->state, a, b, c, cb, ctx);
}

/* ---- flat delegation ------------------------------------------------------ */

/*
 * The CPU count is read once per process: sysconf reads it from sysfs each
 * time (about 10 us), which made opening a million flat executors take 10 s.
 */
static unsigned online_cpus(void)
{
	static unsigned cached;
	unsigned n = ld_relaxed(&cached);
	if (n == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus > 0 ? (unsigned)cpus : 1;
		st_relaxed(&cached, n);
	}
	return n;
}

static int flat_open(locus_cs *cs, const struct opts *o)
{
	char err[256];
	if (dl_flat_acquire(o->servers, online_cpus(), err, sizeof(err)) != 0) {
		fail("flat: %s", err);
		return -1;
	}
	unsigned n = dl_flat_nslots();
	if (o->server != UINT32_MAX && o->server >= n) {
		fail("flat: slot=%u but there are %u slots (0..%u)", o->server, n, n - 1);
		dl_flat_release();
		return -1;
	}
	cs->u.dl.server = o->server != UINT32_MAX ? o->server : dl_flat_next_slot();
	cs->u.dl.cfg = (struct dl_async_cfg){.serial = dl_cfg_serial(),
					     .lines = o->lines,
					     .queue = o->policy == DL_FLAT_QUEUE ? 2 * o->lines : 0,
					     .wait = o->wait,
					     .policy = o->policy,
					     .bound = o->bound};
	return 0;
}

static void flat_close(locus_cs *cs)
{
	(void)cs;
	locus_cs_drain();
	dl_flat_release();
}

/* ---- mpsc ----------------------------------------------------------------- */

static int mpsc_cs_open(locus_cs *cs, const struct opts *o)
{
	char err[256];
	struct mpsc_opts mo = o->mpsc;
	mo.wait = o->wait;
	cs->u.mpsc = mpsc_open(&mo, err, sizeof(err));
	if (!cs->u.mpsc) {
		fail("mpsc: %s", err);
		return -1;
	}
	return 0;
}

static uint64_t mpsc_cs_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	return mpsc_run(cs->u.mpsc, fn, cs->state, a, b, c);
}

static int mpsc_cs_post(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
			void *ctx)
{
	return mpsc_post(cs->u.mpsc, fn, cs->state, a, b, c, cb, ctx);
}

static int mpsc_cs_stats(const locus_cs *cs, struct locus_cs_server_stats *out)
{
	struct mpsc_stats st;

	mpsc_stats(cs->u.mpsc, &st);
	*out = (struct locus_cs_server_stats){
		.requests = st.requests, .polls = st.polls, .empty_polls = st.empty_polls};
	return 0;
}

static void mpsc_cs_close(locus_cs *cs)
{
	locus_cs_drain();
	mpsc_close(cs->u.mpsc);
}

/* ---- stm ------------------------------------------------------------------ */
#ifdef LOCUS_HAVE_STM

static int stm_open(locus_cs *cs, const struct opts *o)
{
	char err[256];
	if (locus_stm_use(o->method, err, sizeof(err)) != 0) {
		fail("stm: %s", err);
		return -1;
	}
	cs->u.stm_strict = (o->lock.flags & LOCK_STRICT) != 0;
	return 0;
}

static uint64_t stm_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	if (cs->u.stm_strict)
		return stm_run_strict(fn, cs->state, a, b, c);
	return locus_stm_run(fn, cs->state, a, b, c);
}

static void stm_close(locus_cs *cs)
{
	(void)cs;
}
#endif

/* ---- spec formatting: each row prints its own options ---------------------- */

/* Append to buf at *n, bounded (snprintf semantics; the spec buffer is ample). */
#define APPEND(buf, len, n, ...)                                                                   \
	((n) += snprintf((buf) + (n), (size_t)(n) < (len) ? (len) - (size_t)(n) : 0, __VA_ARGS__))

static int fmt_wait(const struct opts *o, char *buf, size_t len)
{
	return lock_wait_format(&o->wait, buf, len);
}

/* Every lock row: the policy, then its kind's own options (lock.c prints both). */
static int fmt_lock(const locus_cs *cs, const struct opts *o, char *buf, size_t len)
{
	int n = fmt_wait(o, buf, len);
	return n + lock_kind_format(cs->m->kind, &o->lock, buf + n,
				    (size_t)n < len ? len - (size_t)n : 0);
}

static int fmt_combine(const locus_cs *cs, const struct opts *o, char *buf, size_t len)
{
	(void)cs;
	int n = fmt_wait(o, buf, len);
	return APPEND(buf, len, n, ",pass=%u", o->pass);
}

/* servers= is what runs, not what was asked: a spec without it joins the runtime. */
static int fmt_servers(const locus_cs *cs, const struct opts *o, char *buf, size_t len)
{
	int n = 0;
	APPEND(buf, len, n, ",servers=%u", dl_nservers());
	if (o->server != UINT32_MAX)
		APPEND(buf, len, n, ",server=%u", o->server);
	return n;
}

static int fmt_ffwd(const locus_cs *cs, const struct opts *o, char *buf, size_t len)
{
	int n = fmt_wait(o, buf, len);
	return n + fmt_servers(cs, o, buf + n, (size_t)n < len ? len - (size_t)n : 0);
}

static int fmt_async(const locus_cs *cs, const struct opts *o, char *buf, size_t len)
{
	int n = fmt_wait(o, buf, len);
	APPEND(buf, len, n, ",lines=%u", cs->u.dl.cfg.lines);
	if (cs->u.dl.cfg.queue)
		APPEND(buf, len, n, ",queue=%u", cs->u.dl.cfg.queue);
	else
		APPEND(buf, len, n, ",direct");
	return n + fmt_servers(cs, o, buf + n, (size_t)n < len ? len - (size_t)n : 0);
}

static int fmt_flat(const locus_cs *cs, const struct opts *o, char *buf, size_t len)
{
	static const char *const policies[] = {"", "queue", "blocked", "doorbell", "bound"};
	int n = fmt_wait(o, buf, len);
	APPEND(buf, len, n, ",%s", policies[o->policy]);
	if (o->policy == DL_FLAT_BOUND)
		APPEND(buf, len, n, "=%u", o->bound);
	APPEND(buf, len, n, ",lines=%u,slots=%u", o->lines, dl_flat_nslots());
	if (o->server != UINT32_MAX)
		APPEND(buf, len, n, ",slot=%u", o->server);
	return n;
}

static int fmt_mpsc(const locus_cs *cs, const struct opts *o, char *buf, size_t len)
{
	(void)cs;
	int n = 0;
	APPEND(buf, len, n, "%s,%s,", o->mpsc.lockfree ? "lockfree" : "locked",
	       o->mpsc.zerocopy ? "zerocopy" : "copy");
	n += fmt_wait(o, buf + n, (size_t)n < len ? len - (size_t)n : 0);
	return APPEND(buf, len, n, ",%s,capacity=%u", o->mpsc.batch ? "batch" : "nobatch",
		      o->mpsc.capacity);
}

#ifdef LOCUS_HAVE_STM
static int fmt_stm(const locus_cs *cs, const struct opts *o, char *buf, size_t len)
{
	(void)cs;
	return snprintf(buf, len, "%s,%s", o->method,
			o->lock.flags & LOCK_STRICT ? "strict" : "admit");
}
#endif

/* ---- the table ------------------------------------------------------------ */

#define STR_(x) #x
#define STR(x)	STR_(x)
#define WAIT_OPTS                                                                                  \
	"spinpark (default) | spin | park, spins=N (default " STR(LOCUS_WAIT_SPINS_DEFAULT) ")"

/* tas, ttas, futex: the reservation for a waiter that has waited 10 ms. */
#define ANTISTARVE_OPTS                                                                            \
	", antistarve (default: a waiter that has waited 10 ms gets the lock reserved) | barge "   \
	"(plain barging)"

/* ticket, clh, mcs: at most N threads in the queue, the rest wait outside. */
#define ADMIT_OPTS                                                                                 \
	", admit (default: at most as many threads in the queue as there are CPUs, the rest "      \
	"wait outside, asleep) | admit=N (at most N, N >= 2) | strict (every thread queues)"

/* A lock mechanism: name, lock kind, description, extra options and their parser. */
#define LOCK_ROW(nm, k, sum, extra, parser)                                                        \
	{                                                                                          \
		.name = #nm, .summary = sum, .options = WAIT_OPTS extra, .takes_wait = 1,          \
		.option = parser, .open = lock_open, .run = nm##_run, .close = lock_close,         \
		.format = fmt_lock, .kind = k                                                      \
	}

#define COMBINE_ROW(nm, sum, prefix)                                                               \
	{                                                                                          \
		.name = nm, .summary = sum,                                                        \
		.options = WAIT_OPTS ", pass=N requests per combiner (default " STR(               \
			LOCUS_COMBINE_PASS_DEFAULT) ")",                                           \
		.takes_wait = 1, .option = combine_option, .open = prefix##_open,                  \
		.run = prefix##_run, .close = prefix##_close, .format = fmt_combine                \
	}

#define ASYNC_OPTS                                                                                 \
	WAIT_OPTS ", lines=N (default " STR(LOCUS_DELEGATE_LINES_DEFAULT) ", at most " STR(        \
		LOCUS_DELEGATE_LINES_MAX) "), queue=N (default 2 x lines, at most " STR(LOCUS_DELEGATE_QUEUE_MAX) ") | direct, servers=N, server=K"

#define FLAT_OPTS                                                                                  \
	"queue (default) | blocked | doorbell | bound=K, lines=N (default " STR(                   \
		LOCUS_DELEGATE_LINES_DEFAULT) "), slots=N (default: CPUs), slot=K; wait options "  \
					      "are accepted but unused: a blocked client serves "  \
					      "the slot or yields"

static const struct mech mechs[] = {
	{.name = "mutex",
	 .summary = "pthread mutex (baseline; glibc's own waiting)",
	 .open = lock_open,
	 .run = lock_run,
	 .close = lock_close,
	 .kind = LOCUS_LOCK_MUTEX},
	LOCK_ROW(tas, LOCUS_LOCK_TAS, "test-and-set spin lock", ANTISTARVE_OPTS, tas_option),
	LOCK_ROW(ttas, LOCUS_LOCK_TTAS, "test-and-test-and-set lock with exponential backoff",
		 ANTISTARVE_OPTS ", backoff (default) | nobackoff, backoff_max=N (default " STR(
			 TTAS_BACKOFF_MAX_DEFAULT) ")",
		 ttas_option),
	LOCK_ROW(ticket, LOCUS_LOCK_TICKET, "FIFO ticket lock", ADMIT_OPTS, ticket_option),
	LOCK_ROW(mcs, LOCUS_LOCK_MCS,
		 "MCS queue lock with concurrency restriction for oversubscription",
		 ", cr (default) | nocr (plain FIFO MCS)" ADMIT_OPTS, mcs_option),
	LOCK_ROW(clh, LOCUS_LOCK_CLH, "CLH queue lock", ADMIT_OPTS, clh_option),
	LOCK_ROW(futex, LOCUS_LOCK_FUTEX, "three-state futex mutex", ANTISTARVE_OPTS, futex_option),
	COMBINE_ROW("oyama", "Oyama combining lock: the holder runs the waiters' sections", oyama),
	COMBINE_ROW("ccsynch", "CC-Synch combining queue", ccsynch),
	{.name = "ffwd",
	 .summary = "synchronous delegation to a server thread (one request line per client)",
	 .options =
		 WAIT_OPTS ", servers=N (runtime size, default 1), server=K (default: round robin)",
	 .takes_wait = 1,
	 .option = server_option,
	 .open = dl_open,
	 .run = ffwd_run,
	 .close = dl_close,
	 .stats = dl_stats,
	 .format = fmt_ffwd},
	{.name = "async",
	 .summary = "asynchronous dedicated delegation: post returns at once, callback later",
	 .options = ASYNC_OPTS,
	 .takes_wait = 1,
	 .option = async_option,
	 .open = dl_open,
	 .run = async_run,
	 .post = async_post,
	 .close = dl_close,
	 .stats = dl_stats,
	 .format = fmt_async,
	 .drain = dl_async_drain},
	{.name = "flat",
	 .summary = "asynchronous flat delegation: no server threads, clients serve the slots",
	 .options = FLAT_OPTS,
	 .takes_wait = 1,
	 .option = flat_option,
	 .open = flat_open,
	 .run = async_run,
	 .post = async_post,
	 .close = flat_close,
	 .format = fmt_flat,
	 .drain = dl_flat_drain},
	{.name = "mpsc",
	 .summary = "a server thread per executor, fed by one multi-producer queue (post is "
		    "asynchronous)",
	 .options = "lockfree (default) | locked, zerocopy (default) | copy, " WAIT_OPTS
		    " (spinpark and park also spelled spinblock, block), batch | nobatch "
		    "(default), capacity=N (initial, grows)",
	 .takes_wait = 1,
	 .option = mpsc_option,
	 .open = mpsc_cs_open,
	 .run = mpsc_cs_run,
	 .post = mpsc_cs_post,
	 .close = mpsc_cs_close,
	 .stats = mpsc_cs_stats,
	 .format = fmt_mpsc,
	 .drain = mpsc_drain_thread},
#ifdef LOCUS_HAVE_STM
	{.name = "stm",
	 .summary = "GCC transactional memory (libitm); method is process-wide",
	 .options = "ml_wt (default) | gl_wt | serialirr, admit (default: at most as many "
		    "threads in transactions at once as CPUs, process-wide; the rest wait "
		    "asleep, FIFO) | strict (no limit)",
	 .option = stm_option,
	 .open = stm_open,
	 .run = stm_run,
	 .close = stm_close,
	 .format = fmt_stm},
#endif
};

#define NMECHS (sizeof(mechs) / sizeof(mechs[0]))

/* ---- a mechanism another library provides (locus_cs_provide) --------------- */

static const struct locus_cs_provider *provider;
static struct mech provided; /* its row, made when it registers */

static const struct locus_cs_provider *the_provider(void)
{
	return ld_acquire(&provider);
}

static int ext_open(locus_cs *cs, const struct opts *o)
{
	(void)o;
	const char *colon = strchr(cs->spec, ':');
	char msg[ERR_MAX] = "";
	cs->u.ext = the_provider()->open(cs->state, colon ? colon + 1 : NULL, msg, sizeof(msg));
	if (!cs->u.ext)
		fail("%s", msg);
	return cs->u.ext ? 0 : -1;
}

static uint64_t ext_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	return the_provider()->run(cs->u.ext, fn, a, b, c);
}

static int ext_post(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		    void *ctx)
{
	return the_provider()->post(cs->u.ext, fn, a, b, c, cb, ctx);
}

static void ext_close(locus_cs *cs)
{
	the_provider()->close(cs->u.ext);
}

static int ext_drain(void)
{
	const struct locus_cs_provider *p = the_provider();
	if (p && p->drain)
		p->drain();
	return 0;
}

int locus_cs_provide(const struct locus_cs_provider *p)
{
	if (p && the_provider())
		return -1;
	if (p)
		provided = (struct mech){.name = p->name,
					 .summary = p->summary,
					 .options = p->options,
					 .open = ext_open,
					 .run = ext_run,
					 .post = ext_post,
					 .close = ext_close,
					 .drain = ext_drain};
	st_release(&provider, p);
	return 0;
}

/* The rows, then the provided one when there is one. */
static const struct mech *mech_at(size_t i)
{
	if (i < NMECHS)
		return &mechs[i];
	return i == NMECHS && the_provider() ? &provided : NULL;
}

static const char *names[NMECHS + 2];

const char *const *locus_cs_mechanisms(void)
{
	/* Filling the same constant pointers from several threads is a benign race;
	   do it with relaxed atomics so sanitizers agree. */
	size_t i = 0;
	for (const struct mech *m; (m = mech_at(i)); i++)
		st_relaxed(&names[i], m->name);
	st_relaxed(&names[i], (const char *)NULL);
	return names;
}

static void known_list(char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; mech_at(i) && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s", i ? ", " : "", mech_at(i)->name);
}

static const struct mech *find_mech(const char *name, size_t len)
{
	for (size_t i = 0; mech_at(i); i++)
		if (strlen(mech_at(i)->name) == len && memcmp(mech_at(i)->name, name, len) == 0)
			return mech_at(i);
	return NULL;
}

static uint64_t guarded_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c);

/* A post to a mechanism that runs sections in place: the section now, then its callback. */
static int post_by_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		       void *ctx)
{
	uint64_t r = cs->run(cs, fn, a, b, c);
	if (cb)
		cb(ctx, r);
	return 0;
}

/* An in-place mechanism on state the provider keeps runs each section
   between its enter and leave; one that runs sections elsewhere cannot. */
static int guard(locus_cs *cs)
{
	const struct locus_cs_provider *p = the_provider();
	if (!p || cs->m == &provided || !p->owns || !p->owns(cs->state))
		return 0;
	if (cs->m->post || cs->m->stats) {
		fail("%s runs sections on this process's own threads: state %p is shared with "
		     "other processes (%s's keeping); use %s, or a lock",
		     cs->m->name, cs->state, p->name, p->name);
		return -1;
	}
	cs->run = guarded_run;
	return 0;
}

static uint64_t guarded_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	const struct locus_cs_provider *p = the_provider();
	p->enter(cs->state);
	uint64_t r = cs->m->run(cs, fn, a, b, c);
	p->leave(cs->state);
	return r;
}

/* Apply every option of `list` (comma-separated, may be NULL); 0 or -1 with errbuf set. */
static int apply_options(const struct mech *m, char *list, struct opts *o)
{
	if (!list)
		return 0;
	char *save = NULL;
	if (*list == '\0' || *list == ',' || list[strlen(list) - 1] == ',' || strstr(list, ",,")) {
		fail("%s: empty option in '%s'", m->name, list);
		return -1;
	}
	for (char *opt = strtok_r(list, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		int r = m->takes_wait ? locus_wait_option(&o->wait, opt) : 0;
		if (r == 0 && m->option)
			r = m->option(o, opt);
		if (r < 0) {
			const struct range *rg = range_of(opt);
			if (rg)
				fail("%s: bad value in '%s': %s takes a whole number in %u..%u",
				     m->name, opt, rg->name, rg->min, rg->max);
			else
				fail("%s: bad value in option '%s'", m->name, opt);
			return -1;
		}
		if (r == 0) {
			fail("%s: unknown option '%s' (%s takes: %s)", m->name, opt, m->name,
			     m->options ? m->options : "no options");
			return -1;
		}
	}
	return 0;
}

/* The spec of an open executor: its name, then what its row's formatter prints. */
static void canonical_spec(locus_cs *cs, const struct opts *o)
{
	if (cs->m == &provided)
		return; /* its options as given */
	int n = snprintf(cs->spec, sizeof(cs->spec), "%s", cs->m->name);
	if (cs->m->format) {
		cs->spec[n++] = ':';
		cs->m->format(cs, o, cs->spec + n, sizeof(cs->spec) - (size_t)n);
	}
}

locus_cs *locus_cs_open(const char *spec, void *state)
{
	char known[256];
	known_list(known, sizeof(known));
	if (!spec || !*spec) {
		fail("empty mechanism spec; known mechanisms: %s", known);
		return NULL;
	}
	if (strlen(spec) >= SPEC_MAX) {
		fail("mechanism spec longer than %d characters", SPEC_MAX - 1);
		return NULL;
	}
	const char *colon = strchr(spec, ':');
	size_t namelen = colon ? (size_t)(colon - spec) : strlen(spec);
	const struct mech *m = find_mech(spec, namelen);
	if (!m && namelen == 3 && strncmp(spec, "stm", 3) == 0) {
		fail("stm is not available in this build (it needs GCC's -fgnu-tm, which the "
		     "sanitizer builds cannot use); known mechanisms: %s",
		     known);
		return NULL;
	}
	if (!m) {
		fail("unknown mechanism '%.*s'; known mechanisms: %s", (int)namelen, spec, known);
		return NULL;
	}
	struct opts o = {.wait = locus_wait_default(),
			 .lock = LOCK_OPTS_DEFAULT,
			 .pass = LOCUS_COMBINE_PASS_DEFAULT,
			 .method = "ml_wt",
			 .server = UINT32_MAX,
			 .lines = LOCUS_DELEGATE_LINES_DEFAULT,
			 .queue = UINT32_MAX,
			 .policy = DL_FLAT_QUEUE,
			 .bound = 1};
	mpsc_opts_default(&o.mpsc);
	char list[SPEC_MAX];
	if (colon)
		snprintf(list, sizeof(list), "%s", colon + 1);
	if (m != &provided && apply_options(m, colon ? list : NULL, &o) != 0)
		return NULL;

	locus_cs *cs = aligned_alloc(LOCUS_CACHELINE, sizeof(*cs));
	if (!cs) {
		fail("out of memory");
		return NULL;
	}
	memset(cs, 0, sizeof(*cs));
	cs->m = m;
	cs->run = m->run;
	cs->post = m->post ? m->post : post_by_run;
	cs->state = state;
	snprintf(cs->spec, sizeof(cs->spec), "%s", spec); /* the provider reads its options */
	if (m->open(cs, &o) != 0) {
		free(cs);
		return NULL;
	}
	if (guard(cs) != 0) {
		m->close(cs);
		free(cs);
		return NULL;
	}
	/* After open: a delegation spec reports the runtime it joined. */
	canonical_spec(cs, &o);
	errmsg = NULL;
	return cs;
}

/* A NULL executor or function would crash later, maybe on a server thread: stop here. */
static void check_call(const char *call, const locus_cs *cs, locus_fn fn)
{
	if (!cs)
		sync_die("%s: the executor is NULL", call);
	if (!fn)
		sync_die("%s: the section function is NULL (executor \"%s\")", call, cs->spec);
}

uint64_t locus_cs_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	check_call("locus_cs_run", cs, fn);
	return cs->run(cs, fn, a, b, c);
}

int locus_cs_post(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		  void *ctx)
{
	check_call("locus_cs_post", cs, fn);
	return cs->post(cs, fn, a, b, c, cb, ctx);
}

/*
 * Each asynchronous family keeps its own per-thread state and names its
 * drain in its rows. A callback run by one family's drain may post to
 * another (or the same) family, so repeat until a whole round over the
 * families finds nothing outstanding anywhere.
 */
void locus_cs_drain(void)
{
	int had;
	do {
		had = 0;
		for (size_t i = 0; mech_at(i); i++)
			if (mech_at(i)->drain)
				had |= mech_at(i)->drain();
	} while (had);
}

void locus_cs_close(locus_cs *cs)
{
	if (!cs)
		return;
	cs->m->close(cs);
	free(cs);
}

const char *locus_cs_spec(const locus_cs *cs)
{
	return cs->spec;
}

const char *locus_cs_name(const locus_cs *cs)
{
	return cs->m->name;
}

int locus_cs_server_stats(const locus_cs *cs, struct locus_cs_server_stats *out)
{
	memset(out, 0, sizeof(*out));
	return cs->m->stats ? cs->m->stats(cs, out) : -1;
}

void locus_cs_client_stats(struct locus_cs_client_stats *out)
{
	dl_client_stats(&out->polled, &out->ready);
}

int locus_cs_is_async(const locus_cs *cs)
{
	return cs->m->post != NULL;
}

void locus_cs_usage(FILE *out)
{
	for (size_t i = 0; mech_at(i); i++) {
		fprintf(out, "  %-8s %s\n", mech_at(i)->name, mech_at(i)->summary);
		if (mech_at(i)->options)
			fprintf(out, "  %-8s   options: %s\n", "", mech_at(i)->options);
	}
}
