/*
 * Page faults: SIGSEGV with SA_SIGINFO. A fault inside the shared region is
 * handed to the communication thread and the faulting thread sleeps until the
 * protocol has made the access legal; the instruction then runs again. Any
 * other SIGSEGV (a fault elsewhere, or one sent by kill) goes to the program's
 * own disposition, installed before init or after (sigchain.c); when that is
 * the default, a wild access is reported and the process dies of it as it
 * would have. In a child of fork() the region is detached, and touching it
 * ends the child with a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "sigchain.h"

static int installed;

/* x86-64 page-fault error code: bit 1 set for a write access. */
static int fault_is_write(void *uctx)
{
#if defined(__x86_64__)
	ucontext_t *uc = uctx;
	return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
#error "locus-dsm reads the access kind from the x86-64 page-fault error code"
#endif
}

static void report_outside(void *addr)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg),
			 "locus-dsm: node %d: segmentation fault at %p, outside the shared region "
			 "[%p, %p): not a DSM access, crashing\n",
			 dsm.node, addr, (void *)dsm.app, (void *)(dsm.app + dsm.size));
	if (n > 0 && write(2, msg, (size_t)n) < 0)
		return;
}

static void on_segv(int sig, siginfo_t *si, void *uctx)
{
	int saved_errno = errno;
	char *addr = (char *)dsm_canon(si->si_addr); /* a shared global: its region page */
	int fault = si->si_code > 0;		     /* raised by the kernel, not sent */
	if (!fault || !dsm.app || addr < dsm.app || addr >= dsm.app + dsm.size) {
		if (fault && dsm.app && dsm.proto->stray_fault && dsm.proto->stray_fault(uctx)) {
			errno = saved_errno;
			return;
		}
		if (fault && dsm_sigchain_default())
			report_outside(addr);
		dsm_sigchain_pass(sig, si, uctx);
		errno = saved_errno;
		return;
	}
	if (dsm_forked)
		dsm_fatal_child("touched the shared region");
	size_t page = (size_t)(addr - dsm.app) / dsm.page_size;
	int write = fault_is_write(uctx);
	if (dsm.proto->thread_fault && dsm.proto->thread_fault(page, addr, write, uctx)) {
		errno = saved_errno;
		return;
	}
	uint64_t t0 = mono_ns();
	struct dsm_stall st;
	dsm_stall_begin_lazy(&st, STALL_FAULT); /* its waits are dsm_call's */
	struct dsm_req r = {.kind = DSM_REQ_FAULT, .a = page, .b = (uint64_t)write};
	dsm_call(&r);
	uint64_t resumed = mono_ns();
	if (r.result == DSM_REMOTE && dsm_self.counted)
		dsm_miss_steps(&r, t0, resumed);
	/* The page's minimum residence counts from when this thread runs again. */
	uint64_t t1 = dsm_stall_end(&st, resumed, r.result);
	st_release(&dsm.resume_ns[page], t1);
	errno = saved_errno;
}

int dsm_fault_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	/* On the thread's alternate stack when it has one (a protocol that
	   rewrites the application's stack sets one up: avr). */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (dsm.proto && dsm.proto->fault_mask)
		dsm.proto->fault_mask(&sa.sa_mask);
	if (dsm_sigchain_own(&sa) != 0) {
		perror("locus-dsm: sigaction(SIGSEGV)");
		return -1;
	}
	installed = 1;
	return 0;
}

void dsm_fault_uninstall(void)
{
	if (installed)
		dsm_sigchain_release();
	installed = 0;
}
