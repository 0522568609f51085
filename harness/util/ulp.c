/* The float32 ULP distance (rule in ulp.h). */
#include "util/ulp.h"

static int is_nan(uint32_t b)
{
    return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu);
}

/* Position on the ordered line: +x at bits(x), -x at -bits(x); both zeros
 * at 0. */
static int64_t ordered(uint32_t b)
{
    int64_t mag = (int64_t)(b & 0x7fffffffu);
    return (b & 0x80000000u) ? -mag : mag;
}

uint64_t repro_ulp_distance_f32(uint32_t a, uint32_t b)
{
    if (a == b)
        return 0; /* also identical NaNs */
    if (is_nan(a) || is_nan(b))
        return REPRO_ULP_NAN;
    int64_t d = ordered(a) - ordered(b);
    return (uint64_t)(d < 0 ? -d : d);
}
