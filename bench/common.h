/*
 * locus-bench: what every subcommand prints the same way — complaints,
 * progress, JSON strings — and the machine facts they all report.
 */
#ifndef LOCUS_BENCH_COMMON_H
#define LOCUS_BENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>

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

#endif
