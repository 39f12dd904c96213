/*
 * locus-bench: the list of mechanisms a sweep measures, as the user wrote
 * it on the command line (--mechanisms), checked before any measurement so
 * that a typo fails in a second instead of after a sweep.
 *
 * Commas separate both specs and the options inside one spec: an item that
 * does not name a mechanism continues the previous spec if it has options, so
 * "ttas:spin,backoff_max=64,mcs" is two specs. "all" is every executor at its
 * default options, then every peer. Peers are a subcommand's own comparison
 * points ("peer:atomic"); a subcommand without peers passes none.
 */
#ifndef LOCUS_BENCH_MECHLIST_H
#define LOCUS_BENCH_MECHLIST_H

#include <stddef.h>

/* One row of a report: a mechanism as the user wrote it. */
struct mech {
	char *spec;	/* as written */
	int from_all;	/* from "all": skipped with a warning if it cannot open */
	char *run;	/* what is measured: spec, with servers= added for delegation */
	int delegation; /* the executor has delegation servers (its spec shows servers=) */
};

struct mechlist {
	const char *prog;	  /* for messages: "locus-bench fetchadd" */
	const char *const *peers; /* NULL-terminated; NULL: this subcommand has none */
	struct mech *m;
	size_t n;
};

/* Add the items of one --mechanisms value; 0, or 2 (reported). */
int mechlist_parse(struct mechlist *l, const char *list);
/* "all": every executor, then every peer; 0, or 2 (reported). */
int mechlist_add_all(struct mechlist *l);
/*
 * Check every spec in a child process and fill in m->run: delegation specs
 * that do not say servers= get servers=`servers`. A bad spec the user wrote
 * is an error; one that came from "all" is dropped with a warning.
 * 0, or 2 (reported).
 */
int mechlist_check(struct mechlist *l, unsigned servers);
void mechlist_free(struct mechlist *l);

/* 1 if name is meant as a peer (starts with "peer:"), known or not. */
int mechlist_is_peer(const char *name);

#endif
