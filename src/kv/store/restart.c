/*
 * locus-kv's restartable cache (-e FILE), after memcached's restart.c: item memory is a
 * mapped file (memfile.h); a graceful stop (SIGUSR1, "shutdown graceful") writes, beside
 * it, FILE.meta: the settings the file's layout depends on, the clock, the cas counter,
 * the flush marks, which pages each slab class holds and where each class's LRU starts.
 * A start with the same -e reads FILE.meta and removes it; if the settings match it
 * rebuilds the hash table, the LRU lists and the free lists from what the file holds, and
 * every item is back with its value, flags, cas and expiry time, its TTL having run while
 * the server was stopped. Otherwise the cache starts clean. A server that stops any other
 * way leaves no FILE.meta behind, so the next start is clean: never a half-written cache.
 *
 * FILE.meta is memcached's line format: "T<tag>" starts a section, "K<key> <value>" is a
 * setting; the tag here is locus-kv's own, so that neither server takes the other's file
 * for its own. memcached's checks and messages are kept: a first line that is not a known
 * tag stops the server (memcached aborts there; the file is left for the operator to look
 * at), a setting that differs ("[restart] restart incompatible due to setting for [...]")
 * or a missing line starts the cache clean. What memcached does not check, this does: a
 * last line with a checksum of the others (a truncated or edited file starts clean), the
 * page layout against the file, every item header against its slab class (a header that
 * does not fit its chunk is a free chunk), keys seen twice, and the number of live items
 * and their bytes per class against what the stop counted.
 *
 * Liveness is marked in the items themselves at the stop: every chunk of every class's
 * pages has KV_IT_HASH cleared, then every item in the hash table has it set again, so a
 * chunk that was free, or holds an item from an earlier run, can never come back to life.
 * A chunked item's chunks (item.h) are marked with it; at the start each chunked item's
 * table is moved to where the file is mapped now and every chunk it names checked to be a
 * marked chunk of its class, and the chunks found marked must be those the items name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kv/store/restart.h"
#include "kv/store/store_impl.h"

#define TAG	    "locus-kv"
#define FORMAT	    "2"
#define KEY_MAX_LEN 250

/* ---------- the metadata file: lines and their checksum ---------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

#define FNV0 0xcbf29ce484222325ull

static char *meta_path(const char *file, const char *ext)
{
	char *p = malloc(strlen(file) + strlen(ext) + 1);
	if (p)
		sprintf(p, "%s%s", file, ext);
	return p;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* ---------- what the stopped server left: the settings checked, then its state ---------- */

/* The settings the file's contents depend on, in memcached's order and words. */
struct setting {
	const char *key;
	char now[64];
};

static int settings_of(const kv_store *st, struct setting *s)
{
	const struct kv_store_config *c = &st->cfg;
	int n = 0;
	s[n].key = "slab_config";
	snprintf(s[n++].now, sizeof(s[0].now), "%.17g", c->factor);
	s[n].key = "maxbytes";
	snprintf(s[n++].now, sizeof(s[0].now), "%zu", c->mem_limit);
	s[n].key = "chunk_size";
	snprintf(s[n++].now, sizeof(s[0].now), "%u", c->chunk_min);
	s[n].key = "item_size_max";
	snprintf(s[n++].now, sizeof(s[0].now), "%zu", c->item_size_max);
	s[n].key = "slab_chunk_size_max";
	snprintf(s[n++].now, sizeof(s[0].now), "%zu", st->chunk_max);
	s[n].key = "slab_page_size";
	snprintf(s[n++].now, sizeof(s[0].now), "%u", KV_PAGE_SIZE);
	s[n].key = "use_cas";
	snprintf(s[n++].now, sizeof(s[0].now), "%s", c->use_cas ? "true" : "false");
	s[n].key = "slab_reassign";
	snprintf(s[n++].now, sizeof(s[0].now), "%s", c->slab_reassign ? "true" : "false");
	return n;
}

