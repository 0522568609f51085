#!/bin/sh
# The GPU check's own test, run by `make check` (check-run), so that
# tests/gpu/ cannot rot between the rare runs on a GPU (issue 37): part 0
# everywhere, the rest wherever nvcc and cuDNN are found. No GPU is needed,
# and a GPU machine gives the same result (CUDA_VISIBLE_DEVICES is emptied
# for the dry runs):
#
#  0. the checks' logic without a device, no nvcc needed (issue 47):
#     check_cuda_ops against a fake device (make gpu-fake) passes when it
#     is honest and fails,
#     naming the fault, on a NaN, an unwritten output (and passes it with
#     the poison off: the poison is what catches it), an ineligible cuDNN
#     algorithm run instead of refused, a pick slower than another timed
#     one, a timed ineligible algorithm; tests/gpu/verdict.py fails a CPU
#     compare whose norm gap is within the tolerance and whose distance is
#     not, a report of one run per value, runs that differ;
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
#     run says the staged binaries cannot start and takes the fallback path;
#  7. the run itself: the stage's floors printed (glibc, driver) and a
#     driver older than the stage needs ending the run (exit 1); no C++
#     runtime staged (staging it raises the glibc floor: the negative
#     control); the python3 found in a venv when $PYTHON has no cuDNN
#     wheel, and by searching; LD_LIBRARY_PATH of every python3 the run
#     starts free of the stage; a hanging nvidia-smi cut off (exit 3); a
#     command's output in the log while it still runs; the command
#     docs/gpu-check.md gives is the one prepare prints.
#
# Exit 0 passed (or skipped, saying why), 1 failed.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/stage_lib.sh
BUILD=${BUILD:-build}
MAKE=${MAKE:-make}
start=$(date +%s)
# A skip says why on stdout and, when `make check` names a log
# ($REPRO_SKIP_LOG), adds a line there for the run's skip summary.
skip() { # WHY
    echo "gpu selftest: skipped: $1"
    [ -z "${REPRO_SKIP_LOG:-}" ] || printf 'gpu selftest\t%s\n' "$1" >>"$REPRO_SKIP_LOG"
}
if [ -n "${REPRO_GPU_SELFTEST_SKIP:-}" ]; then
    skip "$REPRO_GPU_SELFTEST_SKIP"
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

# ---- 0. the checks' logic, without a device (no nvcc needed) -----------------------------
if $MAKE --no-print-directory -j2 BUILD="$BUILD" gpu-fake >"$T/make-fake" 2>&1; then
    FAKE=$BUILD/gpu/check_cuda_ops_fake
    FAKE_GROUPS="linear conv cudnn pointwise softmax index_add hashing refusal"
    fake_run() { # fake_run FAULT: check_cuda_ops against the fake device with FAULT planted
        REPRO_GPU_FAKE_FAULT=$1 "$FAKE" $FAKE_GROUPS >"$T/fake-$1" 2>&1
    }
    fake_run none
    expect "check_cuda_ops on an honest fake device: every check passes" 0 $? "$T/fake-none" \
        '^[0-9]+ passed, 0 failed' '^info:     cudnn_implicit_precomp_gemm, tensor-op math: dropped: not FMA math' \
        '^✓ refusal: ineligible cudnn_'
    fake_run nan
    expect "fake device returning a NaN: the check fails, naming it" 1 $? "$T/fake-nan" \
        '^✗ conv2d.fwd cudnn_implicit_precomp_gemm .*GPU nan; 1 NaN where the CPU.s is not'
    fake_run unwritten
    expect "fake device leaving an output unwritten: the check fails, naming it" 1 $? "$T/fake-unwritten" \
        '^✗ conv2d.fwd cudnn_implicit_precomp_gemm .* ([0-9]+) of \1 elements outside.* \1 never written'
    REPRO_GPU_FAKE_NO_POISON=1 REPRO_GPU_FAKE_FAULT=unwritten "$FAKE" conv cudnn >"$T/fake-nopoison" 2>&1
    expect "negative control: without the poison, the unwritten output passes on stale data" 0 $? \
        "$T/fake-nopoison" '^[0-9]+ passed, 0 failed'
    fake_run ineligible_runs
    expect "fake device running an ineligible cuDNN algorithm instead of refusing it: fails" 1 $? \
        "$T/fake-ineligible_runs" '^✗ refusal: ineligible cudnn_[a-z_]+ .*NOT refused.*output WRITTEN'
    fake_run slow_pick
    expect "fake cudnnFind picking a slower algorithm than one it timed: fails" 1 $? "$T/fake-slow_pick" \
        '^✗ conv_algo_choose cudnnFind \(any\): .*timed faster'
    fake_run timed_ineligible
    expect "fake cudnnFind timing an ineligible algorithm: fails" 1 $? "$T/fake-timed_ineligible" \
        '^✗ conv_algo_choose cudnnFind .*was timed but is not admissible'
