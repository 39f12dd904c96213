/*
 * locus-kv's per-prefix statistics (stats_prefix.h; the API is in store.h,
 * kv_detail_*). A chained hash table of the prefixes seen, in the prefix
 * section; memcached keeps the same table under its own lock.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kv/store/stats_prefix.h"
#include "kv/store/store_impl.h"

#define PREFIX_BUCKETS 256

struct prefix {
	struct prefix *next;
	uint64_t get, hit, set, del;
	size_t len;
	char name[];
};

struct kv_prefixes {
	struct prefix *bucket[PREFIX_BUCKETS];
};

struct kv_prefixes *kv_prefixes_new(void)
{
	return calloc(1, sizeof(struct kv_prefixes));
}

static void clear(struct kv_prefixes *p)
{
	for (int i = 0; i < PREFIX_BUCKETS; i++) {
		while (p->bucket[i]) {
			struct prefix *n = p->bucket[i]->next;
			free(p->bucket[i]);
			p->bucket[i] = n;
		}
	}
}

void kv_prefixes_delete(struct kv_prefixes *p)
{
	if (p) {
		clear(p);
		free(p);
	}
}

struct count_req {
	const char *name;
	size_t len;
	enum kv_prefix_op op;
	int hit;
};

static uint64_t count_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_prefixes *p = state;
	struct count_req *rq = KV_REQ(struct count_req, a);
	unsigned h = (unsigned)(kv_hash(rq->name, rq->len) % PREFIX_BUCKETS);
	struct prefix *e = p->bucket[h];
	while (e && !(e->len == rq->len && memcmp(e->name, rq->name, rq->len) == 0))
		e = e->next;
	if (!e) {
		e = calloc(1, sizeof(*e) + rq->len + 1);
		if (!e)
			return 0; /* out of memory: this one is not counted */
		memcpy(e->name, rq->name, rq->len);
		e->len = rq->len;
		e->next = p->bucket[h];
		p->bucket[h] = e;
	}
	switch (rq->op) {
	case KV_PREFIX_GET:
		e->get++;
		e->hit += rq->hit != 0;
		break;
	case KV_PREFIX_SET:
		e->set++;
		break;
	case KV_PREFIX_DEL:
		e->del++;
		break;
	}
	return 0;
}

void kv_detail_count(kv_store *st, const char *key, size_t nkey, enum kv_prefix_op op, int hit)
{
	if (!ld_relaxed(&st->detail_on))
		return;
	const char *d = memchr(key, st->delimiter, nkey);
	if (!d)
		return;
	struct count_req rq = {.name = key, .len = (size_t)(d - key), .op = op, .hit = hit};
	kv_sec_run(&st->prefix_sec, count_sec, &rq);
}

struct dump_req {
	struct kv_buf *out;
	int err;
};

static uint64_t dump_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_prefixes *p = state;
	struct dump_req *rq = KV_REQ(struct dump_req, a);
	for (int i = 0; i < PREFIX_BUCKETS; i++)
		for (struct prefix *e = p->bucket[i]; e; e = e->next)
			rq->err |=
				kv_buf_addf(rq->out,
					    "PREFIX %.*s get %" PRIu64 " hit %" PRIu64
					    " set %" PRIu64 " del %" PRIu64 "\r\n",
					    (int)e->len, e->name, e->get, e->hit, e->set, e->del);
	return 0;
}

int kv_detail_dump(kv_store *st, struct kv_buf *out)
{
	struct dump_req rq = {.out = out};
	kv_sec_run(&st->prefix_sec, dump_sec, &rq);
	rq.err |= kv_buf_add(out, "END\r\n", 5);
	return rq.err ? -1 : 0;
}

static uint64_t reset_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	clear(state);
	return 0;
}

void kv_detail_reset(kv_store *st)
{
	kv_sec_run(&st->prefix_sec, reset_sec, NULL);
}

void kv_detail_set(kv_store *st, int on)
{
	st_relaxed(&st->detail_on, on);
}

int kv_detail_on(const kv_store *st)
{
	return ld_relaxed(&st->detail_on);
}

char kv_detail_delimiter(const kv_store *st)
{
	return st->delimiter;
}