#define NSETTINGS 8

struct kv_restart {
	struct kv_memfile file;
	int reuse; /* the metadata were read and match: rebuild from the file */
	uint64_t oldbase, started, stop_time, next_cas, oldest_cas;
	uint32_t now, oldest_live;
	unsigned hashpower;
	uint64_t file_pages; /* the file's whole pages: saved, and now (pages) */
	size_t pages;
	struct kv_slabs_layout layout;
	uint64_t items[KV_CLASSES_MAX + 1], bytes[KV_CLASSES_MAX + 1];
	uint64_t lru_off[KV_CLASSES_MAX + 1][KV_LRU_SEGS], lru_n[KV_CLASSES_MAX + 1][KV_LRU_SEGS];
	int has_lru[KV_CLASSES_MAX + 1][KV_LRU_SEGS];
};

static int num(const char *v, uint64_t *out)
{
	char *end;
	if (!*v || *v == '-' || *v == ' ')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || *end)
		return -1;
	*out = x;
	return 0;
}

/* "0,5,9": page indexes. */
static int page_list(const char *v, uint32_t **out, size_t *n)
{
	free(*out);
	*out = NULL;
	*n = 0;
	if (!*v)
		return 0;
	size_t cap = 1;
	for (const char *p = v; *p; p++)
		cap += *p == ',';
	if (!(*out = malloc(cap * sizeof(**out))))
		return -1;
	for (const char *p = v;;) {
		char *end;
		if (*p < '0' || *p > '9')
			return -1;
		errno = 0;
		unsigned long x = strtoul(p, &end, 10);
		if (errno || x > UINT32_MAX || (*end != ',' && *end))
			return -1;
		(*out)[(*n)++] = (uint32_t)x;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

/* "name_N" with N a class id: N, else 0. */
static unsigned class_key(const char *key, const char *name)
{
	size_t n = strlen(name);
	uint64_t id;
	if (strncmp(key, name, n) != 0 || key[n] != '_' || num(key + n + 1, &id) || id == 0 ||
	    id > KV_CLASSES_MAX)
		return 0;
	return (unsigned)id;
}

/* One "K" line of the state: 0, or -1 (a value that does not parse: the file is not used). */
static int state_line(struct kv_restart *r, const char *key, const char *v, int *seen)
{
	uint64_t x, y, z;
	unsigned cls;
	char tail[2];
#define SCALAR(name, field, max)                                                                   \
	if (strcmp(key, name) == 0) {                                                              \
		if (num(v, &x) || x > (max))                                                       \
			return -1;                                                                 \
		r->field = x;                                                                      \
		(*seen)++;                                                                         \
		return 0;                                                                          \
	}
	if (strcmp(key, "format") == 0)
		return strcmp(v, FORMAT) == 0 ? 0 : -1;
	SCALAR("current_time", now, UINT32_MAX)
	SCALAR("process_started", started, UINT64_MAX)
	SCALAR("stop_time", stop_time, UINT64_MAX)
	SCALAR("current_cas", next_cas, UINT64_MAX)
	SCALAR("oldest_cas", oldest_cas, UINT64_MAX)
	SCALAR("oldest_live", oldest_live, UINT32_MAX)
	SCALAR("hashpower", hashpower, 32)
	SCALAR("mmap_oldbase", oldbase, UINT64_MAX)
	SCALAR("file_pages", file_pages, UINT64_MAX)
#undef SCALAR
	if (strcmp(key, "pool") == 0)
		return page_list(v, &r->layout.pool, &r->layout.npool);
	if ((cls = class_key(key, "pages")))
		return page_list(v, &r->layout.pages[cls], &r->layout.npages[cls]);
	if ((cls = class_key(key, "runs")))
		return page_list(v, &r->layout.runs[cls], &r->layout.nruns[cls]);
	if ((cls = class_key(key, "items"))) {
		if (sscanf(v, "%" SCNu64 " %" SCNu64 "%1s", &x, &y, tail) != 2)
			return -1;
		r->items[cls] = x;
		r->bytes[cls] = y;
		return 0;
	}
	if ((cls = class_key(key, "lru"))) {
		if (sscanf(v, "%" SCNu64 " %" SCNu64 " %" SCNu64 "%1s", &y, &z, &x, tail) != 3 ||
		    y >= KV_LRU_SEGS)
			return -1;
		r->lru_off[cls][y] = z;
		r->lru_n[cls][y] = x;
		r->has_lru[cls][y] = 1;
		return 0;
	}
	say("[restart] unknown/unhandled key: %s\n", key);
	return 0;
}

#define STATE_REQUIRED 9 /* current_time .. file_pages above */

enum check { CHECK_NONE, CHECK_REUSE, CHECK_CLEAN, CHECK_REFUSE };

/*
 * Read FILE.meta and remove it. CHECK_NONE: there is none; CHECK_REUSE: it matches this
 * server's settings and reads whole (r filled in); CHECK_CLEAN: it does not (the reason
 * said); CHECK_REFUSE: its first line is not locus-kv's tag (said; the file stays).
 */
static enum check check_meta(const kv_store *st, struct kv_restart *r, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		say("[restart] no metadata save file, starting with a clean cache\n");
		return CHECK_NONE;
	}
	struct setting want[NSETTINGS];
	settings_of(st, want);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t sum = FNV0;
	int lineno = 0, settings_seen = 0, state_seen = 0, summed = 0;
	enum check verdict = CHECK_REUSE;
	while ((len = getline(&line, &cap, f)) != -1) {
		int first = lineno++ == 0;
		int nl = len > 0 && line[len - 1] == '\n';
		if (nl)
			line[len - 1] = '\0';
		if (strncmp(line, "Kchecksum ", 10) == 0 && !first) {
			uint64_t want_sum;
			if (num(line + 10, &want_sum) || want_sum != sum || !nl) {
				say("[restart] the metadata checksum does not match\n");
				verdict = CHECK_CLEAN;
			} else if (getline(&line, &cap, f) != -1) {
				say("[restart] lines after the metadata checksum\n");
				verdict = CHECK_CLEAN;
			}
			summed = 1;
			break;
		}
		sum = fnv(sum, line, strlen(line));
		sum = fnv(sum, "\n", nl);
		if (line[0] == 'T') {
			if (strcmp(line + 1, TAG) != 0) {
				say("[restart] internal handler for metadata tag not found: %s:\n",
				    line + 1);
				if (first) {
					say("[restart] corrupt metadata file\n");
					verdict = CHECK_REFUSE;
				} else {
					verdict = CHECK_CLEAN;
				}
				break;
			}
			continue;
		}
		if (line[0] != 'K') {
			say("[restart] invalid metadata line:\n\n%s\n", line);
			if (first)
				say("[restart] corrupt metadata file\n");
			verdict = first ? CHECK_REFUSE : CHECK_CLEAN;
			break;
		}
		if (first) {
			say("[restart] corrupt metadata file\n");
			verdict = CHECK_REFUSE;
			break;
		}
		char *key = line + 1, *val = strchr(key, ' ');
		if (val)
			*val++ = '\0';
		else
			val = key + strlen(key);
		int setting = -1;
		for (int i = 0; i < NSETTINGS; i++)
			if (strcmp(key, want[i].key) == 0)
				setting = i;
		int bad = setting >= 0 ? strcmp(val, want[setting].now) != 0
				       : state_line(r, key, val, &state_seen) != 0;
		settings_seen += setting >= 0;
		if (bad) {
			say("[restart] restart incompatible due to setting for [%s] [old value: "
			    "%s]\n",
			    key, val);
			verdict = CHECK_CLEAN;
			break;
		}
	}
	if (lineno == 0) {
		say("[restart] Failed to read a tag from metadata file\n");
		verdict = CHECK_REFUSE;
	}
	free(line);
	fclose(f);
	if (verdict == CHECK_REFUSE)
		return verdict;
	unlink(path);
	if (settings_seen < NSETTINGS || state_seen < STATE_REQUIRED) {
		/* Also after a setting that differs, as memcached: the rest was not read. */
		say("[restart] missing some metadata lines\n");
		verdict = CHECK_CLEAN;
	} else if (verdict == CHECK_REUSE && !summed) {
		say("[restart] the metadata file has no checksum: it was cut short\n");
		verdict = CHECK_CLEAN;
	}
	if (verdict == CHECK_REUSE && r->file_pages != r->pages) {
		say("[restart] restart incompatible due to setting for [file_pages] [old value: "
		    "%" PRIu64 "]\n",
		    r->file_pages);
		verdict = CHECK_CLEAN;
	}
	if (verdict == CHECK_REUSE) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		if ((uint64_t)t.tv_sec < r->stop_time) {
			/* The clock went back: the expiry times cannot be trusted. */
			say("[restart] restart incompatible due to setting for [stop_time] [old "
			    "value: %" PRIu64 "]\n",
			    r->stop_time);
			verdict = CHECK_CLEAN;
		}
	}
	if (verdict == CHECK_CLEAN)
		say("[restart] failed to validate metadata, starting with a clean cache\n");
	return verdict;
}