else
    bad "make gpu-fake failed: $(tail -n 5 "$T/make-fake")"
fi

# the compare verdicts on reports recorded here, on the CPU: lr 0.003 vs
# 0.0031 over 20 steps, a norm gap of ~0.007 (within 1e-2) and a distance
# of ~0.03 (not)
repro_abs=$(cd "$BUILD" && pwd)/repro cnn_abs=$(pwd)/experiments/cnn.ini
(cd "$T" && "$repro_abs" compare "$cnn_abs" --vary lr=0.003,0.0031 --runs 2 --steps 20 --json -q \
    >"$T/lr.json" 2>"$T/lr.err")
python3 tests/gpu/verdict.py backends "$T/lr.json" 1e-2 >"$T/v1" 2>&1
expect "verdict: a norm gap within the tolerance and a distance outside it fails" 1 $? "$T/v1" \
    'distance .*: 0\.0[1-9][0-9]* \(tolerance 0\.01; norm gap 0\.00[0-9]+\); 2 runs each, each value.s runs identical'
python3 tests/gpu/verdict.py backends "$T/lr.json" 5e-2 >"$T/v2" 2>&1
expect "verdict: the same report passes a tolerance above its distance" 0 $? "$T/v2" 'tolerance 0\.05'
(cd "$T" && "$repro_abs" compare "$cnn_abs" --vary lr=0.003,0.0031 --runs 1 --steps 5 --json -q \
    >"$T/one.json" 2>"$T/one.err")
python3 tests/gpu/verdict.py backends "$T/one.json" 1e-2 >"$T/v3" 2>&1
expect "verdict: one run per value (identity untested) fails" 1 $? "$T/v3" '^1 run per value'
sed '0,/"identical": true/s//"identical": false/' "$T/lr.json" >"$T/differ.json"
python3 tests/gpu/verdict.py backends "$T/differ.json" 5e-2 >"$T/v4" 2>&1
expect "verdict: a backend whose runs differ fails" 1 $? "$T/v4" 'runs DIFFER for 0\.003'
sed -e 's/"value": "0\.003"/"value": "off"/' -e '0,/"identical": true/s//"identical": false/' "$T/lr.json" \
    >"$T/bench-differ.json"
python3 tests/gpu/verdict.py benchmark "$T/bench-differ.json" >"$T/v5" 2>&1
expect "verdict: benchmark=off runs that differ fail" 1 $? "$T/v5" '^benchmark=off: runs DIFFER'

# The rest needs nvcc and cuDNN.
probe=$($MAKE --no-print-directory -s BUILD="$BUILD" gpu-probe 2>/dev/null)
val() { echo "$probe" | sed -n "s/^$1=//p"; }
skipped=
[ -z "$(val have_cuda)" ] &&
    skipped="nvcc found but not cuDNN (cudnn.h: '$(val cudnn_h)', libcudnn: '$(val cudnn_lib)')"
[ -z "$(val nvcc)" ] && skipped="no nvcc"
if [ -n "$skipped" ]; then
    [ -z "${REPRO_SKIP_LOG:-}" ] || printf 'gpu selftest\t%s\n' "$skipped" >>"$REPRO_SKIP_LOG"
    echo "gpu selftest: $([ $fails -eq 0 ] && echo passed || echo "FAILED ($fails)") without a device; the rest skipped: $skipped"
    [ $fails -eq 0 ]
    exit
