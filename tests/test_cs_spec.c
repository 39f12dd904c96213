/*
 * Spec strings (cs.h): every value is range checked with a message that
 * gives the range, and locus_cs_spec() of an open executor reopens to the
 * same configuration, including the size of a delegation runtime it joined
 * without naming one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/cs.h"
#include "locus/delegate.h"
#include "testutil.h"

#define HANG_S (30 * TEST_SLOWDOWN)

static uint64_t add(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t *k = state;
	uint64_t old = *k;
	*k += a;
	return old;
}

/* Open spec, reopen its canonical spec, and require the same canonical spec. */
static void round_trip(const char *spec)
{
	uint64_t k = 0;
	locus_cs *cs = locus_cs_open(spec, &k);
	ck_assert_msg(cs, "\"%s\" did not open: %s", spec, locus_cs_error());
	char first[512];
	snprintf(first, sizeof(first), "%s", locus_cs_spec(cs));
	locus_cs *again = locus_cs_open(first, &k);
	ck_assert_msg(again, "\"%s\": its spec \"%s\" did not reopen: %s", spec, first,
		      locus_cs_error());
	ck_assert_msg(strcmp(locus_cs_spec(again), first) == 0,
		      "\"%s\": spec \"%s\" reopened as \"%s\"", spec, first, locus_cs_spec(again));
	ck_assert_uint_eq(locus_cs_run(again, add, 1, 0, 0), 0);
	ck_assert_uint_eq(locus_cs_run(cs, add, 1, 0, 0), 1);
	locus_cs_close(again);
	locus_cs_close(cs);
}

static const char *const good[] = {
	"mutex",
	"tas:spin",
	"tas:barge",
	"futex:park,antistarve",
	"ttas:barge,nobackoff",
	"ttas:nobackoff,park",
	"ttas:backoff_max=1",
	"ttas:backoff_max=4294967295",
	"ticket:spins=0",
	"ticket:spins=4294967295",
	"mcs:nocr,spins=0",
	"mcs:spins=0",
	"clh:park",
	"ticket:strict",
	"ticket:admit=2",
	"clh:strict,spin",
	"clh:admit=4294967295",
	"mcs:nocr,strict",
	"mcs:admit=3,cr",
	"mcs:strict,admit",
	"futex:spinpark,spins=17",
	"oyama:pass=1",
	"ccsynch:pass=4294967295",
	"ffwd",
	"ffwd:servers=2,server=1",
	"async:lines=1",
	"async:lines=64,queue=65536",
	"async:direct,lines=3",
	"async:queue=1",
	"async:servers=3,server=0",
	"flat",
	"flat:slot=1,slots=2",
	"flat:slot=0",
	"flat:bound=4294967295",
	"flat:doorbell,lines=64",
	"mpsc:spins=0",
	"mpsc:locked,copy,block",
	"mpsc:spin,batch,capacity=1",
	"mpsc:capacity=1048576",
#ifdef LOCUS_HAVE_STM
	"stm:strict",
	"stm:ml_wt,admit",
#endif
	NULL,
};

START_TEST(specs_round_trip)
{
	round_trip(good[_i]);
	ck_assert_uint_eq(locus_delegate_servers(), 0);
}
END_TEST

/* A spec that must be refused, with a message containing `needle`. */
struct bad {
	const char *spec, *needle;
};

