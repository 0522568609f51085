/* The option table seen from outside: for every command `repro help`
 * lists, every option its help text shows is one its parser takes (short
 * and long form, with a valid value, as "--opt VALUE" and "--opt=VALUE"),
 * -h prints that same text, and unknown options, missing values and bad
 * values are refused with exit 2 and a message naming the option.
 *
 * An option is tested without anything running: a sentinel option that no
 * command has follows it, so a parse that gets past the option under test
 * stops at the sentinel ("unknown option '--zz-sentinel'") before the
 * command does any work; an option the parser did not take would be named
 * instead. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SENTINEL "--zz-sentinel"

static char out[65536], err[65536], help[65536];

enum { MAX_CMDS = 64, MAX_OPTS = 64 };

typedef struct {
    char name[32];
} cmd_name;

typedef struct {
    char short_name;  /* 0: none */
    char name[48];    /* long name without dashes */
    char arg[48];     /* placeholder, "" for a flag */
} shown_opt;

/* The commands `repro help` lists: the lines after "commands:" that are
 * "  NAME  summary", up to the blank line. Returns how many. */
static int list_commands(cmd_name *names)
{
    ck_assert_int_eq(tu_run_repro("help", out, sizeof out, err, sizeof err), 0);
    const char *p = strstr(out, "\ncommands:\n");
    ck_assert_ptr_nonnull(p);
    p += strlen("\ncommands:\n");
    int n = 0;
    while (p[0] == ' ' && p[1] == ' ' && n < MAX_CMDS) {
        ck_assert_int_eq(sscanf(p, "%31s", names[n].name), 1);
        n++;
        p = strchr(p, '\n');
        ck_assert_ptr_nonnull(p);
        p++;
    }
    return n;
}

/* One option line of a help text, as the help printer lays it out: "  ",
 * the flag, then at least two spaces and the help (or the end of the line,
 * for a long flag whose help starts on the next). The flag is
 * "-x, --name ARG", "--name ARG" or either without ARG. */
static void parse_flag(const char *line, shown_opt *o)
{
    char flag[128];
    size_t len = strcspn(line + 2, "\n");
    const char *gap = strstr(line + 2, "  ");
    if (gap && (size_t)(gap - (line + 2)) < len)
        len = (size_t)(gap - (line + 2));
    snprintf(flag, sizeof flag, "%.*s", (int)len, line + 2);
    memset(o, 0, sizeof *o);
    const char *f = flag;
    if (f[0] == '-' && f[1] != '-') {
        o->short_name = f[1];
        ck_assert_msg(!strncmp(f + 2, ", --", 4), "a short option without a long name: %s", flag);
        f += 4;
    }
    ck_assert_msg(!strncmp(f, "--", 2), "not an option line: %s", line);
    f += 2;
    size_t nl = strcspn(f, " ");
    snprintf(o->name, sizeof o->name, "%.*s", (int)nl, f);
    if (f[nl] == ' ')
        snprintf(o->arg, sizeof o->arg, "%s", f + nl + 1);
}

/* The options a help text shows: the lines starting "  -" between
 * "options:" and the "-h, --help" line that ends every table. */
