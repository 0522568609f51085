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
# as the checks finish (every command's stdout and stderr go to the log).
# PYTHON: the python3 with PyTorch (default python3). CUDNN_LIB: the folder
# of libcudnn.so.9 (default: found, see stage_find_cudnn).
#
# The device run:
#  0. nvidia-smi -L must list a GPU (else exit 3: not run). From then on
#     "no device" from any check is a FAILURE;
#  1. finds libcudnn.so.9 and puts it and the stage's lib/ on
#     LD_LIBRARY_PATH; if the staged binaries cannot start, builds the
#     CUDA-only check in place with nvcc (tests/gpu/fallback.sh) and says so;
#  2. check_cuda_ops, one process per group (a sticky CUDA error stays in
#     its group): each op against the CPU, bitwise for our kernels (any NaN
#     = any NaN), within 1e-5 * sum|terms| for cuDNN and the atomic
#     variants; device digests, stats and Philox = the host's; cuDNN's
#     heuristic and cudnnFind choices; empty_cache;
#  3. run-to-run bitwise identity on cuda, both experiments (repro check);
#  4. repro compare --vary benchmark=on,off (cnn, cuda): benchmark=off's
#     runs identical; benchmark=on's identical unless cudnnFind's timing
#     picked other algorithms in another run (reported, as documented);
#  5. CPU vs GPU: mlp bitwise identical; cnn bitwise identical with the CPU's
#     algorithms (--algo-lock); cnn with cuDNN's own algorithms within a
#     relative L2 of 1e-2 of the CPU's parameters after 100 steps;
#  6. step times (informational; the program must succeed);
#  7. PyTorch on the GPU (examples/torch/cuda_scatter.py): reproducible
#     under `repro check` with torch.use_deterministic_algorithms(True); with
#     index_add_ left nondeterministic the check must fail naming step 1 and
#     the tensor class_sums.
# Each command has its own timeout and the whole run a deadline
# ($REPRO_GPU_DEADLINE, default 420 s): what does not fit is a failure.
#
# Exit: 0 all checks passed; 1 a check failed (or could not run: no device
# although nvidia-smi lists one, libcudnn.so.9 missing, cuDNN unusable, a
# timeout, only the fallback could run); 3 no GPU (nvidia-smi absent or
# listing none): nothing was run.
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
PYTHON=${PYTHON:-python3}
NVIDIA_SMI=${REPRO_NVIDIA_SMI:-nvidia-smi}
DEADLINE=${REPRO_GPU_DEADLINE:-420}
START=$(date +%s)
T=$(mktemp -d /tmp/repro-gpu.XXXXXX)
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT" || exit 3
    SUM=$OUT/gpu-summary.txt LOG=$OUT/gpu-log.txt
else
    SUM=$T/gpu-summary.txt LOG=$(mktemp /tmp/repro-gpu-log.XXXXXX)
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

# run LABEL TIMEOUT CMD...: CMD's stdout and stderr into $T/out and the log,
# under min(TIMEOUT, what is left of the deadline). Status: CMD's, 124/137
# on timeout, 125 when the deadline left no time to start it.
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
    timeout -k 5 "$r_limit" "$@" >"$T/out" 2>&1 </dev/null
    r_rc=$?
    cat "$T/out" >>"$LOG"
    echo "==== $r_label: exit $r_rc" >>"$LOG"
    return $r_rc
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
if ! "$NVIDIA_SMI" -L >"$T/gpus" 2>&1 || ! grep -q '^GPU [0-9]' "$T/gpus"; then
    say "no GPU: nvidia-smi -L lists none: $(head -n 1 "$T/gpus")"
    finish "not run (no GPU)" 3
fi
say "GPU: $(head -n 1 "$T/gpus")"
say "stage: $(sed -n 's/^commit: //p' "$STAGE/STAGE" 2>/dev/null || echo "none at $STAGE")"

# ---- 1. cuDNN, and the staged binaries or the fallback --------------------------
stage_find_cudnn
CUDNN_LIB_DIR=$stage_cudnn_dir
if [ -z "$CUDNN_LIB_DIR" ]; then
    fail "libcudnn.so.9 not found (searched:$stage_cudnn_searched; set CUDNN_LIB=DIR)"
    finish "FAILED: libcudnn.so.9 missing (the GPU is there; cuDNN is not)" 1
fi
say "cuDNN: $CUDNN_LIB_DIR/libcudnn.so.9"
export CUDNN_LIB_DIR
LD_LIBRARY_PATH_BEFORE=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH="$STAGE/lib:$CUDNN_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BIN=$STAGE/bin
if run "start staged check_cuda_ops" 30 "$BIN/check_cuda_ops" --list && [ -s "$T/out" ] &&
    run "start staged repro" 30 "$BIN/repro" --version; then
    PATH_TAKEN=staged
    OPS=$BIN/check_cuda_ops
    say "path: staged binaries ($BIN)"