static const struct bad bad[] = {
	{"async:queue=4294967295", "1..65536"},
	{"async:queue=65537", "1..65536"},
	{"async:queue=0", "1..65536"},
	{"async:lines=65", "1..64"},
	{"async:lines=0", "1..64"},
	{"async:server=4294967295", "0..1023"},
	{"ffwd:servers=0", "1..1024"},
	{"ffwd:servers=1025", "1..1024"},
	{"flat:slots=0", "1..1024"},
	{"flat:slot=1024", "0..1023"},
	{"flat:bound=0", "1..4294967295"},
	{"mpsc:capacity=0", "1..1048576"},
	{"mpsc:capacity=1048577", "1..1048576"},
	{"mpsc:spins=4294967296", "0..4294967295"},
	{"mcs:spins=4294967296", "0..4294967295"},
	{"mcs:spins=-1", "0..4294967295"},
	{"mcs:spins=+1", "0..4294967295"},
	{"mcs:spins= 1", "0..4294967295"},
	{"mcs:spins=0x10", "0..4294967295"},
	{"mcs:spins=", "0..4294967295"},
	{"ttas:backoff_max=0", "1..4294967295"},
	{"oyama:pass=0", "1..4294967295"},
	{"mcs:,spin", "empty option"},
	{"mcs:spin,", "empty option"},
	{"mcs:spin,,park", "empty option"},
	{"mcs:", "empty option"},
	{"mutex:spin", "unknown option"},
	{"ticket:admit=1", "2..4294967295"},
	{"clh:admit=0", "2..4294967295"},
	{"mcs:admit=", "2..4294967295"},
	{"mcs:admit=x", "2..4294967295"},
	{"tas:strict", "unknown option"},
	{"futex:admit=2", "unknown option"},
	{"ticket:nocr", "unknown option"},
	{"nosuch", "known mechanisms"},
#ifdef LOCUS_HAVE_STM
	{"stm:admit=2", "unknown option"},
#endif
	{NULL, NULL},
};

START_TEST(bad_values_are_refused_with_their_range)
{
	uint64_t k = 0;
	const struct bad *b = &bad[_i];
	locus_cs *cs = locus_cs_open(b->spec, &k);
	ck_assert_msg(cs == NULL, "\"%s\" opened as \"%s\"", b->spec, cs ? locus_cs_spec(cs) : "");
	ck_assert_msg(strstr(locus_cs_error(), b->needle) != NULL,
		      "\"%s\": message \"%s\" does not say \"%s\"", b->spec, locus_cs_error(),
		      b->needle);
}
END_TEST

/* A spec without servers= joins the running runtime and says so in its spec. */
START_TEST(delegation_spec_reports_the_runtime_it_joined)
{
	uint64_t k = 0;
	locus_cs *two = locus_cs_open("async:servers=2", &k);
	ck_assert_msg(two, "%s", locus_cs_error());
	const char *plain[] = {"ffwd", "async", "async:direct"};
	for (int i = 0; i < 3; i++) {
		locus_cs *cs = locus_cs_open(plain[i], &k);
		ck_assert_msg(cs, "%s: %s", plain[i], locus_cs_error());
		ck_assert_msg(strstr(locus_cs_spec(cs), "servers=2") != NULL,
			      "%s joined 2 servers but its spec is \"%s\"", plain[i],
			      locus_cs_spec(cs));
		round_trip(locus_cs_spec(cs));
		locus_cs_close(cs);
	}
	locus_cs_close(two);
	ck_assert_uint_eq(locus_delegate_servers(), 0);

	/* Flat slots: a plain spec adopts the running count as async adopts servers. */
	locus_cs *four = locus_cs_open("flat:slots=4", &k);
	ck_assert_msg(four, "%s", locus_cs_error());
	locus_cs *cs = locus_cs_open("flat", &k);
	ck_assert_msg(cs, "plain flat while flat:slots=4 is open: %s", locus_cs_error());
	ck_assert_msg(strstr(locus_cs_spec(cs), "slots=4") != NULL, "spec \"%s\"",
		      locus_cs_spec(cs));
	round_trip(locus_cs_spec(cs));
	/* An explicit, different count still conflicts, with a message. */
	ck_assert_ptr_null(locus_cs_open("flat:slots=3", &k));
	ck_assert_msg(strstr(locus_cs_error(), "4 slots") != NULL, "%s", locus_cs_error());
	locus_cs_close(cs);
	locus_cs_close(four);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cs_spec");
	TCase *tc = tcase_create("spec");
	tcase_set_timeout(tc, HANG_S);
	int n = 0;
	while (good[n])
		n++;
	tcase_add_loop_test(tc, specs_round_trip, 0, n);
	n = 0;
	while (bad[n].spec)
		n++;
	tcase_add_loop_test(tc, bad_values_are_refused_with_their_range, 0, n);
	tcase_add_test(tc, delegation_spec_reports_the_runtime_it_joined);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
