/* The CPU kernels' (and their tests') path to the shared Philox generator:
 * it lives in kernels/philox.h because every backend draws the same bits
 * from it, and the harness uses it for seeds and data. */
#ifndef REPRO_CPU_PHILOX_H
#define REPRO_CPU_PHILOX_H

#include "kernels/philox.h"

#endif
