/* The GPU sandbox (util/sandbox_gpu.h, sandbox.h opts.gpu), without a GPU:
 * the device-node discovery reads a directory it is given, so these tests
 * make one of fake nodes with mknod (character devices 195:N, as the
 * NVIDIA driver's; root only, else skipped saying why). The discovery
 * checks each is a character device, not only that the name exists: a
 * plain file named nvidia0 is no GPU (a negative control below). With
 * fake nodes the sandbox binds them (a real bwrap run sees them as
 * character devices in its /dev), sets no address-space limit, and holds
 * the memory with a cgroup, whose OOM kill is named as the memory limit
 * (the control: the same allocation without the cgroup succeeds). A host
 * without nodes is refused, naming them. Opening a fake node fails (no
 * driver): what a real GPU does through them was desk-checked only. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/error.h"
#include "util/sandbox.h"
#include "util/sandbox_args.h"
#include "util/sandbox_gpu.h"
#include "util/sandbox_pids.h"
#include "testutil.h"
#include "tu_sandbox.h"

static char root[TU_TMP_LEN], dev[TU_SB_LEN], libs[TU_SB_LEN], nolibs[TU_SB_LEN],
    scratch[TU_SB_LEN], out_path[TU_SB_LEN], err_path[TU_SB_LEN];

static void setup_dirs(void)
{
    const tu_sb_path paths[] = {{"dev", dev, 1},         {"opt-driver", libs, 1},
                                {"other-libs", nolibs, 1}, {"scratch", scratch, 1},
                                {"out.txt", out_path, 0}, {"err.txt", err_path, 0},
                                {NULL, NULL, 0}};
    tu_sandbox_dirs("sandbox-gpu", root, paths);
}

static void touch(const char *dir, const char *name)
{
    tu_sandbox_write(dir, name, "");
}

/* dev/ with nvidia0, nvidia1, nvidiactl, nvidia-uvm, nvidia-uvm-tools
 * (character devices), nvidia-caps (a directory) and a plain file
 * nvidia2; 0, or -1 where mknod is not allowed (why says so). */
