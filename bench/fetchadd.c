/*
 * locus-bench fetchadd: the command line, the sweep over (threads, vars,
 * mechanism), and the report. Each measurement runs in a child process
 * (fetchadd_run.c); this process never opens an executor itself, so that it
 * holds no process-wide library state (stm method, delegation threads) that
 * a fork would copy half of.
 */
#include "fetchadd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "locus/cs.h"
#include "opts.h"

#define PROG	      "locus-bench fetchadd"
#define MAX_THREADS   1024
#define MAX_VARS      (1u << 20)
#define MAX_DELAY     1000000000ull
#define MAX_DURATION  86400.0
#define CHECK_TIMEOUT 10.0 /* seconds to open and close one executor */

/* One row of the report: a mechanism as the user wrote it. */
struct mech {
	char *spec;
	int from_all; /* from the default list: skipped with a warning if it cannot open */
};

struct config {
	struct mech *mechs;
	size_t nmechs;
	uint64_t *threads;
	size_t nthreads;
	uint64_t *vars;
	size_t nvars;
	double duration;
	uint64_t delay;
	int json;
	long cpus;
};

enum cell_state { CELL_EMPTY, CELL_OK, CELL_FAILED, CELL_LOST };

/* One measurement in the table: row = mechanism, column = (threads, vars). */
struct cell {
	enum cell_state state;
	double mops;
};

static int progress_shown;

static int complain(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

static long online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n;
}

static const char *peer_names(void)
{
	static char buf[256];
	size_t i, len = 0;

	for (i = 0; fetchadd_peers[i] && len < sizeof(buf); i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ", " : "",
				fetchadd_peers[i]);
	return buf;
}

void fetchadd_usage(FILE *out)
{
	const char *const *names = locus_cs_mechanisms();
	long cpus = online_cpus();
	size_t i;

	fprintf(out,
		"usage: locus-bench fetchadd [--mechanisms LIST] [--threads LIST] [--vars LIST]\n"
		"                            [--duration SECONDS] [--delay N] [--json]\n"
		"\n"
		"Threads increment counters picked uniformly at random among V, each counter on\n"
		"its own cache line and guarded by its own instance of the mechanism (one\n"
		"executor or lock per counter), and we count increments per second. Every\n"
		"(mechanism, threads, vars) measurement runs in a child process of its own.\n"
		"\n"
		"  --mechanisms LIST   executor specs and peer names, separated by commas, or\n"
		"                      \"all\" (the default: every executor below at its default\n"
		"                      options, then every peer). A spec's own options are\n"
		"                      separated by commas too: an item that is not a mechanism\n"
		"                      name continues the previous spec, as in\n"
		"                      \"ttas:spin,backoff_max=64,mcs\" (two specs). May be "
		"repeated.\n"
		"  --threads LIST      thread counts, e.g. 1,2,8 (default: 1, CPUs, 2 x CPUs;\n"
		"                      here %s%ld,%ld; at most %d)\n"
		"  --vars LIST         counter counts, e.g. 1,1024 (default: 1; at most %u)\n"
		"  --duration SECONDS  how long each measurement runs (default: 1)\n"
		"  --delay N           pause instructions a thread executes after each increment,\n"
		"                      outside the critical section (default: 0)\n"
		"  --json              one JSON object per measurement on stdout, the table on\n"
		"                      stderr\n"
		"  --help              this text\n"
		"\n"
		"Output: a table of Mops/s (million increments per second), one row per\n"
		"mechanism, one column per (threads, vars); '*' marks columns with more threads\n"
		"than online CPUs (%ld here). Measurements run in the order threads, vars,\n"
		"mechanism, so mechanisms compared in one column ran close together in time.\n"
		"A measurement that crashes, runs past 10 x duration + 10 s, or loses an update\n"
		"(counters do not sum to the increments counted) is reported on stderr and as\n"
		"FAIL or LOST in the table, gives no JSON line, and makes the exit status 1.\n"
		"Exit status: 0 all measured, 1 a measurement failed, 2 bad command line.\n"
		"\n"
		"Executor mechanisms:",
		cpus > 1 ? "1," : "", cpus, 2 * cpus, MAX_THREADS, MAX_VARS, cpus);
	for (i = 0; names[i]; i++)
		fprintf(out, " %s", names[i]);
	fprintf(out, "\n(spec = NAME or NAME:OPTION,OPTION...)\n\n");
	locus_cs_usage(out);
	fprintf(out, "\nPeers (not locus; same counters, same critical section function):\n");
	for (i = 0; fetchadd_peers[i]; i++)
		fprintf(out, "  %-18s  %s\n", fetchadd_peers[i], fetchadd_peer_help[i]);
}

