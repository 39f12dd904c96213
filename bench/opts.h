/*
 * locus-bench: small command-line helpers shared by the subcommands.
 *
 * Every parser returns 0 on success, or -1 with a one-line reason in err
 * (without the option's name: the caller says which option it was).
 */
#ifndef LOCUS_BENCH_OPTS_H
#define LOCUS_BENCH_OPTS_H

#include <stddef.h>
#include <stdint.h>

/* A decimal integer in [min, max]; no sign, no spaces, no suffix. */
int opts_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen);

/* "1,2,8": a comma list of opts_uint values, in a new array (free it). */
int opts_uint_list(const char *s, uint64_t min, uint64_t max, uint64_t **out, size_t *n, char *err,
		   size_t errlen);

/*
 * An option's default list: if *list is NULL (the option was not given), a new
 * array of v[0..n) in increasing order without repeats (so 1, CPUs, 2 x CPUs
 * is 1, 2 on one CPU); 0, or -1 if out of memory.
 */
int opts_default_list(uint64_t **list, size_t *count, const uint64_t *v, size_t n);

/* A finite decimal number greater than min and at most max. */
int opts_seconds(const char *s, double min, double max, double *out, char *err, size_t errlen);

/*
 * Split on commas into a new NULL-terminated array of new strings (free it
 * with opts_free_list). Empty items are kept so that the caller can reject them.
 */
char **opts_split(const char *s, size_t *n);
void opts_free_list(char **list);

/*
 * The value of option argv[*i] ("--name value" or "--name=value"), advancing
 * *i past it; NULL if argv[*i] is not that option. *missing is set when it is
 * the option but has no value.
 */
const char *opts_value(int argc, char **argv, int *i, const char *name, int *missing);

#endif
