/*
 * locus-bench locality's own logic: the arrays are single random cycles, the
 * critical section modifies exactly m distinct lines, and one measurement
 * under every mechanism, oversubscribed, loses no update and classifies the
 * mechanism's mode correctly.
 */
#include <stdlib.h>
#include <string.h>

#include "locality.h"
#include "locus/cs.h"
#include "testutil.h"
#include "walk.h"

static struct walk_line *lines_new(size_t n)
{
	struct walk_line *l = aligned_alloc(WALK_LINE, (n ? n : 1) * sizeof(*l));

	ck_assert_ptr_nonnull(l);
	return l;
}

/* Following next from line 0 comes back to 0 after exactly n steps, seeing every line once. */
static void assert_one_cycle(const struct walk_line *l, size_t n)
{
	unsigned char *seen = calloc(n, 1);
	uint32_t i = 0;

	ck_assert_ptr_nonnull(seen);
	/* Plain checks in the loop, a Check assertion only on failure: a million
	 * ck_asserts are slow enough under ThreadSanitizer to hit a test timeout. */
	for (size_t k = 0; k < n; k++) {
		i = l[i].next;
		if (i >= n)
			ck_abort_msg("step %zu of %zu leaves the array: %u", k + 1, n, i);
		if (seen[i])
			ck_abort_msg("line %u visited twice in a cycle of %zu", i, n);
		seen[i] = 1;
		if (k + 1 < n && i == 0)
			ck_abort_msg("back at 0 after %zu of %zu steps", k + 1, n);
	}
	ck_assert_uint_eq(i, 0);
	free(seen);
}

START_TEST(permutation_is_one_cycle)
{
	static const size_t sizes[] = {1, 2, 3, 5, 8, 63, 64, 1000, 4096, 65537};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (uint64_t seed = 0; seed < 5; seed++) {
			struct walk_line *l = lines_new(sizes[s]);

			walk_link(l, sizes[s], seed);
			assert_one_cycle(l, sizes[s]);
			free(l);
		}
	}
}
END_TEST

/* The order is random: not the identity walk, and not the same for two seeds. */
START_TEST(permutation_depends_on_seed)
{
	size_t n = 256, same = 0, sequential = 0;
	struct walk_line *a = lines_new(n), *b = lines_new(n);

	walk_link(a, n, 1);
	walk_link(b, n, 2);
	for (size_t k = 0; k < n; k++) {
		same += a[k].next == b[k].next;
		sequential += a[k].next == (k + 1) % n;
	}
	ck_assert_uint_lt(same, n / 4);
	ck_assert_uint_lt(sequential, n / 4);
	free(a);
	free(b);
}
END_TEST

/* Exactly m distinct lines are marked, and one section walk increments exactly those. */
START_TEST(modifies_exactly_m_lines)
{
	static const size_t sizes[] = {1, 2, 7, 128, 1000};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		size_t ms[] = {0, 1, n / 3, n / 2, n > 1 ? n - 1 : 0, n};

		for (size_t j = 0; j < sizeof(ms) / sizeof(ms[0]); j++) {
			struct walk_line *l = lines_new(n);
			size_t marked = 0, counted = 0;

			walk_link(l, n, 7);
			walk_mark(l, n, ms[j]);
			(void)walk_write(l, n);
			(void)walk_write(l, n);
			for (size_t k = 0; k < n; k++) {
				marked += l[k].modify;
				ck_assert_uint_eq(l[k].count, l[k].modify ? 2 : 0);
				counted += l[k].count != 0;
			}
			ck_assert_uint_eq(marked, ms[j]);
			ck_assert_uint_eq(counted, ms[j]);
			/* Marking again with another m replaces the marks. */
			walk_mark(l, n, n / 2);
			marked = 0;
			for (size_t k = 0; k < n; k++)
				marked += l[k].modify;
			ck_assert_uint_eq(marked, n / 2);
			free(l);
		}
	}
}
END_TEST