fi
# ---- 1. everything under tests/gpu/ compiles -------------------------------------
for f in tests/gpu/*; do
    case "$f" in
    *.sh) sh -n "$f" || bad "$f: sh -n failed" ;;
    tests/gpu/check_cuda_ops.c | tests/gpu/step_time.c) ;; # built below
    tests/gpu/ops_compare.h) ;;  # in check_cuda_ops, and the gpu_compare suite
    tests/gpu/fake_device.[ch]) ;; # built below (make gpu-fake)
    tests/gpu/verdict.py) ;;       # run below
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
    [ -z "${REPRO_SKIP_LOG:-}" ] ||
        printf 'gpu selftest\t%s\n' "no python3 with torch: the PyTorch demo on the CPU" >>"$REPRO_SKIP_LOG"
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

# A machine's layout of our own (REPRO_GPU_SEARCH_ROOT) for the runs below:
# a venv in a usual place whose python3 has cuDNN's wheel (nvidia.cudnn,
# libcudnn*.so.9 linked to this machine's) and writes the LD_LIBRARY_PATH
# it was started with to $T/py-env.
make_venv() { # make_venv PREFIX: PREFIX/bin/python3 with nvidia.cudnn
    mv_site=$1/lib/python3.11/site-packages
    mkdir -p "$1/bin" "$mv_site/nvidia/cudnn/lib"
    : >"$mv_site/nvidia/cudnn/__init__.py"
    for l in "$CUDNN_LIB_DIR"/libcudnn*.so.9; do ln -sf "$l" "$mv_site/nvidia/cudnn/lib/"; done
    printf '#!/bin/sh\necho "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >>"%s"\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec %s "$@"\n' \
        "$T/py-env" "$mv_site" "${torch_py:-python3}" >"$1/bin/python3"
    chmod +x "$1/bin/python3"
}
make_venv "$T/fs/opt/torch/.venv"
VENV_PY=$T/fs/opt/torch/.venv/bin/python3

# ---- 3. prepare ---------------------------------------------------------------------
STAGE=$BUILD/gpu/stage
REPRO_GPU_STAGE=$STAGE BUILD=$BUILD MAKE=$MAKE sh tests/gpu/run.sh --prepare >"$T/prep" 2>&1
expect "run.sh --prepare stages into $STAGE and verifies it" 0 $? "$T/prep" '^✓ staged into' || exit 1
if LD_LIBRARY_PATH="$CUDNN_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" stage_verify "$STAGE" >"$T/verify"; then
    ok "every staged binary resolves its libraries in the stage or to glibc/driver/cuDNN ($(ls "$STAGE/lib" | wc -l) staged)"
else
    bad "the stage needs libraries it does not hold: $(cat "$T/verify")"
fi
# its floors, and no C++ runtime: Debian 12's libstdc++ alone needs GLIBC_2.36
glibc_build=$(getconf GNU_LIBC_VERSION | sed 's/^glibc //')
glibc_min=$(stage_field "$STAGE/STAGE" glibc_min)
if [ -n "$glibc_min" ] && [ -n "$(stage_field "$STAGE/STAGE" driver_min)" ] &&
    ! ls "$STAGE/lib" | grep -qE '^lib(stdc\+\+|gcc_s)\.' && stage_version_lt "$glibc_min" "$glibc_build"; then
    ok "the stage states its floors (glibc >= $glibc_min, driver R$(stage_field "$STAGE/STAGE" driver_min)+) and leaves the C++ runtime to the machine (build machine: glibc $glibc_build)"
else
    bad "the stage's floors: glibc_min '$glibc_min' (build machine $glibc_build), driver_min '$(stage_field "$STAGE/STAGE" driver_min)', staged: $(ls "$STAGE/lib" | tr '\n' ' ')"
fi
REPRO_GPU_STAGE="$T/stage-cxx" REPRO_GPU_STAGE_CXX=1 BUILD=$BUILD MAKE=$MAKE sh tests/gpu/run.sh --prepare >"$T/prep-cxx" 2>&1
if [ "$(stage_field "$T/stage-cxx/STAGE" glibc_min)" = "$glibc_build" ] && [ -e "$T/stage-cxx/lib/libstdc++.so.6" ]; then
    ok "negative control: with the C++ runtime staged, the glibc floor rises to the build machine's ($glibc_build)"
else
    bad "negative control: the C++ runtime staged, the floor is '$(stage_field "$T/stage-cxx/STAGE" glibc_min)', not $glibc_build"
fi
rm -rf "$T/stage-cxx"
# the one command: what prepare prints is what docs/gpu-check.md gives
cmd=$(gpu_command .gpu)
if grep -qF -- "$(gpu_command "$STAGE")" "$T/prep" && grep -qxF -- "    $cmd" docs/gpu-check.md; then
    ok "prepare prints the one command docs/gpu-check.md gives: $cmd"
else
    bad "the command: prepare printed '$(tail -n 1 "$T/prep")', docs/gpu-check.md should give '    $cmd'"
fi

# ---- 4. the dry run: a GPU claimed, none there ------------------------------------------
mkdir -p "$T/fake"
printf '#!/bin/sh\ncase "$*" in\n*driver_version*) echo "${FAKE_DRIVER:-580.95.05}" ;;\n*) echo "GPU 0: NVIDIA Fake (UUID: GPU-00000000-0000-0000-0000-000000000000)" ;;\nesac\n' >"$T/fake/nvidia-smi"
chmod +x "$T/fake/nvidia-smi"
: >"$T/py-env"
PATH="$T/fake:$PATH" CUDA_VISIBLE_DEVICES= OUT="$T/out" PYTHON= REPRO_GPU_SEARCH_ROOT="$T/fs" \
    sh "$STAGE/tests/gpu/run.sh" >"$T/dry" 2>&1
rc=$?
expect "dry run with a fake nvidia-smi: FAILURE naming the missing device (exit 1)" 1 $rc "$T/dry" \
    '^GPU: GPU 0: NVIDIA Fake' '^path: staged binaries' \
    "^floors: the stage needs glibc >= $glibc_min \\(here [0-9.]+\\) and an NVIDIA driver >= R580 for its CUDA 13\\.[0-9]+ runtime \\(here 580\\.95\\.05\\)" \
    "^python: $VENV_PY: .*a usual place" "^cuDNN: $T/fs/opt/torch/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9" \
    "^loaded: libcudnn.so.9 $T/fs/opt/torch/.venv/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9; libcudart.so.13 [^ ]*/lib/libcudart.so.13;" \
    '^✗ ops linear: no device, although nvidia-smi lists a GPU: no GPU check: cuda backend unavailable' \
    '^gpu checks: FAILED \([0-9]+\): no usable CUDA device, although nvidia-smi lists a GPU'
