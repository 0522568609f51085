#!/bin/sh
# The GPU check's own test, run by `make check` (check-run) wherever nvcc and
# cuDNN are found, so that tests/gpu/ cannot rot between the rare runs on a
# GPU (issue 37). No GPU is needed, and a GPU machine gives the same result
# (CUDA_VISIBLE_DEVICES is emptied for the dry runs):
#
#  1. every file under tests/gpu/ compiles: the check programs against
#     librepro (make gpu-bins), check_cuda_ops alone (fallback.sh, the build
#     a GPU machine without our deps falls back to; sm_90 only, objects
#     kept in BUILD/gpu/fallback), every script (sh -n), the PyTorch demo
#     (py_compile) and, where python3 has PyTorch, its CPU run under
#     repro check; the Python client's CUDA-tensor path (client_cuda.py, a
#     stand-in torch);
#  2. the Makefile finds cuDNN in the pip wheel's layout (libcudnn.so.9, no
#     libcudnn.so) and links it;
#  3. run.sh --prepare stages into BUILD/gpu/stage, and every staged binary
#     resolves its libraries inside the stage or to glibc/driver/cuDNN;
#  4. a dry run with a fake nvidia-smi claiming a GPU: the staged binaries
#     start and reach device initialisation, and the run ends as a FAILURE
#     naming the missing device (exit 1), its summary written to $OUT;
#  5. without nvidia-smi (or with one that lists nothing): exit 3, saying so;
#     with no libcudnn.so.9: exit 1 naming it; --prepare without nvcc: exit 3;
#  6. negative controls: with a library removed from the stage the stage
#     check fails naming it; with a staged library that cannot load, the
#     run says the staged binaries cannot start and takes the fallback path.
#
# Exit 0 passed (or skipped, saying why), 1 failed.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/stage_lib.sh
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
start=$(date +%s)
if [ -n "${REPRO_GPU_SELFTEST_SKIP:-}" ]; then
    echo "gpu selftest: skipped: $REPRO_GPU_SELFTEST_SKIP"
    exit 0
fi
probe=$($MAKE --no-print-directory -s BUILD="$BUILD" gpu-probe 2>/dev/null)
val() { echo "$probe" | sed -n "s/^$1=//p"; }
if [ -z "$(val nvcc)" ]; then
    echo "gpu selftest: skipped: no nvcc"
    exit 0
fi
if [ -z "$(val have_cuda)" ]; then
    echo "gpu selftest: skipped: nvcc found but not cuDNN (cudnn.h: '$(val cudnn_h)', libcudnn: '$(val cudnn_lib)')"
    exit 0
fi
T=$(mktemp -d /tmp/repro-gpu-selftest.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "  ✓ $*"; }
bad() {
    echo "  ✗ $*"
    fails=$((fails + 1))
}
# expect WHAT WANT-RC GOT-RC OUTPUT-FILE PATTERN...: every PATTERN (ERE) in
# the output, and the exit status wanted.
expect() {
    e_what=$1 e_want=$2 e_got=$3 e_file=$4
    shift 4
    if [ "$e_got" -ne "$e_want" ]; then
        bad "$e_what: exit $e_got, wanted $e_want"
        tail -n 20 "$e_file" | sed 's/^/      /'
        return 1
    fi
    for e_pat in "$@"; do
        if ! grep -qE -- "$e_pat" "$e_file"; then
            bad "$e_what: no line matching '$e_pat'"
            tail -n 20 "$e_file" | sed 's/^/      /'
            return 1
        fi
    done
    ok "$e_what"
}

