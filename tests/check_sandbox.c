/* The sandbox for a stranger's program (util/sandbox.h), tried with the
 * hostile programs a competition host receives: each is written here into
 * a temporary directory (a shell line, or a small C program compiled on
 * the host) and run through repro_sandbox_run. No network, no process left
 * behind, no write outside the scratch directory, each limit ending the
 * run and named; a make + cc build and a read of a read-only input work
 * (positive controls); and the same network and outside-write programs
 * succeed with no_sandbox (negative controls: the tests see the
 * difference). Each test skips, saying why, only when bwrap cannot make a
 * sandbox here; one hides bwrap from PATH and expects the install hint. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/child.h"
#include "util/error.h"
#include "util/sandbox.h"
#include "util/sandbox_args.h"
#include "util/sandbox_disk.h"
#include "util/sandbox_impl.h"
#include "testutil.h"
#include "tu_procs.h"
#include "tu_sandbox.h"

/* One test's directories: scratch (the program's, writable), bundle (a
 * read-only input), outside (neither: a host directory it must not touch). */
static char root[TU_TMP_LEN], scratch[TU_SB_LEN], bundle[TU_SB_LEN], outside[TU_SB_LEN],
    out_path[TU_SB_LEN], err_path[TU_SB_LEN];

static void setup_dirs(void)
{
    const tu_sb_path paths[] = {{"scratch", scratch, 1}, {"bundle", bundle, 1},
                                {"outside", outside, 1}, {"out.txt", out_path, 0},
                                {"err.txt", err_path, 0}, {NULL, NULL, 0}};
    tu_sandbox_dirs("sandbox", root, paths);
}

static const char *slurp(const char *path)
{
    static char buf[1 << 16];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Skips the test (saying why) when no sandbox can be made here. */
#define NEED_SANDBOX()                                                                 \
    do {                                                                               \
        char why_[512];                                                                \
        if (!repro_sandbox_available(why_, sizeof why_)) {                             \
            tu_skip("sandbox", "%s", why_);                                            \
            return;                                                                    \
        }                                                                              \
    } while (0)

static void opts_for(repro_sandbox_opts *o, int no_sandbox)
{
    static const char *ro[2];
    repro_sandbox_opts_init(o);
    ro[0] = bundle;
    ro[1] = NULL;
    o->scratch_dir = scratch;
    o->ro_paths = ro;
    o->wall_seconds = 60;
    o->no_sandbox = no_sandbox;
}

/* Runs `sh -c script` with the options; fails the test if it cannot start. */
static void run_sh(const repro_sandbox_opts *o, const char *script, repro_sandbox_result *res)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    int rc = repro_sandbox_run(o, argv, NULL, out_path, err_path, res);
    ck_assert_msg(rc == 0, "could not run: %s", repro_error_message());
}

/* A C program with a few hostile modes, compiled on the host into bundle/:
 *   connect ADDR PORT   a TCP connection (exit 0 when it is made)
 *   alloc MIB           allocates and touches MIB MiB (exit 0 when it can)
 *   cat FILE            prints a file (reading an input) */
static const char hostile_c[] =
    "#include <arpa/inet.h>\n#include <errno.h>\n#include <netinet/in.h>\n"
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <sys/socket.h>\n"
    "#include <unistd.h>\n"
    "int main(int argc, char **argv) {\n"
    "  if (argc == 4 && !strcmp(argv[1], \"connect\")) {\n"
    "    int s = socket(AF_INET, SOCK_STREAM, 0);\n"
    "    if (s < 0) { perror(\"socket\"); return 1; }\n"
    "    struct sockaddr_in a = {0}; a.sin_family = AF_INET;\n"
    "    a.sin_port = htons((unsigned short)atoi(argv[3]));\n"
    "    inet_pton(AF_INET, argv[2], &a.sin_addr);\n"
    "    if (connect(s, (struct sockaddr *)&a, sizeof a)) { perror(\"connect\"); return 1; }\n"
    "    puts(\"connected\"); return 0;\n"
    "  }\n"
    "  if (argc == 3 && !strcmp(argv[1], \"alloc\")) {\n"
    "    size_t n = (size_t)atol(argv[2]) << 20; char *p = malloc(n);\n"
    "    if (!p) { fprintf(stderr, \"malloc: %s\\n\", strerror(errno)); return 1; }\n"
    "    memset(p, 1, n); printf(\"allocated %s MiB\\n\", argv[2]); return p[n - 1] - 1;\n"
    "  }\n"
    "  return 2;\n"
    "}\n";

static char hostile[TU_TMP_LEN + 32];

