"""The thread pools this process really has, for the trace header.

A PyTorch program's bits can depend on more pools than torch's own: on
Debian, PyTorch calls the system BLAS, and OpenBLAS's pthread build starts
one thread per core unless OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) says
otherwise -- torch.get_num_threads() knows nothing of it. The header's
"thread_pools" lets `repro check --threads` tell runs whose pools were
equal from runs where one differed, and name it.

Each count is read from the library the process has already loaded (a
library that is not loaded has no pool to report, and is never loaded
here): the shared objects are found in /proc/self/maps and opened with
RTLD_NOLOAD, which hands back the loaded copy or fails.
"""

import ctypes
import os
import sys

# (header key, file name fragment, function, arguments) in the order they
# are reported. A BLAS pool's key has "blas" in it.
_LIBRARIES = (
    ("blas.openblas", "openblas", "openblas_get_num_threads"),
    ("blas.mkl", "mkl_rt", "MKL_Get_Max_Threads"),
    ("openmp", "gomp", "omp_get_max_threads"),
    ("openmp", "libomp", "omp_get_max_threads"),
    ("openmp", "iomp5", "omp_get_max_threads"),
)


def _loaded_objects():
    """Paths of the shared objects mapped into this process."""
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    paths = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) == 6 and ".so" in parts[5] and parts[5] not in paths:
            paths.append(parts[5].strip())
    return paths


def _count(path, function):
    """function() of the already-loaded library at path, or None."""
    mode = getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_LAZY", 1)
    try:
        lib = ctypes.CDLL(path, mode=mode)
        f = getattr(lib, function)
    except (OSError, AttributeError):
        return None
    f.restype = ctypes.c_int
    f.argtypes = []
    n = f()
    return n if n >= 1 else None


def thread_pools():
    """{name: threads} for torch's intra-op and inter-op pools (when torch
    is imported) and the BLAS and OpenMP runtimes the process has loaded."""
    pools = {}
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "get_num_threads"):
        pools["torch.intra_op"] = int(torch.get_num_threads())
        pools["torch.inter_op"] = int(torch.get_num_interop_threads())
    objects = _loaded_objects()
    for key, fragment, function in _LIBRARIES:
        if key in pools:
            continue
        for path in objects:
            if fragment in os.path.basename(path):
                n = _count(path, function)
                if n is not None:
                    pools[key] = n
                    break
    return pools