expect "dry run: the staged binaries started and reached device initialisation" 0 0 "$T/out/gpu-log.txt" \
    '^reaching the device: creating the cuda backend' '^repro [0-9]'
expect "dry run: summary and log written to \$OUT as the checks finished" 0 0 "$T/out/gpu-summary.txt" \
    '^GPU: ' '^✗ ops memory' '^✗ ops refusal' '^gpu checks: FAILED'
expect "dry run: the python3 chosen, and why, written to \$OUT" 0 0 "$T/out/gpu-python.txt" \
    "^python: $VENV_PY\$" '^why: .*has no nvidia.cudnn' '^cudnn: '
# every python3 the run started (choosing, cuDNN's folder, the PyTorch probe)
# saw none of the stage: its libraries come from DT_RPATH, not LD_LIBRARY_PATH
if [ -s "$T/py-env" ] && ! grep -q "$STAGE" "$T/py-env"; then
    ok "dry run: no python3 it started had the stage on LD_LIBRARY_PATH ($(wc -l <"$T/py-env") started)"
else
    bad "dry run: a python3 saw the stage on LD_LIBRARY_PATH (or none ran): $(sort -u "$T/py-env" | head -n 3)"
fi

# the stage's driver floor: an older driver ends the run before anything runs
PATH="$T/fake:$PATH" FAKE_DRIVER=535.104.05 CUDA_VISIBLE_DEVICES= PYTHON="$VENV_PY" \
    sh "$STAGE/tests/gpu/run.sh" >"$T/olddriver" 2>&1
expect "a driver older than the stage needs: exit 1, saying so, nothing run" 1 $? "$T/olddriver" \
    '^✗ the NVIDIA driver 535\.104\.05 is older than the stage.s CUDA 13\.[0-9]+ runtime needs \(R580 or newer\)' \
    '^gpu checks: FAILED: driver 535\.104\.05 older than R580'
if grep -q '^path:' "$T/olddriver"; then bad "the old-driver run went on to the checks"; fi

# a python3 with cuDNN's wheel found by searching, away from the usual places
make_venv "$T/fs2/srv/lab/env"
if (PYTHON=python-absent REPRO_GPU_SEARCH_ROOT="$T/fs2" && stage_find_python &&
    [ "$stage_python" = "$T/fs2/srv/lab/env/bin/python3" ] && echo "$stage_python_how" | grep -q 'by searching'); then
    ok "a python3 with nvidia.cudnn found by searching for libcudnn.so.9 when no usual place has one"
else
    bad "the search for a python3 with nvidia.cudnn under $T/fs2 did not find $T/fs2/srv/lab/env/bin/python3"
fi

# output reaches the log while the command runs: a check that prints, then hangs
cp -R "$STAGE" "$T/stage-hang"
printf '#!/bin/sh\n[ "$1" = --list ] && { echo linear; exit 0; }\necho "fake check: printed before hanging"\nexec sleep 60\n' \
    >"$T/stage-hang/bin/check_cuda_ops"
PATH="$T/fake:$PATH" CUDA_VISIBLE_DEVICES= OUT="$T/out-hang" PYTHON="$VENV_PY" REPRO_GPU_DEADLINE=14 \
    sh "$T/stage-hang/tests/gpu/run.sh" >"$T/hang" 2>&1 &
