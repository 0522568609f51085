/* The history layer (harness/history/) against real repositories: each test builds its own small
 * repository with the git CLI under one mkdtemp root (removed at the end),
 * then checks what it reports against what git itself says, in a
 * normal clone, a shallow clone, a linked worktree, a bare and an empty one. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "history/git.h"

#include "gitfixture.h"

static char base[256]; /* per suite run, made and removed in the parent */
static char root[512]; /* per test, under base */

static void new_dir(char *out, size_t len, const char *name)
{
    ck_assert_int_lt(snprintf(out, len, "%s/%s", root, name), (int)len);
    ck_assert_int_eq(mkdir(out, 0777), 0);
}

/* The history most tests use:
 *   c0 initial (everything)     c1 kernels          c2 docs
 *   c3 kernels + harness        c4 golden x chain 1 c5 docs
 *   c6 golden x chain 2 + new kernel file (with a message body) */
static char repo[PATH_MAX];
static char ids[7][41];

static void make_history(void)
{
    new_dir(repo, sizeof repo, "repo");
    tu_git_init(repo);
    tu_git_write(repo, "kernels/cpu/conv2d.c", "w", "v0\n");
    tu_git_write(repo, "harness/a.c", "w", "a0\n");
    tu_git_write(repo, "docs/readme.md", "w", "d0\n");
    tu_git_write(repo, "experiments/mlp.ini", "w", "[run]\n");
    tu_git_write(repo, "Makefile", "w", "all:\n");
    tu_git_write(repo, "golden/x/cpu.jsonl", "w", "chain 0\n");
    tu_git_commit_all(repo, "initial", ids[0]);
    tu_git_write(repo, "kernels/cpu/conv2d.c", "w", "v1\n");
    tu_git_commit_all(repo, "kernels: faster conv", ids[1]);
    tu_git_write(repo, "docs/readme.md", "w", "d1\n");
    tu_git_commit_all(repo, "docs: typo", ids[2]);
    tu_git_write(repo, "kernels/cpu/conv2d.c", "w", "v2\n");
    tu_git_write(repo, "harness/a.c", "w", "a1\n");
    tu_git_commit_all(repo, "conv and harness", ids[3]);
    tu_git_write(repo, "golden/x/cpu.jsonl", "w", "chain 1\n");
    tu_git_commit_all(repo, "bless x 1", ids[4]);
    tu_git_write(repo, "docs/readme.md", "w", "d2\n");
    tu_git_commit_all(repo, "docs again", ids[5]);
    tu_git_write(repo, "golden/x/cpu.jsonl", "w", "chain 2\n");
    tu_git_write(repo, "kernels/cpu/new.c", "w", "n0\n");
    tu_git_commit_all(repo, "bless x 2 and new kernel' -m 'A body line that is not the subject.",
                      ids[6]);
}

/* The unchecked fixture runs in the parent, so base is removed even when a
 * failed test's process exited before its own teardown. */
static void suite_setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/repro-git-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base))
        base[0] = '\0';
}

static void remove_tree(const char *dir)
{
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (dir[0] && system(cmd) != 0)
        fprintf(stderr, "check_git: could not remove %s\n", dir);
}

static void suite_teardown(void)
{
    remove_tree(base);
}

