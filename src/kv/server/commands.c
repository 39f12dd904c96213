/*
 * locus-kv: the text protocol's commands (memcached's proto_text.c), run on a
 * connection's behalf by its worker. Each command is one or a few store
 * operations (kv/store/store.h); the meta commands are meta_exec.c's, stats and the
 * administrative ones admin.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic.h"
#include "kv/server/meta_exec.h"
#include "kv/server/server.h"

/* ---------- commands ---------- */

const char *kv_result_text(enum kv_result r)
{
	switch (r) {
	case KV_STORED:
		return "STORED";
	case KV_NOT_STORED:
		return "NOT_STORED";
	case KV_EXISTS:
		return "EXISTS";
	case KV_NOT_FOUND:
		return "NOT_FOUND";
	case KV_DELETED:
		return "DELETED";
	case KV_TOUCHED:
		return "TOUCHED";
	case KV_NON_NUMERIC:
		return "CLIENT_ERROR cannot increment or decrement non-numeric value";
	case KV_TOO_LARGE:
		return "SERVER_ERROR object too large for cache";
	case KV_NO_MEMORY:
		return "SERVER_ERROR out of memory storing object";
	case KV_OK:
		return "OK";
	}
	return "SERVER_ERROR internal";
}

/* watch mutations' item_store line of a store on c (watch.c says the words). */
void kv_watch_stored(struct conn *c, const char *key, size_t nkey, enum kv_result r,
		     enum kv_store_mode mode, unsigned cls, uint32_t exptime, uint32_t nbytes)
{
	kv_watch_store_result(key, nkey, r, mode, exptime, kv_now(kv_srv.st), cls, c->fd, nbytes);
}

static int get_batch(struct conn *c, const struct kv_cmd *cmd)
{
	int with_cas = cmd->cmd == KV_CMD_GETS || cmd->cmd == KV_CMD_GATS;
	int touch = cmd->cmd == KV_CMD_GAT || cmd->cmd == KV_CMD_GATS;
	uint32_t exptime = touch ? kv_exptime(kv_srv.st, cmd->exptime) : 0;
	for (unsigned i = 0; i < cmd->nkeys; i++) {
		if (c->gets_keys == 0) {
			c->get_first = c->rtail; /* the get's own record */
		} else if (c->udp) {
			kv_dgram_mark(c, 0); /* over UDP each key's reply is its own message */
		} else if (kv_resp_start(c) != 0) {
			kv_resp_get_oom(c); /* each key's reply is a response, as memcached's */
			return -1;
		}
		c->gets_keys++;
		const char *key = cmd->keys[i].ptr;
		size_t nkey = cmd->keys[i].len;
		/* watch fetchers' line comes from the store's fetch hook (kv_watch_fetch). */
		struct kv_item *held = NULL;
		int hit = c->udp ? kv_get(kv_srv.st, &c->w->cnt, key, nkey, with_cas, touch,
					  exptime, &c->out)
				 : kv_get_hold(kv_srv.st, &c->w->cnt, key, nkey, with_cas, touch,
					       exptime, &c->out, KV_HOLD_MIN, &held);
		if (held)
			kv_resp_hold(c, held); /* its value goes out from the item */
		if (hit < 0) {
			kv_reply(c, "SERVER_ERROR out of memory writing get response");
			return -1;
		}
		kv_detail_count(kv_srv.st, key, nkey, KV_PREFIX_GET, hit);
	}
	return 0;
}

/*
 * A get, gets, gat or gats line, a batch of keys at a time. When the output
 * reaches OUT_HIGH between batches the command pauses (the line stays in the
 * input buffer) and resumes once the client has read enough: so a get of many
 * large values holds at most OUT_HIGH plus one batch of replies, not all of
 * them, as memcached, which sends them from the items themselves.
 */
static void cmd_get(struct conn *c, const char *line, size_t len, struct kv_cmd *cmd)
{
	for (;;) {
		if (get_batch(c, cmd) != 0)
			return;
		if (!cmd->more)
			break;
		if (!c->udp && kv_out_pending(c) >= OUT_HIGH) {
			c->get_paused = 1;
			c->get_off = (size_t)(line - c->in.p);
			c->get_len = len;
			c->get = *cmd;
			return;
		}
		if (kv_parse_more(line, len, cmd) != 0) {
			kv_reply(c, cmd->error);
			return;
		}
	}
	kv_reply(c, "END");
}

void kv_get_resume(struct conn *c)
{
	const char *line = c->in.p + c->get_off;
	c->get_paused = 0;
	if (kv_parse_more(line, c->get_len, &c->get) != 0) {
		kv_reply(c, c->get.error);
		return;
	}
	cmd_get(c, line, c->get_len, &c->get);
}

