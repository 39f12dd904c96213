/*
 * locus-kv's ASCII authentication (auth.h): the -Y file, and what an
 * unauthenticated connection may do, with memcached 1.6.18's replies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/atomic.h"
#include "kv/server/auth.h"
#include "kv/server/server.h"

#define ENTRIES_MAX   8	    /* memcached keeps the first 8 entries */
#define LINE_ROOM     256   /* and reads a line into at most 255 bytes */
#define AUTH_LINE_MAX 2048  /* an unauthenticated client this far without a newline is closed */
#define AUTH_DATA_MAX 16384 /* the "set"'s data and its \r\n must fit memcached's read buffer */

struct entry {
	const char *user, *pass;
	size_t ulen, plen;
};

static struct entry entries[ENTRIES_MAX];
static int nentries;
static char *lines; /* the lines as read; the entries point into it */

/* auth_cmds and auth_errors (atomic): kept here rather than in the workers' counts, whose
   every flush would carry them when there is no -Y. */
static uint64_t counts[2];

/*
 * One line of the file into dst, as memcached reads it (fgets into what is
 * left of a buffer the size of the file): at most room - 1 bytes, up to and
 * including a newline, then a NUL; room 1 gives an empty line. The number
 * of bytes stored, or -1 at the end of the file.
 */
static long read_line(const char *file, size_t len, size_t *pos, char *dst, size_t room)
{
	if (room == 0)
		return -1;
	size_t n = 0;
	if (room > 1) {
		if (*pos >= len)
			return -1;
		while (n < room - 1 && *pos < len) {
			char ch = file[(*pos)++];
			dst[n++] = ch;
			if (ch == '\n')
				break;
		}
	}
	dst[n] = '\0';
	return (long)n;
}

/*
 * The entries of a file's text, as memcached finds them: a line's user ends
 * at its first ':' (a line without one before its end is malformed), its
 * password at the first '\n', '\r' or NUL after it. Memcached stores each
 * line over the end of the previous password and stops at a password that
 * runs to the end of what it read; its quirks (the last byte of a file
 * without a final newline is lost, a one-line file ending in \r\n is
 * malformed) follow from that, and are kept so that the same file lets the
 * same users in. -1 if malformed.
 */
static int parse(const char *file, size_t len, size_t size)
{
	size_t at = 0, pos = 0;
	while (nentries < ENTRIES_MAX) {
		size_t room = size - at < LINE_ROOM ? size - at : LINE_ROOM;
		char *line = lines + at;
		if (read_line(file, len, &pos, line, room) < 0)
			break;
		size_t colon = strcspn(line, ":");
		if (!line[colon])
			return -1;
		size_t end = colon + 1 + strcspn(line + colon + 1, "\r\n");
		entries[nentries++] =
			(struct entry){line, line + colon + 1, colon, end - colon - 1};
		if (!line[end])
			break;
		at += end;
	}
	return 0;
}

int kv_auth_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	struct stat st;
	if (!f || fstat(fileno(f), &st) != 0) {
		int e = errno;
		snprintf(err, errlen, "Could not open authfile [%s] for reading, error %s: %s",
			 path, strerror(e), strerror(e));
		if (f)
			fclose(f);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	char *file = malloc(size + 1);
	lines = calloc(1, size + 1);
	if (!file || !lines) {
		snprintf(err, errlen, "out of memory reading authfile [%s]", path);
		fclose(f);
		free(file);
		return -1;
	}
	size_t len = fread(file, 1, size, f); /* a directory reads as empty, as memcached's */
	fclose(f);
	int rc = parse(file, len, size);
	free(file);
	if (rc != 0)
		snprintf(err, errlen,
			 "Authfile [%s] has a malformed entry. Should be 'user:password'", path);
	return rc;
}

uint64_t kv_auth_count(int failed)
{
	return ld_relaxed(&counts[failed != 0]);
}

