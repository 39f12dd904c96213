/*
 * libFuzzer target for locus-kv's UDP framing (src/kv/protocol/udp.h): any datagram
 * is either dropped or split into a header and a payload inside it; and the
 * payload, framed back as a reply, comes out of the datagrams whole, in
 * order, each datagram within the size limit and numbered.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/udp.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			abort();                                                                   \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_udp_header h;
	const char *payload = NULL;
	size_t n = 0;
	if (kv_udp_parse(data, size, &h, &payload, &n) != 0)
		return 0;
	CHECK(size > KV_UDP_HEADER && h.total == 1);
	CHECK(payload == (const char *)data + KV_UDP_HEADER && n == size - KV_UDP_HEADER);

	/* The payload as a reply: framed, then put back together. */
	size_t count = kv_udp_datagrams(n);
	CHECK(count == (n + KV_UDP_PAYLOAD_MAX - 1) / KV_UDP_PAYLOAD_MAX);
	char *back = malloc(n + 1);
	CHECK(back);
	size_t got = 0;
	uint8_t d[KV_UDP_DATAGRAM_MAX];
	for (size_t i = 0; i < count; i++) {
		size_t len = kv_udp_frame(h.id, payload, n, i, d);
		CHECK(len > KV_UDP_HEADER && len <= KV_UDP_DATAGRAM_MAX);
		struct kv_udp_header r = {
			(uint16_t)(d[0] << 8 | d[1]), (uint16_t)(d[2] << 8 | d[3]),
			(uint16_t)(d[4] << 8 | d[5]), (uint16_t)(d[6] << 8 | d[7])};
		CHECK(r.id == h.id && r.seq == (uint16_t)i && r.total == count && r.reserved == 0);
		memcpy(back + got, d + KV_UDP_HEADER, len - KV_UDP_HEADER);
		got += len - KV_UDP_HEADER;
	}
	CHECK(got == n && memcmp(back, payload, n) == 0);
	CHECK(kv_udp_frame(h.id, payload, n, count, d) == (n == 0 ? KV_UDP_HEADER : 0));
	free(back);
	return 0;
}
