#!/bin/sh
# Makes sure the Debian packages repro builds against are installed: installs
# them with apt-get when run as root, otherwise prints the exact command and
# fails, so `make run` / `make check` work on a fresh machine.
#
# With --tests (`make check`), also what the test suites need to run rather
# than skip: bubblewrap (the sandbox of `repro verify`), Debian's python3
# with NumPy and PyTorch (the Python client's tests and the PyTorch
# examples), the pthread OpenBLAS (without it PyTorch falls back to the
# reference BLAS, ~20x slower) and chromium (the HTML report rendered
# headless). As root they are installed; otherwise, or
# when the install fails, the command is printed and the tests go on: each
# test that needs a missing one skips, and `make check` ends with the count
# of skips and their reasons.
set -eu

tests=0
[ "${1:-}" = "--tests" ] && tests=1

# pkg-config module -> Debian package
need="openssl:libssl-dev libgit2:libgit2-dev jansson:libjansson-dev inih:libinih-dev libxxhash:libxxhash-dev check:check"

missing=""
command -v pkg-config >/dev/null 2>&1 || missing=" pkg-config"
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
command -v make >/dev/null 2>&1 || missing="$missing make"
for pair in $need; do
    mod=${pair%%:*}
    pkg=${pair#*:}
    if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists "$mod"; then
        missing="$missing $pkg"
    fi
done
# Data parallel (repro run --ranks N) builds on Open MPI: mpicc and mpirun.
command -v mpicc >/dev/null 2>&1 || missing="$missing libopenmpi-dev"
command -v mpirun >/dev/null 2>&1 || missing="$missing openmpi-bin"
# Check's pkg-config file names subunit on Debian; its -dev package must be there.
if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists check && ! pkg-config --libs check >/dev/null 2>&1; then
    missing="$missing libsubunit-dev"
fi
[ -n "$missing" ] && missing="$missing libsubunit-dev"

# What the tests need (the tests look for exactly these: /usr/bin/python3).
test_missing=""
if [ "$tests" = 1 ]; then
    command -v bwrap >/dev/null 2>&1 || test_missing=" bubblewrap"
    if [ ! -x /usr/bin/python3 ]; then
        test_missing="$test_missing python3 python3-numpy python3-torch"
    else
        /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || test_missing="$test_missing python3-numpy"
        /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || test_missing="$test_missing python3-torch"
    fi
    if command -v dpkg-query >/dev/null 2>&1 &&
        ! dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q 'ok installed'; then
        test_missing="$test_missing libopenblas0-pthread"
    fi
    # `repro check --report`'s test renders the page in a headless browser.
    # fonts-liberation: chromium only recommends fonts, and without one its
    # text renders as empty boxes.
    command -v chromium >/dev/null 2>&1 || test_missing="$test_missing chromium fonts-liberation"
fi
[ -z "$missing$test_missing" ] && exit 0

root=0
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && root=1
if [ "$root" = 1 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || echo "repro: apt-get update failed; trying the install anyway" >&2
    if [ -n "$missing" ]; then
        echo "repro: installing missing packages:$missing" >&2
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $missing
    fi
    if [ -n "$test_missing" ]; then
        echo "repro: installing what the tests need:$test_missing" >&2
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $test_missing && exit 0
        echo "repro: could not install$test_missing: the tests that need them will skip" \
            "(counted at the end)" >&2
    fi
    exit 0
fi
if [ -n "$missing" ]; then
    echo "repro: missing build dependencies:$missing" >&2
    echo "repro: install them with:" >&2
    echo "    sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "repro: the tests that need these will skip (counted at the end):$test_missing" >&2
echo "repro: to run them, install with:" >&2
echo "    sudo apt-get install -y --no-install-recommends$test_missing" >&2
exit 0
