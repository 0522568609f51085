#!/bin/sh
# tests/gpu/run.sh --prepare (run here, on a machine with our build deps,
# nvcc and cuDNN's headers; no GPU needed): builds what the GPU checks need
# and stages it into one folder that runs on a GPU machine with nothing but
# its driver, a CUDA runtime and cuDNN (docs/gpu-check.md).
#
#   STAGE/bin/        repro, check_cuda_ops, step_time (built without Open MPI)
#   STAGE/lib/        librepro.so and every shared library the binaries need
#                     that is neither glibc's, the driver's nor cuDNN's (ldd)
#   STAGE/tests/gpu/  this script's siblings: run.sh is the entry point there
#   STAGE/kernels/, include/, tests/gpu/check_cuda_ops.c: the fallback's sources
#   STAGE/experiments/, examples/torch/, python/repro/: what the checks run
#   STAGE/STAGE       what was staged, from which commit, needing which glibc
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

# The newest glibc symbol version any staged file needs: the GPU machine's
# glibc must be at least this.
glibc=$(for f in "$STAGE"/bin/* "$STAGE"/lib/*; do
    objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*'
done | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -n 1)
{
    echo "repro GPU stage"
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(ldd --version 2>&1 | head -n 1)"
    echo "needs: glibc >= ${glibc:-?}, an NVIDIA driver for $(${NVCC:-nvcc} --version 2>/dev/null | grep -o 'release [0-9.]*' | sed 's/release/CUDA/') (the staged libcudart), libcudnn.so.9"
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
echo "✓ staged into $STAGE ($((size_kib / 1024)) MiB; needs glibc >= ${glibc:-?}): $(ls "$STAGE/bin" | tr '\n' ' ')+ $(ls "$STAGE/lib" | wc -l) libraries"
echo "  on the GPU machine: $STAGE/tests/gpu/run.sh   (docs/gpu-check.md)"
