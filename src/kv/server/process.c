/* locus-kv's process-wide setup (process.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kv/server/process.h"

#define EX_NOUSER 67
#define EX_OSERR  71

void kv_raise_nofile(int maxconns)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	rlim_t want = (rlim_t)maxconns + 64;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want <= rl.rlim_max ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < want)
		fprintf(stderr, "locus-kv: warning: -c %d exceeds the open file limit %lu\n",
			maxconns, (unsigned long)rl.rlim_cur);
}

void kv_enable_coredumps(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_CORE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_CORE, &rl);
	}
	if (getrlimit(RLIMIT_CORE, &rl) != 0 || rl.rlim_cur == 0) {
		fprintf(stderr, "failed to ensure corefile creation\n");
		exit(EX_OSERR);
	}
}

void kv_become_user(const char *user)
{
	if (getuid() != 0 && geteuid() != 0)
		return; /* as memcached: -u matters only to root */
	struct passwd *pw = getpwnam(user);
	if (!pw) {
		fprintf(stderr, "can't find the user %s to switch to\n", user);
		exit(EX_NOUSER);
	}
	if (setgroups(0, NULL) < 0 && errno != EPERM) {
		fprintf(stderr, "failed to drop supplementary groups: %s\n", strerror(errno));
		exit(EX_OSERR);
	}
	if (setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0) {
		fprintf(stderr, "failed to assume identity of user %s\n", user);
		exit(EX_OSERR);
	}
}

void kv_daemonize(int keep_cwd, int keep_stdio)
{
	if (signal(SIGHUP, SIG_IGN) == SIG_ERR)
		perror("locus-kv: failed to ignore SIGHUP");
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "failed to daemon() in order to daemonize\n");
		exit(EXIT_FAILURE);
	}
	if (pid > 0)
		_exit(0);
	if (setsid() < 0) {
		fprintf(stderr, "failed to daemon() in order to daemonize\n");
		exit(EXIT_FAILURE);
	}
	if (!keep_cwd && chdir("/") != 0) {
		perror("locus-kv: chdir /");
		exit(EXIT_FAILURE);
	}
	if (keep_stdio)
		return;
	int fd = open("/dev/null", O_RDWR);
	if (fd < 0) {
		perror("locus-kv: open /dev/null");
		exit(EXIT_FAILURE);
	}
	for (int i = 0; i <= 2; i++)
		if (dup2(fd, i) < 0) {
			perror("locus-kv: dup2");
			exit(EXIT_FAILURE);
		}
	if (fd > 2)
		close(fd);
}

/* The pid file this process wrote, removed by an exit that stops it early (kv_die). */
static const char *pidfile_written;
static pid_t pidfile_writer;

static void pidfile_remove_at_exit(void)
{
	if (pidfile_written && getpid() == pidfile_writer)
		unlink(pidfile_written);
}

void kv_pidfile_write(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f) {
		long old;
		if (fscanf(f, "%ld", &old) == 1 && old > 0 && kill((pid_t)old, 0) == 0)
			fprintf(stderr,
				"WARNING: The pid file contained the following (running) "
				"pid: %ld\n",
				old);
		fclose(f);
	}
	/* Through a temporary name, so that a reader never sees an empty file. */
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		fprintf(stderr, "locus-kv: -P %s: the path is too long\n", path);
		return;
	}
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "Could not open the pid file %s for writing: %s\n", tmp,
			strerror(errno));
		return;
	}
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) != 0)
		fprintf(stderr, "Could not close the pid file %s: %s\n", tmp, strerror(errno));
	if (rename(tmp, path) != 0) {
		fprintf(stderr, "Could not rename the pid file from %s to %s: %s\n", tmp, path,
			strerror(errno));
		return;
	}
	if (!pidfile_written)
		atexit(pidfile_remove_at_exit);
	pidfile_written = path;
	pidfile_writer = getpid();
}

void kv_pidfile_remove(const char *path)
{
	pidfile_written = NULL;
	if (path && unlink(path) != 0)
		fprintf(stderr, "Could not remove the pid file %s: %s\n", path, strerror(errno));
}

/* Locked memory, from /proc/self/status (VmLck, kB); -1 if it cannot be read. */
static long locked_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kb = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

void kv_lock_memory(void)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
		fprintf(stderr, "warning: -k invalid, mlockall() failed: %s\n", strerror(errno));
	else if (locked_kb() == 0) /* e.g. under a sanitizer that makes mlockall a no-op */
		fprintf(stderr, "warning: -k invalid, mlockall() failed: no memory was locked\n");
}
