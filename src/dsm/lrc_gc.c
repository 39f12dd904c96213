/* lrc: garbage collection at a barrier (proto_lrc.c says when and why). */
#include <stdlib.h>

#include "lrc.h"

void lrc_gc_start(void)
{
	PROTO_STAT_ADD(LRC_ST_GCS, 1);
	lrc.gc_reported = 0;
	dsm_ship_hold(1); /* no shipped call writes while the pages are collected */
	lrc_batch_begin();
	for (size_t k = 0; k < lrc.nlive; k++) {
		size_t p = lrc.live[k];
		struct lrc_page *pg = &lrc.pg[p];
		if (lrc_manages(p) && pg->npend && !pg->replies_left)
			lrc_start_fetch(p);
	}
	lrc_batch_send();
	lrc_gc_check();
}

/* This node's managed pages are current and nothing is in flight: say so. */
void lrc_gc_check(void)
{
	if (!lrc.gc_now || lrc.gc_reported || lrc.fetches || dsm_ship_running())
		return;
	lrc_close_interval(); /* what a shipped call wrote since the barrier began */
	lrc.gc_reported = 1;
	if (dsm.node == 0) {
		if (++lrc.gc_ready == dsm.nodes)
			lrc_gc_free();
	} else {
		lrc_send(0, LOCUS_DSM_MSG_GC, 0, 1, NULL, 0);
	}
}

void lrc_gc_free(void)
{
	if (dsm.node == 0) {
		lrc.gc_ready = 0;
		for (int n = 1; n < dsm.nodes; n++)
			lrc_send(n, LOCUS_DSM_MSG_GC, 0, 2, NULL, 0);
	}
	for (size_t k = 0; k < lrc.nlive; k++) {
		size_t p = lrc.live[k];
		struct lrc_page *pg = &lrc.pg[p];
		if (pg->replies_left || (pg->dirty && !pg->hot))
			dsm_fatal("lrc: collecting page %zu while it is in use", p);
		if (pg->dirty && pg->access == ACC_WRITE)
			lrc_set_access(p, ACC_READ); /* hot: its next write twins it again */
		pg->dirty = pg->hot = pg->want_write = 0;
		pg->wrote_iv = 0;
		free(pg->twin);
		pg->twin = NULL;
		for (uint32_t i = 0; i < pg->ndiffs; i++)
			free(pg->diffs[i].data);
		free(pg->diffs);
		pg->diffs = NULL;
		pg->ndiffs = pg->capdiffs = 0;
		if (pg->npend) {
			if (lrc_manages(p))
				dsm_fatal("lrc: managed page %zu not current at collection", p);
			pg->have = HAVE_NONE; /* fetched whole from its manager next time */
		}
		free(pg->pend);
		pg->pend = NULL;
		pg->npend = pg->cappend = 0;
	}
	for (size_t n = 0; n < lrc.nodes; n++) {
		for (uint32_t i = 0; i < lrc.vt[n] - lrc.base[n]; i++) {
			free(lrc.iv[n][i].vt);
			free(lrc.iv[n][i].pages);
		}
		free(lrc.iv[n]);
		lrc.iv[n] = NULL;
		lrc.ivcap[n] = 0;
		lrc.base[n] = lrc.vt[n];
	}
	PROTO_STAT_SET(LRC_ST_META_BYTES, 0);
	lrc.ndirty = 0;
	lrc.gc_now = 0;
	dsm_ship_hold(0);
	dsm_sync_barrier_done();
}