static void build_hostile(void)
{
    char src[TU_TMP_LEN + 32];
    tu_sandbox_write(bundle, "hostile.c", hostile_c);
    snprintf(src, sizeof src, "%s/hostile.c", bundle);
    snprintf(hostile, sizeof hostile, "%s/hostile", bundle);
    char *argv[] = {"cc", "-O0", "-o", hostile, src, NULL};
    repro_child c;
    memset(&c, 0, sizeof c);
    c.argv = argv;
    c.err_path = err_path;
    repro_child_status st;
    ck_assert_msg(repro_child_run(&c, &st) == 0, "%s", repro_error_message());
    ck_assert_msg(st.how == REPRO_CHILD_EXITED && st.code == 0, "cc failed: %s", slurp(err_path));
}

START_TEST(test_available_here)
{
    char why[512];
    int ok = repro_sandbox_available(why, sizeof why);
    if (!ok) {
        tu_skip("sandbox", "%s", why);
        ck_assert_str_ne(why, "");
        return;
    }
    ck_assert_str_eq(why, "");
}
END_TEST

START_TEST(test_missing_bwrap_says_what_to_install)
{
    setup_dirs();
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", outside, 1); /* an empty directory: no bwrap */
    char why[512];
    int ok = repro_sandbox_available(why, sizeof why);
    repro_sandbox_opts o;
    opts_for(&o, 0);
    repro_sandbox_result res;
    char *argv[] = {"/bin/sh", "-c", "true", NULL};
    int rc = repro_sandbox_run(&o, argv, NULL, out_path, err_path, &res);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", repro_error_message());
    o.no_sandbox = 1; /* unsandboxed it runs: the refusal is the sandbox's */
    int plain = repro_sandbox_run(&o, argv, NULL, out_path, err_path, &res);
    setenv("PATH", path, 1);
    free(path);
    ck_assert_int_eq(ok, 0);
    ck_assert_msg(strstr(why, "apt-get install bubblewrap") && strstr(why, "not on PATH"), "%s",
                  why);
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(msg, "apt-get install bubblewrap"), "%s", msg);
    ck_assert_int_eq(plain, 0);
    ck_assert(res.exited && res.code == 0);
}
END_TEST

START_TEST(test_bwrap_that_cannot_sandbox_is_reported)
{
    setup_dirs();
    /* A bwrap that fails as it does where namespaces are not allowed. */
    tu_sandbox_write(outside, "bwrap",
               "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\n"
               "exit 1\n");
    char fake[TU_TMP_LEN + 32];
    snprintf(fake, sizeof fake, "%s/bwrap", outside);
    ck_assert_int_eq(chmod(fake, 0755), 0);
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char newpath[4096];
    snprintf(newpath, sizeof newpath, "%s:%s", outside, path);
    setenv("PATH", newpath, 1);
    char why[512];
    int ok = repro_sandbox_available(why, sizeof why);
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    char *argv[] = {"true", NULL};
    int rc = repro_sandbox_run(&o, argv, NULL, out_path, err_path, &res);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", repro_error_message());
    setenv("PATH", path, 1);
    free(path);
    ck_assert_int_eq(ok, 0);
    ck_assert_msg(strstr(why, "cannot make a sandbox here") &&
                      strstr(why, "Creating new namespace failed: Operation not permitted"),
                  "%s", why);
    ck_assert_int_eq(rc, -1); /* nothing ran: an error, not the program's exit 1 */
    ck_assert_msg(strstr(msg, "cannot run true in the sandbox: bwrap: Creating new namespace"),
                  "%s", msg);
}
END_TEST

