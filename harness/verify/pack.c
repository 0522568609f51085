/* Packing, checking and unpacking a program's source tree (pack.h). */
#include "verify/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "history/git.h"
#include "util/error.h"
#include "util/fsutil.h"

int repro_pack_rel_ok(const char *rel)
{
    size_t n = strlen(rel);
    if (n == 0 || n > 255 || rel[0] == '/')
        return 0;
    for (const char *p = rel; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/+-", *p))
            return 0;
    for (const char *c = rel; *c;) {
        size_t l = strcspn(c, "/");
        if (l == 0 || (l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        c += l + (c[l] == '/');
        if (c[-1] == '/' && !*c)
            return 0; /* a trailing '/' */
    }
    return 1;
}

/* A whole regular file, not through a link, of at most max bytes
 * (malloc'd; bundle.c's reader is not used: bundle.c checks trees here). */
static int read_all(const char *path, uint64_t max, char **data, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        if (fd >= 0)
            close(fd);
        return repro_error_set(REPRO_EINVAL, "%s: not a regular file of at most %llu bytes",
                               path, (unsigned long long)max);
    }
    *len = (size_t)st.st_size;
    *data = malloc(*len + 1);
    size_t off = 0;
    ssize_t r = 1;
    while (*data && off < *len && (r = read(fd, *data + off, *len - off)) > 0)
        off += (size_t)r;
    close(fd);
    if (!*data || off != *len) {
        free(*data);
        return repro_error_set(REPRO_EIO, "%s: cannot read", path);
    }
    return 0;
}

/* ---- packing ---------------------------------------------------------------- */

static int write_file(const char *dest, const char *rel, const void *data, size_t len, int exec)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dest, rel);
    if (repro_mkdirs_for(path))
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, exec ? 0755 : 0644);
    if (fd < 0)
        return repro_error_set_errno(REPRO_EIO, "cannot create %s", path);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w <= 0) {
            close(fd);
            return repro_error_set_errno(REPRO_EIO, "cannot write %s", path);
        }
        off += (size_t)w;
    }
    if (close(fd))
        return repro_error_set_errno(REPRO_EIO, "cannot write %s", path);
    return 0;
}

/* Adds one file's size to the totals, refusing past the limits. */
static int count(repro_pack_info *info, const char *rel, uint64_t size)
{
    info->files++;
    info->bytes += size;
    if (info->files > REPRO_PACK_FILES_MAX)
        return repro_error_set(REPRO_EINVAL,
                               "the program's tree has more than %ld files (at %s): the limit "
                               "of a bundle",
                               REPRO_PACK_FILES_MAX, rel);
    if (info->bytes > REPRO_PACK_BYTES_MAX)
        return repro_error_set(REPRO_EINVAL,
                               "the program's tree is over %llu MiB (at %s): the limit of a "
                               "bundle",
                               (unsigned long long)(REPRO_PACK_BYTES_MAX >> 20), rel);
    return 0;
}

/* A work-tree file, as it is now: regular, not a link. */
static int pack_work_file(repro_pack_info *info, const char *dest, const char *rel)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", info->root, rel);
    struct stat st;
    if (lstat(path, &st) != 0)
        return repro_error_set_errno(REPRO_EIO, "cannot read %s", path);
    if (!S_ISREG(st.st_mode))
        return repro_error_set(REPRO_EINVAL, "%s is %s: a bundle holds regular files only",
                               path, S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file");
    if (count(info, rel, (uint64_t)st.st_size))
        return -1;
    char *data;
    size_t len;
    if (read_all(path, REPRO_PACK_BYTES_MAX, &data, &len))
        return -1;
    int rc = write_file(dest, rel, data, len, (st.st_mode & 0100) != 0);
    free(data);
    return rc;
}

static int pack_blob(repro_git *g, repro_pack_info *info, const char *dest,
                     const repro_git_tree_file *f)
{
    void *data;
    size_t len;
    if (repro_git_read_blob(g, info->commit, f->path, &data, &len))
        return -1;
    int rc = count(info, f->path, len) || write_file(dest, f->path, data, len, f->executable);
    free(data);
    return rc ? -1 : 0;
}

/* Is rel deleted (or renamed away) in the dirty list? */
static int gone(const repro_git_dirty *d, const char *rel)
{
    for (size_t i = 0; i < d->n; i++) {
        const repro_git_dirty_entry *e = &d->entries[i];
        if ((e->status == 'D' && !strcmp(e->path, rel)) ||
            (e->status == 'R' && e->old_path && !strcmp(e->old_path, rel)))
            return 1;
    }
    return 0;
}

static int pack_files(repro_git *g, repro_pack_info *info, const char *dest,
                      const repro_git_dirty *d)
{
    repro_git_tree_file *files;
    size_t n;
    if (repro_git_tree_files(g, info->commit, &files, &n))
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (!repro_pack_rel_ok(files[i].path))
            rc = repro_error_set(REPRO_EINVAL,
                                 "the program's tree holds '%s': a bundle's paths are "
                                 "[A-Za-z0-9._/+-] only",
                                 files[i].path);
        else if (!info->dirty)
            rc = pack_blob(g, info, dest, &files[i]);
        else if (!gone(d, files[i].path))
            rc = pack_work_file(info, dest, files[i].path);
    }
    /* Dirty: the new files too (untracked, staged, renamed to). */
    for (size_t i = 0; info->dirty && i < d->n && !rc; i++) {
        const repro_git_dirty_entry *e = &d->entries[i];
        if (e->status == '?' || e->status == 'A' || e->status == 'R')
            rc = repro_pack_rel_ok(e->path)
                     ? pack_work_file(info, dest, e->path)
                     : repro_error_set(REPRO_EINVAL, "the program's tree holds '%s': a bundle's "
                                                     "paths are [A-Za-z0-9._/+-] only",
                                       e->path);
    }
    repro_git_tree_files_free(files, n);
    return rc;
}

