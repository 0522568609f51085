#!/bin/sh
# The size of proof against the length of the run: for a 3,000- and a
# 30,000-step MLP run at the default trace level, prints the trace's size,
# the golden's (as `repro bless` writes it, in a scratch git repository),
# and the time and peak memory of `repro diff` of two such traces (one
# with a bit flipped at mid-run, so the diff walks every step and reports
# a divergence). The bounds (docs/traces.md): trace <= 1,000 bytes a step,
# golden <= 200, diff <= 2 s and <= 64 MB at 30,000 steps, diff's peak
# memory the same within 10% at both lengths.
#
# usage: scripts/trace-size.sh [REPRO]   (default build/repro; run from the
# repository root). Exit 1 when a bound is missed.
set -eu
REPRO=$(cd "$(dirname "${1:-build/repro}")" && pwd)/$(basename "${1:-build/repro}")
EXP=$(pwd)/experiments/mlp.ini
[ -x "$REPRO" ] || { echo "trace-size: no $REPRO (make build/repro)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "trace-size: needs GNU time (/usr/bin/time)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/trace-size.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

fail=0
bound() { # NAME VALUE MAX: checks VALUE <= MAX (awk: decimals allowed)
    if awk "BEGIN { exit !($2 <= $3) }"; then echo "  ok   $1 $2 <= $3"
    else echo "  FAIL $1 $2 > $3"; fail=1; fi
}

git -C "$work" init -q repo
mkdir -p "$work/repo/experiments"
cp "$EXP" "$work/repo/experiments/mlp.ini"
git -C "$work/repo" add experiments
git -C "$work/repo" -c user.name=bench -c user.email=bench@localhost commit -q -m mlp

printf '%-7s %12s %9s %12s %9s %8s %10s\n' steps trace_bytes B/step golden_bytes B/step \
    diff_s diff_MiB
for n in 3000 30000; do
    a="$work/a$n.jsonl" b="$work/b$n.jsonl"
    "$REPRO" run "$EXP" --steps "$n" -q -o "$a" >/dev/null
    REPRO_FAULT="flip:step=$((n / 2)):tensor=param.fc2.weight:element=7" \
        "$REPRO" run "$EXP" --steps "$n" -q -o "$b" >/dev/null 2>&1
    (cd "$work/repo" && "$REPRO" bless experiments/mlp.ini --steps "$n" --runs 1 -q >/dev/null)
    golden=$(ls "$work"/repo/golden/mlp/*.jsonl)
    tb=$(stat -c %s "$a") gb=$(stat -c %s "$golden")
    rc=0
    /usr/bin/time -f '%e %M' -o "$work/time" "$REPRO" diff "$a" "$b" >/dev/null || rc=$?
    [ "$rc" = 1 ] || { echo "trace-size: repro diff exited $rc, expected 1 (diverged)" >&2; exit 2; }
    read -r secs kib <<EOF
$(tail -n 1 "$work/time")
EOF
    mib=$(awk "BEGIN { printf \"%.1f\", $kib / 1024 }")
    printf '%-7s %12s %9s %12s %9s %8s %10s\n' "$n" "$tb" $((tb / n)) "$gb" $((gb / n)) \
        "$secs" "$mib"
    eval "tb$n=$tb gb$n=$gb secs$n=$secs kib$n=$kib"
    rm -f "$a" "$b" "$golden"
done
echo "bounds (30,000 steps):"
bound "trace MB" "$(awk "BEGIN { print $tb30000 / 1e6 }")" 30
bound "golden MB" "$(awk "BEGIN { print $gb30000 / 1e6 }")" 6
bound "diff seconds" "$secs30000" 2
bound "diff peak MiB" "$(awk "BEGIN { print $kib30000 / 1024 }")" 64
bound "diff peak 30,000 / 3,000 steps" "$(awk "BEGIN { print $kib30000 / $kib3000 }")" 1.1
bound "diff peak 3,000 / 30,000 steps" "$(awk "BEGIN { print $kib3000 / $kib30000 }")" 1.1
exit "$fail"
