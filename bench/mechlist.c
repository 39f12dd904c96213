/* locus-bench: the --mechanisms list (see mechlist.h). */
#include "mechlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "common.h"
#include "locus/cs.h"
#include "opts.h"

#define CHECK_TIMEOUT 10.0 /* seconds to open and close one executor */

int mechlist_is_peer(const char *name)
{
	return strncmp(name, "peer:", 5) == 0;
}

static int peer_known(const struct mechlist *l, const char *name)
{
	for (size_t i = 0; l->peers && l->peers[i]; i++)
		if (strcmp(name, l->peers[i]) == 0)
			return 1;
	return 0;
}

static const char *peer_names(const struct mechlist *l)
{
	static char buf[256];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; l->peers && l->peers[i] && len < sizeof(buf); i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ", " : "", l->peers[i]);
	return buf;
}

static int add(struct mechlist *l, const char *spec, int from_all)
{
	struct mech *m = realloc(l->m, (l->n + 1) * sizeof(*m));

	if (!m)
		return -1;
	l->m = m;
	m[l->n] = (struct mech){.spec = strdup(spec), .from_all = from_all};
	if (!m[l->n].spec)
		return -1;
	l->n++;
	return 0;
}

int mechlist_add_all(struct mechlist *l)
{
	const char *const *names = locus_cs_mechanisms();

	for (size_t i = 0; names[i]; i++)
		if (add(l, names[i], 1))
			return bench_complain(l->prog, "out of memory");
	for (size_t i = 0; l->peers && l->peers[i]; i++)
		if (add(l, l->peers[i], 1))
			return bench_complain(l->prog, "out of memory");
	return 0;
}

/* 1 if a list item begins a new spec: "all", a peer, or a mechanism name (options or not). */
static int starts_spec(const char *item)
{
	const char *const *names = locus_cs_mechanisms();
	size_t len = strcspn(item, ":");

	if (strcmp(item, "all") == 0 || mechlist_is_peer(item))
		return 1;
	for (size_t i = 0; names[i]; i++)
		if (strlen(names[i]) == len && strncmp(item, names[i], len) == 0)
			return 1;
	return 0;
}

/* The item is one more option of the last spec: append ",item" to it. */
static int extend_last(struct mechlist *l, const char *item)
{
	struct mech *m = &l->m[l->n - 1];
	size_t len = strlen(m->spec) + 1 + strlen(item) + 1;
	char *s = malloc(len);

	if (!s)
		return -1;
	snprintf(s, len, "%s,%s", m->spec, item);
	free(m->spec);
	m->spec = s;
	return 0;
}

int mechlist_parse(struct mechlist *l, const char *list)
{
	size_t n, i;
	char **items = opts_split(list, &n);
	int takes_options = 0, rc = 0;

	if (!items)
		return bench_complain(l->prog, "out of memory");
	for (i = 0; i < n && rc == 0; i++) {
		const char *item = items[i];

		if (item[0] == '\0') {
			rc = bench_complain(l->prog, "--mechanisms: empty name in '%s'", list);
		} else if (takes_options && !starts_spec(item)) {
			rc = extend_last(l, item) ? bench_complain(l->prog, "out of memory") : 0;
		} else if (strcmp(item, "all") == 0) {
			rc = mechlist_add_all(l);
			takes_options = 0;
		} else {
			rc = add(l, item, 0) ? bench_complain(l->prog, "out of memory") : 0;
			takes_options = strchr(item, ':') != NULL;
		}
	}
	opts_free_list(items);
	return rc;
}

/* 1 if the spec's options (after the colon) include one that starts with `prefix`. */
static int spec_has_option(const char *spec, const char *prefix)
{
	const char *p = strchr(spec, ':');
	size_t len = strlen(prefix);

	while (p) {
		p++;
		if (strncmp(p, prefix, len) == 0)
			return 1;
		p = strchr(p, ',');
	}
	return 0;
}

/* Open spec and close it again; 0, or -1 with the library's reason. */
static int try_open(const char *spec, char *canonical, size_t cap, char *err, size_t errlen)
{
	_Alignas(LOCUS_CACHELINE) char state[256] = {0};
	locus_cs *cs = locus_cs_open(spec, state);

	if (!cs) {
		snprintf(err, errlen, "%s", locus_cs_error());
		return -1;
	}
	snprintf(canonical, cap, "%s", locus_cs_spec(cs));
	locus_cs_close(cs);
	return 0;
}

/* What opening a spec to check it found (sent back from the checking child). */
struct check_reply {
	int ok;
	int delegation;
	char effective[256]; /* the spec to measure: the given one, with servers= added */
	char canonical[256]; /* locus_cs_spec() of the effective spec */
	char err[512];
};

/*
 * Delegation mechanisms are told apart by their canonical spec, which always
 * shows servers=: that holds for any that may be added, without a list here.
 * A spec that does not open as given may need servers= first (server=3 only
 * makes sense with 4 servers), so only then is the bare name opened to learn
 * whether it is one. Opening the bare name first would fix a process-wide
 * choice for mechanisms that have one (stm's method) before the spec's own.
 */
