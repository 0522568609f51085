/* `repro run --memory-timeline FILE -- PROGRAM`: the program's Python
 * client (python/repro/memory.py) writes its timeline as JSON where
 * $REPRO_MEMORY_TIMELINE says; repro then writes FILE from it (SVG or the
 * same JSON), marked cut when the program failed. */
#ifndef REPRO_CLI_RUN_MEMTL_H
#define REPRO_CLI_RUN_MEMTL_H

#include <stddef.h>

#define REPRO_MEMTL_ENV "REPRO_MEMORY_TIMELINE"

/* Sets $REPRO_MEMORY_TIMELINE to a fresh absolute path beside `path`
 * (written into tmp). 0 or -1 (error slot). */
int repro_run_memtl_begin(const char *path, char *tmp, size_t tmp_len);
/* After the program: reads tmp, writes path, removes tmp. failed: the
 * program's run failed (the error slot says why; kept as it was). Returns
 * 0, or -1 with the error slot set when nothing could be written. */
int repro_run_memtl_end(const char *path, const char *tmp, int failed);

#endif
