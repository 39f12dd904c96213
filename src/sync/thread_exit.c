#include <pthread.h>

#include "common/atomic.h"
#include "common/tls.h"
#include "sync/thread_exit.h"

/* Per slot, the one function every thread runs at exit (set once, same value each time). */
static void (*hooks[EXIT_SLOTS])(void);
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static LOCUS_TLS unsigned armed; /* slots this thread has armed */

static void run_exit_hooks(void *unused)
{
	(void)unused;
	unsigned mine = armed;
	/* Slots armed while these run (a callback that posts) set their bits again. */
	armed = 0;
	for (unsigned s = 0; s < EXIT_SLOTS; s++) {
		void (*fn)(void) = ld_acquire(&hooks[s]);
		if ((mine & (1u << s)) && fn)
			fn();
	}
}

static void make_key(void)
{
	pthread_key_create(&key, run_exit_hooks);
}

void sync_exit_arm(unsigned slot, void (*fn)(void))
{
	if (armed & (1u << slot))
		return;
	if (!ld_relaxed(&hooks[slot]))
		st_release(&hooks[slot], fn);
	pthread_once(&once, make_key);
	/* Any non-NULL value makes the destructor run; setting it again re-arms it. */
	pthread_setspecific(key, (void *)1);
	armed |= 1u << slot;
}
