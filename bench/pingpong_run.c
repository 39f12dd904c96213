/*
 * locus-bench pingpong: one measurement, in its child process, and the floor
 * as fetchadd measures it (see pingpong.h).
 *
 * The threads wait by reading the line over and over, without a pause
 * instruction: a pause can take a hundred cycles or more, which would be
 * counted in the floor, and the floor is what the hardware allows. The stop
 * flag is on a line of its own, read every STOP_EVERY round trips (messages),
 * so looking at it moves no line between the CPUs.
 */
#define _GNU_SOURCE /* CPU_SET, sched_getaffinity, pthread_setaffinity_np */
#include "pingpong.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "locus/delegate.h"
#include "locus/export.h"

_Static_assert(PINGPONG_MAX_DEPTH == LOCUS_DELEGATE_LINES_MAX,
	       "a ring as deep as the deepest async channel");

#define STOP_EVERY 64
#define DONE	   UINT64_MAX		 /* the last value written: the other thread stops */
#define PATTERN	   0x5bd1e9955bd1e995ull /* a message's payload is its number ^ PATTERN */
#define REQ_WORDS  5			 /* an answered ring's request: fn, state, a, b, c */

/* One cache line: the round trip's word, or a ring slot (0: empty; else its message + 1). */
struct line {
	_Alignas(LOCUS_CACHELINE) uint64_t v;
	uint64_t payload;
};

/*
 * An answered ring's slot: a request as large as an async request line's
 * (deleg.h: a function, its state, three arguments and the number that
 * publishes them, 48 bytes) and the answer the consumer writes back beside
 * it. v is 2k + 1 while message k waits for its answer, 2k + 2 once answered.
 */
struct req_line {
	_Alignas(LOCUS_CACHELINE) uint64_t v;
	uint64_t w[REQ_WORDS];
	uint64_t answer;
};
_Static_assert(sizeof(struct req_line) == LOCUS_CACHELINE, "a slot is one cache line");

struct pp {
	const struct pingpong_params *p;
	struct line word;
	struct line *slots;
	struct req_line *reqs; /* the answered ring's slots */
	pthread_barrier_t start;
	int err[2];	   /* pinning, before the start: errno */
	double t0, end[2]; /* bench_now() */
	uint64_t ops, sent, misordered;
	uint64_t wrong; /* the answered ring: answers the producer found wrong */
	_Alignas(LOCUS_CACHELINE) int stop; /* relaxed; only the main thread writes it */
};

struct side {
	struct pp *pp;
	int which; /* 0: ping (producer), 1: pong (consumer) */
};

const char *pingpong_test_name(enum pingpong_test t)
{
	return t == PINGPONG_ANSWERED ? "answered ring"
	       : t == PINGPONG_RING   ? "ring"
				      : "round trip";
}

const char *pingpong_test_key(enum pingpong_test t)
{
	return t == PINGPONG_ANSWERED ? "answered_ring"
	       : t == PINGPONG_RING   ? "ring"
				      : "round_trip";
}

