/*
 * fork() and the executors: what a child inherits and how it gets working
 * servers again.
 *
 * prepare (in the forking thread): drain the thread's own posts, so that
 * parent and child agree on what ran before the fork; then lock the pools.
 * parent: unlock. child: only the forking thread exists; every server thread
 * is gone and whatever other threads were writing may be half-written. The
 * delegation pools and each mpsc start fresh servers at their next use in
 * the child; requests other threads had sent but that were not yet served
 * are not run in the child (they run in the parent).
 */
#ifndef LOCUS_SYNC_FORK_H
#define LOCUS_SYNC_FORK_H

/* Install the fork handlers (once per process; cheap to call again). */
void sync_fork_register(void);

#endif
