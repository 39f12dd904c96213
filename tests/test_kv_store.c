/*
 * locus-kv's item store, driven directly: command semantics, expiry on a
 * moved clock, eviction and the memory bound, and concurrent invariants
 * (exact incr totals, no lost cas update, no torn value) under several
 * --sync configurations, with more threads than CPUs.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/store/store.h"
#include "testutil.h"

static kv_store *open_store(const char *sync, size_t mem_mb)
{
	struct kv_store_config c;
	kv_store_config_default(&c);
	c.mem_limit = mem_mb << 20;
	c.stripes = 64;
	char err[512];
	if (sync)
		ck_assert_msg(kv_sync_parse(&c, sync, err, sizeof(err)) == 0, "%s", err);
	kv_store *st = kv_store_open(&c, err, sizeof(err));
	ck_assert_msg(st != NULL, "%s", err);
	return st;
}

static enum kv_result put(kv_store *st, struct kv_counts *cnt, const char *key, const char *val,
			  enum kv_store_mode mode, uint64_t cas, int64_t exptime)
{
	enum kv_result why;
	size_t n = strlen(val);
	struct kv_item *it = kv_item_new(st, cnt, key, strlen(key), 7, kv_exptime(st, exptime),
					 (uint32_t)n, &why);
	if (!it)
		return why;
	memcpy(kv_item_value(it), val, n);
	memcpy(kv_item_value(it) + n, "\r\n", 2);
	return kv_store_item(st, cnt, it, mode, cas, NULL);
}

/* The value of key, or NULL; *cas set. Caller frees. */
static char *fetch(kv_store *st, struct kv_counts *cnt, const char *key, uint64_t *cas)
{
	struct kv_buf b = {0};
	int hit = kv_get(st, cnt, key, strlen(key), 1, 0, 0, &b);
	ck_assert_int_ge(hit, 0);
	if (!hit) {
		ck_assert_uint_eq(b.len, 0);
		kv_buf_free(&b);
		return NULL;
	}
	/* VALUE <key> <flags> <bytes> <cas>\r\n<data>\r\n */
	kv_buf_add(&b, "", 1);
	char k[256];
	unsigned flags, bytes;
	uint64_t c;
	int hdr;
	ck_assert_int_eq(
		sscanf(b.p, "VALUE %255s %u %u %" SCNu64 "\r\n%n", k, &flags, &bytes, &c, &hdr), 4);
	ck_assert_str_eq(k, key);
	ck_assert_uint_eq(b.len - 1, (size_t)hdr + bytes + 2);
	ck_assert(memcmp(b.p + hdr + bytes, "\r\n", 2) == 0);
	char *v = strndup(b.p + hdr, bytes);
	if (cas)
		*cas = c;
	kv_buf_free(&b);
	return v;
}

static void expect(kv_store *st, struct kv_counts *cnt, const char *key, const char *want)
{
	char *v = fetch(st, cnt, key, NULL);
	if (!want)
		ck_assert_msg(v == NULL, "%s: expected a miss, got '%s'", key, v);
	else {
		ck_assert_msg(v != NULL, "%s: expected '%s', got a miss", key, want);
		ck_assert_str_eq(v, want);
	}
	free(v);
}

