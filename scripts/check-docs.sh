#!/bin/sh
# The docs check: what README.md, CONTRIBUTING.md and docs/*.md show must be
# true of this tree, so a renamed file, heading, command or make target
# cannot leave a page that sends a reader nowhere.
#
#  - every relative link [text](target) resolves to an existing file, and
#    its #anchor, if any, to a heading of that file (GitHub's slug:
#    lower case, punctuation dropped, each space a hyphen, -1, -2 ... for
#    repeats);
#  - every `repro COMMAND` in a code block or code span is a command that
#    `repro help` lists, and every --option after it one that
#    `repro help COMMAND` lists (skipped for a command whose help lists no
#    options: option parsing is being reworked, so this stays tolerant);
#  - every `make TARGET` in a code block or code span is a Makefile target
#    (a rule, a .PHONY name, or a match of a pattern rule; $(BUILD) read as
#    build).
#
# Usage: check-docs.sh [--repro BIN] [ROOT]   exit 0 clean, 1 with one
#                                             file:line line per problem
#        check-docs.sh --self-test [--repro BIN]
#                                             plants a broken link, a broken
#                                             anchor, an unknown command, an
#                                             unknown option and unknown make
#                                             targets in a copy; each must be
#                                             reported at its line
# BIN defaults to $REPRO_BIN, else ROOT/build/repro (it must be built).
set -eu

self_test=0
repro_bin=${REPRO_BIN:-}
root=
while [ $# -gt 0 ]; do
    case "$1" in
    --self-test) self_test=1 ;;
    --repro) shift; repro_bin=${1:?--repro needs a path} ;;
    -*) echo "check-docs: unknown option $1" >&2; exit 2 ;;
    *) root=$1 ;;
    esac
    shift
