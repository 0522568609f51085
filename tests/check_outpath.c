/* util/outpath.h: one rule for every user-named output path. A new path or
 * a regular file is replaced whole (no temporary left); a symlink stays a
 * symlink and its target is written (also a dangling one, into an existing
 * directory); a FIFO and a character device are written in place and stay
 * what they are; a directory, a socket, a block device, a symlink into a
 * missing directory or a loop are refused, naming the path. The device
 * nodes are scratch twins made with mknod in a temporary directory (of
 * /dev/null, /dev/full and a loop device), never the system's. End to
 * end: `repro check --junit` through a symlink, into a FIFO and into a
 * character device (all three replaced by regular files on main). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/error.h"
#include "util/outpath.h"
#include "testutil.h"
#include "tu_procs.h"

static char dir[TU_TMP_LEN];
static char p_[8][TU_TMP_LEN + 64];
static int np_;

static void mk_dir(void)
{
    tu_tmp_template(dir, sizeof dir, "outpath");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    np_ = 0;
}

/* dir/name, in a ring of buffers. */
static const char *at(const char *name)
{
    char *p = p_[np_++ % 8];
    snprintf(p, sizeof p_[0], "%s/%s", dir, name);
    return p;
}

static const char *slurp(const char *path)
{
    static char buf[4096];
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static mode_t kind(const char *path)
{
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    return st.st_mode & S_IFMT;
}

/* Only the names given are in dir: no temporary file is left behind. */
static int entries(void)
{
    char cmd[TU_TMP_LEN + 32], out[32];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(out, sizeof out, p));
    pclose(p);
    return atoi(out);
}

static void write_ok(const char *path, const char *text)
{
    ck_assert_msg(repro_outfile_write(path, "report", text, strlen(text)) == 0, "%s",
                  repro_error_message());
}

static void write_refused(const char *path, const char *why)
{
    ck_assert_int_eq(repro_outfile_write(path, "report", "x", 1), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EIO);
    ck_assert_msg(strstr(repro_error_message(), path) && strstr(repro_error_message(), why),
                  "%s", repro_error_message());
}

START_TEST(test_new_and_regular_files_are_replaced)
{
    mk_dir();
    write_ok(at("a.xml"), "one\n");
    ck_assert_str_eq(slurp(at("a.xml")), "one\n");
    ck_assert_int_eq(chmod(at("a.xml"), 0640), 0);
    write_ok(at("a.xml"), "two\n");
    ck_assert_str_eq(slurp(at("a.xml")), "two\n");
    struct stat st;
    ck_assert_int_eq(stat(at("a.xml"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640); /* the replaced file's permissions */
    ck_assert_int_eq(entries(), 1);
}
END_TEST

START_TEST(test_symlinks_are_written_through)
{
    mk_dir();
    write_ok(at("real.xml"), "old\n");
    ck_assert_int_eq(symlink("real.xml", at("link")), 0);
    ck_assert_int_eq(symlink("link", at("link2")), 0); /* a chain */
    write_ok(at("link2"), "new\n");
    ck_assert_int_eq(kind(at("link")), S_IFLNK);
    ck_assert_int_eq(kind(at("link2")), S_IFLNK);
    ck_assert_str_eq(slurp(at("real.xml")), "new\n");
    /* A dangling link into an existing directory creates its target. */
    ck_assert_int_eq(mkdir(at("sub"), 0755), 0);
    ck_assert_int_eq(symlink("sub/made.xml", at("dangling")), 0);
    write_ok(at("dangling"), "made\n");
    ck_assert_int_eq(kind(at("dangling")), S_IFLNK);
    ck_assert_str_eq(slurp(at("sub/made.xml")), "made\n");
    ck_assert_int_eq(entries(), 5);
}
END_TEST

START_TEST(test_fifo_is_written_in_place)
{
    mk_dir();
    ck_assert_int_eq(mkfifo(at("fifo"), 0644), 0);
    /* A reader first (non-blocking: no writer yet), so the write cannot block. */
    int rd = open(at("fifo"), O_RDONLY | O_NONBLOCK);
    ck_assert_int_ge(rd, 0);
    write_ok(at("fifo"), "through the pipe\n");
    char buf[64];
    ssize_t n = read(rd, buf, sizeof buf - 1);
    close(rd);
    ck_assert_int_eq(n, 17);
    buf[n] = '\0';
    ck_assert_str_eq(buf, "through the pipe\n");
    ck_assert_int_eq(kind(at("fifo")), S_IFIFO);
    ck_assert_int_eq(entries(), 1);
}
END_TEST

START_TEST(test_character_devices_are_written_in_place)
{
    mk_dir();
    ck_assert_int_eq(mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)), 0); /* /dev/null's twin */
    ck_assert_int_eq(mknod(at("full"), S_IFCHR | 0666, makedev(1, 7)), 0); /* /dev/full's */
    ck_assert_int_eq(symlink("null", at("to-null")), 0);
    write_ok(at("null"), "gone\n");
    write_ok(at("to-null"), "gone\n");
    ck_assert_int_eq(kind(at("null")), S_IFCHR);
    ck_assert_int_eq(kind(at("to-null")), S_IFLNK);
    /* A device that refuses the write: an error naming the path, the node kept. */
    ck_assert_int_eq(repro_outfile_write(at("full"), "report", "x", 1), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EIO);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), at("full")));
    ck_assert_ptr_nonnull(strstr(repro_error_message(), strerror(ENOSPC)));
    ck_assert_int_eq(kind(at("full")), S_IFCHR);
    ck_assert_int_eq(entries(), 3);
}
END_TEST

