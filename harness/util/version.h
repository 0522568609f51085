/* repro's own version: part of every environment fingerprint. */
#ifndef REPRO_VERSION_H
#define REPRO_VERSION_H
#define REPRO_VERSION "0.1.0"
/* The client protocol of the Python client that ships with this repro
 * (python/repro: PROTOCOL): what it records and how. A program's trace
 * says which protocol wrote it (header "client"); `repro verify` re-runs
 * it only where its own client speaks that protocol. Raise it with any
 * change to what the client records (names, order, hooks, seeding). */
#define REPRO_CLIENT_PROTOCOL 1
#endif
