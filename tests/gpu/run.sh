#!/bin/sh
# Every GPU check of the CUDA backend, in one run of under 5 minutes on a
# machine with an NVIDIA GPU, the CUDA toolkit (nvcc), cuDNN and the Debian
# build deps (scripts/ensure-deps.sh). From the repository root:
#
#     tests/gpu/run.sh            (OUT=DIR: also DIR/gpu-summary.txt, DIR/gpu-log.txt)
#
#  1. builds (make -j), with the CUDA backend, and the two check programs;
#  2. each CUDA op against its CPU reference (build/check_cuda_ops: our own
#     kernels bitwise, cuDNN's algorithms and atomic variants within
#     1e-5 * sum|terms|), device tensor digest = host digest, device stats =
#     host stats, device Philox = CPU Philox, atomic variants differ under
#     contention, empty_cache;
#  3. run-to-run bitwise identity in deterministic mode, both experiments,
#     fresh processes (repro check --set backend=cuda);
#  4. repro compare --vary benchmark=on,off on the cnn on the cuda backend;
#  5. repro diff of a CPU and a GPU trace, both experiments (the divergence
#     is reported; bitwise equality is expected for the mlp, whose kernels
#     all follow the CPU's order, and for the cnn when the GPU run replays
#     the CPU run's convolution algorithms with --algo-lock);
#  6. step time hashed vs unhashed, deterministic vs not (build/step_time).
#
# Exit: 0 all checks passed, 1 a check failed, 3 no GPU (nvidia-smi absent
# or failing, no CUDA device, or a build without the CUDA backend).
set -u
cd "$(dirname "$0")/../.." || exit 3
OUT_DIR=${OUT:-}
LOG=$(mktemp /tmp/repro-gpu-log.XXXXXX)
SUM=$(mktemp /tmp/repro-gpu-summary.XXXXXX)
T=$(mktemp -d /tmp/repro-gpu.XXXXXX)
fails=0

say() { echo "$*" | tee -a "$SUM"; }
finish() {
    say "gpu checks: $1"
    if [ -n "$OUT_DIR" ]; then
        mkdir -p "$OUT_DIR" && cp "$SUM" "$OUT_DIR/gpu-summary.txt" && cp "$LOG" "$OUT_DIR/gpu-log.txt"
    fi
    rm -rf "$T"
    exit "$2"
}
# run LABEL CMD...: the command's output into the log; its status returned.
run() {
    label=$1
    shift
    echo "==== $label: $*" >>"$LOG"
    "$@" >"$T/out" 2>&1
    rc=$?
    cat "$T/out" >>"$LOG"
    return $rc
}

start=$(date +%s)
if ! command -v nvidia-smi >/dev/null 2>&1; then
    say "no GPU: nvidia-smi not found"
    finish "not run (no GPU)" 3
fi
if ! nvidia-smi -L >"$T/gpus" 2>&1; then
    say "no GPU: nvidia-smi -L failed: $(head -n 1 "$T/gpus")"
    finish "not run (no GPU)" 3
fi
say "GPU: $(head -n 1 "$T/gpus")"

# 1. build
if ! run build make -j"$(nproc)" all build/check_cuda_ops build/step_time; then
    tail -n 30 "$LOG"
    say "✗ build failed (see the log)"
    finish "FAILED" 1
fi
if ! ./build/repro env | grep -q '^cuda_backend: *compiled'; then
    say "no CUDA build: $(./build/repro env | grep '^cuda_backend:')"
    finish "not run (no CUDA toolkit or cuDNN)" 3
fi
./build/repro env --backend cuda | grep -E '^(gpu_|cuda_|cudnn_|cublas_|class:)' | tee -a "$SUM"

# 2. ops against the CPU, hashing, Philox, atomics
run ops ./build/check_cuda_ops
rc=$?
grep -E '^(✓|✗|device:|memory:|[0-9]+ passed)' "$T/out" | tee -a "$SUM"
if [ $rc -eq 3 ]; then
    say "no usable GPU: $(head -n 1 "$T/out")"
    finish "not run (no GPU)" 3
fi
[ $rc -eq 0 ] || fails=$((fails + 1))

# 3. run-to-run identity, deterministic mode, fresh processes
for e in mlp cnn; do
    if run "check $e" ./build/repro check experiments/$e.ini --set backend=cuda --runs 2 --no-golden; then
        say "✓ $e on cuda: $(grep '^reproducible' "$T/out")"
    else
        say "✗ $e on cuda: runs differ (exit $rc):"
        tail -n 15 "$T/out" | tee -a "$SUM"
        fails=$((fails + 1))
    fi
done

# 4. benchmark on vs off (cuDNN's heuristic vs cudnnFind), cnn on cuda
if run compare ./build/repro compare experiments/cnn.ini --vary benchmark=on,off --set backend=cuda --steps 100; then
    say "compare --vary benchmark=on,off (cnn, cuda, 100 steps):"
    sed -n '1,40p' "$T/out" | tee -a "$SUM"
else
    say "✗ compare --vary benchmark=on,off failed (exit $rc):"
    tail -n 15 "$T/out" | tee -a "$SUM"
    fails=$((fails + 1))
fi

# 5. CPU trace vs GPU trace (informational: the divergence is the result)
for e in mlp cnn; do
    run "cpu $e" ./build/repro run experiments/$e.ini --steps 100 -q -o "$T/$e-cpu.jsonl"
    run "gpu $e" ./build/repro run experiments/$e.ini --steps 100 -q --backend cuda -o "$T/$e-gpu.jsonl"
    if run "diff $e" ./build/repro diff "$T/$e-cpu.jsonl" "$T/$e-gpu.jsonl"; then
        say "✓ diff CPU vs GPU, $e: bitwise identical over 100 steps"
    elif [ $rc -eq 1 ]; then
        say "diff CPU vs GPU, $e (GPU with its own algorithm choices): differ"
        sed -n '1,12p' "$T/out" | tee -a "$SUM"
    else
        say "✗ diff CPU vs GPU, $e: exit $rc"
        tail -n 5 "$T/out" | tee -a "$SUM"
        fails=$((fails + 1))
    fi
done
run "gpu cnn locked" ./build/repro run experiments/cnn.ini --steps 100 -q --backend cuda \
    --algo-lock "$T/cnn-cpu.jsonl" -o "$T/cnn-gpu-locked.jsonl"
if run "diff cnn locked" ./build/repro diff "$T/cnn-cpu.jsonl" "$T/cnn-gpu-locked.jsonl"; then
    say "✓ diff CPU vs GPU, cnn with the CPU's algorithms (--algo-lock): bitwise identical over 100 steps"
else
    say "diff CPU vs GPU, cnn with the CPU's algorithms (--algo-lock): exit $rc"
    sed -n '1,12p' "$T/out" | tee -a "$SUM"
fi

# 6. step times
if run "step time" ./build/step_time experiments/mlp.ini experiments/cnn.ini; then
    cat "$T/out" | tee -a "$SUM"
else
    say "✗ step_time failed (exit $rc)"
    tail -n 5 "$T/out" | tee -a "$SUM"
    fails=$((fails + 1))
fi

say "elapsed: $(( $(date +%s) - start )) s"
[ $fails -eq 0 ] && finish "PASSED" 0
finish "FAILED ($fails)" 1
