/* Small elementwise kernels of the training step that are not layers: the
 * loss-gradient scaling of accumulation and fp16, adding a reduced-precision
 * gradient into the fp32 one, and the fp16 scaler's unscale + inf/NaN
 * check. One loop each (the vector path's), on the caller's thread:
 * elementwise, so no order is involved and no thread count or vector
 * width could change a bit. */
#ifndef REPRO_ELEMENTWISE_H
#define REPRO_ELEMENTWISE_H

/* x[i] = x[i] / d */
void repro_div_scalar(float *x, long n, float d);
/* x[i] = x[i] * s */
void repro_mul_scalar(float *x, long n, float s);
/* y[i] = y[i] + x[i] (where both are NaN, y's, quieted: x86's answer with
 * y as the first operand) */
void repro_add_into(float *y, const float *x, long n);
/* g[i] = g[i] * inv; returns 1 if any result is inf or NaN, else 0. */
int repro_unscale_check(float *g, long n, float inv);

#endif
