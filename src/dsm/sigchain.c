/*
 * The program's SIGSEGV handler beside the runtime's.
 *
 * The runtime takes its page faults as SIGSEGV, so from init to finalize the
 * kernel's SIGSEGV disposition is the runtime's handler, and the program's
 * own disposition is kept here instead ("chained"): what the program had at
 * init, and whatever it installs later. A program's sigaction(SIGSEGV, ...)
 * and signal(SIGSEGV, ...) land here because this library defines both and
 * passes every other call on to the C library's (the same interposition a
 * JVM's signal-chaining library does; the exported names are the only ones
 * without the locus_ prefix, see docs/dsm.md). The runtime's handler keeps
 * faults inside the shared region and passes every other SIGSEGV to the
 * chained disposition with sigaction's semantics: SA_SIGINFO or not, its
 * mask (and SA_NODEFER), SA_RESETHAND. A handler that returns, or leaves by
 * siglongjmp, behaves as it would without the runtime.
 *
 * Before init and after finalize, both functions are plain pass-throughs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "common/atomic.h"
#include "sigchain.h"

#define EXPORTED __attribute__((visibility("default")))

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef void (*(*signal_fn)(int, void (*)(int)))(int);

/* Two slots: a writer fills the one not in use, then publishes it, so the
   handler always reads a whole disposition. */
static struct chained {
	struct sigaction sa;
	int mpi; /* the MPI library's crash reporter, not the program's */
} slot[2];
static uint32_t cur;
static int owning;
static pthread_mutex_t writers = PTHREAD_MUTEX_INITIALIZER;

static sigaction_fn real_sigaction(void)
{
	static sigaction_fn fn;
	if (!fn)
		fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	return fn;
}

static signal_fn real_signal(void)
{
	static signal_fn fn;
	if (!fn)
		fn = (signal_fn)dlsym(RTLD_NEXT, "signal");
	return fn;
}

int dsm_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigaction_fn fn = real_sigaction();
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(sig, act, old);
}

/* Is handler part of the MPI stack (its crash reporter prints a backtrace
   and kills the process)? Then a wild access is still worth naming first. */
static int in_mpi(const struct sigaction *sa)
{
	static const char *const libs[] = {"libucs", "libucp",	  "libuct",
					   "libmpi", "libfabric", "libopen-pal"};
	Dl_info info;
	if (sa->sa_handler == SIG_DFL || sa->sa_handler == SIG_IGN ||
	    !dladdr((void *)sa->sa_handler, &info) || !info.dli_fname)
		return 0;
	const char *base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strncmp(base, libs[i], strlen(libs[i])))
			return 1;
	return 0;
}

static void publish(const struct sigaction *sa)
{
	uint32_t next = ld_relaxed(&cur) ^ 1;
	slot[next].sa = *sa;
	slot[next].mpi = in_mpi(sa);
	st_release(&cur, next);
}

int dsm_sigchain_own(const struct sigaction *mine)
{
	pthread_mutex_lock(&writers);
	struct sigaction prev;
	int rc = dsm_sigaction(SIGSEGV, mine, &prev);
	if (rc == 0) {
		publish(&prev);
		st_release(&owning, 1);
	}
	pthread_mutex_unlock(&writers);
	return rc;
}

void dsm_sigchain_release(void)
{
	pthread_mutex_lock(&writers);
	if (ld_acquire(&owning)) {
		struct sigaction sa = slot[ld_acquire(&cur)].sa;
		st_release(&owning, 0);
		dsm_sigaction(SIGSEGV, &sa, NULL);
	}
	pthread_mutex_unlock(&writers);
}

int dsm_sigchain_default(void)
{
	const struct chained *c = &slot[ld_acquire(&cur)];
	return c->mpi || c->sa.sa_handler == SIG_DFL || c->sa.sa_handler == SIG_IGN;
}

/*
 * Pass a SIGSEGV that is not the runtime's to the program's disposition.
 * Default (or ignored, which a fault cannot be): a fault the kernel raised
 * gets the default disposition back and returns, so the access runs again
 * and the process dies of it as it would have; one sent by kill() is raised
 * again under the default disposition.
 */
void dsm_sigchain_pass(int sig, siginfo_t *si, void *uctx)
{
	struct chained c = slot[ld_acquire(&cur)];
	struct sigaction *sa = &c.sa;
	int sent = si->si_code <= 0;
	if (sa->sa_handler == SIG_IGN && sent)
		return;
	if (sa->sa_handler == SIG_DFL || sa->sa_handler == SIG_IGN) {
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		st_release(&owning, 0);
		dsm_sigaction(SIGSEGV, &dfl, NULL);
		if (sent) {
			sigset_t s;
			sigemptyset(&s);
			sigaddset(&s, SIGSEGV);
			pthread_sigmask(SIG_UNBLOCK, &s, NULL);
			raise(SIGSEGV);
		}
		return;
	}
	if (sa->sa_flags & SA_RESETHAND) {
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		publish(&dfl);
	}
	sigset_t mask, saved;
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&sa->sa_mask, s) == 1)
			sigaddset(&mask, s);
	if (sa->sa_flags & SA_NODEFER)
		sigdelset(&mask, SIGSEGV);
	else
		sigaddset(&mask, SIGSEGV);
	pthread_sigmask(SIG_SETMASK, &mask, &saved);
	if (sa->sa_flags & SA_SIGINFO)
		sa->sa_sigaction(sig, si, uctx);
	else
		sa->sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

EXPORTED int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig != SIGSEGV || !ld_acquire(&owning))
		return dsm_sigaction(sig, act, old);
	pthread_mutex_lock(&writers);
	if (!ld_acquire(&owning)) { /* finalize came first */
		pthread_mutex_unlock(&writers);
		return dsm_sigaction(sig, act, old);
	}
	if (old)
		*old = slot[ld_acquire(&cur)].sa;
	if (act)
		publish(act);
	pthread_mutex_unlock(&writers);
	return 0;
}

EXPORTED void (*signal(int sig, void (*handler)(int)))(int)
{
	if (sig != SIGSEGV || !ld_acquire(&owning)) {
		signal_fn fn = real_signal();
		return fn ? fn(sig, handler) : SIG_ERR;
	}
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART; /* signal()'s BSD semantics, as glibc gives them */
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) != 0)
		return SIG_ERR;
	return old.sa_handler;
}
