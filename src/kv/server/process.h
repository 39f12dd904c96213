/*
 * locus-kv's process-wide setup, in the order main() calls it: open-file and
 * core limits, the user to run as (before binding, as memcached), then after
 * binding the daemon, the pid file and locked memory. Each follows memcached 1.6.18 (its messages
 * where a script may look for them); each exits with a message on what cannot go on.
 */
#ifndef LOCUS_KV_PROCESS_H
#define LOCUS_KV_PROCESS_H

/* Raise the soft open-file limit to fit `maxconns` connections (a warning if it cannot). */
void kv_raise_nofile(int maxconns);
/* -r: the core file limit to its maximum; exits if no core could be written. */
void kv_enable_coredumps(void);
/* -u: when running as root, become `user` (exits 67 if there is no such user). */
void kv_become_user(const char *user);
/* -d: fork, the parent exits 0; the child leaves the terminal's session, moves
   to / (unless keep_cwd: -r, so cores land where they would) and, unless
   keep_stdio (-v), points its standard streams at /dev/null. */
void kv_daemonize(int keep_cwd, int keep_stdio);
/* -P: write the pid (decimal, newline) through a temporary file and a rename;
   a warning if the old file names a running process. An exit before
   kv_pidfile_remove (a start that fails after it, kv_die) removes it too. */
void kv_pidfile_write(const char *path);
void kv_pidfile_remove(const char *path);
/* -k: lock all current and future pages (a warning if that fails). main()
   calls it once the threads run: the kernel refuses it (as it refuses
   memcached's) when what is mapped already passes RLIMIT_MEMLOCK, rather
   than granting it and failing every thread started afterwards. */
void kv_lock_memory(void);

#endif