static int shown_options(const char *text, shown_opt *opts)
{
    const char *p = strstr(text, "\noptions:\n");
    ck_assert_ptr_nonnull(p);
    int n = 0;
    for (p = strchr(p + 1, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
        if (!strncmp(p, "  -h, --help", 12))
            return n;
        if (!strncmp(p, "  -", 3)) {
            ck_assert_int_lt(n, MAX_OPTS);
            parse_flag(p, &opts[n++]);
        }
        if (!strchr(p, '\n'))
            break;
    }
    ck_assert_msg(0, "no '-h, --help' line ends the options of:\n%s", text);
    return n;
}

/* The test value of an option, by name first, else by placeholder, or NULL. */
static const char *table_value(const shown_opt *o)
{
    static const struct {
        const char *name_or_arg, *value;
    } values[] = {
        /* by name first: the placeholder alone does not say */
        {"backend", "cpu"}, {"policy", "bitwise"}, {"vary", "train.lr=0.1,0.2"},
        {"tap-write", "linear.fwd=x.bin"}, {"tap-read", "linear.fwd=x.bin"},
        {"batch-sizes", "1,7"}, {"quarantine", "bwd.fc1.dw"}, {"claim-score", "0.5"}, {"max-file-size", "1M"},
        {"tolerance", "ulp:4"},
        /* by placeholder */
        {"N", "2"}, {"K", "1"}, {"S", "1"}, {"T", "1"}, {"W", "0"}, {"LIST", "1,2"},
        {"SECONDS", "5"}, {"SIZE", "1G"}, {"NAME", "somename"}, {"KEY=VALUE", "train.steps=2"},
        {"FILE", "@x.out"}, {"PATH", "@x.jsonl"}, {"DIR", "@x.dir"}, {"FILE.svg", "@x.svg"},
        {"HOST.pub", "@x.pub"}, {"KEY.pem", "@x.pem"}, {"GOOD..BAD", "HEAD~1..HEAD"},
        {"CMD", "make"}, {"TRACE", "@x.jsonl"}, {"GLOB", "param.*"}, {"CKPT", "@x.bin"},
        {"STEP[,STEP...]", "1,2"}, {"B", "cpu"}, {"P", "bitwise"}, {"LEVEL", "op"},
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (!strcmp(values[i].name_or_arg, o->name))
            return values[i].value;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (!strcmp(values[i].name_or_arg, o->arg))
            return values[i].value;
    return NULL;
}

/* A file name in this run's scratch directory: an exit-2 path may still
 * write (check --junit writes its error report). */
static const char *scratch_file(const char *name)
{
    static char path[8][TU_TMP_LEN + 32];
    static int next;
    char dir[TU_TMP_LEN];
    tu_tmp_template(dir, sizeof dir, "opts");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char *p = path[next++ % 8];
    snprintf(p, sizeof path[0], "%s/%s", dir, name);
    return p;
}

/* A value the option takes, chosen by its name, else its placeholder; a
 * file name ("@name") is one in a scratch directory. */
static const char *valid_value(const char *cmd, const shown_opt *o)
{
    const char *v = table_value(o);
    ck_assert_msg(v != NULL, "repro %s --%s %s: no test value for this placeholder (add one here)",
                  cmd, o->name, o->arg);
    return v[0] == '@' ? scratch_file(v + 1) : v;
}

/* `repro CMD OPTION SENTINEL` parsed OPTION and stopped at the sentinel. */
static void assert_parses(const char *cmd, const char *option)
{
    char args[4096];
    snprintf(args, sizeof args, "%s %s " SENTINEL, cmd, option);
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    char want[4096];
    snprintf(want, sizeof want, "unknown option '" SENTINEL "'");
    ck_assert_msg(rc != 0 && strstr(err, want) != NULL,
                  "repro %s: exit %d, expected the parse to reach the sentinel; stderr: %s", args,
                  rc, err);
}

/* Every option `repro help CMD` shows parses, in each form it is shown;
 * `CMD --help` and `CMD -h` print the same text. */
START_TEST(test_every_option_in_every_help_parses)
{
    cmd_name cmds[MAX_CMDS];
    int ncmds = list_commands(cmds), nopts_total = 0;
    ck_assert_int_ge(ncmds, 15);
    for (int i = 0; i < ncmds; i++) {
        char args[4096];
        snprintf(args, sizeof args, "help %s", cmds[i].name);
        ck_assert_int_eq(tu_run_repro(args, help, sizeof help, err, sizeof err), 0);
        for (int h = 0; h < 2; h++) {
            snprintf(args, sizeof args, "%s %s", cmds[i].name, h ? "-h" : "--help");
            ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 0);
            ck_assert_str_eq(out, help);
        }
        static shown_opt opts[MAX_OPTS];
        int n = shown_options(help, opts);
        for (int k = 0; k < n; k++) {
            const shown_opt *o = &opts[k];
            char opt[256];
            const char *v = o->arg[0] ? valid_value(cmds[i].name, o) : NULL;
            snprintf(opt, sizeof opt, "--%s%s%s%s", o->name, v ? " '" : "", v ? v : "",
                     v ? "'" : "");
            assert_parses(cmds[i].name, opt);
            if (v) {
                snprintf(opt, sizeof opt, "--%s='%s'", o->name, v);
                assert_parses(cmds[i].name, opt);
            }
            if (o->short_name) {
                snprintf(opt, sizeof opt, "-%c%s%s%s", o->short_name, v ? " '" : "", v ? v : "",
                         v ? "'" : "");
                assert_parses(cmds[i].name, opt);
            }
            nopts_total++;
        }
    }
    /* the table is not empty: each command's own and common rows */
    ck_assert_int_ge(nopts_total, 80);
}
END_TEST

/* The negative controls: an option no command has, and each valued option
 * without its value, are refused by every command with exit 2, naming the
 * option and the command. */
START_TEST(test_unknown_options_and_missing_values_exit_2)
{
    cmd_name cmds[MAX_CMDS];
    int ncmds = list_commands(cmds);
    for (int i = 0; i < ncmds; i++) {
        char args[4096], want[4096];
        snprintf(args, sizeof args, "%s " SENTINEL, cmds[i].name);
        ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
        snprintf(want, sizeof want, "%s: unknown option '" SENTINEL "'", cmds[i].name);
        ck_assert_msg(strstr(err, want) != NULL, "repro %s: %s", args, err);

        snprintf(args, sizeof args, "help %s", cmds[i].name);
        ck_assert_int_eq(tu_run_repro(args, help, sizeof help, err, sizeof err), 0);
        static shown_opt opts[MAX_OPTS];
        int n = shown_options(help, opts);
        for (int k = 0; k < n; k++) {
            if (!opts[k].arg[0])
                continue;
            snprintf(args, sizeof args, "%s --%s", cmds[i].name, opts[k].name);
            ck_assert_int_eq(tu_run_repro(args, out, sizeof out, err, sizeof err), 2);
            snprintf(want, sizeof want, "%s: option '--%s' needs a value", cmds[i].name,
                     opts[k].name);
            ck_assert_msg(strstr(err, want) != NULL, "repro %s: %s", args, err);
        }
    }
}
END_TEST

/* A bad value is refused as it is read: exit 2, a message naming the
 * option and the value, on the commands that used to parse by hand and
 * on the common --name and --timeout. */
START_TEST(test_bad_values_exit_2_naming_the_option)
{
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"gc --keep x", "gc: --keep x: expected a decimal count"},
        {"log -n 0 x.ini", "log: -n 0: expected a decimal count"},
        {"log --max-count=-1 x.ini", "log: -n -1: expected a decimal count"},
        {"env --backend tpu", "env: --backend tpu: expected cpu or cuda"},
        {"diff --plot= a b", "diff: --plot needs a file name"},
        {"verify b --max-steps 1e3", "verify: --max-steps 1e3: expected a decimal count"},
        {"verify b --max-seconds -1", "verify: --max-seconds -1: expected seconds >= 0"},
        {"verify b --max-memory 2X", "verify: --max-memory 2X: expected a size"},
        {"check --timeout 0 -- true", "check: --timeout 0: expected a decimal count"},
        {"run --timeout x -- true", "run: --timeout x: expected a decimal count"},
        {"bless --timeout 1.5 -- true", "bless: --timeout 1.5: expected a decimal count"},
        {"run --name ../up -- true", "--name '../up'"},
        {"log --name a/b", "--name 'a/b'"},
        {"check --steps x x.ini", "check: --steps x: expected a decimal count"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = tu_run_repro(cases[i].args, out, sizeof out, err, sizeof err);
        ck_assert_msg(rc == 2 && strstr(err, cases[i].want) != NULL,
                      "repro %s: exit %d (want 2), stderr: %s", cases[i].args, rc, err);
    }
}
END_TEST

