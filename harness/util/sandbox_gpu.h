/* What a GPU program needs from the host inside the sandbox (sandbox.h,
 * opts.gpu): the NVIDIA driver's device nodes, bound with --dev-bind
 * into the sandbox's otherwise bare /dev, and its user-space libraries
 * (libcuda.so*, libnvidia-*.so*), read-only. Those usually lie in
 * /usr/lib/<triplet>, which every sandbox already sees read-only (/usr is
 * bound whole, /lib* are its links or binds); a directory outside /usr
 * that holds some (a driver installed under /opt) is bound read-only
 * whole at its host path, so that the versioned names' links resolve. The loader finds them through
 * the host's /etc/ld.so.cache, which every sandbox reads.
 *
 * The discovery reads a directory it is given (the host's /dev; a test
 * points it at a scratch directory of nodes made with mknod) and checks
 * each node is a character device: a plain file of that name is not a
 * GPU, and binding one would only make the program fail later. */
#ifndef REPRO_SANDBOX_GPU_H
#define REPRO_SANDBOX_GPU_H

#include <stddef.h>

#define REPRO_GPU_NODES_MAX 40
#define REPRO_GPU_LIBS_MAX 64

typedef struct {
    char dev_dir[256];                      /* where the nodes were found */
    char nodes[REPRO_GPU_NODES_MAX][32];    /* names in dev_dir: nvidia0.., nvidiactl, ... */
    char node_paths[REPRO_GPU_NODES_MAX][300]; /* dev_dir/name */
    int nnodes;
    char libs[REPRO_GPU_LIBS_MAX][512];     /* directories outside /usr holding driver
                                               libraries, bound read-only */
    int nlibs;
    int libs_in_usr;                        /* driver libraries found under /usr (seen already) */
} repro_sandbox_gpu;

/* The NVIDIA nodes of dev_dir (NULL: "/dev"): nvidia0..N, nvidiactl,
 * nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, each a character device,
 * and the directory nvidia-caps. At least one nvidiaN, nvidiactl and
 * nvidia-uvm (CUDA's unified memory, which the runtime opens at start)
 * are required: 0, or -1 with why naming each one missing (the error
 * slot is not touched; the caller decides). Also fills libs from
 * lib_dirs (NULL: the usual ones and those of /etc/ld.so.conf.d). */
int repro_sandbox_gpu_find(const char *dev_dir, const char *const *lib_dirs,
                           repro_sandbox_gpu *g, char *why, size_t len);
/* NULL-terminated lists pointing into g, for repro_sandbox_args: the
 * nodes' host paths (nodes, REPRO_GPU_NODES_MAX + 1 slots; each bound
 * with --dev-bind at /dev/NAME) and the library directories outside /usr
 * (libs, REPRO_GPU_LIBS_MAX + 1 slots; bound read-only at their paths). */
void repro_sandbox_gpu_lists(const repro_sandbox_gpu *g, const char **nodes, const char **libs);
/* "GPU: /dev/nvidia0, nvidiactl, nvidia-uvm bound; driver libraries in
 * /usr (read-only with it)" and the like. */
void repro_sandbox_gpu_describe(const repro_sandbox_gpu *g, char *buf, size_t len);

#endif
