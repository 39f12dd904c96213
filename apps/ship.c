/*
 * Moving the data or shipping the work, on three workloads (issue 34's
 * benchmark; tools/dsm-ship sweeps it):
 *
 *   --workload 0  random updates (GUPS): every worker adds 1 to -n random
 *                 words of a table spread over every node's pages; with
 *                 -run K, to runs of K consecutive words from a random
 *                 start (locality: K updates for every page moved, where
 *                 moving the page wins again once K is large enough)
 *   --workload 1  one hot counter: every worker adds 1 to it -n times
 *   --workload 2  a shared hash table: every worker inserts and looks up
 *                 -n keys of its own (half each), 256 slots per page
 *
 * --ship 0 moves the data: each operation runs where the worker is, on the
 * pages it touches (the counter and the hash table under a DSM lock per
 * page; the table's updates as atomic adds under sc and avr, where a locked
 * instruction on a page is atomic across nodes, and under a DSM lock per
 * page under lrc, whose multiple writers would merge two nodes' adds to one
 * word into one). --ship 1 ships the work to the data's home: every
 * operation a post (the node combines them per home; a lookup's callback
 * checks what it found). The check: every update counted (the sum), every
 * key found.
 *   locus-dsm-ship [--workload 0] [--ship 1] [-n 20000] [-table 65536] [--threads 1]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define SLOTS_PER_PAGE 256 /* hash table: 16-byte slots of a 4 KiB page */
#define LOCK_BASE      1000000

static long workload, ship = 1, n = 20000, table_words = 65536, run = 1;
static uint64_t *table;	  /* gups: table_words * nodes words; hash: pages of slots */
static uint64_t *counter; /* node 0's */
static long table_pages;  /* hash */
static int lrc;		  /* the protocol is lrc */

