/* repro_exp and repro_log: our own exp/log in double, so every machine gets
 * the same bits (libm's last bits differ between libc versions and ISA code
 * paths). The code is kernels/shared/mathx.h, the one source the CUDA
 * kernels compile too; this file gives it the CPU kernels' names (ops.h)
 * and refuses to build where C's double arithmetic is not plain IEEE
 * double (x87-style excess precision would make the bits machine-
 * dependent). Accuracy and the determinism argument: mathx.h. */
#include "ops.h"

#include <float.h>

#include "kernels/shared/mathx.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "repro needs FLT_EVAL_METHOD == 0 (SSE2-style double arithmetic)"
#endif

double repro_exp(double x)
{
    return repro_hd_exp(x);
}

double repro_log(double x)
{
    return repro_hd_log(x);
}
