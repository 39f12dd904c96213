/*
 * The command line of the DSM applications and of locus-mpi-jacobi: every
 * option a flag with a whole-number value in a range, checked in full, and
 * --help. Needs no DSM and no MPI, so a bad command line fails before either
 * starts.
 */
#ifndef LOCUS_APP_ARGS_H
#define LOCUS_APP_ARGS_H

#include <stddef.h>

/*
 * An application's command line: each option a flag with a whole-number
 * value, its default (in *value when called) and its range.
 */
struct app_opt {
	const char *flag; /* "-n" */
	const char *what; /* "grid points per side" */
	long *value;
	long min, max;
};

/*
 * Read argv against opts (a NULL flag ends them). --help or -h prints the
 * usage (summary, every option with its default and range, the runtime's
 * environment) and exits 0; an unknown option, a missing value, or a value
 * that is not a whole number in its range is refused with a message naming
 * the option, exit 2. Only node 0 of an mpiexec run prints. Call it before
 * app_start, so a bad command line needs no DSM.
 */
void app_options(int argc, char **argv, const char *name, const char *summary,
		 const struct app_opt *opts);

/* What --help puts before the program's name ("mpiexec -n NODES "; "" for a
   program that needs no MPI). */
extern const char *app_launcher;

/* Is this node 0 of an mpiexec run (MPICH's launchers set PMI_RANK), or a run without one? */
int app_first_node(void);

/* a * b * c bytes, or a message and exit 2 if that overflows. */
size_t app_bytes(const char *what, size_t a, size_t b, size_t c);

#endif
