/*
 * One thread-exit hook for everything the sync layer keeps per thread.
 *
 * A module that gives a thread per-thread state arms its slot with the
 * function that releases that state; the first arming makes the hook run
 * when the thread exits. The hook runs the armed slots in slot order, so the
 * drain (which completes the thread's posts, and the posts their callbacks
 * make, to every executor) runs before any module frees what a post needs.
 * A slot armed again while the hook runs, or by a later thread-exit
 * destructor, makes the hook run once more (glibc repeats destructors whose
 * key was set again), so nothing posted on the way out is lost.
 */
#ifndef LOCUS_SYNC_THREAD_EXIT_H
#define LOCUS_SYNC_THREAD_EXIT_H

enum {
	EXIT_DRAIN = 0,	 /* locus_cs_drain: the thread's posts, first */
	EXIT_DELEG = 1,	 /* delegation client state and channels */
	EXIT_MPSC = 2,	 /* mpsc request records */
	EXIT_QNODES = 3, /* the queue-node pool of the locks */
	EXIT_ERRBUF = 4, /* the executor's error message (cs.c) */
	EXIT_SLOTS
};

/* Run fn at this thread's exit (in slot order); cheap once armed. */
void sync_exit_arm(unsigned slot, void (*fn)(void));

#endif
