# Shared by tests/gpu/prepare.sh, run.sh and selftest.sh (sourced, POSIX sh):
# which shared libraries a staged GPU folder may leave to the machine it
# runs on, and the check that its binaries resolve every other one inside
# the folder.
#
# Left to the GPU machine: glibc's own libraries (every Linux has them; the
# staged binaries need no newer glibc than the one prepare reports), the
# NVIDIA driver's (libcuda, libnvidia-*: they must match the kernel module)
# and cuDNN (the machine's own, e.g. the pip wheel nvidia-cudnn-cu13, found
# by run.sh). Everything else (libcudart, libstdc++, OpenSSL, libgit2 and
# its dependencies, jansson, inih) is staged.

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
    esac
    return 1
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
        "$(${PYTHON:-python3} -c 'import nvidia.cudnn as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null)" \
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