static void setup(void)
{
    ck_assert_msg(base[0], "no temporary directory");
    snprintf(root, sizeof root, "%s/t-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(root));
    char real[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(root, real));
    ck_assert_int_lt(snprintf(root, sizeof root, "%s", real), (int)sizeof root);
    tu_git_home(root);
    repro_error_clear();
}

static void teardown(void)
{
    remove_tree(root);
}

static repro_git *open_ok(const char *path)
{
    repro_git *g = NULL;
    int rc = repro_git_open(&g, path);
    ck_assert_msg(rc == 0, "open %s: %s", path, repro_error_message());
    ck_assert_ptr_nonnull(g);
    return g;
}

static void assert_error(int rc, int code, const char *phrase)
{
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(repro_error_code(), code);
    ck_assert_msg(strstr(repro_error_message(), phrase), "message '%s' lacks '%s'",
                  repro_error_message(), phrase);
}

START_TEST(test_open_from_subdir_and_relpath)
{
    make_history();
    char sub[PATH_MAX + 16];
    snprintf(sub, sizeof sub, "%s/kernels/cpu", repo);
    repro_git *g = open_ok(sub);
    ck_assert_str_eq(repro_git_workdir(g), repo);
    ck_assert_int_eq(repro_git_is_shallow(g), 0);

    char *rel = NULL, p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s/experiments/mlp.ini", repo);
    ck_assert_int_eq(repro_git_relpath(g, p, &rel), 0);
    ck_assert_str_eq(rel, "experiments/mlp.ini");
    free(rel);
    /* A file not written yet, reached through "..". */
    snprintf(p, sizeof p, "%s/kernels/../golden/new/cpu.jsonl", repo);
    ck_assert_int_eq(repro_git_relpath(g, p, &rel), 0);
    ck_assert_str_eq(rel, "golden/new/cpu.jsonl");
    free(rel);
    ck_assert_int_eq(repro_git_relpath(g, repo, &rel), 0);
    ck_assert_str_eq(rel, "");
    free(rel);
    /* Relative to the current directory. */
    char cwd[PATH_MAX];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(sub), 0);
    int rc = repro_git_relpath(g, "../../experiments/mlp.ini", &rel);
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(rel, "experiments/mlp.ini");
    free(rel);
    /* Outside the work tree, including a sibling whose name shares the prefix. */
    assert_error(repro_git_relpath(g, root, &rel), REPRO_EINVAL, "outside the git work tree");
    snprintf(p, sizeof p, "%s2/x", repo);
    assert_error(repro_git_relpath(g, p, &rel), REPRO_EINVAL, "outside the git work tree");
    repro_git_free(g);
    repro_git_free(NULL);
}
END_TEST

START_TEST(test_outside_repo_and_bare)
{
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir, "plain");
    repro_git *g = NULL;
    assert_error(repro_git_open(&g, dir), REPRO_EIO, "not in a git repository (searched from");
    ck_assert_ptr_null(g);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), dir));
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "golden records are tied to commits"));

    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s/no/such/dir", dir);
    assert_error(repro_git_open(&g, missing), REPRO_EINVAL, "no/such/dir");

    char bare[PATH_MAX];
    new_dir(bare, sizeof bare, "bare.git");
    tu_git_sh("git init -q --bare '%s'", bare);
    assert_error(repro_git_open(&g, bare), REPRO_EIO, "bare");
    ck_assert_ptr_null(g);
}
END_TEST

START_TEST(test_unborn_head)
{
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir, "empty");
    tu_git_init(dir);
    tu_git_write(dir, "new.txt", "w", "x\n");
    repro_git *g = open_ok(dir);
    repro_git_commit c;
    assert_error(repro_git_head(g, &c), REPRO_EIO, "no commits yet");
    char tid[41];
    assert_error(repro_git_tree_id(g, NULL, "kernels", tid), REPRO_EIO, "no commits yet");
    repro_git_changes *ch = NULL;
    assert_error(repro_git_changes_since(g, "abc1234", NULL, 0, &ch), REPRO_EIO,
                 "no commits yet");
    repro_git_history *h = NULL;
    assert_error(repro_git_path_history(g, "golden", 0, &h), REPRO_EIO, "no commits yet");
    /* The dirty state is still readable: everything is untracked. */
    repro_git_dirty *d = NULL;
    ck_assert_int_eq(repro_git_dirty_list(g, NULL, 0, &d), 0);
    ck_assert_uint_eq(d->n, 1);
    ck_assert_int_eq(d->entries[0].status, '?');
    ck_assert_str_eq(d->entries[0].path, "new.txt");
    repro_git_dirty_free(d);
    repro_git_free(g);
}
END_TEST

START_TEST(test_head_and_lookup)
{
    make_history();
    repro_git *g = open_ok(repo);
    repro_git_commit c;
    ck_assert_int_eq(repro_git_head(g, &c), 0);
    char want[64];
    tu_git_capture(want, sizeof want, "git -C '%s' rev-parse HEAD", repo);
    ck_assert_str_eq(c.id, want);
    ck_assert_int_eq(strncmp(c.short_id, want, 7), 0);
    ck_assert_uint_eq(strlen(c.short_id), 7);
    ck_assert_str_eq(c.summary, "bless x 2 and new kernel");
    ck_assert_int_eq(c.time, TU_GIT_T0 + 6 * 60);
    ck_assert_str_eq(c.time_iso, "2023-11-14T22:19:20Z");
    repro_git_commit_release(&c);

    ck_assert_int_eq(repro_git_lookup(g, "HEAD~3", &c), 0);
    ck_assert_str_eq(c.id, ids[3]);
    ck_assert_str_eq(c.summary, "conv and harness");
    repro_git_commit_release(&c);
    char shortid[8];
    snprintf(shortid, sizeof shortid, "%.7s", ids[1]);
    ck_assert_int_eq(repro_git_lookup(g, shortid, &c), 0);
    ck_assert_str_eq(c.id, ids[1]);
    repro_git_commit_release(&c);
    assert_error(repro_git_lookup(g, "no-such-branch", &c), REPRO_EINVAL, "no-such-branch");
    repro_git_free(g);
}
END_TEST

