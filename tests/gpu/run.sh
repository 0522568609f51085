#!/bin/sh
# Every GPU check of the CUDA backend, in two phases (docs/gpu-check.md):
#
#   tests/gpu/run.sh --prepare    here, with our build deps, nvcc and cuDNN's
#                                 headers (no GPU needed): builds and stages
#                                 everything into .gpu/ (tests/gpu/prepare.sh)
#   .gpu/tests/gpu/run.sh         on the GPU machine (copy .gpu/ there), or
#   tests/gpu/run.sh              in a checkout that has .gpu/: the checks
#
# OUT=DIR: DIR/gpu-summary.txt and DIR/gpu-log.txt are written line by line
# as the checks run (every command's stdout and stderr stream into the log
# as they come), DIR/gpu-python.txt says which python3 was chosen and why.
# PYTHON: the python3 with PyTorch and cuDNN's wheel (default python3;
# searched for when it has no nvidia.cudnn, see stage_find_python).
# CUDNN_LIB: the folder of libcudnn.so.9 (default: found, stage_find_cudnn).
#
# The device run:
#  0. nvidia-smi -L must list a GPU (else exit 3: not run). From then on
#     "no device" from any check is a FAILURE. Prints the stage's floors
#     (glibc, NVIDIA driver) and this machine's; a driver older than the
#     staged CUDA runtime needs ends the run (exit 1) before anything runs;
#  1. chooses the python3 (PyTorch, cuDNN's wheel), finds libcudnn.so.9;
#     cuDNN's folder is on LD_LIBRARY_PATH for our binaries only (the
#     stage's own libraries come from their DT_RPATH, never from
#     LD_LIBRARY_PATH, so nothing of the stage reaches PyTorch); if the
#     staged binaries cannot start, builds the CUDA-only check in place with
#     nvcc (tests/gpu/fallback.sh) and says so;
#  2. check_cuda_ops, one process per group (a sticky CUDA error stays in
#     its group): each op against the CPU, bitwise for our kernels (any NaN
#     = any NaN), within 1e-5 * sum|terms| for cuDNN and the atomic
#     variants (a NaN or an unwritten element fails: outputs are poisoned
#     first); device digests, stats and Philox = the host's; cuDNN's
#     results (admitted, dropped and why), heuristic and cudnnFind choices;
#     an ineligible cuDNN algorithm refused; empty_cache;
#  3. run-to-run bitwise identity on cuda, both experiments (repro check);
#  4. repro compare --vary benchmark=on,off (cnn, cuda): benchmark=off's
#     runs identical; benchmark=on's identical unless cudnnFind's timing
#     picked other algorithms in another run (reported, as documented);
#  5. CPU vs GPU: mlp bitwise identical; cnn bitwise identical with the CPU's
#     algorithms (--algo-lock); cnn with cuDNN's own algorithms, 2 runs per
#     backend, each backend's runs identical and the relative distance
#     ||a - b|| / ||a|| of the final parameters from the CPU's below 1e-2
#     after 100 steps (tests/gpu/verdict.py);
#  6. step times (informational; the program must succeed);
#  7. PyTorch on the GPU (examples/torch/cuda_scatter.py): reproducible
#     under `repro check` with torch.use_deterministic_algorithms(True); with
#     index_add_ left nondeterministic the check must fail naming step 1 and
#     the tensor class_sums.
# Each command has its own timeout and the whole run a deadline
# ($REPRO_GPU_DEADLINE, default 420 s): what does not fit is a failure.
#
# Exit: 0 all checks passed; 1 a check failed (or could not run: no device
# although nvidia-smi lists one, a driver older than the stage needs,
# libcudnn.so.9 missing, cuDNN unusable, a timeout, only the fallback could
# run); 3 no GPU (nvidia-smi absent or listing none): nothing was run.
set -u
case "${1:-}" in
--prepare) exec sh "$(dirname "$0")/prepare.sh" ;;
"") ;;
*)
    echo "usage: tests/gpu/run.sh [--prepare]" >&2
    exit 2
    ;;
esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd) || exit 3
cd "$ROOT" || exit 3
. tests/gpu/stage_lib.sh
if [ -e "$ROOT/STAGE" ]; then STAGE=$ROOT; else STAGE=${REPRO_GPU_STAGE:-$ROOT/.gpu}; fi
NVIDIA_SMI=${REPRO_NVIDIA_SMI:-nvidia-smi}
DEADLINE=${REPRO_GPU_DEADLINE:-420}
START=$(date +%s)
T=$(mktemp -d /tmp/repro-gpu.XXXXXX)
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT" || exit 3
    SUM=$OUT/gpu-summary.txt LOG=$OUT/gpu-log.txt PYINFO=$OUT/gpu-python.txt
else
    SUM=$T/gpu-summary.txt LOG=$(mktemp /tmp/repro-gpu-log.XXXXXX) PYINFO=$T/gpu-python.txt
fi
: >"$SUM"
: >>"$LOG"
fails=0
why=

say() { echo "$*" | tee -a "$SUM"; echo "## $*" >>"$LOG"; }
pass() { say "✓ $*"; }
fail() {
    say "✗ $*"
    fails=$((fails + 1))
}
# note REASON: the first reason the whole run failed, for its last line
note() { [ -n "$why" ] || why=$1; }
finish() {
    say "elapsed: $(($(date +%s) - START)) s"
    say "gpu checks: $1"
    [ -n "${OUT:-}" ] || echo "log: $LOG"
    rm -rf "$T"
    exit "$2"
}

# run LABEL TIMEOUT CMD...: CMD's stdout and stderr into the log as they
# come (a command that hangs has left what it printed), and afterwards into
# $T/out, under min(TIMEOUT, what is left of the deadline). Status: CMD's,
# 124/137 on timeout, 125 when the deadline left no time to start it.
run() {
    r_label=$1 r_limit=$2
    shift 2
    r_left=$((START + DEADLINE - $(date +%s)))
    if [ "$r_left" -lt 10 ]; then
        echo "==== $r_label: not started: the ${DEADLINE} s deadline is reached" >>"$LOG"
        : >"$T/out"
        return 125
    fi
    [ "$r_limit" -gt "$r_left" ] && r_limit=$r_left
    echo "==== $r_label [$(date -u +%T), timeout ${r_limit} s]: $*" >>"$LOG"
    r_from=$(($(wc -c <"$LOG") + 1))
    timeout -k 5 "$r_limit" "$@" >>"$LOG" 2>&1 </dev/null
    r_rc=$?
    tail -c +"$r_from" "$LOG" >"$T/out"
    echo "==== $r_label: exit $r_rc" >>"$LOG"
    return $r_rc
}

# run_ours LABEL TIMEOUT CMD...: run, with cuDNN's folder on
# LD_LIBRARY_PATH: for our binaries and what they start, not for the
# script's own python3 calls.
run_ours() {
    ro_label=$1 ro_limit=$2
    shift 2
    run "$ro_label" "$ro_limit" env "LD_LIBRARY_PATH=$OURS_LD_LIBRARY_PATH" "$@"
}

# The text of a "no usable device" error in $T/out, if there is one.
no_device_text() {
    grep -m 1 -E 'no CUDA device|no usable CUDA driver|CUDA device [0-9]+ does not exist|no usable GPU|cudaErrorNoDevice|CUDA driver version is insufficient' "$T/out"
}