/* --name and --timeout are one row each, shared: every command that takes
 * them shows them once, with the same placeholder; run and check refuse
 * them without a program, as before. */
START_TEST(test_name_and_timeout_are_shared)
{
    static const char *const takers[] = {"run", "check", "bless", "bisect"};
    for (size_t i = 0; i < sizeof takers / sizeof takers[0]; i++) {
        char args[64];
        snprintf(args, sizeof args, "help %s", takers[i]);
        ck_assert_int_eq(tu_run_repro(args, help, sizeof help, err, sizeof err), 0);
        const char *n = strstr(help, "\n  --name NAME ");
        const char *t = strstr(help, "\n  --timeout ");
        ck_assert_msg(n && !strstr(n + 1, "\n  --name "), "help %s: one --name", takers[i]);
        ck_assert_msg(t && !strstr(t + 1, "\n  --timeout "), "help %s: one --timeout",
                      takers[i]);
    }
    ck_assert_int_eq(tu_run_repro("help log", help, sizeof help, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(help, "\n  --name NAME "));
    ck_assert_ptr_null(strstr(help, "--timeout"));
    ck_assert_int_eq(tu_run_repro("run --timeout 5 experiments/mlp.ini", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "run: --name and --timeout are for a program after '--'"));
    ck_assert_int_eq(tu_run_repro("check --name x experiments/mlp.ini", out, sizeof out, err,
                                  sizeof err),
                     2);
    ck_assert_ptr_nonnull(strstr(err, "check: --name and --timeout are for a program"));
}
END_TEST

/* Operands come from the parser: "--" ends the options, and a word after
 * it that looks like an option is an operand. */
START_TEST(test_double_dash_ends_the_options)
{
    ck_assert_int_eq(tu_run_repro("diff -- --json b.jsonl", out, sizeof out, err, sizeof err), 2);
    ck_assert_msg(strstr(err, "repro: --json: ") != NULL, "the trace '--json': %s", err);
    ck_assert_ptr_null(strstr(err, "unknown option"));
    ck_assert_int_eq(tu_run_repro("kernels extra", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "kernels: expected no operands, got 1"));
    ck_assert_int_eq(tu_run_repro("diff a.jsonl", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "diff: expected two traces, got 1"));
}
END_TEST

Suite *cli_opts_suite(void)
{
    Suite *s = suite_create("cli_opts");
    TCase *tc = tcase_create("cli_opts");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_every_option_in_every_help_parses);
    tcase_add_test(tc, test_unknown_options_and_missing_values_exit_2);
    tcase_add_test(tc, test_bad_values_exit_2_naming_the_option);
    tcase_add_test(tc, test_name_and_timeout_are_shared);
    tcase_add_test(tc, test_double_dash_ends_the_options);
    suite_add_tcase(s, tc);
    return s;
}
