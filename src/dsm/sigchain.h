/*
 * The program's SIGSEGV disposition while the runtime owns the signal
 * (sigchain.c says how and why).
 */
#ifndef LOCUS_DSM_SIGCHAIN_H
#define LOCUS_DSM_SIGCHAIN_H

#include <signal.h>

/* The C library's sigaction, past this library's own. */
int dsm_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Install the runtime's SIGSEGV handler; the disposition it replaces becomes
   the program's (chained). 0, or -1 with errno. */
int dsm_sigchain_own(const struct sigaction *mine);
/* Give the kernel the program's disposition back (finalize). */
void dsm_sigchain_release(void);
/* The program has no handler of its own (default, ignored, or only the MPI
   library's crash reporter): a wild access crashes the process. */
int dsm_sigchain_default(void);
/* In the runtime's handler: a SIGSEGV that is not a DSM fault goes to the
   program's disposition. */
void dsm_sigchain_pass(int sig, siginfo_t *si, void *uctx);

#endif
