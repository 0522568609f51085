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
# reaches the kernels only through the backend-neutral headers: those at
# the top of kernels/ (backend.h, variants.h, philox.h) and the shared
# per-element code every backend compiles (kernels/shared/), never a
# backend's own (kernels/cpu/*, kernels/cuda/*), so a backend can be
# swapped behind the table without touching the harness. tests/ and bench/
# may include them.
#
# Includes are not the whole truth: a hand-written prototype calls upward
# without one. So, given the build's objects (--objects DIR), the check
# also reads symbols (nm), with the same ranks (rank_of):
#   - every undefined symbol of an object is defined in the same or a lower
#     layer's objects, or outside ours (libc, OpenSSL, ...);
#   - no two source files use symbols the other defines (a two-file loop:
#     a file split by size, not along a seam), except the command table
#     (harness/cli/commands.c and the cmd_*.c files it names). There is no
#     allowlist in the tree: a loop is fixed at its seam, not excused.
#   - only the files in SPAWNERS (below) use a call that starts a process
#     (fork, vfork, clone, posix_spawn*, system, popen, daemon, forkpty).
#     repro is a child subreaper (util/orphans.h): once none of the
#     children util/child.c started is running, it kills every child it
#     still has as a program's orphan. A process started any other way
#     would be killed as one, so every start goes through util/child.c,
#     which counts its children from before the fork. (Only our objects
#     are read: a library's own fork is not seen. Open MPI is joined only
#     under its launcher, never as a singleton that forks its daemon.)
#
# Usage: check-layers.sh [--objects DIR] [ROOT]
#                                    exit 0 clean, 1 with one line per violation
#                                    (file and include, or file and symbol)
#        check-layers.sh --self-test plants violations in a copy (includes)
#                                    and in objects it compiles (symbols);
#                                    each must be reported, and nothing else
set -eu