static void start_swallow(struct conn *c, uint64_t bytes, const char *then)
{
	c->meta = 0;
	c->state = CONN_SWALLOW;
	c->need = bytes;
	c->got = 0;
	c->after_swallow = then;
}

static void cmd_store(struct conn *c, const struct kv_cmd *cmd)
{
	c->meta = 0;
	static const enum kv_store_mode modes[] = {
		[KV_CMD_SET] = KV_SET,	       [KV_CMD_ADD] = KV_ADD,
		[KV_CMD_REPLACE] = KV_REPLACE, [KV_CMD_APPEND] = KV_APPEND,
		[KV_CMD_PREPEND] = KV_PREPEND, [KV_CMD_CAS] = KV_CAS,
	};
	enum kv_result why;
	uint32_t exptime = kv_exptime(kv_srv.st, cmd->exptime);
	kv_detail_count(kv_srv.st, cmd->keys[0].ptr, cmd->keys[0].len, KV_PREFIX_SET, 0);
	struct kv_item *it = kv_item_new(kv_srv.st, &c->w->cnt, cmd->keys[0].ptr, cmd->keys[0].len,
					 cmd->flags, exptime, cmd->bytes, &why);
	if (!it && kv_watch_wanted(KV_WATCH_MUTATIONS))
		kv_watch_stored(c, cmd->keys[0].ptr, cmd->keys[0].len, why, modes[cmd->cmd], 0,
				exptime, cmd->bytes);
	if (!it) {
		/* memcached drops the data, and a failed set also removes the old value. */
		if (cmd->cmd == KV_CMD_SET)
			kv_drop(kv_srv.st, &c->w->cnt, cmd->keys[0].ptr, cmd->keys[0].len);
		start_swallow(c, (uint64_t)cmd->bytes + 2, kv_result_text(why));
		c->noreply = cmd->noreply;
		return;
	}
	c->state = CONN_DATA;
	c->item = it;
	c->need = (uint64_t)cmd->bytes + 2;
	c->got = 0;
	c->mode = modes[cmd->cmd];
	c->cas = cmd->cas;
	c->noreply = cmd->noreply;
}

/* The data block of a storage command has arrived in c->item. */
void kv_data_done(struct conn *c)
{
	if (c->binary) {
		kv_bin_data_done(c);
		return;
	}
	struct kv_item *it = c->item;
	c->item = NULL;
	c->state = CONN_LINE;
	char v[2];
	kv_item_read(it, it->nbytes, v, 2);
	if (v[0] != '\r' || v[1] != '\n') {
		kv_item_release(kv_srv.st, it);
		if (c->meta) {
			kv_meta_set_clear(&c->ms);
			c->noreply = 0; /* meta errors are never quiet */
		}
		kv_reply(c, KV_ERR_DATA_CHUNK);
		c->noreply = 0;
		return;
	}
	if (c->meta) {
		kv_meta_store(kv_srv.st, &c->w->cnt, &c->ms, it, &c->out);
		return;
	}
	uint64_t cas;
	struct kv_store_info info;
	int watched = kv_watch_wanted(KV_WATCH_MUTATIONS);
	char key[KV_KEY_MAX];
	size_t nkey = it->nkey;
	if (watched)
		memcpy(key, kv_item_key(it), nkey); /* the store consumes it */
	enum kv_result r =
		kv_store_item_info(kv_srv.st, &c->w->cnt, it, c->mode, c->cas, &cas, &info);
	if (watched)
		kv_watch_stored(c, key, nkey, r, c->mode, info.cls, info.exptime, info.nbytes);
	kv_reply(c, kv_result_text(r));
	c->noreply = 0;
}

static void cmd_arith(struct conn *c, const struct kv_cmd *cmd)
{
	uint64_t v;
	enum kv_result r = kv_arith(kv_srv.st, &c->w->cnt, cmd->keys[0].ptr, cmd->keys[0].len,
				    cmd->cmd == KV_CMD_INCR, cmd->delta, &v, NULL);
	if (r == KV_OK)
		kv_replyf(c, "%" PRIu64, v);
	else
		kv_reply(c, kv_result_text(r));
}

/* Non-protocol commands for tests, with --debug-commands. 1 if line was one. */
static int debug_command(struct conn *c, const char *line, size_t len)
{
	static const char name[] = "debug_clock_advance ";
	if (len < sizeof(name) - 1 || memcmp(line, name, sizeof(name) - 1) != 0)
		return 0;
	if (!kv_srv.set.debug_commands)
		return 0;
	char num[32];
	size_t n = len - (sizeof(name) - 1);
	if (n == 0 || n >= sizeof(num)) {
		kv_reply(c, KV_ERR_FORMAT);
		return 1;
	}
	memcpy(num, line + sizeof(name) - 1, n);
	num[n] = 0;
	char *end;
	errno = 0;
	long long secs = strtoll(num, &end, 10);
	if (errno || *end || secs < 0 || secs > (1ll << 30)) {
		kv_reply(c, KV_ERR_FORMAT);
		return 1;
	}
	kv_clock_advance(kv_srv.st, secs);
	kv_reply(c, "OK");
	return 1;
}