hang_pid=$!
seen=0
for i in 1 2 3 4 5 6 7 8 9 10; do
    sleep 1
    grep -q '^fake check: printed before hanging' "$T/out-hang/gpu-log.txt" 2>/dev/null || continue
    kill -0 $hang_pid 2>/dev/null && seen=1
    break
done
wait $hang_pid
rc=$?
if [ $seen = 1 ]; then
    ok "a command's output is in the log while it still runs"
else
    bad "the hanging check's output was not in the log while it ran"
fi
expect "the hanging check is cut off by the deadline and named" 1 $rc "$T/hang" '^✗ ops linear: timed out'
rm -rf "$T/stage-hang"

# ---- 5. no GPU at all; no cuDNN ------------------------------------------------------
REPRO_NVIDIA_SMI="$T/absent/nvidia-smi" OUT="$T/out2" sh "$STAGE/tests/gpu/run.sh" >"$T/nogpu" 2>&1
expect "no nvidia-smi: exit 3, saying so" 3 $? "$T/nogpu" '^no GPU: nvidia-smi not found' \
    '^gpu checks: not run \(no GPU\)'
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."\nexit 9\n' >"$T/fake/nvidia-smi-none"
chmod +x "$T/fake/nvidia-smi-none"
REPRO_NVIDIA_SMI="$T/fake/nvidia-smi-none" sh "$STAGE/tests/gpu/run.sh" >"$T/nogpu2" 2>&1
expect "nvidia-smi listing no GPU: exit 3, saying so" 3 $? "$T/nogpu2" '^no GPU: nvidia-smi -L lists none'
printf '#!/bin/sh\nexec sleep 60\n' >"$T/fake/nvidia-smi-hang"
chmod +x "$T/fake/nvidia-smi-hang"
REPRO_NVIDIA_SMI="$T/fake/nvidia-smi-hang" REPRO_GPU_SMI_TIMEOUT=2 sh "$STAGE/tests/gpu/run.sh" >"$T/nogpu3" 2>&1
expect "nvidia-smi that hangs: cut off, exit 3, saying so" 3 $? "$T/nogpu3" \
    '^no GPU: nvidia-smi -L did not answer within 2 s'
PATH="$T/fake:$PATH" CUDNN_LIB="$T/absent" PYTHON="$VENV_PY" sh "$STAGE/tests/gpu/run.sh" >"$T/nocudnn" 2>&1
expect "no libcudnn.so.9: exit 1 naming it, not 'no GPU'" 1 $? "$T/nocudnn" \
    '^✗ libcudnn.so.9 not found' 'FAILED: libcudnn.so.9 missing'

REPRO_GPU_STAGE="$T/stage-nocuda" BUILD=$BUILD MAKE="$MAKE NVCC=" sh tests/gpu/run.sh --prepare >"$T/prep3" 2>&1
expect "run.sh --prepare without nvcc: exit 3, saying so" 3 $? "$T/prep3" '^prepare: no CUDA build possible here'

# ---- 6. negative controls ---------------------------------------------------------------
cp -R "$STAGE" "$T/stage-minus" && rm "$T/stage-minus/lib/libjansson.so.4"
if LD_LIBRARY_PATH="$CUDNN_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" stage_verify "$T/stage-minus" >"$T/minus" 2>&1; then
    bad "negative control: the stage check passed with libjansson.so.4 removed from the stage"
else
    expect "negative control: a library removed from the stage fails the stage check, named" 0 0 \
        "$T/minus" 'libjansson\.so\.4: (not found|resolved outside the stage)'
fi
cp -R "$STAGE" "$T/stage-broken" && : >"$T/stage-broken/lib/libcudart.so.13"
PATH="$T/fake:$PATH" CUDA_VISIBLE_DEVICES= REPRO_GPU_FALLBACK_DIR="$(pwd)/$BUILD/gpu/fallback" PYTHON="$VENV_PY" \
    REPRO_GPU_NVCC_ARCH=-arch=sm_90 CUDNN_INCLUDE=$(dirname "$(val cudnn_h)") \
    sh "$T/stage-broken/tests/gpu/run.sh" >"$T/broken" 2>&1
expect "negative control: staged binaries that cannot start: the run says so and takes the fallback" 1 $? \
    "$T/broken" '^the staged binaries cannot start here: .*libcudart\.so\.13' '^path: FALLBACK' \
    '^✗ ops linear: no device, although nvidia-smi lists a GPU' '^✗ repro-level checks \(3-7\) not run'

echo "gpu selftest: $([ $fails -eq 0 ] && echo passed || echo "FAILED ($fails)") in $(($(date +%s) - start)) s"
[ $fails -eq 0 ]
