/*
 * locus-kv: the item store — slab memory, a striped hash table, per-class
 * LRU lists and statistics, each behind its own locus_cs.
 *
 * Four kinds of critical section, each chosen by name (--sync):
 *
 *   hash   one executor per stripe of the hash table; owns the bucket chains
 *          of its stripe and the contents of the items linked there
 *          (value, flags, exptime, cas, access time). memcached's item locks.
 *   alloc  item allocation's bookkeeping: the per-class LRU lists and the
 *          choice of the victim to evict. memcached's cache_lock/LRU locks,
 *          the section seed 000 moved to an asynchronous server.
 *   slabs  the slab allocator: pages, per-class free chunks, the -m limit.
 *   stats  the global counters, which workers add their own counts into.
 *
 * Sections never nest: no section runs another executor. Work that spans
 * structures (store a new item, evict an old one) is a sequence of sections
 * with the item kept alive between them by a reference count. This is what
 * lets every kind of section run on any mechanism, delegation included — a
 * delegation server that ran a section which waited on another section bound
 * to the same server would wait for itself.
 *
 * Reference counts. An item's count is the number of holders: the hash table
 * while it is linked there, the LRU while it is linked there, and any thread
 * between sections. Sections only ever add a reference (to an item that is
 * linked, so the count is at least 1) or hand the structure's reference over
 * to the caller when they unlink; the caller drops references after the
 * section, and whoever drops the last one frees the chunk through the slabs
 * section. So a chunk is freed exactly once, never while reachable.
 *
 * Values are copied out inside the hash section (into the caller's buffer),
 * so incr/decr may rewrite a value in place as memcached does.
 */
#ifndef LOCUS_KV_STORE_H
#define LOCUS_KV_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "kv/protocol/proto.h"
#include "kv/store/buf.h"
#include "kv/store/item.h"

enum kv_section { KV_SEC_HASH, KV_SEC_ALLOC, KV_SEC_SLABS, KV_SEC_STATS, KV_SECTIONS };
extern const char *const kv_section_names[KV_SECTIONS];

#define KV_SYNC_DEFAULT "hash=mutex,alloc=mutex,slabs=mutex,stats=mutex"

/*
 * How the LRU lists behave (lru.h; memcached's settings of the same names and defaults),
 * changed at run time by "lru tune|mode|temp_ttl".
 */
struct kv_lru_tune {
	int segmented;		/* hot, warm, cold and temp lists (0: flat, every item in cold) */
	int temp_lru;		/* items with a TTL of at most temporary_ttl go to temp */
	uint32_t temporary_ttl; /* 61 */
	uint32_t hot_pct;	/* 20: hot's share of its class's bytes */
	uint32_t warm_pct;	/* 40 */
	double hot_max_factor;	/* 0.2: hot keeps items idle less than this times cold's age */
	double warm_max_factor; /* 2.0 */
};
void kv_lru_tune_default(struct kv_lru_tune *t);

struct kv_store_config {
	size_t mem_limit;	  /* -m, bytes */
	size_t item_size_max;	  /* -I, bytes */
	double factor;		  /* chunk size growth factor (-f) */
	unsigned chunk_min;	  /* smallest value+key room of the first class (-n) */
	size_t slab_chunk_max;	  /* memcached's slab_chunk_max: the largest class below -I */
	unsigned stripes;	  /* hash stripes (power of 2) */
	int lru_crawler;	  /* run the background expiry crawler */
	int evict;		  /* evict when memory is full (-M: 0, an error instead) */
	int use_cas;		  /* cas values shown and compared (-C: 0, every cas is 0) */
	int slab_automove;	  /* 0, 1 (default) or 2: see kv_automove_tick */
	double automove_ratio;	  /* slab_automove_ratio (0.8) */
	unsigned automove_window; /* slab_automove_window: seconds (30) */
	int section_stats;	  /* time every section run for "stats sync" (stats_sectime.h) */
	int track_sizes;	  /* stats sizes from the start (-o track_sizes) */
	int detail;		  /* stats detail from the start (-D) */
	char delimiter;		  /* stats detail's prefix delimiter (-D; ':') */
	uint32_t crawler_sleep, crawler_tocrawl; /* lru_crawler sleep and tocrawl */
	unsigned hashpower; /* -o hashpower: 2^hashpower buckets at the start (0: 2^16) */
	int hash_expand;    /* the table doubles when full (-o no_hashexpand: 0) */
	/* -e: item memory is this file, kept across a graceful stop (restart.c); NULL: malloc */
	const char *memory_file;
	int slab_reassign; /* page moves allowed (checked by a restart, as memcached) */
	struct kv_lru_tune lru;
	int lru_maintainer; /* run the LRU maintainer thread (maintainer.c); 0: flat */
	/*
	 * Bytes counted as already taken at the start, against mem_limit and in
	 * total_malloced (without -e): memcached's T_MEMD_INITIAL_MALLOC, the
	 * hook its t/64bit.t fakes a 4 GB cache with. 0: none.
	 */
	size_t initial_malloced;
	/* One executor spec per section ("mutex", "mcs:spin", "async", ...). */
	char sync[KV_SECTIONS][128];
};

