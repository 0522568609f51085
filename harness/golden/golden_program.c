/* Goldens of a user's own program (see golden_program.h). */
#include "golden/golden_program.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/multirun.h"
#include "golden/golden.h"
#include "util/error.h"
#include "util/escape.h"

static void dir_of(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

void repro_golden_anchor(const char *exp_file, char *const *program, char *buf, size_t len)
{
    snprintf(buf, len, ".");
    if (exp_file && !program) {
        dir_of(exp_file, buf, len);
        return;
    }
    if (!program || !program[0])
        return;
    /* argv[0] when it is a path; an interpreter's script when that is. */
    for (int i = 0; i < 2 && program[i]; i++)
        if (strchr(program[i], '/') && access(program[i], F_OK) == 0) {
            dir_of(program[i], buf, len);
            return;
        }
}

int repro_golden_open_repo(repro_git **out, const char *exp_file, char *const *program)
{
    char dir[PATH_MAX];
    repro_golden_anchor(exp_file, program, dir, sizeof dir);
    if (repro_git_open(out, dir) == 0)
        return 0;
    /* A program installed outside any repository (/opt/tools/train) is
     * blessed where it is run: the current directory's repository. */
    if (program && strcmp(dir, ".")) {
        repro_error_clear();
        if (repro_git_open(out, NULL) == 0)
            return 0;
    }
    return repro_error_wrap(repro_error_code(), "goldens are kept in the repository of %s (%s)",
                            program ? "the program" : "the experiment file", dir);
}

/* The golden header's "program" argv of the file at path, or NULL. */
static json_t *recorded_program(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *line = NULL;
    size_t cap = 0;
    json_t *argv = NULL;
    if (getline(&line, &cap, f) > 0) {
        json_t *h = json_loads(line, 0, NULL);
        argv = json_object_get(json_object_get(h, "golden"), "program");
        if (json_is_array(argv) && json_array_size(argv) > 0)
            json_incref(argv);
        else
            argv = NULL;
        json_decref(h);
    }
    free(line);
    fclose(f);
    return argv;
}

/* The file a program path names: the given one from the current
 * directory, a recorded one from the repository's top (where bless and
 * bisect run it); a bare name (found on PATH) as it is. */
static void program_file(const char *root, const char *word, int recorded, char *buf, size_t len)
{
    char path[PATH_MAX + 2];
    snprintf(buf, len, "%s", word);
    if (!strchr(word, '/'))
        return;
    if (recorded && word[0] != '/')
        snprintf(path, sizeof path, "%.*s/%s", PATH_MAX / 2, root[0] ? root : ".", word);
    else
        snprintf(path, sizeof path, "%s", word);
    char real[PATH_MAX];
    if (realpath(path, real))
        snprintf(buf, len, "%s", real);
}

/* The same program: argv[0] names the same file, and the program name
 * (the script, for an interpreter) is the same. */
static int same_program(const char *root, json_t *rec, char *const *program)
{
    size_t n = json_array_size(rec);
    char **argv = calloc(n + 1, sizeof *argv);
    if (!argv)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(rec, i));
        argv[i] = (char *)(s ? s : "");
    }
    char a[128], b[128];
    repro_program_name(argv, a, sizeof a);
    repro_program_name(program, b, sizeof b);
    char fa[PATH_MAX], fb[PATH_MAX];
    program_file(root, argv[0], 1, fa, sizeof fa);
    program_file(root, program[0], 0, fb, sizeof fb);
    int same = !strcmp(fa, fb) && !strcmp(a, b);
    free(argv);
    return same;
}

/* 1 when some golden file in dir records the program. */
static int dir_records(const char *root, const char *dir, char *const *program)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 6 || strcmp(e->d_name + n - 6, ".jsonl"))
            continue;
        char path[1800];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        json_t *rec = recorded_program(path);
        found = rec && same_program(root, rec, program);
        json_decref(rec);
    }
    closedir(d);
    return found;
}

int repro_golden_name_for_program(const char *root, char *const *program, char *name,
                                  size_t len)
{
    char top[1024];
    snprintf(top, sizeof top, "%s%sgolden", root, root[0] ? "/" : "");
    DIR *d = opendir(top);
    char found[512] = "";
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char dir[1400];
        snprintf(dir, sizeof dir, "%s/%s", top, e->d_name);
        if (!dir_records(root, dir, program))
            continue;
        if (n++ == 0)
            snprintf(name, len, "%s", e->d_name);
        size_t used = strlen(found);
        snprintf(found + used, sizeof found - used, "%s%s", used ? ", " : "", e->d_name);
    }
    if (d)
        closedir(d);
    if (n == 1)
        return 0;
    if (n == 0)
        return repro_error_set(REPRO_EINVAL,
                               "no golden in %s/ records the program %s (its golden is named "
                               "after the experiment it records; bless it with `repro bless -- "
                               "%s`, or give --name NAME)",
                               top, program[0], program[0]);
    return repro_error_set(REPRO_EINVAL,
                           "several goldens in %s/ record the program %s (%s): give --name NAME",
                           top, program[0], found);
}

const char *repro_golden_build_command(const char *root)
{
    static const struct {
        const char *file, *cmd;
    } builds[] = {
        {"Makefile", "make"},
        {"makefile", "make"},
        {"GNUmakefile", "make"},
        {"CMakeLists.txt", "cmake -S . -B build && cmake --build build"},
    };
    for (size_t i = 0; i < sizeof builds / sizeof *builds; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", root, builds[i].file);
        if (access(path, F_OK) == 0)
            return builds[i].cmd;
    }
    return NULL;
}

/* A path argument as bisect needs it: relative to the repository's top
 * (each probe runs there). Words that name no file inside root, or are
 * relative while the current directory is root, are kept. */
static void rebase_word(const char *root, const char *word, int first, char *out, size_t len)
{
    snprintf(out, len, "%s", word);
    char cwd[PATH_MAX], real[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || access(word, F_OK) != 0 || !realpath(word, real))
        return;
    int relative_here = word[0] != '/' && !strcmp(cwd, root);
    size_t rl = strlen(root);
    if (relative_here || strncmp(real, root, rl) || real[rl] != '/')
        return;
    snprintf(out, len, "%s%s", first ? "./" : "", real + rl + 1);
}

void repro_golden_bisect_command(const char *root, const char *since, char *const *program,
                                 char *buf, size_t len)
{
    const char *build = repro_golden_build_command(root);
    snprintf(buf, len, "repro bisect --commits %.12s..HEAD --build", since);
    repro_shell_word_append(buf, len, build ? build : "true");
    repro_shell_word_append(buf, len, "--");
    for (int i = 0; program[i]; i++) {
        char word[PATH_MAX];
        rebase_word(root, program[i], i == 0, word, sizeof word);
        repro_shell_word_append(buf, len, word);
    }
}