/* ---------- rebuilding the cache from the file ---------- */

struct rebuild {
	kv_store *st;
	const struct kv_restart *r;
	struct kv_item **live[KV_CLASSES_MAX + 1];
	size_t nlive[KV_CLASSES_MAX + 1], cap[KV_CLASSES_MAX + 1];
	uint64_t bytes[KV_CLASSES_MAX + 1];
	uint64_t chunk_bytes;		    /* the live items' chunks, as "stats" counts them */
	uint64_t chunks_named, chunks_seen; /* chunks the live items name; marked chunks met */
	int oom;
};

/* A pointer of the stopped server's into the file as mapped now; NULL if outside it. */
static struct kv_item *moved(const struct rebuild *b, const struct kv_item *p)
{
	uintptr_t u = (uintptr_t)p;
	if (u < b->r->oldbase || u - b->r->oldbase >= b->r->file.len)
		return NULL;
	return (struct kv_item *)(b->r->file.base + (u - b->r->oldbase));
}

/*
 * A chunked item's header in a chunk of class cls: its table fits, its chunks are marked
 * chunks of the classes they say, the table moved to the mapping of now. 0, or -1.
 */
static int chunked_fits(struct rebuild *b, struct kv_item *it, unsigned cls)
{
	kv_store *st = b->st;
	unsigned ccls = kv_slabs_class_for(st->slabs, st->chunk_max);
	struct kv_chunks *ch = kv_item_chunks(it);
	if (it->cls != ccls || ch->hcls != cls ||
	    kv_chunked_header(it->nkey, 0) > kv_slabs_chunk_size(st->slabs, cls) ||
	    kv_chunked_header(it->nkey, ch->n) > kv_slabs_chunk_size(st->slabs, cls) ||
	    ch->size != kv_slabs_chunk_size(st->slabs, ccls) - sizeof(struct kv_item) ||
	    ch->n != ((uint64_t)it->nbytes + 2 + ch->size - 1) / ch->size)
		return -1;
	for (unsigned i = 0; i < ch->n; i++) {
		struct kv_item *p = moved(b, ch->p[i]);
		if (!p)
			return -1;
		unsigned k = kv_slabs_chunk_class(st->slabs, p);
		uint8_t state = ld_relaxed(&p->state);
		size_t want = (size_t)it->nbytes + 2 - (size_t)i * ch->size;
		if (!k || p->cls != k || state != (KV_IT_CHUNK | KV_IT_HASH) ||
		    sizeof(struct kv_item) + (want < ch->size ? want : ch->size) >
			    kv_slabs_chunk_size(st->slabs, k))
			return -1;
	}
	for (unsigned i = 0; i < ch->n; i++)
		ch->p[i] = moved(b, ch->p[i]);
	char end[2];
	kv_item_read(it, it->nbytes, end, 2);
	return memcmp(end, "\r\n", 2) == 0 ? 0 : -1;
}

