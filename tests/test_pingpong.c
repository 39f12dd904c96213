/*
 * locus-bench pingpong's measurements, run in this process: both threads
 * take part to the end, the rings deliver (and answer) every message in
 * order, whatever their depth, and the counts are consistent. Nothing here
 * bounds a time.
 */
#include <string.h>

#include "pingpong.h"
#include "testutil.h"

/* The first two CPUs this process may use; 0 if it has one only. */
static int two_cpus(int cpu[2])
{
	return pingpong_allowed_cpus(cpu, 2) >= 2;
}

START_TEST(round_trip_counts_whole_turns)
{
	struct pingpong_params p = {.test = PINGPONG_ROUND_TRIP, .duration = 0.05};
	struct pingpong_result r;

	if (!two_cpus(p.cpu))
		return; /* one CPU: nothing to measure (the command says so; test_bench.py) */
	pingpong_measure(&p, &r);
	ck_assert_msg(r.out.ok, "%s", r.out.err);
	ck_assert_uint_gt(r.ops, 0);
	ck_assert_uint_eq(r.ops % 64, 0); /* the stop flag is read between batches of 64 */
	ck_assert_uint_eq(r.sent, r.ops);
	ck_assert_uint_eq(r.misordered, 0);
	ck_assert(r.seconds > 0);
}
END_TEST

START_TEST(ring_delivers_every_message_in_order)
{
	static const unsigned depths[] = {1, 2, 16, PINGPONG_MAX_DEPTH};

	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		struct pingpong_params p = {
			.test = PINGPONG_RING, .depth = depths[i], .duration = 0.02};
		struct pingpong_result r;

		if (!two_cpus(p.cpu))
			return;
		pingpong_measure(&p, &r);
		ck_assert_msg(r.out.ok, "depth %u: %s", depths[i], r.out.err);
		ck_assert_uint_gt(r.ops, 0);
		ck_assert_uint_eq(r.sent, r.ops);
		ck_assert_uint_eq(r.misordered, 0);
	}
}
END_TEST

START_TEST(answered_ring_answers_every_request_in_order)
{
	static const unsigned depths[] = {1, 2, 16, PINGPONG_MAX_DEPTH};

	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		struct pingpong_params p = {
			.test = PINGPONG_ANSWERED, .depth = depths[i], .duration = 0.02};
		struct pingpong_result r;

		if (!two_cpus(p.cpu))
			return;
		pingpong_measure(&p, &r);
		ck_assert_msg(r.out.ok, "depth %u: %s", depths[i], r.out.err);
		ck_assert_uint_gt(r.ops, 0);
		ck_assert_uint_eq(r.sent, r.ops); /* every request answered before the end */
		ck_assert_uint_eq(r.misordered, 0);
	}
}
END_TEST

START_TEST(ring_refuses_a_depth_out_of_range)
{
	struct pingpong_params p = {
		.test = PINGPONG_RING, .depth = PINGPONG_MAX_DEPTH + 1, .duration = 0.01};
	struct pingpong_result r;

	pingpong_measure(&p, &r);
	ck_assert(!r.out.ok);
	ck_assert_ptr_nonnull(strstr(r.out.err, "depth"));
}
END_TEST

START_TEST(a_cpu_outside_the_mask_fails_with_the_reason)
{
	struct pingpong_params p = {.test = PINGPONG_ROUND_TRIP, .duration = 0.01};
	struct pingpong_result r;
	int cpus[1024], n = pingpong_allowed_cpus(cpus, 1024);

	ck_assert_int_ge(n, 1);
	if (n >= 1024)
		return;
	p.cpu[0] = cpus[0];
	p.cpu[1] = cpus[n - 1] + 1; /* past the last CPU this process may use */
	pingpong_measure(&p, &r);
	ck_assert(!r.out.ok);
	ck_assert_ptr_nonnull(strstr(r.out.err, "pinning a thread to CPU"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pingpong");
	TCase *t = tcase_create("measure");

	tcase_add_test(t, round_trip_counts_whole_turns);
	tcase_add_test(t, ring_delivers_every_message_in_order);
	tcase_add_test(t, answered_ring_answers_every_request_in_order);
	tcase_add_test(t, ring_refuses_a_depth_out_of_range);
	tcase_add_test(t, a_cpu_outside_the_mask_fails_with_the_reason);
	tcase_set_timeout(t, 60 * TEST_SLOWDOWN);
	suite_add_tcase(s, t);
	return test_run_suite(s);
}
