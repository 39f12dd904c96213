/* The per-algorithm lock functions behind lock.c's dispatch. */
#ifndef LOCUS_SYNC_LOCK_IMPL_H
#define LOCUS_SYNC_LOCK_IMPL_H

#include "locus/lock.h"

void word_init(locus_lock *l);
void tas_lock(locus_lock *l);
void ttas_lock(locus_lock *l);
void futex_lock(locus_lock *l);
int word_trylock(locus_lock *l);
void word_unlock(locus_lock *l);

void ticket_init(locus_lock *l);
void ticket_lock(locus_lock *l);
int ticket_trylock(locus_lock *l);
void ticket_unlock(locus_lock *l);

void mcs_init(locus_lock *l);
void mcs_lock(locus_lock *l);
int mcs_trylock(locus_lock *l);
void mcs_unlock(locus_lock *l);

int clh_init(locus_lock *l);
void clh_lock(locus_lock *l);
int clh_trylock(locus_lock *l);
void clh_unlock(locus_lock *l);
void clh_destroy(locus_lock *l);

#define TTAS_BACKOFF_MAX_DEFAULT 1024

/*
 * One option of a lock kind itself, not a waiting option (ttas: backoff |
 * nobackoff | backoff_max=N; tas, ttas, futex: antistarve | barge; mcs: cr |
 * nocr), shared by the executor's spec
 * parser and locus_lock_init_spec: 1 taken, 0 unknown, -1 bad value.
 */
int lock_kind_option(locus_lock_kind kind, const char *opt, uint32_t *backoff_max, uint32_t *flags);

/*
 * The inverse, for a spec with every default spelled out: the waiting policy
 * ("spinpark,spins=N", "spin" or "park"), and a kind's own options
 * (",antistarve,backoff_max=N" and so on; nothing for kinds without any).
 * snprintf's contract: the length it would have written.
 */
int lock_wait_format(const locus_wait *w, char *buf, size_t len);
int lock_kind_format(locus_lock_kind kind, uint32_t backoff_max, uint32_t flags, char *buf,
		     size_t len);

#endif