START_TEST(test_anything_else_is_refused)
{
    mk_dir();
    ck_assert_int_eq(mkdir(at("d"), 0755), 0);
    write_refused(at("d"), "a directory");
    ck_assert_int_eq(symlink("d", at("to-dir")), 0);
    write_refused(at("to-dir"), "a directory");
    ck_assert_int_eq(mknod(at("blk"), S_IFBLK | 0600, makedev(7, 0)), 0); /* a loop device's twin */
    write_refused(at("blk"), "a block device");
    ck_assert_int_eq(kind(at("blk")), S_IFBLK);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", at("sock"));
    ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    write_refused(at("sock"), "a socket");
    close(s);
    ck_assert_int_eq(symlink("missing/x.xml", at("into-missing")), 0);
    write_refused(at("into-missing"), "does not exist");
    ck_assert_int_eq(symlink("loop-b", at("loop-a")), 0);
    ck_assert_int_eq(symlink("loop-a", at("loop-b")), 0);
    ck_assert_int_eq(repro_outfile_write(at("loop-a"), "report", "x", 1), -1);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), at("loop-a")));
    /* Nothing was created or replaced. */
    ck_assert_int_eq(kind(at("d")), S_IFDIR);
    ck_assert_int_eq(kind(at("sock")), S_IFSOCK);
    ck_assert_int_eq(entries(), 7);
}
END_TEST

/* /dev/fd/N and /proc/self/fd/N name our own open file: written through
 * it, after what it already holds (a shell's `> log`), never replaced. */
START_TEST(test_our_own_descriptors_are_written_through)
{
    mk_dir();
    int fd = open(at("log"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "before\n", 7), 7);
    struct stat a, b;
    ck_assert_int_eq(fstat(fd, &a), 0);
    char name[64];
    snprintf(name, sizeof name, "/dev/fd/%d", fd);
    write_ok(name, "plot\n");
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    write_ok(name, "again\n");
    ck_assert_int_eq(write(fd, "after\n", 6), 6);
    close(fd);
    ck_assert_str_eq(slurp(at("log")), "before\nplot\nagain\nafter\n");
    ck_assert_int_eq(stat(at("log"), &b), 0);
    ck_assert(a.st_ino == b.st_ino);
    ck_assert_int_eq(entries(), 1);
}
END_TEST

/* Abort leaves the old file and no temporary. */
START_TEST(test_abort_keeps_the_old_file)
{
    mk_dir();
    write_ok(at("keep"), "old\n");
    repro_outfile o;
    ck_assert_int_eq(repro_outfile_open(&o, at("keep"), "report"), 0);
    fputs("half", o.f);
    repro_outfile_abort(&o);
    ck_assert_str_eq(slurp(at("keep")), "old\n");
    ck_assert_int_eq(entries(), 1);
}
END_TEST

/* `repro check --junit PATH` (a program that fails: the report is still
 * written) for a symlink, a FIFO and a character device. */
