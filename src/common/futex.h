/*
 * The one wrapper over the Linux futex system call. Waits may return
 * spuriously (a signal, a value that changed before the call): callers
 * always re-check their condition in a loop.
 */
#ifndef LOCUS_COMMON_FUTEX_H
#define LOCUS_COMMON_FUTEX_H

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FUTEX_WAKE_ALL INT_MAX

/* The system call itself: op as in futex(2), with its flags. 0 or -1 and errno. */
static inline long futex_call(uint32_t *addr, int op, uint32_t val, const struct timespec *ts,
			      uint32_t val3)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, val3);
}

/* Sleep while *addr == val (process-private). */
static inline void futex_wait(uint32_t *addr, uint32_t val)
{
	futex_call(addr, FUTEX_WAIT_PRIVATE, val, NULL, 0);
}

/* The same, for at most `rel` (relative). 0, or ETIMEDOUT when the time ran out. */
static inline int futex_wait_for(uint32_t *addr, uint32_t val, const struct timespec *rel)
{
	if (futex_call(addr, FUTEX_WAIT_PRIVATE, val, rel, 0) == 0)
		return 0;
	return errno == ETIMEDOUT ? ETIMEDOUT : 0;
}

/*
 * Wake up to n sleepers on addr (process-private). Harmless if the memory
 * has since been reused: a sleeper woken by mistake re-checks its condition
 * and sleeps again.
 */
static inline void futex_wake(uint32_t *addr, int n)
{
	futex_call(addr, FUTEX_WAKE_PRIVATE, n, NULL, 0);
}

#endif