/* Does this chunk of class cls hold an item the stop left linked? If so link it again. */
static int scan_live(void *ctx, struct kv_item *it, unsigned cls)
{
	struct rebuild *b = ctx;
	kv_store *st = b->st;
	uint8_t state = ld_relaxed(&it->state);
	if (!(state & KV_IT_HASH))
		return 0;
	if (state & KV_IT_CHUNK) {
		/* A chunk of a live chunked item: kept, checked from its item's table. */
		if (it->cls != cls)
			return 0;
		b->chunks_seen++;
		return 1;
	}
	/* A header that does not fit its chunk is no item (its bytes are never read). */
	if (it->nkey == 0 || it->nkey > KEY_MAX_LEN)
		return 0;
	if (state & KV_IT_CHUNKED) {
		if (chunked_fits(b, it, cls) != 0)
			return 0;
		cls = it->cls; /* listed, and counted, in the class of slab_chunk_max */
	} else if (it->cls != cls ||
		   kv_item_total(it->nkey, it->nbytes) > kv_slabs_chunk_size(st->slabs, cls) ||
		   memcmp(kv_item_value(it) + it->nbytes, "\r\n", 2) != 0) {
		return 0;
	}
	uint64_t hv = kv_item_hash(it);
	if (*kv_assoc_find(&st->assoc, hv, it->data, it->nkey))
		return 0; /* a key seen twice: the first one stays */
	if (b->nlive[cls] == b->cap[cls]) {
		size_t cap = b->cap[cls] ? b->cap[cls] * 2 : 256;
		struct kv_item **p = realloc(b->live[cls], cap * sizeof(*p));
		if (!p) {
			b->oom = 1;
			return 0;
		}
		b->live[cls] = p;
		b->cap[cls] = cap;
	}
	b->live[cls][b->nlive[cls]++] = it;
	st_relaxed(&it->state, (uint8_t)(state & ~(KV_IT_HASH | KV_IT_LRU)));
	st_relaxed(&it->refs, 0);
	it->hnext = NULL;
	it->lru_ref = 0;
	kv_assoc_link(&st->assoc, it, hv);
	b->bytes[cls] += kv_mc_item_size(it->nkey, it->flags, it->nbytes);
	b->chunk_bytes += kv_item_bytes(st, it);
	if (state & KV_IT_CHUNKED)
		b->chunks_named += kv_item_chunks(it)->n;
	return 1;
}