static void assert_dirty(const repro_git_dirty *d, const char *const *want, size_t n)
{
    char got[2048] = "";
    for (size_t i = 0; i < d->n; i++) {
        size_t len = strlen(got);
        snprintf(got + len, sizeof got - len, "%c %s%s%s;", d->entries[i].status,
                 d->entries[i].path, d->entries[i].old_path ? " <- " : "",
                 d->entries[i].old_path ? d->entries[i].old_path : "");
    }
    char exp[2048] = "";
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(exp);
        snprintf(exp + len, sizeof exp - len, "%s;", want[i]);
    }
    ck_assert_str_eq(got, exp);
}

START_TEST(test_dirty_state)
{
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir, "dirty");
    tu_git_init(dir);
    tu_git_write(dir, ".gitignore", "w", "*.log\n");
    tu_git_write(dir, "kernels/k.c", "w", "k0\n");
    tu_git_write(dir, "harness/h.c", "w", "h0\n");
    tu_git_write(dir, "old.txt", "w", "o\n");
    tu_git_write(dir, "gone.txt", "w", "g\n");
    tu_git_commit_all(dir, "base", NULL);

    repro_git *g = open_ok(dir);
    repro_git_dirty *d = NULL;
    ck_assert_int_eq(repro_git_dirty_list(g, NULL, 0, &d), 0);
    ck_assert_uint_eq(d->n, 0);
    repro_git_dirty_free(d);

    tu_git_write(dir, "kernels/k.c", "w", "k1\n");           /* modified, not staged */
    tu_git_write(dir, "kernels/untracked.c", "w", "u\n");    /* untracked */
    tu_git_write(dir, "kernels.txt", "w", "not under kernels/\n");
    tu_git_write(dir, "newdir/sub/f.txt", "w", "f\n"); /* untracked directory, listed per file */
    tu_git_write(dir, "harness/staged.c", "w", "s\n");       /* staged new file */
    tu_git_write(dir, "kernels/build.log", "w", "ignored\n"); /* ignored: never listed */
    tu_git_sh("cd '%s' && git add harness/staged.c && rm gone.txt && git mv old.txt renamed.txt",
              dir);

    ck_assert_int_eq(repro_git_dirty_list(g, NULL, 0, &d), 0);
    const char *all[] = {"D gone.txt",         "A harness/staged.c", "? kernels.txt",
                         "M kernels/k.c",      "? kernels/untracked.c", "? newdir/sub/f.txt",
                         "R renamed.txt <- old.txt"};
    assert_dirty(d, all, sizeof all / sizeof *all);
    repro_git_dirty_free(d);

    const char *kern[] = {"kernels/"};
    ck_assert_int_eq(repro_git_dirty_list(g, kern, 1, &d), 0);
    const char *kern_want[] = {"M kernels/k.c", "? kernels/untracked.c"};
    assert_dirty(d, kern_want, 2);
    repro_git_dirty_free(d);

    const char *two[] = {"harness", "gone.txt", "old.txt"};
    ck_assert_int_eq(repro_git_dirty_list(g, two, 3, &d), 0);
    /* As `git status -- old.txt`: with the new name outside the prefixes, a
     * staged rename shows as the old name deleted. */
    const char *two_want[] = {"D gone.txt", "A harness/staged.c", "D old.txt"};
    assert_dirty(d, two_want, 3);
    repro_git_dirty_free(d);

    const char *both[] = {"renamed.txt", "old.txt"};
    ck_assert_int_eq(repro_git_dirty_list(g, both, 2, &d), 0);
    const char *both_want[] = {"R renamed.txt <- old.txt"};
    assert_dirty(d, both_want, 1);
    repro_git_dirty_free(d);

    const char *none[] = {"experiments"};
    ck_assert_int_eq(repro_git_dirty_list(g, none, 1, &d), 0);
    ck_assert_uint_eq(d->n, 0);
    repro_git_dirty_free(d);
    repro_git_dirty_free(NULL);
    repro_git_free(g);
}
END_TEST