START_TEST(storage_commands)
{
	kv_store *st = open_store(NULL, 8);
	struct kv_counts cnt = {0};
	ck_assert_int_eq(put(st, &cnt, "a", "1", KV_ADD, 0, 0), KV_STORED);
	ck_assert_int_eq(put(st, &cnt, "a", "2", KV_ADD, 0, 0), KV_NOT_STORED);
	ck_assert_int_eq(put(st, &cnt, "b", "2", KV_REPLACE, 0, 0), KV_NOT_STORED);
	ck_assert_int_eq(put(st, &cnt, "a", "3", KV_REPLACE, 0, 0), KV_STORED);
	expect(st, &cnt, "a", "3");
	ck_assert_int_eq(put(st, &cnt, "a", "xy", KV_APPEND, 0, 0), KV_STORED);
	ck_assert_int_eq(put(st, &cnt, "a", "<", KV_PREPEND, 0, 0), KV_STORED);
	expect(st, &cnt, "a", "<3xy");
	ck_assert_int_eq(put(st, &cnt, "nope", "z", KV_APPEND, 0, 0), KV_NOT_STORED);
	expect(st, &cnt, "nope", NULL);
	uint64_t cas;
	free(fetch(st, &cnt, "a", &cas));
	ck_assert_int_eq(put(st, &cnt, "a", "c1", KV_CAS, cas + 1, 0), KV_EXISTS);
	ck_assert_int_eq(put(st, &cnt, "a", "c1", KV_CAS, cas, 0), KV_STORED);
	ck_assert_int_eq(put(st, &cnt, "a", "c2", KV_CAS, cas, 0), KV_EXISTS);
	ck_assert_int_eq(put(st, &cnt, "zz", "c", KV_CAS, 1, 0), KV_NOT_FOUND);
	expect(st, &cnt, "a", "c1");
	ck_assert_int_eq(kv_delete(st, &cnt, "a", 1), KV_DELETED);
	ck_assert_int_eq(kv_delete(st, &cnt, "a", 1), KV_NOT_FOUND);
	expect(st, &cnt, "a", NULL);
	kv_counts_flush(st, &cnt);
	struct kv_counts g;
	kv_counts_read(st, &g);
	ck_assert_int_eq(g.curr_items, 0);
	ck_assert_uint_eq(g.cas_badval, 2);
	ck_assert_uint_eq(g.cas_hits, 1);
	ck_assert_uint_eq(g.cas_misses, 1);
	kv_store_close(st);
}
END_TEST

START_TEST(arith)
{
	kv_store *st = open_store(NULL, 8);
	struct kv_counts cnt = {0};
	uint64_t v;
	ck_assert_int_eq(kv_arith(st, &cnt, "n", 1, 1, 1, &v, NULL), KV_NOT_FOUND);
	put(st, &cnt, "n", "99", KV_SET, 0, 0);
	ck_assert_int_eq(kv_arith(st, &cnt, "n", 1, 1, 1, &v, NULL), KV_OK);
	ck_assert_uint_eq(v, 100);
	expect(st, &cnt, "n", "100"); /* grew: a new item */
	ck_assert_int_eq(kv_arith(st, &cnt, "n", 1, 0, 95, &v, NULL), KV_OK);
	expect(st, &cnt, "n", "5  "); /* shrank in place, padded as memcached pads */
	ck_assert_int_eq(kv_arith(st, &cnt, "n", 1, 0, 10, &v, NULL), KV_OK);
	ck_assert_uint_eq(v, 0); /* decr stops at 0 */
	put(st, &cnt, "n", "18446744073709551615", KV_SET, 0, 0);
	ck_assert_int_eq(kv_arith(st, &cnt, "n", 1, 1, 2, &v, NULL), KV_OK);
	ck_assert_uint_eq(v, 1); /* incr wraps */
	put(st, &cnt, "s", "12a", KV_SET, 0, 0);
	ck_assert_int_eq(kv_arith(st, &cnt, "s", 1, 1, 1, &v, NULL), KV_NON_NUMERIC);
	put(st, &cnt, "s", "", KV_SET, 0, 0);
	ck_assert_int_eq(kv_arith(st, &cnt, "s", 1, 1, 1, &v, NULL), KV_NON_NUMERIC);
	kv_store_close(st);
}
END_TEST

