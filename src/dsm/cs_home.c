/*
 * The executor across nodes (include/locus/cs.h's provider): at init the
 * runtime gives locus_cs a mechanism, "home", and a say over state in the
 * shared region, so that a program picks by name whether a section on a
 * shared structure moves to the data or the data to the section:
 *
 *   locus_cs_open("home", &shared)   every section is shipped to the home of
 *                                    `shared` and runs on its server, under
 *                                    the state's DSM lock (taken once per run
 *                                    of calls); "home:alone" skips the lock,
 *                                    for state every section of which is
 *                                    shipped
 *   locus_cs_open("mcs", &shared)    (any lock, combining or stm) each section
 *                                    runs here, between the state's DSM lock
 *                                    and its release: exclusion among every
 *                                    node's sections, the node's own threads
 *                                    ordered by the mechanism first
 *
 * Both take the same DSM lock, so the two may be mixed on one state, under
 * every protocol. liblocus-dsm does not link liblocus: it finds
 * locus_cs_provide only when the program does (a weak reference).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "locus/cs.h"

extern int locus_cs_provide(const struct locus_cs_provider *p) __attribute__((weak));

struct home {
	void *state;
	int alone;
};

static int owns(const void *state)
{
	return locus_dsm_home(state) >= 0;
}

static void enter(void *state)
{
	locus_dsm_lock(dsm_addr_lock(state));
}

static void leave(void *state)
{
	locus_dsm_unlock(dsm_addr_lock(state));
}

static void *home_open(void *state, const char *options, char *err, size_t errlen)
{
	int alone = options && !strcmp(options, "alone");
	if (options && !alone) {
		snprintf(err, errlen,
			 "home: unknown option '%s'; home takes alone (no lock at "
			 "the home: every section on the state is shipped)",
			 options);
		return NULL;
	}
	if (!owns(state)) {
		snprintf(err, errlen,
			 "home: state %p is not in the shared region (locus_dsm_alloc gives "
			 "state that has a home)",
			 state);
		return NULL;
	}
	struct home *h = malloc(sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "home: out of memory");
		return NULL;
	}
	*h = (struct home){.state = state, .alone = alone};
	return h;
}

static uint64_t home_run(void *hp, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	struct home *h = hp;
	if (h->alone)
		return locus_dsm_call_home(fn, h->state, a, b, c);
	return dsm_ship_run(h->state, dsm_addr_lock(h->state), fn, a, b, c);
}

static int home_post(void *hp, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		     void *ctx)
{
	struct home *h = hp;
	if (h->alone)
		return locus_dsm_post_home(fn, h->state, a, b, c, cb, ctx);
	return dsm_ship_post(h->state, dsm_addr_lock(h->state), fn, a, b, c, cb, ctx);
}

static void home_close(void *hp)
{
	locus_dsm_drain();
	free(hp);
}

static const struct locus_cs_provider provider = {
	.name = "home",
	.summary = "locus-dsm: ship each section to its state's home node (state in the "
		   "shared region)",
	.options = "alone (no DSM lock at the home: every section on the state is shipped)",
	.open = home_open,
	.run = home_run,
	.post = home_post,
	.drain = locus_dsm_drain,
	.close = home_close,
	.owns = owns,
	.enter = enter,
	.leave = leave,
};

void dsm_cs_provide(int on)
{
	if (locus_cs_provide)
		locus_cs_provide(on ? &provider : NULL);
}