/* Class cls's LRU lists again, each from its head through the old next pointers (each
   checked to be a live item of the class and segment not yet listed), then any live item
   the walks did not reach (to COLD if its segment is not one). */
static void rebuild_lru(kv_store *st, const struct kv_restart *r, struct rebuild *b, unsigned cls)
{
	char *base = r->file.base;
	size_t len = r->file.len;
	for (unsigned seg = 0; seg < KV_LRU_SEGS; seg++) {
		uint64_t off = r->lru_off[cls][seg];
		for (uint64_t n = 0; r->has_lru[cls][seg] && n < r->lru_n[cls][seg] && off < len;
		     n++) {
			struct kv_item *it = (struct kv_item *)(base + off);
			unsigned at = kv_slabs_chunk_class(st->slabs, it);
			if (at && kv_item_has(it, KV_IT_CHUNKED) && it->cls == cls)
				at = cls; /* a chunked item's header, in a class of its own */
			if (at != cls || it->lru != seg || !kv_item_has(it, KV_IT_HASH) ||
			    kv_item_has(it, KV_IT_LRU))
				break;
			uintptr_t next = (uintptr_t)it->next;
			kv_lru_restore_tail(st->lru, it);
			if (!next || next < r->oldbase || next - r->oldbase >= len)
				break;
			off = next - r->oldbase;
		}
	}
	for (size_t i = 0; i < b->nlive[cls]; i++)
		if (!kv_item_has(b->live[cls][i], KV_IT_LRU))
			kv_lru_restore_tail(st->lru, b->live[cls][i]);
}

