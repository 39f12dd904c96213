/*
 * locus-kv's slab automover: the state behind kv_automove_tick and
 * kv_slabs_reassign (store.h), memcached's slab_automove.c and the page
 * mover of its slabs.c.
 */
#ifndef LOCUS_KV_AUTOMOVE_H
#define LOCUS_KV_AUTOMOVE_H

#include "kv/store/store.h"

struct kv_automove;

/* NULL if out of memory. */
struct kv_automove *kv_automove_new(int mode, double ratio, unsigned window);
void kv_automove_delete(struct kv_automove *a);

#endif
