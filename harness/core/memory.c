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

/* ---- the estimate from the config alone ------------------------------------ */

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* The walk over the network's layers: shapes only, as model.c builds them. */
typedef struct {
    const repro_config *cfg;
    uint64_t cap;            /* the batch: model capacity */
    int c, h, w;             /* the current per-sample shape */
    uint64_t layout_floats;  /* the arena layout, padded per parameter */
    uint64_t max_param;      /* floats of the largest parameter */
    uint64_t max_linear_ws;  /* bytes of the largest linear workspace */
    uint64_t head_in;        /* input features of the last linear layer (the head) */
    repro_memory_estimate *e;
} shape_walk;

static void add_param(shape_walk *s, uint64_t numel)
{
    uint64_t padded = sat_mul((numel + REPRO_ARENA_ALIGN - 1) / REPRO_ARENA_ALIGN,
                              REPRO_ARENA_ALIGN);
    s->layout_floats = sat_add(s->layout_floats, padded);
    if (numel > s->max_param)
        s->max_param = numel;
}

/* A layer's output buffer and its gradient (floats at capacity), plus
 * `extra_per_elem` bytes per element (argmax, mask). */
static void add_output(shape_walk *s, int extra_per_elem)
{
    uint64_t n = sat_mul(s->cap, sat_mul((uint64_t)s->c, (uint64_t)s->h * (uint64_t)s->w));
    uint64_t per = 8 + (uint64_t)extra_per_elem;
    s->e->activations = sat_add(s->e->activations, sat_mul(n, per));
}

static void add_relu_dropout(shape_walk *s)
{
    add_output(s, 0); /* relu */
    if (s->cfg->model_dropout > 0)
        add_output(s, 1); /* dropout and its uint8 mask */
}

static void add_linear(shape_walk *s, int out)
{
    uint64_t in = (uint64_t)s->c * (uint64_t)s->h * (uint64_t)s->w;
    add_param(s, sat_mul(in, (uint64_t)out));
    add_param(s, (uint64_t)out);
    uint64_t ws = repro_backend_cpu.linear_workspace_bytes(NULL, (int)s->cap, (int)in, out);
    if (ws > s->max_linear_ws)
        s->max_linear_ws = ws;
    s->head_in = in;
    s->c = out;
    s->h = s->w = 1;
    add_output(s, 0);
}

/* The largest workspace any eligible CPU algorithm needs (model.c sizes
 * the conv workspace the same way). */
static uint64_t conv_workspace(const repro_conv_shape *cs)
{
    uint64_t ws = sizeof(float);
    for (int a = 0; a < REPRO_CONV_ALGO_LIMIT; a++) {
        if (!repro_backend_cpu.conv_algo_eligible(NULL, (repro_conv_algo)a, cs))
            continue;
        uint64_t b = repro_backend_cpu.conv_workspace_bytes(NULL, (repro_conv_algo)a, cs);
        if (b > ws)
            ws = b;
    }
    return ws;
}

static void add_conv_block(shape_walk *s, int out_c)
{
    const repro_config *cfg = s->cfg;
    int r = cfg->model_kernel_size, pad = cfg->model_padding;
    repro_conv_shape cs = {(int)s->cap, s->c, s->h, s->w, out_c, r, pad};
    add_param(s, sat_mul((uint64_t)out_c * (uint64_t)s->c, (uint64_t)r * (uint64_t)r));
    add_param(s, (uint64_t)out_c);
    s->e->workspace = sat_add(s->e->workspace, conv_workspace(&cs));
    s->c = out_c;
    s->h = s->h + 2 * pad - r + 1;
    s->w = s->w + 2 * pad - r + 1;
    if (s->h < 1 || s->w < 1) /* refused by validation; never a negative size */
        s->h = s->w = 1;
    add_output(s, 0);
    add_relu_dropout(s);
    s->h = s->h / 2 > 0 ? s->h / 2 : 1;
    s->w = s->w / 2 > 0 ? s->w / 2 : 1;
    add_output(s, 4); /* maxpool and its int32 argmax */
}

