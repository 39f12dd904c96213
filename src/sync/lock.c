/* locus_lock: dispatch to the algorithm chosen at init, and the pthread baseline. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "sync/lock_impl.h"

static const char *const kind_names[LOCUS_LOCK_NKINDS] = {
	[LOCUS_LOCK_MUTEX] = "mutex",	[LOCUS_LOCK_TAS] = "tas", [LOCUS_LOCK_TTAS] = "ttas",
	[LOCUS_LOCK_TICKET] = "ticket", [LOCUS_LOCK_MCS] = "mcs", [LOCUS_LOCK_CLH] = "clh",
	[LOCUS_LOCK_FUTEX] = "futex",
};

const char *locus_lock_kind_name(locus_lock_kind kind)
{
	return (unsigned)kind < LOCUS_LOCK_NKINDS ? kind_names[kind] : NULL;
}

int locus_lock_kind_parse(const char *name, locus_lock_kind *kind)
{
	for (int k = 0; name && k < LOCUS_LOCK_NKINDS; k++) {
		if (strcmp(name, kind_names[k]) == 0) {
			*kind = (locus_lock_kind)k;
			return 0;
		}
	}
	return -1;
}

int lock_init(struct lock *l, locus_lock_kind kind, const locus_wait *wait)
{
	if ((unsigned)kind >= LOCUS_LOCK_NKINDS)
		return EINVAL;
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	l->wait = wait ? *wait : locus_wait_default();
	l->backoff_max = TTAS_BACKOFF_MAX_DEFAULT;
	l->admit = admit_default();
	switch (kind) {
	case LOCUS_LOCK_MUTEX:
		return pthread_mutex_init(&l->u.mutex, NULL);
	case LOCUS_LOCK_TICKET:
		ticket_init(l);
		return 0;
	case LOCUS_LOCK_MCS:
		mcs_init(l);
		return 0;
	case LOCUS_LOCK_CLH:
		return clh_init(l);
	default:
		word_init(l);
		return 0;
	}
}

void lock_lock(struct lock *l)
{
	switch (l->kind) {
	case LOCUS_LOCK_MUTEX:
		pthread_mutex_lock(&l->u.mutex);
		break;
	case LOCUS_LOCK_TAS:
		tas_lock(l);
		break;
	case LOCUS_LOCK_TTAS:
		ttas_lock(l);
		break;
	case LOCUS_LOCK_TICKET:
		ticket_lock(l);
		break;
	case LOCUS_LOCK_MCS:
		mcs_lock(l);
		break;
	case LOCUS_LOCK_CLH:
		clh_lock(l);
		break;
	case LOCUS_LOCK_FUTEX:
		futex_lock(l);
		break;
	}
}

int lock_trylock(struct lock *l)
{
	switch (l->kind) {
	case LOCUS_LOCK_MUTEX:
		return pthread_mutex_trylock(&l->u.mutex) == 0 ? 0 : EBUSY;
	case LOCUS_LOCK_TICKET:
		return ticket_trylock(l);
	case LOCUS_LOCK_MCS:
		return mcs_trylock(l);
	case LOCUS_LOCK_CLH:
		return clh_trylock(l);
	default:
		return word_trylock(l);
	}
}

void lock_unlock(struct lock *l)
{
	switch (l->kind) {
	case LOCUS_LOCK_MUTEX:
		pthread_mutex_unlock(&l->u.mutex);
		break;
	case LOCUS_LOCK_TICKET:
		ticket_unlock(l);
		break;
	case LOCUS_LOCK_MCS:
		mcs_unlock(l);
		break;
	case LOCUS_LOCK_CLH:
		clh_unlock(l);
		break;
	default:
		word_unlock(l);
		break;
	}
}

void lock_destroy(struct lock *l)
{
	if (l->kind == LOCUS_LOCK_MUTEX)
		pthread_mutex_destroy(&l->u.mutex);
	else if (l->kind == LOCUS_LOCK_CLH)
		clh_destroy(l);
}

static int queue_kind(locus_lock_kind kind)
{
	return kind == LOCUS_LOCK_TICKET || kind == LOCUS_LOCK_CLH || kind == LOCUS_LOCK_MCS;
}

int lock_kind_option(locus_lock_kind kind, const char *opt, struct lock_opts *o)
{
	if (kind == LOCUS_LOCK_TTAS) {
		if (strcmp(opt, "backoff") == 0) {
			o->backoff_max = TTAS_BACKOFF_MAX_DEFAULT;
			return 1;
		}
		if (strcmp(opt, "nobackoff") == 0) {
			o->backoff_max = 1;
			return 1;
		}
		if (strncmp(opt, "backoff_max=", 12) == 0)
			return parse_num_u32(opt + 12, 1, UINT32_MAX, &o->backoff_max) == 0 ? 1
											    : -1;
	}
	if (kind == LOCUS_LOCK_TAS || kind == LOCUS_LOCK_TTAS || kind == LOCUS_LOCK_FUTEX) {
		if (strcmp(opt, "antistarve") == 0) {
			o->flags &= ~LOCK_BARGE;
			return 1;
		}
		if (strcmp(opt, "barge") == 0) {
			o->flags |= LOCK_BARGE;
			return 1;
		}
	}
	if (kind == LOCUS_LOCK_MCS) {
		if (strcmp(opt, "cr") == 0) {
			o->flags &= ~LOCK_NOCR;
			return 1;
		}
		if (strcmp(opt, "nocr") == 0) {
			o->flags |= LOCK_NOCR;
			return 1;
		}
	}
	if (queue_kind(kind)) {
		if (strcmp(opt, "strict") == 0) {
			o->flags |= LOCK_STRICT;
			return 1;
		}
		if (strcmp(opt, "admit") == 0) {
			o->flags &= ~LOCK_STRICT;
			o->admit = 0;
			return 1;
		}
		if (strncmp(opt, "admit=", 6) == 0) {
			o->flags &= ~LOCK_STRICT;
			return parse_num_u32(opt + 6, 2, UINT32_MAX, &o->admit) == 0 ? 1 : -1;
		}
	}
	return 0;
}

void lock_apply_opts(struct lock *l, const struct lock_opts *o)
{
	l->backoff_max = o->backoff_max;
	l->flags = o->flags;
	l->admit = o->admit ? o->admit : admit_default();
}

int lock_wait_format(const locus_wait *w, char *buf, size_t len)
{
	if (w->kind == LOCUS_WAIT_SPINPARK)
		return snprintf(buf, len, "%s,spins=%u", locus_wait_name(w), w->spins);
	return snprintf(buf, len, "%s", locus_wait_name(w));
}

/* ",strict" or ",admit=N" for the queue locks. */
static int admit_format(const struct lock_opts *o, char *buf, size_t len)
{
	if (o->flags & LOCK_STRICT)
		return snprintf(buf, len, ",strict");
	return snprintf(buf, len, ",admit=%u", o->admit ? o->admit : admit_default());
}

