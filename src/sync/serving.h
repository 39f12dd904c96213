/*
 * What the calling thread is serving right now, so that a section can tell
 * when it would wait for itself.
 *
 * A delegation server, an mpsc server, or a client serving a flat slot runs
 * other threads' sections. If such a section runs or posts a section of an
 * executor served by the same server or slot, the request would wait for the
 * very pass that is running it: a deadlock. Each serving context pushes a
 * frame (on its own stack) naming what it serves; the executors look here
 * and run such a nested section in place, which is exactly what the server
 * would have done, with the same exclusion.
 *
 * A dedicated server thread (delegation or mpsc) is never a client that
 * drains, so a post made by a section it runs completes before post returns
 * (`serving_on_server`): nothing can be left pending on a thread that never
 * drains.
 */
#ifndef LOCUS_SYNC_SERVING_H
#define LOCUS_SYNC_SERVING_H

#include "common/tls.h"

struct serving_frame {
	const void *what; /* the struct dl_server or struct mpsc being served */
	int dedicated;	  /* 1: this thread is that server's own thread */
	struct serving_frame *up;
};

extern LOCUS_TLS struct serving_frame *sync_serving;

static inline void serving_enter(struct serving_frame *f, const void *what, int dedicated)
{
	f->what = what;
	f->dedicated = dedicated;
	f->up = sync_serving;
	sync_serving = f;
}

static inline void serving_leave(struct serving_frame *f)
{
	sync_serving = f->up;
}

/* 1 if the calling thread is, at this moment, serving `what`. */
static inline int serving_is(const void *what)
{
	for (struct serving_frame *f = sync_serving; f; f = f->up)
		if (f->what == what)
			return 1;
	return 0;
}

/* 1 if the calling thread is a dedicated server's thread. */
static inline int serving_on_server(void)
{
	struct serving_frame *f = sync_serving;
	while (f && f->up)
		f = f->up;
	return f && f->dedicated;
}

#endif
