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

/*
 * A cheap tick counter for measuring busy time on hot paths: the TSC where
 * there is one (a few nanoseconds, no system call, not ordered with memory
 * accesses), else CLOCK_MONOTONIC in nanoseconds. Its rate is found by
 * reading it beside mono_ns() twice (ticks_to_ns).
 */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return mono_ns();
#endif
}

/* `t` ticks in nanoseconds, by the rate seen between two (ticks, mono_ns) pairs. */
static inline uint64_t ticks_to_ns(uint64_t t, uint64_t ticks0, uint64_t ns0, uint64_t ticks1,
				   uint64_t ns1)
{
	if (ticks1 <= ticks0 || ns1 <= ns0)
		return t;
	return (uint64_t)((double)t * (double)(ns1 - ns0) / (double)(ticks1 - ticks0));
}

#endif