START_TEST(test_tree_ids)
{
    make_history();
    repro_git *g = open_ok(repo);
    const char *paths[] = {"kernels", "harness", "experiments/mlp.ini", "Makefile", "golden/x"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        char got[41], want[64];
        ck_assert_int_eq(repro_git_tree_id(g, NULL, paths[i], got), 0);
        tu_git_capture(want, sizeof want, "git -C '%s' rev-parse 'HEAD:%s'", repo, paths[i]);
        ck_assert_str_eq(got, want);
        ck_assert_int_eq(repro_git_tree_id(g, ids[0], paths[i], got), 0);
        tu_git_capture(want, sizeof want, "git -C '%s' rev-parse '%s:%s'", repo, ids[0], paths[i]);
        ck_assert_str_eq(got, want);
    }
    char got[41], want[64];
    ck_assert_int_eq(repro_git_tree_id(g, NULL, "kernels/", got), 0);
    tu_git_capture(want, sizeof want, "git -C '%s' rev-parse HEAD:kernels", repo);
    ck_assert_str_eq(got, want);
    ck_assert_int_eq(repro_git_tree_id(g, NULL, "", got), 0);
    tu_git_capture(want, sizeof want, "git -C '%s' rev-parse 'HEAD^{tree}'", repo);
    ck_assert_str_eq(got, want);
    /* Absent paths are an answer, not an error. */
    ck_assert_int_eq(repro_git_tree_id(g, NULL, "kernels/cuda", got), 0);
    ck_assert_str_eq(got, "");
    ck_assert_int_eq(repro_git_tree_id(g, ids[0], "kernels/cpu/new.c", got), 0);
    ck_assert_str_eq(got, "");
    assert_error(repro_git_tree_id(g, "nosuchrev", "kernels", got), REPRO_EINVAL,
                 "nosuchrev");
    repro_git_free(g);
}
END_TEST

