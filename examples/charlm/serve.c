/* charlm's inference side, under repro's parity protocol (`repro parity --
 * charlm`, docs/PROTOCOL.md): a batched serving engine over the trained
 * weights, held to the trainer's own forward bit for bit.
 *
 * REPRO_PARITY=train (after training): the weights go to the checkpoint
 * REPRO_PARITY_CHECKPOINT, and the trainer's forward (charlm_cell, one
 * probe at a time, as it trains) answers every probe of
 * REPRO_PARITY_PROBES: probe i's logits at each of its positions go to
 * REPRO_PARITY_OUT/probe-<i>.npy (positions x 27, float32) and into the
 * trace as train.<i>.
 * REPRO_PARITY=infer: the weights come from the checkpoint file; the
 * probes are served in batches of REPRO_BATCH_SIZE, the way a server
 * batches requests: every position a matrix product over the batch's
 * rows (weights outer, rows inner). Each output element still starts from
 * its bias and adds its terms in index order, so the batch never changes
 * a bit. `--set splitk=1` (REPRO_SET_SPLITK) is the negative control: the
 * recurrent sum split into partial sums by batch size (4 below 8 rows, 2
 * below 32), as a BLAS picks a split-K for skinny problems. Outputs as
 * infer.<i> in the trace and the same .npy files. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <repro/digest.h>

#include "charlm.h"

enum { MAXLEN = 64, MAXPROBES = 4096, BATCH_MAX = 4096 };

typedef struct {
    unsigned char c[MAXLEN]; /* characters: 0 space, 1..26 a..z */
    int len;
} probe;

/* Bad input (a probe, the checkpoint, a setting): exit 2, as repro's. */
static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("charlm: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static const char *env_or_bad(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        bad("%s: not set (the parity protocol gives it)", name);
    return v;
}

/* ---- probes: one per line, '#' comments, a..z and spaces --------------- */

static int parse_line(const char *path, long lineno, char *line, probe *out)
{
    size_t n = strcspn(line, "\r\n");
    while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    size_t s = strspn(line, " \t");
    if (s >= n || line[s] == '#')
        return 0;
    if (n - s > MAXLEN)
        bad("%s:%ld: a probe longer than %d characters", path, lineno, MAXLEN);
    for (size_t i = s; i < n; i++) {
        char ch = line[i];
        if (ch != ' ' && (ch < 'a' || ch > 'z'))
            bad("%s:%ld: '%c': a probe is lowercase letters a-z and spaces", path, lineno, ch);
        out->c[i - s] = ch == ' ' ? 0 : (unsigned char)(ch - 'a' + 1);
    }
    out->len = (int)(n - s);
    return 1;
}

static probe *read_probes(const char *path, int *n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        bad("%s: cannot open the probes file", path);
    probe *ps = calloc(MAXPROBES, sizeof *ps);
    char line[512];
    long lineno = 0;
    *n = 0;
    while (ps && fgets(line, sizeof line, f)) {
        lineno++;
        if (*n == MAXPROBES)
            bad("%s:%ld: more than %d probes", path, lineno, MAXPROBES);
        *n += parse_line(path, lineno, line, &ps[*n]);
    }
    fclose(f);
    if (!ps || *n == 0)
        bad("%s:%ld: %s", path, lineno, ps ? "no probes" : "out of memory");
    return ps;
}

/* ---- the checkpoint: magic, size, the weights, their SHA-256 ------------ */

static void save_checkpoint(const char *path, const params *p)
{
    repro_digest d;
    uint32_t size = sizeof *p;
    FILE *f = fopen(path, "wb");
    if (!f || repro_sha256(p, sizeof *p, &d) || fwrite("CHARLMCK", 1, 8, f) != 8 ||
        fwrite(&size, sizeof size, 1, f) != 1 || fwrite(p, sizeof *p, 1, f) != 1 ||
        fwrite(d.b, sizeof d.b, 1, f) != 1 || fclose(f)) {
        fprintf(stderr, "charlm: cannot write the checkpoint %s\n", path);
        exit(3);
    }
}

static void load_checkpoint(const char *path, params *p)
{
    char magic[8];
    uint32_t size;
    repro_digest want, got;
    FILE *f = fopen(path, "rb");
    if (!f)
        bad("checkpoint %s: no such file", path);
    int ok = fread(magic, 1, 8, f) == 8 && !memcmp(magic, "CHARLMCK", 8) &&
             fread(&size, sizeof size, 1, f) == 1 && size == sizeof *p &&
             fread(p, sizeof *p, 1, f) == 1 && fread(want.b, sizeof want.b, 1, f) == 1 &&
             !repro_sha256(p, sizeof *p, &got) && repro_digest_eq(&want, &got);
    fclose(f);
    if (!ok)
        bad("checkpoint %s: not a charlm checkpoint, or corrupted", path);
}

/* ---- outputs ------------------------------------------------------------- */

static void write_npy(const char *path, const float *data, int rows)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, V);
    while ((10 + n + 1) % 64)
        head[n++] = ' ';
    head[n++] = '\n';
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff),
                             (unsigned char)(n >> 8)};
    FILE *f = fopen(path, "wb");
    size_t count = (size_t)rows * V;
    if (!f || fwrite(pre, 1, 10, f) != 10 || fwrite(head, 1, (size_t)n, f) != (size_t)n ||
        fwrite(data, sizeof(float), count, f) != count || fclose(f)) {
        fprintf(stderr, "charlm: cannot write %s\n", path);
        exit(3);
    }
}