# verdict LABEL RC [SUCCESS-TEXT]: the common outcomes of a command. Returns
# 0 when RC is 0 (reported as passed unless SUCCESS-TEXT is "-"), 1 after
# reporting a failure.
verdict() {
    v_label=$1 v_rc=$2 v_ok=${3:-}
    if [ "$v_rc" -eq 0 ]; then
        [ "$v_ok" = "-" ] || pass "$v_label${v_ok:+: $v_ok}"
        return 0
    fi
    if [ "$v_rc" -eq 124 ] || [ "$v_rc" -eq 137 ]; then
        fail "$v_label: timed out"
        note "a check timed out"
    elif [ "$v_rc" -eq 125 ]; then
        fail "$v_label: not run: the ${DEADLINE} s deadline was reached"
        note "the deadline was reached"
    elif [ "$v_rc" -eq 126 ] || [ "$v_rc" -eq 127 ]; then
        fail "$v_label: could not start: $(head -n 1 "$T/out")"
        note "a program could not start"
    elif nd=$(no_device_text); then
        fail "$v_label: no device, although nvidia-smi lists a GPU: $nd"
        note "no usable CUDA device, although nvidia-smi lists a GPU"
    elif grep -qi 'cudnn' "$T/out" && grep -qiE 'cudnnCreate|libcudnn|CUDNN_STATUS' "$T/out"; then
        fail "$v_label: cuDNN unusable: $(grep -m 1 -i cudnn "$T/out")"
        note "cuDNN unusable"
    else
        fail "$v_label: exit $v_rc"
        tail -n 12 "$T/out" | sed 's/^/    /' | tee -a "$SUM"
    fi
    return 1
}

# ---- 0. is there a GPU? ------------------------------------------------------
if ! command -v "$NVIDIA_SMI" >/dev/null 2>&1; then
    say "no GPU: nvidia-smi not found"
    finish "not run (no GPU)" 3
fi
SMI_TIMEOUT=${REPRO_GPU_SMI_TIMEOUT:-20}
timeout -k 2 "$SMI_TIMEOUT" "$NVIDIA_SMI" -L >"$T/gpus" 2>&1
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    say "no GPU: nvidia-smi -L did not answer within $SMI_TIMEOUT s"
    finish "not run (no GPU)" 3
fi
if [ $rc -ne 0 ] || ! grep -q '^GPU [0-9]' "$T/gpus"; then
    say "no GPU: nvidia-smi -L lists none: $(head -n 1 "$T/gpus")"
    finish "not run (no GPU)" 3
fi
say "GPU: $(head -n 1 "$T/gpus")"
say "stage: $(stage_field "$STAGE/STAGE" commit)$([ -e "$STAGE/STAGE" ] || echo "none at $STAGE")"

# The stage's floors against this machine: the glibc its binaries need (an
# older one: they cannot start, and the fallback is tried) and the driver
# its CUDA runtime needs (an older one: nothing of the stage can run).
glibc_min=$(stage_field "$STAGE/STAGE" glibc_min)
driver_min=$(stage_field "$STAGE/STAGE" driver_min)
cuda_rt=$(stage_field "$STAGE/STAGE" cuda_runtime)
glibc_here=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed 's/^glibc //')
driver_here=$(timeout -k 2 "$SMI_TIMEOUT" "$NVIDIA_SMI" --query-gpu=driver_version --format=csv,noheader 2>/dev/null |
    head -n 1 | grep -E '^[0-9]+(\.[0-9]+)*$')
say "floors: the stage needs glibc >= ${glibc_min:-?} (here ${glibc_here:-unknown}) and an NVIDIA driver >= R${driver_min:-?} for its CUDA ${cuda_rt:-?} runtime (here ${driver_here:-unknown})"
is_version() { case $1 in '' | *[!0-9.]*) return 1 ;; esac; } # "?": the stage did not know
if is_version "$glibc_min" && is_version "$glibc_here" && stage_version_lt "$glibc_here" "$glibc_min"; then
    say "glibc $glibc_here here is older than the stage's $glibc_min: the staged binaries cannot start; the fallback will be tried"
