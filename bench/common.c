/* locus-bench: shared output helpers (see common.h). */
#include "common.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "opts.h"
#include "repeat.h"

static int progress_shown;

int bench_complain(const char *prog, const char *fmt, ...)
{
	va_list ap;

	bench_progress_clear();
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

long bench_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n;
}

void bench_progress(const char *fmt, ...)
{
	va_list ap;

	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\r\033[K");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
	progress_shown = 1;
}

void bench_progress_clear(void)
{
	if (!progress_shown)
		return;
	fprintf(stderr, "\r\033[K");
	fflush(stderr);
	progress_shown = 0;
}

void bench_json_string(FILE *out, const char *s)
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

void bench_json_head(const char *bench, const char *written, const char *spec)
{
	printf("{\"bench\":\"%s\",\"mechanism\":", bench);
	bench_json_string(stdout, written);
	printf(",\"spec\":");
	bench_json_string(stdout, spec);
}

void bench_one_line(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
	for (char *p = s; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

int bench_option(const char *prog, int argc, char **argv, int *i, const char *name, const char **v)
{
	int missing;

	*v = opts_value(argc, argv, i, name, &missing);
	if (missing) {
		bench_complain(prog, "%s needs a value", name);
		return -1;
	}
	return *v != NULL;
}

int bench_args_start(struct bench_args *a, const char *prog, const char *const *peers, int argc,
		     char **argv, void (*usage)(FILE *out))
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 1;
		}
	}
	a->mechs = (struct mechlist){.prog = prog, .peers = peers};
	a->duration = 1.0;
	a->servers = 1;
	a->repeat = 1;
	a->json = 0;
	a->cpus = bench_cpus();
	return 0;
}

int bench_repeat_option(const char *prog, int argc, char **argv, int *i, unsigned *repeat)
{
	const char *v;
	char err[256];
	uint64_t n;
	int r = bench_option(prog, argc, argv, i, "--repeat", &v);

	if (r <= 0)
		return r;
	if (opts_uint(v, 1, BENCH_MAX_REPEAT, &n, err, sizeof(err))) {
		bench_complain(prog, "--repeat: %s", err);
		return -1;
	}
	*repeat = (unsigned)n;
	return 1;
}

int bench_args_option(struct bench_args *a, int argc, char **argv, int *i, uint64_t max_servers)
{
	const char *prog = a->mechs.prog, *v;
	char err[256];
	int r;

	if (strcmp(argv[*i], "--json") == 0) {
		a->json = 1;
		return 0;
	}
	if ((r = bench_option(prog, argc, argv, i, "--mechanisms", &v)) != 0)
		return r < 0 ? 2 : mechlist_parse(&a->mechs, v);
	if ((r = bench_option(prog, argc, argv, i, "--duration", &v)) != 0) {
		if (r > 0 && opts_seconds(v, 0, BENCH_MAX_DURATION, &a->duration, err, sizeof(err)))
			return bench_complain(prog, "--duration: %s", err);
		return r < 0 ? 2 : 0;
	}
	if ((r = bench_option(prog, argc, argv, i, "--servers", &v)) != 0) {
		if (r > 0 && opts_uint(v, 1, max_servers, &a->servers, err, sizeof(err)))
			return bench_complain(prog, "--servers: %s", err);
		return r < 0 ? 2 : 0;
	}
	if ((r = bench_repeat_option(prog, argc, argv, i, &a->repeat)) != 0)
		return r < 0 ? 2 : 0;
	return -1;
}

int bench_args_unknown(const struct bench_args *a, const char *arg)
{
	if (arg[0] == '-')
		return bench_complain(a->mechs.prog, "unknown option '%s' (see --help)", arg);
	return bench_complain(a->mechs.prog, "unexpected argument '%s' (see --help)", arg);
}

int bench_args_finish(struct bench_args *a)
{
	return a->mechs.n == 0 && mechlist_add_all(&a->mechs) ? 2 : 0;
}

void bench_default_threads(const struct bench_args *a, uint64_t t[3])
{
	t[0] = 1;
	t[1] = (uint64_t)a->cpus;
	t[2] = 2 * (uint64_t)a->cpus;
}

double bench_now(void)
{
	return ns_to_s(mono_ns());
}

void bench_sleep_until(double t)
{
	struct timespec ts = {.tv_sec = (time_t)t};

	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * NS_PER_S);
	if (ts.tv_nsec > 999999999)
		ts.tv_nsec = 999999999;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

/* Numbers end where their '*' would be, so that marked and unmarked ones line up. */
static void print_cell(FILE *out, const char *text, int width)
{
	size_t len = strlen(text);

	if (len && text[len - 1] == '*')
		fprintf(out, "  %*s", width, text);
	else
		fprintf(out, "  %*s ", width - 1, text);
}

void bench_print_table(FILE *out, const struct bench_table *t)
{
	int namew = (int)strlen("mechanism"), colw = 0;
	char label[160], text[64];

	for (size_t m = 0; m < t->rows->n; m++)
		if ((int)strlen(t->rows->m[m].run) > namew)
			namew = (int)strlen(t->rows->m[m].run);
	for (size_t col = 0; col < t->ncols; col++) {
		t->label(t->ctx, col, label, sizeof(label));
		if ((int)strlen(label) > colw)
			colw = (int)strlen(label);
		for (size_t m = 0; m < t->rows->n; m++) {
			t->cell(t->ctx, m, col, text, sizeof(text));
			if ((int)strlen(text) + 1 > colw)
				colw = (int)strlen(text) + 1;
		}
	}
	fprintf(out, "%-*s", namew, "mechanism");
	for (size_t col = 0; col < t->ncols; col++) {
		t->label(t->ctx, col, label, sizeof(label));
		fprintf(out, "  %*s", colw, label);
	}
	fputc('\n', out);
	for (size_t m = 0; m < t->rows->n; m++) {
		fprintf(out, "%-*s", namew, t->rows->m[m].run);
		for (size_t col = 0; col < t->ncols; col++) {
			t->cell(t->ctx, m, col, text, sizeof(text));
			print_cell(out, text, colw);
		}
		fputc('\n', out);
	}
}

const char *bench_cell_text(enum bench_cell state)
{
	switch (state) {
	case BENCH_CELL_LOST:
		return "LOST";
	case BENCH_CELL_FAILED:
		return "FAIL";
	default:
		return "-";
	}
}

enum bench_cell bench_measure(child_body body, void *params, double timeout, void *result,
			      size_t size, struct child_outcome *out,
			      enum bench_cell (*verdict)(const void *result, char *why, size_t n),
			      char *why, size_t n)
{
	if (child_measure(body, params, timeout, result, size, out, why, n))
		return BENCH_CELL_FAILED;
	return verdict(result, why, n);
}