int repro_pack_tree(const char *start, int allow_dirty, const char *dest, repro_pack_info *info)
{
    memset(info, 0, sizeof *info);
    repro_git *g = NULL;
    repro_git_dirty *d = NULL;
    repro_git_commit c;
    if (repro_git_open(&g, start))
        return -1;
    int rc = -1;
    snprintf(info->root, sizeof info->root, "%s", repro_git_workdir(g));
    if (repro_git_head(g, &c))
        goto done;
    snprintf(info->commit, sizeof info->commit, "%s", c.id);
    repro_git_commit_release(&c);
    if (repro_git_dirty_list(g, NULL, 0, &d))
        goto done;
    info->dirty = d->n > 0;
    if (info->dirty && !allow_dirty) {
        repro_error_set(REPRO_EINVAL,
                        "the program's repository %s has uncommitted changes (%zu paths, e.g. "
                        "'%c %s'): commit them, or pack the work tree as it is with "
                        "--allow-dirty (the bundle then says dirty: true)",
                        info->root, d->n, d->entries[0].status, d->entries[0].path);
        goto done;
    }
    if (mkdir(dest, 0755) != 0) {
        repro_error_set_errno(REPRO_EIO, "cannot create %s", dest);
        goto done;
    }
    rc = pack_files(g, info, dest, d);
done:
    repro_git_dirty_free(d);
    repro_git_free(g);
    return rc;
}

/* ---- checking, copying, removing (nftw: one walk at a time) ------------ */

static struct {
    long files;
    uint64_t bytes;
    size_t base_len;
    const char *dst;
    char bad[600];
} walk;

static int check_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    const char *rel = path + walk.base_len + (path[walk.base_len] == '/');
    if (type == FTW_D)
        return 0;
    if (type == FTW_SL || type == FTW_SLN || S_ISLNK(st->st_mode)) {
        snprintf(walk.bad, sizeof walk.bad, "'%s' is a symbolic link", rel);
        return 1;
    }
    if (type != FTW_F || !S_ISREG(st->st_mode)) {
        snprintf(walk.bad, sizeof walk.bad, "'%s' is not a regular file or directory", rel);
        return 1;
    }
    walk.files++;
    walk.bytes += (uint64_t)st->st_size;
    if (walk.files > REPRO_PACK_FILES_MAX || walk.bytes > REPRO_PACK_BYTES_MAX) {
        snprintf(walk.bad, sizeof walk.bad,
                 "more than %ld files or %llu MiB (at '%s'): over a bundle's limits",
                 REPRO_PACK_FILES_MAX, (unsigned long long)(REPRO_PACK_BYTES_MAX >> 20), rel);
        return 1;
    }
    return 0;
}

int repro_pack_check(const char *dir, long *files, uint64_t *bytes)
{
    memset(&walk, 0, sizeof walk);
    walk.base_len = strlen(dir);
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return repro_error_set(REPRO_EINVAL, "%s: the program's tree is not a directory", dir);
    int rc = nftw(dir, check_one, 16, FTW_PHYS);
    if (rc > 0)
        return repro_error_set(REPRO_EINVAL, "%s: %s", dir, walk.bad);
    if (rc < 0)
        return repro_error_set_errno(REPRO_EINVAL, "%s: cannot walk the program's tree", dir);
    *files = walk.files;
    *bytes = walk.bytes;
    return 0;
}

static int copy_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    char to[8192];
    snprintf(to, sizeof to, "%s%s", walk.dst, path + walk.base_len);
    if (type == FTW_D)
        return mkdir(to, 0755) != 0 && errno != EEXIST;
    char *data;
    size_t len;
    if (type != FTW_F || read_all(path, REPRO_PACK_BYTES_MAX, &data, &len))
        return 1;
    int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, (st->st_mode & 0100) ? 0755 : 0644);
    int bad = fd < 0 || write(fd, data, len) != (ssize_t)len;
    if (fd >= 0)
        bad |= close(fd) != 0;
    free(data);
    return bad;
}

int repro_pack_copy(const char *src, const char *dst)
{
    memset(&walk, 0, sizeof walk);
    walk.base_len = strlen(src);
    walk.dst = dst;
    if (nftw(src, copy_one, 16, FTW_PHYS))
        return repro_error_set_errno(REPRO_EIO, "cannot copy %s to %s", src, dst);
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void repro_pack_remove(const char *dir)
{
    /* A program may have left a directory without write permission. */
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int repro_pack_sha256_file(const char *path, char hex[65], uint64_t *bytes)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return repro_error_set(REPRO_EINVAL, "%s: missing, a symbolic link or not a regular file",
                               path);
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char buf[1 << 16], md[32];
    unsigned mdlen = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    ssize_t r;
    *bytes = 0;
    while (ok && (r = read(fd, buf, sizeof buf)) > 0) {
        ok = EVP_DigestUpdate(ctx, buf, (size_t)r);
        *bytes += (uint64_t)r;
    }
    ok = ok && r == 0 && EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    close(fd);
    if (!ok)
        return repro_error_set(REPRO_EIO, "%s: cannot hash", path);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}
