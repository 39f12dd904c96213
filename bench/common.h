/*
 * locus-bench: what every subcommand prints the same way — complaints,
 * progress, JSON strings — and the machine facts they all report.
 */
#ifndef LOCUS_BENCH_COMMON_H
#define LOCUS_BENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>

#include "mechlist.h"

/* "PROG: message" on stderr; returns 2 (the bad-command-line exit status). */
int bench_complain(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Online CPUs, at least 1. */
long bench_cpus(void);

/* A progress line on stderr, rewritten in place; only when stderr is a terminal. */
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Clear the progress line before anything else goes to the terminal. */
void bench_progress_clear(void);

/* s as a JSON string literal, quotes included. */
void bench_json_string(FILE *out, const char *s);

/* Library messages may span lines; ours are one line each: fold s in place. */
void bench_one_line(char *s);

/*
 * 1 if argv[*i] is option `name` (its value in *v, *i advanced past it), 0 if
 * not, -1 if its value is missing (reported).
 */
int bench_option(const char *prog, int argc, char **argv, int *i, const char *name, const char **v);

/* CLOCK_MONOTONIC, in seconds. */
double bench_now(void);
/* Sleep until bench_now() reaches t. */
void bench_sleep_until(double t);

/*
 * A report table: one row per mechanism (as measured), one column per
 * measured combination; the caller prints the title and footnotes.
 */
struct bench_table {
	const struct mechlist *rows;
	size_t ncols;
	const void *ctx;
	void (*label)(const void *ctx, size_t col, char *buf, size_t n);
	/* A cell's text; a trailing '*' (oversubscribed) hangs past the column. */
	void (*cell)(const void *ctx, size_t row, size_t col, char *buf, size_t n);
};
void bench_print_table(FILE *out, const struct bench_table *t);

#endif
