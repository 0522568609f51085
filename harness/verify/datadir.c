/* The digest of a data directory (datadir.h). */
#include "verify/datadir.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "util/error.h"
#include "verify/pack.h"

/* The relative paths of the regular files, collected before sorting. */
typedef struct {
    char **rel;
    long n, cap;
} file_list;

static int add_file(file_list *l, const char *rel)
{
    if (l->n == REPRO_DATA_FILES_MAX)
        return repro_error_set(REPRO_EINVAL, "--data: more than %ld files", REPRO_DATA_FILES_MAX);
    if (l->n == l->cap) {
        long cap = l->cap ? l->cap * 2 : 256;
        char **r = realloc(l->rel, (size_t)cap * sizeof *r);
        if (!r)
            return repro_error_set(REPRO_ENOMEM, "out of memory");
        l->rel = r;
        l->cap = cap;
    }
    if (!(l->rel[l->n] = strdup(rel)))
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    l->n++;
    return 0;
}

/* Every regular file below root/rel into l; anything else refused. */
static int collect(const char *root, const char *rel, int depth, file_list *l)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s%s%s", root, rel[0] ? "/" : "", rel);
    if (depth > 64)
        return repro_error_set(REPRO_EINVAL, "--data %s: nested deeper than 64 directories", dir);
    DIR *d = opendir(dir);
    if (!d)
        return repro_error_set_errno(REPRO_EINVAL, "--data %s", dir);
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[PATH_MAX], path[PATH_MAX + 8];
        struct stat st;
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(path, sizeof path, "%s/%s", root, sub);
        if (strchr(e->d_name, '\n'))
            rc = repro_error_set(REPRO_EINVAL, "--data: a file name with a newline in %s", dir);
        else if (lstat(path, &st) != 0)
            rc = repro_error_set_errno(REPRO_EIO, "--data %s", path);
        else if (S_ISDIR(st.st_mode))
            rc = collect(root, sub, depth + 1, l);
        else if (S_ISREG(st.st_mode))
            rc = add_file(l, sub);
        else
            rc = repro_error_set(REPRO_EINVAL,
                                 "--data %s: not a regular file or directory (a symbolic link, "
                                 "FIFO or device is not data)",
                                 path);
    }
    closedir(d);
    return rc;
}

static int by_bytes(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The listing's lines fed to ctx, each file hashed on the way. */
static int hash_listing(const char *root, const file_list *l, EVP_MD_CTX *ctx,
                        repro_data_digest *d)
{
    for (long i = 0; i < l->n; i++) {
        char path[PATH_MAX + 8], hex[65];
        uint64_t bytes;
        snprintf(path, sizeof path, "%s/%s", root, l->rel[i]);
        if (repro_pack_sha256_file(path, hex, &bytes))
            return -1;
        if (!EVP_DigestUpdate(ctx, hex, 64) || !EVP_DigestUpdate(ctx, "  ", 2) ||
            !EVP_DigestUpdate(ctx, l->rel[i], strlen(l->rel[i])) ||
            !EVP_DigestUpdate(ctx, "\n", 1))
            return repro_error_set(REPRO_EIO, "--data: cannot hash the listing");
        d->files++;
        d->bytes += bytes;
    }
    return 0;
}

int repro_data_digest_dir(const char *dir, repro_data_digest *d)
{
    struct stat st;
    memset(d, 0, sizeof *d);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return repro_error_set(REPRO_EINVAL, "--data %s: not a directory", dir);
    file_list l = {0};
    EVP_MD_CTX *ctx = NULL;
    unsigned char md[32];
    unsigned mdlen = 0;
    int rc = collect(dir, "", 0, &l);
    if (!rc) {
        qsort(l.rel, (size_t)l.n, sizeof *l.rel, by_bytes);
        ctx = EVP_MD_CTX_new();
        rc = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)
                 ? hash_listing(dir, &l, ctx, d)
                 : repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    if (!rc && !EVP_DigestFinal_ex(ctx, md, &mdlen))
        rc = repro_error_set(REPRO_EIO, "--data: cannot hash the listing");
    for (int i = 0; !rc && i < 32; i++)
        snprintf(d->sha256 + 2 * i, 3, "%02x", md[i]);
    EVP_MD_CTX_free(ctx);
    for (long i = 0; i < l.n; i++)
        free(l.rel[i]);
    free(l.rel);
    return rc;
}
