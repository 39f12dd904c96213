/* locus-bench: run work in a forked child with a time limit (see child.h). */
#include "child.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

int child_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read what is there without blocking; 1 at end of file, 0 otherwise. */
static int read_some(int fd, char *buf, size_t cap, size_t *len)
{
	char scratch[4096];
	ssize_t n;

	/* Past cap, keep reading into scratch so that the child never blocks on a full pipe. */
	if (*len < cap)
		n = read(fd, buf + *len, cap - *len);
	else
		n = read(fd, scratch, sizeof(scratch));
	if (n < 0)
		return errno != EINTR && errno != EAGAIN;
	if (n == 0)
		return 1;
	if (*len < cap)
		*len += (size_t)n;
	return 0;
}

static void run_in_child(child_body body, void *arg, int fds[2])
{
	int rc;

	close(fds[0]);
	rc = body(arg, fds[1]);
	close(fds[1]);
	/* _exit, not exit: the parent's atexit handlers and stdio buffers are not ours to run. */
	_exit(rc);
}

/*
 * Collect output and wait for the child until it has exited or the deadline
 * has passed. Returns 1 if reaped (status in *wstatus), 0 on timeout.
 */
static int collect(pid_t pid, int fd, double deadline, char *buf, size_t cap, size_t *len,
		   int *wstatus)
{
	int eof = 0;

	for (;;) {
		double left = deadline - bench_now();
		int ms = left <= 0 ? 0 : left > 0.05 ? 50 : (int)(left * 1000) + 1;
		struct pollfd p = {.fd = fd, .events = POLLIN};

		if (!eof && poll(&p, 1, ms) > 0)
			eof = read_some(fd, buf, cap, len);
		else if (eof)
			poll(NULL, 0, ms);
		if (waitpid(pid, wstatus, WNOHANG) == pid) {
			/* Whatever the child wrote before exiting is still in the pipe. */
			while (!eof)
				eof = read_some(fd, buf, cap, len);
			return 1;
		}
		if (left <= 0)
			return 0;
	}
}

int child_run(child_body body, void *arg, double timeout, void *buf, size_t cap,
	      struct child_status *st)
{
	int fds[2], wstatus = 0;
	pid_t pid;

	memset(st, 0, sizeof(*st));
	st->timeout = timeout;
	if (pipe(fds) != 0) {
		st->end = CHILD_NOT_STARTED;
		st->code = errno;
		return -1;
	}
	/* Unflushed stdio would otherwise be written twice, once by each process. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		st->end = CHILD_NOT_STARTED;
		st->code = errno;
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0)
		run_in_child(body, arg, fds);
	close(fds[1]);
	if (!collect(pid, fds[0], bench_now() + timeout, buf, cap, &st->len, &wstatus)) {
		kill(pid, SIGKILL);
		waitpid(pid, &wstatus, 0);
		close(fds[0]);
		st->end = CHILD_TIMED_OUT;
		return -1;
	}
	close(fds[0]);
	if (WIFSIGNALED(wstatus)) {
		st->end = CHILD_SIGNALED;
		st->code = WTERMSIG(wstatus);
		return -1;
	}
	st->end = CHILD_EXITED;
	st->code = WEXITSTATUS(wstatus);
	return st->code == 0 ? 0 : -1;
}

void child_describe(const struct child_status *st, char *out, size_t n)
{
	switch (st->end) {
	case CHILD_EXITED:
		snprintf(out, n, "child exited with status %d", st->code);
		break;
	case CHILD_SIGNALED:
		snprintf(out, n, "child was killed by signal %d (%s)", st->code,
			 strsignal(st->code));
		break;
	case CHILD_TIMED_OUT:
		snprintf(out, n, "child did not finish within %.0f s and was killed", st->timeout);
		break;
	case CHILD_NOT_STARTED:
		snprintf(out, n, "child could not be started: %s", strerror(st->code));
		break;
	}
}

int child_result(child_body body, void *arg, double timeout, void *buf, size_t size, char *why,
		 size_t n)
{
	struct child_status st;

	if (child_run(body, arg, timeout, buf, size, &st)) {
		child_describe(&st, why, n);
		return -1;
	}
	if (st.len != size) {
		snprintf(why, n, "child exited without sending a complete result");
		return -1;
	}
	return 0;
}

int child_measure(child_body body, void *arg, double timeout, void *buf, size_t size,
		  struct child_outcome *out, char *why, size_t n)
{
	if (child_result(body, arg, timeout, buf, size, why, n))
		return -1;
	if (out->ok)
		return 0;
	bench_one_line(out->err);
	snprintf(why, n, "%s", out->err);
	return -1;
}
