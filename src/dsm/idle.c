/*
 * Idle CPUs that poll instead of halting while a run of several nodes lasts
 * (LOCUS_DSM_IDLE_POLL).
 *
 * Every remote miss, lock and barrier ends with a sleeping thread woken, and
 * when the CPU it is woken on is idle, the wake-up costs what that CPU takes
 * to leave its idle state: on a virtual machine whose idle vCPUs halt, the
 * host must run the vCPU again (10 to 30 us measured here). The kernel's PM
 * QoS request (/dev/cpu_dma_latency, held while the file is open) asks every
 * CPU of the machine for at most 0 us of exit latency: an idle CPU then polls
 * in the kernel's idle loop. That is not a busy wait: a CPU polls only when it
 * has nothing else to run, and leaves the loop the moment a thread is woken
 * on it, so threads that have work (other nodes, other programs) keep their
 * CPU time. What it costs is power, a polling hyperthread's share of its
 * core, and on a shared host the vCPU's time.
 *
 * The kernel honours the request where a cpuidle driver chooses the idle
 * state (x86: haltpoll in a guest, intel_idle, ACPI C-states), whose state 0
 * polls; without one (default_idle) or where the shallowest state halts
 * (arm64's WFI), the request is held and changes nothing. The statistics
 * therefore say "asked", not "polled".
 *
 * Only root may open the device on most systems (or whoever its permissions
 * allow): otherwise the run goes on as before and the statistics say why.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "internal.h"

static int held = -1; /* the open device, while the request is held */
static int refused;    /* the errno of a request that could not be made */

void dsm_idle_hold(void)
{
	if (!dsm.cfg.idle_poll || dsm.nodes < 2 || held >= 0)
		return;
	int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		refused = errno;
		return;
	}
	int32_t none = 0; /* microseconds of exit latency allowed */
	errno = 0;
	if (write(fd, &none, sizeof(none)) != (ssize_t)sizeof(none)) {
		refused = errno ? errno : EIO;
		close(fd);
		return;
	}
	held = fd;
}

int dsm_idle_held(void)
{
	return held >= 0;
}

int dsm_idle_error(void)
{
	return refused;
}

/* At finalize; and in a child of fork(), which is not a node: closing its copy
   leaves the request to the node, whose descriptor shares the open file. */
void dsm_idle_release(void)
{
	if (held >= 0)
		close(held);
	held = -1;
}