static int check_junit(const char *path)
{
    const char *bin = tu_repro_bin();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' check --no-golden --junit '%s' -- false "
                              ">/dev/null 2>&1 </dev/null",
             dir, bin, path);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(test_check_junit_keeps_links_fifos_and_devices)
{
    mk_dir();
    write_ok(at("real.xml"), "old\n");
    ck_assert_int_eq(symlink("real.xml", at("link.xml")), 0);
    ck_assert_int_eq(check_junit("link.xml"), 3);
    ck_assert_int_eq(kind(at("link.xml")), S_IFLNK);
    ck_assert_ptr_nonnull(strstr(slurp(at("real.xml")), "<testsuites>"));

    ck_assert_int_eq(mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)), 0);
    ck_assert_int_eq(check_junit("null"), 3);
    ck_assert_int_eq(kind(at("null")), S_IFCHR);

    ck_assert_int_eq(mkfifo(at("fifo"), 0644), 0);
    int rd = open(at("fifo"), O_RDONLY | O_NONBLOCK);
    ck_assert_int_ge(rd, 0);
    ck_assert_int_eq(check_junit("fifo"), 3);
    char buf[4096];
    ssize_t n = read(rd, buf, sizeof buf - 1);
    close(rd);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    ck_assert_ptr_nonnull(strstr(buf, "<testsuites>"));
    ck_assert_int_eq(kind(at("fifo")), S_IFIFO);
}
END_TEST

/* The exclusive form (a private key): created with the mode asked, never
 * over a file, also one that appears between open and commit; through a
 * dangling symlink, into a device; a directory refused as by the rule. */