# The files that may start processes, and why:
#   harness/util/child.c  every child (fork, then exec) and its group's guard
SPAWNERS="harness/util/child.c"
SPAWN_CALLS='^(fork|vfork|_Fork|clone|clone3|__clone|posix_spawn.*|system|popen|daemon|forkpty)$'

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
            harness/*:kernels/shared/*) ;; # backend-neutral: every backend compiles it
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

# ---- symbols -----------------------------------------------------------
# The objects of harness/ and kernels/ under DIR whose source is in ROOT
# (a stale object of a removed file is not the tree's), one per line as
# "OBJECT SOURCE RANK" (SOURCE: the path rank_of reads, .c or .cu).
list_objects() {
    dir=$1 src_root=$2
    (cd "$dir" && find harness kernels -name '*.o' 2>/dev/null | sort) |
    while read -r o; do
        if [ -f "$src_root/${o%.o}.c" ]; then src=${o%.o}.c
        elif [ -f "$src_root/${o%.o}.cu" ]; then src=${o%.o}.cu
        else continue; fi
        r=$(rank_of "$src")
        [ -z "$r" ] || echo "$dir/$o $src $r"
    done
}

# Checks the objects under DIR of the sources in ROOT (see the top). ALLOW:
# the loop allowlist ("" for none). One line per violation, naming files
# and symbol.
check_symbols() {
    dir=$1 allow=$2
    list_objects "$dir" "$3" >"$tmp_objs"
    [ -s "$tmp_objs" ] || { echo "$dir: no objects of harness/ or kernels/ (build first)"; return 1; }
    # One nm for all objects (-A: each line starts with its object's path),
    # each line mapped to its source and rank: "SYMBOL SOURCE RANK" for a
    # global definition (function or data), "SOURCE RANK SYMBOL" for a use.
    objs=$(cut -d' ' -f1 "$tmp_objs")
    # shellcheck disable=SC2086 # one word per object path
    nm -A -g --defined-only $objs | awk 'NR == FNR { src[$1] = $2; rank[$1] = $3; next }
        { o = substr($0, 1, index($0, ":") - 1); if (NF >= 3) print $NF, src[o], rank[o] }' \
        "$tmp_objs" - >"$tmp_defs"
    # shellcheck disable=SC2086
    nm -A -u $objs | awk 'NR == FNR { src[$1] = $2; rank[$1] = $3; next }
        { o = substr($0, 1, index($0, ":") - 1); print src[o], rank[o], $NF }' \
        "$tmp_objs" - >"$tmp_uses"
    [ -n "$allow" ] && [ -f "$allow" ] || allow=/dev/null
    awk -v spawners="$SPAWNERS" -v spawn_calls="$SPAWN_CALLS" '
        BEGIN { n = split(spawners, s, " "); for (i = 1; i <= n; i++) spawner[s[i]] = 1 }
        FILENAME == ARGV[1] { if ($0 !~ /^[ \t]*(#|$)/) allowed[$1 " " $2] = allowed[$2 " " $1] = 1; next }
        FILENAME == ARGV[2] { if (!($1 in def)) { def[$1] = $2; drank[$1] = $3 }; next }
        {   # a use: file rank symbol
            f = $1; r = $2; sym = $3
            if (sym ~ spawn_calls && !(sym in def) && !(f in spawner))
                print f ": uses " sym ", which starts a process outside harness/util/child.c (the subreaper would kill it: util/orphans.h)"
            if (!(sym in def) || def[sym] == f) next
            g = def[sym]
            if (drank[sym] > r)
                print f ": uses " sym ", defined in " g ", a layer above its own"
            if (!((f, g) in edge)) { edge[f, g] = sym; nedge++; from[nedge] = f; to[nedge] = g }
        }
        function cmdtable(a, b) {
            return a == "harness/cli/commands.c" && b ~ /^harness\/cli\/cmd_[^\/]*\.c$/
        }
        END {
            for (i = 1; i <= nedge; i++) {
                a = from[i]; b = to[i]
                if (a >= b || !((b, a) in edge)) continue
                if (cmdtable(a, b) || cmdtable(b, a) || ((a " " b) in allowed)) continue
                print a " <-> " b ": a two-file loop (" a " uses " edge[a, b] ", " b " uses " edge[b, a] ")"
            }
        }' "$allow" "$tmp_defs" "$tmp_uses" >"$tmp_out"
    if [ -s "$tmp_out" ]; then
        sort "$tmp_out"
        return 1
    fi
    return 0
}

# Plants, in objects of its own (no build needed), an upward call through a
# hand-written prototype (util/ -> cli/), a two-file loop, and processes
# started outside util/child.c (system, posix_spawnp); beside them,
# negative controls that must pass: a downward call, a libc call, a call
# within a layer in one direction, an allowlisted loop, the command
# table's loop (commands.c <-> a cmd_*.c) and fork in util/child.c.
symbol_self_test() {
    src=$scratch/sym/src
    obj=$scratch/sym/obj
    mkdir -p "$src/harness/util" "$src/harness/cli" "$src/harness/record" \
        "$obj/harness/util" "$obj/harness/cli" "$obj/harness/record"
    cat >"$src/harness/cli/planted_cmd.c" <<'C'
int repro_planted_util(int x);
int repro_planted_cli(int x) { return repro_planted_util(x) + 1; } /* down: allowed */
C
    cat >"$src/harness/util/planted_up.c" <<'C'
int repro_planted_cli(int x); /* hand-written, no #include: the call upward */
int repro_planted_up(int x) { return repro_planted_cli(x); }
C
    cat >"$src/harness/util/planted_down.c" <<'C'
int repro_planted_util(int x) { return x; }
C
    cat >"$src/harness/util/planted_a.c" <<'C'
#include <string.h>
int repro_planted_b(int x);
int repro_planted_a(int x) { return x > 0 ? repro_planted_b(x - 1) : (int)strlen("a"); }
C
    cat >"$src/harness/util/planted_b.c" <<'C'
int repro_planted_a(int x);
int repro_planted_b(int x) { return repro_planted_a(x); }
C
    cat >"$src/harness/util/planted_c.c" <<'C'
int repro_planted_a(int x);
int repro_planted_c(int x) { return repro_planted_a(x); } /* one way: no loop */
C
    cat >"$src/harness/record/planted_p.c" <<'C'
int repro_planted_q(void);
int repro_planted_p(void) { return repro_planted_q(); }
C
    cat >"$src/harness/record/planted_q.c" <<'C'
int repro_planted_p(void);
int repro_planted_q(void) { return repro_planted_p(); }
C
    cat >"$src/harness/cli/commands.c" <<'C'
