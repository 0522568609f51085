/* Running repro itself as a fresh process (repro check runs every run in
 * its own process, as the determinism contract's "fresh process" scope
 * requires): /proc/self/exe with an argument list, stdout and stderr to
 * files, extra environment variables added. Nothing goes through a shell. */
#ifndef REPRO_RUN_SELF_H
#define REPRO_RUN_SELF_H

/* Runs `self argv...` (argv[0] is the subcommand, NULL-terminated), with
 * `env_add` ("K=V", may be NULL) added to the environment, stdout and stderr
 * redirected to the given files. Returns the exit status (0..255, or
 * 128+signal), or -1 with the error slot set if it could not start. */
int repro_spawn_self(char *const argv[], const char *env_add, const char *out_path,
                     const char *err_path);

#endif
