/* The golden-mismatch report of a program (see golden_program.h): the
 * program's whole repository is its numerics, so every changed path
 * counts, except the goldens themselves and run directories (outputs). */
#include <stdlib.h>
#include <string.h>

#include "golden/golden_program.h"
#include "util/error.h"
#include "util/escape.h"

enum { SHOWN = 12 };

static int is_output(const char *path)
{
    return !strncmp(path, "golden/", 7) || !strncmp(path, "runs/", 5);
}

/* A file that says how the program is built: marked in the report, since a
 * changed flag (-O3, -ffast-math) changes the bits as a changed line does. */
static int is_build_file(const char *path)
{
    static const char *const names[] = {"Makefile",    "makefile",      "GNUmakefile",
                                        "CMakeLists.txt", "meson.build", "configure.ac",
                                        "setup.py",    "pyproject.toml", "build.sh"};
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(base, names[i]))
            return 1;
    size_t n = strlen(base);
    return (n > 3 && !strcmp(base + n - 3, ".mk")) || (n > 6 && !strcmp(base + n - 6, ".cmake"));
}

static const char *build_mark(const char *path)
{
    return is_build_file(path) ? " (build file)" : "";
}

static void report_uncommitted(repro_git *git, FILE *out, json_t *json)
{
    repro_git_dirty *d = NULL;
    if (repro_git_dirty_list(git, NULL, 0, &d)) {
        repro_error_clear();
        return;
    }
    json_t *arr = json_array();
    size_t shown = 0, n = 0;
    for (size_t i = 0; i < d->n; i++) {
        const char *p = d->entries[i].path;
        if (is_output(p))
            continue;
        if (out && n == 0)
            fprintf(out, "  uncommitted changes in the program's repository (the likeliest "
                         "cause):\n");
        if (out && shown++ < SHOWN)
            fprintf(out, "    %c %s%s\n", d->entries[i].status, repro_esc(p), build_mark(p));
        json_array_append_new(arr, json_string(p));
        n++;
    }
    if (out && n > SHOWN)
        fprintf(out, "    ... and %zu more\n", n - SHOWN);
    json_object_set_new(json, "uncommitted_paths", arr);
    repro_git_dirty_free(d);
}

/* Paths ranked by the newest commit that changed them (the commits come
 * newest first), then by path. */
static const repro_git_path_changes **ranked(const repro_git_changes *ch, size_t *n)
{
    const repro_git_path_changes **r = calloc(ch->npaths + 1, sizeof *r);
    *n = 0;
    for (size_t c = 0; r && c < ch->n; c++)
        for (size_t i = 0; i < ch->npaths; i++)
            if (ch->paths[i].commits[0] == c && !is_output(ch->paths[i].path))
                r[(*n)++] = &ch->paths[i];
    return r;
}

static void print_path(FILE *out, const repro_git_changes *ch, const repro_git_path_changes *p)
{
    const repro_git_commit *c0 = &ch->commits[p->commits[0]].commit;
    fprintf(out, "    %s%s (%zu commit%s): %s %.50s%s", repro_esc(p->path), build_mark(p->path),
            p->ncommits, p->ncommits == 1 ? "" : "s", c0->short_id, repro_esc(c0->summary),
            strlen(c0->summary) > 50 ? "..." : "");
    for (size_t k = 1; k < p->ncommits && k < 4; k++)
        fprintf(out, ", %s", ch->commits[p->commits[k]].commit.short_id);
    fprintf(out, "%s\n", p->ncommits > 4 ? ", ..." : "");
}

static json_t *path_json(const repro_git_changes *ch, const repro_git_path_changes *p)
{
    json_t *commits = json_array();
    for (size_t k = 0; k < p->ncommits; k++) {
        const repro_git_commit *c = &ch->commits[p->commits[k]].commit;
        json_array_append_new(commits,
                              json_pack("{s:s, s:s}", "id", c->id, "summary", c->summary));
    }
    return json_pack("{s:s, s:b, s:o}", "path", p->path, "build_file", is_build_file(p->path),
                     "commits", commits);
}

/* 1 when some path changed since `since` (the bisect is worth suggesting). */
static int report_committed(repro_git *git, const char *since, FILE *out, json_t *json)
{
    repro_git_changes *ch = NULL;
    if (repro_git_changes_since(git, since, NULL, 0, &ch)) {
        if (out)
            fprintf(out, "  (cannot list changes since %.7s: %s)\n", repro_esc(since),
                    repro_esc(repro_error_message()));
        repro_error_clear();
        return 0;
    }
    size_t n = 0;
    const repro_git_path_changes **r = ranked(ch, &n);
    json_t *paths = json_array();
    if (out && n == 0)
        fprintf(out, "  no commit since %.7s changed the program's repository: the environment "
                     "or uncommitted changes differ\n",
                since);
    else if (out)
        fprintf(out, "  the program's sources changed since the golden was blessed at %.7s, "
                     "newest commit first:\n",
                since);
    for (size_t i = 0; r && i < n; i++) {
        if (out && i < SHOWN)
            print_path(out, ch, r[i]);
        json_array_append_new(paths, path_json(ch, r[i]));
    }
    if (out && n > SHOWN)
        fprintf(out, "    ... and %zu more paths (--json lists them all)\n", n - SHOWN);
    if (ch->incomplete && out)
        fprintf(out, "  (%s)\n", ch->note ? ch->note : "history incomplete");
    json_object_set_new(json, "changed_paths", paths);
    json_object_set_new(json, "history_incomplete", json_boolean(ch->incomplete));
    free(r);
    repro_git_changes_free(ch);
    return n > 0;
}

void repro_golden_program_changes(repro_git *git, const char *since, char *const *program,
                                  FILE *out, json_t *json)
{
    json_t *doc = json ? json : json_object(); /* filled either way, kept when asked */
    report_uncommitted(git, out, doc);
    int changed = report_committed(git, since, out, doc);
    char cmd[4096];
    repro_golden_bisect_command(repro_git_workdir(git), since, program, cmd, sizeof cmd);
    if (out && changed)
        fprintf(out, "  to find the commit: %s\n", cmd);
    if (changed)
        json_object_set_new(doc, "bisect_command", json_string(cmd));
    if (!json)
        json_decref(doc);
}