/* Defaults: 64 MB, 1 MB items, factor 1.25, 48, 1024 stripes, crawler on, mutex everywhere. */
void kv_store_config_default(struct kv_store_config *c);

/*
 * Parse a --sync value into c->sync: comma-separated section=spec pairs,
 * section one of hash, alloc, slabs, stats or all (sets the four); a spec may
 * itself hold commas ("hash=ttas:spin,backoff_max=64,alloc=async"): a comma
 * starts a new pair only when a section name and '=' follow it. The specs
 * are checked by opening an executor. 0, or -1 with a message in err.
 */
int kv_sync_parse(struct kv_store_config *c, const char *arg, char *err, size_t errlen);

typedef struct kv_store kv_store;

/* Slab class ids are below this (slabs.h: KV_CLASSES_MAX). */
#define KV_CLASSES 64

/* What is counted per slab class ("stats slabs" and "stats items" lines). */
enum kv_class_count {
	KV_CC_GET_HITS,
	KV_CC_CMD_SET,
	KV_CC_DELETE_HITS,
	KV_CC_INCR_HITS,
	KV_CC_DECR_HITS,
	KV_CC_CAS_HITS,
	KV_CC_CAS_BADVAL,
	KV_CC_TOUCH_HITS,
	KV_CC_RECLAIMED,
	KV_CC_EXPIRED_UNFETCHED,
	KV_CC_CRAWLER_RECLAIMED,
	KV_CC_CRAWLER_CHECKED,
	KV_CC_DIRECT_RECLAIMS, /* items a store reclaimed or evicted itself */
	KV_CC_HITS_HOT,	       /* get hits, by the LRU segment the item was in (lru.h) */
	KV_CC_HITS_WARM,
	KV_CC_HITS_COLD,
	KV_CC_HITS_TEMP,
	KV_CLASS_COUNTS
};

/*
 * Counters a worker keeps to itself and adds into the store's under
 * "stats" (kv_counts_flush). The per-class rows are added only for the
 * classes whose bit is set in cls_touched.
 */
struct kv_counts {
	/* The ones nearly every get or set changes, together in the first two cache lines: a
	   flush adds only the counters that moved (kv_counts_add_fn), so it writes these lines
	   of the store's and rarely the others. */
	uint64_t cmd_get, get_hits, get_misses, cmd_set, total_items, bytes_read, bytes_written;
	int64_t curr_items, bytes; /* deltas */
	uint64_t evictions, cmd_touch, cmd_meta, cmd_flush, get_expired, get_flushed;
	uint64_t delete_hits, delete_misses, incr_hits, incr_misses, decr_hits, decr_misses;
	uint64_t cas_hits, cas_misses, cas_badval, touch_hits, touch_misses;
	uint64_t store_too_large, store_no_memory;
	uint64_t reclaimed, expired_unfetched, evicted_unfetched, oom;
	uint64_t crawler_reclaimed, crawler_items_checked, direct_reclaims;
	uint64_t total_connections, rejected_connections;
	int64_t curr_connections;
	uint64_t conn_yields; /* -R: a connection let the others have a turn */
	uint64_t idle_kicks;  /* -o idle_timeout: idle connections closed */
	/* slab page moves (automove.c) */
	uint64_t slab_reassign_rescues, slab_reassign_evictions_nomem, slab_reassign_inline_reclaim,
		slab_reassign_busy_items, slab_reassign_chunk_rescues;
	uint64_t lru_crawler_starts;
	uint64_t cls_touched; /* bit c: cls[c] has counts to add */
	uint64_t cls[KV_CLASSES][KV_CLASS_COUNTS];
};

