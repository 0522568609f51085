/* Memory accounting by category (see memory.h for what is counted how). */
#include "core/memory.h"

#include "core/dataset.h"

static long out_numel(const repro_layer *l) { return (long)l->out_c * l->out_h * l->out_w; }

void repro_memory_account(const repro_model *m, int zero_grad, repro_memory *out)
{
    *out = (repro_memory){0};
    int lp = m->precision != REPRO_PRECISION_FP32;
    size_t eb = lp ? 2 : 4;
    size_t cap = (size_t)m->capacity;
    out->elem_bytes = (int)eb;
    long max_w = 0, max_p = 0;
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        size_t n = (size_t)p->numel;
        out->params += 4 * n;
        out->grads += 4 * n;
        out->optimizer += (p->state2 ? 8 : 4) * n;
        if (lp)
            out->working_weights += eb * n;
        if (p->ndim == 2 && p->numel > max_w)
            max_w = p->numel;
        if (p->numel > max_p)
            max_p = p->numel;
    }
    out->activations = cap * REPRO_IMG_PIXELS * eb; /* the input batch (its cast, under lp) */
    out->workspace = (size_t)(max_w ? max_w : 1) * eb; /* linear: weights transposed */
    if (m->gscratch)
        out->workspace += 2 * (size_t)max_p * eb; /* accumulation: one layer's dw, db */
    for (int i = 0; i < m->nlayers; i++) {
        const repro_layer *l = &m->layers[i];
        size_t n = cap * (size_t)out_numel(l);
        out->activations += n * eb;
        out->activation_grads += n * eb;
        if (l->kind == REPRO_LAYER_MAXPOOL)
            out->activations += n * 4; /* int32 argmax */
        if (l->kind == REPRO_LAYER_DROPOUT)
            out->activations += n; /* uint8 mask */
        if (l->kind == REPRO_LAYER_CONV) /* fp32: algorithms accumulate in float */
            out->workspace += repro_model_conv_workspace(m, l);
    }
    out->peak = out->params + out->working_weights + out->grads + out->optimizer +
                out->activations + out->activation_grads + out->workspace;
    if (zero_grad == REPRO_ZERO_GRAD_NONE)
        out->grads_released = out->grads;
}

static void line(FILE *f, const char *indent, const char *what, size_t bytes, const char *note)
{
    fprintf(f, "%s  %-18s %10zu bytes %8.2f MiB%s%s\n", indent, what, bytes,
            (double)bytes / (1024.0 * 1024.0), note[0] ? "  " : "", note);
}

void repro_memory_print(FILE *f, const repro_memory *mem, const char *indent)
{
    int lp = mem->elem_bytes == 2;
    fprintf(f, "%smemory (peak %.2f MiB: every buffer is resident at once%s):\n", indent,
            (double)mem->peak / (1024.0 * 1024.0),
            lp ? "; reduced-precision buffers counted at 2 bytes, as a real bf16/fp16 "
                 "implementation stores them (the CPU emulation uses 4)"
               : "");
    line(f, indent, "parameters", mem->params, "fp32");
    if (lp)
        line(f, indent, "working weights", mem->working_weights, "cast copies, 2 B/elem");
    line(f, indent, "gradients", mem->grads,
         mem->grads_released ? "fp32; zero_grad = none: released between steps" : "fp32");
    line(f, indent, "optimizer state", mem->optimizer, "fp32");
    line(f, indent, "activations", mem->activations, lp ? "2 B/elem + masks, indices" : "");
    line(f, indent, "activation grads", mem->activation_grads, lp ? "2 B/elem" : "");
    line(f, indent, "workspace", mem->workspace, "");
    if (mem->grads_released)
        fprintf(f, "%s  between steps %.2f MiB resident (set_to_none frees %.2f MiB of gradients)\n",
                indent, (double)(mem->peak - mem->grads_released) / (1024.0 * 1024.0),
                (double)mem->grads_released / (1024.0 * 1024.0));
}
