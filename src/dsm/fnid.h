/*
 * Functions across nodes: a function pointer as its place in the program's
 * image, which every node can turn back into its own pointer (fnid.c).
 */
#ifndef LOCUS_DSM_FNID_H
#define LOCUS_DSM_FNID_H

#include <stdint.h>

struct dsm_fnid {
	uint32_t obj;	/* the object's index in the loader's order */
	uint32_t check; /* a hash of its file name */
	uint64_t off;	/* from its load address */
};

/* List the program's objects (init, before any call crosses). */
void dsm_fnid_init(void);
/* fn's identity; -1 when fn lies in no object listed at init. */
int dsm_fnid_of(const void *fn, struct dsm_fnid *id);
/* This node's pointer for id; NULL when it names no function here. */
void *dsm_fnid_fn(const struct dsm_fnid *id);

#endif
