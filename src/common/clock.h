/* The one clock: monotonic nanoseconds, and any clock's time in nanoseconds. */
#ifndef LOCUS_COMMON_CLOCK_H
#define LOCUS_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds in a second. An int (it fits), so that it mixes with timespec's
   long tv_nsec and with doubles as the literal would. */
#define NS_PER_S 1000000000

/* Nanoseconds as seconds. */
static inline double ns_to_s(uint64_t ns)
{
	return (double)ns * 1e-9;
}

static inline uint64_t timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * NS_PER_S + (uint64_t)ts->tv_nsec;
}

static inline uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return timespec_ns(&ts);
}

/* CLOCK_MONOTONIC in nanoseconds (a vDSO call, tens of nanoseconds). */
static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif
