/* Never compiled with -fgnu-tm: stm finds no transactional clone of these. */
#include "sections.h"

#include "locus/stm.h"

uint64_t mode_probe_plain(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	return (uint64_t)locus_stm_mode();
}
