/* What repro itself asks of the public recorder (include/repro/repro.h)
 * beyond its options, which programs fill. */
#ifndef REPRO_RECORDER_H
#define REPRO_RECORDER_H

#include "repro/repro.h"

/* A program's trace has tensor detail on its first step, every K-th and
 * the last. The built-in experiments' (core/train_record.c) keep to every
 * K-th and the last: their goldens were blessed so, and a golden that
 * gained a detail step would no longer match its file. Call after open,
 * before the first step ends. */
void repro_recorder_no_first_detail(repro_recorder *r);

#endif