static uint64_t add(void *w, uint64_t v, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	*(uint64_t *)w += v;
	return 0;
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint32_t page_lock(const void *p)
{
	return LOCK_BASE + (uint32_t)(((uintptr_t)p / 4096) % 100000);
}

/* ---- hash table: key k lives on page k % pages, in the first free slot
   from k's place there (linear probing that stays on the page) ---- */

struct slot {
	uint64_t key, value; /* key 0: free */
};

static struct slot *page_of(uint64_t key)
{
	return (struct slot *)(void *)((char *)table + (key % (uint64_t)table_pages) * 4096);
}

static uint64_t hash_insert(void *page, uint64_t key, uint64_t value, uint64_t c)
{
	(void)c;
	struct slot *s = page;
	for (uint64_t i = 0; i < SLOTS_PER_PAGE; i++) {
		struct slot *at = &s[(key / (uint64_t)table_pages + i) % SLOTS_PER_PAGE];
		if (at->key == 0 || at->key == key) {
			at->key = key;
			at->value = value;
			return 1;
		}
	}
	return 0; /* page full */
}

static uint64_t hash_lookup(void *page, uint64_t key, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	struct slot *s = page;
	for (uint64_t i = 0; i < SLOTS_PER_PAGE; i++) {
		struct slot *at = &s[(key / (uint64_t)table_pages + i) % SLOTS_PER_PAGE];
		if (at->key == key)
			return at->value;
		if (at->key == 0)
			break;
	}
	return UINT64_MAX;
}

static uint64_t in_place(locus_fn fn, void *page, uint64_t a, uint64_t b)
{
	locus_dsm_lock(page_lock(page));
	uint64_t r = fn(page, a, b, 0);
	locus_dsm_unlock(page_lock(page));
	return r;
}

static volatile int64_t *missing; /* per worker: keys not found, pages full */

struct lookup {
	int worker;
	uint64_t want;
};

/* A shipped lookup's answer, on the worker's thread. */
static void looked_up(void *ctx, uint64_t value)
{
	struct lookup *l = ctx;
	if (value != l->want)
		missing[l->worker]++;
	free(l);
}

static void hash_work(int worker, uint64_t *seed)
{
	for (long i = 0; i < n; i++) {
		/* This worker's keys: worker + 1 + k * workers, never 0. */
		uint64_t k = (uint64_t)i / 2,
			 key = (uint64_t)worker + 1 + k * (uint64_t)app.workers;
		struct slot *page = page_of(key);
		if (i % 2 == 0) {
			if (ship)
				locus_dsm_post_home(hash_insert, page, key, key * 3, 0, NULL, NULL);
			else if (!in_place(hash_insert, page, key, key * 3))
				missing[worker]++;
			continue;
		}
		/* Look up one of its keys inserted before (its posts to one home run
		   in order, so a key posted there is found). */
		uint64_t old =
			(uint64_t)worker + 1 + (next_rand(seed) % (k + 1)) * (uint64_t)app.workers;
		if (!ship) {
			if (in_place(hash_lookup, page_of(old), old, 0) != old * 3)
				missing[worker]++;
			continue;
		}
		struct lookup *l = malloc(sizeof(*l));
		if (!l) {
			fprintf(stderr, "locus-dsm-ship: out of memory\n");
			exit(1);
		}
		*l = (struct lookup){.worker = worker, .want = old * 3};
		locus_dsm_post_home(hash_lookup, page_of(old), old, 0, 0, looked_up, l);
	}
}

static void work(int worker, void *arg)
{
	(void)arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(worker + 1) * 0x632be59bd9b4e019ull;
	long words = table_words * app.nodes;
	if (workload == 2) {
		hash_work(worker, &seed);
	} else {
		uint64_t start = 0;
		for (long i = 0; i < n; i++) {
			if (i % run == 0)
				start = next_rand(&seed);
			uint64_t at = (start + (uint64_t)(i % run)) % (uint64_t)words;
			uint64_t *w = workload == 0 ? &table[at] : counter;
			if (ship)
				locus_dsm_post_home(add, w, 1, 0, 0, NULL, NULL);
			else if (workload == 0 && !lrc)
				__atomic_fetch_add(w, 1, __ATOMIC_SEQ_CST);
			else
				in_place(add, w, 1, 0);
		}
	}
	locus_dsm_drain();
}

static int check(void)
{
	uint64_t want = (uint64_t)n * (uint64_t)app.workers, sum = 0;
	if (workload == 2) {
		for (int w = 0; w < app.workers; w++)
			sum += (uint64_t)missing[w];
		if (sum)
			fprintf(stderr, "locus-dsm-ship: %llu keys not found or not stored\n",
				(unsigned long long)sum);
		return sum == 0;
	}
	if (workload == 1)
		sum = *counter;
	else
		for (long i = 0; i < table_words * app.nodes; i++)
			sum += table[i];
	if (sum == want)
		return 1;
	fprintf(stderr, "locus-dsm-ship: %llu updates counted, %llu made\n",
		(unsigned long long)sum, (unsigned long long)want);
	return 0;
}

int main(int argc, char **argv)
{
	const struct app_opt opts[] = {
		{"--workload", "0 random updates (GUPS), 1 one hot counter, 2 a hash table",
		 &workload, 0, 2},
		{"--ship", "1 ship the work to the data's home, 0 move the data here", &ship, 0, 1},
		{"-n", "operations per worker", &n, 1, 100000000},
		{"-table", "words of the GUPS table per node; hash table: slots per node",
		 &table_words, 512, 1 << 26},
		{"-run", "GUPS: consecutive words updated from each random start", &run, 1,
		 1 << 20},
		{NULL, NULL, NULL, 0, 0},
	};
	app_dsm_options(argc, argv, "dsm-ship",
			"Moving the data or shipping the work: random updates of a table, one hot\n"
			"counter, or a hash table, each either way (--ship); prints operations/s.",
			opts);
	app_start(&argc, &argv);
	lrc = !strcmp(locus_dsm_protocol(), "lrc");
	table_pages = (table_words * app.nodes + SLOTS_PER_PAGE - 1) / SLOTS_PER_PAGE;
	size_t bytes = workload == 2
			       ? app_bytes("the hash table", (size_t)table_pages, 4096, 1)
			       : app_bytes("the table", (size_t)table_words, (size_t)app.nodes, 8);
	table = app_alloc(bytes);
	counter = locus_dsm_alloc_at(4096, 0);
	missing = app_alloc(app_bytes("the check", (size_t)app.workers, 8, 1));
	app_parallel(work, NULL);
	int ok = check();
	double ops = (double)n * app.workers / app.secs;
	char params[200];
	snprintf(params, sizeof(params), "workload=%s ship=%ld n=%ld run=%ld ops_per_s=%.0f",
		 workload == 0	 ? "gups"
		 : workload == 1 ? "counter"
				 : "hash",
		 ship, n, run, ops);
	return app_finish(ok, params);
}