void kv_execute(struct conn *c, const char *line, size_t len)
{
	struct worker *w = c->w;
	c->noreply = c->quiet = 0;
	c->gets_keys = 0;
	st_relaxed(&c->last_cmd, kv_now(kv_srv.st));
	c->ran_cmd = 1;
	if (kv_is_meta_line(line, len)) {
		w->cnt.cmd_meta++;
		struct kv_meta_outcome o;
		kv_meta_execute(kv_srv.st, &w->cnt, line, len, &c->out, &c->ms, &o);
		if (o.item) {
			c->state = CONN_DATA;
			c->item = o.item;
			c->need = o.data_bytes_to_read;
			c->got = 0;
			c->meta = 1;
		} else if (o.data_bytes_to_read) {
			start_swallow(c, o.data_bytes_to_read, NULL); /* the reply is out already */
		}
		return;
	}
	if (debug_command(c, line, len) || kv_admin_command(c, line, len))
		return;
	struct kv_cmd cmd;
	if (kv_parse(line, len, &cmd) != 0) {
		if (cmd.close) {
			c->close_now = 1;
			return;
		}
		c->noreply = c->quiet = cmd.noreply;
		kv_reply(c, cmd.error);
		c->noreply = 0;
		return;
	}
	c->noreply = c->quiet = cmd.noreply;
	switch (cmd.cmd) {
	case KV_CMD_GET:
	case KV_CMD_GETS:
	case KV_CMD_GAT:
	case KV_CMD_GATS:
		cmd_get(c, line, len, &cmd);
		break;
	case KV_CMD_SET:
	case KV_CMD_ADD:
	case KV_CMD_REPLACE:
	case KV_CMD_APPEND:
	case KV_CMD_PREPEND:
	case KV_CMD_CAS:
		cmd_store(c, &cmd);
		return; /* noreply stays with the data */
	case KV_CMD_DELETE:
		kv_detail_count(kv_srv.st, cmd.keys[0].ptr, cmd.keys[0].len, KV_PREFIX_DEL, 0);
		kv_reply(c, kv_result_text(kv_delete(kv_srv.st, &w->cnt, cmd.keys[0].ptr,
						     cmd.keys[0].len)));
		break;
	case KV_CMD_INCR:
	case KV_CMD_DECR:
		cmd_arith(c, &cmd);
		break;
	case KV_CMD_TOUCH:
		kv_reply(c, kv_result_text(kv_touch(kv_srv.st, &w->cnt, cmd.keys[0].ptr,
						    cmd.keys[0].len,
						    kv_exptime(kv_srv.st, cmd.exptime))));
		break;
	case KV_CMD_FLUSH_ALL:
		if (kv_srv.set.flush_disabled) {
			kv_reply(c, "CLIENT_ERROR flush_all not allowed");
			break;
		}
		kv_flush(kv_srv.st, &w->cnt, cmd.delay);
		kv_reply(c, "OK");
		break;
	case KV_CMD_SHUTDOWN:
		if (!kv_srv.set.shutdown_enabled) {
			kv_reply(c, "ERROR: shutdown not enabled");
		} else if (cmd.shutdown < 0) {
			kv_reply(c, "CLIENT_ERROR invalid shutdown mode");
		} else {
			/* As memcached: close this connection and stop as on SIGINT, or on
			   SIGUSR1 (graceful: a memory file's items are kept). */
			kv_logv(1, "locus-kv: shutdown command from connection %d", c->fd);
			c->close_now = 1;
			c->close_reason = KV_CLOSE_SHUTDOWN;
			kill(getpid(), cmd.shutdown == 1 ? SIGUSR1 : SIGINT);
		}
		break;
	case KV_CMD_VERSION:
		kv_reply(c, "VERSION " LOCUS_KV_VERSION_REPLY);
		break;
	case KV_CMD_VERBOSITY:
		st_relaxed(&kv_srv.set.verbose, cmd.level > 2 ? 2 : (int)cmd.level);
		kv_reply(c, "OK");
		break;
	case KV_CMD_QUIT:
		c->closing = 1;
		c->close_reason = KV_CLOSE_NORMAL;
		break;
	case KV_CMD_STATS:
		kv_cmd_stats(c, &cmd);
		break;
	case KV_CMD_UNKNOWN:
		kv_reply(c, "ERROR");
		break;
	}
	c->noreply = 0;
}
