/*
 * locus-bench: run one piece of work in a forked child process.
 *
 * Benchmarks measure each mechanism in a fresh process because some state is
 * process-wide (libitm picks its stm method once per process; delegation
 * servers are threads that fork would not copy), and because a mechanism that
 * crashes or hangs must cost one measurement, not the whole run.
 */
#ifndef LOCUS_BENCH_CHILD_H
#define LOCUS_BENCH_CHILD_H

#include <stddef.h>

enum child_end {
	CHILD_EXITED,	   /* code = exit status */
	CHILD_SIGNALED,	   /* code = signal number */
	CHILD_TIMED_OUT,   /* killed by us after the time limit */
	CHILD_NOT_STARTED, /* pipe or fork failed; code = errno */
};

struct child_status {
	enum child_end end;
	int code;
	size_t len;	/* bytes the child wrote, as stored in the buffer */
	double timeout; /* the limit it was given, in seconds */
};

/*
 * The child's work: write its result to fd and return the exit status.
 * It runs in a copy of the caller made by fork(), so the caller must not have
 * other threads running.
 */
typedef int (*child_body)(void *arg, int fd);

/*
 * Run body(arg, fd) in a child, collect up to cap bytes it writes into buf,
 * and wait for it to end, killing it after timeout seconds.
 * Returns 0 if it exited with status 0, else -1; *st says how it ended.
 */
int child_run(child_body body, void *arg, double timeout, void *buf, size_t cap,
	      struct child_status *st);

/* "child exited with status 3", "child was killed by signal 11 (Segmentation fault)", ... */
void child_describe(const struct child_status *st, char *out, size_t n);

/*
 * child_run for a fixed-size result: 0 if the child exited with status 0
 * after writing all `size` bytes of it into buf, else -1 with why it did not
 * in why.
 */
int child_result(child_body body, void *arg, double timeout, void *buf, size_t size, char *why,
		 size_t n);

/* The head of a measurement's result: whether the work succeeded, and if not why. */
struct child_outcome {
	int ok; /* 0: err says what went wrong */
	char err[512];
};

/*
 * child_result for a measurement whose result (buf) holds `out`: 0 if the
 * child sent all of it and out->ok says it succeeded; else -1 with why the
 * measurement failed, on one line, in why.
 */
int child_measure(child_body body, void *arg, double timeout, void *buf, size_t size,
		  struct child_outcome *out, char *why, size_t n);

/* Write all of buf to fd, retrying short writes; 0 or -1. */
int child_write_all(int fd, const void *buf, size_t len);

#endif
