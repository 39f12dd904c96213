/* Run-time configuration from the environment (documented in locus/dsm.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "internal.h"

/* Default address of the shared region: inside the application ranges of both
   ThreadSanitizer (0x7e8000000000..) and AddressSanitizer (high memory), and
   far below where the kernel places libraries and stacks. */
#define DSM_DEFAULT_ADDR 0x7e9000000000ull
/* A region too large to fit between the default address and where the kernel
   places libraries and stacks (no lower than 0x7eff... with address-space randomization) ends below
   it instead. */
#define DSM_DEFAULT_TOP 0x7ef000000000ull

int dsm_env_u64(const char *name, uint64_t *out, int suffixes)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	size_t len = strlen(s);
	unsigned shift = 0;
	if (suffixes) {
		switch (s[len - 1]) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		}
	}
	char *digits = strndup(s, shift ? len - 1 : len);
	uint64_t v;
	int bad = !digits || parse_num_or_hex_u64(digits, 0, UINT64_MAX >> shift, &v) != 0;
	free(digits);
	if (bad) {
		fprintf(stderr, "locus-dsm: %s=%s is not %s\n", name, s,
			suffixes ? "a size in bytes with an optional k, m or g suffix (e.g. 256m)"
				 : "a whole number that fits in 64 bits (no sign)");
		return -1;
	}
	*out = v << shift;
	return 0;
}

/*
 * The region [addr, addr + size) must be whole pages, and must lie in user
 * space well away from address 0: near it, a program's NULL-pointer
 * accesses (p->field with p NULL) would land in shared memory and be served
 * as DSM accesses instead of crashing.
 */
#define ADDR_MIN (1ull << 32)
#define ADDR_END (1ull << 47) /* x86-64 user space, 4-level page tables */

static uint64_t default_addr(uint64_t size)
{
	if (size <= DSM_DEFAULT_TOP - DSM_DEFAULT_ADDR)
		return DSM_DEFAULT_ADDR;
	return (DSM_DEFAULT_TOP - size) & ~((1ull << 30) - 1);
}

static int place_region(uint64_t size, uint64_t addr)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	if (size % page) {
		fprintf(stderr,
			"locus-dsm: LOCUS_DSM_SIZE=%s: not a whole number of %llu-byte pages "
			"(e.g. %llu or %llu)\n",
			getenv("LOCUS_DSM_SIZE"), (unsigned long long)page,
			(unsigned long long)(size / page * page),
			(unsigned long long)((size / page + 1) * page));
		return -1;
	}
	if (addr % page || addr < ADDR_MIN || addr > ADDR_END || size > ADDR_END - addr) {
		fprintf(stderr,
			"locus-dsm: LOCUS_DSM_ADDR=%s: the region (%llu bytes) must start on a "
			"page boundary at or above 0x%llx (farther from address 0, where "
			"NULL-pointer accesses land) and end by 0x%llx, the top of user space "
			"(the default is 0x%llx)\n",
			getenv("LOCUS_DSM_ADDR") ? getenv("LOCUS_DSM_ADDR") : "(default)",
			(unsigned long long)size, ADDR_MIN, ADDR_END,
			(unsigned long long)default_addr(size));
		return -1;
	}
	return 0;
}

/* A protocol's variables (PREFIX...): a misspelt one is refused rather than
   ignored. known is NULL-terminated. */
int dsm_env_known(const char *prefix, const char *const *known)
{
	extern char **environ;
	size_t plen = strlen(prefix);
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, prefix, plen) != 0)
			continue;
		size_t n = strcspn(*e, "=");
		int ok = 0;
		for (const char *const *k = known; *k; k++)
			ok |= strlen(*k) == n && !strncmp(*e, *k, n);
		if (ok)
			continue;
		fprintf(stderr, "locus-dsm: %.*s: unknown variable; known:", (int)n, *e);
		for (const char *const *k = known; *k; k++)
			fprintf(stderr, "%s %s", k == known ? "" : ",", *k);
		fputc('\n', stderr);
		return -1;
	}
	return 0;
}

/* One of the names an environment variable may hold, and what it means. */
struct choice {
	const char *name;
	int value;
};

/*
 * The value of the choice variable name holds (NULL-terminated choices), or
 * unset: unset or empty; -1 with a message saying what was expected.
 */
static int env_choice(const char *name, const struct choice *choices, int unset,
		      const char *expected)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return unset;
	for (const struct choice *ch = choices; ch->name; ch++)
		if (!strcmp(v, ch->name))
			return ch->value;
	fprintf(stderr, "locus-dsm: %s=%s: expected %s\n", name, v, expected);
	return -1;
}

/*
 * LOCUS_DSM_NETWORK: named transport delays, each a per-message delay and a
 * per-byte cost, the rate of each node's outgoing link (link.h; the reasoning
 * and sources are in docs/dsm.md, "Transport delay"). LOCUS_DSM_DELAY_US and
 * LOCUS_DSM_DELAY_NS_PER_BYTE, when set, override the preset's values.
 */