START_TEST(expiry_and_flush)
{
	kv_store *st = open_store(NULL, 8);
	struct kv_counts cnt = {0};
	put(st, &cnt, "short", "v", KV_SET, 0, 10);
	put(st, &cnt, "never", "v", KV_SET, 0, 0);
	put(st, &cnt, "gone", "v", KV_SET, 0, -1);
	expect(st, &cnt, "gone", NULL);
	expect(st, &cnt, "short", "v");
	kv_clock_advance(st, 11);
	expect(st, &cnt, "short", NULL);
	expect(st, &cnt, "never", "v");
	/* touch extends; absolute times past 30 days count from the epoch */
	put(st, &cnt, "t", "v", KV_SET, 0, 5);
	ck_assert_int_eq(kv_touch(st, &cnt, "t", 1, kv_exptime(st, 100)), KV_TOUCHED);
	kv_clock_advance(st, 50);
	expect(st, &cnt, "t", "v");
	uint64_t now_unix = kv_process_started(st) + kv_now(st);
	put(st, &cnt, "abs", "v", KV_SET, 0, (int64_t)now_unix + 20);
	put(st, &cnt, "past", "v", KV_SET, 0, (int64_t)now_unix - 20);
	expect(st, &cnt, "abs", "v");
	expect(st, &cnt, "past", NULL);
	kv_clock_advance(st, 21);
	expect(st, &cnt, "abs", NULL);
	/* the crawler takes what expired without being asked for */
	put(st, &cnt, "c1", "v", KV_SET, 0, 3);
	put(st, &cnt, "c2", "v", KV_SET, 0, 3);
	kv_clock_advance(st, 4);
	ck_assert_uint_ge(kv_crawl(st, &cnt), 2);
	/* flush_all now, then a set right after survives */
	kv_flush(st, &cnt, 0);
	expect(st, &cnt, "never", NULL);
	put(st, &cnt, "after", "v", KV_SET, 0, 0);
	expect(st, &cnt, "after", "v");
	/* flush_all with a delay */
	kv_flush(st, &cnt, 10);
	expect(st, &cnt, "after", "v");
	kv_clock_advance(st, 11);
	expect(st, &cnt, "after", NULL);
	/* "t" was flushed but never asked for: the crawler reclaims it. */
	ck_assert_uint_eq(kv_crawl(st, &cnt), 1);
	kv_counts_flush(st, &cnt);
	struct kv_counts g;
	kv_counts_read(st, &g);
	ck_assert_int_eq(g.curr_items, 0);
	ck_assert_int_eq(g.bytes, 0);
	kv_store_close(st);
}
END_TEST

START_TEST(too_large_and_eviction)
{
	kv_store *st = open_store(NULL, 2);
	struct kv_counts cnt = {0};
	enum kv_result why;
	ck_assert_ptr_null(kv_item_new(st, &cnt, "k", 1, 0, 0, 1u << 20, &why));
	ck_assert_int_eq(why, KV_TOO_LARGE);
	/* 20 MB of 1 KB values into 2 MB: early keys go, recent ones stay. */
	char key[32], val[1024];
	memset(val, 'x', sizeof(val) - 1);
	val[sizeof(val) - 1] = 0;
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "key:%d", i);
		ck_assert_int_eq(put(st, &cnt, key, val, KV_SET, 0, 0), KV_STORED);
	}
	expect(st, &cnt, "key:0", NULL);
	expect(st, &cnt, "key:19999", val);
	kv_counts_flush(st, &cnt);
	struct kv_counts g;
	kv_counts_read(st, &g);
	ck_assert_uint_gt(g.evictions, 15000);
	ck_assert_int_le(g.curr_items, 2 * 1024);
	/* Other sizes still store when the limit is reached. */
	ck_assert_int_eq(put(st, &cnt, "small", "s", KV_SET, 0, 0), KV_STORED);
	expect(st, &cnt, "small", "s");
	struct kv_buf b = {0};
	ck_assert_int_eq(kv_stats_slabs(st, &b), 0);
	kv_buf_add(&b, "", 1);
	const char *m = strstr(b.p, "STAT total_malloced ");
	ck_assert_ptr_nonnull(m);
	unsigned long long malloced = strtoull(m + 20, NULL, 10);
	/* Pages within -m, plus at most one chunk per class that had no memory. */
	ck_assert_uint_le(malloced, (2u << 20) + (1u << 20));
	kv_buf_free(&b);
	kv_store_close(st);
}
END_TEST

