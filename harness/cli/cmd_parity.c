/* `repro parity EXP` / `repro parity -- PROGRAM`: the trainer's forward
 * against an inference side on the same checkpoint and probes, in several
 * batch compositions (analysis/parity.h). Parses, runs, prints. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/parity.h"
#include "cli/cli.h"
#include "util/error.h"
#include "util/numparse.h"

static const char synopsis[] =
    "usage: repro parity EXP [--probes FILE] [--batch-sizes 1,7,64] [options]\n"
    "       repro parity --probes FILE [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Training <-> inference parity (scope: engine): trains EXP to a checkpoint\n"
    "(or restores --checkpoint), runs the trainer's own forward over the probes,\n"
    "then an inference side built from the checkpoint file serves the same\n"
    "probes in batches of each --batch-sizes, and every output is compared bit\n"
    "for bit with the trainer's. The report names the first probe, position and\n"
    "element that differ, the first op and which side's kernels changed, and\n"
    "whether the inference side agrees with itself across its batch sizes.\n"
    "A built-in experiment's probe is test:N (held-out sample N; default the\n"
    "first 100); a program's is its own text (charlm: a prompt), served under\n"
    "the parity protocol (REPRO_PARITY, docs/PROTOCOL.md).\n";

static const char epilogue[] =
    "\n"
    "The probes file: one probe per line, '#' comments and blank lines skipped.\n"
    "Exit: 0 parity, 1 the outputs differ, 2 bad experiment, option, probes file\n"
    "or checkpoint, or a batch size larger than the probes, 3 could not test.\n";

enum { O_PROBES = 1, O_SIZES, O_CKPT, O_DIR, O_STEPS, O_SET, O_INFER_SET, O_TIMEOUT, O_JSON,
       O_QUIET };

static const repro_cli_opt own_opts[] = {
    {"probes", 0, "FILE", "the probe inputs, one per line (built-in default:\ntest:0 .. test:99)",
     O_PROBES},
    {"batch-sizes", 0, "LIST", "the inference side's batch sizes (default 1,7,64)", O_SIZES},
    {"checkpoint", 0, "FILE", "restore this checkpoint instead of training to one", O_CKPT},
    {"dir", 0, "DIR",
     "where the checkpoint, the outputs (.npy) and a program's\ntraces go (default "
     "runs/NAME/parity-<stamp>-<pid>)",
     O_DIR},
    {"steps", 0, "N", "training steps to the checkpoint (default: train.steps)", O_STEPS},
    {"set", 0, "KEY=VALUE", "override a config key on both sides; may be repeated", O_SET},
    {"infer-set", 0, "KEY=VALUE",
     "override a key on the inference side only (another\nkernel variant: another engine), e.g. "
     "linear.fwd=splitk;\nmay be repeated",
     O_INFER_SET},
    {"timeout", 0, "SECONDS", "-- PROGRAM only: kill a run that takes longer", O_TIMEOUT},
    {"json", 0, NULL, "the result as one JSON document on stdout", O_JSON},
    {"quiet", 'q', NULL, "no progress on stderr", O_QUIET},
    {NULL, 0, NULL, NULL, 0},
};

/* Only own options: bit 0 takes no common row. */
const repro_cli_spec repro_parity_spec = {"parity", 0, synopsis, own_opts, epilogue};

typedef struct {
    repro_parity_opts po;
    const char *probes;
    const char *set[REPRO_PARITY_MAX_SETS];
    int nset;
    int json;
    char dir[1100];
} parity_cli;

static int add_set(const char **list, int *n, const char *flag, const char *v)
{
    if (*n == REPRO_PARITY_MAX_SETS)
        return repro_error_set(REPRO_EINVAL, "parity: %s: at most %d", flag,
                               REPRO_PARITY_MAX_SETS);
    if (!strchr(v, '='))
        return repro_error_set(REPRO_EINVAL, "parity: %s '%s': expected KEY=VALUE", flag, v);
    list[(*n)++] = v;
    return 0;
}

static int parity_option(void *ctx, int id, const char *v)
{
    parity_cli *o = ctx;
    switch (id) {
    case O_PROBES: o->probes = v; return 0;
    case O_SIZES: return repro_parity_parse_sizes(&o->po, "parity: --batch-sizes", v);
    case O_CKPT: o->po.checkpoint = v; return 0;
    case O_DIR: o->po.dir = v; return 0;
    case O_STEPS: return repro_parse_count("parity: --steps", v, 1, 100000000, &o->po.steps);
    case O_SET: return add_set(o->set, &o->nset, "--set", v);
    case O_INFER_SET: return add_set(o->po.infer_set, &o->po.ninfer_set, "--infer-set", v);
    case O_TIMEOUT: {
        long s;
        if (repro_parse_count("parity: --timeout", v, 1, 86400 * 7, &s))
            return -1;
        o->po.timeout_s = (double)s;
        return 0;
    }
    case O_JSON: o->json = 1; return 0;
    case O_QUIET: o->po.quiet = 1; return 0;
    }
    return 0;
}

