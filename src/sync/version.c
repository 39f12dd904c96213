#include "locus/version.h"

const char *locus_version(void)
{
	return LOCUS_VERSION_STRING;
}