static int is_ring(enum pingpong_test t)
{
	return t == PINGPONG_RING || t == PINGPONG_ANSWERED;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Writes odd values, waits for the even one after each: counts the round trips. */
static void ping(struct pp *pp)
{
	uint64_t v = 0, n = 0;

	pp->t0 = bench_now();
	do {
		for (int k = 0; k < STOP_EVERY; k++) {
			st_release(&pp->word.v, v + 1);
			while (ld_acquire(&pp->word.v) != v + 2)
				;
			v += 2;
		}
		n += STOP_EVERY;
	} while (!ld_relaxed(&pp->stop));
	pp->end[0] = bench_now();
	st_release(&pp->word.v, DONE);
	pp->ops = n;
}

static void pong(struct pp *pp)
{
	for (uint64_t v = 1;; v += 2) {
		uint64_t x;

		while ((x = ld_acquire(&pp->word.v)) != v && x != DONE)
			;
		if (x == DONE)
			break;
		st_release(&pp->word.v, v + 1);
	}
	pp->end[1] = bench_now();
}

static unsigned next_slot(unsigned i, unsigned depth)
{
	return i + 1 == depth ? 0 : i + 1;
}

/* Fills the ring in order, each slot once the consumer has emptied it. */
static void produce(struct pp *pp)
{
	unsigned depth = pp->p->depth, i = 0;
	uint64_t k = 0;
	struct line *s;

	pp->t0 = bench_now();
	do {
		for (int j = 0; j < STOP_EVERY; j++, k++, i = next_slot(i, depth)) {
			s = &pp->slots[i];
			while (ld_acquire(&s->v) != 0)
				;
			st_relaxed(&s->payload, k ^ PATTERN);
			st_release(&s->v, k + 1);
		}
	} while (!ld_relaxed(&pp->stop));
	pp->end[0] = bench_now();
	s = &pp->slots[i];
	while (ld_acquire(&s->v) != 0)
		;
	st_release(&s->v, DONE);
	pp->sent = k;
}

/* Empties the ring in order, checking each message's number and payload. */
static void consume(struct pp *pp)
{
	unsigned depth = pp->p->depth, i = 0;
	uint64_t k = 0, bad = 0;

	for (;; k++, i = next_slot(i, depth)) {
		struct line *s = &pp->slots[i];
		uint64_t x;

		while ((x = ld_acquire(&s->v)) == 0)
			;
		if (x == DONE)
			break;
		bad += x != k + 1 || ld_relaxed(&s->payload) != (k ^ PATTERN);
		st_release(&s->v, 0);
	}
	pp->end[1] = bench_now();
	pp->ops = k;
	pp->misordered = bad;
}

/* Request k's words, and the answer the consumer owes for them (their sum). */
static uint64_t req_word(uint64_t k, int j)
{
	return (k ^ PATTERN) + (uint64_t)j;
}

static uint64_t req_answer(uint64_t k)
{
	uint64_t sum = 0;

	for (int j = 0; j < REQ_WORDS; j++)
		sum += req_word(k, j);
	return sum;
}

/* Waits for slot s's answer to message k and checks it: 1 if it is wrong. */
static int collect_answer(struct req_line *s, uint64_t k)
{
	while (ld_acquire(&s->v) != 2 * k + 2)
		;
	return ld_relaxed(&s->answer) != req_answer(k);
}

/*
 * Writes requests in order, each into its slot once the slot's last request
 * is answered (and its answer checked); at the end collects every answer
 * still out. `sent` counts the requests, `misordered` the wrong answers.
 */
static void ask(struct pp *pp)
{
	unsigned depth = pp->p->depth, i = 0;
	uint64_t k = 0, bad = 0;
	struct req_line *s;

	pp->t0 = bench_now();
	do {
		for (int j = 0; j < STOP_EVERY; j++, k++, i = next_slot(i, depth)) {
			s = &pp->reqs[i];
			if (k >= depth)
				bad += collect_answer(s, k - depth);
			for (int w = 0; w < REQ_WORDS; w++)
				st_relaxed(&s->w[w], req_word(k, w));
			st_release(&s->v, 2 * k + 1);
		}
	} while (!ld_relaxed(&pp->stop));
	for (uint64_t m = k > depth ? k - depth : 0; m < k; m++)
		bad += collect_answer(&pp->reqs[m % depth], m);
	pp->end[0] = bench_now();
	st_release(&pp->reqs[i].v, DONE);
	pp->sent = k;
	pp->wrong = bad;
}

/* Answers requests in order, each the sum of its words, written back into its slot. */
static void answer(struct pp *pp)
{
	unsigned depth = pp->p->depth, i = 0;
	uint64_t k = 0, bad = 0;

	for (;; k++, i = next_slot(i, depth)) {
		struct req_line *s = &pp->reqs[i];
		uint64_t last = k >= depth ? 2 * (k - depth) + 2 : 0, x, sum = 0;

		while ((x = ld_acquire(&s->v)) == last) /* the slot's last answer, or empty */
			;
		if (x == DONE)
			break;
		bad += x != 2 * k + 1;
		for (int w = 0; w < REQ_WORDS; w++)
			sum += ld_relaxed(&s->w[w]);
		st_relaxed(&s->answer, sum);
		st_release(&s->v, 2 * k + 2);
	}
	pp->end[1] = bench_now();
	pp->ops = k;
	pp->misordered = bad;
}

static void *side_main(void *arg)
{
	struct side *sd = arg;
	struct pp *pp = sd->pp;
	enum pingpong_test t = pp->p->test;

	pp->err[sd->which] = pin(pp->p->cpu[sd->which]);
	pthread_barrier_wait(&pp->start);
	if (pp->err[0] || pp->err[1])
		return NULL;
	if (sd->which == 0)
		t == PINGPONG_ANSWERED ? ask(pp) : t == PINGPONG_RING ? produce(pp) : ping(pp);
	else
		t == PINGPONG_ANSWERED ? answer(pp) : t == PINGPONG_RING ? consume(pp) : pong(pp);
	return NULL;
}

/* The pair started, run for the duration, stopped and joined; 0 or -1 (r says why). */
static int run_pair(struct pp *pp, struct pingpong_result *r)
{
	struct side sides[2] = {{pp, 0}, {pp, 1}};
	pthread_t tid[2];
	int err;

	pthread_barrier_init(&pp->start, NULL, 3);
	for (int i = 0; i < 2; i++) {
		err = pthread_create(&tid[i], NULL, side_main, &sides[i]);
		if (err) {
			/* A child process that exits right after: the started thread ends with it.
			 */
			snprintf(r->out.err, sizeof(r->out.err), "starting a thread: %s",
				 strerror(err));
			return -1;
		}
	}
	pthread_barrier_wait(&pp->start);
	bench_sleep_until(bench_now() + pp->p->duration);
	st_relaxed(&pp->stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&pp->start);
	for (int i = 0; i < 2; i++) {
		if (pp->err[i]) {
			snprintf(r->out.err, sizeof(r->out.err), "pinning a thread to CPU %d: %s",
				 pp->p->cpu[i], strerror(pp->err[i]));
			return -1;
		}
	}
	return 0;
}

void pingpong_measure(const struct pingpong_params *p, struct pingpong_result *r)
{
	struct pp *pp = aligned_alloc(LOCUS_CACHELINE, sizeof(*pp));

	memset(r, 0, sizeof(*r));
	if (!pp) {
		snprintf(r->out.err, sizeof(r->out.err), "out of memory");
		return;
	}
	memset(pp, 0, sizeof(*pp));
	pp->p = p;
	if (is_ring(p->test)) {
		if (p->depth < 1 || p->depth > PINGPONG_MAX_DEPTH) {
			snprintf(r->out.err, sizeof(r->out.err), "ring depth %u: 1 to %d", p->depth,
				 PINGPONG_MAX_DEPTH);
			free(pp);
			return;
		}
		pp->slots = aligned_alloc(LOCUS_CACHELINE, p->depth * sizeof(*pp->slots));
		pp->reqs = aligned_alloc(LOCUS_CACHELINE, p->depth * sizeof(*pp->reqs));
		if (!pp->slots || !pp->reqs) {
			snprintf(r->out.err, sizeof(r->out.err), "out of memory");
			free(pp->slots);
			free(pp->reqs);
			free(pp);
			return;
		}
		memset(pp->slots, 0, p->depth * sizeof(*pp->slots));
		memset(pp->reqs, 0, p->depth * sizeof(*pp->reqs));
	}
	if (run_pair(pp, r) == 0) {
		double end = pp->end[0] > pp->end[1] ? pp->end[0] : pp->end[1];

		r->ops = pp->ops;
		r->sent = is_ring(p->test) ? pp->sent : pp->ops;
		r->misordered = pp->misordered + pp->wrong;
		r->seconds = end - pp->t0;
		r->out.ok = 1;
	}
	free(pp->slots);
	free(pp->reqs);
	free(pp);
}

static int measure_body(void *arg, int fd)
{
	struct pingpong_result r;

	pingpong_measure(arg, &r);
	return child_write_all(fd, &r, sizeof(r)) ? 3 : 0;
}

static enum bench_cell verdict(const void *result, char *why, size_t n)
{
	const struct pingpong_result *r = result;

	if (r->misordered || r->sent != r->ops) {
		snprintf(why, n,
			 "lost messages: the producer wrote %llu, the consumer took %llu, %llu of "
			 "them out of order or altered",
			 (unsigned long long)r->sent, (unsigned long long)r->ops,
			 (unsigned long long)r->misordered);
		return BENCH_CELL_LOST;
	}
	return BENCH_CELL_OK;
}

enum bench_cell pingpong_run(const struct pingpong_params *p, struct pingpong_result *r, char *why,
			     size_t n)
{
	return bench_measure(measure_body, (void *)p, 10 * p->duration + 10, r, sizeof(*r), &r->out,
			     verdict, why, n);
}

int pingpong_allowed_cpus(int *cpus, int cap)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		/* Not knowing the mask, assume every online CPU. */
		long online = bench_cpus();

		for (long i = 0; i < online && i < CPU_SETSIZE; i++, n++)
			if (n < cap)
				cpus[n] = (int)i;
		return n;
	}
	for (int i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &set))
			continue;
		if (n < cap)
			cpus[n] = i;
		n++;
	}
	return n;
}

