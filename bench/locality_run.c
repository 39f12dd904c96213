/*
 * locus-bench locality: one measurement. T client threads start together and
 * run the core loop — thread-local walk, then the critical section through
 * the executor, waiting for its result — until the main thread raises the
 * stop flag D seconds later.
 *
 * CPU use is the process's CPU time over the interval (CLOCK_PROCESS_CPUTIME_ID:
 * every client and server thread, spinning included, sleeping not), which the
 * seed measured as TSC cycles while each thread was scheduled; it is turned
 * into cycles with the TSC rate measured over the same interval.
 *
 * Afterwards each marked shared line must have been incremented once per
 * iteration and no other line at all: a lost update, or a section that ran
 * twice or not at all, fails the measurement instead of giving a figure.
 */
#include "locality.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "common/atomic.h"
#include "common/clock.h"
#include "locus/cs.h"
#include "locus/delegate.h"

#define MAX_STATS_SERVERS 64

struct bench {
	locus_cs *cs;
	struct locality_cs_state st;
	size_t n1, msg;
	pthread_barrier_t start;
	/* On its own line: every client reads it every iteration; only main writes it, once. */
	_Alignas(LOCUS_CACHELINE) int stop; /* relaxed atomic */
};

struct client {
	_Alignas(LOCUS_CACHELINE) struct bench *b;
	struct walk_line *priv; /* n1 lines, this thread's alone */
	char *msg;		/* the message it sends, msg bytes */
	uint64_t iterations;
	uint64_t sink;
	double end; /* when it saw the stop flag */
	pthread_t tid;
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct bench *b = c->b;
	uint64_t iterations = 0, sink = 0;

	pthread_barrier_wait(&b->start);
	while (!ld_relaxed(&b->stop)) {
		sink += walk_read(c->priv, b->n1);
		sink += locus_cs_run(b->cs, locality_cs, (uint64_t)(uintptr_t)c->msg, b->msg, 0);
		iterations++;
	}
	c->end = bench_now();
	c->iterations = iterations;
	c->sink = sink;
	return NULL;
}

static size_t round_line(size_t n)
{
	return (n + WALK_LINE - 1) / WALK_LINE * WALK_LINE;
}

/*
 * One region: the shared array, the section's message buffer, then each
 * client's private array and message. Every array is linked into its own
 * random cycle (the shared one from seed 0, client i's from seed i + 1).
 */
static int setup_memory(struct walk_region *reg, const struct locality_params *p, struct bench *b,
			struct client *c, struct locality_result *r)
{
	size_t shared = p->n2 * WALK_LINE + round_line(p->msg);
	size_t per_client = p->n1 * WALK_LINE + round_line(p->msg);
	char *at;

	if (walk_region_map(reg, shared + per_client * p->threads)) {
		snprintf(r->out.err, sizeof(r->out.err), "cannot map %zu bytes for the arrays: %s",
			 shared + per_client * p->threads, strerror(errno));
		return -1;
	}
	r->pages = reg->pages;
	at = reg->base;
	b->st.lines = (struct walk_line *)at;
	b->st.n2 = p->n2;
	walk_link(b->st.lines, p->n2, 0);
	walk_mark(b->st.lines, p->n2, p->modify);
	at += p->n2 * WALK_LINE;
	b->st.msgbuf = at;
	at += round_line(p->msg);
	for (unsigned i = 0; i < p->threads; i++) {
		c[i].priv = (struct walk_line *)at;
		walk_link(c[i].priv, p->n1, i + 1);
		at += p->n1 * WALK_LINE;
		c[i].msg = at;
		memset(c[i].msg, (int)(i + 1), p->msg);
		at += round_line(p->msg);
	}
	return 0;
}

/*
 * A delegation server measures the time it spends in passes that find work;
 * mpsc, like seed 000's server, counts the dequeues that found the queue
 * empty (after which it waits), and busy is the share of the others.
 */
static void server_busy(const struct locus_cs_server_stats *s0,
			const struct locus_cs_server_stats *s1, struct locality_result *r)
{
	if (s1->alive_ns > s0->alive_ns) {
		r->server_busy =
			(double)(s1->busy_ns - s0->busy_ns) / (double)(s1->alive_ns - s0->alive_ns);
		r->busy_basis = LOCALITY_BUSY_TIME;
	} else if (s1->polls > s0->polls) {
		r->server_busy = 1.0 - (double)(s1->empty_polls - s0->empty_polls) /
					       (double)(s1->polls - s0->polls);
		r->busy_basis = LOCALITY_BUSY_DEQUEUES;
	}
}