START_TEST(test_network_is_unreachable)
{
    NEED_SANDBOX();
    setup_dirs();
    build_hostile();
    /* A listener of ours on the host's loopback: reachable from outside
     * the sandbox (the control), not from inside. */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(ls, 8), 0);
    ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
    char port[16];
    snprintf(port, sizeof port, "%d", ntohs(a.sin_port));
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    char *loop[] = {hostile, "connect", "127.0.0.1", port, NULL};
    ck_assert_int_eq(repro_sandbox_run(&o, loop, NULL, out_path, err_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 1, "%s", res.what);
    /* The sandbox's own loopback: nothing of the host listens there. */
    ck_assert_msg(strstr(slurp(err_path), "connect: Connection refused"), "%s", slurp(err_path));
    char *far[] = {hostile, "connect", "1.1.1.1", "443", NULL};
    ck_assert_int_eq(repro_sandbox_run(&o, far, NULL, out_path, err_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 1, "%s", res.what);
    ck_assert_msg(strstr(slurp(err_path), "connect: Network is unreachable"), "%s",
                  slurp(err_path));
    ck_assert_int_eq(res.limit_hit, 0);
    /* The control: the same program, unsandboxed, connects. */
    opts_for(&o, 1);
    ck_assert_int_eq(repro_sandbox_run(&o, loop, NULL, out_path, err_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, slurp(err_path));
    ck_assert_str_eq(slurp(out_path), "connected\n");
    close(ls);
}
END_TEST

/* While a sandboxed program runs: watches the host for its two sleeps,
 * then tells the program (a file in scratch) that it may exit. */
typedef struct {
    const char *marks[2];
    pid_t seen[2];
} watch;

static void *watch_host(void *arg)
{
    watch *w = arg;
    for (int i = 0; i < 2; i++)
        w->seen[i] = tu_process_appears_within("sleep", w->marks[i], 20);
    char path[TU_TMP_LEN + 32];
    snprintf(path, sizeof path, "%s/seen", scratch);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
    return NULL;
}

START_TEST(test_no_process_outlives_the_sandbox)
{
    NEED_SANDBOX();
    setup_dirs();
    char in_group[32], own_session[32], script[512];
    snprintf(in_group, sizeof in_group, "301.%ld", (long)getpid());
    snprintf(own_session, sizeof own_session, "302.%ld", (long)getpid());
    /* A grandchild left running, and one that left the process group for a
     * session of its own (a group kill cannot reach it); the program exits
     * once the test has seen both on the host. */
    snprintf(script, sizeof script,
             "sleep %s & setsid sleep %s & "
             "while [ ! -e seen ]; do sleep 0.02; done; echo left", in_group, own_session);
    watch w = {{in_group, own_session}, {0, 0}};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, watch_host, &w), 0);
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    run_sh(&o, script, &res);
    pthread_join(t, NULL);
    int gone1 = tu_process_gone_within("sleep", in_group, 3);
    int gone2 = tu_process_gone_within("sleep", own_session, 3);
    tu_kill_processes("sleep", in_group);
    tu_kill_processes("sleep", own_session);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, slurp(err_path));
    ck_assert_str_eq(slurp(out_path), "left\n");
    /* The control: the test does see such processes on the host. */
    ck_assert_msg(w.seen[0] && w.seen[1], "the sleeps were never seen running (%d, %d)",
                  (int)w.seen[0], (int)w.seen[1]);
    ck_assert_msg(gone1, "sleep %s outlived the sandbox", in_group);
    ck_assert_msg(gone2, "sleep %s (own session) outlived the sandbox", own_session);
}
END_TEST

START_TEST(test_file_size_limit_is_named)
{
    NEED_SANDBOX();
    setup_dirs();
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    o.fsize_bytes = 1 << 20;
    run_sh(&o, "exec yes > big", &res);
    ck_assert_msg(res.signal == SIGXFSZ, "%s", res.what);
    ck_assert_int_eq(res.limit_hit, 1);
    ck_assert_str_eq(res.limit_name, "file size");
    ck_assert_msg(strstr(res.what, "file size limit (1.0 MiB)"), "%s", res.what);
    char big[TU_TMP_LEN + 32];
    snprintf(big, sizeof big, "%s/big", scratch);
    struct stat st;
    ck_assert_int_eq(stat(big, &st), 0);
    ck_assert_int_le(st.st_size, 1 << 20);
    ck_assert_int_gt(st.st_size, 0);
    /* Nor can a core dump fill the disk: none may be written at all. */
    run_sh(&o, "if ulimit -c unlimited 2>/dev/null; then echo raised; fi; ulimit -Hc", &res);
    ck_assert_str_eq(slurp(out_path), "0\n");
}
END_TEST

