/*
 * The machine's idle CPUs asked to poll while a run of several nodes lasts
 * (idle.c, LOCUS_DSM_IDLE_POLL).
 *
 *   dsm_idle          every node checks its statistics against what this
 *                     process may do: with LOCUS_DSM_IDLE_POLL=0, or alone
 *                     (one node), the request is neither held nor tried
 *                     (idle_poll and idle_poll_error 0, no descriptor of
 *                     /dev/cpu_dma_latency open). Otherwise, where the device
 *                     may be opened for writing, the request is held: one
 *                     descriptor of the device open, idle_poll 1 (set only
 *                     after the whole value was written), and the device,
 *                     where it may be read, reads 0 (the least of every
 *                     holder's value: another run's 0 would do as well, so
 *                     idle_poll is the check that counts); where it may not, the
 *                     statistics carry the error. A child made by fork()
 *                     holds no descriptor of it. After locus_dsm_finalize no
 *                     descriptor of it is left open.
 *
 * Exits 0 when every check held; prints what was wrong otherwise.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dsm_verdict.h"
#include "locus/dsm.h"

#define DEVICE "/dev/cpu_dma_latency"

/* Descriptors of this process open on the device. */
static int open_on_device(void)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[300], target[PATH_MAX];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(path, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = 0;
			n += strcmp(target, DEVICE) == 0;
		}
	}
	closedir(d);
	return n;
}

/* May this process ask? Opening the device without writing a value adds a
   request at the default, which asks nothing. */
static int may_open(void)
{
	int fd = open(DEVICE, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

int main(int argc, char **argv)
{
	int may = may_open();
	if (locus_dsm_init(&argc, &argv) != 0)
		return 2;
	long bad = 0;
	const char *env = getenv("LOCUS_DSM_IDLE_POLL");
	int asked = !(env && strcmp(env, "0") == 0) && locus_dsm_nodes() > 1;
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	int fds = open_on_device();
	if (!asked) {
		if (s.idle_poll || s.idle_poll_error)
			dsm_test_fail("dsm_idle", &bad, "not asked: idle_poll, error", 0,
				      (long)s.idle_poll, (long)s.idle_poll_error);
		if (fds != 0)
			dsm_test_fail("dsm_idle", &bad, "not asked: descriptors", 0, fds, 0);
	} else if (may) {
		if (s.idle_poll != 1 || s.idle_poll_error != 0)
			dsm_test_fail("dsm_idle", &bad, "held: idle_poll (error)", (long)s.idle_poll_error,
				      (long)s.idle_poll, 1);
		if (fds != 1)
			dsm_test_fail("dsm_idle", &bad, "held: descriptors", 0, fds, 1);
		int32_t now = -1;
		int fd = open(DEVICE, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno != EACCES)
			dsm_test_fail("dsm_idle", &bad, "held: opening the device to read", 0, errno, 0);
		else if (fd >= 0 && read(fd, &now, sizeof(now)) != (ssize_t)sizeof(now))
			dsm_test_fail("dsm_idle", &bad, "held: reading the device", 0, errno, 0);
		else if (fd >= 0 && now != 0)
			dsm_test_fail("dsm_idle", &bad, "held: the device's value", 0, now, 0);
		if (fd >= 0)
			close(fd);
		pid_t child = fork();
		if (child == 0)
			_exit(open_on_device() == 0 ? 0 : 1);
		int status = 0;
		if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			dsm_test_fail("dsm_idle", &bad, "a child of fork() holds the device", 0,
				      status, 0);
	} else {
		if (s.idle_poll != 0 || s.idle_poll_error == 0)
			dsm_test_fail("dsm_idle", &bad, "refused: idle_poll, error", 0,
				      (long)s.idle_poll, (long)s.idle_poll_error);
		if (fds != 0)
			dsm_test_fail("dsm_idle", &bad, "refused: descriptors", 0, fds, 0);
	}
	int rc = dsm_test_verdict(bad, "dsm_idle");
	int left = open_on_device();
	if (left != 0) {
		fprintf(stderr, "dsm_idle: %d descriptors of %s open after locus_dsm_finalize\n",
			left, DEVICE);
		return 1;
	}
	return rc;
}