START_TEST(test_open_new_never_replaces)
{
    mk_dir();
    repro_outfile o;
    ck_assert_int_eq(repro_outfile_open_new(&o, at("k.pem"), "key", 0600), 0);
    fputs("secret\n", o.f);
    ck_assert_int_eq(repro_outfile_commit(&o), 0);
    struct stat st;
    ck_assert_int_eq(stat(at("k.pem"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_str_eq(slurp(at("k.pem")), "secret\n");
    ck_assert_int_eq(entries(), 1); /* no temporary left */

    ck_assert_int_eq(repro_outfile_open_new(&o, at("k.pem"), "key", 0600), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_msg(strstr(repro_error_message(), "File exists"), "%s", repro_error_message());
    ck_assert_int_eq(symlink("k.pem", at("link.pem")), 0); /* also through a link */
    ck_assert_int_eq(repro_outfile_open_new(&o, at("link.pem"), "key", 0600), -1);
    ck_assert_str_eq(slurp(at("k.pem")), "secret\n");

    /* A file that appears after the open is not replaced at commit. */
    ck_assert_int_eq(repro_outfile_open_new(&o, at("late.pem"), "key", 0600), 0);
    fputs("ours\n", o.f);
    write_ok(at("late.pem"), "theirs\n");
    ck_assert_int_eq(repro_outfile_commit(&o), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_str_eq(slurp(at("late.pem")), "theirs\n");

    ck_assert_int_eq(mkdir(at("sub"), 0755), 0);
    ck_assert_int_eq(symlink("sub/made.pem", at("dangling")), 0);
    ck_assert_int_eq(repro_outfile_open_new(&o, at("dangling"), "key", 0600), 0);
    fputs("made\n", o.f);
    ck_assert_int_eq(repro_outfile_commit(&o), 0);
    ck_assert_int_eq(kind(at("dangling")), S_IFLNK);
    ck_assert_str_eq(slurp(at("sub/made.pem")), "made\n");

    ck_assert_int_eq(mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)), 0);
    ck_assert_int_eq(repro_outfile_open_new(&o, at("null"), "key", 0600), 0);
    fputs("gone\n", o.f);
    ck_assert_int_eq(repro_outfile_commit(&o), 0);
    ck_assert_int_eq(kind(at("null")), S_IFCHR);

    ck_assert_int_eq(repro_outfile_open_new(&o, at("sub"), "key", 0600), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EIO);
    ck_assert_msg(strstr(repro_error_message(), "it is a directory"), "%s",
                  repro_error_message());
    ck_assert_int_eq(entries(), 6); /* k.pem link.pem late.pem sub dangling null: no temp */
}
END_TEST

/* `repro CMD` in dir; its stderr into err. The exit status. */
static int repro_in_dir(const char *args, char *err, size_t len)
{
    char cmd[2048], errp[TU_TMP_LEN];
    tu_tmp_template(errp, sizeof errp, "stderr"); /* beside dir, not in it */
    int fd = mkstemp(errp);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >/dev/null 2>'%s' </dev/null", dir,
             tu_repro_bin(), args, errp);
    int st = system(cmd);
    tu_slurp(errp, err, len);
    unlink(errp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `repro keygen -o`: through a dangling symlink (the key at its target,
 * 0600, the link kept), never over a key reached through a link, a
 * directory refused naming it (exit 3). */
START_TEST(test_keygen_follows_the_rule)
{
    mk_dir();
    char err[4096];
    ck_assert_int_eq(mkdir(at("keys"), 0700), 0);
    ck_assert_int_eq(symlink("keys/host.pem", at("host.pem")), 0);
    ck_assert_msg(repro_in_dir("keygen -o host.pem", err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(kind(at("host.pem")), S_IFLNK);
    struct stat st;
    ck_assert_int_eq(stat(at("keys/host.pem"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_ptr_nonnull(strstr(slurp(at("keys/host.pem")), "PRIVATE KEY"));
    ck_assert_ptr_nonnull(strstr(slurp(at("host.pem.pub")), "PUBLIC KEY"));

    /* again: the key behind the link is there, and stays as it is */
    char before[4096];
    snprintf(before, sizeof before, "%s", slurp(at("keys/host.pem")));
    ck_assert_int_eq(repro_in_dir("keygen -o host.pem", err, sizeof err), 2);
    ck_assert_msg(strstr(err, "File exists"), "%s", err);
    ck_assert_str_eq(slurp(at("keys/host.pem")), before);

    ck_assert_int_eq(repro_in_dir("keygen -o keys", err, sizeof err), 3);
    ck_assert_msg(strstr(err, "keys: cannot write private key: it is a directory"), "%s", err);
    ck_assert_int_eq(kind(at("keys")), S_IFDIR);
    ck_assert_int_eq(entries(), 3); /* keys, host.pem, host.pem.pub: no temporary */
}
END_TEST

/* `repro run --dump`: a dump file's path follows the rule too: a symlink
 * at it is written through and stays a link; a directory in its place is
 * refused, naming it (exit 3). */
START_TEST(test_dump_follows_the_rule)
{
    mk_dir();
    char err[8192];
    const char *run = "run '%s/experiments/mlp.ini' --steps 1 --dump 1 --dump-only "
                      "param.fc3.bias -q -o %s/t.jsonl";
    char cwd[1024], args[2048];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(mkdir(at("a"), 0755), 0);
    ck_assert_int_eq(mkdir(at("a/dump"), 0755), 0);
    ck_assert_int_eq(mkdir(at("a/dump/step-000001"), 0755), 0);
    ck_assert_int_eq(symlink("../../kept.npy", at("a/dump/step-000001/param.fc3.bias.npy")), 0);
    snprintf(args, sizeof args, run, cwd, "a");
    ck_assert_msg(repro_in_dir(args, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(kind(at("a/dump/step-000001/param.fc3.bias.npy")), S_IFLNK);
    ck_assert_int_eq(memcmp(slurp(at("a/kept.npy")), "\x93NUMPY", 6), 0);

    ck_assert_int_eq(mkdir(at("b"), 0755), 0);
    ck_assert_int_eq(mkdir(at("b/dump"), 0755), 0);
    ck_assert_int_eq(mkdir(at("b/dump/step-000001"), 0755), 0);
    ck_assert_int_eq(mkdir(at("b/dump/step-000001/param.fc3.bias.npy"), 0755), 0);
    snprintf(args, sizeof args, run, cwd, "b");
    ck_assert_int_eq(repro_in_dir(args, err, sizeof err), 3);
    ck_assert_msg(strstr(err, "param.fc3.bias.npy: cannot write .npy dump: it is a directory"),
                  "%s", err);
}
END_TEST

Suite *outpath_suite(void)
{
    Suite *s = suite_create("outpath");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_new_and_regular_files_are_replaced);
    tcase_add_test(tc, test_symlinks_are_written_through);
    tcase_add_test(tc, test_fifo_is_written_in_place);
    tcase_add_test(tc, test_character_devices_are_written_in_place);
    tcase_add_test(tc, test_anything_else_is_refused);
    tcase_add_test(tc, test_abort_keeps_the_old_file);
    tcase_add_test(tc, test_our_own_descriptors_are_written_through);
    tcase_add_test(tc, test_check_junit_keeps_links_fifos_and_devices);
    tcase_add_test(tc, test_open_new_never_replaces);
    tcase_add_test(tc, test_keygen_follows_the_rule);
    tcase_add_test(tc, test_dump_follows_the_rule);
    suite_add_tcase(s, tc);
    return s;
}
