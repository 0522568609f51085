/* `repro gc`: prunes runs/ — every name's run directories beyond the
 * newest K. `repro check` does the same after each check (keeping
 * $REPRO_KEEP_RUNS, default 20) and removes a passing check's own traces
 * unless --keep. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "util/error.h"
#include "util/numparse.h"
#include "util/runs.h"

static const char synopsis[] =
    "usage: repro gc [--keep K] [--dry-run] [NAME...]\n"
    "\n"
    "Deletes old run directories under runs/: for each experiment or program\n"
    "NAME (default: every one under runs/), all but the newest K (default 5).\n"
    "Goldens are never touched (they live in golden/).\n";

static const char epilogue[] = "\nExit: 0 ok, 2 usage, 3 a directory could not be removed.\n";

enum { O_KEEP = 1, O_DRY_RUN };

static const repro_cli_opt own_opts[] = {
    {"keep", 0, "K", "run directories to keep per name (0 removes them all)", O_KEEP},
    {"dry-run", 0, NULL, "say what would be removed, remove nothing", O_DRY_RUN},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_gc_spec = {"gc", REPRO_CLI_GC, synopsis, own_opts, epilogue};

typedef struct {
    long keep;
    int dry_run;
} gc_opts;

static int gc_option(void *ctx, int id, const char *v)
{
    gc_opts *o = ctx;
    if (id == O_DRY_RUN) {
        o->dry_run = 1;
        return 0;
    }
    return repro_parse_count("gc: --keep", v, 0, 1000000, &o->keep);
}

static int prune_name(const char *name, long keep, int dry_run, long long *total)
{
    char dir[1200];
    long long freed = 0;
    snprintf(dir, sizeof dir, "runs/%s", name);
    if (repro_runs_prune(dir, (int)keep, dry_run, stdout, &freed))
        return -1;
    *total += freed;
    return 0;
}

int repro_cmd_gc(int argc, char **argv)
{
    gc_opts o = {5, 0};
    repro_common co = {0};
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_gc_spec, argc, argv, &co, gc_option, &o);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed)
        return repro_report_error();
    long keep = o.keep;
    int dry_run = o.dry_run;
    long long total = 0;
    int rc = 0;
    if (p.nargs) {
        for (int i = 0; i < p.nargs && !rc; i++)
            rc = strchr(p.args[i], '/') || p.args[i][0] == '.'
                     ? repro_error_set(REPRO_EINVAL, "gc: '%s' is not a name under runs/",
                                       p.args[i])
                     : prune_name(p.args[i], keep, dry_run, &total);
    } else {
        DIR *d = opendir("runs");
        struct dirent *e;
        while (d && (e = readdir(d)) && !rc)
            if (e->d_name[0] != '.')
                rc = prune_name(e->d_name, keep, dry_run, &total);
        if (d)
            closedir(d);
    }
    if (rc)
        return repro_report_error();
    printf("%s %.1f MiB\n", dry_run ? "would free" : "freed", (double)total / (1024.0 * 1024.0));
    return repro_finish_stdout(0);
}