static inline void kv_count_class(struct kv_counts *c, unsigned cls, enum kv_class_count what)
{
	c->cls[cls][what]++;
	c->cls_touched |= (uint64_t)1 << cls;
}

/* NULL with a message on error (a bad spec, no memory, a memory file that cannot be used). */
kv_store *kv_store_open(const struct kv_store_config *c, char *err, size_t errlen);
void kv_store_close(kv_store *st);
/*
 * A graceful stop with a memory file (-e): write FILE.meta, with which the next
 * kv_store_open of the same file finds every item again (restart.c). Only once nothing
 * else uses the store (workers, crawler and mover stopped); then kv_store_close. 0 (also
 * without a memory file), or -1 (said on stderr): the next start is clean.
 */
int kv_store_save(kv_store *st);
const struct kv_store_config *kv_store_config(const kv_store *st);
/* The spec each section's executors run, defaults explicit. */
const char *kv_store_sync_spec(const kv_store *st, enum kv_section s);

/* Server clock: seconds since start (+ what debug_clock_advance added). */
uint32_t kv_now(const kv_store *st);
void kv_clock_tick(kv_store *st);		   /* re-read the wall clock */
void kv_clock_advance(kv_store *st, int64_t secs); /* tests: move time forward */
uint64_t kv_process_started(const kv_store *st);   /* Unix time of server time 0 */
/* memcached's exptime rules: 0 never; <= 30 days relative; larger absolute; negative past. */
uint32_t kv_exptime(const kv_store *st, int64_t exptime);

/* Results of the operations below. */
enum kv_result {
	KV_STORED,
	KV_NOT_STORED,
	KV_EXISTS,
	KV_NOT_FOUND,
	KV_DELETED,
	KV_TOUCHED,
	KV_NON_NUMERIC,
	KV_TOO_LARGE,
	KV_NO_MEMORY,
	KV_OK,
};

/*
 * A new, unlinked item with room for nbytes of value and "\r\n", key copied,
 * owned by the caller (one reference). NULL with *why = KV_TOO_LARGE or
 * KV_NO_MEMORY. Evicts least recently used items of its class to make room.
 */
struct kv_item *kv_item_new(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			    uint32_t flags, uint32_t exptime, uint32_t nbytes, enum kv_result *why);
/* Drop one reference; the last frees the chunk. */
void kv_item_release(kv_store *st, struct kv_item *it);

/*
 * A thread's LRU bumps, batched (memcached's per-thread bump queue; here the thread drains
 * its own). With one attached to the calling thread and the LRU segmented, a fetch that
 * finds an active item in COLD leaves its move to WARM here, the item's reference held, and
 * KV_BUMPS of them go through the alloc section together: a worker takes that section once
 * for many gets instead of for each. `first` (if set) is called when one starts waiting;
 * it arranges for kv_bumps_drain to run on this thread soon (the server: 5 ms). Other
 * threads, and the flat LRU, bump at once.
 */
#define KV_BUMPS 16
struct kv_bumps {
	struct kv_item *it[KV_BUMPS];
	unsigned n;
	void (*first)(void *ctx);
	void *ctx;
};
/* The calling thread's batch from now on (NULL: none; drain it first). */
void kv_bumps_attach(struct kv_bumps *b);
/* The calling thread's waiting bumps, done now (in no section). */
void kv_bumps_drain(kv_store *st);

/*
 * KV_CAS_STALE: meta "ms ... C<cas> I": like KV_CAS, except that a cas older
 * than the item's still stores, and the new item is marked stale (served with
 * X, the first fetch winning W), as memcached does.
 */
enum kv_store_mode { KV_SET, KV_ADD, KV_REPLACE, KV_APPEND, KV_PREPEND, KV_CAS, KV_CAS_STALE };
/*
 * Store it (value already filled in) with the semantics of the command;
 * consumes the caller's reference. For KV_CAS, cas is the client's unique.
 * *cas_out (may be NULL) gets the stored item's cas. STORED, NOT_STORED,
 * EXISTS, NOT_FOUND, or NO_MEMORY (append/prepend could not get room).
 */
enum kv_result kv_store_item(kv_store *st, struct kv_counts *cnt, struct kv_item *it,
			     enum kv_store_mode mode, uint64_t cas, uint64_t *cas_out);
