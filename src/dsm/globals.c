/*
 * The program's own global variables in a fork-style run (spawn.c): what
 * main wrote to them before a spawn is what the spawned thread sees, on any
 * node. Every node runs the same executable, so each global has its place
 * in every process; but a global is the process's own memory, not the
 * shared region, so the spawn carries a copy: the node that spawns writes
 * its globals into a block of the shared heap, and a node that starts a
 * thread copies them into its own globals first (again only when main's
 * have changed since that node last did).
 *
 * The program must not be position-independent (it is linked -no-pie), so
 * that it lies at one address in every process: a global that points into
 * it (a string, a function, another global) means the same on every node.
 * One that points into a library or the process's own heap does not.
 *
 * A program linked with globals.ld (pkg-config --libs locus-dsm) has its
 * own globals apart, on whole pages: those are not copied but shared, as
 * pages of the region (region.c), and what any thread writes to them is seen
 * by the others under the protocol's rules. What stays copied is the rest
 * of the segment (the start files' and static libraries' variables).
 *
 * What is copied: the executable's writable segment, but for what is this
 * process's own and would break another: the part the loader makes read-only
 * after relocation (RELRO: the GOT and init arrays), the PLT's GOT, and the
 * C library's variables the executable holds a copy of (COPY relocations:
 * stdout, optind, environ, ...). The runtime refuses a fork-style start when
 * its own state lies in that segment (liblocus-dsm linked statically): a
 * copy would overwrite it.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_RANGES 64

struct range {
	uintptr_t lo, hi;
};

static struct range keep[MAX_RANGES]; /* what is copied, in address order */
static size_t nkeep, total;
static int too_many;		 /* more holes than MAX_RANGES: refuse rather than copy them */
static uintptr_t image_base;	 /* the program's load address: 0 unless it is PIE */
static uintptr_t seg_lo, seg_hi; /* the writable segment, whole */

/* Defined by globals.ld when the program is linked with it: its own globals
   (not the C library's copies, nor the start files' or static libraries'),
   whole pages, which a fork-style run shares (region.c maps them). */
extern char __locus_globals_start[] __attribute__((weak));
extern char __locus_globals_end[] __attribute__((weak));
int dsm_fork_request;

int dsm_globals_shared(char **lo, char **hi)
{
	uintptr_t lo_at = (uintptr_t)__locus_globals_start, hi_at = (uintptr_t)__locus_globals_end;
	if (!lo_at || !hi_at || hi_at <= lo_at)
		return 0;
	*lo = __locus_globals_start;
	*hi = __locus_globals_end;
	return 1;
}

/* Take [lo, hi) out of the ranges kept (an emptied range stays, empty). */
static void cut(uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < nkeep && lo < hi; i++) {
		struct range r = keep[i];
		if (hi <= r.lo || lo >= r.hi)
			continue;
		if (lo > r.lo && hi < r.hi) { /* a hole: split */
			if (nkeep == MAX_RANGES) {
				too_many = 1;
				continue;
			}
			memmove(&keep[i + 2], &keep[i + 1], (nkeep - i - 1) * sizeof(*keep));
			keep[i] = (struct range){r.lo, lo};
			keep[i + 1] = (struct range){hi, r.hi};
			nkeep++;
			i++;
		} else if (lo > r.lo) { /* the tail */
			keep[i].hi = lo;
		} else if (hi < r.hi) { /* the head */
			keep[i].lo = hi;
		} else { /* all of it */
			keep[i].hi = keep[i].lo;
		}
	}
}

/* A dynamic entry's address: relocated by the loader, or (unrelocated) an
   offset from the object's base. */
static uintptr_t dyn_addr(uintptr_t base, ElfW(Addr) p)
{
	return p >= base ? p : base + p;
}

static void cut_dynamic(uintptr_t base, const ElfW(Dyn) * d)
{
	uintptr_t pltgot = 0, rela = 0, symtab = 0;
	size_t pltrelsz = 0, relasz = 0;
	for (; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_PLTGOT)
			pltgot = dyn_addr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_PLTRELSZ)
			pltrelsz = d->d_un.d_val;
		else if (d->d_tag == DT_RELA)
			rela = dyn_addr(base, d->d_un.d_ptr);
		else if (d->d_tag == DT_RELASZ)
			relasz = d->d_un.d_val;
		else if (d->d_tag == DT_SYMTAB)
			symtab = dyn_addr(base, d->d_un.d_ptr);
	}
	if (pltgot) /* three reserved words and one per PLT relocation */
		cut(pltgot, pltgot + (3 + pltrelsz / sizeof(ElfW(Rela))) * sizeof(void *));
	const ElfW(Rela) *r = (const ElfW(Rela) *)rela;
	const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab;
	for (size_t i = 0; r && sym && i < relasz / sizeof(*r); i++)
		if (ELF64_R_TYPE(r[i].r_info) == R_X86_64_COPY) {
			uintptr_t at = base + r[i].r_offset;
			cut(at, at + sym[ELF64_R_SYM(r[i].r_info)].st_size);
		}
}

