/* The one ULP distance between two float32 values, used wherever repro
 * says "N ulps apart" (element diffs, `repro compare`, `repro verify
 * --policy ulp:N`).
 *
 * The rule: each bit pattern is placed on the ordered integer line, on
 * which adjacent floats are adjacent integers — non-negative floats at
 * their bits (+0 at 0, the smallest subnormal at 1, ..., +inf just past
 * the largest finite), negative floats mirrored below (-x at -bits(x)) —
 * and the distance is the absolute difference. So:
 *   - +0 and -0 are 0 apart: they are equal numbers (== holds, and every
 *     arithmetic result but the sign of an exact zero or 1/x agrees), and
 *     a difference in the sign of zero is not a numeric drift; bitwise
 *     comparison (the chain digests) is what sees it, not this distance;
 *   - the smallest positive and the smallest negative subnormal are 2
 *     apart (zero lies between them), and the distance counts correctly
 *     across zero for any signs;
 *   - FLT_MAX and +inf are 1 apart (inf sits next on the line);
 *   - NaN is not on the line: a NaN against anything else — a number, or a
 *     NaN with other bits — is REPRO_ULP_NAN (UINT64_MAX, "not
 *     comparable", larger than any real distance so it fails any bound);
 *     identical NaN bit patterns are 0 apart (the same bits).
 * The largest real distance (-inf to +inf) is 2 * 0x7f800000, far below
 * REPRO_ULP_NAN. */
#ifndef REPRO_ULP_H
#define REPRO_ULP_H

#include <stdint.h>

#define REPRO_ULP_NAN UINT64_MAX

uint64_t repro_ulp_distance_f32(uint32_t a_bits, uint32_t b_bits);

#endif
