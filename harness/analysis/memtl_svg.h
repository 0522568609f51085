/* The memory timeline (core/memtl.h) as a picture and as a file.
 *
 *   SVG   one self-contained image (no scripts, no fonts fetched): the
 *         categories stacked over steps, allocated and reserved as two
 *         lines, the backend's measured figures dotted beside them, the
 *         annotated events as ticks in lanes above, and a run that stopped
 *         early marked "cut".
 *   JSON  the layout of a PyTorch memory snapshot
 *         (torch.cuda.memory._snapshot(): "segments" and "device_traces"
 *         with alloc / free_requested / free_completed / segment_alloc /
 *         segment_free entries, each entry's frames naming the category
 *         and step), which PyTorch's viewer (memory_viz) opens, plus
 *         repro's per-step figures under "repro_memory_timeline", which is
 *         what repro reads back. docs/memory.md says how close it is.
 *
 * Stable API (the HTML report embeds the SVG). Every failure is -1 (or
 * NULL) with the error slot set. */
#ifndef REPRO_MEMTL_SVG_H
#define REPRO_MEMTL_SVG_H

#include <jansson.h>

#include "core/memtl.h"

/* The picture, a NUL-terminated malloc'd string (the caller frees). */
char *repro_memtl_svg(const repro_memtl *tl);

/* The snapshot document (new reference). */
json_t *repro_memtl_to_json(const repro_memtl *tl);
/* Reads a document written by repro_memtl_to_json or a client into tl
 * (initialized here; repro_memtl_release frees it): its per-step figures,
 * not its events. `what` names it in errors (a path). */
int repro_memtl_from_json(repro_memtl *tl, const json_t *doc, const char *what);
int repro_memtl_read(repro_memtl *tl, const char *path);

/* 1 for a path ending in .json, 0 for .svg, -1 (REPRO_EINVAL) otherwise. */
int repro_memtl_path_is_json(const char *path);
/* Before a run: refuses (REPRO_EINVAL) a path that is a directory, whose
 * directory is missing, or that cannot be written, or that ends in
 * neither .svg nor .json; `what` names the option. */
int repro_memtl_check_path(const char *path, const char *what);
/* Writes tl to path as SVG or JSON by its extension (util/outpath.h). */
int repro_memtl_write(const repro_memtl *tl, const char *path);

#endif
