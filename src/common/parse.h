/*
 * The one number parser for options and environment variables: whole
 * decimal numbers only (no sign, no spaces, no suffix), within a range the
 * caller names; hexadecimal after 0x where a number is an address.
 */
#ifndef LOCUS_COMMON_PARSE_H
#define LOCUS_COMMON_PARSE_H

#include <stdint.h>

/* 0 and *out = the value of s if s is a decimal number in [min, max]; -1 otherwise. */
int parse_num_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int parse_num_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out);
/* The same, also accepting 0x followed by hexadecimal digits (an address). */
int parse_num_or_hex_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
