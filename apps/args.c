/* The command line of the DSM applications and of locus-mpi-jacobi (args.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

static const char *args_name = "app";

/* Node 0 of an mpiexec run (MPICH's launchers set PMI_RANK), or a run without one. */
int app_first_node(void)
{
	const char *r = getenv("PMI_RANK");
	return !r || !strcmp(r, "0");
}

__attribute__((format(printf, 2, 3), noreturn)) static void refuse(const char *name,
								   const char *fmt, ...)
{
	if (app_first_node()) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "locus-%s: ", name);
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, " (see --help)\n");
		va_end(ap);
	}
	exit(2);
}

const char *app_launcher = "mpiexec -n NODES ";

static void usage(const char *name, const char *summary, const struct app_opt *opts)
{
	if (!app_first_node())
		return;
	printf("usage: %slocus-%s", app_launcher, name);
	for (const struct app_opt *o = opts; o->flag; o++)
		printf(" [%s N]", o->flag);
	printf("\n%s\n\noptions:\n", summary);
	int width = 6; /* "--help" */
	for (const struct app_opt *o = opts; o->flag; o++)
		if ((int)strlen(o->flag) > width)
			width = (int)strlen(o->flag);
	for (const struct app_opt *o = opts; o->flag; o++)
		printf("  %-*s %s (default %ld; %ld to %ld)\n", width, o->flag, o->what, *o->value,
		       o->min, o->max);
	printf("  %-*s print this and exit\n", width, "--help");
}

void app_options(int argc, char **argv, const char *name, const char *summary,
		 const struct app_opt *opts)
{
	args_name = name;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(name, summary, opts);
			exit(0);
		}
		const struct app_opt *o = opts;
		while (o->flag && strcmp(o->flag, argv[i]))
			o++;
		if (!o->flag)
			refuse(name, "unknown option '%s'", argv[i]);
		if (i + 1 >= argc)
			refuse(name, "%s needs a value: %s", o->flag, o->what);
		const char *v = argv[++i];
		char *end;
		errno = 0;
		long x = strtol(v, &end, 10);
		if (errno || end == v || *end || x < o->min || x > o->max)
			refuse(name, "%s %s: %s is a whole number from %ld to %ld", o->flag, v,
			       o->what, o->min, o->max);
		*o->value = x;
	}
}

size_t app_bytes(const char *what, size_t a, size_t b, size_t c)
{
	size_t ab, abc;
	if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) {
		if (app_first_node())
			fprintf(stderr, "locus-%s: %s would need more than %zu bytes\n", args_name,
				what, SIZE_MAX);
		exit(2);
	}
	return abc;
}
