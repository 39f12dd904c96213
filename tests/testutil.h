/*
 * Support shared by the C test programs: how slow this build is, bounded
 * joins (a hung mechanism fails its test instead of hanging ctest), and the
 * Check runner boilerplate.
 */
#ifndef LOCUS_TESTUTIL_H
#define LOCUS_TESTUTIL_H

#include <pthread.h>
#include <stdint.h>

#include <check.h>

/* LOCUS_TEST_TSAN / LOCUS_TEST_ASAN come from tests/CMakeLists.txt (LOCUS_SANITIZE). */
#if defined(LOCUS_TEST_TSAN) || defined(LOCUS_TEST_ASAN)
#define TEST_SANITIZED 1
#else
#define TEST_SANITIZED 0
#endif

/*
 * Wall-clock bounds are deadlock detectors, never performance assertions: they
 * are generous, and larger under sanitizers, which run everything several
 * times slower.
 */
#define TEST_SLOWDOWN (TEST_SANITIZED ? 4 : 1)

/*
 * Work that only repeats (random inputs, rounds) is divided by this under
 * sanitizers, as tests/dsm's dsm_scale does, so that a sanitized run on a
 * busy machine stays far inside its limits; what it checks is the same.
 */
#define TEST_SCALE (TEST_SANITIZED ? 4 : 1)

/* Online CPUs (at least 1). */
int test_ncpus(void);

/* Join t, giving up after `seconds`: 0 if joined, ETIMEDOUT (t still running) otherwise. */
int test_join_within(pthread_t t, unsigned seconds);

/* Start a thread or fail the test. */
void test_start_thread(pthread_t *t, void *(*fn)(void *), void *arg);

/* Sleep for `ms` milliseconds: only to give another thread a chance to run. */
void test_sleep_ms(unsigned ms);

/*
 * Run every suite in fork mode (each test in its own process; the default,
 * unless CK_FORK=no) and return the process exit status.
 */
int test_run_suite(Suite *s);

#endif
