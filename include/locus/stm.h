/*
 * locus: software transactional memory through GCC's -fgnu-tm and libitm.
 *
 * A critical section run under stm executes inside a relaxed transaction.
 * What that means depends on how the function was compiled:
 *
 *  - Marked LOCUS_TM_CALLABLE, in a file compiled with -fgnu-tm and
 *    -DLOCUS_TM: the transaction calls the function's transactional clone;
 *    its loads and stores go through libitm and transactions run
 *    concurrently under the chosen method (ml_wt, gl_wt), retrying on
 *    conflict. The function must be transaction-safe: no I/O, no system
 *    calls, no calls to functions without a clone (such calls are allowed
 *    but make that transaction serial).
 *  - Anything else: libitm finds no clone and runs the call in
 *    serial-irrevocable mode, one transaction at a time. The result is still
 *    correct; the section is then a global lock.
 *
 * The method is libitm's own choice, made through its ITM_DEFAULT_METHOD
 * variable before the process's first transaction. It is process-wide, so
 * one process can use one method: opening a second, different method fails.
 *
 * Admission: locus_stm_run lets at most as many threads into transactions
 * at once as the process has CPUs; the others wait asleep, in FIFO order, until
 * let in. While no more threads than that have used it, it skips
 * the limit. A run from inside a transaction is part of it and does not wait.
 * The stm executor's "strict" option runs without the limit.
 *
 * Sanitizer builds do not have stm: GCC cannot combine -fgnu-tm with
 * AddressSanitizer or ThreadSanitizer.
 */
#ifndef LOCUS_STM_H
#define LOCUS_STM_H

#include <stddef.h>
#include <stdint.h>

#include "locus/fn.h"
#include "locus/export.h"

LOCUS_BEGIN_DECLS

/* 1 if this build of locus has stm. */
LOCUS_API int locus_stm_available(void);

/*
 * Choose libitm's method ("ml_wt", "gl_wt", "serialirr") for this process.
 * Returns 0, or -1 with a message in err: unknown method, stm not built,
 * or a different method already chosen (by this call or by the environment).
 */
LOCUS_API int locus_stm_use(const char *method, char *err, size_t errlen);

/* The method in force for this process, or NULL before locus_stm_use(). */
LOCUS_API const char *locus_stm_method(void);

/* Run fn(state, a, b, c) as one transaction. */
LOCUS_API uint64_t locus_stm_run(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c);

/*
 * 1 inside a transaction that may be retried, 2 inside an irrevocable one, 0
 * outside. Safe to call from a LOCUS_TM_CALLABLE function: it does not make
 * the transaction irrevocable.
 */
LOCUS_API LOCUS_TM_PURE int locus_stm_mode(void);

LOCUS_END_DECLS

#endif
