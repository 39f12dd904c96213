/*
 * The emulated network's link (src/dsm/link.h), against its definition: a
 * message on an idle link arrives its bytes' time plus the delay after it
 * was sent; a burst given at one instant arrives spaced by each message's
 * bytes, the last after every byte of the burst; a page cut into many
 * messages takes the link as long as in one (plus nothing: the delay is
 * paid once per message, in parallel); a message after the link drained
 * starts when it is sent, one given while it is busy waits for it; with no
 * per-byte cost every message arrives the delay after it was sent. Arrivals
 * never go backwards, so each destination's order is kept. No MPI.
 */
#include <stdint.h>
#include <stdio.h>

#include "link.h"

static int failures;

static void check(int ok, const char *what, uint64_t got, uint64_t want)
{
	if (!ok) {
		fprintf(stderr, "dsm_link: %s: got %llu, expected %llu\n", what,
			(unsigned long long)got, (unsigned long long)want);
		failures++;
	}
}

static void EQ(const char *what, uint64_t got, uint64_t want)
{
	check(got == want, what, got, want);
}

int main(void)
{
	const uint64_t delay = 500000, per_byte = 52, t0 = 1000000000ull;

	struct dsm_link l = {0};
	EQ("idle link", dsm_link_send(&l, t0, 4096, delay, per_byte), t0 + 4096 * per_byte + delay);

	/* A burst of 8 pages at one instant, on an idle link. */
	struct dsm_link b = {0};
	uint64_t prev = 0;
	for (uint64_t i = 1; i <= 8; i++) {
		uint64_t at = dsm_link_send(&b, t0, 4096, delay, per_byte);
		EQ("burst: message i after i pages of bytes", at, t0 + i * 4096 * per_byte + delay);
		check(at > prev, "burst: arrivals in order", at, prev + 1);
		prev = at;
	}

	/* One message of 64 KiB and sixteen of 4 KiB: the same link time. */
	struct dsm_link one = {0}, many = {0};
	uint64_t a1 = dsm_link_send(&one, t0, 65536, delay, per_byte), a16 = 0;
	for (int i = 0; i < 16; i++)
		a16 = dsm_link_send(&many, t0, 4096, delay, per_byte);
	EQ("cut into messages: last arrival", a16, a1);
	EQ("cut into messages: link busy until", many.free_ns, one.free_ns);

	/* Sent after the link drained: starts then. While busy: waits. */
	struct dsm_link d = {0};
	uint64_t first = dsm_link_send(&d, t0, 1000, delay, per_byte);
	uint64_t later = t0 + 1000 * per_byte + 12345;
	uint64_t second = dsm_link_send(&d, later, 100, delay, per_byte);
	EQ("after the link drained", second, later + 100 * per_byte + delay);
	check(first < second, "arrivals in order", second, first + 1);
	uint64_t busy = later + 10; /* the 100 bytes are still leaving */
	EQ("while the link is busy", dsm_link_send(&d, busy, 100, delay, per_byte),
	   later + 200 * per_byte + delay);

	/* No per-byte cost: a pure delay, whatever the burst. */
	struct dsm_link z = {0};
	for (int i = 0; i < 4; i++)
		EQ("no per-byte cost", dsm_link_send(&z, t0, 4096, delay, 0), t0 + delay);
	EQ("no per-byte cost, later", dsm_link_send(&z, t0 + 7, 1 << 20, delay, 0), t0 + 7 + delay);

	if (failures)
		return 1;
	printf("dsm_link: ok\n");
	return 0;
}
