/*
 * locus-bench: what every subcommand prints the same way — complaints,
 * progress, JSON strings — and the machine facts they all report.
 */
#ifndef LOCUS_BENCH_COMMON_H
#define LOCUS_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "child.h"
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

/* A measurement's JSON object up to its own fields, on stdout:
   {"bench":bench,"mechanism":written,"spec":spec */
void bench_json_head(const char *bench, const char *written, const char *spec);

/* Library messages may span lines; ours are one line each: fold s in place. */
void bench_one_line(char *s);

/*
 * 1 if argv[*i] is option `name` (its value in *v, *i advanced past it), 0 if
 * not, -1 if its value is missing (reported).
 */
int bench_option(const char *prog, int argc, char **argv, int *i, const char *name, const char **v);

/* --duration's limit: a day. */
#define BENCH_MAX_DURATION 86400.0

/*
 * --repeat N at argv[*i] (1 to BENCH_MAX_REPEAT) into *repeat: 1 taken, 0 not
 * that option, -1 bad (reported).
 */
int bench_repeat_option(const char *prog, int argc, char **argv, int *i, unsigned *repeat);

/*
 * What every sweep subcommand (fetchadd, locality) takes besides its own
 * parameters: --mechanisms, --duration, --servers, --repeat, --json and --help.
 */
struct bench_args {
	struct mechlist mechs; /* --mechanisms; every mechanism if none is named */
	double duration;       /* --duration, seconds (1) */
	uint64_t servers;      /* --servers (1): for delegation specs without servers= */
	unsigned repeat;       /* --repeat (1): runs of every cell, interleaved (repeat.h) */
	int json;	       /* --json */
	long cpus;	       /* online CPUs */
};

/*
 * Start reading a command line: 1 if it asks for --help or -h anywhere
 * (usage is then printed on stdout), else 0 with the defaults set.
 */
int bench_args_start(struct bench_args *a, const char *prog, const char *const *peers, int argc,
		     char **argv, void (*usage)(FILE *out));
/*
 * argv[*i], if it is one of the shared options: 0 (taken), 2 (bad, reported);
 * -1 if it is not one of them.
 */
int bench_args_option(struct bench_args *a, int argc, char **argv, int *i, uint64_t max_servers);
/* An argument no option took: reported; returns 2. */
int bench_args_unknown(const struct bench_args *a, const char *arg);
/* After the command line: every mechanism if none was named; 0, or 2 (reported). */
int bench_args_finish(struct bench_args *a);
/* The default client thread counts: 1, CPUs, 2 x CPUs. */
void bench_default_threads(const struct bench_args *a, uint64_t t[3]);

/* CLOCK_MONOTONIC, in seconds. */
double bench_now(void);
/* The time-stamp counter, for figures in cycles; 0 where there is none. */
static inline uint64_t bench_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}

/* Sleep until bench_now() reaches t. */
void bench_sleep_until(double t);

/* What a report table's cell holds: a figure (OK), or none and why. */
enum bench_cell { BENCH_CELL_EMPTY, BENCH_CELL_OK, BENCH_CELL_FAILED, BENCH_CELL_LOST };
/* The text of a cell without a figure: "FAIL", "LOST" or "-". */
const char *bench_cell_text(enum bench_cell state);

/*
 * Measure one cell in a child (child_measure): body writes a result of size
 * bytes that holds out; verdict judges a result the child sent (saying why
 * when it is not OK). The cell's state, and why when it is not OK.
 */
enum bench_cell bench_measure(child_body body, void *params, double timeout, void *result,
			      size_t size, struct child_outcome *out,
			      enum bench_cell (*verdict)(const void *result, char *why, size_t n),
			      char *why, size_t n);

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
