#!/bin/sh
# Makes sure the Debian packages repro builds against are installed: installs
# them with apt-get when run as root, otherwise prints the exact command and
# fails, so `make run` / `make check` work on a fresh machine.
set -eu

# pkg-config module -> Debian package
need="openssl:libssl-dev libgit2:libgit2-dev jansson:libjansson-dev inih:libinih-dev libxxhash:libxxhash-dev check:check"

missing=""
command -v pkg-config >/dev/null 2>&1 || missing="pkg-config"
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
[ -z "$missing" ] && exit 0

# shellcheck disable=SC2086
set -- $missing
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "repro: installing missing packages: $*" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$@" libsubunit-dev
    exit 0
fi
echo "repro: missing build dependencies: $*" >&2
echo "repro: install them with:" >&2
echo "    sudo apt-get install -y $* libsubunit-dev" >&2
exit 1