/* kv_store_item, saying also the class and value size of what it stored (append: joined). */
struct kv_store_info {
	unsigned cls;
	uint32_t nbytes, exptime;
};
enum kv_result kv_store_item_info(kv_store *st, struct kv_counts *cnt, struct kv_item *it,
				  enum kv_store_mode mode, uint64_t cas, uint64_t *cas_out,
				  struct kv_store_info *info);

/* Called with every item evicted to make room, still readable, on the evicting thread. */
typedef void (*kv_evict_hook)(void *ctx, const struct kv_item *it, uint32_t now);
void kv_store_set_evict_hook(kv_store *st, kv_evict_hook hook, void *ctx);

/*
 * Called after every lookup of a client's key (a get, and the one inside a store, incr,
 * delete, touch or meta command: memcached's item_get, which watch fetchers logs), once per
 * command and key, on the command's thread, outside any section: what it found (kv_get_status
 * below) and, when found, the item's class as shown and its value's size (else 0 and 0).
 */
enum kv_get_status { KV_GET_FOUND, KV_GET_NOT_FOUND, KV_GET_EXPIRED, KV_GET_FLUSHED };
typedef void (*kv_fetch_hook)(void *ctx, const char *key, size_t nkey, enum kv_get_status status,
			      unsigned cls, uint32_t nbytes);
void kv_store_set_fetch_hook(kv_store *st, kv_fetch_hook hook, void *ctx);

/*
 * get/gets/gat/gats of one key: on a hit append "VALUE key flags bytes
 * [cas]\r\n<data>\r\n" to out. touch: set the exptime to `exptime` (server
 * time) first, counted as memcached counts gat: a touch (cmd_touch, touch_hits
 * or touch_misses), not a get. 1 hit, 0 miss, -1 out of memory for the reply.
 */
int kv_get(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int with_cas,
	   int touch, uint32_t exptime, struct kv_buf *out);
/*
 * kv_get, except that a value of hold_min bytes or more with its "\r\n" is not
 * copied: *held gets the item, with a reference for the caller to release
 * (kv_item_release) once it has sent kv_item_value(it), nbytes + 2 bytes, after
 * the header; NULL when the value was copied or not found. The item's value does
 * not change while it is held (an incr then makes a new item).
 */
int kv_get_hold(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int with_cas,
		int touch, uint32_t exptime, struct kv_buf *out, size_t hold_min,
		struct kv_item **held);
/* kv_get, saying also what it found. */
struct kv_get_info {
	enum kv_get_status status;
	unsigned cls;	 /* 0 when not found */
	uint32_t nbytes; /* 0 when not found */
};
int kv_get_info(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int with_cas,
		int touch, uint32_t exptime, struct kv_buf *out, struct kv_get_info *info);
/*
 * kv_get_info appending the value alone, without "\r\n", to value (NULL: not
 * even that), for the binary protocol; *flags and *cas (the cas a client is
 * shown) are set when found, 0 otherwise. They are not in kv_get_info's info
 * so that the text get does not copy them.
 */
int kv_get_value(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int touch,
		 uint32_t exptime, struct kv_buf *value, struct kv_get_info *info, uint32_t *flags,
		 uint64_t *cas);

enum kv_result kv_delete(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey);
/* The value a set that could not be stored leaves behind goes, as memcached's (counted as a get
   that found it dead, if it was, and not as a delete). */
void kv_drop(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey);
enum kv_result kv_touch(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			uint32_t exptime);
/*
 * incr/decr: NOT_FOUND, NON_NUMERIC, NO_MEMORY, or OK with *value the new
 * number (incr wraps at 2^64, decr stops at 0). cas_out may be NULL.
 */
enum kv_result kv_arith(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int incr,
			uint64_t delta, uint64_t *value, uint64_t *cas_out);

/* ma: kv_arith with a cas to compare (0: none, EXISTS on a mismatch), a new exptime, the item's
 * exptime out. */
struct kv_arith_req {
	int incr;
	uint64_t delta;
	uint64_t compare_cas;
	int set_ttl;
	uint32_t ttl;
};
struct kv_arith_res {
	uint64_t value, cas;
	uint32_t exptime;
};
enum kv_result kv_arith_ex(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			   const struct kv_arith_req *rq, struct kv_arith_res *res);

/* flush_all: items stored before now (delay 0) or before now+delay become invalid. */
void kv_flush(kv_store *st, struct kv_counts *cnt, int64_t delay);

