/* Thin wrappers over the Linux futex system call (process-private). */
#ifndef LOCUS_SYNC_FUTEX_H
#define LOCUS_SYNC_FUTEX_H

#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Sleep while *addr == val. Returns at once if it differs; may also return
 * spuriously, so callers always re-check their condition in a loop.
 */
static inline void futex_wait(uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

/*
 * Wake up to n sleepers on addr. Harmless if the memory has since been
 * reused: a sleeper woken by mistake re-checks its condition and sleeps again.
 */
static inline void futex_wake(uint32_t *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

#define FUTEX_WAKE_ALL INT_MAX

#endif
