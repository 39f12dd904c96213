/*
 * locus-bench --repeat: the order measurements run in, what a cell measured
 * several times shows, and how sure a ranking of a column is.
 *
 * A column's runs are interleaved (A B C A B C ..., not A A A B B B ...), so
 * that a drift in the machine's speed while a column is measured (another
 * job starting, the clock slowing down) touches every mechanism alike rather
 * than whichever ran last. A cell measured N times is its median and its
 * range (min to max); two mechanisms whose ranges overlap are tied: these
 * runs do not tell them apart.
 */
#ifndef LOCUS_BENCH_REPEAT_H
#define LOCUS_BENCH_REPEAT_H

#include <stddef.h>
#include <stdio.h>

/* --repeat's limit. */
#define BENCH_MAX_REPEAT 1000

/*
 * One sweep: every (column, run, mechanism) measured once, in the order
 * for each column: for each run: for each mechanism.
 */
struct bench_sweep {
	size_t ncols, nmech;
	unsigned repeat; /* runs per cell, at least 1 */
	void *ctx;
	/* Measure one: 0, or nonzero if it failed (reported by the callee). */
	int (*measure)(void *ctx, size_t col, unsigned run, size_t mech);
	/* After a column's last run (NULL: nothing to do): its summaries, say. */
	void (*column_done)(void *ctx, size_t col);
};
/* 0 if every measurement succeeded, else 1; every one is measured either way. */
int bench_sweep_run(const struct bench_sweep *s);

/* A figure measured n times: its median and range. n == 0: nothing to summarize. */
struct bench_summary {
	double median, min, max;
	size_t n;
};
/* Summarize v[0..n) (left as it is); the median of an even count is the mean of the middle two. */
void bench_summarize(const double *v, size_t n, struct bench_summary *s);
/* 1 if the ranges [min, max] of a and b share a point: a tie. */
int bench_overlap(const struct bench_summary *a, const struct bench_summary *b);

/*
 * Rank the rows that have a summary (n > 0), best first by median (higher
 * is better, or lower with higher_better 0; equal medians keep row order):
 * order[0..k) are their row indices, rel[i] for 0 < i < k is '~' when the
 * ranges of order[i-1] and order[i] overlap (a tie), '>' when the first is
 * ahead of the second with the ranges apart; rel[0] is '\0'. Returns k.
 * order and rel hold n entries each.
 */
size_t bench_rank(const struct bench_summary *s, size_t n, int higher_better, size_t *order,
		  char *rel);

/*
 * One ranking line: "  LABEL  a > b ~ c" (padded to label_width), then
 * "; not ranked: d" for the rows without a summary. names[i] is row i's name.
 */
void bench_print_ranking(FILE *out, const char *label, int label_width, const char *const *names,
			 const struct bench_summary *s, size_t n, int higher_better);

struct mechlist;

/* The rankings under a table: a heading, then one line per column. */
struct bench_rankings {
	const char *what; /* what the medians are of: "Mops/s" */
	int higher_better;
	unsigned repeat;
	const struct mechlist *rows; /* named as measured (their run spec) */
	size_t ncols;
	const void *ctx;
	void (*label)(const void *ctx, size_t col, char *buf, size_t n);
	/* A cell's summary; n == 0 when it has none (failed): not ranked. */
	void (*summary)(const void *ctx, size_t row, size_t col, struct bench_summary *s);
};
void bench_print_rankings(FILE *out, const struct bench_rankings *r);

/*
 * The end of a --json summary line for row m of a column whose summaries are
 * s[0..n) and ranking order[0..k) (bench_rank): median, min, max and rank
 * (null where the row has no run), then the other rows whose ranges overlap
 * its own ("ties", by spec), and the closing brace. decimals: the figures'.
 */
void bench_json_summary_tail(FILE *out, const struct bench_summary *s, size_t n, size_t m,
			     const size_t *order, size_t k, const struct mechlist *rows,
			     int decimals);

/*
 * A summary as a table cell: "12.35" (one run), or "12.35 (11.02-13.10)"
 * (median and range), with `decimals` decimals after dividing by scale, then
 * mark ("*" or "").
 */
void bench_summary_text(char *buf, size_t n, const struct bench_summary *s, double scale,
			int decimals, const char *mark);

#endif