void pingpong_json(const struct pingpong_params *p, const struct pingpong_result *r, unsigned run,
		   long cpus)
{
	double mops = r->seconds > 0 ? (double)r->ops / r->seconds / 1e6 : 0;

	printf("{\"bench\":\"pingpong\",\"test\":\"%s\",\"run\":%u,\"cpu_a\":%d,\"cpu_b\":%d,",
	       pingpong_test_key(p->test), run, p->cpu[0], p->cpu[1]);
	if (is_ring(p->test))
		printf("\"depth\":%u,\"slot_bytes\":%d,", p->depth, LOCUS_CACHELINE);
	if (p->test == PINGPONG_ANSWERED)
		printf("\"request_bytes\":%d,", (REQ_WORDS + 1) * 8);
	printf("\"duration_s\":%.6f,\"requested_s\":%.6f,\"ops\":%llu,\"mops\":%.4f,"
	       "\"ns_per_op\":%.2f,\"cpus\":%ld}\n",
	       r->seconds, p->duration, (unsigned long long)r->ops, mops,
	       r->ops ? r->seconds * 1e9 / (double)r->ops : 0, cpus);
	fflush(stdout);
}

int pingpong_floor(struct pingpong_floor *f, double duration, unsigned repeat, int json)
{
	double mops[PINGPONG_NTESTS][BENCH_MAX_REPEAT];
	int cpus[2];
	int n = pingpong_allowed_cpus(cpus, 2);

	memset(f, 0, sizeof(*f));
	f->depth = LOCUS_DELEGATE_LINES_DEFAULT;
	f->repeat = repeat;
	f->duration = duration;
	f->state = BENCH_CELL_OK;
	if (n < 2) {
		snprintf(f->why, sizeof(f->why),
			 "this process may run on one CPU only: a cross-core round trip needs two");
		return 0;
	}
	f->measured = 1;
	f->cpu[0] = cpus[0];
	f->cpu[1] = cpus[1];
	for (unsigned run = 0; run < repeat; run++) {
		for (int t = 0; t < PINGPONG_NTESTS; t++) {
			struct pingpong_params p = {.test = (enum pingpong_test)t,
						    .cpu = {cpus[0], cpus[1]},
						    .depth = f->depth,
						    .duration = duration};
			struct pingpong_result r;
			char why[512];
			enum bench_cell st;

			bench_progress("floor: %s, run %u/%u ...", pingpong_test_name(p.test),
				       run + 1, repeat);
			st = pingpong_run(&p, &r, why, sizeof(why));
			if (st != BENCH_CELL_OK) {
				f->state = st;
				snprintf(f->why, sizeof(f->why), "%s: %s",
					 pingpong_test_name(p.test), why);
				bench_progress_clear();
				return -1;
			}
			mops[t][run] = r.seconds > 0 ? (double)r.ops / r.seconds / 1e6 : 0;
			if (json)
				pingpong_json(&p, &r, run + 1, bench_cpus());
		}
	}
	bench_progress_clear();
	for (int t = 0; t < PINGPONG_NTESTS; t++)
		bench_summarize(mops[t], repeat, &f->mops[t]);
	return 0;
}
