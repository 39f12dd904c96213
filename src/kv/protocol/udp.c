/*
 * locus-kv: memcached's UDP framing (udp.h). The rules follow memcached
 * 1.6.18: which requests it reads (try_read_udp), and how it numbers and
 * cuts the datagrams of a response (its UDP transmit path).
 */
#include <string.h>

#include "kv/protocol/udp.h"

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * Dropped, with no reply: a datagram of KV_UDP_HEADER bytes or fewer (too
 * short for a header, or a header with no command after it), and one whose
 * total is not 1 (a request split over several datagrams, which memcached
 * does not reassemble; total 0 too). The sequence number and the reserved
 * field are not looked at: any values are processed.
 */
int kv_udp_parse(const void *dgram, size_t len, struct kv_udp_header *h, const char **payload,
		 size_t *payload_len)
{
	const uint8_t *p = dgram;

	if (len < KV_UDP_HEADER)
		return -1;
	h->id = get16(p);
	h->seq = get16(p + 2);
	h->total = get16(p + 4);
	h->reserved = get16(p + 6);
	if (len == KV_UDP_HEADER || h->total != 1)
		return -1;
	*payload = (const char *)p + KV_UDP_HEADER;
	*payload_len = len - KV_UDP_HEADER;
	return 0;
}

/* Every full or partial KV_UDP_PAYLOAD_MAX slice of the reply is one datagram; none for 0 bytes. */
size_t kv_udp_datagrams(size_t reply_len)
{
	return reply_len / KV_UDP_PAYLOAD_MAX + (reply_len % KV_UDP_PAYLOAD_MAX != 0);
}

/*
 * Datagram `index` of the reply: header plus its slice; a bare header with
 * total 0 for index 0 of an empty reply; 0 (nothing written) past the end.
 */
size_t kv_udp_frame(uint16_t id, const char *reply, size_t reply_len, size_t index, uint8_t *dgram)
{
	size_t n = kv_udp_datagrams(reply_len);
	size_t off, len;

	if (index >= n && !(reply_len == 0 && index == 0))
		return 0;
	put16(dgram, id);
	put16(dgram + 2, (uint16_t)index);
	put16(dgram + 4, (uint16_t)(n < KV_UDP_TOTAL_MAX ? n : KV_UDP_TOTAL_MAX));
	put16(dgram + 6, 0);
	if (reply_len == 0)
		return KV_UDP_HEADER;
	off = index * KV_UDP_PAYLOAD_MAX;
	len = reply_len - off < KV_UDP_PAYLOAD_MAX ? reply_len - off : KV_UDP_PAYLOAD_MAX;
	memcpy(dgram + KV_UDP_HEADER, reply + off, len);
	return KV_UDP_HEADER + len;
}