/*
 * Start the clients, let them run for the duration, stop and join them.
 * On a failed pthread_create the started threads stay blocked at the barrier:
 * this runs in a child process that exits right after, which ends them.
 */
static int run_clients(struct bench *b, struct client *c, const struct locality_params *p,
		       struct locality_result *r)
{
	struct locus_cs_server_stats s0, s1;
	int has_server;
	uint64_t tsc0, tsc1;
	double start, end = 0, cpu0, tsc_t0, tsc_t1;
	int err;

	pthread_barrier_init(&b->start, NULL, p->threads + 1);
	for (unsigned i = 0; i < p->threads; i++) {
		err = pthread_create(&c[i].tid, NULL, client_main, &c[i]);
		if (err) {
			snprintf(r->out.err, sizeof(r->out.err), "starting thread %u of %u: %s",
				 i + 1, p->threads, strerror(err));
			return -1;
		}
	}
	pthread_barrier_wait(&b->start);
	has_server = locus_cs_server_stats(b->cs, &s0) == 0;
	start = bench_now();
	cpu0 = cpu_now();
	tsc0 = bench_tsc();
	tsc_t0 = bench_now();
	bench_sleep_until(start + p->duration);
	st_relaxed(&b->stop, 1);
	for (unsigned i = 0; i < p->threads; i++) {
		pthread_join(c[i].tid, NULL);
		r->iterations += c[i].iterations;
		r->sink += c[i].sink;
		if (c[i].end > end)
			end = c[i].end;
	}
	r->cpu_s = cpu_now() - cpu0;
	tsc1 = bench_tsc();
	tsc_t1 = bench_now();
	if (has_server)
		locus_cs_server_stats(b->cs, &s1);
	r->seconds = end - start;
	r->tsc_ghz = tsc1 > tsc0 && tsc_t1 > tsc_t0
			     ? (double)(tsc1 - tsc0) / ((tsc_t1 - tsc_t0) * NS_PER_S)
			     : 0;
	if (has_server)
		server_busy(&s0, &s1, r);
	pthread_barrier_destroy(&b->start);
	return 0;
}

/* Each marked line was incremented once per iteration, every other line never. */
static uint64_t check_lines(const struct bench *b, uint64_t iterations)
{
	uint64_t bad = 0;

	for (size_t i = 0; i < b->st.n2; i++) {
		const struct walk_line *l = &b->st.lines[i];

		bad += l->count != (l->modify ? iterations : 0);
	}
	return bad;
}

void locality_measure(const struct locality_params *p, struct locality_result *r)
{
	struct bench b = {0};
	struct walk_region reg = {0};
	struct client *c =
		aligned_alloc(LOCUS_CACHELINE, (p->threads ? p->threads : 1) * sizeof(*c));

	memset(r, 0, sizeof(*r));
	r->server_busy = -1;
	if (!c) {
		snprintf(r->out.err, sizeof(r->out.err), "out of memory for %u threads",
			 p->threads);
		return;
	}
	for (unsigned i = 0; i < p->threads; i++)
		c[i] = (struct client){.b = &b};
	b.n1 = p->n1;
	b.msg = p->msg;
	if (setup_memory(&reg, p, &b, c, r))
		goto out;
	b.cs = locus_cs_open(p->mechanism, &b.st);
	if (!b.cs) {
		snprintf(r->out.err, sizeof(r->out.err), "%s", locus_cs_error());
		goto out;
	}
	snprintf(r->spec, sizeof(r->spec), "%s", locus_cs_spec(b.cs));
	/* Dedicated delegation servers start with the executor; mpsc has a thread of its own. */
	r->servers = locus_delegate_servers();
	if (r->servers == 0 && strcmp(locus_cs_name(b.cs), "mpsc") == 0)
		r->servers = 1;
	if (run_clients(&b, c, p, r) == 0) {
		r->bad_lines = check_lines(&b, r->iterations);
		r->out.ok = 1;
	}
	locus_cs_close(b.cs);
out:
	walk_region_unmap(&reg);
	free(c);
}