else
    say "the staged binaries cannot start here: $(grep -m 1 -v '^$' "$T/out" || echo "absent: $BIN")"
    # the stage's libraries off the path: one of them may be what failed
    export LD_LIBRARY_PATH="$CUDNN_LIB_DIR${LD_LIBRARY_PATH_BEFORE:+:$LD_LIBRARY_PATH_BEFORE}"
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
if run "ops --list" 30 "$OPS" --list; then
    groups=$(cat "$T/out")
else
    groups=
    verdict "check_cuda_ops --list" 1
fi
for g in $groups; do
    run "ops $g" 120 "$OPS" "$g"
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
        run "check $e" 150 "$REPRO" check "experiments/$e.ini" --set backend=cuda --runs 2 --no-golden -q
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
    run compare 150 "$REPRO" compare experiments/cnn.ini --vary benchmark=on,off \
        --set backend=cuda --steps 100 --json -q
    rc=$?
    if verdict "compare --vary benchmark=on,off (cnn, cuda, 100 steps)" $rc -; then
        # benchmark=off: a fixed rule, so the runs must be identical.
        # benchmark=on: cudnnFind's timing may pick another algorithm in
        # another run (timing noise; the README says so); runs that kept
        # the same algorithms must be identical, a changed pick is reported.
        if "$PYTHON" - "$T/out" >"$T/verdict" 2>&1 <<'PY'; then
import json, sys
doc = json.load(open(sys.argv[1]))
bad = 0
for v in doc["values"]:
    algos = ", ".join(a["site"] + " " + a["algo"] for a in v.get("algorithms", []))
    changed = v.get("algorithms_changed_between_runs", False)
    if v["identical"]:
        print("benchmark=%s: runs identical (%s)" % (v["value"], algos))
    elif v["value"] == "on" and changed:
        print("benchmark=%s: the timed pick changed between runs, and so did the bits "
              "(informational: %s)" % (v["value"], algos))
    else:
        print("benchmark=%s: runs DIFFER with %s algorithms (%s)"
              % (v["value"], "changed" if changed else "the same", algos))
        bad = 1
sys.exit(bad)
PY
            pass "compare --vary benchmark=on,off (cnn, cuda): $(tr '\n' ';' <"$T/verdict")"
        else
            fail "compare --vary benchmark=on,off (cnn, cuda): $(tr '\n' ';' <"$T/verdict")"
        fi
    fi

    # ---- 5. CPU vs GPU ----------------------------------------------------------
    for e in mlp cnn; do
        run "cpu $e" 120 "$REPRO" run "experiments/$e.ini" --steps 100 -q -o "$T/$e-cpu.jsonl"
        verdict "CPU run, $e" $? - || continue
        if [ $e = mlp ]; then
            run "gpu mlp" 120 "$REPRO" run experiments/mlp.ini --steps 100 -q --backend cuda \
                -o "$T/mlp-gpu.jsonl"
        else
            run "gpu cnn locked" 120 "$REPRO" run experiments/cnn.ini --steps 100 -q --backend cuda \
                --algo-lock "$T/cnn-cpu.jsonl" -o "$T/cnn-gpu.jsonl"
        fi
        verdict "GPU run, $e" $? - || continue
        what="CPU vs GPU, $e$([ $e = cnn ] && echo ' with the CPU'"'"'s algorithms (--algo-lock)')"
        run "diff $e" 60 "$REPRO" diff "$T/$e-cpu.jsonl" "$T/$e-gpu.jsonl"
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
    run "cpu vs cuda cnn" 200 "$REPRO" compare experiments/cnn.ini --vary backend=cpu,cuda --runs 1 \
        --steps 100 --json -q
    rc=$?
    if verdict "CPU vs GPU, cnn with cuDNN's algorithms (repro compare)" $rc -; then
        rel=$(grep -o '"final_rel_l2_vs_first": [^,]*' "$T/out" | sed -n '2s/.*: //p')
        if [ -n "$rel" ] && awk -v r="$rel" 'BEGIN { exit !(r + 0 == r && r < 1e-2) }'; then
            pass "CPU vs GPU, cnn with cuDNN's algorithms: relative L2 of the parameters after 100 steps $rel (tolerance 1e-2)"
        else
            fail "CPU vs GPU, cnn with cuDNN's algorithms: relative L2 of the parameters after 100 steps '${rel:-none}' (tolerance 1e-2)"
        fi
    fi

    # ---- 6. step times ----------------------------------------------------------
    run "step time" 150 "$BIN/step_time" experiments/mlp.ini experiments/cnn.ini
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
    export REPRO_LIB="$STAGE/lib/librepro.so" PYTHONPATH="$STAGE/python${PYTHONPATH:+:$PYTHONPATH}"
    run "torch deterministic" 150 "$REPRO" check --runs 2 --no-golden -q -- "$PYTHON" "$demo" --device cuda
    rc=$?
    verdict "PyTorch on cuda, deterministic algorithms: reproducible under repro check" $rc
    run "torch nondeterministic" 150 "$REPRO" check --runs 2 --no-golden -q -- "$PYTHON" "$demo" --device cuda --nondeterministic
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
