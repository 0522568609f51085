#!/bin/sh
# The closing line of `make check`: how many tests (or parts of tests) were
# skipped and why, from the log they append to (REPRO_SKIP_LOG: one
# "SUITE<TAB>WHY" line a skip, tests/testutil.h's tu_skip and
# tests/gpu/selftest.sh). Skips of the same reason are counted together,
# with the suites that had them:
#
#     3 skipped: no torch for /usr/bin/python3 (pyclient x2, examples); no nvcc (gpu selftest)
#     0 skipped
#
# usage: scripts/skip-summary.sh LOG   (a missing or empty LOG: 0 skipped)
#        scripts/skip-summary.sh --self-test
set -eu

summary() { # LOG
    if [ ! -s "$1" ]; then
        echo "0 skipped"
        return
    fi
    awk -F '\t' '
        NF < 2 { $2 = $1; $1 = "?" }
        {
            n++
            if (!($2 in seen)) { seen[$2] = 1; order[++nr] = $2 }
            k = $2 SUBSEP $1
            if (!(k in count)) suites[$2] = suites[$2] (suites[$2] == "" ? "" : "\t") $1
            count[k]++
        }
        END {
            line = n " skipped:"
            for (i = 1; i <= nr; i++) {
                r = order[i]
                ns = split(suites[r], s, "\t")
                list = ""
                for (j = 1; j <= ns; j++) {
                    c = count[r SUBSEP s[j]]
                    list = list (j > 1 ? ", " : "") s[j] (c > 1 ? " x" c : "")
                }
                line = line (i > 1 ? ";" : "") " " r " (" list ")"
            }
            print line
        }' "$1"
}

self_test() {
    t=$(mktemp -d "${TMPDIR:-/tmp}/skip-summary.XXXXXX")
    trap 'rm -rf "$t"' EXIT
    fail=0
    expect() { # WHAT GOT WANT
        if [ "$2" = "$3" ]; then echo "  ok   $1"
        else echo "  FAIL $1: got '$2', want '$3'"; fail=1; fi
    }
    expect "no log" "$(summary "$t/none")" "0 skipped"
    : >"$t/empty"
    expect "an empty log" "$(summary "$t/empty")" "0 skipped"
    printf 'pyclient\tno torch for /usr/bin/python3\nexamples\tno torch for /usr/bin/python3\n' >"$t/log"
    printf 'pyclient\tno torch for /usr/bin/python3\ngpu selftest\tno nvcc\n' >>"$t/log"
    expect "grouped by reason" "$(summary "$t/log")" \
        "4 skipped: no torch for /usr/bin/python3 (pyclient x2, examples); no nvcc (gpu selftest)"
    [ "$fail" = 0 ] && echo "skip-summary self-test: ok" || echo "skip-summary self-test: FAILED"
    return "$fail"
}

case "${1:-}" in
--self-test) self_test ;;
"") echo "usage: scripts/skip-summary.sh LOG | --self-test" >&2; exit 2 ;;
*) summary "$1" ;;
esac