done
here=$(cd "$(dirname "$0")/.." && pwd)
root=${root:-$here}
repro_bin=${repro_bin:-$root/build/repro}
[ -x "$repro_bin" ] || { echo "check-docs: $repro_bin not built (make build/repro)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# The pages checked, relative to a root.
pages() {
    (cd "$1" && for f in README.md CONTRIBUTING.md docs/*.md; do [ -f "$f" ] && echo "$f"; done)
}

# One line per thing to check in a page, "KIND<TAB>LINE<TAB>VALUE":
# LINK (outside code), CMD and MAKE (inside code blocks and code spans).
# Fenced blocks (``` or ~~~) are code; elsewhere `spans` are code and the
# rest is prose, where links are read.
scan_page() {
    awk '
    function emit(kind, value) { printf "%s\t%d\t%s\n", kind, NR, value }
    # repro COMMAND: "repro" at a word start (a path before it allowed:
    # ./repro, build/repro), not after "import" or "from" (Python).
    function commands(s,    pre, w) {
        while (match(s, /(^|[ \t'"'"'"(;|&`$])((\.\.?)?\/?([A-Za-z0-9_.-]+\/)*)repro[ \t]+[a-z][a-z0-9-]*/)) {
            start = RSTART
            w = substr(s, RSTART, RLENGTH)
            s2 = s
            s = substr(s, RSTART + RLENGTH)
            match(w, /repro[ \t]+[a-z][a-z0-9-]*$/)
            pre = substr(s2, 1, start + RSTART - 2)
            if (pre ~ /(import|from)[ \t]+$/) continue
            sub(/.*repro[ \t]+/, "", w)
            emit("CMD", w options(s))
        }
    }
    # The --options after a command, up to a shell separator, a comment
    # or a bare "--" (what follows it is the command line of a program).
    function options(rest,    n, i, words, out) {
        sub(/[|;&#`)].*/, "", rest)
        n = split(rest, words, /[ \t]+/)
        out = ""
        for (i = 1; i <= n; i++) {
            if (words[i] == "--") break
            if (words[i] ~ /^--[a-z][a-z0-9-]*/) { sub(/=.*/, "", words[i]); out = out " " words[i] }
        }
        return out
    }
    # make TARGET...: the words after "make" up to a shell separator or a
    # comment; options and VAR=value assignments are not targets.
    function makes(s,    m, n, i, words) {
        while (match(s, /(^|[ \t'"'"'"(;|&`])make([ \t][^|;&'"'"'"`)#]*)?($|[|;&'"'"'"`)#])/)) {
            m = substr(s, RSTART, RLENGTH)
            s = substr(s, RSTART + RLENGTH)
            sub(/^[^m]*make/, "", m)
            sub(/[|;&'"'"'"`)#]$/, "", m)
            n = split(m, words, /[ \t]+/)
            for (i = 1; i <= n; i++) {
                if (words[i] == "" || words[i] ~ /^-/ || words[i] ~ /=/) continue
                emit("MAKE", words[i])
            }
        }
    }
    function links(s,    t) {
        while (match(s, /\]\([^)[:space:]]+([ \t]+"[^"]*")?\)/)) {
            t = substr(s, RSTART + 2, RLENGTH - 3)
            s = substr(s, RSTART + RLENGTH)
            sub(/[ \t].*/, "", t)
            emit("LINK", t)
        }
        if (match(s, /^[ ]?[ ]?[ ]?\[[^]]+\]:[ \t]+[^ \t]+/)) {
            t = substr(s, RSTART, RLENGTH)
            sub(/^[^]]*\]:[ \t]+/, "", t)
            emit("LINK", t)
        }
    }
    /^[ \t]*(```|~~~)/ { fenced = !fenced; next }
    fenced { commands($0); makes($0); next }
    {
        prose = ""; s = $0
        while (match(s, /`+/)) {
            tick = substr(s, RSTART, RLENGTH)
            prose = prose substr(s, 1, RSTART - 1) " "
            s = substr(s, RSTART + RLENGTH)
            end = index(s, tick)
            if (!end) { prose = prose tick s; s = ""; break }
            span = substr(s, 1, end - 1)
            commands(span); makes(span)
            s = substr(s, end + length(tick))
        }
        links(prose s)
    }' "$1"
}

# The GitHub anchors of a page's headings, one a line (outside fences).
anchors() {
    awk '
    /^[ \t]*(```|~~~)/ { fenced = !fenced; next }
    fenced || !/^#+[ \t]/ { next }
    {
        h = $0
        sub(/^#+[ \t]+/, "", h); sub(/[ \t]+#*[ \t]*$/, "", h)
        h = tolower(h)
        gsub(/[^a-z0-9 _-]/, "", h)
        gsub(/ /, "-", h)
        if (h in seen) { seen[h]++; print h "-" seen[h] } else { seen[h] = 0; print h }
    }' "$1"
}

# Make targets: rule names (with $(BUILD) as build), .PHONY names; pattern
# rules as they are (with %), matched by case below.
make_targets() {
    awk '
    /^\.PHONY:/ || (phony && /^[ \t]/) {
        s = $0; sub(/^\.PHONY:/, "", s); sub(/\\$/, "", s)
        n = split(s, w, /[ \t]+/); for (i = 1; i <= n; i++) if (w[i] != "") print w[i]
        phony = ($0 ~ /\\$/); next
    }
    { phony = 0 }
    /^[^ \t#][^=]*:([^=]|$)/ {
        s = $0; sub(/:.*/, "", s); gsub(/\$\(BUILD\)/, "build", s)
        n = split(s, w, /[ \t]+/); for (i = 1; i <= n; i++) if (w[i] != "" && w[i] !~ /\$/) print w[i]
    }' "$1/Makefile" | sort -u
}

is_target() { # name -> 0 when the Makefile makes it
    while read -r t; do
        # shellcheck disable=SC2254 # the pattern is the point
        case "$1" in $t) return 0 ;; esac
    done <"$tmp/targets"
    return 1
}

check_root() {
    r=$1
    bad=0
    "$repro_bin" help 2>/dev/null | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' \
        >"$tmp/commands"
    [ -s "$tmp/commands" ] || { echo "check-docs: '$repro_bin help' lists no commands" >&2; return 2; }
    make_targets "$r" | sed 's/%/*/g' >"$tmp/targets"
    for page in $(pages "$r"); do
        dir=$(dirname "$page")
        scan_page "$r/$page" >"$tmp/items"
        while IFS="$(printf '\t')" read -r kind line value; do
            case "$kind" in
            CMD)
                # shellcheck disable=SC2086 # split into the command and its options
                set -- $value
                cmd=$1; shift
                if ! grep -qx -- "$cmd" "$tmp/commands"; then
                    echo "$page:$line: 'repro $cmd' is not a command ($repro_bin help lists them)"; bad=1
                    continue
                fi
                # Options, tolerantly: only where the command's help lists
                # options at all (their parsing is being reworked).
                help=$tmp/help.$cmd
                [ -f "$help" ] || "$repro_bin" help "$cmd" >"$help" 2>&1 || : >"$help"
                grep -q -- '--[a-z]' "$help" || continue
                for opt in "$@"; do
                    grep -qE -- "$opt([^a-z0-9-]|\$)" "$help" ||
                        { echo "$page:$line: 'repro $cmd $opt': not an option 'repro help $cmd' lists"; bad=1; }
                done ;;
            MAKE)
                is_target "$value" ||
                    { echo "$page:$line: 'make $value': no such target in the Makefile"; bad=1; } ;;
            LINK)
                case "$value" in
                [a-zA-Z]*:*) continue ;; # http:, https:, mailto:
                esac
                path=${value%%#*}
                anchor=
                case "$value" in *'#'*) anchor=${value#*#} ;; esac
                if [ -z "$path" ]; then target=$page; else target=$dir/$path; fi
                if [ ! -e "$r/$target" ]; then
                    echo "$page:$line: link '$value': no such file $target"; bad=1; continue
                fi
                if [ -n "$anchor" ]; then
                    case "$target" in
                    *.md) anchors "$r/$target" | grep -qx -- "$anchor" ||
                            { echo "$page:$line: link '$value': no heading '#$anchor' in $target"; bad=1; } ;;
                    *) echo "$page:$line: link '$value': an anchor into $target, which is not a markdown page"; bad=1 ;;
                    esac
                fi ;;
            esac
        done <"$tmp/items"
    done
    return $bad
}

if [ "$self_test" = 0 ]; then
    if check_root "$root"; then
        echo "✓ docs: every link, repro command and make target shown in $(pages "$root" | wc -l) pages exists"
        exit 0
    fi
    exit 1
fi

# ---- self-test ---------------------------------------------------------------
# A copy of the pages (the rest of the tree linked in, so the real links
# still resolve) must pass as it is; then with one planted error of each
# kind, each must be reported at its own line, and the check must fail.
copy=$tmp/copy
mkdir -p "$copy/docs"
for e in "$root"/* "$root"/.[!.]*; do
    [ -e "$e" ] || continue
    case "${e##*/}" in README.md|CONTRIBUTING.md|docs) ;; *) ln -s "$e" "$copy/${e##*/}" ;; esac
done
for e in "$root"/docs/*; do
    case "$e" in *.md) cp "$e" "$copy/docs/" ;; *) ln -s "$e" "$copy/docs/${e##*/}" ;; esac
done
cp "$root/README.md" "$copy/"
[ -f "$root/CONTRIBUTING.md" ] && cp "$root/CONTRIBUTING.md" "$copy/"

if ! check_root "$copy" >"$tmp/clean.out"; then
    cat "$tmp/clean.out"
    echo "check-docs self-test: the unplanted copy does not pass (see above)"
    exit 1
fi

n=$(wc -l <"$copy/README.md")
cat >>"$copy/README.md" <<'EOF'

A [planted link](docs/no-such-page.md) and a [planted anchor](README.md#no-such-heading).

```sh
./repro frobnicate experiments/mlp.ini
make no-such-target
./repro check --no-such-option experiments/mlp.ini -- prog --its-own-option
```

Also in a span: `make check no-such-span-target`.
EOF
if check_root "$copy" >"$tmp/planted.out"; then
    echo "check-docs self-test: the planted copy passed"; exit 1
fi
fail=0
expect() { # line, text that must be reported at README.md:line
    grep -F "README.md:$(( n + $1 )):" "$tmp/planted.out" | grep -qF -- "$2" ||
        { echo "check-docs self-test: not reported at README.md:$(( n + $1 )): $2"; fail=1; }
}
expect 2 "docs/no-such-page.md"
expect 2 "#no-such-heading"
expect 5 "'repro frobnicate'"
expect 6 "'make no-such-target'"
expect 7 "'repro check --no-such-option'"
expect 10 "'make no-such-span-target'"
if [ "$(wc -l <"$tmp/planted.out")" -ne 6 ]; then
    echo "check-docs self-test: expected exactly 6 reports, got:"; fail=1
fi
if [ $fail = 1 ]; then cat "$tmp/planted.out"; exit 1; fi
echo "check-docs self-test: planted broken link, anchor, command, option and make targets all reported"