static const struct network {
	const char *name;
	uint64_t delay_us, ns_per_byte;
} networks[] = {
	{"none", 0, 0},	   /* nothing added: the machine's own speed */
	{"rdma", 2, 0},	   /* InfiniBand-class: ~2 us a message; 4 KiB in ~0.2 us */
	{"tcp", 20, 1},	   /* kernel TCP over 10 Gb/s Ethernet: ~20 us, ~1 ns/byte */
	{"seed", 500, 52}, /* seed 001's 155 Mb/s ATM: ~0.5 ms a miss, 52 ns/byte */
};

/* The preset LOCUS_DSM_NETWORK names (none if unset); NULL after a message. */
static const struct network *network_preset(void)
{
	const char *v = getenv("LOCUS_DSM_NETWORK");
	if (!v || !*v)
		return &networks[0];
	for (size_t i = 0; i < sizeof(networks) / sizeof(networks[0]); i++)
		if (strcmp(v, networks[i].name) == 0)
			return &networks[i];
	fprintf(stderr,
		"locus-dsm: LOCUS_DSM_NETWORK=%s: expected none, rdma (2 us a message), tcp "
		"(20 us and 1 ns a byte) or seed (500 us and 52 ns a byte)\n",
		v);
	return NULL;
}

int dsm_config_read(struct dsm_config *c)
{
	memset(c, 0, sizeof(*c));
	const char *p = getenv("LOCUS_DSM_PROTOCOL");
	snprintf(c->protocol, sizeof(c->protocol), "%s", p && *p ? p : "sc");
	const struct network *net = network_preset();
	if (!net)
		return -1;
	uint64_t size = 256ull << 30, addr = 0, delay_us = net->delay_us,
		 per_byte = net->ns_per_byte;
	uint64_t delta_us = 50, timeout_s = 10, handoff = 8, run = 32, poll_us = DSM_POLL_US,
		 keep = 1024, spin_us = 30;
	if (dsm_env_u64("LOCUS_DSM_SIZE", &size, 1) || dsm_env_u64("LOCUS_DSM_ADDR", &addr, 0) ||
	    dsm_env_u64("LOCUS_DSM_DELAY_US", &delay_us, 0) ||
	    dsm_env_u64("LOCUS_DSM_DELAY_NS_PER_BYTE", &per_byte, 0) ||
	    dsm_env_u64("LOCUS_DSM_DELTA_US", &delta_us, 0) ||
	    dsm_env_u64("LOCUS_DSM_PEER_TIMEOUT_S", &timeout_s, 0) ||
	    dsm_env_u64("LOCUS_DSM_LOCK_HANDOFF", &handoff, 0) ||
	    dsm_env_u64("LOCUS_DSM_LOCK_KEEP", &keep, 0) ||
	    dsm_env_u64("LOCUS_DSM_SPIN_US", &spin_us, 0) ||
	    dsm_env_u64("LOCUS_DSM_RUN", &run, 0) || dsm_env_u64("LOCUS_DSM_POLL_US", &poll_us, 0))
		return -1;
	/* Counts with a range of their own. */
	const struct {
		const char *name;
		uint64_t v, min, max;
		const char *what;
	} counts[] = {
		{"LOCUS_DSM_RUN", run, 1, 1024,
		 "pages fetched per miss of a walk must be from 1 (only the page missed) to 1024"},
		{"LOCUS_DSM_LOCK_HANDOFF", handoff, 0, 1000000,
		 "at most 1000000 hand-offs in a row (0 sends every release back to the lock's "
		 "manager)"},
		{"LOCUS_DSM_LOCK_KEEP", keep, 1, 1000000,
		 "a node keeps from 1 to 1000000 released locks (LOCUS_DSM_LOCK_CACHE=0 keeps "
		 "none)"},
	};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		if (counts[i].v < counts[i].min || counts[i].v > counts[i].max) {
			fprintf(stderr, "locus-dsm: %s=%s: %s\n", counts[i].name,
				getenv(counts[i].name), counts[i].what);
			return -1;
		}
	c->run = (uint32_t)run;
	if (dsm_proto_config_all() != 0)
		return -1;
	/* Microseconds and seconds become nanoseconds: keep them far from wrapping. */
	const struct {
		const char *name;
		uint64_t *v, max;
		const char *unit;
	} lim[] = {
		{"LOCUS_DSM_DELAY_US", &delay_us, 3600000000ull, "3600000000 (an hour)"},
		{"LOCUS_DSM_DELAY_NS_PER_BYTE", &per_byte, NS_PER_S, "1000000000 (a second)"},
		{"LOCUS_DSM_DELTA_US", &delta_us, 3600000000ull, "3600000000 (an hour)"},
		{"LOCUS_DSM_PEER_TIMEOUT_S", &timeout_s, 86400ull, "86400 (a day)"},
		{"LOCUS_DSM_POLL_US", &poll_us, 1000000ull, "1000000 (a second)"},
		{"LOCUS_DSM_SPIN_US", &spin_us, 1000000ull, "1000000 (a second)"},
	};
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++)
		if (*lim[i].v > lim[i].max) {
			fprintf(stderr, "locus-dsm: %s=%s: at most %s\n", lim[i].name,
				getenv(lim[i].name), lim[i].unit);
			return -1;
		}
	/* A region needs a page, and twice its size in address space (a view and an alias). */
	if (size < 4096 || size > (1ull << 44)) {
		fprintf(stderr,
			"locus-dsm: LOCUS_DSM_SIZE=%s: the shared region must be from 4k to 16384g "
			"bytes (e.g. LOCUS_DSM_SIZE=256m)\n",
			getenv("LOCUS_DSM_SIZE"));
		return -1;
	}
	const char *addr_env = getenv("LOCUS_DSM_ADDR");
	if (!addr_env || !*addr_env)
		addr = default_addr(size);
	if (place_region(size, addr) != 0)
		return -1;
	uint64_t timeout_ns = (timeout_s ? timeout_s : 1) * NS_PER_S;
	uint64_t page_delay_ns = delay_us * 1000 + per_byte * 4096;
	if (page_delay_ns >= timeout_ns / 2) {
		char bytes[80] = "";
		if (per_byte)
			snprintf(bytes, sizeof(bytes), " with LOCUS_DSM_DELAY_NS_PER_BYTE=%llu",
				 (unsigned long long)per_byte);
		fprintf(stderr,
			"locus-dsm: LOCUS_DSM_DELAY_US=%llu%s%s%s%s: a page would take %.3f s to "
			"arrive, and a node silent for LOCUS_DSM_PEER_TIMEOUT_S=%llu s is declared "
			"dead: keep the delay under half the timeout (raise "
			"LOCUS_DSM_PEER_TIMEOUT_S "
			"above %.0f s, or lower the delay)\n",
			(unsigned long long)delay_us, bytes,
			net != &networks[0] ? " (from LOCUS_DSM_NETWORK=" : "",
			net != &networks[0] ? net->name : "", net != &networks[0] ? ")" : "",
			ns_to_s(page_delay_ns), (unsigned long long)(timeout_ns / NS_PER_S),
			ns_to_s(page_delay_ns) * 2 + 1);
		return -1;
	}
	c->size = size;
	c->addr = addr;
	c->delay_ns = delay_us * 1000;
	c->delay_ns_per_byte = per_byte;
	c->delta_ns = delta_us * 1000;
	c->peer_timeout_ns = (timeout_s ? timeout_s : 1) * NS_PER_S;
	c->lock_handoff = (uint32_t)handoff;
	c->lock_keep = (uint32_t)keep;
	c->poll_ns = poll_us * 1000;
	c->spin_ns = spin_us * 1000;
	static const struct choice switches[] = {{"all", 0}, {"sync", 1}, {NULL, 0}};
	static const struct choice stats[] = {{"1", 1},	   {"table", 1}, {"0", 0},
					      {"none", 0}, {"json", 2},	 {NULL, 0}};
	static const struct choice onoff[] = {{"1", 1}, {"0", 0}, {NULL, 0}};
	c->lock_cache = env_choice("LOCUS_DSM_LOCK_CACHE", onoff, 1,
				   "1 (a released lock stays on its node until another asks) or 0 "
				   "(every release goes back to the lock's manager)");
	if (c->lock_cache < 0)
		return -1;
	c->take_answers = env_choice("LOCUS_DSM_TAKE_ANSWERS", onoff, 1,
				     "1 (a thread that sent its request takes the answer out of "
				     "MPI) or 0 (the communication thread takes every message)");
	if (c->take_answers < 0)
		return -1;
	c->switch_sync = env_choice("LOCUS_DSM_SWITCH", switches, 0,
				    "all (another thread runs during any stall) or sync (only "
				    "during lock, barrier and team waits)");
	if (c->switch_sync < 0)
		return -1;
	c->stats = env_choice("LOCUS_DSM_STATS", stats, 1, "0 (or none), 1 (or table) or json");
	if (c->stats < 0)
		return -1;
	static const struct choice one[] = {{"plain", 0}, {"protocol", 1}, {NULL, 0}};
	c->one_node_protocol = env_choice("LOCUS_DSM_ONE_NODE", one, 0,
					  "plain (one node's region is plain memory) or protocol "
					  "(the protocol's machinery on one node too)");
	if (c->one_node_protocol < 0)
		return -1;
	/* 0 and 1 stand for the two (env_choice's -1 is a refusal). */
	static const struct choice homes[] = {{"blocks", 0}, {"spread", 1}, {NULL, 0}};
	int spread = env_choice("LOCUS_DSM_HOMES", homes, 0,
				"blocks (locus_dsm_alloc homes a block's pages in one run per "
				"node, node 0's first) or spread (round robin, page by page)");
	if (spread < 0)
		return -1;
	c->homes = spread ? LOCUS_DSM_HOME_SPREAD : LOCUS_DSM_HOME_BLOCKS;
	c->idle_poll = env_choice("LOCUS_DSM_IDLE_POLL", onoff, 1,
				  "1 (the machine's idle CPUs are asked to poll instead of halting "
				  "while a run of several nodes lasts, where /dev/cpu_dma_latency "
				  "may be opened) or 0 (the kernel chooses)");
	return c->idle_poll < 0 ? -1 : 0;
}
