/*
 * locus-bench --repeat on made-up figures: the order a sweep measures in
 * (each column's runs interleaved, A B C A B C), the median and range of a
 * cell, which neighbours a ranking calls tied, and how a cell and a ranking
 * line read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "repeat.h"
#include "testutil.h"

/* What the sweep asked for, in order: "c0r0m0 c0r0m1 ..." */
struct trace {
	char text[1024];
	size_t len;
	int fail_at; /* the call that fails (-1: none) */
	int calls;
};

static int record(void *ctx, size_t col, unsigned run, size_t mech)
{
	struct trace *t = ctx;

	t->len += (size_t)snprintf(t->text + t->len, sizeof(t->text) - t->len, "%sc%zur%um%zu",
				   t->len ? " " : "", col, run, mech);
	return t->calls++ == t->fail_at;
}

static void column_end(void *ctx, size_t col)
{
	struct trace *t = ctx;

	t->len += (size_t)snprintf(t->text + t->len, sizeof(t->text) - t->len, " |%zu", col);
}

START_TEST(sweep_interleaves_the_runs_of_each_column)
{
	struct trace t = {.fail_at = -1};
	struct bench_sweep s = {.ncols = 2,
				.nmech = 3,
				.repeat = 2,
				.ctx = &t,
				.measure = record,
				.column_done = column_end};

	ck_assert_int_eq(bench_sweep_run(&s), 0);
	ck_assert_str_eq(t.text, "c0r0m0 c0r0m1 c0r0m2 c0r1m0 c0r1m1 c0r1m2 |0 "
				 "c1r0m0 c1r0m1 c1r0m2 c1r1m0 c1r1m1 c1r1m2 |1");
}
END_TEST

START_TEST(sweep_measures_everything_after_a_failure)
{
	struct trace t = {.fail_at = 1};
	struct bench_sweep s = {.ncols = 1, .nmech = 2, .repeat = 2, .ctx = &t, .measure = record};

	ck_assert_int_eq(bench_sweep_run(&s), 1);
	ck_assert_str_eq(t.text, "c0r0m0 c0r0m1 c0r1m0 c0r1m1");
}
END_TEST