static void assert_commits(const repro_git_changes *c, const char *const *want, size_t n)
{
    ck_assert_uint_eq(c->n, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(c->commits[i].commit.id, want[i]);
}

START_TEST(test_changes_since)
{
    make_history();
    repro_git *g = open_ok(repo);
    const char *num[] = {"kernels", "harness/"};
    repro_git_changes *c = NULL;
    ck_assert_int_eq(repro_git_changes_since(g, ids[0], num, 2, &c), 0);
    ck_assert_int_eq(c->incomplete, 0);
    ck_assert_ptr_null(c->note);
    const char *want[] = {ids[6], ids[3], ids[1]};
    assert_commits(c, want, 3);
    ck_assert_str_eq(c->commits[0].commit.summary, "bless x 2 and new kernel");
    ck_assert_uint_eq(c->commits[0].npaths, 1);
    ck_assert_str_eq(c->commits[0].paths[0], "kernels/cpu/new.c");
    ck_assert_uint_eq(c->commits[1].npaths, 2);
    ck_assert_str_eq(c->commits[1].paths[0], "harness/a.c");
    ck_assert_str_eq(c->commits[1].paths[1], "kernels/cpu/conv2d.c");
    ck_assert_str_eq(c->commits[2].commit.time_iso, "2023-11-14T22:14:20Z");
    /* Per path: which commits changed it. */
    ck_assert_uint_eq(c->npaths, 3);
    ck_assert_str_eq(c->paths[0].path, "harness/a.c");
    ck_assert_uint_eq(c->paths[0].ncommits, 1);
    ck_assert_uint_eq(c->paths[0].commits[0], 1);
    ck_assert_str_eq(c->paths[1].path, "kernels/cpu/conv2d.c");
    ck_assert_uint_eq(c->paths[1].ncommits, 2);
    ck_assert_uint_eq(c->paths[1].commits[0], 1);
    ck_assert_uint_eq(c->paths[1].commits[1], 2);
    ck_assert_str_eq(c->paths[2].path, "kernels/cpu/new.c");
    ck_assert_uint_eq(c->paths[2].ncommits, 1);
    ck_assert_uint_eq(c->paths[2].commits[0], 0);
    repro_git_changes_free(c);

    /* A short id works; only later commits count. */
    char shortid[8];
    snprintf(shortid, sizeof shortid, "%.7s", ids[3]);
    ck_assert_int_eq(repro_git_changes_since(g, shortid, num, 2, &c), 0);
    assert_commits(c, want, 1);
    repro_git_changes_free(c);

    /* Since HEAD: nothing. */
    ck_assert_int_eq(repro_git_changes_since(g, ids[6], num, 2, &c), 0);
    ck_assert_uint_eq(c->n, 0);
    ck_assert_uint_eq(c->npaths, 0);
    ck_assert_int_eq(c->incomplete, 0);
    repro_git_changes_free(c);
    ck_assert_int_eq(repro_git_changes_since(g, "HEAD", NULL, 0, &c), 0);
    ck_assert_uint_eq(c->n, 0);
    repro_git_changes_free(c);

    /* Unrelated prefixes and no prefixes at all. */
    const char *docs[] = {"docs"};
    ck_assert_int_eq(repro_git_changes_since(g, ids[0], docs, 1, &c), 0);
    const char *want_docs[] = {ids[5], ids[2]};
    assert_commits(c, want_docs, 2);
    repro_git_changes_free(c);
    ck_assert_int_eq(repro_git_changes_since(g, ids[0], NULL, 0, &c), 0);
    const char *want_all[] = {ids[6], ids[5], ids[4], ids[3], ids[2], ids[1]};
    assert_commits(c, want_all, 6);
    repro_git_changes_free(c);

    /* A commit unknown here: everything from the root, flagged. */
    ck_assert_int_eq(
        repro_git_changes_since(g, "0123456789abcdef0123456789abcdef01234567", num, 2, &c), 0);
    ck_assert_int_eq(c->incomplete, 1);
    ck_assert_ptr_nonnull(strstr(c->note, "commit 0123456 is not in this repository's history"));
    const char *want_root[] = {ids[6], ids[3], ids[1], ids[0]};
    assert_commits(c, want_root, 4);
    repro_git_changes_free(c);

    /* Blessed on a branch that HEAD does not contain (history rewritten):
     * changes since the common ancestor (c2), flagged. */
    char side[41];
    tu_git_sh("git -C '%s' checkout -q -b side %s", repo, ids[2]);
    tu_git_write(repo, "kernels/cpu/conv2d.c", "w", "side\n");
    tu_git_commit_all(repo, "side", side);
    tu_git_sh("git -C '%s' checkout -q main", repo);
    ck_assert_int_eq(repro_git_changes_since(g, side, num, 2, &c), 0);
    ck_assert_int_eq(c->incomplete, 1);
    ck_assert_ptr_nonnull(strstr(c->note, "not an ancestor of HEAD"));
    const char *want_side[] = {ids[6], ids[3]};
    assert_commits(c, want_side, 2);
    repro_git_changes_free(c);
    repro_git_changes_free(NULL);
    repro_git_free(g);
}
END_TEST

/* A merge: commits from both sides are listed, each once, newest first by
 * topology, and the merge itself counts with what it brought in. */
START_TEST(test_changes_across_merge)
{
    make_history();
    char base[41], feat[41], mainc[41], merge[41];
    snprintf(base, sizeof base, "%s", ids[6]);
    tu_git_sh("git -C '%s' checkout -q -b feat", repo);
    tu_git_write(repo, "harness/feat.c", "w", "f\n");
    tu_git_commit_all(repo, "feat work", feat);
    tu_git_sh("git -C '%s' checkout -q main", repo);
    tu_git_write(repo, "kernels/cpu/main.c", "w", "m\n");
    tu_git_commit_all(repo, "main work", mainc);
    int t = tu_git_next_time();
    tu_git_sh("cd '%s' && GIT_AUTHOR_DATE='@%d +0000' GIT_COMMITTER_DATE='@%d +0000' "
       "git merge -q --no-ff --no-edit feat",
       repo, t, t);
    tu_git_capture(merge, sizeof merge, "git -C '%s' rev-parse HEAD", repo);
    repro_git *g = open_ok(repo);
    const char *num[] = {"kernels", "harness"};
    repro_git_changes *c = NULL;
    ck_assert_int_eq(repro_git_changes_since(g, base, num, 2, &c), 0);
    ck_assert_uint_eq(c->n, 3);
    ck_assert_str_eq(c->commits[0].commit.id, merge);
    ck_assert_str_eq(c->commits[0].paths[0], "harness/feat.c");
    /* The two sides: both present, in either order allowed by topology. */
    int saw_feat = 0, saw_main = 0;
    for (size_t i = 1; i < 3; i++) {
        saw_feat += !strcmp(c->commits[i].commit.id, feat);
        saw_main += !strcmp(c->commits[i].commit.id, mainc);
    }
    ck_assert_int_eq(saw_feat, 1);
    ck_assert_int_eq(saw_main, 1);
    ck_assert_str_eq(c->paths[0].path, "harness/feat.c");
    ck_assert_uint_eq(c->paths[0].ncommits, 2);
    repro_git_changes_free(c);
    repro_git_free(g);
}
END_TEST

START_TEST(test_shallow_clone)
{
    make_history();
    char shallow[PATH_MAX];
    snprintf(shallow, sizeof shallow, "%s/shallow", root);
    tu_git_sh("git clone -q --depth 1 'file://%s' '%s'", repo, shallow);
    repro_git *g = open_ok(shallow);
    ck_assert_int_eq(repro_git_is_shallow(g), 1);
    repro_git_commit head;
    ck_assert_int_eq(repro_git_head(g, &head), 0);
    ck_assert_str_eq(head.id, ids[6]);
    repro_git_commit_release(&head);
    char tid[41], want[64];
    ck_assert_int_eq(repro_git_tree_id(g, NULL, "kernels", tid), 0);
    tu_git_capture(want, sizeof want, "git -C '%s' rev-parse HEAD:kernels", repo);
    ck_assert_str_eq(tid, want);

    const char *num[] = {"kernels", "harness"};
    repro_git_changes *c = NULL;
    ck_assert_int_eq(repro_git_changes_since(g, ids[0], num, 2, &c), 0);
    ck_assert_int_eq(c->incomplete, 1);
    ck_assert_ptr_nonnull(c->note);
    ck_assert_msg(strstr(c->note, "is not in this clone's history (shallow clone?)") &&
                      strstr(c->note, "oldest commit available"),
                  "note: %s", c->note);
    /* HEAD is the boundary: what it changed is unknown, so nothing is listed. */
    ck_assert_uint_eq(c->n, 0);
    repro_git_changes_free(c);
    repro_git_history *h = NULL;
    ck_assert_int_eq(repro_git_path_history(g, "golden/x/", 0, &h), 0);
    ck_assert_int_eq(h->incomplete, 1);
    ck_assert_ptr_nonnull(strstr(h->note, "shallow clone"));
    repro_git_history_free(h);
    repro_git_free(g);

    /* Depth 3 (c6, c5, c4 present, c4 the boundary). */
    char deeper[PATH_MAX];
    snprintf(deeper, sizeof deeper, "%s/deeper", root);
    tu_git_sh("git clone -q --depth 3 'file://%s' '%s'", repo, deeper);
    g = open_ok(deeper);
    ck_assert_int_eq(repro_git_changes_since(g, ids[0], num, 2, &c), 0);
    ck_assert_int_eq(c->incomplete, 1);
    ck_assert_uint_eq(c->n, 1);
    ck_assert_str_eq(c->commits[0].commit.id, ids[6]);
    repro_git_changes_free(c);
    /* Since a commit that is present: complete. */
    ck_assert_int_eq(repro_git_changes_since(g, ids[5], num, 2, &c), 0);
    ck_assert_msg(c->incomplete == 0, "note: %s", c->note ? c->note : "");
    ck_assert_uint_eq(c->n, 1);
    ck_assert_str_eq(c->commits[0].commit.id, ids[6]);
    repro_git_changes_free(c);
    /* Since the boundary commit itself: complete too. */
    ck_assert_int_eq(repro_git_changes_since(g, ids[4], NULL, 0, &c), 0);
    ck_assert_msg(c->incomplete == 0, "note: %s", c->note ? c->note : "");
    const char *want_b[] = {ids[6], ids[5]};
    assert_commits(c, want_b, 2);
    repro_git_changes_free(c);
    ck_assert_int_eq(repro_git_path_history(g, "golden/x", 0, &h), 0);
    ck_assert_int_eq(h->incomplete, 1);
    ck_assert_uint_eq(h->n, 1);
    ck_assert_str_eq(h->commits[0].id, ids[6]);
    repro_git_history_free(h);
    repro_git_free(g);
}
END_TEST

START_TEST(test_linked_worktree)
{
    make_history();
    char wt[PATH_MAX];
    snprintf(wt, sizeof wt, "%s/wt", root);
    tu_git_sh("git -C '%s' worktree add -q -b wtbranch '%s'", repo, wt);
    tu_git_write(wt, "kernels/cpu/conv2d.c", "w", "wt\n");
    char wid[41];
    tu_git_commit_all(wt, "worktree commit", wid);

    char sub[PATH_MAX + 16];
    snprintf(sub, sizeof sub, "%s/kernels", wt);
    repro_git *g = open_ok(sub);
    ck_assert_str_eq(repro_git_workdir(g), wt);
    repro_git_commit c;
    ck_assert_int_eq(repro_git_head(g, &c), 0);
    ck_assert_str_eq(c.id, wid);
    ck_assert_str_eq(c.summary, "worktree commit");
    repro_git_commit_release(&c);
    repro_git_changes *ch = NULL;
    const char *k[] = {"kernels"};
    ck_assert_int_eq(repro_git_changes_since(g, ids[6], k, 1, &ch), 0);
    ck_assert_uint_eq(ch->n, 1);
    ck_assert_str_eq(ch->commits[0].commit.id, wid);
    repro_git_changes_free(ch);
    tu_git_write(wt, "scratch.txt", "w", "s\n");
    repro_git_dirty *d = NULL;
    ck_assert_int_eq(repro_git_dirty_list(g, NULL, 0, &d), 0);
    ck_assert_uint_eq(d->n, 1);
    ck_assert_str_eq(d->entries[0].path, "scratch.txt");
    repro_git_dirty_free(d);
    repro_git_free(g);

    /* The main checkout still sees its own HEAD. */
    g = open_ok(repo);
    ck_assert_int_eq(repro_git_head(g, &c), 0);
    ck_assert_str_eq(c.id, ids[6]);
    repro_git_commit_release(&c);
    repro_git_free(g);
}
END_TEST

/* What commit bisection asks of the history layer (git_range.c, git_worktree.c): the
 * first-parent range GOOD..BAD oldest first, refused when it is empty or
 * reversed; the paths a commit changed within prefixes; a temporary
 * worktree that checks commits out and leaves no branch behind. */
START_TEST(test_bisect_helpers)
{
    make_history();
    repro_git *g = open_ok(repo);
    char(*r)[41] = NULL;
    size_t n = 0;
    ck_assert_int_eq(repro_git_first_parent_range(g, ids[1], ids[4], &r, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(r[0], ids[2]);
    ck_assert_str_eq(r[1], ids[3]);
    ck_assert_str_eq(r[2], ids[4]);
    free(r);
    ck_assert_int_eq(repro_git_first_parent_range(g, ids[3], ids[3], &r, &n), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "same commit"));
    ck_assert_int_eq(repro_git_first_parent_range(g, ids[4], ids[1], &r, &n), -1);
    ck_assert_int_eq(repro_error_code(), REPRO_EINVAL);
    ck_assert_ptr_nonnull(strstr(repro_error_message(), "is not an ancestor of BAD"));

    char **paths = NULL;
    size_t np = 0;
    const char *num[] = {"kernels", "harness"};
    ck_assert_int_eq(repro_git_diff_paths(g, ids[2], ids[3], num, 2, &paths, &np), 0);
    ck_assert_uint_eq(np, 2);
    ck_assert_str_eq(paths[0], "harness/a.c");
    ck_assert_str_eq(paths[1], "kernels/cpu/conv2d.c");
    repro_git_paths_free(paths, np);
    ck_assert_int_eq(repro_git_diff_paths(g, ids[1], ids[2], num, 2, &paths, &np), 0);
    ck_assert_uint_eq(np, 0); /* docs only */
    repro_git_paths_free(paths, np);

    char wt[PATH_MAX], file[PATH_MAX + 32], out[256];
    snprintf(wt, sizeof wt, "%s/bisect-wt", root);
    repro_git_worktree *w = NULL;
    ck_assert_msg(repro_git_worktree_add(g, "repro-test-wt", wt, ids[1], &w) == 0, "%s",
                  repro_error_message());
    snprintf(file, sizeof file, "%s/kernels/cpu/conv2d.c", wt);
    tu_git_capture(out, sizeof out, "cat '%s'", file);
    ck_assert_str_eq(out, "v1");
    ck_assert_int_eq(repro_git_worktree_checkout(w, ids[3]), 0);
    tu_git_capture(out, sizeof out, "cat '%s'", file);
    ck_assert_str_eq(out, "v2");
    tu_git_capture(out, sizeof out, "git -C '%s' rev-parse HEAD", wt);
    ck_assert_str_eq(out, ids[3]);
    tu_git_capture(out, sizeof out, "git -C '%s' branch --list 'repro-test-wt' | wc -l", repo);
    ck_assert_str_eq(out, "0"); /* no branch left behind */
    ck_assert_int_eq(repro_git_worktree_remove(w), 0);
    ck_assert_int_ne(access(wt, F_OK), 0);
    tu_git_capture(out, sizeof out, "git -C '%s' worktree list | wc -l", repo);
    ck_assert_str_eq(out, "1");
    ck_assert_int_eq(repro_git_worktree_remove(NULL), 0);
    repro_git_free(g);
}
END_TEST

START_TEST(test_path_history)
{
    make_history();
    repro_git *g = open_ok(repo);
    repro_git_history *h = NULL;
    ck_assert_int_eq(repro_git_path_history(g, "golden/x/", 0, &h), 0);
    ck_assert_int_eq(h->incomplete, 0);
    ck_assert_ptr_null(h->note);
    ck_assert_uint_eq(h->n, 3);
    const int at[] = {6, 4, 0};
    const char *chain[] = {"chain 2\n", "chain 1\n", "chain 0\n"};
    for (size_t i = 0; i < 3; i++) {
        ck_assert_str_eq(h->commits[i].id, ids[at[i]]);
        void *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(
            repro_git_read_blob(g, h->commits[i].id, "golden/x/cpu.jsonl", &data, &len), 0);
        ck_assert_uint_eq(len, strlen(chain[i]));
        ck_assert_str_eq(data, chain[i]);
        free(data);
    }
    ck_assert_str_eq(h->commits[2].summary, "initial");
    repro_git_history_free(h);

    ck_assert_int_eq(repro_git_path_history(g, "golden/x/cpu.jsonl", 2, &h), 0);
    ck_assert_uint_eq(h->n, 2);
    ck_assert_str_eq(h->commits[1].id, ids[4]);
    ck_assert_int_eq(h->incomplete, 0);
    repro_git_history_free(h);
    ck_assert_int_eq(repro_git_path_history(g, "golden/none", 0, &h), 0);
    ck_assert_uint_eq(h->n, 0);
    repro_git_history_free(h);
    repro_git_history_free(NULL);
    repro_git_free(g);
}
END_TEST

START_TEST(test_read_blob_errors)
{
    make_history();
    repro_git *g = open_ok(repo);
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(repro_git_read_blob(g, NULL, "experiments/mlp.ini", &data, &len), 0);
    ck_assert_str_eq(data, "[run]\n");
    free(data);
    data = NULL;
    char shortid[8];
    snprintf(shortid, sizeof shortid, "%.7s", ids[6]);
    assert_error(repro_git_read_blob(g, NULL, "golden/x/gpu.jsonl", &data, &len), REPRO_EINVAL,
                 "golden/x/gpu.jsonl");
    ck_assert_ptr_nonnull(strstr(repro_error_message(), shortid));
    ck_assert_ptr_null(data);
    assert_error(repro_git_read_blob(g, ids[0], "kernels/cpu/new.c", &data, &len), REPRO_EINVAL,
                 "no such file");
    assert_error(repro_git_read_blob(g, NULL, "kernels", &data, &len), REPRO_EINVAL,
                 "not a file");
    assert_error(repro_git_read_blob(g, "0000000", "Makefile", &data, &len), REPRO_EINVAL,
                 "0000000");
    repro_git_free(g);
}
END_TEST

Suite *git_suite(void)
{
    Suite *s = suite_create("git");
    TCase *tc = tcase_create("repositories");
    /* Each test shells out to git a few dozen times (milliseconds each);
     * generous for slow CI disks and sanitizer builds. */
    tcase_set_timeout(tc, 60);
    tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_open_from_subdir_and_relpath);
    tcase_add_test(tc, test_outside_repo_and_bare);
    tcase_add_test(tc, test_unborn_head);
    tcase_add_test(tc, test_head_and_lookup);
    tcase_add_test(tc, test_dirty_state);
    tcase_add_test(tc, test_tree_ids);
    tcase_add_test(tc, test_changes_since);
    tcase_add_test(tc, test_changes_across_merge);
    tcase_add_test(tc, test_shallow_clone);
    tcase_add_test(tc, test_linked_worktree);
    tcase_add_test(tc, test_path_history);
    tcase_add_test(tc, test_bisect_helpers);
    tcase_add_test(tc, test_read_blob_errors);
    suite_add_tcase(s, tc);
    return s;
}
