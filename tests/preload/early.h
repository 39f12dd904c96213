/* A library whose constructor locks a mutex and waits on a condvar: it runs
   before liblocus-preload's constructor (see early.c). */
#ifndef LOCUS_TEST_EARLY_H
#define LOCUS_TEST_EARLY_H

#include <pthread.h>

/* 0 if the constructor's own checks passed. */
int early_result(void);
/* A mutex the constructor locked and left locked. */
pthread_mutex_t *early_mutex(void);

#endif