START_TEST(test_memory_limit_is_named)
{
    NEED_SANDBOX();
    setup_dirs();
    build_hostile();
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    o.as_bytes = 256ULL << 20;
    char *small[] = {hostile, "alloc", "16", NULL};
    ck_assert_int_eq(repro_sandbox_run(&o, small, NULL, out_path, err_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 0 && !res.limit_hit, "%s", res.what);
    char *big[] = {hostile, "alloc", "1024", NULL};
    ck_assert_int_eq(repro_sandbox_run(&o, big, NULL, out_path, err_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 1, "%s", res.what);
    ck_assert_msg(strstr(slurp(err_path), "Cannot allocate memory"), "%s", slurp(err_path));
    ck_assert_str_eq(res.limit_name, "memory");
    ck_assert_msg(strstr(res.what, "memory limit (256.0 MiB)"), "%s", res.what);
}
END_TEST

/* Watches the host for `sleep MARK` (arg) for up to 10 s: non-NULL when seen. */
static void *watch_one(void *mark)
{
    return tu_process_appears_within("sleep", mark, 10) ? mark : NULL;
}

START_TEST(test_wall_time_limit_is_named)
{
    NEED_SANDBOX();
    setup_dirs();
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    o.wall_seconds = 2;
    /* A grandchild in a session of its own: killed with the sandbox at
     * the time limit too (not only when the program exits); the test
     * watches for it while the program runs (the control: it is seen). */
    char mark[32], script[128];
    snprintf(mark, sizeof mark, "303.%ld", (long)getpid());
    snprintf(script, sizeof script, "setsid sleep %s & sleep 30", mark);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, watch_one, mark), 0);
    run_sh(&o, script, &res);
    void *seen;
    pthread_join(t, &seen);
    int gone = tu_process_gone_within("sleep", mark, 3);
    tu_kill_processes("sleep", mark);
    ck_assert_msg(seen != NULL, "sleep %s was never seen running", mark);
    ck_assert_msg(gone, "sleep %s outlived the sandbox's time limit", mark);
    ck_assert_int_eq(res.timed_out, 1);
    ck_assert_str_eq(res.limit_name, "wall time");
    ck_assert_msg(strstr(res.what, "wall time limit (2 s)"), "%s", res.what);
    ck_assert_double_lt(res.wall_used_s, 15);
}
END_TEST

START_TEST(test_cpu_time_limit_is_named)
{
    NEED_SANDBOX();
    setup_dirs();
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    o.cpu_seconds = 1;
    run_sh(&o, "while :; do :; done", &res);
    ck_assert_int_eq(res.timed_out, 0);
    ck_assert_msg(res.signal == SIGXCPU, "%s", res.what);
    ck_assert_str_eq(res.limit_name, "cpu time");
    ck_assert_msg(strstr(res.what, "cpu time limit (1 s per process)"), "%s", res.what);
    /* A run that is killed otherwise, with little CPU, is not called a
     * CPU-time kill. */
    run_sh(&o, "kill -9 $$", &res);
    ck_assert_int_eq(res.signal, SIGKILL);
    ck_assert_int_eq(res.limit_hit, 0);
}
END_TEST

/* Tries each target in turn, printing "wrote T" for each that worked. */
static void write_everywhere(char *script, size_t len, const char *targets)
{
    snprintf(script, len,
             "for t in %s; do if (echo x > \"$t\") 2>/dev/null; then echo \"wrote $t\"; fi; done; "
             "echo ok > inside",
             targets);
}

START_TEST(test_writes_outside_scratch_fail)
{
    NEED_SANDBOX();
    setup_dirs();
    tu_sandbox_write(bundle, "claims.txt", "original\n");
    const char *home = getenv("HOME");
    char probe_home[512], probe_work[128], probe_etc[128], probe_root[128], targets[2048],
        script[4096], inside[TU_TMP_LEN + 32], claims[TU_TMP_LEN + 32];
    snprintf(probe_home, sizeof probe_home, "%s/repro-sandbox-probe-%ld",
             home && home[0] ? home : "/root", (long)getpid());
    snprintf(probe_work, sizeof probe_work, "/work/repro-sandbox-probe-%ld", (long)getpid());
    snprintf(probe_etc, sizeof probe_etc, "/etc/repro-sandbox-probe-%ld", (long)getpid());
    snprintf(probe_root, sizeof probe_root, "/repro-sandbox-probe-%ld", (long)getpid());
    snprintf(targets, sizeof targets,
             "%s/claims.txt %s/new %s/new %s %s %s %s /usr/bin/probe /dev/probe",
             bundle, bundle, outside, probe_home, probe_work, probe_etc, probe_root);
    write_everywhere(script, sizeof script, targets);
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    run_sh(&o, script, &res);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, slurp(err_path));
    ck_assert_msg(!strstr(slurp(out_path), "wrote"), "%s", slurp(out_path));
    snprintf(inside, sizeof inside, "%s/inside", scratch);
    ck_assert_str_eq(slurp(inside), "ok\n"); /* the scratch dir is writable */
    snprintf(claims, sizeof claims, "%s/claims.txt", bundle);
    ck_assert_str_eq(slurp(claims), "original\n");
    const char *never[] = {probe_home,       probe_work,   probe_etc, probe_root,
                           "/usr/bin/probe", "/dev/probe", NULL};
    for (int i = 0; never[i]; i++) {
        ck_assert_msg(!exists(never[i]), "%s was written on the host", never[i]);
    }
    /* The host's kernel settings: root inside writes back the value that
     * is there (harmless should it get through) and must be refused. */
    run_sh(&o,
           "v=$(cat /proc/sys/kernel/core_pattern) && "
           "if (printf '%s\\n' \"$v\" > /proc/sys/kernel/core_pattern) 2>/dev/null; "
           "then echo wrote; fi; echo done",
           &res);
    ck_assert_str_eq(slurp(out_path), "done\n");
    /* No capabilities, none to get back: the bounding set is empty and a
     * user namespace of its own (where it would hold them) is refused. */
    run_sh(&o,
           "grep '^CapBnd:' /proc/self/status; "
           "if unshare -U true 2>/dev/null; then echo nested; fi",
           &res);
    ck_assert_str_eq(slurp(out_path), "CapBnd:\t0000000000000000\n");
    char outside_new[TU_TMP_LEN + 32], bundle_new[TU_TMP_LEN + 32];
    snprintf(outside_new, sizeof outside_new, "%s/new", outside);
    snprintf(bundle_new, sizeof bundle_new, "%s/new", bundle);
    ck_assert(!exists(outside_new) && !exists(bundle_new));
    /* The control: unsandboxed, the write to a host directory outside
     * scratch (a harmless temporary one) works, and is seen. */
    opts_for(&o, 1);
    snprintf(targets, sizeof targets, "%s", outside_new);
    write_everywhere(script, sizeof script, targets);
    run_sh(&o, script, &res);
    ck_assert_msg(strstr(slurp(out_path), "wrote"), "%s", slurp(out_path));
    ck_assert(exists(outside_new));
}
END_TEST