START_TEST(summary_is_median_and_range)
{
	double odd[] = {5, 1, 9, 3, 7}, even[] = {4, 1, 3, 10};
	struct bench_summary s;

	bench_summarize(odd, 5, &s);
	ck_assert_uint_eq(s.n, 5);
	ck_assert(s.median == 5 && s.min == 1 && s.max == 9);
	ck_assert(odd[0] == 5 && odd[4] == 7); /* left as it was */
	bench_summarize(even, 4, &s);
	ck_assert(s.median == 3.5 && s.min == 1 && s.max == 10);
	bench_summarize(even, 1, &s);
	ck_assert(s.n == 1 && s.median == 4 && s.min == 4 && s.max == 4);
	bench_summarize(even, 0, &s);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

static struct bench_summary sum(double median, double min, double max)
{
	return (struct bench_summary){.median = median, .min = min, .max = max, .n = 3};
}

/* A row without a summary (it failed): not ranked. */
#define NONE ((struct bench_summary){.n = 0})

START_TEST(overlapping_ranges_are_ties)
{
	struct bench_summary a = sum(10, 9, 11), b = sum(12, 11, 13), c = sum(14, 12.5, 15);

	ck_assert(bench_overlap(&a, &b) && bench_overlap(&b, &a)); /* touching at 11 */
	ck_assert(!bench_overlap(&a, &c) && !bench_overlap(&c, &a));
	ck_assert(bench_overlap(&b, &c));
}
END_TEST

START_TEST(ranking_orders_by_median_and_marks_ties_between_neighbours)
{
	/* rows: 0 slow and apart, 1 and 2 overlap, 3 failed, 4 fastest, touching nothing */
	struct bench_summary s[] = {sum(2, 1, 3), sum(10, 8, 12), sum(11, 9.5, 11.5), NONE,
				    sum(20, 19, 21)};
	size_t order[5];
	char rel[5];

	ck_assert_uint_eq(bench_rank(s, 5, 1, order, rel), 4);
	ck_assert(order[0] == 4 && order[1] == 2 && order[2] == 1 && order[3] == 0);
	ck_assert(rel[0] == '\0' && rel[1] == '>' && rel[2] == '~' && rel[3] == '>');
	/* Lower is better (latency): the same rows, the other way round. */
	ck_assert_uint_eq(bench_rank(s, 5, 0, order, rel), 4);
	ck_assert(order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 4);
	ck_assert(rel[1] == '>' && rel[2] == '~' && rel[3] == '>');
}
END_TEST

START_TEST(ranking_keeps_row_order_for_equal_medians)
{
	struct bench_summary s[] = {sum(5, 5, 5), sum(7, 7, 7), sum(5, 5, 5)};
	size_t order[3];
	char rel[3];

	ck_assert_uint_eq(bench_rank(s, 3, 1, order, rel), 3);
	ck_assert(order[0] == 1 && order[1] == 0 && order[2] == 2);
	ck_assert(rel[1] == '>' && rel[2] == '~');
}
END_TEST

/* One run each: no range, so only equal figures tie. */
START_TEST(single_runs_tie_only_when_equal)
{
	struct bench_summary s[] = {{.median = 3, .min = 3, .max = 3, .n = 1},
				    {.median = 3.01, .min = 3.01, .max = 3.01, .n = 1}};
	size_t order[2];
	char rel[2];

	bench_rank(s, 2, 1, order, rel);
	ck_assert(order[0] == 1 && rel[1] == '>');
}
END_TEST

static char *print_ranking(const char *const *names, const struct bench_summary *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	bench_print_ranking(f, "T=1 V=1", 9, names, s, n, 1);
	fclose(f);
	return buf;
}

START_TEST(ranking_line_reads_best_first_with_the_unranked_after)
{
	const char *names[] = {"mutex", "ffwd", "mcs", "stm"};
	struct bench_summary s[] = {sum(10, 9, 11), sum(2, 1.5, 2.5), sum(11, 10.8, 12), NONE};
	char *line = print_ranking(names, s, 4);

	ck_assert_str_eq(line, "  T=1 V=1    mcs ~ mutex > ffwd; not ranked: stm\n");
	free(line);
	line = print_ranking(names, (struct bench_summary[]){NONE, NONE, NONE, NONE}, 4);
	ck_assert_str_eq(line, "  T=1 V=1    not ranked: mutex, ffwd, mcs, stm\n");
	free(line);
}
END_TEST

START_TEST(cell_text_shows_the_range_when_there_are_runs)
{
	struct bench_summary one = {.median = 12.345, .min = 12.345, .max = 12.345, .n = 1};
	struct bench_summary three = sum(12.345, 11.02, 13.1);
	char buf[64];

	bench_summary_text(buf, sizeof(buf), &one, 1, 2, "");
	ck_assert_str_eq(buf, "12.35");
	bench_summary_text(buf, sizeof(buf), &three, 1, 2, "*");
	ck_assert_str_eq(buf, "12.35 (11.02-13.10)*");
	bench_summary_text(buf, sizeof(buf), &three, 1e3, 1, "");
	ck_assert_str_eq(buf, "0.0 (0.0-0.0)");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bench_repeat");
	TCase *t = tcase_create("repeat");

	tcase_add_test(t, sweep_interleaves_the_runs_of_each_column);
	tcase_add_test(t, sweep_measures_everything_after_a_failure);
	tcase_add_test(t, summary_is_median_and_range);
	tcase_add_test(t, overlapping_ranges_are_ties);
	tcase_add_test(t, ranking_orders_by_median_and_marks_ties_between_neighbours);
	tcase_add_test(t, ranking_keeps_row_order_for_equal_medians);
	tcase_add_test(t, single_runs_tie_only_when_equal);
	tcase_add_test(t, ranking_line_reads_best_first_with_the_unranked_after);
	tcase_add_test(t, cell_text_shows_the_range_when_there_are_runs);
	suite_add_tcase(s, t);
	return test_run_suite(s);
}