# ---- 1. everything under tests/gpu/ compiles -------------------------------------
for f in tests/gpu/*; do
    case "$f" in
    *.sh) sh -n "$f" || bad "$f: sh -n failed" ;;
    tests/gpu/check_cuda_ops.c | tests/gpu/step_time.c) ;; # built below
    tests/gpu/ops_compare.h) ;;  # in check_cuda_ops, and the gpu_compare suite
    tests/gpu/fake_device.[ch]) ;; # built below (make gpu-fake)
    tests/gpu/client_cuda.py) ;;                           # run below
    *) bad "$f: this test does not know how to compile it (add it here)" ;;
    esac
done
if $MAKE --no-print-directory -j2 BUILD="$BUILD" gpu-bins >"$T/make" 2>&1; then
    ok "tests/gpu/*.c built against librepro (make gpu-bins: check_cuda_ops, step_time)"
else
    bad "make gpu-bins failed"
    tail -n 20 "$T/make"
fi
stage_find_cudnn
CUDNN_LIB_DIR=$stage_cudnn_dir
export CUDNN_LIB_DIR
if CUDNN_INCLUDE=$(dirname "$(val cudnn_h)") REPRO_GPU_NVCC_ARCH=-arch=sm_90 REPRO_GPU_JOBS=2 \
    sh tests/gpu/fallback.sh "$BUILD/gpu/fallback" >"$T/fb" 2>&1; then
    ok "check_cuda_ops built alone, as the fallback builds it (nvcc, no librepro)"
else
    bad "the fallback build failed:"
    tail -n 20 "$T/fb"
fi
if python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
    examples/torch/cuda_scatter.py "$T/demo.pyc" 2>"$T/py"; then
    ok "examples/torch/cuda_scatter.py compiles"
else
    bad "examples/torch/cuda_scatter.py: $(cat "$T/py")"
fi

if PYTHONPATH=python REPRO_LIB="$(pwd)/$BUILD/librepro.so" python3 tests/gpu/client_cuda.py >"$T/client" 2>&1; then
    ok "the Python client copies CUDA tensors to the host for hashing (tests/gpu/client_cuda.py)"
else
    bad "the Python client and CUDA tensors: $(tail -n 3 "$T/client")"
fi

# The PyTorch demo on the CPU under repro check (its CUDA runs need a GPU):
# it runs, records through the client, and reproduces.
torch_py=
for p in python3 /usr/bin/python3; do
    "$p" -c 'import torch' >/dev/null 2>&1 && { torch_py=$p; break; }
done
if [ -z "$torch_py" ]; then
    echo "  - the PyTorch demo on the CPU: skipped (no python3 with PyTorch here)"
else
    PYTHONPATH=python REPRO_LIB="$(pwd)/$BUILD/librepro.so" "$BUILD/repro" check --runs 2 --no-golden -q \
        -- "$torch_py" examples/torch/cuda_scatter.py --device cpu >"$T/demo" 2>&1
    expect "the PyTorch demo on the CPU reproduces under repro check ($torch_py)" 0 $? "$T/demo" \
        '^reproducible: 2 runs identical over 20 steps'
    rm -rf runs/cuda_scatter
fi

# ---- 2. the pip wheel's cuDNN layout ------------------------------------------------
mkdir -p "$T/pip/include" "$T/pip/lib"
for h in "$(dirname "$(val cudnn_h)")"/cudnn*.h; do ln -s "$h" "$T/pip/include/"; done
ln -s "$CUDNN_LIB_DIR/libcudnn.so.9" "$T/pip/lib/libcudnn.so.9"
pip_probe=$($MAKE --no-print-directory -s BUILD="$BUILD" CUDNN_HOME="$T/pip" gpu-probe 2>&1)
printf '#include <cudnn.h>\n#include <stdio.h>\nint main(void) { printf("%%zu\\n", cudnnGetVersion()); return 0; }\n' >"$T/v.c"
if echo "$pip_probe" | grep -q "^cudnn_lib=$T/pip/lib/libcudnn.so.9$" &&
    echo "$pip_probe" | grep -q -- "-l:libcudnn.so.9" &&
    cc -o "$T/v" "$T/v.c" -I"$T/pip/include" $(echo "$pip_probe" | sed -n 's/^cuda_link=//p') >"$T/cc" 2>&1 &&
    "$T/v" >/dev/null; then
    ok "Makefile finds cuDNN in the pip wheel's layout (libcudnn.so.9 only) and links it (-l:libcudnn.so.9)"
else
    bad "Makefile's cuDNN probe on the pip layout: $(echo "$pip_probe" | tr '\n' ' ') $(cat "$T/cc")"
fi

# ---- 3. prepare ---------------------------------------------------------------------
STAGE=$BUILD/gpu/stage
REPRO_GPU_STAGE=$STAGE BUILD=$BUILD MAKE=$MAKE sh tests/gpu/run.sh --prepare >"$T/prep" 2>&1
expect "run.sh --prepare stages into $STAGE and verifies it" 0 $? "$T/prep" '^✓ staged into' || exit 1
if stage_verify "$STAGE" >"$T/verify"; then
    ok "every staged binary resolves its libraries in the stage or to glibc/driver/cuDNN ($(ls "$STAGE/lib" | wc -l) staged)"
else
    bad "the stage needs libraries it does not hold: $(cat "$T/verify")"
fi

# ---- 4. the dry run: a GPU claimed, none there ------------------------------------------
mkdir -p "$T/fake"
printf '#!/bin/sh\necho "GPU 0: NVIDIA Fake (UUID: GPU-00000000-0000-0000-0000-000000000000)"\n' >"$T/fake/nvidia-smi"
chmod +x "$T/fake/nvidia-smi"
PATH="$T/fake:$PATH" CUDA_VISIBLE_DEVICES= OUT="$T/out" sh "$STAGE/tests/gpu/run.sh" >"$T/dry" 2>&1
rc=$?
expect "dry run with a fake nvidia-smi: FAILURE naming the missing device (exit 1)" 1 $rc "$T/dry" \
    '^GPU: GPU 0: NVIDIA Fake' '^path: staged binaries' \
    '^✗ ops linear: no device, although nvidia-smi lists a GPU: no GPU check: cuda backend unavailable' \
    '^gpu checks: FAILED \([0-9]+\): no usable CUDA device, although nvidia-smi lists a GPU'
expect "dry run: the staged binaries started and reached device initialisation" 0 0 "$T/out/gpu-log.txt" \
    '^reaching the device: creating the cuda backend' '^repro [0-9]'
expect "dry run: summary and log written to \$OUT as the checks finished" 0 0 "$T/out/gpu-summary.txt" \
    '^GPU: ' '^✗ ops memory' '^gpu checks: FAILED'

# ---- 5. no GPU at all; no cuDNN ------------------------------------------------------
REPRO_NVIDIA_SMI="$T/absent/nvidia-smi" OUT="$T/out2" sh "$STAGE/tests/gpu/run.sh" >"$T/nogpu" 2>&1
expect "no nvidia-smi: exit 3, saying so" 3 $? "$T/nogpu" '^no GPU: nvidia-smi not found' \
    '^gpu checks: not run \(no GPU\)'
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."\nexit 9\n' >"$T/fake/nvidia-smi-none"
chmod +x "$T/fake/nvidia-smi-none"
REPRO_NVIDIA_SMI="$T/fake/nvidia-smi-none" sh "$STAGE/tests/gpu/run.sh" >"$T/nogpu2" 2>&1
expect "nvidia-smi listing no GPU: exit 3, saying so" 3 $? "$T/nogpu2" '^no GPU: nvidia-smi -L lists none'
PATH="$T/fake:$PATH" CUDNN_LIB="$T/absent" sh "$STAGE/tests/gpu/run.sh" >"$T/nocudnn" 2>&1
expect "no libcudnn.so.9: exit 1 naming it, not 'no GPU'" 1 $? "$T/nocudnn" \
    '^✗ libcudnn.so.9 not found' 'FAILED: libcudnn.so.9 missing'

REPRO_GPU_STAGE="$T/stage-nocuda" BUILD=$BUILD MAKE="$MAKE NVCC=" sh tests/gpu/run.sh --prepare >"$T/prep3" 2>&1
expect "run.sh --prepare without nvcc: exit 3, saying so" 3 $? "$T/prep3" '^prepare: no CUDA build possible here'

# ---- 6. negative controls ---------------------------------------------------------------
cp -R "$STAGE" "$T/stage-minus" && rm "$T/stage-minus/lib/libjansson.so.4"
if stage_verify "$T/stage-minus" >"$T/minus" 2>&1; then
    bad "negative control: the stage check passed with libjansson.so.4 removed from the stage"
else
    expect "negative control: a library removed from the stage fails the stage check, named" 0 0 \
        "$T/minus" 'libjansson\.so\.4: (not found|resolved outside the stage)'
fi
cp -R "$STAGE" "$T/stage-broken" && : >"$T/stage-broken/lib/libcudart.so.13"
PATH="$T/fake:$PATH" CUDA_VISIBLE_DEVICES= REPRO_GPU_FALLBACK_DIR="$(pwd)/$BUILD/gpu/fallback" \
    REPRO_GPU_NVCC_ARCH=-arch=sm_90 CUDNN_INCLUDE=$(dirname "$(val cudnn_h)") \
    sh "$T/stage-broken/tests/gpu/run.sh" >"$T/broken" 2>&1
expect "negative control: staged binaries that cannot start: the run says so and takes the fallback" 1 $? \
    "$T/broken" '^the staged binaries cannot start here: .*libcudart\.so\.13' '^path: FALLBACK' \
    '^✗ ops linear: no device, although nvidia-smi lists a GPU' '^✗ repro-level checks \(3-7\) not run'

echo "gpu selftest: $([ $fails -eq 0 ] && echo passed || echo "FAILED ($fails)") in $(($(date +%s) - start)) s"
[ $fails -eq 0 ]
