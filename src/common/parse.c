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