void kv_auth_note(int failed)
{
	faa_relaxed(&counts[0], 1);
	if (failed)
		faa_relaxed(&counts[1], 1);
}

void kv_auth_count_reset(void)
{
	st_relaxed(&counts[0], 0);
	st_relaxed(&counts[1], 0);
}

void kv_auth_free(void)
{
	free(lines);
	lines = NULL;
	nentries = 0;
}

static int known(struct kv_span user, struct kv_span pass)
{
	for (int i = 0; i < nentries; i++) {
		const struct entry *e = &entries[i];
		if (e->ulen == user.len && e->plen == pass.len &&
		    memcmp(e->user, user.ptr, user.len) == 0 &&
		    memcmp(e->pass, pass.ptr, pass.len) == 0)
			return 1;
	}
	return 0;
}

/*
 * memcached answers an unauthenticated connection in one response that is
 * reused until it has been sent: a reply replaces the one before it that is
 * still waiting, so a pipeline of lines gets the last one's answer. Nothing
 * else is in the output before authentication, so the waiting reply is its
 * tail, from c->auth_reply.
 */
static void auth_reply(struct conn *c, const char *s)
{
	if (c->auth_reply >= c->out_pos && c->auth_reply < c->out.len)
		c->out.len = c->auth_reply;
	c->auth_reply = c->out.len;
	kv_reply(c, s);
}

/* memcached's words are C strings: a NUL ends them early. */
static size_t c_len(const char *p, size_t n)
{
	const char *nul = memchr(p, '\0', n);
	return nul ? (size_t)(nul - p) : n;
}

/* The command line: "set <key> <flags> <exptime> <bytes>", anything after ignored. */
static int auth_line(struct conn *c)
{
	const char *start = c->in.p + c->in_pos;
	size_t avail = c->in.len - c->in_pos;
	const char *nl = memchr(start, '\n', avail);
	if (!nl) {
		if (avail > AUTH_LINE_MAX)
			c->close_now = 1;
		return 0;
	}
	size_t len = (size_t)(nl - start) + 1;
	c->in_pos += len;
	c->w->cnt.bytes_read += len;
	struct kv_span t[5];
	uint32_t bytes;
	if (kv_split_words(start, c_len(start, len - 1), t, 5) < 5 || t[0].len != 3 ||
	    memcmp(t[0].ptr, "set", 3) != 0 || !kv_num_u32(t[4].ptr, t[4].len, &bytes)) {
		auth_reply(c, "CLIENT_ERROR unauthenticated");
		return 1;
	}
	c->auth_need = (uint64_t)bytes + 2;
	return 1;
}

int kv_auth_data_ready(const struct conn *c)
{
	size_t avail = c->in.len - c->in_pos;
	return avail >= c->auth_need || avail >= AUTH_DATA_MAX;
}

int kv_auth_step(struct conn *c)
{
	if (!c->auth_need)
		return auth_line(c);
	size_t need = c->auth_need, avail = c->in.len - c->in_pos;
	if (need > AUTH_DATA_MAX) {
		/* memcached waits for the data in its read buffer, and closes once that is full */
		if (avail >= AUTH_DATA_MAX)
			c->close_now = 1;
		return 0;
	}
	if (avail < need)
		return 0;
	const char *data = c->in.p + c->in_pos;
	c->in_pos += need;
	c->w->cnt.bytes_read += need;
	c->auth_need = 0;
	struct kv_span t[2];
	if (data[need - 2] != '\r' || data[need - 1] != '\n') {
		auth_reply(c, "CLIENT_ERROR bad command line termination");
	} else if (kv_split_words(data, c_len(data, need - 2), t, 2) < 2) {
		auth_reply(c, "CLIENT_ERROR bad authentication token format");
	} else {
		int ok = known(t[0], t[1]);
		kv_auth_note(!ok);
		if (ok) {
			auth_reply(c, "STORED");
			c->needs_auth = 0;
		} else {
			auth_reply(c, "CLIENT_ERROR authentication failure");
		}
	}
	return 1;
}
