/* A tensor-name map for comparing traces of different producers (`repro
 * diff --map FILE`): B's names as A's, one pair a line,
 *
 *     # PyTorch (B)   = repro (A)
 *     fc1.weight      = param.fc1.weight
 *     infer.logits    = logits
 *
 * blank lines and '#' comments allowed; names are 1 to 63 bytes without
 * spaces or '='. A name on either side may appear once. A tensor the map
 * does not name keeps its name. Every error names FILE:LINE; an entry whose
 * tensor is in neither trace is reported by the comparison, with its line. */
#ifndef REPRO_TENSOR_MAP_H
#define REPRO_TENSOR_MAP_H

typedef struct {
    char b[64], a[64];
    int line;
    int seen_a, seen_b; /* found in A's, in B's trace (set by the comparison) */
} repro_map_entry;

typedef struct {
    char path[1024];
    repro_map_entry *v;
    int n, cap;
} repro_tensor_map;

/* 0, or -1 (REPRO_EINVAL, or REPRO_ENOTFOUND for a missing file) naming
 * FILE:LINE. An empty map (no file) is valid: every name maps to itself. */
int repro_tensor_map_load(repro_tensor_map *m, const char *path);
/* The entry that maps A's name `a`, or NULL. */
repro_map_entry *repro_tensor_map_by_a(repro_tensor_map *m, const char *a);
/* The entry that maps B's name `b`, or NULL. */
repro_map_entry *repro_tensor_map_by_b(repro_tensor_map *m, const char *b);
void repro_tensor_map_release(repro_tensor_map *m);

#endif
