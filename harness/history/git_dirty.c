/* Dirty state (see git.h): the paths that differ from HEAD, as `git
 * status` shows them, limited to prefixes. */
#include "history/git.h"

#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history/git_impl.h"
#include "util/error.h"

/* ---- dirty state -------------------------------------------------------- */

static char status_letter(unsigned s)
{
    if (s & GIT_STATUS_CONFLICTED)
        return 'U';
    if (s & GIT_STATUS_INDEX_NEW)
        return 'A';
    if (s & GIT_STATUS_INDEX_RENAMED)
        return 'R';
    if (s & GIT_STATUS_INDEX_DELETED)
        return 'D';
    if (s & (GIT_STATUS_INDEX_MODIFIED | GIT_STATUS_INDEX_TYPECHANGE))
        return 'M';
    if (s & GIT_STATUS_WT_NEW)
        return '?';
    if (s & GIT_STATUS_WT_DELETED)
        return 'D';
    if (s & GIT_STATUS_WT_RENAMED)
        return 'R';
    if (s & (GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_TYPECHANGE | GIT_STATUS_WT_UNREADABLE))
        return 'M';
    return 0; /* current or ignored */
}

static int cmp_dirty(const void *a, const void *b)
{
    return strcmp(((const repro_git_dirty_entry *)a)->path,
                  ((const repro_git_dirty_entry *)b)->path);
}

void repro_git_dirty_free(repro_git_dirty *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->entries[i].path);
        free(d->entries[i].old_path);
    }
    free(d->entries);
    free(d);
}

int repro_git_dirty_list(repro_git *g, const char *const *prefixes, size_t nprefixes,
                         repro_git_dirty **out)
{
    int ret = -1;
    repro_git_prefix_set ps;
    git_status_list *list = NULL;
    size_t cap = 0;
    repro_git_dirty *d = calloc(1, sizeof *d);
    if (repro_git_prefixes_init(&ps, prefixes, nprefixes) || !d) {
        if (!d)
            repro_error_set(REPRO_ENOMEM, "out of memory");
        free(d);
        return -1;
    }
    /* The _init functions, not the INIT macros: the macros leave fields
     * unnamed and -Wmissing-field-initializers (-Wextra) rejects them. */
    git_status_options opts;
    git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION);
    opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
    opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
                 GIT_STATUS_OPT_EXCLUDE_SUBMODULES | GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX |
                 GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
    opts.pathspec = repro_git_prefixes_pathspec(&ps);
    if (git_status_list_new(&list, g->repo, &opts) < 0) {
        repro_git_fail(REPRO_EIO, "cannot read the status of %s", g->workdir);
        goto cleanup;
    }
    size_t n = git_status_list_entrycount(list);
    for (size_t i = 0; i < n; i++) {
        const git_status_entry *e = git_status_byindex(list, i);
        char letter = e ? status_letter(e->status) : 0;
        if (!letter)
            continue;
        const git_diff_delta *dd = e->head_to_index ? e->head_to_index : e->index_to_workdir;
        if (!dd)
            continue;
        const char *path = dd->new_file.path ? dd->new_file.path : dd->old_file.path;
        const char *old = letter == 'R' ? dd->old_file.path : NULL;
        if (!repro_git_prefixes_match(&ps, path) && !(old && repro_git_prefixes_match(&ps, old)))
            continue;
        if (repro_git_grow(&d->entries, &cap, d->n, sizeof *d->entries))
            goto cleanup;
        repro_git_dirty_entry *de = &d->entries[d->n];
        memset(de, 0, sizeof *de);
        de->status = letter;
        de->path = repro_git_strdup(path);
        if (old)
            de->old_path = repro_git_strdup(old);
        d->n++;
        if (!de->path || (old && !de->old_path))
            goto cleanup;
    }
    if (d->n > 1)
        qsort(d->entries, d->n, sizeof *d->entries, cmp_dirty);
    *out = d;
    d = NULL;
    ret = 0;

cleanup:
    repro_git_dirty_free(d);
    git_status_list_free(list);
    repro_git_prefixes_release(&ps);
    return ret;
}
