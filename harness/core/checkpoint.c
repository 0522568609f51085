/* Saving and restoring a trainer's complete state (format: checkpoint.h). */
#include "core/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"
#include "record/trace.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint.c writes raw little-endian words; add byte swapping for this host"
#endif

static const char MAGIC[8] = {'R', 'E', 'P', 'R', 'O', 'C', 'K', 'P'};

/* ---- writing: an in-memory buffer, hashed, then one atomic file write ---- */

typedef struct {
    unsigned char *p;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const void *data, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_i32(buf *b, int32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void put_i64(buf *b, int64_t v) { put(b, &v, 8); }
static void put_f64(buf *b, double v) { put(b, &v, 8); }

static void put_str(buf *b, const char *s, size_t n)
{
    put_u32(b, (uint32_t)n);
    put(b, s, n);
}

/* Opens a section; returns the offset of its length field. */
static size_t begin_section(buf *b, const char *tag)
{
    put(b, tag, 4);
    size_t at = b->len;
    put_u64(b, 0);
    return at;
}

static void end_section(buf *b, size_t at)
{
    if (b->oom)
        return;
    uint64_t n = b->len - at - 8;
    memcpy(b->p + at, &n, 8);
}

/* The effective config as INI text (malloc'd). */
static char *config_text(const repro_config *cfg, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        return NULL;
    repro_config_dump(cfg, f);
    fclose(f);
    return text;
}

/* PATH.<pid>.tmp: the writer's pid in the name says whether a temporary
 * left in the directory is being written or was abandoned (its writer was
 * killed): repro_checkpoint_clean_temps removes only the abandoned. */
static int write_atomic(const char *path, const void *data, size_t n)
{
    char tmp[1200], dir[1200];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return repro_error_set(REPRO_EINVAL, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot create checkpoint", tmp);
    const unsigned char *p = data;
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            errno = e;
            return repro_error_set_errno(REPRO_EIO, "%s: write failed", tmp);
        }
        p += w;
        left -= (size_t)w;
    }
    /* Data on disk before the name points at it: a crash leaves the old
     * checkpoint or the new one, never a torn file under PATH. */
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return repro_error_set_errno(REPRO_EIO, "%s: fsync failed", tmp);
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return repro_error_set_errno(REPRO_EIO, "%s: cannot rename to %s", tmp, path);
    }
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (dir[0] == '\0')
        snprintf(dir, sizeof dir, "/");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) { /* the rename itself durable */
        int rc = fsync(dfd);
        close(dfd);
        if (rc != 0)
            return repro_error_set_errno(REPRO_EIO, "%s: fsync of the directory failed",
                                         dir);
    }
    return 0;
}

/* ---- abandoned temporaries ------------------------------------------------ */

/* Digits from s up to `end` (exclusive), at least one, as a number; -1
 * when anything else is there or it is too long to be a pid or a step. */