START_TEST(sync_parse)
{
	struct kv_store_config c;
	kv_store_config_default(&c);
	char err[512];
	ck_assert_int_eq(kv_sync_parse(&c, "hash=ttas:spin,spins=64,alloc=mcs", err, sizeof(err)),
			 0);
	ck_assert_str_eq(c.sync[KV_SEC_HASH], "ttas:spin,spins=64");
	ck_assert_str_eq(c.sync[KV_SEC_ALLOC], "mcs");
	ck_assert_str_eq(c.sync[KV_SEC_SLABS], "mutex");
	ck_assert_int_eq(kv_sync_parse(&c, "all=tas", err, sizeof(err)), 0);
	for (int s = 0; s < KV_SECTIONS; s++)
		ck_assert_str_eq(c.sync[s], "tas");
	ck_assert_int_eq(kv_sync_parse(&c, "cache=mcs", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "unknown section 'cache'") && strstr(err, "hash"), "%s", err);
	ck_assert_int_eq(kv_sync_parse(&c, "hash=nosuch", err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "nosuch") && strstr(err, "mcs"), "%s", err);
	ck_assert_int_eq(kv_sync_parse(&c, "hash=", err, sizeof(err)), -1);
	ck_assert_int_eq(kv_sync_parse(&c, "", err, sizeof(err)), -1);
}
END_TEST

/* ---------- concurrency ---------- */

