/* The running sums of a row-parallel linear layer carried rank to rank
 * (core/tp.h, include/repro/tp.h): the one place that adds a
 * tensor-parallel layer's products, so the library's split layers and a
 * program's give the same bits. */
#include <stdlib.h>

#include "core/dist.h"
#include "core/tp.h"
#include "repro/tp.h"
#include "util/error.h"

/* Eight outputs at a time, each its own running sum over k ascending: the
 * kernels' order per output, with eight independent chains of adds in
 * flight instead of one. */
void repro_tp_continue(float *acc, long ld_acc, const float *x, long ld_x, const float *w,
                       long ld_w, int B, int K, int out)
{
    for (int b = 0; b < B; b++) {
        float *a = acc + (long)b * ld_acc;
        const float *xr = x + (long)b * ld_x;
        int o = 0;
        for (; o + 8 <= out; o += 8) {
            float s[8];
            const float *wr[8];
            for (int j = 0; j < 8; j++)
                s[j] = a[o + j], wr[j] = w + (long)(o + j) * ld_w;
            for (int k = 0; k < K; k++)
                for (int j = 0; j < 8; j++)
                    s[j] = s[j] + xr[k] * wr[j][k];
            for (int j = 0; j < 8; j++)
                a[o + j] = s[j];
        }
        for (; o < out; o++) {
            float s = a[o];
            const float *wr = w + (long)o * ld_w;
            for (int k = 0; k < K; k++)
                s = s + xr[k] * wr[k];
            a[o] = s;
        }
    }
}

int repro_tp_chain_rowpar(struct repro_dist *g, const float *x, long ld_x, const float *w,
                          long ld_w, const float *bias, float *y, int B, int K, int out, int tile)
{
    int r = repro_dist_rank(g), N = repro_dist_size(g);
    if (tile < 1)
        tile = 16;
    for (int t0 = 0; t0 < B; t0 += tile) {
        int rows = B - t0 < tile ? B - t0 : tile;
        float *yt = y + (long)t0 * out;
        size_t bytes = (size_t)rows * (size_t)out * sizeof(float);
        if (r == 0) {
            for (int b = 0; b < rows; b++)
                for (int o = 0; o < out; o++)
                    yt[(long)b * out + o] = bias[o];
        } else if (repro_dist_recv(g, r - 1, yt, bytes)) {
            return -1;
        }
        repro_tp_continue(yt, out, x + (long)t0 * ld_x, ld_x, w, ld_w, rows, K, out);
        if (r + 1 < N && repro_dist_send(g, r + 1, yt, bytes))
            return -1;
    }
    return N > 1 ? repro_dist_bcast_from(g, N - 1, y, (size_t)B * (size_t)out * sizeof(float))
                 : 0;
}

int repro_tp_linear_rowpar(void *comm, const float *x, long ld_x, const float *w, long ld_w,
                           const float *bias, float *y, int B, int K, int out, int tile)
{
    repro_dist *g;
    if (repro_dist_wrap(comm, &g))
        return -1;
    int rc = repro_tp_chain_rowpar(g, x, ld_x, w, ld_w, bias, y, B, K, out, tile);
    repro_dist_free_sub(g);
    return rc;
}