static int make_fake_nodes(char *why, size_t len)
{
    static const char *const nodes[] = {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm",
                                        "nvidia-uvm-tools", NULL};
    char path[600];
    for (int i = 0; nodes[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", dev, nodes[i]);
        if (mknod(path, S_IFCHR | 0666, makedev(195, (unsigned)i)) != 0) {
            snprintf(why, len, "cannot mknod a fake GPU node (needs root): %s", strerror(errno));
            return -1;
        }
    }
    snprintf(path, sizeof path, "%s/nvidia-caps", dev);
    ck_assert_int_eq(mkdir(path, 0755), 0);
    touch(dev, "nvidia2"); /* a plain file: not a GPU */
    return 0;
}

#define NEED_FAKE_NODES()                                                              \
    do {                                                                               \
        char why_[300];                                                                \
        if (make_fake_nodes(why_, sizeof why_)) {                                      \
            tu_skip("sandbox_gpu", "%s", why_);                                        \
            return;                                                                    \
        }                                                                              \
    } while (0)

#define NEED_SANDBOX()                                                                 \
    do {                                                                               \
        char why_[512];                                                                \
        if (!repro_sandbox_available(why_, sizeof why_)) {                             \
            tu_skip("sandbox_gpu", "%s", why_);                                        \
            return;                                                                    \
        }                                                                              \
    } while (0)

/* The index of the triple OPT X Y in a's arguments, or -1. */
static int find3(const repro_argv *a, const char *opt, const char *x, const char *y)
{
    for (size_t i = 0; i + 2 < a->n; i++)
        if (!strcmp(a->v[i], opt) && !strcmp(a->v[i + 1], x) && !strcmp(a->v[i + 2], y))
            return (int)i;
    return -1;
}

static int find2(const repro_argv *a, const char *opt, const char *x)
{
    for (size_t i = 0; i + 1 < a->n; i++)
        if (!strcmp(a->v[i], opt) && !strcmp(a->v[i + 1], x))
            return (int)i;
    return -1;
}

START_TEST(test_nodes_are_found_and_dev_bound)
{
    setup_dirs();
    NEED_FAKE_NODES();
    touch(libs, "libcuda.so.1");
    touch(libs, "libnvidia-ml.so.1");
    touch(nolibs, "libz.so.1");
    const char *lib_dirs[] = {libs, nolibs, NULL};
    repro_sandbox_gpu g;
    char why[600];
    ck_assert_msg(repro_sandbox_gpu_find(dev, lib_dirs, &g, why, sizeof why) == 0, "%s", why);
    /* In order, the plain file left out. */
    static const char *const want[] = {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm",
                                       "nvidia-uvm-tools", "nvidia-caps"};
    ck_assert_int_eq(g.nnodes, 6);
    for (int i = 0; i < 6; i++)
        ck_assert_str_eq(g.nodes[i], want[i]);
    ck_assert_int_eq(g.nlibs, 1); /* the directory with driver libraries, not the other */
    char real[4096];
    ck_assert_ptr_nonnull(realpath(libs, real));
    ck_assert_str_eq(g.libs[0], real);

    const char *nodes[REPRO_GPU_NODES_MAX + 1], *lib_list[REPRO_GPU_LIBS_MAX + 1];
    repro_sandbox_gpu_lists(&g, nodes, lib_list);
    repro_argv a = {0};
    ck_assert_int_eq(repro_sandbox_args(&a, "bwrap", scratch, NULL, NULL, nodes, 1 << 20, NULL), 0);
    int ro_dev = find2(&a, "--remount-ro", "/dev"), devfs = find2(&a, "--dev", "/dev");
    ck_assert_int_ge(devfs, 0);
    for (int i = 0; i < 6; i++) {
        char src[600], dest[64];
        snprintf(src, sizeof src, "%s/%s", dev, want[i]);
        snprintf(dest, sizeof dest, "/dev/%s", want[i]);
        int at = find3(&a, "--dev-bind", src, dest);
        ck_assert_msg(at > devfs && at < ro_dev, "--dev-bind %s %s at %d (/dev %d, ro %d)", src,
                      dest, at, devfs, ro_dev);
    }
    char plain[600];
    snprintf(plain, sizeof plain, "%s/nvidia2", dev);
    ck_assert_int_lt(find3(&a, "--dev-bind", plain, "/dev/nvidia2"), 0);
    repro_argv_free(&a);
    /* The control: without nodes, no --dev-bind at all. */
    ck_assert_int_eq(repro_sandbox_args(&a, "bwrap", scratch, NULL, NULL, NULL, 1 << 20, NULL), 0);
    for (size_t i = 0; i < a.n; i++)
        ck_assert_str_ne(a.v[i], "--dev-bind");
    repro_argv_free(&a);

    char d[1000];
    repro_sandbox_gpu_describe(&g, d, sizeof d);
    ck_assert_msg(strstr(d, "GPU: /dev/nvidia0, nvidia1, nvidiactl, nvidia-uvm, "
                            "nvidia-uvm-tools, nvidia-caps bound; driver libraries ") &&
                      strstr(d, real) && strstr(d, "bound read-only"),
                  "%s", d);
}
END_TEST

/* What is missing is named; plain files of the names do not count. */
START_TEST(test_missing_nodes_are_named)
{
    setup_dirs();
    repro_sandbox_gpu g;
    char why[600];
    ck_assert_int_eq(repro_sandbox_gpu_find(dev, NULL, &g, why, sizeof why), -1);
    char want[700];
    snprintf(want, sizeof want, "%s/nvidia0 (no nvidiaN device), %s/nvidiactl, %s/nvidia-uvm "
             "missing", dev, dev, dev);
    ck_assert_msg(strstr(why, want), "%s", why);
    touch(dev, "nvidia0");
    touch(dev, "nvidiactl");
    touch(dev, "nvidia-uvm");
    ck_assert_int_eq(repro_sandbox_gpu_find(dev, NULL, &g, why, sizeof why), -1);
    ck_assert_msg(strstr(why, want), "plain files were taken for devices: %s", why);
    /* Through the sandbox: an error of the host's, before anything runs. */
    repro_sandbox_opts o;
    repro_sandbox_opts_init(&o);
    o.scratch_dir = scratch;
    o.gpu = 1;
    o.gpu_dev_dir = dev;
    char *argv[] = {"true", NULL};
    repro_sandbox_result res;
    ck_assert_int_eq(repro_sandbox_run(&o, argv, NULL, out_path, err_path, &res), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EUNSUPPORTED);
    ck_assert_msg(strstr(repro_error_message(), "cannot run true with a GPU: no NVIDIA GPU "
                                                "device nodes") &&
                      strstr(repro_error_message(), want),
                  "%s", repro_error_message());
    ck_assert_int_eq(repro_sandbox_gpu_ready(&o, why, sizeof why), 0);
    ck_assert_msg(strstr(why, want), "%s", why);
    o.gpu = 0; /* nothing asked: nothing to refuse */
    ck_assert_int_eq(repro_sandbox_gpu_ready(&o, why, sizeof why), 1);
    repro_error_clear();
}
END_TEST

/* This host's own /dev: where it has no NVIDIA nodes (the machine these
 * tests were written on), a gpu sandbox is refused naming them. */
START_TEST(test_host_without_gpu_is_refused)
{
    struct stat st;
    if (stat("/dev/nvidia0", &st) == 0 && S_ISCHR(st.st_mode)) {
        tu_skip("sandbox_gpu", "this host has /dev/nvidia0: no refusal to see");
        return;
    }
    repro_sandbox_opts o;
    repro_sandbox_opts_init(&o);
    o.gpu = 1;
    char why[600];
    ck_assert_int_eq(repro_sandbox_gpu_ready(&o, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "/dev/nvidia0 (no nvidiaN device)") && strstr(why, "missing"),
                  "%s", why);
}
END_TEST

/* A real sandbox's options with the fake nodes: gpu on, dev/ as /dev. */
static void gpu_opts(repro_sandbox_opts *o)
{
    repro_sandbox_opts_init(o);
    o->scratch_dir = scratch;
    o->wall_seconds = 60;
    o->gpu = 1;
    o->gpu_dev_dir = dev;
}

/* Runs argv in it (failing the test if it cannot start), its stdout and
 * stderr into out and err (4096 bytes each). */
static void run_read(const repro_sandbox_opts *o, char **argv, repro_sandbox_result *res,
                     char *out, char *err)
{
    ck_assert_msg(repro_sandbox_run(o, argv, NULL, out_path, err_path, res) == 0, "%s",
                  repro_error_message());
    tu_slurp(out_path, out, 4096);
    tu_slurp(err_path, err, 4096);
}

/* A real sandbox with the fake nodes: they are character devices in its
 * /dev, and nothing limits the address space (CUDA's reservations); the
 * control, the same run without gpu, has neither. */
START_TEST(test_gpu_run_sees_nodes_and_no_address_space_limit)
{
    setup_dirs();
    NEED_SANDBOX();
    NEED_FAKE_NODES();
    static const char script[] =
        "for n in nvidia0 nvidia1 nvidiactl nvidia-uvm nvidia-uvm-tools; do "
        "test -c /dev/$n || echo no-$n; done; test -d /dev/nvidia-caps || echo no-caps; "
        "test -e /dev/nvidia2 && echo plain-file; echo as=$(ulimit -v)";
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    repro_sandbox_opts o;
    gpu_opts(&o);
    repro_sandbox_result res;
    char out[4096], err[4096];
    run_read(&o, argv, &res, out, err);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, err);
    ck_assert_msg(!strcmp(out, "as=unlimited\n"), "gpu sandbox:\n%s\n%s", out, err);
    o.gpu = 0;
    run_read(&o, argv, &res, out, err);
    ck_assert_msg(strstr(out, "no-nvidia0\n") && strstr(out, "no-caps\n") &&
                      strstr(out, "as=4194304\n"),
                  "the control:\n%s", out);
}
END_TEST

