/* `repro gc`: prunes runs/ — every name's run directories beyond the
 * newest K. `repro check` does the same after each check (keeping
 * $REPRO_KEEP_RUNS, default 20) and removes a passing check's own traces
 * unless --keep. */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "util/error.h"
#include "util/numparse.h"
#include "util/runs.h"

const char repro_gc_usage[] =
    "usage: repro gc [--keep K] [--dry-run] [NAME...]\n"
    "\n"
    "Deletes old run directories under runs/: for each experiment or program\n"
    "NAME (default: every one under runs/), all but the newest K (default 5).\n"
    "Goldens are never touched (they live in golden/).\n"
    "\n"
    "  --keep K     run directories to keep per name (0 removes them all)\n"
    "  --dry-run    say what would be removed, remove nothing\n"
    "Exit: 0 ok, 2 usage, 3 a directory could not be removed.\n";

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
    static const struct option opts[] = {{"keep", required_argument, 0, 'k'},
                                         {"dry-run", no_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    long keep = 5;
    int dry_run = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'k' && repro_parse_count("gc: --keep", optarg, 0, 1000000, &keep))
            return repro_report_error();
        else if (c == 'n')
            dry_run = 1;
        else if (c == 'h') {
            fputs(repro_gc_usage, stdout);
            return repro_finish_stdout(0);
        } else if (c != 'k') {
            repro_cli_unknown_option("gc", argv[optind - 1], opts);
            return repro_report_error();
        }
    }
    long long total = 0;
    int rc = 0;
    if (optind < argc) {
        for (int i = optind; i < argc && !rc; i++)
            rc = strchr(argv[i], '/') || argv[i][0] == '.'
                     ? repro_error_set(REPRO_EINVAL, "gc: '%s' is not a name under runs/", argv[i])
                     : prune_name(argv[i], keep, dry_run, &total);
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
