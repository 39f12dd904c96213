/*
 * Functions across nodes. Every node runs the same program, but address-
 * space randomization loads the program and its libraries at different
 * addresses in each process, so a function pointer means nothing on
 * another node. A function crosses as its place in the image instead: the
 * index of the object that holds it (in the loader's order, the same on
 * every node of one program), its offset from that object's load address,
 * and a hash of the object's name that the receiver checks.
 *
 * The objects' executable segments are listed once, at init; an address in
 * none of them (a function made at run time, or in a library opened after
 * init) is not shippable and is refused at the call with a message.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnid.h"
#include "internal.h"

#define MAX_SEGS 256

struct seg {
	uintptr_t lo, hi, base;
	uint32_t obj, check;
};

static struct {
	struct seg seg[MAX_SEGS];
	size_t nseg;
	uintptr_t base[MAX_SEGS]; /* by object index */
	uint32_t check[MAX_SEGS];
	uint32_t nobj;
} img;

/* FNV-1a over the object's file name, without its directory: nodes may run
   the program from different paths. */
static uint32_t name_hash(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	uint32_t h = 2166136261u;
	for (; *base; base++)
		h = (h ^ (uint8_t)*base) * 16777619u;
	return h;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (img.nobj >= MAX_SEGS)
		return 1;
	uint32_t obj = img.nobj++;
	img.base[obj] = info->dlpi_addr;
	img.check[obj] = name_hash(info->dlpi_name ? info->dlpi_name : "");
	for (int i = 0; i < info->dlpi_phnum && img.nseg < MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		img.seg[img.nseg++] = (struct seg){.lo = lo,
						   .hi = lo + ph->p_memsz,
						   .base = info->dlpi_addr,
						   .obj = obj,
						   .check = img.check[obj]};
	}
	return 0;
}

void dsm_fnid_init(void)
{
	memset(&img, 0, sizeof(img));
	dl_iterate_phdr(add_object, NULL);
}

int dsm_fnid_of(const void *fn, struct dsm_fnid *id)
{
	uintptr_t a = (uintptr_t)fn;
	for (size_t i = 0; i < img.nseg; i++)
		if (a >= img.seg[i].lo && a < img.seg[i].hi) {
			*id = (struct dsm_fnid){.obj = img.seg[i].obj,
						.check = img.seg[i].check,
						.off = a - img.seg[i].base};
			return 0;
		}
	return -1;
}

void *dsm_fnid_fn(const struct dsm_fnid *id)
{
	if (id->obj >= img.nobj || img.check[id->obj] != id->check)
		return NULL;
	uintptr_t a = img.base[id->obj] + id->off;
	for (size_t i = 0; i < img.nseg; i++)
		if (img.seg[i].obj == id->obj && a >= img.seg[i].lo && a < img.seg[i].hi)
			return (void *)a;
	return NULL;
}
