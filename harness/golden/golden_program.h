/* Goldens of a user's own program (`-- PROGRAM`): which repository holds
 * them, which golden a command that does not run the program means, and
 * what a mismatch report names (the program's own changed sources, and a
 * bisect command that runs as printed).
 *
 * The name rule, for every command: a program's golden is
 * golden/NAME/CLASS.jsonl with NAME = --name when given, else the
 * experiment name the program records (repro_run_info.experiment).
 * Commands that run the program (bless, check) read that name from run 1's
 * trace; those that do not (log) find the golden whose header records the
 * same program. */
#ifndef REPRO_GOLDEN_PROGRAM_H
#define REPRO_GOLDEN_PROGRAM_H

#include <jansson.h>
#include <stdio.h>

#include "history/git.h"

/* The directory whose repository holds the goldens: the experiment file's
 * directory, else the directory of the program (argv[0] when it names a
 * path, else the script an interpreter runs, when that names an existing
 * path), else "." (the current directory). Never fails. */
void repro_golden_anchor(const char *exp_file, char *const *program, char *buf, size_t len);

/* Opens the repository that holds the goldens of exp_file or program
 * (repro_golden_anchor); for a program outside any repository, that of
 * the current directory. The error names the directory searched from. */
int repro_golden_open_repo(repro_git **out, const char *exp_file, char *const *program);

/* The name of the golden under root/golden/ whose header records
 * `program` (the same argv[0], and the same program name as
 * repro_program_name gives): 0 with name set, or -1 (exit 2) naming the
 * directory searched when none does, or the candidates when several do
 * (then --name decides). */
int repro_golden_name_for_program(const char *root, char *const *program, char *name,
                                  size_t len);

/* The build command the repository at `root` implies: "make" when it has a
 * Makefile (makefile, GNUmakefile), a CMake configure-and-build when it has
 * CMakeLists.txt, else NULL (nothing to build). */
const char *repro_golden_build_command(const char *root);

/* Writes `repro bisect --commits SINCE..HEAD [--build CMD] -- PROGRAM...`
 * to buf, each word shell-quoted when it needs it, so that it runs as
 * printed in `root` (a program relative to the current directory is made
 * relative to root). With no build file the build is `true`: bisect's
 * default build is make, which would fail every probe. */
void repro_golden_bisect_command(const char *root, const char *since, char *const *program,
                                 char *buf, size_t len);

/* The mismatch report of a program's golden blessed at `since`: the paths
 * of the program's repository that changed since (uncommitted first, then
 * by the newest commit that touched each, goldens and run directories
 * left out; build files marked), and the bisect command. Fills
 * json["uncommitted_paths"], ["changed_paths"], ["bisect_command"]. */
void repro_golden_program_changes(repro_git *git, const char *since, char *const *program,
                                  FILE *out, json_t *json);

#endif
