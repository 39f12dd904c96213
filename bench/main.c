/*
 * locus-bench: one program, one subcommand per experiment, so that the
 * sweep tools call a single binary and every experiment shares the same
 * mechanisms, isolation and output conventions.
 */
#include <stdio.h>
#include <string.h>

#include "fetchadd.h"
#include "locality.h"
#include "pingpong.h"

struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
	void (*usage)(FILE *out);
};

static const struct command commands[] = {
	{"fetchadd", "threads increment shared counters through each mechanism", fetchadd_main,
	 fetchadd_usage},
	{"locality", "seed 000's microbenchmark: thread-local walk, then a critical section",
	 locality_main, locality_usage},
	{"pingpong", "the floor: one cache-line round trip between two cores, and a ring",
	 pingpong_main, pingpong_usage},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out, int full)
{
	size_t i;

	fprintf(out, "usage: locus-bench COMMAND [OPTIONS]   (locus-bench COMMAND --help)\n\n"
		     "Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-10s  %s\n", commands[i].name, commands[i].summary);
	if (!full)
		return;
	for (i = 0; i < NCOMMANDS; i++) {
		fprintf(out, "\n");
		commands[i].usage(out);
	}
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr, 0);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout, 1);
		return 0;
	}
	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "locus-bench: unknown command '%s' (commands:", argv[1]);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(stderr, " %s", commands[i].name);
	fprintf(stderr, "; see locus-bench --help)\n");
	return 2;
}
