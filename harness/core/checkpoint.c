/* Saving and restoring a trainer's complete state (format: checkpoint.h). */
#include "core/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "record/record.h"
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

/* n bytes of backend memory (a device buffer on a GPU backend): copied to
 * the host first, through the backend, when the host cannot read it. */
static void put_backend(buf *b, const repro_model *m, const void *src, size_t n)
{
    if (m->be->host_memory || b->oom) {
        put(b, src, n);
        return;
    }
    void *host = malloc(n ? n : 1);
    if (!host) {
        b->oom = 1;
        return;
    }
    m->be->copy_d2h(m->be_ctx, host, src, n);
    put(b, host, n);
    free(host);
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

static int write_atomic(const char *path, const void *data, size_t n)
{
    char tmp[1200], dir[1200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
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

int repro_checkpoint_save(const repro_trainer *t, const char *path)
{
    repro_checkpoint_info ci = {t->step, -1, {{0}}};
    if (t->rec) {
        /* The chain must cover exactly the steps the state reflects. */
        if (repro_recorder_sync(t->rec))
            return -1;
        ci.chain_steps = repro_recorder_chain(t->rec, &ci.chain);
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

    size_t s = begin_section(&b, "META");
    put_str(&b, t->cfg.name, strlen(t->cfg.name));
    put(&b, numerics.b, sizeof numerics.b);
    put_str(&b, ctext, clen);
    put_i64(&b, t->step);
    end_section(&b, s);
    free(ctext);

    s = begin_section(&b, "OPTM");
    put_u32(&b, (uint32_t)t->cfg.train_optimizer);
    put_f64(&b, t->beta1_pow);
    put_f64(&b, t->beta2_pow);
    end_section(&b, s);

    /* Updates applied (sgd's first step and adamw's bias correction count
     * them: fp16 skips some) and the fp16 loss scaler's dynamic state. */
    s = begin_section(&b, "SCAL");
    put_i64(&b, t->updates);
    put(&b, &t->scaler.scale, 4);
    put_i32(&b, t->scaler.growth_tracker);
    put_i32(&b, t->scaler.last_skipped);
    put(&b, &t->scaler.last_scale, 4);
    put_i64(&b, t->scaler.skipped_total);
    end_section(&b, s);

    repro_loader_position pos;
    repro_loader_get_position(t->loader, &pos);
    int n = repro_loader_dataset_size(t->loader);
    s = begin_section(&b, "LOAD");
    put_u64(&b, pos.gen_key);
    put_u64(&b, pos.gen_block);
    put_i32(&b, pos.gen_used);
    put_i32(&b, pos.epoch);
    put_u64(&b, pos.base_seed);
    put_i64(&b, pos.index);
    put_i32(&b, pos.next_in_epoch);
    put_i32(&b, t->cfg.data_num_workers);
    put_i32(&b, t->cfg.data_augment_seed);
    put_u32(&b, (uint32_t)n);
    put(&b, repro_loader_permutation(t->loader), sizeof(uint32_t) * (size_t)n);
    end_section(&b, s);

    s = begin_section(&b, "CHAN");
    put_i64(&b, ci.chain_steps);
    put(&b, ci.chain.b, sizeof ci.chain.b);
    end_section(&b, s);

    const repro_model *m = &t->model;
    int adam = t->cfg.train_optimizer == REPRO_OPT_ADAMW;
    for (int i = 0; i < m->nparams; i++) {
        const repro_param *p = &m->params[i];
        s = begin_section(&b, "PARM");
        put_str(&b, p->name, strlen(p->name));
        put_u32(&b, (uint32_t)p->ndim);
        for (int d = 0; d < p->ndim; d++)
            put_u32(&b, (uint32_t)p->shape[d]);
        size_t bytes = sizeof(float) * (size_t)p->numel;
        put_backend(&b, m, p->data, bytes);
        put_backend(&b, m, p->state1, bytes);
        if (adam)
            put_backend(&b, m, p->state2, bytes);
        end_section(&b, s);
    }
    s = begin_section(&b, "END_");
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
    FILE *f = fopen(path, "rb");
    if (!f)
        return repro_error_set_errno(REPRO_EINVAL, "%s: cannot open checkpoint", path);
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

/* One pass over the sections. apply = 0 validates everything against the
 * trainer; apply = 1 (only after a clean validation) restores. */
static int walk(repro_trainer *t, const char *path, const unsigned char *data, size_t len,
                int apply, repro_checkpoint_info *info)
{
    rd file = {data, len, 12, 0};
    const repro_model *m = &t->model;
    int adam = t->cfg.train_optimizer == REPRO_OPT_ADAMW;
    int nparam = 0, ended = 0;
    long step = 0;
    double b1 = 1.0, b2 = 1.0;
    const char *order = "META OPTM SCAL LOAD CHAN";
    enum { NFIXED = 5 };
    long updates = 0, skipped = 0;
    float scale = 0, last_scale = 0;
    int tracker = 0, last_skipped = 0;
    int next_fixed = 0; /* index of the next fixed section expected */
    while (!ended) {
        char tag[5] = {0};
        if (get(&file, tag, 4))
            return repro_error_set(REPRO_EINVAL, "%s: corrupted checkpoint (no END section)",
                                   path);
        uint64_t slen = get_u64(&file);
        if (file.bad || slen > file.len - file.at)
            return repro_error_set(REPRO_EINVAL,
                                   "%s: corrupted checkpoint (section %s runs past the end)", path,
                                   tag);
        rd r = {data + file.at, (size_t)slen, 0, 0};
        file.at += (size_t)slen;
        if (next_fixed < NFIXED && strncmp(tag, order + 5 * next_fixed, 4) != 0)
            return repro_error_set(REPRO_EINVAL,
                                   "%s: corrupted checkpoint (section %s where %.4s belongs)", path,
                                   tag, order + 5 * next_fixed);
        if (!strcmp(tag, "META")) {
            next_fixed++;
            uint32_t nlen, clen;
            const char *name = get_str(&r, &nlen);
            repro_digest dig, mine, all;
            get(&r, dig.b, sizeof dig.b);
            const char *ctext = get_str(&r, &clen);
            step = (long)get_i64(&r);
            if (r.bad)
                break;
            if (strlen(t->cfg.name) != nlen || memcmp(name, t->cfg.name, nlen) != 0)
                return repro_error_set(REPRO_EINVAL,
                                       "%s: checkpoint of experiment '%.*s', not '%s'", path,
                                       (int)nlen, name, t->cfg.name);
            if (repro_config_digests(&t->cfg, &all, &mine))
                return -1;
            if (!repro_digest_eq(&dig, &mine)) {
                size_t nl = 0;
                char *now = config_text(&t->cfg, &nl), keys[600] = "";
                if (now)
                    config_differences(ctext, clen, now, keys, sizeof keys);
                free(now);
                char ha[65], hb[65];
                repro_digest_hex(&dig, ha);
                repro_digest_hex(&mine, hb);
                ha[12] = hb[12] = '\0';
                return repro_error_set(REPRO_EINVAL,
                                       "%s: checkpoint written under another config (numerics "
                                       "digest %s vs %s)%s%s: resume with the config it was "
                                       "saved under",
                                       path, ha, hb, keys[0] ? ": " : "", keys);
            }
            if (step < 0)
                break;
        } else if (!strcmp(tag, "OPTM")) {
            next_fixed++;
            uint32_t opt = get_u32(&r);
            b1 = get_f64(&r);
            b2 = get_f64(&r);
            if (r.bad)
                break;
            if (opt != (uint32_t)t->cfg.train_optimizer)
                return repro_error_set(REPRO_EINVAL, "%s: checkpoint of another optimizer",
                                       path);
        } else if (!strcmp(tag, "SCAL")) {
            next_fixed++;
            updates = (long)get_i64(&r);
            get(&r, &scale, 4);
            tracker = get_i32(&r);
            last_skipped = get_i32(&r);
            get(&r, &last_scale, 4);
            skipped = (long)get_i64(&r);
            if (r.bad || updates < 0 || updates > step || r.at != r.len)
                break;
        } else if (!strcmp(tag, "LOAD")) {
            next_fixed++;
            repro_loader_position pos;
            pos.gen_key = get_u64(&r);
            pos.gen_block = get_u64(&r);
            pos.gen_used = get_i32(&r);
            pos.epoch = get_i32(&r);
            pos.base_seed = get_u64(&r);
            pos.index = (long)get_i64(&r);
            pos.next_in_epoch = get_i32(&r);
            int workers = get_i32(&r), aseed = get_i32(&r);
            uint32_t n = get_u32(&r);
            if (r.bad || n != (uint32_t)repro_loader_dataset_size(t->loader) ||
                (size_t)n * 4 != r.len - r.at)
                break;
            const uint32_t *perm = (const uint32_t *)(r.p + r.at);
            int augment = t->cfg.data_shift > 0 || t->cfg.data_flip || t->cfg.data_noise > 0;
            /* The one bits-neutral key that is not neutral here: worker RNG
             * positions are replayed per worker (loader.h). */
            if (aseed != t->cfg.data_augment_seed ||
                (augment && aseed == 1 && pos.next_in_epoch > 0 &&
                 workers != t->cfg.data_num_workers &&
                 !(workers <= 1 && t->cfg.data_num_workers <= 1)))
                return repro_error_set(REPRO_EINVAL,
                                       "%s: checkpoint saved with num_workers = %d mid-epoch under "
                                       "augment_seed = worker; this run has %d, which would "
                                       "change the augmentation streams: resume with %d",
                                       path, workers, t->cfg.data_num_workers, workers);
            if (pos.index != step && step >= 0 && pos.index < step)
                break;
            if (apply) {
                /* perm is inside the file buffer: copy to aligned storage. */
                uint32_t *p = malloc(sizeof(uint32_t) * (n ? n : 1));
                if (!p)
                    return repro_error_set(REPRO_ENOMEM, "out of memory");
                memcpy(p, perm, sizeof(uint32_t) * n);
                int rc = repro_loader_restore(t->loader, &pos, p);
                free(p);
                if (rc) {
                    char msg[512];
                    snprintf(msg, sizeof msg, "%s", repro_error_message());
                    return repro_error_set(REPRO_EINVAL, "%s: %s", path, msg);
                }
            }
        } else if (!strcmp(tag, "CHAN")) {
            next_fixed++;
            long cs = (long)get_i64(&r);
            repro_digest c;
            get(&r, c.b, sizeof c.b);
            if (r.bad || (cs != -1 && cs != step))
                break;
            if (info) {
                info->step = step;
                info->chain_steps = cs;
                info->chain = c;
            }
        } else if (!strcmp(tag, "PARM")) {
            if (nparam >= m->nparams)
                return repro_error_set(REPRO_EINVAL,
                                       "%s: checkpoint has more parameters than this model (%d)",
                                       path, m->nparams);
            const repro_param *p = &m->params[nparam];
            uint32_t nl;
            const char *name = get_str(&r, &nl);
            uint32_t ndim = get_u32(&r);
            int fits = !r.bad && nl == strlen(p->name) && !memcmp(name, p->name, nl) &&
                       ndim == (uint32_t)p->ndim;
            for (uint32_t d = 0; fits && d < ndim; d++)
                fits = get_u32(&r) == (uint32_t)p->shape[d] && !r.bad;
            size_t bytes = sizeof(float) * (size_t)p->numel;
            if (!fits || r.len - r.at != bytes * (adam ? 3 : 2))
                return repro_error_set(REPRO_EINVAL,
                                       "%s: checkpoint parameter %d ('%.*s') does not match this "
                                       "model's %s",
                                       path, nparam, (int)nl, name, p->name);
            if (apply) {
                /* backend memory: the backend's copy (memcpy on the cpu) */
                m->be->copy_h2d(m->be_ctx, p->data, r.p + r.at, bytes);
                m->be->copy_h2d(m->be_ctx, p->state1, r.p + r.at + bytes, bytes);
                if (adam)
                    m->be->copy_h2d(m->be_ctx, p->state2, r.p + r.at + 2 * bytes, bytes);
            }
            nparam++;
        } else if (!strcmp(tag, "END_")) {
            ended = 1;
        } else {
            return repro_error_set(REPRO_EINVAL, "%s: unknown checkpoint section '%s'", path,
                                   tag);
        }
        if (r.bad)
            break;
    }
    if (!ended)
        return repro_error_set(REPRO_EINVAL, "%s: corrupted checkpoint (malformed section)",
                               path);
    if (next_fixed < NFIXED || nparam != m->nparams)
        return repro_error_set(REPRO_EINVAL,
                               "%s: checkpoint has %d of this model's %d parameters", path, nparam,
                               m->nparams);
    if (file.at != len)
        return repro_error_set(REPRO_EINVAL, "%s: corrupted checkpoint (bytes after END)",
                               path);
    if (apply) {
        t->step = step;
        t->beta1_pow = b1;
        t->beta2_pow = b2;
        t->updates = updates;
        t->scaler.scale = scale;
        t->scaler.growth_tracker = tracker;
        t->scaler.last_skipped = last_skipped;
        t->scaler.last_scale = last_scale;
        t->scaler.skipped_total = skipped;
    }
    return 0;
}

int repro_checkpoint_load(repro_trainer *t, const char *path, repro_checkpoint_info *info)
{
    if (t->step != 0 || t->rec)
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
    repro_checkpoint_info tmp = {0, -1, {{0}}};
    if (walk(t, path, data, len - 32, 0, &tmp) || walk(t, path, data, len - 32, 1, info))
        goto done;
    rc = 0;
done:
    free(data);
    return rc;
}
