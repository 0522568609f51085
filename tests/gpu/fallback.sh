#!/bin/sh
# tests/gpu/fallback.sh OUTDIR: builds the CUDA-only check (check_cuda_ops
# with -DREPRO_GPU_STANDALONE) in place with nvcc, from the kernels' sources
# alone: no libgit2, jansson, inih, OpenSSL or Check (the host's reference
# leaf digests come from kernels/shared/sha256.h). run.sh uses it on a GPU
# machine where the staged binaries cannot start; selftest.sh builds it in
# make check so that it cannot rot.
#
# Run from the repository root or a staged folder's root (it has kernels/,
# include/ and tests/gpu/). Needs nvcc, a C compiler and cuDNN (cudnn.h:
# $CUDNN_INCLUDE, the pip wheel's nvidia/cudnn/include, CUDA's include/;
# libcudnn.so.9: $CUDNN_LIB_DIR as run.sh found it). Objects are kept in
# OUTDIR and rebuilt when any source is newer. $REPRO_GPU_NVCC_ARCH
# replaces the default targets (sm_80, sm_90, compute_90 PTX).
# Prints OUTDIR/check_cuda_ops on success; exit 1 with the compiler's
# message on failure.
set -u
out=${1:?usage: fallback.sh OUTDIR}
mkdir -p "$out/obj" || exit 1
out=$(cd "$out" && pwd)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CC=${CC:-cc}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
ARCH=${REPRO_GPU_NVCC_ARCH:--gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90}
[ -x "$NVCC" ] || command -v "$NVCC" >/dev/null || { echo "fallback: no nvcc ($NVCC)"; exit 1; }

inc=${CUDNN_INCLUDE:-}
for d in "$(timeout 30 "${PYTHON:-python3}" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0] + "/include")' 2>/dev/null)" \
    "$CUDA_HOME/include" /usr/include; do
    [ -z "$inc" ] && [ -n "$d" ] && [ -e "$d/cudnn.h" ] && inc=$d
done
[ -n "$inc" ] || { echo "fallback: cudnn.h not found (set CUDNN_INCLUDE)"; exit 1; }
libdir=${CUDNN_LIB_DIR:-}
[ -n "$libdir" ] || { echo "fallback: CUDNN_LIB_DIR (the folder of libcudnn.so.9) not set"; exit 1; }

# The same numerics flags as the Makefile's: no contraction into FMA, IEEE
# division and square root, denormals kept.
CFLAGS="-std=c11 -D_GNU_SOURCE -O2 -ffp-contract=off -fno-fast-math -Wall -Wextra -Iinclude -I. -DREPRO_HAVE_CUDA -DREPRO_GPU_STANDALONE"
NVCCFLAGS="-std=c++17 -O2 --fmad=false -prec-div=true -prec-sqrt=true -ftz=false $ARCH -Iinclude -I. -I$inc -DREPRO_HAVE_CUDA"
newest=$(find kernels include tests/gpu/check_cuda_ops.c tests/gpu/ops_compare.h -type f -newer "$out/stamp" 2>/dev/null | head -n 1)
[ -e "$out/stamp" ] && [ -z "$newest" ] && [ -x "$out/check_cuda_ops" ] && { echo "$out/check_cuda_ops"; exit 0; }

# One compile job per source, in parallel.
srcs=$(ls kernels/*.c kernels/cpu/*.c kernels/cuda/*.c kernels/cuda/*.cu tests/gpu/check_cuda_ops.c)
jobs=$(nproc 2>/dev/null || echo 2)
[ -n "${REPRO_GPU_JOBS:-}" ] && jobs=$REPRO_GPU_JOBS
rm -f "$out"/obj/*.o "$out/errors"
export CC NVCC CFLAGS NVCCFLAGS out
echo "$srcs" | tr ' ' '\n' | xargs -P "$jobs" -I{} sh -c '
    f={}; o="$out/obj/$(echo "$f" | tr / _).o"
    case "$f" in
    *.cu) $NVCC $NVCCFLAGS -c "$f" -o "$o" ;;
    *) $CC $CFLAGS -c "$f" -o "$o" ;;
    esac >>"$out/errors" 2>&1 || echo "fallback: compiling $f failed" >>"$out/errors"'
if grep -q 'fallback: compiling' "$out/errors" 2>/dev/null; then
    tail -n 40 "$out/errors"
    exit 1
fi
if ! $CC -o "$out/check_cuda_ops" "$out"/obj/*.o -L"$libdir" -Wl,-rpath,"$libdir" -l:libcudnn.so.9 \
    -L"$CUDA_HOME/lib64" -Wl,-rpath,"$CUDA_HOME/lib64" -lcudart -lstdc++ -lpthread -lm >>"$out/errors" 2>&1; then
    tail -n 40 "$out/errors"
    echo "fallback: linking failed"
    exit 1
fi
touch "$out/stamp"
echo "$out/check_cuda_ops"
