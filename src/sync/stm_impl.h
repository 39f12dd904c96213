/* stm.c's run without the admission gate, for the executor's "strict"; its count of users. */
#ifndef LOCUS_SYNC_STM_IMPL_H
#define LOCUS_SYNC_STM_IMPL_H

#include <stdint.h>

#include "locus/fn.h"

uint64_t stm_run_strict(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c);
/* Threads counted as using locus_stm_run's gate (see stm.c); for tests. */
uint32_t stm_gate_users(void);

#endif
