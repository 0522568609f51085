/* The verifying side's Python client (client.h). */
#include "verify/client.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/child.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/version.h"

/* Does dir hold the client package (dir/repro/__init__.py, a file)? */
static int holds_client(const char *dir)
{
    char init[2 * PATH_MAX];
    struct stat st;
    snprintf(init, sizeof init, "%s/repro/__init__.py", dir);
    return stat(init, &st) == 0 && S_ISREG(st.st_mode);
}

/* PREFIX/share/repro/python-site: one line, a directory relative to
 * PREFIX (or absolute), without "..". 1 with it resolved into out. */
static int recorded_site(const char *prefix, char *out, size_t len)
{
    char path[PATH_MAX + 64], line[PATH_MAX];
    snprintf(path, sizeof path, "%s/share/repro/python-site", prefix);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    if (!ok || !line[0] || strstr(line, ".."))
        return 0;
    int n = line[0] == '/' ? snprintf(out, len, "%s", line)
                           : snprintf(out, len, "%s/%s", prefix, line);
    return n > 0 && (size_t)n < len; /* a truncated path names another directory */
}

int repro_client_host_dir(char *out, size_t len)
{
    char self[PATH_MAX], dir[PATH_MAX + 64], real[PATH_MAX];
    if (repro_child_self_path(self, sizeof self)) {
        repro_error_clear();
        return 0;
    }
    *strrchr(self, '/') = '\0'; /* the binary's directory: BUILD or PREFIX/bin */
    snprintf(dir, sizeof dir, "%s/../python", self);
    if (holds_client(dir) && realpath(dir, real)) {
        snprintf(out, len, "%s", real);
        return 1;
    }
    size_t n = strlen(self);
    if (n < 4 || strcmp(self + n - 4, "/bin"))
        return 0;
    self[n - 4] = '\0';
    if (!recorded_site(self[0] ? self : "/", dir, sizeof dir) || !holds_client(dir))
        return 0;
    snprintf(out, len, "%s", dir);
    return 1;
}

int repro_client_check(const repro_trace *claim, const char *bundle_dir)
{
    char dir[PATH_MAX];
    if (!claim->client_protocol)
        return 0;
    int have = repro_client_host_dir(dir, sizeof dir);
    if (have && claim->client_protocol == REPRO_CLIENT_PROTOCOL)
        return 0;
    if (!have)
        return repro_error_set(REPRO_EUNSUPPORTED,
                               "verify: %s was recorded by the Python client (%s %s, client "
                               "protocol %d), and this repro has no client of its own to re-run "
                               "it with (none beside its binary, nor recorded by `make install` "
                               "in PREFIX/share/repro/python-site): install repro with "
                               "`make install`, so that its client is installed with it",
                               bundle_dir, claim->client_name, claim->client_version,
                               claim->client_protocol);
    return repro_error_set(REPRO_EUNSUPPORTED,
                           "verify: %s was recorded by the Python client %s %s, client protocol "
                           "%d; this repro's client (%s/repro, %s) speaks protocol %d and cannot "
                           "reproduce it: it needs a verifier whose client speaks protocol %d",
                           bundle_dir, claim->client_name, claim->client_version,
                           claim->client_protocol, dir, REPRO_VERSION, REPRO_CLIENT_PROTOCOL,
                           claim->client_protocol);
}

/* A repro package or module by name: repro/ holding __init__.py, or
 * repro.py. */
static int is_own_client(const char *dir, const char *name, int is_dir)
{
    char init[2 * PATH_MAX];
    struct stat st;
    if (!is_dir)
        return !strcmp(name, "repro.py");
    if (strcmp(name, "repro"))
        return 0;
    snprintf(init, sizeof init, "%s/repro/__init__.py", dir);
    return lstat(init, &st) == 0 && S_ISREG(st.st_mode);
}

/* Depth-first, in name order; rel is dir's path relative to the tree. */
static int walk(const char *dir, const char *rel, int depth, char *first, size_t len)
{
    struct dirent **names;
    int n = depth > 64 ? -1 : scandir(dir, &names, NULL, alphasort);
    if (n < 0)
        return 0;
    int found = 0;
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        char path[PATH_MAX], sub[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, name);
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", name);
        if (!found && strcmp(name, ".") && strcmp(name, "..") && lstat(path, &st) == 0) {
            if (is_own_client(dir, name, S_ISDIR(st.st_mode))) {
                snprintf(first, len, "%s%s", sub, S_ISDIR(st.st_mode) ? "/__init__.py" : "");
                found = 1;
            } else if (S_ISDIR(st.st_mode)) {
                found = walk(path, sub, depth + 1, first, len);
            }
        }
        free(names[i]);
    }
    free(names);
    return found;
}

int repro_client_own_package(const char *tree, char *first, size_t len)
{
    first[0] = '\0';
    return walk(tree, "", 0, first, len);
}
