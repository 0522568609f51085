#!/bin/sh
# The price of tensor parallel on the mlp (docs/tensor-parallel.md):
# steps/s at tp 1, tp 2 (2 processes) and, beside them, data parallel on
# 2 ranks; then the TP-invariant chain (linear.tp_reduce = ordered)
# against the ring all-reduce at the same tp. Configurations are
# interleaved round by round and each keeps its best round, so a machine
# that is busy for a while slows every one alike.
# usage: bench/tp_cost.sh REPRO [STEPS] [ROUNDS]
repro=${1:?usage: tp_cost.sh REPRO [STEPS] [ROUNDS]}
steps=${2:-200}
rounds=${3:-3}
exp=experiments/mlp.ini

rate() {
    "$repro" run "$exp" --steps "$steps" --no-trace -q "$@" 2>/dev/null |
        sed -n 's/.* s training, \([0-9.]*\) steps\/s.*/\1/p' | tail -n 1
}
best() { awk -v a="$1" -v b="$2" 'BEGIN { print (b == "" || a + 0 > b + 0) ? a : b }'; }

tp1= tp2= dp2= ring2=
r=0
while [ "$r" -lt "$rounds" ]; do
    tp1=$(best "$(rate)" "$tp1")
    tp2=$(best "$(rate --tp 2)" "$tp2")
    dp2=$(best "$(rate --ranks 2)" "$dp2")
    ring2=$(best "$(rate --tp 2 --set linear.tp_reduce=ring)" "$ring2")
    r=$((r + 1))
done
for v in "$tp1" "$tp2" "$dp2" "$ring2"; do
    [ -n "$v" ] || { echo "tp cost: a run failed (repro run --tp 2 needs Open MPI)"; exit 3; }
done
echo "tensor parallel, mlp, $steps steps, best of $rounds interleaved rounds (steps/s):"
printf '  %-38s %8s\n' "tp 1 (one process)" "$tp1" "tp 2 (2 processes, ordered chain)" "$tp2" \
    "ranks 2 (data parallel, 2 processes)" "$dp2" "tp 2, linear.tp_reduce = ring" "$ring2"
awk -v o="$tp2" -v r="$ring2" 'BEGIN {
    x = o / r
    printf "  invariant chain / ring at tp 2: %.2fx (goal >= 0.90: %s)\n", x, (x >= 0.9 ? "ok" : "MISSED")
}'