fi
if is_version "$driver_min" && is_version "$driver_here" && [ "${driver_here%%.*}" -lt "$driver_min" ]; then
    fail "the NVIDIA driver $driver_here is older than the stage's CUDA $cuda_rt runtime needs (R$driver_min or newer)"
    finish "FAILED: driver $driver_here older than R$driver_min (the GPU is there; nothing was run)" 1
fi

# ---- 1. python3, cuDNN, and the staged binaries or the fallback ------------------
stage_find_python
PYTHON=$stage_python
export PYTHON
say "python: $PYTHON: $stage_python_how"
echo "python: $PYTHON" >"$PYINFO"
echo "why: $stage_python_how" >>"$PYINFO"
stage_find_cudnn
CUDNN_LIB_DIR=$stage_cudnn_dir
if [ -z "$CUDNN_LIB_DIR" ]; then
    fail "libcudnn.so.9 not found (searched:$stage_cudnn_searched; set CUDNN_LIB=DIR)"
    finish "FAILED: libcudnn.so.9 missing (the GPU is there; cuDNN is not)" 1
fi
say "cuDNN: $CUDNN_LIB_DIR/libcudnn.so.9"
echo "cudnn: $CUDNN_LIB_DIR/libcudnn.so.9" >>"$PYINFO"
export CUDNN_LIB_DIR
OURS_LD_LIBRARY_PATH="$CUDNN_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BIN=$STAGE/bin
chmod +x "$BIN"/* 2>/dev/null # a copy (the device tool's carry, an archive) may drop the bits
if run_ours "start staged check_cuda_ops" 30 "$BIN/check_cuda_ops" --list && [ -s "$T/out" ] &&
    run_ours "start staged repro" 30 "$BIN/repro" --version; then
    PATH_TAKEN=staged
    OPS=$BIN/check_cuda_ops
    say "path: staged binaries ($BIN)"
    # what the loader gives them (they carry no search path of their own
    # into CUDA's or cuDNN's folders, so this is the folder chosen above)
    loaded=$(env "LD_LIBRARY_PATH=$OURS_LD_LIBRARY_PATH" ldd "$OPS" 2>/dev/null |
        awk '$1 == "libcudnn.so.9" || $1 == "libcudart.so.13" { printf "%s %s; ", $1, $3 }')
    say "loaded: ${loaded:-unknown (no ldd)}"
    echo "loaded: ${loaded:-unknown}" >>"$PYINFO"
else
    say "the staged binaries cannot start here: $(grep -m 1 -v '^$' "$T/out" || echo "absent: $BIN")"
    if run "fallback build" 300 sh tests/gpu/fallback.sh "${REPRO_GPU_FALLBACK_DIR:-$T/fallback}"; then
        PATH_TAKEN=fallback
        OPS=$(tail -n 1 "$T/out")
        say "path: FALLBACK: check_cuda_ops built in place with nvcc ($OPS); only the CUDA-only checks can run"
    else
        fail "fallback build with nvcc failed: $(tail -n 1 "$T/out")"
        finish "FAILED: neither the staged binaries nor a fallback build can run here" 1
    fi
fi

# ---- 2. ops, one group per process -------------------------------------------
if run_ours "ops --list" 30 "$OPS" --list; then
    groups=$(cat "$T/out")
else
    groups=
    verdict "check_cuda_ops --list" 1
fi
for g in $groups; do
    run_ours "ops $g" 120 "$OPS" "$g"
    rc=$?
    grep -E '^(✓|✗|info:|device:|memory:|[0-9]+ passed)' "$T/out" | sed 's/^/  /' | tee -a "$SUM" >/dev/null
    case $rc in
    0) pass "ops $g: $(grep -E '^[0-9]+ passed' "$T/out")" ;;
    1) fail "ops $g: $(grep -E '^[0-9]+ passed' "$T/out" || tail -n 1 "$T/out")" ;;
    3)
        fail "ops $g: no device, although nvidia-smi lists a GPU: $(grep -m 1 'no GPU check' "$T/out")"
        note "no usable CUDA device, although nvidia-smi lists a GPU"
        ;;
    4)
        fail "ops $g: cuDNN unusable: $(grep -m 1 'no GPU check' "$T/out")"
        note "cuDNN unusable"
        ;;
    *) verdict "ops $g" "$rc" ;;
    esac
done

if [ "$PATH_TAKEN" = fallback ]; then
    fail "repro-level checks (3-7) not run: the staged binaries cannot start here"
    note "only the fallback's CUDA-only checks could run"
fi
REPRO=$BIN/repro
repro_checks() {
    # ---- 3. run-to-run identity on cuda ----------------------------------------
    for e in mlp cnn; do
        run_ours "check $e" 150 "$REPRO" check "experiments/$e.ini" --set backend=cuda --runs 2 --no-golden -q
        rc=$?
        if [ $rc -eq 0 ] && grep -q '^reproducible' "$T/out"; then
            pass "$e on cuda, 2 fresh runs: $(grep -m 1 '^reproducible' "$T/out")"
        elif [ $rc -eq 1 ]; then
            fail "$e on cuda: the runs differ:"
            sed -n '1,15p' "$T/out" | sed 's/^/    /' | tee -a "$SUM"
        else
            verdict "$e on cuda (repro check)" $rc
        fi
    done

    # ---- 4. benchmark on vs off -------------------------------------------------
    run_ours compare 150 "$REPRO" compare experiments/cnn.ini --vary benchmark=on,off \
        --set backend=cuda --steps 100 --json -q
    rc=$?
    if verdict "compare --vary benchmark=on,off (cnn, cuda, 100 steps)" $rc -; then
        # benchmark=off: a fixed rule, so the runs must be identical.
        # benchmark=on: cudnnFind's timing may pick another algorithm in
        # another run (timing noise; the README says so); runs that kept
        # the same algorithms must be identical, a changed pick is reported.
        cp "$T/out" "$T/bench.json"
        if run verdict 30 "$PYTHON" tests/gpu/verdict.py benchmark "$T/bench.json"; then
            pass "compare --vary benchmark=on,off (cnn, cuda): $(tail -n 1 "$T/out")"
        else
            fail "compare --vary benchmark=on,off (cnn, cuda): $(tail -n 1 "$T/out")"
        fi
    fi

    # ---- 5. CPU vs GPU ----------------------------------------------------------
    for e in mlp cnn; do
        run_ours "cpu $e" 120 "$REPRO" run "experiments/$e.ini" --steps 100 -q -o "$T/$e-cpu.jsonl"
        verdict "CPU run, $e" $? - || continue
        if [ $e = mlp ]; then
            run_ours "gpu mlp" 120 "$REPRO" run experiments/mlp.ini --steps 100 -q --backend cuda \
                -o "$T/mlp-gpu.jsonl"
        else
            run_ours "gpu cnn locked" 120 "$REPRO" run experiments/cnn.ini --steps 100 -q --backend cuda \
                --algo-lock "$T/cnn-cpu.jsonl" -o "$T/cnn-gpu.jsonl"
        fi
        verdict "GPU run, $e" $? - || continue
        what="CPU vs GPU, $e$([ $e = cnn ] && echo ' with the CPU'"'"'s algorithms (--algo-lock)')"
        run_ours "diff $e" 60 "$REPRO" diff "$T/$e-cpu.jsonl" "$T/$e-gpu.jsonl"
        rc=$?
        if [ $rc -eq 0 ]; then
            pass "$what: bitwise identical over 100 steps"
        elif [ $rc -eq 1 ]; then
            fail "$what: differ (bitwise equality is promised):"
            sed -n '1,12p' "$T/out" | sed 's/^/    /' | tee -a "$SUM"
        else
            verdict "$what (repro diff)" $rc
        fi
    done
    # 2 runs per backend: each backend's runs must be identical (with one,
    # "identical" holds trivially); then the relative distance of the final
    # parameters, ||a - b|| / ||a||, not the norm gap (tests/gpu/verdict.py)
    run_ours "cpu vs cuda cnn" 240 "$REPRO" compare experiments/cnn.ini --vary backend=cpu,cuda --runs 2 \
        --steps 100 --json -q
    rc=$?
    if verdict "CPU vs GPU, cnn with cuDNN's algorithms (repro compare)" $rc -; then
        cp "$T/out" "$T/backends.json"
        if run verdict 30 "$PYTHON" tests/gpu/verdict.py backends "$T/backends.json" 1e-2; then
            pass "CPU vs GPU, cnn with cuDNN's algorithms, 100 steps: $(tail -n 1 "$T/out")"
        else
            fail "CPU vs GPU, cnn with cuDNN's algorithms, 100 steps: $(tail -n 1 "$T/out")"
        fi
    fi

    # ---- 6. step times ----------------------------------------------------------
    run_ours "step time" 150 "$BIN/step_time" experiments/mlp.ini experiments/cnn.ini
    rc=$?
    if verdict "step times (informational)" $rc -; then
        pass "step times measured (informational):"
        sed 's/^/    /' "$T/out" | tee -a "$SUM"
    fi

    # ---- 7. PyTorch on the GPU ----------------------------------------------------
    run "torch" 60 "$PYTHON" -c 'import torch; print(torch.__version__, torch.cuda.is_available())'
    rc=$?
    if [ $rc -ne 0 ]; then
        fail "PyTorch: $PYTHON cannot import torch ($(tail -n 1 "$T/out")); set PYTHON"
        return
    fi
    if ! grep -q ' True$' "$T/out"; then
        fail "PyTorch: no device, although nvidia-smi lists a GPU: torch.cuda.is_available() is False ($(head -n 1 "$T/out"))"
        note "no usable CUDA device, although nvidia-smi lists a GPU"
        return
    fi
    say "PyTorch: $(head -n 1 "$T/out" | cut -d' ' -f1)"
    demo=examples/torch/cuda_scatter.py
    # the client's library and package for the demo's python3 (set for these
    # two commands only)
    torch_env="REPRO_LIB=$STAGE/lib/librepro.so"
    torch_path="PYTHONPATH=$STAGE/python${PYTHONPATH:+:$PYTHONPATH}"
    run_ours "torch deterministic" 150 env "$torch_env" "$torch_path" "$REPRO" check --runs 2 --no-golden -q \
        -- "$PYTHON" "$demo" --device cuda
    rc=$?
    verdict "PyTorch on cuda, deterministic algorithms: reproducible under repro check" $rc
    run_ours "torch nondeterministic" 150 env "$torch_env" "$torch_path" "$REPRO" check --runs 2 --no-golden \
        -q -- "$PYTHON" "$demo" --device cuda --nondeterministic
    rc=$?
    if [ $rc -eq 1 ] && grep -q 'class_sums' "$T/out" && grep -qE 'step 1([^0-9]|$)' "$T/out"; then
        pass "PyTorch on cuda, index_add_ nondeterministic: repro check fails at step 1 naming class_sums"
    elif [ $rc -eq 1 ]; then
        fail "PyTorch on cuda, index_add_ nondeterministic: repro check failed without naming step 1 and class_sums:"
        sed -n '1,12p' "$T/out" | sed 's/^/    /' | tee -a "$SUM"
    elif [ $rc -eq 0 ]; then
        fail "PyTorch on cuda, index_add_ nondeterministic: repro check passed (the negative control did not fail)"
    else
        verdict "PyTorch on cuda, index_add_ nondeterministic (repro check)" $rc
    fi
}
[ "$PATH_TAKEN" = staged ] && repro_checks

[ $fails -eq 0 ] && finish "PASSED (path: $PATH_TAKEN)" 0
finish "FAILED ($fails)${why:+: $why} (path: $PATH_TAKEN)" 1