static const char *const configs[] = {
	"all=mutex",
	"all=ttas",
	"hash=mcs,alloc=ticket,slabs=clh,stats=tas",
	"all=oyama",
	"all=ccsynch",
	"all=flat",
	"all=ffwd",
	"hash=mutex,alloc=async,slabs=mutex,stats=mutex",
	"hash=mcs,alloc=mpsc,slabs=ttas,stats=mutex",
#ifdef LOCUS_HAVE_STM
	"all=stm",
	/* The stats section has transactional clones (src/kv/store/stats_counts.c): real
	   transactions. */
	"hash=ttas,alloc=mutex,slabs=mutex,stats=stm:ml_wt",
#endif
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

struct shared {
	kv_store *st;
	int ops;
	int id;
	uint64_t cas_wins;
	uint64_t torn;
};

#define KEYS	   4
#define CHURN_KEYS 8000 /* about 16 MB of values: twice the store's -m */

static void *incr_worker(void *arg)
{
	struct shared *s = arg;
	struct kv_counts cnt = {0};
	char key[16];
	for (int i = 0; i < s->ops; i++) {
		snprintf(key, sizeof(key), "ctr%d", i % KEYS);
		uint64_t v;
		ck_assert_int_eq(kv_arith(s->st, &cnt, key, strlen(key), 1, 1, &v, NULL), KV_OK);
		if (i % 64 == 0)
			kv_counts_flush(s->st, &cnt);
	}
	kv_counts_flush(s->st, &cnt);
	return NULL;
}

/* gets, then cas value+1: a lost update would leave the value below the wins. */
static void *cas_worker(void *arg)
{
	struct shared *s = arg;
	struct kv_counts cnt = {0};
	for (int i = 0; i < s->ops; i++) {
		uint64_t cas;
		char *v = fetch(s->st, &cnt, "caskey", &cas);
		ck_assert_ptr_nonnull(v);
		char next[32];
		snprintf(next, sizeof(next), "%llu", strtoull(v, NULL, 10) + 1);
		free(v);
		if (put(s->st, &cnt, "caskey", next, KV_CAS, cas, 0) == KV_STORED)
			s->cas_wins++;
	}
	kv_counts_flush(s->st, &cnt);
	return NULL;
}

/*
 * Writers set values that carry their own check (key id, a length and a
 * repeated byte); readers verify every value they see. Small -m forces
 * eviction all along, so items are freed and reused under the readers.
 */
static void *churn_worker(void *arg)
{
	struct shared *s = arg;
	struct kv_counts cnt = {0};
	char key[32], val[4100];
	unsigned seed = (unsigned)s->id * 7919u + 1;
	for (int i = 0; i < s->ops; i++) {
		seed = seed * 1103515245u + 12345u;
		int k = (int)((seed >> 8) % CHURN_KEYS);
		snprintf(key, sizeof(key), "churn:%d", k);
		if ((seed >> 4) % 4 == 0) {
			int len = 16 + (int)((seed >> 12) % 4000);
			int n = snprintf(val, sizeof(val), "%d|%d|", k, len);
			memset(val + n, 'a' + k % 26, (size_t)(len - n));
			val[len] = 0;
			enum kv_result r = put(s->st, &cnt, key, val, KV_SET, 0, 0);
			ck_assert_msg(r == KV_STORED, "set: %d", r);
		} else if ((seed >> 4) % 16 == 1) {
			kv_delete(s->st, &cnt, key, strlen(key));
		} else {
			char *v = fetch(s->st, &cnt, key, NULL);
			if (v) {
				int kk, len, n;
				if (sscanf(v, "%d|%d|%n", &kk, &len, &n) != 2 || kk != k ||
				    (int)strlen(v) != len)
					s->torn++;
				else
					for (int j = n; j < len; j++)
						if (v[j] != 'a' + k % 26)
							s->torn++;
				free(v);
			}
		}
	}
	kv_counts_flush(s->st, &cnt);
	return NULL;
}

static void run_threads(int n, void *(*fn)(void *), struct shared *sh)
{
	pthread_t t[32];
	for (int i = 0; i < n; i++)
		test_start_thread(&t[i], fn, &sh[i]);
	for (int i = 0; i < n; i++)
		ck_assert_msg(test_join_within(t[i], 300 * TEST_SLOWDOWN) == 0, "thread %d hung",
			      i);
}

START_TEST(concurrent_invariants)
{
	const char *sync = configs[_i];
	int nthreads = 2 * test_ncpus() + 1;
	if (nthreads > 16)
		nthreads = 16;
	int ops = TEST_SANITIZED ? 1500 : 8000;
	kv_store *st = open_store(sync, 8);
	struct kv_counts cnt = {0};
	struct shared sh[32];
	for (int i = 0; i < nthreads; i++)
		sh[i] = (struct shared){.st = st, .ops = ops, .id = i};

	/* incr: exact totals */
	for (int k = 0; k < KEYS; k++) {
		char key[16];
		snprintf(key, sizeof(key), "ctr%d", k);
		ck_assert_int_eq(put(st, &cnt, key, "0", KV_SET, 0, 0), KV_STORED);
	}
	run_threads(nthreads, incr_worker, sh);
	uint64_t total = 0;
	for (int k = 0; k < KEYS; k++) {
		char key[16];
		snprintf(key, sizeof(key), "ctr%d", k);
		char *v = fetch(st, &cnt, key, NULL);
		ck_assert_ptr_nonnull(v);
		total += strtoull(v, NULL, 10);
		free(v);
	}
	ck_assert_uint_eq(total, (uint64_t)nthreads * (uint64_t)ops);
	/* ... and the stats section lost none of the workers' counts */
	struct kv_counts sum;
	kv_counts_flush(st, &cnt);
	kv_counts_read(st, &sum);
	ck_assert_uint_eq(sum.incr_hits, (uint64_t)nthreads * (uint64_t)ops);

	/* cas: final value equals the successful cas count */
	ck_assert_int_eq(put(st, &cnt, "caskey", "0", KV_SET, 0, 0), KV_STORED);
	run_threads(nthreads, cas_worker, sh);
	uint64_t wins = 0;
	for (int i = 0; i < nthreads; i++)
		wins += sh[i].cas_wins;
	char *v = fetch(st, &cnt, "caskey", NULL);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(strtoull(v, NULL, 10), wins);
	ck_assert_uint_gt(wins, 0);
	free(v);

	/* churn under eviction: no torn value, consistent counts */
	run_threads(nthreads, churn_worker, sh);
	uint64_t torn = 0;
	for (int i = 0; i < nthreads; i++)
		torn += sh[i].torn;
	ck_assert_uint_eq(torn, 0);
	kv_counts_flush(st, &cnt);
	struct kv_counts g;
	kv_counts_read(st, &g);
	ck_assert_int_ge(g.curr_items, 0);
	ck_assert_int_le(g.curr_items, CHURN_KEYS + KEYS + 1);
	ck_assert_uint_gt(g.evictions, 0);
	/* The LRU count agrees with the store's item count once everything settled. */
	struct kv_buf b = {0};
	ck_assert_int_eq(kv_stats_items(st, &b), 0);
	kv_buf_add(&b, "", 1);
	int64_t in_lru = 0;
	for (const char *p = b.p; (p = strstr(p, ":number ")) != NULL; p += 8)
		in_lru += strtoll(p + 8, NULL, 10);
	ck_assert_int_eq(in_lru, g.curr_items);
	kv_buf_free(&b);
	kv_store_close(st);
}
END_TEST

/*
 * --section-stats: concurrent incr workers (more threads than CPUs) time every
 * section; no run is lost from the totals, and "stats sync" reports them.
 */
START_TEST(section_timing_counts_every_run)
{
	struct kv_store_config c;
	kv_store_config_default(&c);
	c.stripes = 64;
	c.lru_crawler = 0;
	c.section_stats = 1;
	char err[512];
	kv_store *st = kv_store_open(&c, err, sizeof(err));
	ck_assert_msg(st != NULL, "%s", err);
	struct kv_counts cnt = {0};
	for (int k = 0; k < KEYS; k++) {
		char key[16];
		snprintf(key, sizeof(key), "ctr%d", k);
		ck_assert_int_eq(put(st, &cnt, key, "0", KV_SET, 0, 0), KV_STORED);
	}
	struct kv_buf b = {0};
	ck_assert_int_eq(kv_stats_sync(st, &b), 0);
	kv_buf_add(&b, "", 1);
	const char *p = strstr(b.p, "STAT hash:runs ");
	ck_assert_ptr_nonnull(p);
	uint64_t before = strtoull(p + 15, NULL, 10);
	int nthreads = 2 * test_ncpus() + 1;
	if (nthreads > 16)
		nthreads = 16;
	int ops = TEST_SANITIZED ? 1500 : 8000;
	struct shared sh[32];
	for (int i = 0; i < nthreads; i++)
		sh[i] = (struct shared){.st = st, .ops = ops, .id = i};
	run_threads(nthreads, incr_worker, sh);
	b.len = 0;
	ck_assert_int_eq(kv_stats_sync(st, &b), 0);
	kv_buf_add(&b, "", 1);
	ck_assert_ptr_nonnull(strstr(b.p, "STAT section_stats on\r\n"));
	p = strstr(b.p, "STAT hash:runs ");
	ck_assert_ptr_nonnull(p);
	/*
	 * One hash run per incr, plus one or more for each incr that lengthens its
	 * value (9 -> 10: a new item is stored, and stored again if another incr got
	 * there first): never fewer, so a lost count shows.
	 */
	uint64_t runs = strtoull(p + 15, NULL, 10) - before, incrs = (uint64_t)nthreads * ops;
	ck_assert_uint_ge(runs, incrs);
	ck_assert_uint_le(runs, 2 * incrs);
	ck_assert_ptr_nonnull(strstr(b.p, "STAT stats:runs "));
	ck_assert_ptr_nonnull(strstr(b.p, "STAT slabs:max_ns "));
	kv_buf_free(&b);
	kv_store_close(st);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kv_store");
	TCase *tc = tcase_create("semantics");
	tcase_add_test(tc, storage_commands);
	tcase_add_test(tc, arith);
	tcase_add_test(tc, expiry_and_flush);
	tcase_add_test(tc, too_large_and_eviction);
	tcase_add_test(tc, sync_parse);
	suite_add_tcase(s, tc);
	TCase *cc = tcase_create("concurrency");
	tcase_set_timeout(cc, 600 * TEST_SLOWDOWN);
	tcase_add_loop_test(cc, concurrent_invariants, 0, (int)NCONFIGS);
	tcase_add_test(cc, section_timing_counts_every_run);
	suite_add_tcase(s, cc);
	return test_run_suite(s);
}
