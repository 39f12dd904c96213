/* locus-bench --repeat: sweep order, summaries and rankings (see repeat.h). */
#include "repeat.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "mechlist.h"

int bench_sweep_run(const struct bench_sweep *s)
{
	int rc = 0;

	for (size_t col = 0; col < s->ncols; col++) {
		for (unsigned run = 0; run < s->repeat; run++)
			for (size_t m = 0; m < s->nmech; m++)
				if (s->measure(s->ctx, col, run, m))
					rc = 1;
		if (s->column_done)
			s->column_done(s->ctx, col);
	}
	return rc;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

void bench_summarize(const double *v, size_t n, struct bench_summary *s)
{
	double small[64], *sorted = n <= 64 ? small : malloc(n * sizeof(*sorted));

	memset(s, 0, sizeof(*s));
	if (n == 0)
		return;
	if (!sorted) {
		/* Without memory for a sorted copy the range is still exact; the median is not. */
		s->min = s->max = v[0];
		for (size_t i = 1; i < n; i++) {
			s->min = v[i] < s->min ? v[i] : s->min;
			s->max = v[i] > s->max ? v[i] : s->max;
		}
		s->median = (s->min + s->max) / 2;
		s->n = n;
		return;
	}
	memcpy(sorted, v, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	s->min = sorted[0];
	s->max = sorted[n - 1];
	s->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	s->n = n;
	if (sorted != small)
		free(sorted);
}

int bench_overlap(const struct bench_summary *a, const struct bench_summary *b)
{
	return a->min <= b->max && b->min <= a->max;
}

/* 1 if row x ranks after row y (a stable insertion sort keeps equal medians in row order). */
static int after(const struct bench_summary *x, const struct bench_summary *y, int higher_better)
{
	return higher_better ? x->median < y->median : x->median > y->median;
}

size_t bench_rank(const struct bench_summary *s, size_t n, int higher_better, size_t *order,
		  char *rel)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (s[i].n == 0)
			continue;
		j = k++;
		while (j > 0 && after(&s[order[j - 1]], &s[i], higher_better)) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (size_t i = 0; i < k; i++)
		rel[i] = i == 0 ? '\0' : bench_overlap(&s[order[i - 1]], &s[order[i]]) ? '~' : '>';
	return k;
}

void bench_print_ranking(FILE *out, const char *label, int label_width, const char *const *names,
			 const struct bench_summary *s, size_t n, int higher_better)
{
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	char *rel = malloc(n ? n : 1);
	size_t k, unranked = 0;

	if (!order || !rel) {
		fprintf(out, "  %-*s  (out of memory)\n", label_width, label);
		free(order);
		free(rel);
		return;
	}
	k = bench_rank(s, n, higher_better, order, rel);
	fprintf(out, "  %-*s ", label_width, label);
	for (size_t i = 0; i < k; i++) {
		if (i)
			fprintf(out, " %c", rel[i]);
		fprintf(out, " %s", names[order[i]]);
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i].n)
			continue;
		fprintf(out, "%s %s",
			unranked++ ? ","
			: k	   ? "; not ranked:"
				   : " not ranked:",
			names[i]);
	}
	fputc('\n', out);
	free(order);
	free(rel);
}

void bench_summary_text(char *buf, size_t n, const struct bench_summary *s, double scale,
			int decimals, const char *mark)
{
	if (s->n <= 1)
		snprintf(buf, n, "%.*f%s", decimals, s->median / scale, mark);
	else
		snprintf(buf, n, "%.*f (%.*f-%.*f)%s", decimals, s->median / scale, decimals,
			 s->min / scale, decimals, s->max / scale, mark);
}

void bench_print_rankings(FILE *out, const struct bench_rankings *r)
{
	size_t n = r->rows->n;
	const char **names = malloc((n ? n : 1) * sizeof(*names));
	struct bench_summary *s = malloc((n ? n : 1) * sizeof(*s));
	char label[160];
	int width = 0;

	if (!names || !s) {
		fprintf(out, "ranking: out of memory\n");
		free(names);
		free(s);
		return;
	}
	for (size_t i = 0; i < n; i++)
		names[i] = r->rows->m[i].run;
	for (size_t col = 0; col < r->ncols; col++) {
		r->label(r->ctx, col, label, sizeof(label));
		width = (int)strlen(label) > width ? (int)strlen(label) : width;
	}
	fprintf(out,
		"ranking by the median %s of %u runs, best first: '>' ahead (the ranges apart), "
		"'~' tied (the ranges overlap)\n",
		r->what, r->repeat);
	for (size_t col = 0; col < r->ncols; col++) {
		for (size_t i = 0; i < n; i++)
			r->summary(r->ctx, i, col, &s[i]);
		r->label(r->ctx, col, label, sizeof(label));
		bench_print_ranking(out, label, width, names, s, n, r->higher_better);
	}
	free(names);
	free(s);
}

void bench_json_summary_tail(FILE *out, const struct bench_summary *s, size_t n, size_t m,
			     const size_t *order, size_t k, const struct mechlist *rows,
			     int decimals)
{
	size_t rank = 0, ties = 0;

	for (size_t i = 0; i < k; i++)
		rank = order[i] == m ? i + 1 : rank;
	if (s[m].n)
		fprintf(out, ",\"median\":%.*f,\"min\":%.*f,\"max\":%.*f,\"rank\":%zu", decimals,
			s[m].median, decimals, s[m].min, decimals, s[m].max, rank);
	else
		fprintf(out, ",\"median\":null,\"min\":null,\"max\":null,\"rank\":null");
	fprintf(out, ",\"ties\":[");
	for (size_t o = 0; s[m].n && o < n; o++) {
		if (o == m || !s[o].n || !bench_overlap(&s[m], &s[o]))
			continue;
		fprintf(out, "%s", ties++ ? "," : "");
		bench_json_string(out, rows->m[o].spec);
	}
	fprintf(out, "]}\n");
}