static int check_spec(const char *spec, unsigned servers, struct check_reply *r)
{
	char name[256];
	size_t cap = sizeof(r->effective);

	snprintf(r->effective, cap, "%s", spec);
	if (try_open(r->effective, r->canonical, sizeof(r->canonical), r->err, sizeof(r->err))) {
		char first_err[sizeof(r->err)];
		snprintf(first_err, sizeof(first_err), "%s", r->err);
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(spec, ":"), spec);
		if (!strchr(spec, ':') || spec_has_option(spec, "servers=") ||
		    try_open(name, r->canonical, sizeof(r->canonical), r->err, sizeof(r->err)) ||
		    !spec_has_option(r->canonical, "servers=")) {
			snprintf(r->err, sizeof(r->err), "%s", first_err);
			return -1;
		}
		if ((size_t)snprintf(r->effective, cap, "%s,servers=%u", spec, servers) >= cap) {
			snprintf(r->err, sizeof(r->err), "spec too long to add servers=%u",
				 servers);
			return -1;
		}
		if (try_open(r->effective, r->canonical, sizeof(r->canonical), r->err,
			     sizeof(r->err)))
			return -1;
	}
	r->delegation = spec_has_option(r->canonical, "servers=");
	if (!r->delegation || spec_has_option(r->effective, "servers="))
		return 0;
	/* It opened without servers=: now give it its servers. */
	if ((size_t)snprintf(r->effective, cap, "%s%sservers=%u", spec,
			     strchr(spec, ':') ? "," : ":", servers) >= cap) {
		snprintf(r->err, sizeof(r->err), "spec too long to add servers=%u", servers);
		return -1;
	}
	return try_open(r->effective, r->canonical, sizeof(r->canonical), r->err, sizeof(r->err));
}

struct check_arg {
	const char *spec;
	unsigned servers;
};

static int check_body(void *arg, int fd)
{
	const struct check_arg *a = arg;
	struct check_reply r;

	memset(&r, 0, sizeof(r));
	r.ok = check_spec(a->spec, a->servers, &r) == 0;
	return child_write_all(fd, &r, sizeof(r)) ? 3 : 0;
}

/* 1 keep, 0 drop (warned), 2 bad spec (reported), -1 out of memory. */
static int check_one(const struct mechlist *l, struct mech *m, unsigned servers)
{
	struct check_arg arg = {.spec = m->spec, .servers = servers};
	struct check_reply r;
	struct child_status st;
	char how[128];

	if (mechlist_is_peer(m->spec)) {
		if (!l->peers)
			return bench_complain(
				l->prog, "--mechanisms: '%s': this command has no peers", m->spec);
		if (!peer_known(l, m->spec))
			return bench_complain(l->prog,
					      "--mechanisms: unknown peer '%s' (peers: %s)",
					      m->spec, peer_names(l));
		m->run = strdup(m->spec);
		return m->run ? 1 : -1;
	}
	if (child_run(check_body, &arg, CHECK_TIMEOUT, &r, sizeof(r), &st) || st.len != sizeof(r)) {
		/* Not the user's fault: measure it anyway and let the measurements report. */
		child_describe(&st, how, sizeof(how));
		fprintf(stderr, "%s: warning: opening '%s' to check it: %s\n", l->prog, m->spec,
			how);
		m->run = strdup(m->spec);
		return m->run ? 1 : -1;
	}
	if (r.ok) {
		m->run = strdup(r.effective);
		m->delegation = r.delegation;
		return m->run ? 1 : -1;
	}
	bench_one_line(r.err);
	if (m->from_all) {
		fprintf(stderr, "%s: warning: skipping '%s': %s\n", l->prog, m->spec, r.err);
		return 0;
	}
	if (l->peers)
		return bench_complain(l->prog, "--mechanisms: '%s': %s (peers: %s)", m->spec, r.err,
				      peer_names(l));
	return bench_complain(l->prog, "--mechanisms: '%s': %s", m->spec, r.err);
}

int mechlist_check(struct mechlist *l, unsigned servers)
{
	size_t kept = 0;
	int rc = 0;

	for (size_t i = 0; i < l->n; i++) {
		/* After an error the rest are only kept, so that mechlist_free frees each once. */
		int r = rc ? 1 : check_one(l, &l->m[i], servers);

		if (r < 0)
			rc = bench_complain(l->prog, "out of memory");
		if (r == 2)
			rc = 2;
		if (r != 0) {
			l->m[kept++] = l->m[i];
		} else {
			free(l->m[i].spec);
			free(l->m[i].run);
		}
	}
	l->n = kept;
	if (rc)
		return rc;
	if (kept == 0)
		return bench_complain(l->prog, "no mechanism left to measure");
	return 0;
}

void mechlist_free(struct mechlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->m[i].spec);
		free(l->m[i].run);
	}
	free(l->m);
	l->m = NULL;
	l->n = 0;
}