/* The model: arenas, activations, workspaces (model.c's allocations). */
static void estimate_model(shape_walk *s)
{
    const repro_config *cfg = s->cfg;
    repro_memory_estimate *e = s->e;
    s->c = 1;
    s->h = REPRO_IMG_ROWS;
    s->w = REPRO_IMG_COLS;
    if (cfg->model_type == REPRO_MODEL_MLP) {
        for (int i = 0; i < cfg->model_hidden_n; i++) {
            add_linear(s, cfg->model_hidden[i]);
            add_relu_dropout(s);
        }
    } else {
        for (int i = 0; i < cfg->model_conv_channels_n; i++)
            add_conv_block(s, cfg->model_conv_channels[i]);
    }
    add_linear(s, REPRO_CLASSES);
    uint64_t arena = sat_mul(s->layout_floats, sizeof(float));
    e->params = arena;
    e->grads = arena;
    e->optimizer = sat_mul(arena, cfg->train_optimizer == REPRO_OPT_ADAMW ? 2 : 1);
    e->working_weights = cfg->train_precision != REPRO_PRECISION_FP32 ? arena : 0;
    e->activations = sat_add(e->activations, sat_mul(s->cap, REPRO_IMG_PIXELS * sizeof(float)));
    e->workspace = sat_add(e->workspace, s->max_linear_ws > 4 ? s->max_linear_ws : 4);
    if (cfg->train_precision != REPRO_PRECISION_FP32 && cfg->train_accumulation_steps > 1)
        e->workspace = sat_add(e->workspace, sat_mul(s->max_param, 2 * sizeof(float)));
}

/* The loader, the datasets, the trainer's step and eval buffers and the
 * recorder's copies (loader.c, dataset.c, train.c, train_record.c). */
static void estimate_data(shape_walk *s, uint64_t head_in)
{
    const repro_config *cfg = s->cfg;
    repro_memory_estimate *e = s->e;
    uint64_t B = s->cap, train = (uint64_t)cfg->data_train_size;
    uint64_t test = (uint64_t)cfg->data_test_size;
    uint64_t slots = cfg->data_num_workers == 0
                         ? 1
                         : (uint64_t)cfg->data_num_workers * (uint64_t)cfg->data_prefetch;
    uint64_t slot = sat_mul(B, 4 + REPRO_IMG_PIXELS * sizeof(float) + 4); /* ids, x, y */
    e->loader = sat_add(sat_mul(slots, slot), sat_mul(train, 4));
    e->dataset = sat_mul(sat_add(train, test), REPRO_IMG_PIXELS + 1);
    uint64_t features = sat_mul(REPRO_CLASSES * sizeof(float), head_in);
    uint64_t step = sat_add(sat_mul(B, 2 * REPRO_CLASSES * sizeof(float) + 4), features);
    uint64_t eval = sat_mul(B, REPRO_IMG_PIXELS * sizeof(float) + 8 +
                                   2 * REPRO_CLASSES * sizeof(float));
    /* The recorder's parity copies (two) of the batch, logits and features;
     * a device backend's recorder also keeps two host copies of every
     * parameter, gradient and optimizer state. */
    uint64_t rec = sat_mul(2, sat_add(sat_mul(B, 12 + REPRO_IMG_PIXELS * sizeof(float) +
                                                     REPRO_CLASSES * sizeof(float)),
                                      features));
    if (cfg->train_backend != REPRO_BACKEND_CPU)
        rec = sat_add(rec, sat_mul(2, sat_add(e->params, sat_add(e->grads, e->optimizer))));
    e->recorder = rec;
    e->other = sat_add(step, sat_add(eval, rec));
}

void repro_memory_estimate_config(const repro_config *cfg, repro_memory_estimate *out)
{
    *out = (repro_memory_estimate){0};
    shape_walk s = {.cfg = cfg, .e = out};
    s.cap = (uint64_t)(cfg->train_batch_size > 0 ? cfg->train_batch_size : 1);
    estimate_model(&s);
    estimate_data(&s, s.head_in);
    const uint64_t parts[] = {out->params,      out->grads,     out->optimizer,
                              out->working_weights, out->activations, out->workspace,
                              out->loader,      out->dataset,   out->other};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        out->total = sat_add(out->total, parts[i]);
}
