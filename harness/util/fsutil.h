/* Small file-system helpers shared by the commands that write run
 * directories, goldens and dumps. */
#ifndef REPRO_FSUTIL_H
#define REPRO_FSUTIL_H

/* mkdir -p of `dir` itself (every component, 0777 & umask). Returns 0, or -1
 * with the error slot set (exit 3) naming the directory that failed. */
int repro_mkdirs(const char *dir);

#endif
