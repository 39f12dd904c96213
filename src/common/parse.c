#include <errno.h>
#include <stdlib.h>

#include "common/parse.h"

int parse_num_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	if (*end != '\0' || errno || n < min || n > max)
		return -1;
	*out = n;
	return 0;
}

int parse_num_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	if (parse_num_u64(s, min, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int parse_num_or_hex_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return parse_num_u64(s, min, max, out);
	s += 2;
	if (!*s)
		return -1;
	uint64_t n = 0;
	for (; *s; s++) {
		int d = *s >= '0' && *s <= '9'	 ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;
		if (d < 0 || n > UINT64_MAX >> 4)
			return -1;
		n = n << 4 | (uint64_t)d;
	}
	if (n < min || n > max)
		return -1;
	*out = n;
	return 0;
}
