# Shared by tests/gpu/prepare.sh, run.sh and selftest.sh (sourced, POSIX sh):
# which shared libraries a staged GPU folder may leave to the machine it
# runs on, and the check that its binaries resolve every other one inside
# the folder.
#
# Left to the GPU machine: glibc's own libraries (every Linux has them; the
# staged binaries need no newer glibc than the one prepare reports), the
# NVIDIA driver's (libcuda, libnvidia-*: they must match the kernel module),
# cuDNN (the machine's own, e.g. the pip wheel nvidia-cudnn-cu13, found
# by run.sh) and, unless STAGE_CXX_RUNTIME=1, the C++ runtime (libstdc++,
# libgcc_s: see stage_cxx_runtime_needed). Everything else (libcudart,
# OpenSSL, libgit2 and its dependencies, jansson, inih) is staged.

# stage_system_lib NAME: 0 when the library NAME (a soname or path) is left
# to the machine.
stage_system_lib() {
    case "${1##*/}" in
    linux-vdso.so.* | linux-gate.so.* | ld-linux*.so.* | ld64.so.*) return 0 ;;
    libc.so.* | libm.so.* | libdl.so.* | librt.so.* | libpthread.so.* | libresolv.so.*) return 0 ;;
    libutil.so.* | libanl.so.* | libnsl.so.* | libnss_*.so.* | libBrokenLocale.so.*) return 0 ;;
    libmvec.so.* | libthread_db.so.* | libcrypt.so.*) return 0 ;;
    libcuda.so* | libnvidia-*.so*) return 0 ;;
    libcudnn*.so*) return 0 ;;
    libstdc++.so.* | libgcc_s.so.*) [ "${STAGE_CXX_RUNTIME:-0}" != 1 ] && return 0 ;;
    esac
    return 1
}

# The oldest C++ runtime a GPU image is expected to have: GCC 12's (Debian
# 12, Ubuntu 22.04; newer images have newer ones, which keep every older
# symbol version).
STAGE_OLDEST_GLIBCXX=3.4.30
STAGE_OLDEST_CXXABI=1.3.13

# stage_version_lt A B: 0 when version A is older than B (1.3 < 1.3.13).
stage_version_lt() {
    [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]
}

# stage_needed_version TAG FILE...: the newest TAG_x.y symbol version (GLIBC,
# GLIBCXX, CXXABI) the FILEs reference (undefined symbols: what they need,
# not what they define). Empty when none.
stage_needed_version() {
    snv_tag=$1
    shift
    for snv_f in "$@"; do
        objdump -T "$snv_f" 2>/dev/null | grep '\*UND\*' | grep -o "(${snv_tag}_[0-9.]*)"
    done | tr -d '()' | sed "s/^${snv_tag}_//" | sort -V -u | tail -n 1
}

# stage_cxx_runtime_needed FILE...: 0 when the FILEs need a newer C++
# runtime than the oldest image has (then libstdc++ and libgcc_s must be
# staged). Staging it otherwise costs more than it brings: the build
# machine's libstdc++ carries the build machine's glibc floor (Debian 12's
# needs GLIBC_2.36, for arc4random) while our binaries need far less.
stage_cxx_runtime_needed() {
    scr_cxx=$(stage_needed_version GLIBCXX "$@")
    scr_abi=$(stage_needed_version CXXABI "$@")
    { [ -n "$scr_cxx" ] && stage_version_lt "$STAGE_OLDEST_GLIBCXX" "$scr_cxx"; } ||
        { [ -n "$scr_abi" ] && stage_version_lt "$STAGE_OLDEST_CXXABI" "$scr_abi"; }
}

# stage_driver_floor CUDA_VERSION: the oldest NVIDIA driver branch that runs
# that CUDA runtime (NVIDIA's minor-version compatibility: 13.x needs R580,
# 12.x R525, 11.x R450). Empty when unknown.
stage_driver_floor() {
    case "$1" in
    13.*) echo 580 ;;
    12.*) echo 525 ;;
    11.*) echo 450 ;;
    esac
}

