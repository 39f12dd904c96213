/*
 * locus-kv: memcached's UDP framing, as pure functions (no sockets, no
 * allocation).
 *
 * Every datagram, either way, starts with an 8-byte header of four big-endian
 * 16-bit fields: request id, sequence number, datagrams in the message, and a
 * reserved field (sent as 0). A request is one datagram; its payload is text
 * protocol, possibly several commands. A response message is split into
 * datagrams of at most KV_UDP_DATAGRAM_MAX bytes, header included, each
 * carrying the request's id, its sequence number and the message's total.
 *
 *   struct kv_udp_header h;
 *   const char *p;
 *   size_t n;
 *   if (kv_udp_parse(dgram, len, &h, &p, &n) != 0)
 *           return;                         // memcached ignores it: no reply
 *   ... run the commands in (p, n); for each reply message (reply, rlen):
 *   for (size_t i = 0; i < kv_udp_datagrams(rlen); i++)
 *           sendto(fd, out, kv_udp_frame(h.id, reply, rlen, i, out), 0, from, fromlen);
 *
 * memcached 1.6 frames each response object as its own message (sequence
 * from 0, its own total): the reply to each command of a datagram, and for a
 * multi-key get each key's value (the last key's carries "END\r\n"). See
 * kv_udp_frame() for the one case where an empty message is sent.
 */
#ifndef LOCUS_KV_UDP_H
#define LOCUS_KV_UDP_H

#include <stddef.h>
#include <stdint.h>

#define KV_UDP_HEADER	    8	 /* bytes of header in every datagram */
#define KV_UDP_DATAGRAM_MAX 1400 /* a response datagram, header included (UDP_MAX_PAYLOAD_SIZE) */
#define KV_UDP_PAYLOAD_MAX  (KV_UDP_DATAGRAM_MAX - KV_UDP_HEADER) /* reply bytes per datagram */
#define KV_UDP_TOTAL_MAX    65535 /* the total field saturates here; the datagrams do not stop */
#define KV_UDP_REQUEST_MAX  65536 /* memcached's UDP read buffer: receive into one this large */

struct kv_udp_header {
	uint16_t id;	   /* chosen by the client, echoed in every datagram of the reply */
	uint16_t seq;	   /* this datagram's place in its message, from 0 */
	uint16_t total;	   /* datagrams in the message */
	uint16_t reserved; /* 0 in replies; not checked in requests */
};

/*
 * Splits a received datagram into its header and payload. Returns 0 for a
 * datagram memcached processes, with *h, *payload (pointing into dgram) and
 * *payload_len set; -1 for one it silently ignores, with *h set if len is at
 * least KV_UDP_HEADER and the payload outputs untouched.
 */
int kv_udp_parse(const void *dgram, size_t len, struct kv_udp_header *h, const char **payload,
		 size_t *payload_len);

/*
 * The datagrams a reply message of reply_len bytes is sent in: reply_len
 * divided by KV_UDP_PAYLOAD_MAX, rounded up; 0 for an empty reply (noreply),
 * which sends nothing. Past KV_UDP_TOTAL_MAX the count is still the real one:
 * memcached sends every datagram (see kv_udp_frame()).
 */
size_t kv_udp_datagrams(size_t reply_len);

/*
 * Writes datagram number `index` of the message `reply` for request `id` into
 * dgram (room for KV_UDP_DATAGRAM_MAX bytes) and returns its length: the
 * header, then reply bytes [index * KV_UDP_PAYLOAD_MAX, +KV_UDP_PAYLOAD_MAX).
 * As memcached, the header's total is kv_udp_datagrams(reply_len) capped at
 * KV_UDP_TOTAL_MAX, and the sequence number is index modulo 65536 (it wraps
 * after datagram 65535 of a message over 91 MB). Index 0 of an empty reply
 * writes a bare header with total 0 (length KV_UDP_HEADER): the datagram
 * memcached sends for an empty response it has not discarded, such as the
 * leading misses of a multi-key get or "quit". Any other index past the last
 * datagram writes nothing and returns 0.
 */
size_t kv_udp_frame(uint16_t id, const char *reply, size_t reply_len, size_t index, uint8_t *dgram);

#endif