static int main_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	uintptr_t base = info->dlpi_addr;
	image_base = base;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && nkeep < MAX_RANGES) {
			keep[nkeep++] = (struct range){base + ph->p_vaddr,
						       base + ph->p_vaddr + ph->p_memsz};
			if (!seg_lo || base + ph->p_vaddr < seg_lo)
				seg_lo = base + ph->p_vaddr;
			if (base + ph->p_vaddr + ph->p_memsz > seg_hi)
				seg_hi = base + ph->p_vaddr + ph->p_memsz;
		}
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_RELRO)
			cut(base + ph->p_vaddr, base + ph->p_vaddr + ph->p_memsz);
		if (ph->p_type == PT_DYNAMIC)
			cut_dynamic(base, (const ElfW(Dyn) *)(base + ph->p_vaddr));
	}
	char *lo, *hi; /* shared, not copied */
	if (dsm_globals_shared(&lo, &hi))
		cut((uintptr_t)lo, (uintptr_t)hi);
	return 1; /* the first object is the program */
}

int dsm_globals_init(void)
{
	nkeep = total = 0;
	seg_lo = seg_hi = 0;
	too_many = 0;
	dl_iterate_phdr(main_object, NULL);
	if (image_base) {
		fprintf(stderr,
			"locus-dsm: a fork-style start needs the program at the same address on "
			"every node, and it is position-independent (each process loads it "
			"elsewhere): link it with -no-pie (pkg-config --libs locus-dsm adds it)\n");
		return -1;
	}
	if (too_many) {
		fprintf(stderr,
			"locus-dsm: the program's writable segment has more than %d "
			"parts to copy\n",
			MAX_RANGES);
		return -1;
	}
	uintptr_t mine = (uintptr_t)&dsm;
	for (size_t i = 0; i < nkeep; i++) {
		if (mine >= keep[i].lo && mine < keep[i].hi) {
			fprintf(stderr,
				"locus-dsm: a fork-style start copies the program's globals to "
				"every node, and liblocus-dsm is linked into the program itself "
				"(statically): link it as a shared library (pkg-config --libs "
				"locus-dsm)\n");
			return -1;
		}
		total += keep[i].hi - keep[i].lo;
	}
	return 0;
}

/* The offset of addr in the program's writable segment, or -1. */
long dsm_globals_offset(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	return a >= seg_lo && a < seg_hi ? (long)(a - seg_lo) : -1;
}

size_t dsm_globals_size(void)
{
	return total;
}

/* The program's globals are copied whole, sanitizers' red zones between them
   included: these copies are neither checked nor turned into memcpy/memcmp
   (which the sanitizers intercept and check). */
#define RAW __attribute__((no_sanitize("address", "thread", "undefined"), noinline))

RAW static void raw_copy(char *to, const char *from, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		to[i] = from[i];
		__asm__ volatile("" ::: "memory"); /* no memcpy made of the loop */
	}
}

RAW static int raw_differ(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i])
			return 1;
		__asm__ volatile("" ::: "memory");
	}
	return 0;
}

void dsm_globals_save(void *buf)
{
	char *at = buf;
	for (size_t i = 0; i < nkeep; i++) {
		raw_copy(at, (const char *)keep[i].lo, keep[i].hi - keep[i].lo);
		at += keep[i].hi - keep[i].lo;
	}
}

/* 1 if buf differs from the globals as they are now. */
int dsm_globals_differ(const void *buf)
{
	const char *at = buf;
	for (size_t i = 0; i < nkeep; i++) {
		if (raw_differ(at, (const char *)keep[i].lo, keep[i].hi - keep[i].lo))
			return 1;
		at += keep[i].hi - keep[i].lo;
	}
	return 0;
}

void dsm_globals_load(const void *buf)
{
	const char *at = buf;
	for (size_t i = 0; i < nkeep; i++) {
		raw_copy((char *)keep[i].lo, at, keep[i].hi - keep[i].lo);
		at += keep[i].hi - keep[i].lo;
	}
}