int lock_kind_format(locus_lock_kind kind, const struct lock_opts *o, char *buf, size_t len)
{
	const char *starve = o->flags & LOCK_BARGE ? "barge" : "antistarve";
	int n;
	switch (kind) {
	case LOCUS_LOCK_TAS:
	case LOCUS_LOCK_FUTEX:
		return snprintf(buf, len, ",%s", starve);
	case LOCUS_LOCK_TTAS:
		return snprintf(buf, len, ",%s,backoff_max=%u", starve, o->backoff_max);
	case LOCUS_LOCK_MCS:
		n = snprintf(buf, len, ",%s", o->flags & LOCK_NOCR ? "nocr" : "cr");
		return n + admit_format(o, buf + n, (size_t)n < len ? len - (size_t)n : 0);
	case LOCUS_LOCK_TICKET:
	case LOCUS_LOCK_CLH:
		return admit_format(o, buf, len);
	default:
		return snprintf(buf, len, "%s", "");
	}
}

/* Parses without allocating: it may run where malloc is not yet safe to call. */
int lock_init_spec(struct lock *l, const char *spec)
{
	char part[64];
	size_t n = strcspn(spec, ":");
	locus_lock_kind kind;
	if (n >= sizeof(part))
		return ENOENT;
	memcpy(part, spec, n);
	part[n] = '\0';
	if (locus_lock_kind_parse(part, &kind) != 0)
		return ENOENT;
	locus_wait wait = locus_wait_default();
	struct lock_opts o = LOCK_OPTS_DEFAULT;
	for (const char *p = spec[n] ? spec + n + 1 : NULL; p;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len >= sizeof(part))
			return EINVAL;
		memcpy(part, p, len);
		part[len] = '\0';
		int r = kind == LOCUS_LOCK_MUTEX ? 0 : locus_wait_option(&wait, part);
		if (r == 0)
			r = lock_kind_option(kind, part, &o);
		if (r <= 0)
			return EINVAL;
		p = p[len] ? p + len + 1 : NULL;
	}
	int rc = lock_init(l, kind, &wait);
	if (rc == 0)
		lock_apply_opts(l, &o);
	return rc;
}

/* The public API: the same on the struct lock in a locus_lock's bytes. */

int locus_lock_init(locus_lock *l, locus_lock_kind kind, const locus_wait *wait)
{
	memset(l, 0, sizeof(*l));
	return lock_init(lock_of(l), kind, wait);
}

int locus_lock_init_spec(locus_lock *l, const char *spec)
{
	return lock_init_spec(lock_of(l), spec);
}

void locus_lock_lock(locus_lock *l)
{
	lock_lock(lock_of(l));
}

int locus_lock_trylock(locus_lock *l)
{
	return lock_trylock(lock_of(l));
}

void locus_lock_unlock(locus_lock *l)
{
	lock_unlock(lock_of(l));
}

void locus_lock_destroy(locus_lock *l)
{
	lock_destroy(lock_of(l));
}