static int add_mech(struct config *c, const char *spec, int from_all)
{
	struct mech *m = realloc(c->mechs, (c->nmechs + 1) * sizeof(*m));

	if (!m)
		return -1;
	c->mechs = m;
	m[c->nmechs] = (struct mech){.spec = strdup(spec), .from_all = from_all};
	if (!m[c->nmechs].spec)
		return -1;
	c->nmechs++;
	return 0;
}

static int add_all(struct config *c)
{
	const char *const *names = locus_cs_mechanisms();
	size_t i;

	for (i = 0; names[i]; i++)
		if (add_mech(c, names[i], 1))
			return -1;
	for (i = 0; fetchadd_peers[i]; i++)
		if (add_mech(c, fetchadd_peers[i], 1))
			return -1;
	return 0;
}

/* 1 if a list item begins a new spec: "all", a peer, or a mechanism name (options or not). */
static int starts_spec(const char *item)
{
	const char *const *names = locus_cs_mechanisms();
	size_t len = strcspn(item, ":");

	if (strcmp(item, "all") == 0 || fetchadd_is_peer(item))
		return 1;
	for (size_t i = 0; names[i]; i++)
		if (strlen(names[i]) == len && strncmp(item, names[i], len) == 0)
			return 1;
	return 0;
}

/* The item is one more option of the last spec: append ",item" to it. */
static int extend_last(struct config *c, const char *item)
{
	struct mech *m = &c->mechs[c->nmechs - 1];
	size_t len = strlen(m->spec) + 1 + strlen(item) + 1;
	char *s = malloc(len);

	if (!s)
		return -1;
	snprintf(s, len, "%s,%s", m->spec, item);
	free(m->spec);
	m->spec = s;
	return 0;
}

/*
 * Commas separate both specs and the options inside one spec, so an item
 * that does not name a mechanism continues the last spec if it has options.
 */
static int parse_mechanisms(struct config *c, const char *list)
{
	size_t n, i;
	char **items = opts_split(list, &n);
	int takes_options = 0, rc = 0;

	if (!items)
		return complain("out of memory");
	for (i = 0; i < n && rc == 0; i++) {
		const char *item = items[i];

		if (item[0] == '\0') {
			rc = complain("--mechanisms: empty name in '%s'", list);
		} else if (takes_options && !starts_spec(item)) {
			rc = extend_last(c, item) ? complain("out of memory") : 0;
		} else if (strcmp(item, "all") == 0) {
			rc = add_all(c) ? complain("out of memory") : 0;
			takes_options = 0;
		} else {
			rc = add_mech(c, item, 0) ? complain("out of memory") : 0;
			takes_options = strchr(item, ':') != NULL;
		}
	}
	opts_free_list(items);
	return rc;
}

static int default_threads(struct config *c)
{
	uint64_t t[3] = {1, (uint64_t)c->cpus, 2 * (uint64_t)c->cpus};

	c->threads = malloc(sizeof(t));
	if (!c->threads)
		return -1;
	c->nthreads = 0;
	for (size_t i = 0; i < 3; i++)
		if (c->nthreads == 0 || c->threads[c->nthreads - 1] < t[i])
			c->threads[c->nthreads++] = t[i];
	return 0;
}

static int apply_defaults(struct config *c)
{
	if (!c->mechs && add_all(c))
		return complain("out of memory");
	if (!c->threads && default_threads(c))
		return complain("out of memory");
	if (!c->vars) {
		c->vars = malloc(sizeof(*c->vars));
		if (!c->vars)
			return complain("out of memory");
		c->vars[0] = 1;
		c->nvars = 1;
	}
	return 0;
}