/* The memory cgroup: 256 MiB touched under a 64 MiB limit is killed, and
 * named the memory limit by the cgroup's OOM kill count; the control, no
 * limit (no --max-memory), lets it through. Skipped where no memory
 * cgroup can be made here. */
START_TEST(test_gpu_memory_is_held_by_a_cgroup)
{
    setup_dirs();
    NEED_SANDBOX();
    NEED_FAKE_NODES();
    repro_pids_cgroup m;
    char why[300];
    if (repro_mem_cgroup_make(&m, NULL, 64 << 20, why, sizeof why) != 0) {
        tu_skip("sandbox_gpu", "no memory cgroup here: %s", why);
        return;
    }
    repro_pids_cgroup_remove(&m);
    static const char hog[] =
        "/usr/bin/python3 -c \"b = b'x' * (256 << 20); print(len(b))\"";
    char *argv[] = {"sh", "-c", (char *)hog, NULL};
    repro_sandbox_opts o;
    gpu_opts(&o);
    o.as_bytes = 64 << 20;
    char d[1200];
    repro_sandbox_describe(&o, d, sizeof d);
    ck_assert_msg(strstr(d, "GPU: /dev/nvidia0, nvidia1, nvidiactl") &&
                      strstr(d, "memory 64.0 MiB by cgroup (memory.") &&
                      strstr(d, "no address-space limit") && !strstr(d, "address space 64"),
                  "%s", d);
    repro_sandbox_result res;
    char out[4096], err[4096];
    run_read(&o, argv, &res, out, err);
    ck_assert_msg(!strstr(out, "268435456"), "256 MiB under a 64 MiB cgroup: %s", out);
    ck_assert_msg(res.limit_hit && !strcmp(res.limit_name, "memory") &&
                      strstr(res.what, "the memory limit (64.0 MiB by cgroup; "),
                  "%s (limit '%s'): %s", res.what, res.limit_name, err);
    o.as_bytes = UINT64_MAX; /* the control: no memory limit asked */
    repro_sandbox_describe(&o, d, sizeof d);
    ck_assert_msg(strstr(d, "memory NOT limited (no --max-memory)"), "%s", d);
    run_read(&o, argv, &res, out, err);
    ck_assert_msg(res.exited && res.code == 0 && strstr(out, "268435456"), "the control: %s: %s",
                  res.what, err);
}
END_TEST

Suite *sandbox_gpu_suite(void)
{
    Suite *s = suite_create("sandbox_gpu");
    TCase *tc = tcase_create("sandbox_gpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_nodes_are_found_and_dev_bound);
    tcase_add_test(tc, test_missing_nodes_are_named);
    tcase_add_test(tc, test_host_without_gpu_is_refused);
    tcase_add_test(tc, test_gpu_run_sees_nodes_and_no_address_space_limit);
    tcase_add_test(tc, test_gpu_memory_is_held_by_a_cgroup);
    suite_add_tcase(s, tc);
    return s;
}
