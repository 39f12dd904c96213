/* lrc: garbage collection at a barrier (proto_lrc.c says when and why). */
#include <stdlib.h>
#include <string.h>

#include "lrc.h"

void lrc_gc_start(void)
{
	PROTO_STAT_ADD(LRC_ST_GCS, 1);
	lrc.gc_reported = 0;
	dsm_ship_hold(1); /* no shipped call writes while the pages are collected */
	lrc.fetches++; /* a fetch that pushed diffs complete at once reports nothing yet */
	lrc_batch_begin();
	for (size_t k = 0; k < lrc.nlive; k++) {
		size_t p = lrc.live[k];
		struct lrc_page *pg = &lrc.pg[p];
		/* A page being taken back gets its diffs when it is back (its copy
		   comes first: lrc_class.c). */
		if (lrc_manages(p) && pg->npend && !pg->replies_left && !pg->revoking)
			lrc_start_fetch(p);
	}
	lrc_batch_send();
	lrc.fetches--;
	lrc_gc_check();
}

/* This node's managed pages are current and nothing is in flight: say so. */
void lrc_gc_check(void)
{
	if (!lrc.gc_now || lrc.gc_reported || lrc.fetches || lrc.taking || dsm_ship_running())
		return;
	lrc_close_interval(); /* what a shipped call wrote since the barrier began (kept) */
	lrc.gc_reported = 1;
	if (dsm.node == 0) {
		if (++lrc.gc_ready == dsm.nodes)
			lrc_gc_free();
	} else {
		lrc_send(0, LOCUS_DSM_MSG_GC, 0, 1, NULL, 0);
	}
}

/*
 * Drop what every node has: the records, own diffs and pending notices of
 * intervals up to gc_base, node 0's vector time in the barrier's exit (every
 * node has taken that exit in). Later ones stay: a node's server may have
 * run calls between its barrier entry and its exit, and the interval
 * lrc_gc_check ends for them, or one a call's answer brought from another
 * node, is known to some nodes or none; the others learn it as usual,
 * counting from gc_base, so it must outlive the collection.
 */
void lrc_gc_free(void)
{
	if (dsm.node == 0) {
		lrc.gc_ready = 0;
		for (int n = 1; n < dsm.nodes; n++)
			lrc_send(n, LOCUS_DSM_MSG_GC, 0, 2, NULL, 0);
	}
	const uint32_t *upto = lrc.gc_base;
	uint32_t me = (uint32_t)dsm.node;
	for (size_t n = 0; n < lrc.nodes; n++)
		if (upto[n] < lrc.base[n] || upto[n] > lrc.vt[n])
			dsm_fatal(
				"lrc: collecting node %zu's intervals up to %u, with %u to %u here",
				n, upto[n], lrc.base[n], lrc.vt[n]);
	uint64_t mem = 0; /* what is kept */
	for (size_t k = 0; k < lrc.nlive; k++) {
		size_t p = lrc.live[k];
		struct lrc_page *pg = &lrc.pg[p];
		if (pg->replies_left || (pg->dirty && !pg->hot))
			dsm_fatal("lrc: collecting page %zu while it is in use", p);
		if (pg->dirty && pg->access == ACC_WRITE)
			lrc_set_access(p, ACC_READ); /* hot: its next write twins it again */
		if (pg->twin && pg->twin_iv <= lrc.vt[me] && pg->twin_iv > upto[me])
			lrc_find_diff(p, pg->twin_iv); /* a kept interval's diff, made now */
		pg->dirty = pg->hot = pg->want_write = 0;
		pg->wrote_iv = 0;
		dsm_keep_page_put(pg->twin);
		pg->twin = NULL;
		uint32_t kept = 0;
		for (uint32_t i = 0; i < pg->ndiffs; i++) {
			if (pg->diffs[i].idx > upto[me]) {
				mem += pg->diffs[i].len + sizeof(struct owndiff);
				pg->diffs[kept++] = pg->diffs[i];
			} else {
				dsm_slab_free(pg->diffs[i].data);
			}
		}
		pg->ndiffs = kept;
		if (!kept) {
			free(pg->diffs);
			pg->diffs = NULL;
			pg->capdiffs = 0;
		}
		kept = 0;
		for (uint32_t i = 0; i < pg->npend; i++)
			if (pg->pend[i].idx > upto[pg->pend[i].node])
				pg->pend[kept++] = pg->pend[i];
		if (kept < pg->npend) {
			if (lrc_manages(p))
				dsm_fatal("lrc: managed page %zu not current at collection", p);
			pg->have = HAVE_NONE; /* fetched whole from its manager next time */
		}
		pg->npend = kept;
		mem += kept * sizeof(struct notice);
		if (!kept) {
			free(pg->pend);
			pg->pend = NULL;
			pg->cappend = 0;
		}
	}
	lrc_push_gc(upto, &mem);
	for (size_t n = 0; n < lrc.nodes; n++) {
		uint32_t drop = upto[n] - lrc.base[n], keep = lrc.vt[n] - upto[n];
		for (uint32_t i = 0; i < drop; i++) {
			free(lrc.iv[n][i].vt);
			free(lrc.iv[n][i].pages);
		}
		if (keep) {
			memmove(lrc.iv[n], lrc.iv[n] + drop, keep * sizeof(struct interval));
			for (uint32_t i = 0; i < keep; i++)
				mem += sizeof(struct interval) +
				       (lrc.nodes + lrc.iv[n][i].npages) * sizeof(uint32_t);
		} else {
			free(lrc.iv[n]);
			lrc.iv[n] = NULL;
			lrc.ivcap[n] = 0;
		}
		lrc.base[n] = upto[n];
	}
	PROTO_STAT_SET(LRC_ST_META_BYTES, mem);
	lrc.ndirty = 0;
	lrc.gc_now = 0;
	lrc.gc_epoch++;
	dsm_ship_hold(0);
	dsm_sync_barrier_done();
}