START_TEST(region_is_aligned_and_zeroed)
{
	struct walk_region r;
	size_t want = 3 * 1000 * WALK_LINE + 17;
	const char *name;

	ck_assert_int_eq(walk_region_map(&r, want), 0);
	ck_assert_uint_ge(r.bytes, want);
	ck_assert_uint_eq((uintptr_t)r.base % (2u << 20), 0);
	for (size_t i = 0; i < r.bytes; i += 4096)
		ck_assert_int_eq(((char *)r.base)[i], 0);
	name = walk_pages_name(r.pages);
	ck_assert(strcmp(name, "none") == 0 || strcmp(name, "thp") == 0 ||
		  strcmp(name, "hugetlb") == 0);
	walk_region_unmap(&r);
}
END_TEST

static int runs_on_server(const char *name)
{
	return strcmp(name, "ffwd") == 0 || strcmp(name, "async") == 0 || strcmp(name, "mpsc") == 0;
}

/* Every mechanism, more client threads than CPUs: every marked line holds every iteration. */
START_TEST(measure_every_mechanism)
{
	const char *const *names = locus_cs_mechanisms();
	unsigned threads = 2 * (unsigned)test_ncpus() + 1;

	for (size_t i = 0; names[i]; i++) {
		struct locality_params p = {
			.mechanism = names[i],
			.threads = threads,
			.n1 = 64,
			.n2 = 32,
			.modify = 8,
			.msg = 100,
			.duration = TEST_SANITIZED ? 0.1 : 0.05,
		};
		struct locality_result r;

		locality_measure(&p, &r);
		if (!r.out.ok && strcmp(names[i], "stm") == 0 && TEST_SANITIZED)
			continue; /* GCC TM is not built into sanitizer builds */
		ck_assert_msg(r.out.ok, "%s: %s", names[i], r.out.err);
		ck_assert_msg(r.iterations > 0, "%s ran no iteration", names[i]);
		ck_assert_msg(r.bad_lines == 0, "%s: %llu shared lines lost updates", names[i],
			      (unsigned long long)r.bad_lines);
		ck_assert_msg((r.servers > 0) == runs_on_server(names[i]), "%s: %u servers",
			      names[i], r.servers);
		ck_assert_msg(r.cpu_s > 0, "%s: no CPU time measured", names[i]);
		if (runs_on_server(names[i]))
			ck_assert_msg(r.server_busy > 0 && r.server_busy <= 1.0,
				      "%s: server busy %f", names[i], r.server_busy);
	}
}
END_TEST

/* The message really reaches the section: the section's buffer holds the last client's bytes. */
START_TEST(message_is_copied)
{
	_Alignas(LOCUS_CACHELINE) char msg[300], buf[LOCALITY_MAX_MSG];
	struct walk_line *l = lines_new(4);
	struct locality_cs_state st = {.lines = l, .n2 = 4, .msgbuf = buf};

	memset(msg, 0x5a, sizeof(msg));
	memset(buf, 0, sizeof(buf));
	walk_link(l, 4, 3);
	walk_mark(l, 4, 4);
	(void)locality_cs(&st, (uint64_t)(uintptr_t)msg, sizeof(msg), 0);
	for (size_t i = 0; i < sizeof(msg); i++)
		ck_assert_int_eq(buf[i], 0x5a);
	ck_assert_int_eq(buf[sizeof(msg)], 0);
	for (size_t k = 0; k < 4; k++)
		ck_assert_uint_eq(l[k].count, 1);
	free(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("locality");
	TCase *walk = tcase_create("walk"), *run = tcase_create("measure");

	tcase_add_test(walk, permutation_is_one_cycle);
	tcase_add_test(walk, permutation_depends_on_seed);
	tcase_add_test(walk, modifies_exactly_m_lines);
	tcase_add_test(walk, region_is_aligned_and_zeroed);
	tcase_add_test(walk, message_is_copied);
	tcase_set_timeout(walk, 60 * TEST_SLOWDOWN);
	tcase_set_timeout(run, 120 * TEST_SLOWDOWN);
	tcase_add_test(run, measure_every_mechanism);
	suite_add_tcase(s, walk);
	suite_add_tcase(s, run);
	return test_run_suite(s);
}
