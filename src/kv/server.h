/* locus-kv: what the server's parts share. */
#ifndef LOCUS_KV_SERVER_H
#define LOCUS_KV_SERVER_H

#define LOCUS_KV_VERSION "0.1.0"
/*
 * What "version" answers: the memcached release whose text and meta protocol
 * locus-kv follows, then its own version. Clients (libmemcached's among them)
 * read the leading numbers to decide which protocol behaviour to expect.
 */
#define LOCUS_KV_PROTOCOL_VERSION "1.6.18"
#define LOCUS_KV_VERSION_REPLY	  LOCUS_KV_PROTOCOL_VERSION "-locus-kv-" LOCUS_KV_VERSION

#endif