START_TEST(test_scratch_inside_a_read_only_path_stays_writable)
{
    NEED_SANDBOX();
    setup_dirs();
    /* The whole test directory read-only, scratch inside it writable. */
    repro_sandbox_opts o;
    repro_sandbox_result res;
    const char *ro[] = {root, NULL};
    opts_for(&o, 0);
    o.ro_paths = ro;
    char script[512];
    snprintf(script, sizeof script,
             "echo ok > inside && if (echo x > %s/new) 2>/dev/null; then echo wrote; fi", outside);
    run_sh(&o, script, &res);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, slurp(err_path));
    ck_assert_str_eq(slurp(out_path), "");
    char path[TU_TMP_LEN + 32];
    snprintf(path, sizeof path, "%s/inside", scratch);
    ck_assert_str_eq(slurp(path), "ok\n");
    snprintf(path, sizeof path, "%s/new", outside);
    ck_assert(!exists(path));
}
END_TEST

START_TEST(test_make_and_cc_build_inside)
{
    NEED_SANDBOX();
    setup_dirs();
    tu_sandbox_write(bundle, "data.txt", "input 42\n");
    tu_sandbox_write(scratch, "hello.c",
               "#include <stdio.h>\nint main(int argc, char **argv) {\n"
               "  FILE *f = fopen(argv[1], \"r\"); char line[64];\n"
               "  if (!f || !fgets(line, sizeof line, f)) return 1;\n"
               "  printf(\"read %s\", line); return 0;\n}\n");
    tu_sandbox_write(scratch, "Makefile", "hello: hello.c\n\tcc -O2 -o $@ hello.c\n");
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    char *make[] = {"make", NULL};
    ck_assert_int_eq(repro_sandbox_run(&o, make, NULL, out_path, out_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, slurp(out_path));
    char data[TU_TMP_LEN + 32];
    snprintf(data, sizeof data, "%s/data.txt", bundle);
    char *hello[] = {"./hello", data, NULL};
    ck_assert_int_eq(repro_sandbox_run(&o, hello, NULL, out_path, err_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, slurp(err_path));
    ck_assert_str_eq(slurp(out_path), "read input 42\n");
}
END_TEST

START_TEST(test_process_count_limit)
{
    NEED_SANDBOX();
    setup_dirs();
    repro_sandbox_opts o;
    repro_sandbox_result res;
    char desc[1024];
    opts_for(&o, 0);
    o.max_procs = 16;
    repro_sandbox_describe(&o, desc, sizeof desc);
    const char *script = "i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); done; echo all";
    run_sh(&o, script, &res);
    if (strstr(desc, "processes NOT limited")) { /* no pids cgroup here: said, not hidden */
        tu_skip("sandbox", "the process count limit: no pids cgroup here (%s)", desc);
        ck_assert(res.exited && res.code == 0);
        return;
    }
    ck_assert_msg(strstr(desc, "processes+threads 16 (cgroup pids.max)"), "%s", desc);
    ck_assert_msg(!(res.exited && res.code == 0), "40 processes ran under a limit of 16");
    ck_assert_str_eq(res.limit_name, "process count");
    ck_assert_msg(strstr(res.what, "forks refused"), "%s", res.what);
    /* Under the default limit the same program runs. */
    o.max_procs = 0;
    run_sh(&o, script, &res);
    ck_assert_msg(res.exited && res.code == 0 && !res.limit_hit, "%s", res.what);
    ck_assert_str_eq(slurp(out_path), "all\n");
}
END_TEST

START_TEST(test_environment_is_only_what_was_set)
{
    NEED_SANDBOX();
    setup_dirs();
    setenv("REPRO_SANDBOX_SECRET", "host-only", 1);
    repro_sandbox_opts o;
    repro_sandbox_result res;
    const char *env[] = {"FOO=bar baz", NULL};
    char *argv[] = {"env", NULL};
    char home[4200];
    char real[4096];
    ck_assert_ptr_nonnull(realpath(scratch, real));
    snprintf(home, sizeof home, "HOME=%s\n", real);
    for (int plain = 0; plain < 2; plain++) {
        opts_for(&o, plain);
        ck_assert_int_eq(repro_sandbox_run(&o, argv, env, out_path, err_path, &res), 0);
        const char *out = slurp(out_path);
        ck_assert_msg(strstr(out, "FOO=bar baz\n") && strstr(out, home) &&
                          strstr(out, "TMPDIR=/tmp\n") && strstr(out, "PATH=/usr/local/bin"),
                      "%s", out);
        ck_assert_msg(!strstr(out, "REPRO_SANDBOX_SECRET"), "%s", out);
    }
    unsetenv("REPRO_SANDBOX_SECRET");
}
END_TEST

/* python_client: the package alone, read-only, at
 * REPRO_SANDBOX_CLIENT_DIR/repro (nothing else of its host directory), so
 * that PYTHONPATH there finds it; without it the same program cannot see
 * the package (the negative control). A stand-in package (a module that
 * says where it is), not the real client. */
START_TEST(test_python_client_is_bound_read_only)
{
    NEED_SANDBOX();
    if (access("/usr/bin/python3", X_OK) != 0) {
        tu_skip("sandbox", "%s: no /usr/bin/python3", __func__);
        return;
    }
    setup_dirs();
    char pkg[TU_TMP_LEN + 32];
    snprintf(pkg, sizeof pkg, "%s/repro", outside);
    ck_assert_int_eq(mkdir(pkg, 0755), 0);
    tu_sandbox_write(pkg, "__init__.py", "WHERE = __file__\n");
    tu_sandbox_write(outside, "neighbour.py", "");
    const char *env[] = {"PYTHONPATH=" REPRO_SANDBOX_CLIENT_DIR, NULL};
    char *argv[] = {"/usr/bin/python3", "-c",
                    "import repro, os\n"
                    "print(repro.WHERE, sorted(os.listdir('" REPRO_SANDBOX_CLIENT_DIR "')))\n"
                    "try:\n    open(os.path.join(os.path.dirname(repro.WHERE), 'x'), 'w')\n"
                    "except OSError as e:\n    print('read-only', e.errno)\n",
                    NULL};
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    o.python_client = outside;
    ck_assert_int_eq(repro_sandbox_run(&o, argv, env, out_path, err_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, slurp(err_path));
    ck_assert_str_eq(slurp(out_path), REPRO_SANDBOX_CLIENT_DIR "/repro/__init__.py ['repro']\n"
                                      "read-only 30\n");
    o.python_client = NULL;
    ck_assert_int_eq(repro_sandbox_run(&o, argv, env, out_path, err_path, &res), 0);
    ck_assert_msg(res.exited && res.code == 1, "%s", res.what);
    ck_assert_ptr_nonnull(strstr(slurp(err_path), "No module named 'repro'"));
}
END_TEST

/* Every environ and cmdline under the sandbox's /proc (each process's,
 * each thread's), each after a line "@PATH", then the program's own env. */
static const char proc_dump[] =
    "for p in /proc/[0-9]* /proc/[0-9]*/task/[0-9]*; do for f in environ cmdline; do "
    "echo \"@$p/$f\"; tr '\\0' '\\n' < \"$p/$f\"; echo; done; done 2>/dev/null; echo @env; env";

/* bwrap is pid 1 of the sandbox, and /proc/1/environ there is what bwrap
 * was started with (issue 48): a marker variable in the verifier's
 * environment must be nowhere the program can read. The control runs the
 * same bwrap command line started the way it was before (inheriting our
 * environment) and must find the marker in /proc/1/environ, so the dump
 * does read pid 1's environment and would see a leak. */
START_TEST(test_host_environment_is_nowhere_in_proc)
{
    NEED_SANDBOX();
    setup_dirs();
    char marker[64];
    snprintf(marker, sizeof marker, "host-secret-%ld", (long)getpid());
    ck_assert_int_eq(setenv("REPRO_TEST_SECRET", marker, 1), 0);
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    run_sh(&o, proc_dump, &res);
    ck_assert_msg(res.exited && res.code == 0, "%s: %s", res.what, slurp(err_path));
    const char *out = slurp(out_path);
    ck_assert_msg(strstr(out, "@/proc/1/environ\nPATH=/usr/local/bin:/usr/bin:/bin\n"),
                  "pid 1's environment was not read (or is not the program's):\n%.2000s", out);
    ck_assert_msg(strstr(out, "@/proc/1/task/1/environ\n"), "%.2000s", out);
    ck_assert_msg(!strstr(out, marker), "the host's REPRO_TEST_SECRET is readable in the "
                                        "sandbox:\n%.4000s", out);
    ck_assert_msg(!strstr(out, "REPRO_TEST_SECRET"), "%.4000s", out);
    /* The control: bwrap started with our environment shows it as pid 1. */
    char bwrap[4096], real[4096];
    ck_assert(repro_sandbox_find_bwrap(bwrap, sizeof bwrap));
    ck_assert_ptr_nonnull(realpath(scratch, real));
    repro_argv a = {0};
    ck_assert_int_eq(repro_sandbox_args(&a, bwrap, real, NULL, NULL, NULL, 1 << 20, NULL), 0);
    const char *tail[] = {"sh", "-c", proc_dump, NULL};
    for (int i = 0; tail[i]; i++)
        repro_argv_add(&a, tail[i]);
    ck_assert(!a.failed);
    repro_child c;
    memset(&c, 0, sizeof c);
    c.argv = a.v;
    c.out_path = out_path;
    c.timeout_s = 60;
    repro_child_status st;
    ck_assert_int_eq(repro_child_run(&c, &st), 0);
    repro_argv_free(&a);
    out = slurp(out_path);
    const char *pid1 = strstr(out, "@/proc/1/environ\n");
    const char *leak = strstr(out, marker);
    ck_assert_msg(pid1 && leak && leak > pid1, "the control did not see the marker in pid 1's "
                                               "environment:\n%.2000s", out);
    /* ...but not in the program's own environment (bwrap clears that). */
    ck_assert_ptr_null(strstr(strstr(out, "@env\n"), marker));
    unsetenv("REPRO_TEST_SECRET");
}
END_TEST

/* The total-disk cap (sandbox_disk.h): eight files of 512 KiB, each
 * under a 1 MiB file-size limit, fill a scratch directory capped at
 * 2 MiB, and the run is named as stopped by the disk limit; the control,
 * the same writes in an uncapped scratch directory, all succeed (the
 * per-file limit alone lets 4 MiB through). Skipped, saying why, where
 * no tmpfs can be mounted (not root). */
START_TEST(test_total_disk_cap)
{
    NEED_SANDBOX();
    setup_dirs();
    static const char writes[] =
        "for i in 1 2 3 4 5 6 7 8; do head -c 524288 /dev/zero > f$i || exit 1; done; echo all";
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    o.fsize_bytes = 1 << 20;
    o.disk_bytes = 2 << 20;
    run_sh(&o, writes, &res);
    ck_assert_msg(res.exited && res.code == 0 && !res.limit_hit, "the control: %s: %s",
                  res.what, slurp(err_path));
    ck_assert_str_eq(slurp(out_path), "all\n");
    char why[200];
    char capped[TU_TMP_LEN + 16];
    snprintf(capped, sizeof capped, "%s/capped", root);
    ck_assert_int_eq(mkdir(capped, 0700), 0);
    if (repro_sandbox_disk_cap(capped, o.disk_bytes, why, sizeof why) != 0) {
        tu_skip("sandbox", "%s: %s", __func__, why);
        return;
    }
    o.scratch_dir = capped;
    o.disk_capped = 1;
    run_sh(&o, writes, &res);
    char d[1024];
    repro_sandbox_describe(&o, d, sizeof d);
    repro_sandbox_disk_release(capped);
    ck_assert_msg(!strstr(slurp(out_path), "all"), "wrote 4 MiB into a 2 MiB scratch");
    ck_assert_msg(res.limit_hit && !strcmp(res.limit_name, "disk"), "%s (limit '%s'): %s",
                  res.what, res.limit_name, slurp(err_path));
    ck_assert_msg(strstr(res.what, "the disk limit (2.0 MiB)"), "%s", res.what);
    ck_assert_msg(strstr(d, "scratch 2.0 MiB in all (tmpfs)"), "%s", d);
}
END_TEST

START_TEST(test_what_cannot_start_is_an_error)
{
    NEED_SANDBOX();
    setup_dirs();
    repro_sandbox_opts o;
    repro_sandbox_result res;
    opts_for(&o, 0);
    char *missing[] = {"no-such-program-here", NULL};
    ck_assert_int_eq(repro_sandbox_run(&o, missing, NULL, out_path, err_path, &res), -1);
    ck_assert_msg(strstr(repro_error_message(), "no-such-program-here"), "%s",
                  repro_error_message());
    const char *bad_env[] = {"NOEQUALS", NULL};
    char *argv[] = {"true", NULL};
    ck_assert_int_eq(repro_sandbox_run(&o, argv, bad_env, out_path, err_path, &res), -1);
    o.scratch_dir = NULL;
    ck_assert_int_eq(repro_sandbox_run(&o, argv, NULL, out_path, err_path, &res), -1);
    /* A program's own failure is a result, not an error. */
    opts_for(&o, 0);
    run_sh(&o, "echo failing >&2; exit 1", &res);
    ck_assert(res.exited && res.code == 1 && !res.limit_hit);
}
END_TEST

START_TEST(test_describe_states_the_limits)
{
    repro_sandbox_opts o;
    char d[1024];
    repro_sandbox_opts_init(&o);
    ck_assert_uint_eq(o.as_bytes, REPRO_SANDBOX_DEFAULT_AS);
    ck_assert_uint_eq(o.max_procs, REPRO_SANDBOX_DEFAULT_PROCS);
    o.scratch_dir = "/s";
    repro_sandbox_describe(&o, d, sizeof d);
    ck_assert_msg(strstr(d, "bubblewrap: no network") && strstr(d, "address space 4.0 GiB") &&
                      strstr(d, "cpu 3600 s per process") && strstr(d, "file size 1.0 GiB") &&
                      strstr(d, "wall 3600 s") && strstr(d, "private /tmp and /dev/shm 1.0 GiB each") &&
                      strstr(d, "scratch /s writable") &&
                      strstr(d, "scratch total size NOT limited"),
                  "%s", d);
    ck_assert_msg(strstr(d, "processes+threads 512") || strstr(d, "processes NOT limited"),
                  "%s", d);
    memset(&o, 0, sizeof o); /* zeros read as the defaults */
    o.as_bytes = 256ULL << 20;
    o.no_sandbox = 1;
    repro_sandbox_describe(&o, d, sizeof d);
    ck_assert_msg(strstr(d, "NO SANDBOX (--no-sandbox)") && strstr(d, "address space 256.0 MiB") &&
                      strstr(d, "cpu 3600 s"),
                  "%s", d);
}
END_TEST

Suite *sandbox_suite(void)
{
    Suite *s = suite_create("sandbox");
    TCase *tc = tcase_create("sandbox");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_available_here);
    tcase_add_test(tc, test_missing_bwrap_says_what_to_install);
    tcase_add_test(tc, test_bwrap_that_cannot_sandbox_is_reported);
    tcase_add_test(tc, test_network_is_unreachable);
    tcase_add_test(tc, test_no_process_outlives_the_sandbox);
    tcase_add_test(tc, test_host_environment_is_nowhere_in_proc);
    tcase_add_test(tc, test_total_disk_cap);
    tcase_add_test(tc, test_file_size_limit_is_named);
    tcase_add_test(tc, test_memory_limit_is_named);
    tcase_add_test(tc, test_wall_time_limit_is_named);
    tcase_add_test(tc, test_cpu_time_limit_is_named);
    tcase_add_test(tc, test_writes_outside_scratch_fail);
    tcase_add_test(tc, test_scratch_inside_a_read_only_path_stays_writable);
    tcase_add_test(tc, test_make_and_cc_build_inside);
    tcase_add_test(tc, test_process_count_limit);
    tcase_add_test(tc, test_environment_is_only_what_was_set);
    tcase_add_test(tc, test_python_client_is_bound_read_only);
    tcase_add_test(tc, test_what_cannot_start_is_an_error);
    tcase_add_test(tc, test_describe_states_the_limits);
    suite_add_tcase(s, tc);
    return s;
}