/*
 * Meta access to one item. What the hash section found and did; the value
 * (when want_value) is appended to `value`.
 */
struct kv_meta_req {
	const char *key;
	size_t nkey;
	int want_value;
	int no_bump; /* u */
	int set_ttl; /* T: new exptime (server time) in ttl */
	uint32_t ttl;
	int vivify; /* N: on a miss, create an empty item with exptime vivify_ttl */
	int b64key; /* b: the key was given in base64 (a vivified item remembers it) */
	uint32_t vivify_ttl;
	int recache; /* R: win if ttl remaining < recache_below */
	uint32_t recache_below;
	int peek; /* me: no side effect at all (no fetch mark, no bump, no stats) */
};
struct kv_meta_view {
	int found;
	uint32_t flags, nbytes, exptime, atime;
	uint32_t exptime_before; /* exptime before this access's T changed it */
	uint64_t cas;
	int fetched;		     /* had been fetched before this access */
	int b64key;		     /* stored with a base64 key */
	int win, stale, already_won; /* W, X, Z */
	uint8_t cls;		     /* the slab class, numbered as memcached numbers it */
};
/* 0, or -1 out of memory. */
int kv_meta_get(kv_store *st, struct kv_counts *cnt, const struct kv_meta_req *rq,
		struct kv_meta_view *v, struct kv_buf *value);
/* md: delete, or with invalidate mark stale (stale_ttl: new exptime, UINT32_MAX keeps it); cas 0 =
 * any. */
enum kv_result kv_meta_delete(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			      uint64_t cas, int invalidate, uint32_t stale_ttl);

/* Text of "stats", "stats settings", "stats items", "stats slabs" (lines with "\r\n", then END). */
/* The store's figures for "stats" (the server formats them with its own). */
struct kv_store_figures {
	struct kv_counts c;
	size_t limit;
	unsigned hashpower;
	size_t hash_bytes;
	int hash_expanding;	    /* the table is doubling */
	int moving;		    /* a slab page move is under way */
	uint64_t moves, pool_pages; /* pages moved so far; whole pages in the pool */
	uint64_t lrutail_reflocked, evicted_active, moves_to_cold, moves_to_warm, moves_within_lru;
	int maintainer;	  /* the LRU maintainer runs */
	uint64_t juggles; /* lru_maintainer_juggles */
};
void kv_store_figures(kv_store *st, struct kv_store_figures *f);
int kv_stats_items(kv_store *st, struct kv_buf *out);
int kv_stats_slabs(kv_store *st, struct kv_buf *out);
void kv_stats_reset(kv_store *st);
/* Add a worker's counts into the store's and zero them. */
void kv_counts_flush(kv_store *st, struct kv_counts *cnt);
/* The store's counters (after every worker flushed). */
void kv_counts_read(kv_store *st, struct kv_counts *out);
/*
 * "stats sync": section_stats on|off, then for each section its spec and,
 * when timing is on, runs, time_ns (callers' time in the section, waiting
 * included), avg_ns and max_ns, as "STAT <section>:<field> <value>". 0, or -1
 * out of memory.
 */
int kv_stats_sync(kv_store *st, struct kv_buf *out);

/*
 * The LRU maintainer thread (maintainer.c, memcached's): start (-1 if it runs or cannot
 * start), stop (once it has exited), whether it runs, and how many times it has woken
 * (lru_maintainer_juggles). The LRU's settings: a copy, and new ones (any thread).
 */
int kv_maintainer_start(kv_store *st);
void kv_maintainer_stop(kv_store *st);
int kv_maintainer_running(const kv_store *st);
uint64_t kv_maintainer_juggles(const kv_store *st);
void kv_store_lru_get(const kv_store *st, struct kv_lru_tune *out);
void kv_store_lru_set(kv_store *st, const struct kv_lru_tune *t);

/* Remove expired (and flushed) items from every stripe now; returns how many. */
uint64_t kv_crawl(kv_store *st, struct kv_counts *cnt);
/* The same over `count` stripes from `first` (modulo the stripe count): a slice of a sweep. */
uint64_t kv_crawl_part(kv_store *st, struct kv_counts *cnt, unsigned first, unsigned count);
unsigned kv_store_stripes(const kv_store *st);

