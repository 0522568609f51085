#!/bin/sh
# The layer check (docs/DESIGN.md, "Layers"): an #include may only point at
# the same layer or one below it. Ranks, bottom up:
#
#   0 include/repro   public headers: system headers and each other only
#   0 kernels         backend.h, cpu/, cuda/: nothing from harness/
#   1 util  2 record  3 core  4 analysis  5 history  6 golden  7 bisect
#   8 verify  9 cli
#
# Also: only the history layer (harness/history/) includes <git2.h>, only
# harness/core/dist.c includes <mpi.h>, no
# public header names an OpenSSL, jansson or libgit2 header, and harness/
# reaches the kernels only through the backend-neutral headers at the top
# of kernels/ (backend.h, variants.h, philox.h): never a backend's own
# (kernels/cpu/*, kernels/cuda/*), so a backend can be swapped behind the
# table without touching the harness. tests/ and bench/ may include them.
#
# Usage: check-layers.sh [ROOT]      exit 0 clean, 1 with one line per violation
#        check-layers.sh --self-test plants violations in a copy; each must be
#                                    reported (beside whatever the tree has)
set -eu

rank_of() { # path of a source file or include target -> rank, or "" if not ours
    case "$1" in
    include/repro/*|repro/*) echo 0 ;;
    kernels/*) echo 0 ;;
    harness/util/*|util/*) echo 1 ;;
    harness/record/*|record/*) echo 2 ;;
    harness/core/*|core/*) echo 3 ;;
    harness/analysis/*|analysis/*) echo 4 ;;
    harness/history/*|history/*) echo 5 ;;
    harness/golden/*|golden/*) echo 6 ;;
    harness/bisect/*|bisect/*) echo 7 ;;
    harness/verify/*|verify/*) echo 8 ;;
    harness/cli/*|cli/*) echo 9 ;;
    *) echo "" ;;
    esac
}

check_tree() {
    root=$1
    bad=0
    files=$(cd "$root" && find include/repro kernels harness -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' 2>/dev/null | sort)
    for f in $files; do
        src_rank=$(rank_of "$f")
        [ -n "$src_rank" ] || continue
        # Quoted includes, with their line numbers.
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$root/$f" 2>/dev/null |
            sed 's/^\([0-9]*\):.*"\(.*\)".*/\1 \2/' >"$tmp_list" || true
        while read -r line target; do
            case "$f" in
            kernels/*)
                case "$target" in
                */*) case "$target" in
                     kernels/*|repro/*) ;;
                     *) echo "$f:$line: kernel code includes \"$target\" (kernels know nothing above them)"; bad=1 ;;
                     esac ;;
                *) ;; # a sibling header
                esac
                continue ;;
            esac
            case "$target" in
            build_info.h|suites.inc) continue ;;
            */*) ;;
            *) # a bare name: a sibling in the same folder
               continue ;;
            esac
            case "$f:$target" in
            harness/*:kernels/*/*)
                echo "$f:$line: includes \"$target\", a backend's own header (harness/ uses kernels/backend.h and the neutral headers beside it)"; bad=1; continue ;;
            esac
            t_rank=$(rank_of "$target")
            if [ -z "$t_rank" ]; then
                echo "$f:$line: includes \"$target\", which is in no layer"; bad=1; continue
            fi
            case "$f" in
            include/repro/*)
                case "$target" in repro/*) ;; *)
                    echo "$f:$line: a public header includes \"$target\" (public headers stand alone)"; bad=1 ;;
                esac
                continue ;;
            esac
            if [ "$t_rank" -gt "$src_rank" ]; then
                echo "$f:$line: includes \"$target\" from a layer above its own"; bad=1
            fi
        done <"$tmp_list"
        if grep -n '#[[:space:]]*include[[:space:]]*<git2' "$root/$f" >"$tmp_list" 2>/dev/null; then
            case "$f" in
            harness/history/*) ;;
            *) echo "$f:$(cut -d: -f1 "$tmp_list" | head -n 1): includes <git2.h> outside harness/history/"; bad=1 ;;
            esac
        fi
        if grep -n '#[[:space:]]*include[[:space:]]*<mpi\.h>' "$root/$f" >"$tmp_list" 2>/dev/null; then
            case "$f" in
            harness/core/dist.c) ;;
            *) echo "$f:$(cut -d: -f1 "$tmp_list" | head -n 1): includes <mpi.h> outside core/dist.c"; bad=1 ;;
            esac
        fi
        case "$f" in
        include/repro/*)
            if grep -n '#[[:space:]]*include[[:space:]]*<\(openssl\|jansson\|git2\|ini\)' "$root/$f" >"$tmp_list"; then
                echo "$f:$(cut -d: -f1 "$tmp_list" | head -n 1): a public header exposes a dependency's types"; bad=1
            fi ;;
        esac
    done
    return $bad
}

tmp_list=$(mktemp)
trap 'rm -f "$tmp_list"' EXIT

if [ "${1:-}" = "--self-test" ]; then
    here=$(cd "$(dirname "$0")/.." && pwd)
    scratch=$(mktemp -d)
    trap 'rm -f "$tmp_list"; rm -rf "$scratch"' EXIT
    (cd "$here" && tar cf - include kernels harness) | (cd "$scratch" && tar xf -)
    # Differential: the tree may already have violations of its own; each
    # planted one must add exactly its line.
    before=$(check_tree "$scratch" || true)
    k=$(cd "$scratch" && ls kernels/cpu/*.c | head -n 1)
    printf '#include "core/train.h"\n' >>"$scratch/$k"
    printf '#include "kernels/cpu/ops.h"\n' >>"$scratch/harness/core/model.c"
    printf '#include "kernels/cuda/ops.h"\n' >>"$scratch/harness/cli/main.c"
    printf '#include "kernels/backend.h"\n#include "kernels/variants.h"\n' >>"$scratch/harness/util/error.c"
    if out=$(check_tree "$scratch"); then
        echo "✗ layer check: planted violations were not caught"; exit 1
    fi
    new=$(echo "$out" | grep -vxF "$before" || true)
    for want in "$k:.*kernel code includes \"core/train.h\"" \
                "harness/core/model.c:.*includes \"kernels/cpu/ops.h\", a backend's own header" \
                "harness/cli/main.c:.*includes \"kernels/cuda/ops.h\", a backend's own header"; do
        echo "$new" | grep -q "$want" ||
            { echo "✗ layer check: not reported: $want (got: $new)"; exit 1; }
    done
    if [ "$(echo "$new" | wc -l)" -ne 3 ]; then
        echo "✗ layer check: wrong report (the neutral kernels/ headers are allowed): $new"; exit 1
    fi
    echo "✓ layer check catches planted violations:"
    echo "$new"
    exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if check_tree "$root"; then
    echo "✓ layers: every include points down"
else
    echo "✗ layers: includes that point up (see docs/DESIGN.md, \"Layers\")"
    exit 1
fi
