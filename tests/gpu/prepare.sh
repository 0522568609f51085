#!/bin/sh
# tests/gpu/run.sh --prepare (run here, on a machine with our build deps,
# nvcc and cuDNN's headers; no GPU needed): builds what the GPU checks need
# and stages it into one folder that runs on a GPU machine with nothing but
# its driver, a CUDA runtime and cuDNN (docs/gpu-check.md).
#
#   STAGE/bin/        repro, check_cuda_ops, step_time (built without Open MPI)
#   STAGE/lib/        librepro.so and every shared library the binaries need
#                     that is neither glibc's, the driver's, cuDNN's nor the
#                     C++ runtime (ldd; the C++ runtime only when the
#                     binaries need a newer one than the oldest image has)
#   STAGE/tests/gpu/  this script's siblings: run.sh is the entry point there
#   STAGE/kernels/, include/, tests/gpu/check_cuda_ops.c: the fallback's sources
#   STAGE/experiments/, examples/torch/, python/repro/: what the checks run
#   STAGE/STAGE       what was staged, from which commit, and its floors: the
#                     glibc (glibc_min) and NVIDIA driver (driver_min) the
#                     GPU machine needs, which run.sh prints and checks
#
# STAGE is $REPRO_GPU_STAGE or .gpu/ in the repository root (git-ignored).
# Exit 0 staged and verified, 1 build or verification failed, 3 no CUDA
# build possible here (no nvcc or no cuDNN).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/stage_lib.sh
STAGE=${REPRO_GPU_STAGE:-.gpu}
BUILD=${BUILD:-build}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
LIMIT_MIB=60
MAKE=${MAKE:-make}

log=$(mktemp /tmp/repro-gpu-prepare.XXXXXX)
if ! $MAKE --no-print-directory -j"${JOBS:-2}" BUILD="$BUILD" gpu-bins >"$log" 2>&1; then
    tail -n 30 "$log"
    if grep -q 'no CUDA build here' "$log"; then
        rm -f "$log"
        echo "prepare: no CUDA build possible here (nvcc and cuDNN are needed to stage)"
        exit 3
    fi
    rm -f "$log"
    echo "✗ prepare: build failed (make gpu-bins)"
    exit 1
fi
rm -f "$log"

rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/tests/gpu" "$STAGE/include" "$STAGE/experiments" \
    "$STAGE/examples/torch" "$STAGE/python/repro" || exit 1
cp "$BUILD/gpu/repro" "$BUILD/gpu/check_cuda_ops" "$BUILD/gpu/step_time" "$STAGE/bin/" || exit 1
cp "$BUILD/gpu/librepro.so" "$STAGE/lib/librepro.so" || exit 1
ln -sf librepro.so "$STAGE/lib/librepro.so.0"

# The C++ runtime is staged only when the binaries need a newer one than
# the oldest GPU image has (stage_cxx_runtime_needed): the build machine's
# libstdc++ would raise the stage's glibc floor to the build machine's.
STAGE_CXX_RUNTIME=${REPRO_GPU_STAGE_CXX:-0} # 1: stage it anyway (selftest's negative control)
stage_cxx_runtime_needed "$STAGE"/bin/* "$STAGE/lib/librepro.so" && STAGE_CXX_RUNTIME=1
export STAGE_CXX_RUNTIME

# Every library ldd resolves for the binaries (transitively: ldd lists the
# whole closure) that the GPU machine is not expected to have.
for f in "$STAGE"/bin/* "$STAGE/lib/librepro.so"; do
    stage_ldd "$f"
done | sort -u | while read -r name path; do
    stage_system_lib "$name" && continue
    if [ "$path" = not-found ]; then
        echo "✗ prepare: $name is needed but not found here" >&2
        echo fail
        continue
    fi
    cp -L "$path" "$STAGE/lib/$name" || echo fail
done | grep -q fail && exit 1

# Sources and inputs of the checks.
cp tests/gpu/*.sh tests/gpu/*.c tests/gpu/*.h tests/gpu/*.py "$STAGE/tests/gpu/" || exit 1
cp -R kernels "$STAGE/" && cp -R include/repro "$STAGE/include/" || exit 1
cp experiments/*.ini "$STAGE/experiments/" || exit 1
cp examples/torch/*.py "$STAGE/examples/torch/" || exit 1
cp python/repro/__init__.py "$STAGE/python/repro/" || exit 1
find "$STAGE/kernels" -name '*.o' -delete

# The floors: the newest glibc symbol version any staged file references
# (the GPU machine's glibc must be at least this), and the driver branch the
# staged CUDA runtime needs.
glibc=$(stage_needed_version GLIBC "$STAGE"/bin/* "$STAGE"/lib/*)
cuda_rt=$("$NVCC" --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p')
driver=$(stage_driver_floor "$cuda_rt")
need_cxx=$(stage_needed_version GLIBCXX "$STAGE"/bin/* "$STAGE/lib/librepro.so")
need_abi=$(stage_needed_version CXXABI "$STAGE"/bin/* "$STAGE/lib/librepro.so")
cxx_need="GLIBCXX ${need_cxx:-none}, CXXABI ${need_abi:-none}"
cxx="not staged: the binaries need $cxx_need, no newer than the oldest image's (GLIBCXX $STAGE_OLDEST_GLIBCXX, CXXABI $STAGE_OLDEST_CXXABI)"
[ "$STAGE_CXX_RUNTIME" = 1 ] && cxx="staged: the binaries need $cxx_need$(stage_cxx_runtime_needed "$STAGE"/bin/* "$STAGE/lib/librepro.so" &&
    echo ", newer than the oldest image's (GLIBCXX $STAGE_OLDEST_GLIBCXX, CXXABI $STAGE_OLDEST_CXXABI)" ||
    echo "; staged because REPRO_GPU_STAGE_CXX=1")"
{
    echo "repro GPU stage"
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(ldd --version 2>&1 | head -n 1)"
    echo "glibc_min: ${glibc:-?}"
    echo "cuda_runtime: ${cuda_rt:-?}"
    echo "driver_min: ${driver:-?}"
    echo "needs: glibc >= ${glibc:-?}, an NVIDIA driver R${driver:-?} or newer for the staged CUDA ${cuda_rt:-?} runtime (libcudart), libcudnn.so.9"
    echo "C++ runtime: $cxx"
    echo "libraries staged: $(cd "$STAGE/lib" && ls | tr '\n' ' ')"
} >"$STAGE/STAGE"

size_kib=$(du -skL "$STAGE" | cut -f1)
if [ "$size_kib" -gt $((LIMIT_MIB * 1024)) ]; then
    echo "✗ prepare: $STAGE is $((size_kib / 1024)) MiB, over the $LIMIT_MIB MiB limit"
    exit 1
fi
# The check the GPU machine's loader will make: everything resolves inside
# the stage or to what the machine provides.
stage_find_cudnn
CUDNN_LIB_DIR=$stage_cudnn_dir
if ! LD_LIBRARY_PATH="${CUDNN_LIB_DIR}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" stage_verify "$STAGE"; then
    echo "✗ prepare: the staged binaries need libraries that are not staged (above)"
    exit 1
fi
echo "✓ staged into $STAGE ($((size_kib / 1024)) MiB; needs glibc >= ${glibc:-?}, driver R${driver:-?}+ for CUDA ${cuda_rt:-?}): $(ls "$STAGE/bin" | tr '\n' ' ')+ $(ls "$STAGE/lib" | wc -l) libraries"
echo "  on the GPU machine, from the folder that holds $STAGE (docs/gpu-check.md):"
echo "    $(gpu_command "$STAGE")"
