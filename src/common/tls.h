/*
 * Thread-local variables on the fast paths of the locks and executors.
 *
 * In a shared library, a plain __thread variable is reached through
 * __tls_get_addr: a call through the PLT at every access. A queue lock takes
 * its node from a per-thread pool at lock and gives it back at unlock, so
 * with liblocus.so an uncontended mcs lock and unlock cost nearly twice what
 * they cost in the static library (17 against 9.4 ns on a 2-CPU EPYC).
 * The initial-exec model reaches the variable at a fixed offset from the
 * thread pointer instead, as the static library does.
 *
 * The price: a library with such variables needs its whole thread-local
 * block in the static TLS area. A library linked into the program or
 * preloaded has it there anyway; one loaded later with dlopen takes it from
 * the C library's reserve for that, which is small (glibc 2.36 loaded a
 * library with 1 KiB of thread-local data, and refused one with 1.7 KiB).
 * That reserve is shared by every library the process loads late, and the
 * same holds for a plugin that links liblocus.a and is itself loaded with
 * dlopen. So liblocus keeps all its thread-local data small: 176 bytes in
 * the shared library (the executor's error message, 1 KiB, is allocated at
 * a thread's first error instead); tests/test_dlopen.c loads it with dlopen.
 */
#ifndef LOCUS_COMMON_TLS_H
#define LOCUS_COMMON_TLS_H

#define LOCUS_TLS __thread __attribute__((tls_model("initial-exec")))

#endif