/* Probe i's logits: to the .npy file and into the trace as <side>.<i>. */
static void emit(repro_recorder *r, const char *side, int i, const float *logits, int rows)
{
    char path[4200], name[64];
    snprintf(path, sizeof path, "%s/probe-%d.npy", env_or_bad("REPRO_PARITY_OUT"), i);
    write_npy(path, logits, rows);
    snprintf(name, sizeof name, "%s.%d", side, i);
    int64_t shape[2] = {rows, V};
    if (repro_recorder_tensor(r, name, REPRO_F32, 2, shape, logits))
        die("recording a probe's output");
}

/* ---- the trainer's side ---------------------------------------------------- */

void charlm_parity_after_training(repro_recorder *r, const params *p)
{
    const char *mode = getenv("REPRO_PARITY");
    if (!mode || strcmp(mode, "train"))
        return;
    int n;
    probe *ps = read_probes(env_or_bad("REPRO_PARITY_PROBES"), &n);
    save_checkpoint(env_or_bad("REPRO_PARITY_CHECKPOINT"), p);
    static float h[MAXLEN + 1][H], logits[MAXLEN][V];
    for (int i = 0; i < n; i++) {
        memset(h[0], 0, sizeof h[0]);
        for (int t = 0; t < ps[i].len; t++)
            charlm_cell(p, ps[i].c[t], h[t], h[t + 1], logits[t]);
        emit(r, "train", i, &logits[0][0], ps[i].len);
    }
    free(ps);
}

/* ---- the inference engine ---------------------------------------------------- */

/* The pre-activation of hidden unit j for every row of the batch: bias,
 * then the input terms, then the recurrent ones, in index order; or, as
 * the negative control, the recurrent sum in `split` partial sums. */
static void hidden_rows(const params *p, const probe *ps, int B, int t, float (*hs)[H],
                        float (*out)[H], int split)
{
    for (int j = 0; j < H; j++)
        for (int b = 0; b < B; b++) {
            if (t >= ps[b].len)
                continue;
            const float *e = &p->E[ps[b].c[t] * D];
            float a = p->b[j];
            for (int k = 0; k < D; k++)
                a += p->Wx[j * D + k] * e[k];
            if (split == 1)
                for (int k = 0; k < H; k++)
                    a += p->Wh[j * H + k] * hs[b][k];
            else
                for (int c = 0; c < split; c++) {
                    float s = 0;
                    for (int k = c * H / split; k < (c + 1) * H / split; k++)
                        s += p->Wh[j * H + k] * hs[b][k];
                    a += s;
                }
            out[b][j] = a;
        }
}

/* One batch of B probes: every position for every row still running. */
static void serve_batch(const params *p, const probe *ps, int B, int splitk, float **logits)
{
    static float hs[BATCH_MAX][H], pre[BATCH_MAX][H];
    int split = !splitk ? 1 : B < 8 ? 4 : B < 32 ? 2 : 1, maxlen = 0;
    for (int b = 0; b < B; b++)
        maxlen = ps[b].len > maxlen ? ps[b].len : maxlen;
    memset(hs, 0, sizeof hs);
    for (int t = 0; t < maxlen; t++) {
        hidden_rows(p, ps, B, t, hs, pre, split);
        for (int b = 0; b < B; b++) {
            if (t >= ps[b].len)
                continue;
            for (int j = 0; j < H; j++)
                hs[b][j] = tanhf(pre[b][j]);
            for (int v = 0; v < V; v++) {
                float a = p->bo[v];
                for (int k = 0; k < H; k++)
                    a += p->Wo[v * H + k] * hs[b][k];
                logits[b][t * V + v] = a;
            }
        }
    }
}

static void serve(void)
{
    repro_run_env env;
    if (repro_run_env_read(&env, 1234))
        die("reading the REPRO_* environment");
    int B = env.batch_size, n;
    if (B < 1 || B > BATCH_MAX)
        bad("REPRO_BATCH_SIZE=%d: the inference batch is 1..%d", B, BATCH_MAX);
    const char *sk = repro_run_env_setting("splitk");
    int splitk = sk && !strcmp(sk, "1");
    static params p;
    load_checkpoint(env_or_bad("REPRO_PARITY_CHECKPOINT"), &p);
    probe *ps = read_probes(env_or_bad("REPRO_PARITY_PROBES"), &n);
    repro_recorder_options o;
    repro_recorder_options_init(&o);
    repro_recorder_options_from_env(&o, &env);
    o.total_steps = 1; /* its one step keeps every tensor's detail */
    repro_run_info info = {"charlm-infer", env.seed, "{\"mode\": \"infer\"}"};
    repro_recorder *r;
    if (repro_recorder_open_ex(&r, NULL, &info, &o))
        die("opening the trace");
    float **logits = calloc((size_t)B, sizeof *logits);
    for (int b = 0; logits && b < B; b++)
        if (!(logits[b] = malloc(MAXLEN * V * sizeof(float))))
            logits = NULL;
    if (!logits)
        bad("out of memory");
    for (int first = 0; first < n; first += B) {
        int nb = n - first < B ? n - first : B;
        serve_batch(&p, ps + first, nb, splitk, logits);
        for (int b = 0; b < nb; b++)
            emit(r, "infer", first + b, logits[b], ps[first + b].len);
    }
    if (repro_recorder_step(r, 1, 0.0) || repro_recorder_close(r, NULL))
        die("closing the trace");
    printf("charlm: served %d probes in batches of %d\n", n, B);
    exit(0);
}

void charlm_parity_serve_if_asked(void)
{
    const char *mode = getenv("REPRO_PARITY");
    if (mode && !strcmp(mode, "infer"))
        serve();
    if (mode && strcmp(mode, "train"))
        bad("REPRO_PARITY=%s: expected train or infer", mode);
}