static long digits(const char *s, const char *end)
{
    if (end <= s || end - s > 18)
        return -1;
    long v = 0;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* Is `name` a checkpoint temporary, "ckpt-<N>.bin.<PID>.tmp" (pid > 0 in
 * *pid) or the pid-less "ckpt-<N>.bin.tmp" of older repros (*pid = 0)? */
static int temp_name(const char *name, long *pid)
{
    size_t n = strlen(name);
    if (strncmp(name, "ckpt-", 5) || n < 14 || strcmp(name + n - 4, ".tmp"))
        return 0;
    const char *bin = strstr(name + 5, ".bin.");
    if (!bin || digits(name + 5, bin) < 0)
        return 0;
    const char *p = bin + 5, *end = name + n - 4;
    if (p == end + 1) { /* ckpt-N.bin.tmp: ".bin" runs into ".tmp" */
        *pid = 0;
        return 1;
    }
    *pid = digits(p, end);
    return *pid > 0;
}

/* Is the writer gone? A pid that answers (even a stranger's, EPERM) may
 * still be writing: its file is left alone. */
static int writer_gone(long pid)
{
    if (pid == (long)getpid()) /* our own pid, recycled: we write nothing yet */
        return 1;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int repro_checkpoint_clean_temps(const char *dir, int *removed)
{
    *removed = 0;
    DIR *d = opendir(dir);
    if (!d)
        return repro_error_set_errno(REPRO_EIO, "%s: cannot list checkpoints", dir);
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        if (!temp_name(e->d_name, &pid))
            continue;
        char p[2400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        int stale = pid > 0 ? writer_gone(pid)
                            : now - st.st_mtime > REPRO_CHECKPOINT_TEMP_AGE_S;
        if (stale && unlink(p) == 0)
            (*removed)++;
    }
    closedir(d);
    return 0;
}

/* META OPTM SCAL LOAD CHAN (checkpoint.h), chain as given. */
static void put_fixed_sections(buf *b, const repro_trainer *t, const repro_digest *numerics,
                               const char *ctext, size_t clen, const repro_checkpoint_info *ci)
{
    size_t s = begin_section(b, "META");
    put_str(b, t->cfg.name, strlen(t->cfg.name));
    put(b, numerics->b, sizeof numerics->b);
    put_str(b, ctext, clen);
    put_i64(b, t->step);
    end_section(b, s);

    s = begin_section(b, "OPTM");
    put_u32(b, (uint32_t)t->cfg.train_optimizer);
    put_f64(b, t->beta1_pow);
    put_f64(b, t->beta2_pow);
    end_section(b, s);

    /* Updates applied (sgd's first step and adamw's bias correction count
     * them: fp16 skips some) and the fp16 loss scaler's dynamic state. */
    s = begin_section(b, "SCAL");
    put_i64(b, t->updates);
    put(b, &t->scaler.scale, 4);
    put_i32(b, t->scaler.growth_tracker);
    put_i32(b, t->scaler.last_skipped);
    put(b, &t->scaler.last_scale, 4);
    put_i64(b, t->scaler.skipped_total);
    end_section(b, s);

    repro_loader_position pos;
    repro_loader_get_position(t->loader, &pos);
    int n = repro_loader_dataset_size(t->loader);
    s = begin_section(b, "LOAD");
    put_u64(b, pos.gen_key);
    put_u64(b, pos.gen_block);
    put_i32(b, pos.gen_used);
    put_i32(b, pos.epoch);
    put_u64(b, pos.base_seed);
    put_i64(b, pos.index);
    put_i32(b, pos.next_in_epoch);
    put_i32(b, t->cfg.data_num_workers);
    put_i32(b, t->cfg.data_augment_seed);
    put_u32(b, (uint32_t)n);
    put(b, repro_loader_permutation(t->loader), sizeof(uint32_t) * (size_t)n);
    end_section(b, s);

    s = begin_section(b, "CHAN");
    put_i64(b, ci->chain_steps);
    put(b, ci->chain.b, sizeof ci->chain.b);
    end_section(b, s);
}

/* The host bytes of arena k: the arena itself on a host-memory backend,
 * else one download into *owned (freed by the caller). NULL: out of memory. */
static const float *host_arena(const repro_model *m, repro_arena_kind k, float **owned)
{
    size_t bytes;
    void *a = repro_model_arena(m, k, &bytes);
    *owned = NULL;
    if (m->be->host_memory)
        return a;
    if (!(*owned = malloc(bytes ? bytes : 1)))
        return NULL;
    if (bytes)
        m->be->copy_d2h(m->be_ctx, *owned, a, bytes);
    return *owned;
}

/* One PARM per parameter, from the parameter and optimizer arenas (one
 * transfer each). Returns 0 or -1 (out of memory). */
static int put_params(buf *b, const repro_model *m, int adam)
{
    float *own_p, *own_o;
    const float *data = host_arena(m, REPRO_ARENA_PARAMS, &own_p);
    const float *opt = host_arena(m, REPRO_ARENA_OPTIMIZER, &own_o);
    int rc = data && opt ? 0 : -1;
    for (int i = 0; rc == 0 && i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        size_t s = begin_section(b, "PARM");
        put_str(b, p->name, strlen(p->name));
        put_u32(b, (uint32_t)p->ndim);
        for (int d = 0; d < p->ndim; d++)
            put_u32(b, (uint32_t)p->shape[d]);
        size_t bytes = sizeof(float) * (size_t)p->numel;
        put(b, data + p->offset, bytes);
        put(b, opt + p->offset, bytes);
        if (adam)
            put(b, opt + m->layout_floats + p->offset, bytes);
        end_section(b, s);
    }
    free(own_p);
    free(own_o);
    return rc;
}

int repro_checkpoint_save(const repro_trainer *t, const char *path)
{
    repro_checkpoint_info ci = {t->step, -1, {{0}}};
    if (t->observer.ops) {
        /* The chain must cover exactly the steps the state reflects. */
        ci.chain_steps = t->observer.ops->chain(t->observer.ctx, &ci.chain);
        if (ci.chain_steps < 0)
            return -1;
    }
    repro_digest all, numerics;
    if (repro_config_digests(&t->cfg, &all, &numerics))
        return -1;
    size_t clen = 0;
    char *ctext = config_text(&t->cfg, &clen);
    if (!ctext)
        return repro_error_set(REPRO_ENOMEM, "out of memory");

    buf b = {0};
    put(&b, MAGIC, 8);
    put_u32(&b, REPRO_CHECKPOINT_VERSION);
    put_fixed_sections(&b, t, &numerics, ctext, clen, &ci);
    free(ctext);
    if (put_params(&b, &t->model, t->cfg.train_optimizer == REPRO_OPT_ADAMW))
        b.oom = 1;
    size_t s = begin_section(&b, "END_");
    end_section(&b, s);

    repro_digest sum;
    if (b.oom) {
        free(b.p);
        return repro_error_set(REPRO_ENOMEM, "out of memory writing a checkpoint");
    }
    if (repro_sha256(b.p, b.len, &sum)) {
        free(b.p);
        return -1;
    }
    put(&b, sum.b, sizeof sum.b);
    int rc = b.oom ? repro_error_set(REPRO_ENOMEM, "out of memory writing a checkpoint")
                   : write_atomic(path, b.p, b.len);
    free(b.p);
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

typedef struct {
    const unsigned char *p;
    size_t len, at;
    int bad; /* read past the end of the section */
} rd;

static int get(rd *r, void *out, size_t n)
{
    if (r->bad || n > r->len - r->at) {
        r->bad = 1;
        memset(out, 0, n);
        return -1;
    }
    memcpy(out, r->p + r->at, n);
    r->at += n;
    return 0;
}

static uint32_t get_u32(rd *r) { uint32_t v; get(r, &v, 4); return v; }
static int32_t get_i32(rd *r) { int32_t v; get(r, &v, 4); return v; }
static uint64_t get_u64(rd *r) { uint64_t v; get(r, &v, 8); return v; }
static int64_t get_i64(rd *r) { int64_t v; get(r, &v, 8); return v; }
static double get_f64(rd *r) { double v; get(r, &v, 8); return v; }

/* A length-prefixed string, as a pointer into the file. */
static const char *get_str(rd *r, uint32_t *n)
{
    *n = get_u32(r);
    if (r->bad || *n > r->len - r->at) {
        r->bad = 1;
        *n = 0;
        return "";
    }
    const char *s = (const char *)r->p + r->at;
    r->at += *n;
    return s;
}

/* Reads the whole file. */
static int slurp(const char *path, unsigned char **out, size_t *len)
{
    FILE *f = repro_fopen_regular(path, "checkpoint");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    unsigned char *p = malloc(cap);
    size_t got;
    while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *q = realloc(p, cap * 2);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!p)
        return repro_error_set(REPRO_ENOMEM, "%s: out of memory", path);
    if (err) {
        free(p);
        return repro_error_set(REPRO_EINVAL, "%s: read error", path);
    }
    *out = p;
    *len = n;
    return 0;
}

/* "train.lr 0.05 (checkpoint) vs 0.1 (this run)" for up to three keys whose
 * dump lines differ; both dumps list every key in table order. */
static void config_differences(const char *saved, size_t slen, const char *now, char *out,
                               size_t outlen)
{
    out[0] = '\0';
    size_t used = 0;
    int shown = 0, more = 0;
    char sec[64] = "";
    const char *a = saved, *aend = saved + slen, *b = now;
    while (a < aend && *b) {
        const char *ae = memchr(a, '\n', (size_t)(aend - a));
        const char *be = strchr(b, '\n');
        if (!ae)
            ae = aend;
        if (!be)
            be = b + strlen(b);
        size_t al = (size_t)(ae - a), bl = (size_t)(be - b);
        if (al > 1 && a[0] == '[' && a[al - 1] == ']')
            snprintf(sec, sizeof sec, "%.*s", (int)(al - 2), a + 1);
        else if (al != bl || memcmp(a, b, al) != 0) {
            const char *eqa = memchr(a, '=', al), *eqb = memchr(b, '=', bl);
            int klen = eqa ? (int)(eqa - a) : 0;
            while (klen > 0 && a[klen - 1] == ' ')
                klen--;
            char key[160];
            snprintf(key, sizeof key, "%s.%.*s", sec, klen, a);
            int k = repro_config_find_key(key);
            if (k >= 0 && repro_config_key_bits_neutral(k)) {
                /* steps, threads, ...: may differ on resume */
            } else if (shown == 3) {
                more++;
            } else if (eqa && eqb) {
                const char *va = eqa + 1, *vb = eqb + 1;
                while (va < ae && *va == ' ')
                    va++;
                while (vb < be && *vb == ' ')
                    vb++;
                int w = snprintf(out + used, outlen - used, "%s%s.%.*s %.*s (checkpoint) vs %.*s",
                                 shown ? ", " : "", sec, klen, a, (int)(ae - va), va,
                                 (int)(be - vb), vb);
                if (w < 0 || (size_t)w >= outlen - used)
                    return;
                used += (size_t)w;
                shown++;
            }
        }
        a = ae < aend ? ae + 1 : aend;
        b = *be ? be + 1 : be;
    }
    if (more)
        snprintf(out + used, outlen - used, " and %d more", more);
}

/* ---- parse and validate: every section into `parsed`, nothing applied ---- */

/* What a checkpoint restores, read and validated against the trainer. */
typedef struct {
    repro_trainer *t;
    const char *path;
    long step;
    double b1, b2;
    long updates, skipped;
    float scale, last_scale;
    int tracker, last_skipped;
    repro_loader_position pos;
    const unsigned char *perm; /* n u32s inside the file buffer (unaligned) */
    uint32_t n;
    repro_checkpoint_info info;
    const unsigned char *parm[REPRO_MAX_PARAMS]; /* each PARM's data, state1, state2 */
    int nparam;
} parsed;

/* A section parser's verdict: 0 fine, -1 refused (error slot set), or
 * MALFORMED (reported as a corrupted checkpoint). */
enum { MALFORMED = 1 };

static int meta_config_mismatch(parsed *s, const repro_digest *dig, const repro_digest *mine,
                                const char *ctext, uint32_t clen)
{
    size_t nl = 0;
    char *now = config_text(&s->t->cfg, &nl), keys[600] = "";
    if (now)
        config_differences(ctext, clen, now, keys, sizeof keys);
    free(now);
    char ha[65], hb[65];
    repro_digest_hex(dig, ha);
    repro_digest_hex(mine, hb);
    ha[12] = hb[12] = '\0';
    return repro_error_set(REPRO_EINVAL,
                           "%s: checkpoint written under another config (numerics "
                           "digest %s vs %s)%s%s: resume with the config it was "
                           "saved under",
                           s->path, ha, hb, keys[0] ? ": " : "", keys);
}

/* The world size the checkpoint was saved under (its config's `ranks =`
 * line; 1 when it has none: saved before data parallelism). ranks is
 * bits-neutral under allreduce = ordered, so another world size resumes
 * exactly; a ring reduce's bits, and worker-keyed augmentation streams,
 * depend on it, so those are refused. */
static int check_world_size(parsed *s, const char *ctext, uint32_t clen)
{
    const repro_config *cfg = &s->t->cfg;
    int saved = 1;
    for (const char *p = ctext, *end = ctext + clen; p && p < end;) {
        if ((size_t)(end - p) > 8 && !strncmp(p, "ranks = ", 8))
            saved = atoi(p + 8);
        p = memchr(p, '\n', (size_t)(end - p));
        p = p ? p + 1 : NULL;
    }
    if (saved == cfg->train_ranks)
        return 0;
    int augment = cfg->data_shift > 0 || cfg->data_flip || cfg->data_noise > 0;
    const char *why =
        augment && cfg->data_augment_seed == 1 /* worker */
            ? "augment_seed = worker, whose streams are per rank and worker (augment_seed = "
              "sample does not depend on them)"
        : cfg->variant_allreduce == 1 /* ring (core/dist.h) */
            ? "allreduce = ring, whose sums depend on the world size (allreduce = ordered does "
              "not)"
            : NULL;
    if (why)
        return repro_error_set(REPRO_EINVAL,
                               "%s: checkpoint saved with ranks = %d under %s; this run has "
                               "ranks = %d: resume with %d ranks",
                               s->path, saved, why, cfg->train_ranks, saved);
    return 0;
}

static int parse_meta(parsed *s, rd *r)
{
    const repro_config *cfg = &s->t->cfg;
    uint32_t nlen, clen;
    const char *name = get_str(r, &nlen);
    repro_digest dig, mine, all;
    get(r, dig.b, sizeof dig.b);
    const char *ctext = get_str(r, &clen);
    s->step = (long)get_i64(r);
    if (r->bad)
        return MALFORMED;
    if (strlen(cfg->name) != nlen || memcmp(name, cfg->name, nlen) != 0)
        return repro_error_set(REPRO_EINVAL, "%s: checkpoint of experiment '%.*s', not '%s'",
                               s->path, (int)nlen, name, cfg->name);
    if (repro_config_digests(cfg, &all, &mine))
        return -1;
    if (!repro_digest_eq(&dig, &mine))
        return meta_config_mismatch(s, &dig, &mine, ctext, clen);
    if (check_world_size(s, ctext, clen))
        return -1;
    return s->step < 0 ? MALFORMED : 0;
}

static int parse_optm(parsed *s, rd *r)
{
    uint32_t opt = get_u32(r);
    s->b1 = get_f64(r);
    s->b2 = get_f64(r);
    if (r->bad)
        return MALFORMED;
    if (opt != (uint32_t)s->t->cfg.train_optimizer)
        return repro_error_set(REPRO_EINVAL, "%s: checkpoint of another optimizer", s->path);
    return 0;
}

static int parse_scal(parsed *s, rd *r)
{
    s->updates = (long)get_i64(r);
    get(r, &s->scale, 4);
    s->tracker = get_i32(r);
    s->last_skipped = get_i32(r);
    get(r, &s->last_scale, 4);
    s->skipped = (long)get_i64(r);
    return r->bad || s->updates < 0 || s->updates > s->step || r->at != r->len ? MALFORMED : 0;
}

static int parse_load(parsed *s, rd *r)
{
    const repro_config *cfg = &s->t->cfg;
    repro_loader_position *pos = &s->pos;
    pos->gen_key = get_u64(r);
    pos->gen_block = get_u64(r);
    pos->gen_used = get_i32(r);
    pos->epoch = get_i32(r);
    pos->base_seed = get_u64(r);
    pos->index = (long)get_i64(r);
    pos->next_in_epoch = get_i32(r);
    int workers = get_i32(r), aseed = get_i32(r);
    s->n = get_u32(r);
    if (r->bad || s->n != (uint32_t)repro_loader_dataset_size(s->t->loader) ||
        (size_t)s->n * 4 != r->len - r->at)
        return MALFORMED;
    s->perm = r->p + r->at;
    int augment = cfg->data_shift > 0 || cfg->data_flip || cfg->data_noise > 0;
    /* The one bits-neutral key that is not neutral here: worker RNG
     * positions are replayed per worker (loader.h). */
    if (aseed != cfg->data_augment_seed ||
        (augment && aseed == 1 && pos->next_in_epoch > 0 && workers != cfg->data_num_workers &&
         !(workers <= 1 && cfg->data_num_workers <= 1)))
        return repro_error_set(REPRO_EINVAL,
                               "%s: checkpoint saved with num_workers = %d mid-epoch under "
                               "augment_seed = worker; this run has %d, which would "
                               "change the augmentation streams: resume with %d",
                               s->path, workers, cfg->data_num_workers, workers);
    return pos->index != s->step && s->step >= 0 && pos->index < s->step ? MALFORMED : 0;
}

static int parse_chan(parsed *s, rd *r)
{
    long cs = (long)get_i64(r);
    repro_digest c;
    get(r, c.b, sizeof c.b);
    if (r->bad || (cs != -1 && cs != s->step))
        return MALFORMED;
    s->info.step = s->step;
    s->info.chain_steps = cs;
    s->info.chain = c;
    return 0;
}

static int parse_parm(parsed *s, rd *r)
{
    const repro_model *m = &s->t->model;
    int adam = s->t->cfg.train_optimizer == REPRO_OPT_ADAMW;
    if (s->nparam >= m->nparams)
        return repro_error_set(REPRO_EINVAL,
                               "%s: checkpoint has more parameters than this model (%d)", s->path,
                               m->nparams);
    const repro_param *p = &m->params[s->nparam];
    uint32_t nl;
    const char *name = get_str(r, &nl);
    uint32_t ndim = get_u32(r);
    int fits = !r->bad && nl == strlen(p->name) && !memcmp(name, p->name, nl) &&
               ndim == (uint32_t)p->ndim;
    for (uint32_t d = 0; fits && d < ndim; d++)
        fits = get_u32(r) == (uint32_t)p->shape[d] && !r->bad;
    size_t bytes = sizeof(float) * (size_t)p->numel;
    if (!fits || r->len - r->at != bytes * (adam ? 3 : 2))
        return repro_error_set(REPRO_EINVAL,
                               "%s: checkpoint parameter %d ('%.*s') does not match this "
                               "model's %s",
                               s->path, s->nparam, (int)nl, name, p->name);
    s->parm[s->nparam++] = r->p + r->at;
    return 0;
}

/* The sections: the fixed ones in their order, then PARM per parameter,
 * then END_ (no parser). */
enum { NFIXED = 5 };
static const struct {
    char tag[5];
    int (*parse)(parsed *s, rd *r);
} sections[] = {
    {"META", parse_meta}, {"OPTM", parse_optm}, {"SCAL", parse_scal}, {"LOAD", parse_load},
    {"CHAN", parse_chan}, {"PARM", parse_parm}, {"END_", NULL},
};

/* The next section's tag and payload. Returns 0, or -1 (error slot set). */
static int next_section(rd *file, const char *path, char tag[5], rd *r)
{
    if (get(file, tag, 4))
        return repro_error_set(REPRO_EINVAL, "%s: corrupted checkpoint (no END section)", path);
    uint64_t slen = get_u64(file);
    if (file->bad || slen > file->len - file->at)
        return repro_error_set(REPRO_EINVAL,
                               "%s: corrupted checkpoint (section %s runs past the end)", path,
                               tag);
    *r = (rd){file->p + file->at, (size_t)slen, 0, 0};
    file->at += (size_t)slen;
    return 0;
}

/* One pass over the sections of data[0..len) (the file without its
 * SHA-256), parsing and validating each against s->t. */
static int parse(parsed *s, const unsigned char *data, size_t len)
{
    rd file = {data, len, 12, 0};
    int next_fixed = 0, ended = 0, rc = 0; /* next_fixed: the next fixed section expected */
    while (!ended && rc == 0) {
        char tag[5] = {0};
        rd r;
        if (next_section(&file, s->path, tag, &r))
            return -1;
        if (next_fixed < NFIXED && strncmp(tag, sections[next_fixed].tag, 4) != 0)
            return repro_error_set(REPRO_EINVAL,
                                   "%s: corrupted checkpoint (section %s where %.4s belongs)",
                                   s->path, tag, sections[next_fixed].tag);
        int k = 0, nsec = (int)(sizeof sections / sizeof sections[0]);
        while (k < nsec && strcmp(tag, sections[k].tag) != 0)
            k++;
        if (k == nsec)
            return repro_error_set(REPRO_EINVAL, "%s: unknown checkpoint section '%s'", s->path,
                                   tag);
        next_fixed += k < NFIXED;
        ended = !sections[k].parse;
        if (!ended && (rc = sections[k].parse(s, &r)) < 0)
            return -1;
        if (r.bad)
            rc = MALFORMED;
    }
    const repro_model *m = &s->t->model;
    if (!ended)
        return repro_error_set(REPRO_EINVAL, "%s: corrupted checkpoint (malformed section)",
                               s->path);
    if (next_fixed < NFIXED || s->nparam != m->nparams)
        return repro_error_set(REPRO_EINVAL,
                               "%s: checkpoint has %d of this model's %d parameters", s->path,
                               s->nparam, m->nparams);
    if (file.at != len)
        return repro_error_set(REPRO_EINVAL, "%s: corrupted checkpoint (bytes after END)",
                               s->path);
    return 0;
}

/* ---- apply: only after a clean parse ------------------------------------- */

/* The loader first: the one step that can still fail (trainer unchanged). */
static int apply_loader(const parsed *s)
{
    /* perm is inside the file buffer: copy to aligned storage. */
    uint32_t *p = malloc(sizeof(uint32_t) * (s->n ? s->n : 1));
    if (!p)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    memcpy(p, s->perm, sizeof(uint32_t) * s->n);
    int rc = repro_loader_restore(s->t->loader, &s->pos, p);
    free(p);
    if (rc) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", repro_error_message());
        return repro_error_set(REPRO_EINVAL, "%s: %s", s->path, msg);
    }
    return 0;
}

/* Parameters and optimizer state, uploaded into the model's arenas. */
static void apply_params(const parsed *s)
{
    const repro_model *m = &s->t->model;
    int adam = s->t->cfg.train_optimizer == REPRO_OPT_ADAMW;
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        size_t bytes = sizeof(float) * (size_t)p->numel;
        m->be->copy_h2d(m->be_ctx, p->data, s->parm[i], bytes);
        m->be->copy_h2d(m->be_ctx, p->state1, s->parm[i] + bytes, bytes);
        if (adam)
            m->be->copy_h2d(m->be_ctx, p->state2, s->parm[i] + 2 * bytes, bytes);
    }
}