/* 1 if argv[*i] is option name (its value in *v), 0 if not, -1 if its value is missing. */
static int option(int argc, char **argv, int *i, const char *name, const char **v)
{
	int missing;

	*v = opts_value(argc, argv, i, name, &missing);
	if (missing) {
		complain("%s needs a value", name);
		return -1;
	}
	return *v != NULL;
}

static int parse_list(const char *name, const char *v, uint64_t max, uint64_t **list, size_t *n)
{
	char err[256];

	free(*list);
	*list = NULL;
	if (opts_uint_list(v, 1, max, list, n, err, sizeof(err)))
		return complain("%s: %s", name, err);
	return 0;
}

/* One argument at argv[*i]; 0 or 2 (reported). */
static int parse_arg(int argc, char **argv, int *i, struct config *c)
{
	const char *v;
	char err[256];
	int r;

	if (strcmp(argv[*i], "--json") == 0) {
		c->json = 1;
		return 0;
	}
	if ((r = option(argc, argv, i, "--mechanisms", &v)) != 0)
		return r < 0 ? 2 : parse_mechanisms(c, v);
	if ((r = option(argc, argv, i, "--threads", &v)) != 0)
		return r < 0 ? 2
			     : parse_list("--threads", v, MAX_THREADS, &c->threads, &c->nthreads);
	if ((r = option(argc, argv, i, "--vars", &v)) != 0)
		return r < 0 ? 2 : parse_list("--vars", v, MAX_VARS, &c->vars, &c->nvars);
	if ((r = option(argc, argv, i, "--duration", &v)) != 0) {
		if (r > 0 && opts_seconds(v, 0, MAX_DURATION, &c->duration, err, sizeof(err)))
			return complain("--duration: %s", err);
		return r < 0 ? 2 : 0;
	}
	if ((r = option(argc, argv, i, "--delay", &v)) != 0) {
		if (r > 0 && opts_uint(v, 0, MAX_DELAY, &c->delay, err, sizeof(err)))
			return complain("--delay: %s", err);
		return r < 0 ? 2 : 0;
	}
	if (argv[*i][0] == '-')
		return complain("unknown option '%s' (see --help)", argv[*i]);
	return complain("unexpected argument '%s' (see --help)", argv[*i]);
}

/* 0 to run, 1 if help was printed, 2 on a bad command line (reported). */
static int parse_args(int argc, char **argv, struct config *c)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fetchadd_usage(stdout);
			return 1;
		}
	}
	c->duration = 1.0;
	c->cpus = online_cpus();
	for (i = 1; i < argc; i++)
		if (parse_arg(argc, argv, &i, c))
			return 2;
	return apply_defaults(c);
}

/* The reply of a child that opened one executor to check its spec. */
struct check_reply {
	int ok;
	char canonical[256];
	char err[512];
};

static int check_body(void *arg, int fd)
{
	struct check_reply r = {0};

	r.ok = fetchadd_check_spec(arg, r.canonical, sizeof(r.canonical), r.err, sizeof(r.err)) ==
	       0;
	return child_write_all(fd, &r, sizeof(r)) ? 3 : 0;
}