/* The cache from the file: 0, or -1 if the file does not hold what the metadata say. */
static int rebuild(kv_store *st, struct kv_restart *r)
{
	if (kv_slabs_layout_set(st->slabs, &r->layout) != 0) {
		say("[restart] the page layout does not fit the memory file\n");
		return -1;
	}
	struct rebuild *b = calloc(1, sizeof(*b));
	if (!b)
		return -1;
	b->st = st;
	b->r = r;
	kv_slabs_scan(st->slabs, scan_live, b);
	int ok = !b->oom;
	if (ok && b->chunks_named != b->chunks_seen) {
		say("[restart] the items name %" PRIu64 " chunks where %" PRIu64 " are marked\n",
		    b->chunks_named, b->chunks_seen);
		ok = 0;
	}
	uint64_t items = 0, chunk_bytes = b->chunk_bytes;
	for (unsigned c = 1; ok && c <= KV_CLASSES_MAX; c++) {
		if (b->nlive[c] != r->items[c] || b->bytes[c] != r->bytes[c]) {
			say("[restart] slab class %u holds %zu items (%" PRIu64
			    " bytes) where %" PRIu64 " (%" PRIu64 " bytes) were saved\n",
			    c, b->nlive[c], b->bytes[c], r->items[c], r->bytes[c]);
			ok = 0;
			break;
		}
		items += b->nlive[c];
	}
	for (unsigned c = 1; ok && c <= kv_slabs_nclasses(st->slabs); c++)
		rebuild_lru(st, r, b, c);
	for (unsigned c = 0; c <= KV_CLASSES_MAX; c++)
		free(b->live[c]);
	free(b);
	kv_slabs_restore_done(st->slabs);
	if (!ok)
		return -1;
	st->counts.curr_items += (int64_t)items;
	st->counts.bytes += (int64_t)chunk_bytes;
	st->counts.total_items += items;
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	uint64_t away = (uint64_t)t.tv_sec - r->stop_time;
	uint64_t now = (uint64_t)r->now + away;
	kv_clock_restore(&st->clock, r->started, now > UINT32_MAX ? UINT32_MAX : (uint32_t)now,
			 r->next_cas, r->oldest_cas, r->oldest_live);
	return 0;
}

/* ---------- the store's side ---------- */

