/* locus-bench: command-line helpers (see opts.h). */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

int opts_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	uint64_t v;

	/* Checked before the parser refuses it, to say why: "-5" is negative, not garbage. */
	if (s[0] == '-' && s[1] >= '0' && s[1] <= '9') {
		snprintf(err, errlen, "'%s' is negative (at least %llu)", s,
			 (unsigned long long)min);
		return -1;
	}
	if (parse_num_u64(s, 0, UINT64_MAX, &v) != 0) {
		/* Only digits, yet refused: more than 64 bits. */
		if (s[0] != '\0' && s[strspn(s, "0123456789")] == '\0')
			snprintf(err, errlen, "'%s' is too large (at most %llu)", s,
				 (unsigned long long)max);
		else
			snprintf(err, errlen, "'%s' is not a whole number", s);
		return -1;
	}
	if (v > max) {
		snprintf(err, errlen, "'%s' is too large (at most %llu)", s,
			 (unsigned long long)max);
		return -1;
	}
	if (v < min) {
		snprintf(err, errlen, "'%s' is too small (at least %llu)", s,
			 (unsigned long long)min);
		return -1;
	}
	*out = v;
	return 0;
}

int opts_uint_list(const char *s, uint64_t min, uint64_t max, uint64_t **out, size_t *n, char *err,
		   size_t errlen)
{
	size_t count, i;
	char **items = opts_split(s, &count);
	uint64_t *v = items ? calloc(count, sizeof(*v)) : NULL;

	if (!v) {
		opts_free_list(items);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < count; i++) {
		if (items[i][0] == '\0') {
			snprintf(err, errlen, "'%s' has an empty item", s);
			break;
		}
		if (opts_uint(items[i], min, max, &v[i], err, errlen))
			break;
	}
	opts_free_list(items);
	if (i < count) {
		free(v);
		return -1;
	}
	*out = v;
	*n = count;
	return 0;
}

int opts_default_list(uint64_t **list, size_t *count, const uint64_t *v, size_t n)
{
	if (*list)
		return 0;
	*list = malloc(n * sizeof(*v));
	if (!*list)
		return -1;
	*count = 0;
	for (size_t i = 0; i < n; i++)
		if (*count == 0 || (*list)[*count - 1] < v[i])
			(*list)[(*count)++] = v[i];
	return 0;
}

int opts_seconds(const char *s, double min, double max, double *out, char *err, size_t errlen)
{
	char *end;
	double v;

	/* Like opts_uint: no leading space or plus, and no "nan" or "inf". */
	if ((s[0] < '0' || s[0] > '9') && s[0] != '.' && s[0] != '-') {
		snprintf(err, errlen, "'%s' is not a number of seconds", s);
		return -1;
	}
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v)) {
		snprintf(err, errlen, "'%s' is not a number of seconds", s);
		return -1;
	}
	if (v <= min) {
		snprintf(err, errlen, "'%s' must be more than %g", s, min);
		return -1;
	}
	if (v > max) {
		snprintf(err, errlen, "'%s' is too large (at most %g)", s, max);
		return -1;
	}
	*out = v;
	return 0;
}

char **opts_split(const char *s, size_t *n)
{
	size_t count = 1, i;
	const char *p;
	char **list;

	for (p = s; *p; p++)
		count += *p == ',';
	list = calloc(count + 1, sizeof(*list));
	if (!list)
		return NULL;
	for (i = 0; i < count; i++) {
		size_t len = strcspn(s, ",");

		list[i] = strndup(s, len);
		if (!list[i]) {
			opts_free_list(list);
			return NULL;
		}
		s += len + (s[len] == ',');
	}
	*n = count;
	return list;
}

void opts_free_list(char **list)
{
	size_t i;

	if (!list)
		return;
	for (i = 0; list[i]; i++)
		free(list[i]);
	free(list);
}

const char *opts_value(int argc, char **argv, int *i, const char *name, int *missing)
{
	const char *arg = argv[*i];
	size_t len = strlen(name);

	*missing = 0;
	if (strncmp(arg, name, len) != 0)
		return NULL;
	if (arg[len] == '=') {
		*missing = arg[len + 1] == '\0';
		return *missing ? NULL : arg + len + 1;
	}
	if (arg[len] != '\0')
		return NULL;
	/* No value of ours starts with "--": the next option means this one's value was forgotten.
	 */
	if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0) {
		*missing = 1;
		return NULL;
	}
	*i += 1;
	return argv[*i];
}