/* Library messages may span lines; ours are one line each. */
static void one_line(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
	for (char *p = s; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

/*
 * Check one spec before any measurement, so that a typo fails in a second
 * instead of after a sweep. 1 keep, 0 drop (warned), 2 bad spec (reported).
 */
static int check_mech(const struct mech *m)
{
	struct check_reply r;
	struct child_status st;
	char how[128];

	if (fetchadd_is_peer(m->spec)) {
		if (fetchadd_peer_known(m->spec))
			return 1;
		return complain("--mechanisms: unknown peer '%s' (peers: %s)", m->spec,
				peer_names());
	}
	if (child_run(check_body, m->spec, CHECK_TIMEOUT, &r, sizeof(r), &st) ||
	    st.len != sizeof(r)) {
		/* Not the user's fault: measure it anyway and let the measurements report. */
		child_describe(&st, how, sizeof(how));
		fprintf(stderr, "%s: warning: opening '%s' to check it: %s\n", PROG, m->spec, how);
		return 1;
	}
	if (r.ok)
		return 1;
	one_line(r.err);
	if (m->from_all) {
		fprintf(stderr, "%s: warning: skipping '%s': %s\n", PROG, m->spec, r.err);
		return 0;
	}
	return complain("--mechanisms: '%s': %s (peers: %s)", m->spec, r.err, peer_names());
}

static int check_mechanisms(struct config *c)
{
	size_t i, kept = 0;

	for (i = 0; i < c->nmechs; i++) {
		int r = check_mech(&c->mechs[i]);

		if (r == 2)
			return 2;
		if (r == 1)
			c->mechs[kept++] = c->mechs[i];
		else
			free(c->mechs[i].spec);
	}
	c->nmechs = kept;
	if (kept == 0)
		return complain("no mechanism left to measure");
	return 0;
}

static void progress(size_t done, size_t total, const char *spec, unsigned t, size_t v)
{
	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\r\033[K[%zu/%zu] %s T=%u V=%zu ...", done, total, spec, t, v);
	fflush(stderr);
	progress_shown = 1;
}

/* Clear the progress line before anything else goes to the terminal. */
static void progress_clear(void)
{
	if (!progress_shown)
		return;
	fprintf(stderr, "\r\033[K");
	fflush(stderr);
	progress_shown = 0;
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static void print_json(const struct config *c, const struct fetchadd_params *p,
		       const struct fetchadd_result *r, double mops)
{
	printf("{\"bench\":\"fetchadd\",\"mechanism\":");
	json_string(stdout, p->mechanism);
	printf(",\"spec\":");
	json_string(stdout, r->spec);
	printf(",\"threads\":%u,\"vars\":%zu,\"duration_s\":%.6f,\"requested_s\":%.6f,"
	       "\"ops\":%llu,\"mops\":%.4f,\"oversubscribed\":%s,\"cpus\":%ld,\"delay\":%llu}\n",
	       p->threads, p->vars, r->seconds, p->duration, (unsigned long long)r->ops, mops,
	       (long)p->threads > c->cpus ? "true" : "false", c->cpus,
	       (unsigned long long)p->delay);
	fflush(stdout);
}

static int measure_body(void *arg, int fd)
{
	struct fetchadd_result r;

	fetchadd_measure(arg, &r);
	return child_write_all(fd, &r, sizeof(r)) ? 3 : 0;
}

static void measure_failed(const struct fetchadd_params *p, const char *why)
{
	progress_clear();
	fprintf(stderr, "%s: %s (T=%u V=%zu): %s\n", PROG, p->mechanism, p->threads, p->vars, why);
}

/* Measure one cell in a child; 0, or -1 if it failed (reported). */
static int measure(const struct config *c, const struct fetchadd_params *p, struct cell *cell)
{
	struct fetchadd_result r;
	struct child_status st;
	char why[640];

	cell->state = CELL_FAILED;
	if (child_run(measure_body, (void *)p, 10 * p->duration + 10, &r, sizeof(r), &st)) {
		child_describe(&st, why, sizeof(why));
		measure_failed(p, why);
		return -1;
	}
	if (st.len != sizeof(r)) {
		measure_failed(p, "child exited without sending a complete result");
		return -1;
	}
	if (!r.ok) {
		one_line(r.err);
		measure_failed(p, r.err);
		return -1;
	}
	if (r.sum != r.ops) {
		snprintf(why, sizeof(why),
			 "lost updates: the counters sum to %llu, the threads counted %llu "
			 "increments",
			 (unsigned long long)r.sum, (unsigned long long)r.ops);
		measure_failed(p, why);
		cell->state = CELL_LOST;
		return -1;
	}
	cell->state = CELL_OK;
	cell->mops = r.seconds > 0 ? (double)r.ops / r.seconds / 1e6 : 0;
	if (c->json)
		print_json(c, p, &r, cell->mops);
	return 0;
}

/* Columns are (threads, vars), threads-major; rows are mechanisms. */
static int sweep(const struct config *c, struct cell *cells)
{
	size_t ncols = c->nthreads * c->nvars, total = ncols * c->nmechs, done = 0;
	int rc = 0;

	for (size_t t = 0; t < c->nthreads; t++) {
		for (size_t v = 0; v < c->nvars; v++) {
			for (size_t m = 0; m < c->nmechs; m++) {
				struct fetchadd_params p = {
					.mechanism = c->mechs[m].spec,
					.threads = (unsigned)c->threads[t],
					.vars = (size_t)c->vars[v],
					.duration = c->duration,
					.delay = c->delay,
				};

				progress(++done, total, p.mechanism, p.threads, p.vars);
				if (measure(c, &p, &cells[m * ncols + t * c->nvars + v]))
					rc = 1;
			}
		}
	}
	progress_clear();
	return rc;
}

static void column_label(const struct config *c, size_t col, char *buf, size_t n)
{
	uint64_t t = c->threads[col / c->nvars], v = c->vars[col % c->nvars];

	snprintf(buf, n, "T=%llu%s V=%llu", (unsigned long long)t, (long)t > c->cpus ? "*" : "",
		 (unsigned long long)v);
}

static void print_cell(FILE *out, const struct cell *cell, int width)
{
	switch (cell->state) {
	case CELL_OK:
		fprintf(out, "  %*.2f", width, cell->mops);
		break;
	case CELL_LOST:
		fprintf(out, "  %*s", width, "LOST");
		break;
	default:
		fprintf(out, "  %*s", width, "FAIL");
		break;
	}
}

static void print_table(FILE *out, const struct config *c, const struct cell *cells)
{
	size_t ncols = c->nthreads * c->nvars, col, m;
	int namew = (int)strlen("mechanism"), colw = 0, over = 0;
	char label[64];

	for (m = 0; m < c->nmechs; m++)
		if ((int)strlen(c->mechs[m].spec) > namew)
			namew = (int)strlen(c->mechs[m].spec);
	for (col = 0; col < ncols; col++) {
		column_label(c, col, label, sizeof(label));
		if ((int)strlen(label) > colw)
			colw = (int)strlen(label);
	}
	fprintf(out, "fetchadd: Mops/s (million increments per second), %g s each, delay %llu\n",
		c->duration, (unsigned long long)c->delay);
	fprintf(out, "%-*s", namew, "mechanism");
	for (col = 0; col < ncols; col++) {
		column_label(c, col, label, sizeof(label));
		fprintf(out, "  %*s", colw, label);
	}
	fputc('\n', out);
	for (m = 0; m < c->nmechs; m++) {
		fprintf(out, "%-*s", namew, c->mechs[m].spec);
		for (col = 0; col < ncols; col++)
			print_cell(out, &cells[m * ncols + col], colw);
		fputc('\n', out);
	}
	for (size_t t = 0; t < c->nthreads; t++)
		over |= (long)c->threads[t] > c->cpus;
	if (over)
		fprintf(out, "* oversubscribed: more threads than the %ld online CPUs\n", c->cpus);
	fflush(out);
}

static void free_config(struct config *c)
{
	for (size_t i = 0; i < c->nmechs; i++)
		free(c->mechs[i].spec);
	free(c->mechs);
	free(c->threads);
	free(c->vars);
}

int fetchadd_main(int argc, char **argv)
{
	struct config c = {0};
	struct cell *cells;
	int rc = parse_args(argc, argv, &c);

	if (rc == 0)
		rc = check_mechanisms(&c);
	if (rc) {
		free_config(&c);
		return rc == 1 ? 0 : 2;
	}
	cells = calloc(c.nmechs * c.nthreads * c.nvars, sizeof(*cells));
	if (!cells) {
		free_config(&c);
		return complain("out of memory");
	}
	rc = sweep(&c, cells);
	print_table(c.json ? stderr : stdout, &c, cells);
	free(cells);
	free_config(&c);
	return rc;
}
