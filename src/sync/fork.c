#include <pthread.h>

#include "locus/cs.h"
#include "sync/deleg.h"
#include "sync/fatal.h"
#include "sync/fork.h"
#include "sync/mpsc.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void prepare(void)
{
	locus_cs_drain();
	dl_fork_prepare();
	mpsc_fork_prepare();
}

static void parent(void)
{
	mpsc_fork_parent();
	dl_fork_parent();
}

static void child(void)
{
	mpsc_fork_child();
	dl_fork_child();
}

static void install(void)
{
	if (pthread_atfork(prepare, parent, child) != 0)
		sync_die("pthread_atfork failed: out of memory");
}

void sync_fork_register(void)
{
	pthread_once(&once, install);
}
