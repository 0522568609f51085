/* The Python client on the verifying side of a program bundle.
 *
 * A program that records through the Python client (`import repro`) needs
 * one inside the sandbox, and it must be the verifying repro's own: the
 * one installed with it, found as REPRO_LIB is found (from the running
 * binary): in a build tree (BUILD/repro) the checkout's python/ beside
 * BUILD; installed (PREFIX/bin/repro) the directory `make install`
 * recorded, relative to PREFIX, in PREFIX/share/repro/python-site
 * (scripts/install-client.sh). The sandbox binds its repro/ read-only and
 * the program finds it on PYTHONPATH (verify_program.c).
 *
 * A trace the client wrote says which client and client protocol
 * (record/trace.h, header "client"); a protocol other than this repro's
 * (REPRO_CLIENT_PROTOCOL) cannot be reproduced here, nor any client's
 * trace where this repro has none: repro_client_check refuses it before
 * anything runs, saying why (a host problem, not a verdict).
 *
 * A bundle whose tree carries its own repro package (repro/__init__.py or
 * repro.py) shadows the host's client when it lies beside the script or in
 * its working directory (Python puts the script's directory first on
 * sys.path): its own code then writes the trace. That is no new threat (a
 * program can always write its trace itself), but the receipt says so. */
#ifndef REPRO_VERIFY_CLIENT_H
#define REPRO_VERIFY_CLIENT_H

#include <stddef.h>

#include "record/trace.h"

/* The directory holding this repro's client package (DIR/repro/__init__.py
 * exists) into out: 1, or 0 when there is none. */
int repro_client_host_dir(char *out, size_t len);

/* 0 when this host can re-run the program that wrote `claim` (no "client"
 * in its header, or one of this repro's protocol with a client found);
 * else -1 (REPRO_EUNSUPPORTED, the message saying which protocol the trace
 * needs, which this host has, and what to do). */
int repro_client_check(const repro_trace *claim, const char *bundle_dir);

/* The first path (relative to tree, sorted walk order) of a repro package
 * or module the tree carries, into first: 1, or 0 when none. */
int repro_client_own_package(const char *tree, char *first, size_t len);

#endif