int kv_restart_begin(kv_store *st, char *err, size_t errlen)
{
	struct kv_restart *r = calloc(1, sizeof(*r));
	char *meta = meta_path(st->cfg.memory_file, ".meta");
	if (!r || !meta) {
		free(r);
		free(meta);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	st->restart = r;
	size_t len = st->cfg.mem_limit;
	r->pages = len / KV_PAGE_SIZE;
	/* The metadata first (their old base is the address to map the file at), then the file. */
	enum check c = check_meta(st, r, meta);
	if (c == CHECK_REFUSE) {
		snprintf(err, errlen,
			 "the memory file's metadata %s cannot be read (see above); move it away "
			 "to start with a clean cache",
			 meta);
		free(meta);
		return -1;
	}
	free(meta);
	void *hint = c == CHECK_REUSE ? (void *)(uintptr_t)r->oldbase : NULL;
	if (kv_memfile_open(&r->file, st->cfg.memory_file, len, hint, err, errlen) != 0)
		return -1;
	r->reuse = c == CHECK_REUSE;
	if (!r->reuse)
		kv_slabs_layout_free(&r->layout);
	return 0;
}

char *kv_restart_region(const kv_store *st, size_t *len)
{
	*len = st->restart->file.len;
	return st->restart->file.base;
}

unsigned kv_restart_hashpower(const kv_store *st)
{
	return st->restart->reuse ? st->restart->hashpower : 0;
}

int kv_restart_finish(kv_store *st, int (*fresh)(kv_store *st), char *err, size_t errlen)
{
	struct kv_restart *r = st->restart;
	if (r->reuse && rebuild(st, r) != 0) {
		say("[restart] failed to restore the memory file, starting with a clean cache\n");
		r->reuse = 0;
		if (fresh(st) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	kv_slabs_layout_free(&r->layout);
	if (r->reuse)
		return 0;
	unsigned needed;
	if (kv_slabs_prefill(st->slabs, &needed) != 0) {
		snprintf(err, errlen,
			 "Error while preallocating slab memory!\nIf using -L or other prealloc "
			 "options, max memory must be at least %u megabytes.",
			 needed);
		return -1;
	}
	return 0;
}

void kv_restart_close(kv_store *st)
{
	if (!st->restart)
		return;
	kv_memfile_close(&st->restart->file);
	kv_slabs_layout_free(&st->restart->layout);
	free(st->restart);
	st->restart = NULL;
}

/* ---------- a graceful stop: the metadata ---------- */

struct writer {
	FILE *f;
	uint64_t sum;
	struct kv_buf line;
	int err;
};

static void put(struct writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct writer *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[256];
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(small)) {
		w->err = 1;
		return;
	}
	w->sum = fnv(w->sum, small, (size_t)n);
	if (fwrite(small, 1, (size_t)n, w->f) != (size_t)n)
		w->err = 1;
}

/* "K<key> 0,5,9\n": a page list, whatever its length. */
static void put_pages(struct writer *w, const char *key, const uint32_t *p, size_t n)
{
	w->line.len = 0;
	w->err |= kv_buf_addf(&w->line, "K%s ", key);
	for (size_t i = 0; i < n; i++)
		w->err |= kv_buf_addf(&w->line, i ? ",%" PRIu32 : "%" PRIu32, p[i]);
	w->err |= kv_buf_add(&w->line, "\n", 1);
	if (w->err)
		return;
	w->sum = fnv(w->sum, w->line.p, w->line.len);
	if (fwrite(w->line.p, 1, w->line.len, w->f) != w->line.len)
		w->err = 1;
}

static int clear_mark(void *ctx, struct kv_item *it, unsigned cls)
{
	kv_item_clear(it, KV_IT_HASH);
	return 0;
}

struct mark_req {
	kv_store *st;
	unsigned stripe;
	uint64_t items[KV_CLASSES_MAX + 1], bytes[KV_CLASSES_MAX + 1];
};

/* The items linked in a stripe: marked live again, and counted. */
static uint64_t mark_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct mark_req *rq = KV_REQ(struct mark_req, a);
	uint64_t nb;
	struct kv_item **buckets = kv_assoc_buckets(as, rq->stripe, &nb);
	for (uint64_t i = 0; i < nb; i++)
		for (struct kv_item *it = buckets[i]; it; it = it->hnext) {
			kv_item_set(it, KV_IT_HASH);
			if (kv_item_chunked(it)) {
				struct kv_chunks *ch = kv_item_chunks(it);
				for (unsigned k = 0; k < ch->n; k++)
					kv_item_set(ch->p[k], KV_IT_HASH);
			}
			rq->items[it->cls]++;
			rq->bytes[it->cls] += kv_mc_item_size(it->nkey, it->flags, it->nbytes);
		}
	return 0;
}

int kv_store_save(kv_store *st)
{
	struct kv_restart *r = st->restart;
	if (!r)
		return 0;
	char *base = r->file.base;
	struct mark_req *m = calloc(1, sizeof(*m));
	struct kv_lru_heads *h = calloc(1, sizeof(*h));
	struct kv_slabs_layout *l = calloc(1, sizeof(*l));
	char *meta = meta_path(st->cfg.memory_file, ".meta");
	char *tmp = meta_path(st->cfg.memory_file, ".meta.tmp");
	struct writer w = {.sum = FNV0};
	int e = !m || !h || !l || !meta || !tmp;
	if (!e) {
		/* Which chunks hold a live item, in the items themselves (the top of this file). */
		kv_slabs_each_chunk(&st->slabs_sec, clear_mark, NULL);
		m->st = st;
		for (unsigned s = 0; s < st->assoc.nstripes; s++) {
			m->stripe = s;
			kv_sec_run(&st->assoc.stripes[s], mark_sec, m);
		}
		kv_lru_heads(&st->alloc_sec, h);
		e = kv_slabs_layout_get(&st->slabs_sec, l) != 0;
	}
	if (!e && kv_memfile_sync(&r->file) != 0) {
		perror("[restart] failed to write the memory file");
		e = 1;
	}
	if (!e) {
		mode_t old = umask(077); /* as memcached's: the metadata are the owner's alone */
		w.f = fopen(tmp, "w");
		umask(old);
		e = !w.f;
		if (e)
			perror("failed to write metadata file");
	}
	if (!e) {
		struct setting now[NSETTINGS];
		settings_of(st, now);
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		put(&w, "T%s\n", TAG);
		put(&w, "Kformat %s\n", FORMAT);
		for (int i = 0; i < NSETTINGS; i++)
			put(&w, "K%s %s\n", now[i].key, now[i].now);
		put(&w, "Kcurrent_time %" PRIu32 "\n", kv_clock_now(&st->clock));
		put(&w, "Kprocess_started %" PRIu64 "\n", st->clock.started);
		put(&w, "Kstop_time %" PRIu64 "\n", (uint64_t)t.tv_sec);
		put(&w, "Kcurrent_cas %" PRIu64 "\n", ld_relaxed(&st->clock.next_cas));
		put(&w, "Koldest_cas %" PRIu64 "\n", ld_relaxed(&st->clock.oldest_cas));
		put(&w, "Khashpower %u\n", ld_relaxed(&st->assoc.hashpower));
		put(&w, "Koldest_live %" PRIu32 "\n", ld_relaxed(&st->clock.oldest_live));
		put(&w, "Kmmap_oldbase %#" PRIxPTR "\n", (uintptr_t)base);
		put(&w, "Kfile_pages %zu\n", r->file.len / KV_PAGE_SIZE);
		char key[32];
		for (unsigned c = 1; c <= kv_slabs_nclasses(st->slabs); c++) {
			snprintf(key, sizeof(key), "pages_%u", c);
			if (l->npages[c])
				put_pages(&w, key, l->pages[c], l->npages[c]);
			snprintf(key, sizeof(key), "runs_%u", c);
			if (l->nruns[c])
				put_pages(&w, key, l->runs[c], l->nruns[c]);
			if (m->items[c])
				put(&w, "Kitems_%u %" PRIu64 " %" PRIu64 "\n", c, m->items[c],
				    m->bytes[c]);
			for (unsigned seg = 0; seg < KV_LRU_SEGS; seg++)
				if (h->head[c][seg])
					put(&w, "Klru_%u %u %zu %" PRIu64 "\n", c, seg,
					    (size_t)((char *)h->head[c][seg] - base), h->n[c][seg]);
		}
		put_pages(&w, "pool", l->pool, l->npool);
		char sum[40];
		snprintf(sum, sizeof(sum), "Kchecksum %#" PRIx64 "\n", w.sum);
		if (fputs(sum, w.f) == EOF || fflush(w.f) != 0 || fsync(fileno(w.f)) != 0)
			w.err = 1;
		if (fclose(w.f) != 0)
			w.err = 1;
		e = w.err || rename(tmp, meta) != 0;
		if (e) {
			perror("[restart] failed to save metadata");
			unlink(tmp);
		}
	}
	kv_buf_free(&w.line);
	if (l)
		kv_slabs_layout_free(l);
	free(l);
	free(h);
	free(m);
	free(meta);
	free(tmp);
	return e ? -1 : 0;
}