/*
 * The crawler thread (crawler.c): enable starts it (-1 if it is running,
 * memcached's "failed to start"), disable asks it to stop; crawl asks it to
 * crawl the classes whose bits are set (0 started, 1 busy with another,
 * -1 not running); set changes lru_crawler sleep and tocrawl (a negative
 * value leaves one alone).
 */
int kv_crawler_enable(kv_store *st);
void kv_crawler_disable(kv_store *st);
int kv_crawler_enabled(const kv_store *st);
int kv_crawler_busy(const kv_store *st);
int kv_crawler_crawl(kv_store *st, uint64_t classes);
void kv_crawler_set(kv_store *st, int64_t sleep_us, int64_t tocrawl);
void kv_crawler_get(const kv_store *st, uint32_t *sleep_us, uint32_t *tocrawl);

/* stats detail (stats_prefix.c, stats_prefix.h): count one key's get (hit or not), set or delete.
 */
enum kv_prefix_op { KV_PREFIX_GET, KV_PREFIX_SET, KV_PREFIX_DEL };
void kv_detail_count(kv_store *st, const char *key, size_t nkey, enum kv_prefix_op op, int hit);
int kv_detail_dump(kv_store *st, struct kv_buf *out);
void kv_detail_reset(kv_store *st);
void kv_detail_set(kv_store *st, int on);
int kv_detail_on(const kv_store *st);
char kv_detail_delimiter(const kv_store *st);

/* stats sizes (stats_sizes.h): 0, or -1 when cas is off (-C) or out of memory. */
int kv_sizes_set(kv_store *st, int on);
int kv_sizes_on(const kv_store *st);
int kv_sizes_text(kv_store *st, struct kv_buf *out);

/*
 * Dumps. cachedump: "ITEM <key> [<bytes> b; <exptime> s]" lines of class
 * cls, most recently used first, at most limit of them (0: all, up to 2 MB
 * of text), then END. metadump: memcached's metadump line of each live item
 * of the classes whose bits are set in one stripe of the hash table. 0, or
 * -1 out of memory.
 */
int kv_cachedump(kv_store *st, unsigned cls, unsigned limit, struct kv_buf *out);
int kv_metadump_stripe(kv_store *st, unsigned stripe, uint64_t classes, struct kv_buf *out);
unsigned kv_store_classes(const kv_store *st);

/*
 * Moving slab pages between classes (automove.c; memcached's slab_reassign
 * and slab_automove). kv_slabs_reassign starts moving one page of class src
 * to class dst (0: the pool of whole pages any class takes first) and empties
 * it as far as it can (counted in cnt);
 * kv_automove_tick, called KV_AUTOMOVE_HZ times a second, empties the page being moved
 * (its items are copied to free chunks of their class, or evicted) and,
 * unless automove is 0, chooses the next move: 1 moves a page from the
 * class whose least recently used item is oldest to a class that evicts
 * items much younger (memcached's slab_automove=1), 2 to any class that
 * evicted since the last call.
 */
enum kv_move_result {
	KV_MOVE_OK,
	KV_MOVE_BUSY,	  /* a move is under way */
	KV_MOVE_BADCLASS, /* no such class */
	KV_MOVE_NOSPARE,  /* the source has fewer than 2 pages */
	KV_MOVE_SAME,	  /* source and destination are the same */
};
/* src -1: any class with a page to spare, as memcached's. */
enum kv_move_result kv_slabs_reassign(kv_store *st, struct kv_counts *cnt, int src, int dst);
#define KV_AUTOMOVE_HZ 10 /* kv_automove_tick's calls a second */
void kv_automove_tick(kv_store *st, struct kv_counts *cnt);
void kv_automove_set(kv_store *st, int mode); /* 0, 1 or 2 */
int kv_automove_get(const kv_store *st);
void kv_automove_set_ratio(kv_store *st, double ratio);
double kv_automove_ratio(const kv_store *st);
/* memcached's slab_chunk_max as this store uses it. */
size_t kv_store_chunk_max(const kv_store *st);
/*
 * The main thread, ten times a second: doubles the hash table, a few stripes at a time, once
 * it holds more than 1.5 items per bucket (memcached's assoc expansion).
 */
void kv_hash_tick(kv_store *st);
/* cache_memlimit: the -m limit from now on (new pages only; pooled pages above it are freed).
   -1, and no change, with a memory file (-e), whose size is fixed. */
int kv_store_set_limit(kv_store *st, size_t bytes);

#endif
