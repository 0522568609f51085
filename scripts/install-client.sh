#!/bin/sh
# The Python client's part of `make install` (the Makefile's install
# recipe runs it after the tool and the library are in place):
#
#   scripts/install-client.sh PYTHON PREFIX DESTDIR FILE...
#
# 1. The package goes where PYTHON (the interpreter the build found) looks
#    for PREFIX, as scripts/python-site.py asks its sysconfig schemes:
#    Debian's python3 3.11 searches /usr/local/lib/python3.11/dist-packages
#    for /usr/local and /usr/lib/python3/dist-packages for /usr. For a
#    prefix it does not search, the posix_prefix directory, and the line
#    to put on PYTHONPATH.
# 2. PREFIX/share/repro/python-site records that directory, relative to
#    PREFIX: how `repro verify` finds the client that belongs to it, to
#    make it importable in its sandbox (harness/verify/client.c).
# 3. For a system prefix (/usr, /usr/local) with no DESTDIR, ldconfig, so
#    that librepro.so.0 is in the loader's cache (a client installed with
#    pip in a virtualenv then finds it); otherwise what to set.
set -eu
python=$1 prefix=$2 destdir=$3
shift 3
prefix=${prefix%/}
[ -n "$prefix" ] || prefix=/

here=$(dirname "$0")
if info=$("$python" "$here/python-site.py" "$prefix" 2>/dev/null); then
    state=${info%% *} site=${info#* }
else
    state=unsearched site=$prefix/lib/python3/dist-packages
    echo "repro: $python cannot say where it looks for packages; the Python client goes to $site"
fi
case $site in
"$prefix"/*) rel=${site#"$prefix"/} ;;
*) rel=$site ;;
esac

install -d "$destdir$site/repro" "$destdir$prefix/share/repro"
install -m 644 "$@" "$destdir$site/repro/"
printf '%s\n' "$rel" >"$destdir$prefix/share/repro/python-site"
chmod 644 "$destdir$prefix/share/repro/python-site"

if [ "$state" = searched ]; then
    echo "repro: Python client installed in $destdir$site/repro ($python searches $site: \`import repro\` needs no variable)"
else
    echo "repro: Python client installed in $destdir$site/repro; $python does not search it:"
    echo "    export PYTHONPATH=$site\${PYTHONPATH:+:\$PYTHONPATH}"
fi

case $prefix in
/usr | /usr/local) system=1 ;;
*) system=0 ;;
esac
if [ "$system" = 1 ] && [ -z "$destdir" ]; then
    if ldconfig 2>/dev/null; then
        echo "repro: ran ldconfig: librepro.so.0 is in the loader's cache"
    else
        echo "repro: ldconfig failed (not root?): run \`ldconfig\` as root so that a client installed with pip finds librepro.so.0"
    fi
elif [ "$system" = 1 ]; then
    echo "repro: DESTDIR is set: run \`ldconfig\` once the files are in $prefix/lib"
else
    echo "repro: $prefix/lib is not in the loader's path: programs linked through pkg-config find"
    echo "    librepro by their run path and the client above finds it beside itself; for a client"
    echo "    installed elsewhere (pip install ./python): export REPRO_LIB=$prefix/lib/librepro.so"
fi