int repro_cmd_planted(int x);
int repro_planted_run_cmd(int x) { return repro_cmd_planted(x); }
C
    cat >"$src/harness/cli/cmd_planted.c" <<'C'
int repro_planted_run_cmd(int x);
int repro_cmd_planted(int x) { return x > 0 ? repro_planted_run_cmd(x - 1) : 0; }
C
    cat >"$src/harness/cli/planted_shell.c" <<'C'
#include <stdlib.h>
int repro_planted_shell(void) { return system("true"); } /* a process outside child.c */
C
    cat >"$src/harness/record/planted_spawn.c" <<'C'
#include <spawn.h>
#include <stddef.h>
int repro_planted_spawn(pid_t *pid, char **argv) { return posix_spawnp(pid, argv[0], NULL, NULL, argv, NULL); }
C
    cat >"$src/harness/util/child.c" <<'C'
#include <unistd.h>
int repro_planted_child(void) { return fork(); } /* the one place allowed */
C
    for c in cli/commands cli/cmd_planted cli/planted_cmd util/planted_up util/planted_down util/planted_a util/planted_b util/planted_c \
             record/planted_p record/planted_q cli/planted_shell record/planted_spawn util/child; do
        ${CC:-cc} -c -o "$obj/harness/$c.o" "$src/harness/$c.c" ||
            { echo "✗ layer check: the symbol self-test could not compile $c.c"; return 1; }
    done
    printf '# the allowlist negative control\nharness/record/planted_q.c harness/record/planted_p.c\n' \
        >"$scratch/sym/allow"
    if out=$(check_symbols "$obj" "$scratch/sym/allow" "$src"); then
        echo "✗ layer check: planted symbol violations were not caught"; return 1
    fi
    for want in "harness/util/planted_up.c: uses repro_planted_cli, defined in harness/cli/planted_cmd.c, a layer above" \
                "harness/util/planted_a.c <-> harness/util/planted_b.c: a two-file loop" \
                "harness/cli/planted_shell.c: uses system, which starts a process outside harness/util/child.c" \
                "harness/record/planted_spawn.c: uses posix_spawnp, which starts a process outside"; do
        echo "$out" | grep -qF "$want" ||
            { echo "✗ layer check: not reported: $want (got: $out)"; return 1; }
    done
    if [ "$(echo "$out" | wc -l)" -ne 4 ]; then
        echo "✗ layer check: wrong symbol report (downward, libc, one-way, allowed, command-table uses and util/child.c's fork pass): $out"
        return 1
    fi
    echo "✓ layer check catches a planted upward call (no #include), a two-file loop and processes started outside util/child.c:"
    echo "$out"
}

tmp_list=$(mktemp)
tmp_objs=$(mktemp)
tmp_defs=$(mktemp)
tmp_uses=$(mktemp)
tmp_out=$(mktemp)
trap 'rm -f "$tmp_list" "$tmp_objs" "$tmp_defs" "$tmp_uses" "$tmp_out"' EXIT

if [ "${1:-}" = "--self-test" ]; then
    here=$(cd "$(dirname "$0")/.." && pwd)
    scratch=$(mktemp -d)
    trap 'rm -f "$tmp_list" "$tmp_objs" "$tmp_defs" "$tmp_uses" "$tmp_out"; rm -rf "$scratch"' EXIT
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
    symbol_self_test || exit 1
    exit 0
fi

objects=
if [ "${1:-}" = "--objects" ]; then
    [ $# -ge 2 ] || { echo "usage: check-layers.sh [--objects DIR] [ROOT]" >&2; exit 2; }
    objects=$2
    shift 2
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
status=0
if check_tree "$root"; then
    echo "✓ layers: every include points down"
else
    echo "✗ layers: includes that point up (see docs/DESIGN.md, \"Layers\")"
    status=1
fi
if [ -n "$objects" ]; then
    if check_symbols "$objects" "" "$root"; then
        echo "✓ layers: every symbol an object uses is defined in its layer or below; no two-file loops; only util/child.c starts processes"
    else
        echo "✗ layers: symbols used from a layer above, two-file loops, or processes started outside util/child.c (see docs/DESIGN.md, \"Layers\")"
        status=1
    fi
fi
exit $status
