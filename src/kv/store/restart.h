/*
 * locus-kv's restartable cache (-e): between kv_store_open and restart.c, which keeps the
 * memory file and what a graceful stop left in FILE.meta (restart.c says how). The store
 * opens in three steps:
 *
 *   kv_restart_begin    reads FILE.meta (and removes it) and maps the file; -1 with a
 *                       message if the file cannot be had, or FILE.meta's first line is
 *                       not locus-kv's (the server stops, as memcached's)
 *   kv_restart_region   the mapping, for the slab allocator to take its pages from;
 *   kv_restart_hashpower  the table size to make (0: the configured one)
 *   kv_restart_finish   rebuilds the cache from the file if FILE.meta matched, else
 *                       (fresh() having made the allocator, LRU and table anew if a
 *                       rebuild failed half way) hands the pages out as memcached does
 *
 * and closes with kv_restart_close; kv_store_save (store.h) writes FILE.meta.
 */
#ifndef LOCUS_KV_RESTART_H
#define LOCUS_KV_RESTART_H

#include <stddef.h>

#include "kv/store/memfile.h"
#include "kv/store/store.h"

struct kv_restart;

int kv_restart_begin(kv_store *st, char *err, size_t errlen);
char *kv_restart_region(const kv_store *st, size_t *len);
unsigned kv_restart_hashpower(const kv_store *st);
int kv_restart_finish(kv_store *st, int (*fresh)(kv_store *st), char *err, size_t errlen);
void kv_restart_close(kv_store *st);

#endif