static int apply(const parsed *s, repro_checkpoint_info *info)
{
    repro_trainer *t = s->t;
    if (apply_loader(s))
        return -1;
    if (info)
        *info = s->info;
    apply_params(s);
    t->step = s->step;
    t->beta1_pow = s->b1;
    t->beta2_pow = s->b2;
    t->updates = s->updates;
    t->scaler.scale = s->scale;
    t->scaler.growth_tracker = s->tracker;
    t->scaler.last_skipped = s->last_skipped;
    t->scaler.last_scale = s->last_scale;
    t->scaler.skipped_total = s->skipped;
    return 0;
}

int repro_checkpoint_load(repro_trainer *t, const char *path, repro_checkpoint_info *info)
{
    if (t->step != 0 || t->observer.ops)
        return repro_error_set(REPRO_EINVAL,
                               "%s: a checkpoint is restored into a fresh trainer", path);
    unsigned char *data = NULL;
    size_t len = 0;
    if (slurp(path, &data, &len))
        return -1;
    int rc = -1;
    if (len < 12 || memcmp(data, MAGIC, 8) != 0) {
        repro_error_set(REPRO_EINVAL, "%s: not a repro checkpoint (no REPROCKP magic)", path);
        goto done;
    }
    uint32_t version;
    memcpy(&version, data + 8, 4);
    if (version != REPRO_CHECKPOINT_VERSION) {
        repro_error_set(REPRO_EINVAL,
                        "%s: checkpoint format version %u (this repro reads version %d)", path,
                        version, REPRO_CHECKPOINT_VERSION);
        goto done;
    }
    repro_digest want;
    if (len < 12 + 32 || repro_sha256(data, len - 32, &want)) {
        repro_error_set(REPRO_EINVAL, "%s: corrupted checkpoint (truncated)", path);
        goto done;
    }
    if (memcmp(want.b, data + len - 32, 32) != 0) {
        repro_error_set(REPRO_EINVAL,
                        "%s: corrupted checkpoint (its SHA-256 does not match its contents)",
                        path);
        goto done;
    }
    parsed ps = {.t = t, .path = path, .info = {0, -1, {{0}}}};
    if (parse(&ps, data, len - 32) || apply(&ps, info))
        goto done;
    rc = 0;
done:
    free(data);
    return rc;
}