# stage_field STAGEFILE KEY: the value of "KEY: value" in the stage's
# description (STAGE), empty when absent.
stage_field() {
    sed -n "s/^$2: //p" "$1" 2>/dev/null | head -n 1
}

# stage_ldd FILE: FILE's libraries, one "NAME PATH" a line (PATH is
# "not-found" when the loader cannot resolve NAME), as ldd reports them
# under the current LD_LIBRARY_PATH.
stage_ldd() {
    ldd "$1" 2>&1 | awk '
        /=> not found/      { print $1, "not-found"; next }
        /=>/ && $3 ~ /^\//  { print $1, $3; next }
        $1 ~ /^\//          { print $1, $1 }'
}

# stage_verify DIR: each entry point (the programs in DIR/bin, and
# DIR/lib/librepro.so, which python3 loads) resolves every library of its
# closure either inside DIR/lib or to a library left to the machine. (The
# staged libraries themselves carry no search path: they are found through
# the entry points' DT_RPATH, which the loader applies to the whole
# closure, so ldd on them alone would say nothing about a run.) Prints one line per offending library ("FILE: NAME: not found" or
# "FILE: NAME: resolved outside the stage to PATH") and returns 1 if any.
# cuDNN is looked up where run.sh would find it (CUDNN_LIB_DIR if set).
stage_verify() {
    sv_dir=$(cd "$1" && pwd) || return 1
    sv_bad=0
    for sv_f in "$sv_dir"/bin/* "$sv_dir"/lib/librepro.so; do
        [ -f "$sv_f" ] || continue
        stage_ldd "$sv_f" >"${TMPDIR:-/tmp}/stage-ldd.$$"
        while read -r sv_name sv_path; do
            if [ "$sv_path" = not-found ]; then
                echo "${sv_f#"$sv_dir"/}: $sv_name: not found"
                sv_bad=1
            elif ! stage_system_lib "$sv_name"; then
                sv_path=$(readlink -f "$sv_path")
                case "$sv_path" in
                "$sv_dir"/lib/*) ;;
                *)
                    echo "${sv_f#"$sv_dir"/}: $sv_name: resolved outside the stage to $sv_path"
                    sv_bad=1
                    ;;
                esac
            fi
        done <"${TMPDIR:-/tmp}/stage-ldd.$$"
        rm -f "${TMPDIR:-/tmp}/stage-ldd.$$"
    done
    return $sv_bad
}

# stage_find_cudnn: sets stage_cudnn_dir to the folder holding
# libcudnn.so.9 on this machine (empty if none) and stage_cudnn_searched to
# the places tried: $CUDNN_LIB (the folder or the file; when set, only
# there), python3's pip wheel (nvidia/cudnn/lib), CUDA's lib64, the usual
# system folders, the loader's cache. Call it directly, not in $(...).
stage_find_cudnn() {
    stage_cudnn_dir= stage_cudnn_searched=
    if [ -n "${CUDNN_LIB:-}" ]; then
        stage_cudnn_searched=" ${CUDNN_LIB%/libcudnn.so.9}"
        [ -e "${CUDNN_LIB%/libcudnn.so.9}/libcudnn.so.9" ] && stage_cudnn_dir=${CUDNN_LIB%/libcudnn.so.9}
        return 0
    fi
    for sfc_d in \
        "$(timeout 30 "${PYTHON:-python3}" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null)" \
        ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu \
        /usr/lib/aarch64-linux-gnu /usr/lib64; do
        [ -n "$sfc_d" ] || continue
        stage_cudnn_searched="$stage_cudnn_searched $sfc_d"
        if [ -e "$sfc_d/libcudnn.so.9" ]; then
            stage_cudnn_dir=$sfc_d
            return 0
        fi
    done
    stage_cudnn_searched="$stage_cudnn_searched ldconfig"
    sfc_p=$(/sbin/ldconfig -p 2>/dev/null | awk '/libcudnn\.so\.9 / { print $NF; exit }')
    [ -n "$sfc_p" ] && stage_cudnn_dir=$(dirname "$sfc_p")
    return 0
}

# stage_python_has_cudnn PY: 0 when PY runs and imports nvidia.cudnn (the
# pip wheel nvidia-cudnn-cu13, the cuDNN its PyTorch loads), within 30 s.
stage_python_has_cudnn() {
    [ -n "$1" ] && timeout 30 "$1" -c 'import nvidia.cudnn' >/dev/null 2>&1
}

# stage_find_python: sets stage_python to the python3 to use (for PyTorch
# and cuDNN's wheel) and stage_python_how to how it was chosen: $PYTHON
# (default python3) when it imports nvidia.cudnn; else the first of the
# usual venv places that does (/opt/*/.venv, /opt/*/venv, /opt/conda,
# ~/.venv, /usr/local/bin, /usr/bin); else a search, bounded by depth and
# 60 s, for */nvidia/cudnn/lib/libcudnn.so.9 in a site-packages, whose
# venv's bin/python3 is taken; else $PYTHON as it is. Under
# $REPRO_GPU_SEARCH_ROOT (default /) for the places and the search, so that
# selftest.sh can lay out a machine of its own. Call it directly.
stage_find_python() {
    sfp_root=${REPRO_GPU_SEARCH_ROOT:-}
    stage_python=${PYTHON:-python3}
    if stage_python_has_cudnn "$stage_python"; then
        stage_python_how="\$PYTHON ($stage_python) imports nvidia.cudnn"
        return 0
    fi
    for sfp_p in "$sfp_root"/opt/*/.venv/bin/python3 "$sfp_root"/opt/*/venv/bin/python3 \
        "$sfp_root"/opt/conda/bin/python3 "$sfp_root${HOME:-/root}"/.venv/bin/python3 \
        "$sfp_root"/usr/local/bin/python3 "$sfp_root"/usr/bin/python3; do
        [ -x "$sfp_p" ] || continue
        if stage_python_has_cudnn "$sfp_p"; then
            stage_python_how="\$PYTHON ($stage_python) has no nvidia.cudnn; $sfp_p, a usual place, has"
            stage_python=$sfp_p
            return 0
        fi
    done
    for sfp_lib in $(timeout 60 find "${sfp_root:-/}" -maxdepth 12 \( -path "$sfp_root/proc" -o \
        -path "$sfp_root/sys" -o -path "$sfp_root/dev" \) -prune -o \
        -path '*/site-packages/nvidia/cudnn/lib/libcudnn.so.9' -print 2>/dev/null | head -n 8); do
        # PREFIX/lib/python3.X/site-packages/nvidia/cudnn/lib/libcudnn.so.9
        sfp_p=${sfp_lib%/lib/python3*/site-packages/*}/bin/python3
        if [ -x "$sfp_p" ] && stage_python_has_cudnn "$sfp_p"; then
            stage_python_how="\$PYTHON ($stage_python) has no nvidia.cudnn; found $sfp_lib by searching, and its $sfp_p"
            stage_python=$sfp_p
            return 0
        fi
    done
    stage_python_how="\$PYTHON ($stage_python): no python3 with nvidia.cudnn found (usual places and a search under ${sfp_root:-/}); kept"
    return 0
}

# gpu_command STAGE: the one command that runs the checks on a GPU machine,
# from the folder that holds STAGE (the repository root, where the device
# tool carries .gpu/). docs/gpu-check.md gives it for .gpu, and selftest.sh
# holds the two to each other. OUT (the device tool sets it) receives the
# summary, the log and the python3 chosen; without it, ./gpu-out.
gpu_command() {
    echo "OUT=\${OUT:-\$PWD/gpu-out} sh $1/tests/gpu/run.sh"
}