/* The default directory: runs/NAME/parity-<UTC stamp>-<pid>. */
static void default_dir(parity_cli *o, const char *name)
{
    if (o->po.dir)
        return;
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(o->dir, sizeof o->dir, "runs/%.128s/parity-%s-%ld", name, stamp, (long)getpid());
    o->po.dir = o->dir;
}

static int report(const parity_cli *o, const repro_parity_result *r)
{
    if (o->json) {
        json_t *j = repro_parity_json(r);
        if (!j) {
            repro_error_set(REPRO_ENOMEM, "out of memory");
            return repro_report_error();
        }
        json_dumpf(j, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
        json_decref(j);
    } else
        repro_parity_print(stdout, r);
    return repro_finish_stdout(r->parity ? REPRO_EXIT_OK : REPRO_EXIT_MISMATCH);
}

/* A built-in experiment: its config with --set, then the engine. */
static int run_experiment(parity_cli *o, const char *exp, const repro_parity_probes *probes,
                          repro_parity_result *r)
{
    repro_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    int rc = repro_config_load(cfg, exp);
    for (int i = 0; rc == 0 && i < o->nset; i++)
        rc = repro_config_set(cfg, o->set[i]);
    if (rc == 0 && o->po.steps > 0)
        cfg->train_steps = (int)o->po.steps;
    if (rc == 0 && (rc = repro_config_validate(cfg)) == 0) {
        default_dir(o, cfg->name);
        rc = repro_parity_run(cfg, probes, &o->po, r);
    }
    free(cfg);
    return rc;
}

static int run_program(parity_cli *o, char **program, const repro_parity_probes *probes,
                       repro_parity_result *r)
{
    const char *base = strrchr(program[0], '/');
    base = base ? base + 1 : program[0];
    default_dir(o, base);
    /* --set reaches a program as REPRO_SET_<KEY> on both sides. */
    for (int i = 0; i < o->nset; i++)
        if (add_set(o->po.infer_set, &o->po.ninfer_set, "--set and --infer-set", o->set[i]))
            return -1;
    o->po.train_set = o->set;
    o->po.ntrain_set = o->nset;
    return repro_parity_run_program(program, base, probes, &o->po, r);
}

static int parity_main(int argc, char **argv, char **program, parity_cli *o)
{
    repro_cli_parser p;
    repro_common co; /* no common rows: stays empty */
    memset(&co, 0, sizeof co);
    int rc = repro_cli_parse(&p, &repro_parity_spec, argc, argv, &co, parity_option, o);
    if (rc)
        return rc < 0 ? repro_report_error() : repro_finish_stdout(0);
    if (repro_cli_operands(&p, program ? 0 : 1, program ? 0 : 1,
                           program ? "no operand before -- PROGRAM" : "one experiment file"))
        return repro_report_error();
    if (program && !o->probes) {
        repro_error_set(REPRO_EINVAL, "parity: -- PROGRAM needs --probes FILE");
        return repro_report_error();
    }
    if (program && o->po.checkpoint) {
        repro_error_set(REPRO_EINVAL, "parity: --checkpoint is for a built-in experiment");
        return repro_report_error();
    }
    repro_parity_probes probes;
    if (o->probes ? repro_parity_probes_load(&probes, o->probes)
                  : repro_parity_probes_default(&probes, REPRO_PARITY_DEFAULT_PROBES))
        return repro_report_error();
    repro_parity_result *r = calloc(1, sizeof *r);
    if (!r)
        rc = repro_error_set(REPRO_ENOMEM, "out of memory");
    else
        rc = program ? run_program(o, program, &probes, r)
                     : run_experiment(o, p.args[0], &probes, r);
    rc = rc ? repro_report_error() : report(o, r);
    free(r);
    repro_parity_probes_free(&probes);
    return rc;
}

int repro_cmd_parity(int argc, char **argv)
{
    char **program;
    if (repro_cli_split_program(&argc, argv, &program))
        return repro_report_error();
    parity_cli *o = calloc(1, sizeof *o);
    if (!o) {
        fprintf(stderr, "repro: out of memory\n");
        return REPRO_EXIT_ENV;
    }
    repro_parity_opts_init(&o->po);
    int rc = parity_main(argc, argv, program, o);
    free(o);
    return rc;
}
