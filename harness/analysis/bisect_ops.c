/* `repro bisect EXP` (without --commits): where does a run stop reproducing,
 * and which kernel variant is responsible?
 *  (a) two runs at trace level op; the first differing op output at the first
 *      divergent step is reported with its step, phase, layer, op and the
 *      variant that produced it;
 *  (b) the culprits: the nondeterministic variants in use are replaced by
 *      their deterministic defaults in subsets (delta debugging, Zeller's
 *      ddmin), each subset tested by K fresh runs; a minimal failing set is
 *      found, removed, and the search repeated until the rest reproduces, so
 *      several independent culprits are all named;
 *  (c) --quarantine OP substitutes the reference run's output of OP in the
 *      other run at every step (record.h taps), so the comparison goes on past
 *      a known-nondeterministic op and finds what else differs. */
#include "analysis/bisect_ops.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/config.h"
#include "util/error.h"
#include "analysis/multirun.h"
#include "util/opnames.h"
#include "kernels/variants.h"

#define MAX_CAND 16

typedef struct {
    const char *exp;
    repro_config cfg;
    char *pass[REPRO_MULTIRUN_MAX_PASS];
    int npass;
    int repeat;
    int json;
    const char *quarantine;
    /* the nondeterministic variant keys in use (candidates) */
    int cand[MAX_CAND];
    int ncand;
    long runs;        /* fresh runs spent */
    long test_steps;  /* steps per culprit test */
} bisect_ctx;

static int parse(int argc, char **argv, bisect_ctx *b)
{
    static const struct option opts[] = {
        {"repeat", required_argument, 0, 'r'}, {"steps", required_argument, 0, 's'},
        {"seed", required_argument, 0, 'S'},   {"set", required_argument, 0, 'k'},
        {"quarantine", required_argument, 0, 'q'}, {"json", no_argument, 0, 'j'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
    };
    b->repeat = 3;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 2 || v > 32)
                return repro_error_set(REPRO_EINVAL, "bisect: --repeat %s: expected 2..32",
                                       optarg);
            b->repeat = (int)v;
            break;
        }
        case 's':
        case 'S':
        case 'k':
            if (b->npass + 2 > REPRO_MULTIRUN_MAX_PASS - 8)
                return repro_error_set(REPRO_EINVAL, "bisect: too many options");
            b->pass[b->npass++] = c == 's' ? "--steps" : c == 'S' ? "--seed" : "--set";
            b->pass[b->npass++] = optarg;
            break;
        case 'q': b->quarantine = optarg; break;
        case 'j': b->json = 1; break;
        case 'h': fputs(repro_bisect_usage, stdout); return 1;
        case ':':
            return repro_error_set(REPRO_EINVAL, "bisect: option '%s' needs a value",
                                   argv[optind - 1]);
        default:
            return repro_error_set(REPRO_EINVAL,
                                   "bisect: unknown option '%s' (see `repro help bisect`)",
                                   argv[optind - 1]);
        }
    }
    if (optind + 1 != argc)
        return repro_error_set(REPRO_EINVAL, "bisect: expected one experiment file");
    b->exp = argv[optind];
    if (repro_config_load(&b->cfg, b->exp))
        return -1;
    if (repro_config_apply_run_options(&b->cfg, b->pass, b->npass))
        return -1;
    if (repro_config_validate(&b->cfg))
        return -1;
    /* The candidates: nondeterministic variants in use, minus the quarantined. */
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        if (!repro_config_key_is_variant(k))
            continue;
        char v[64];
        repro_config_variant_name(&b->cfg, k, v, sizeof v);
        const repro_variant_info *vi = repro_variant_find(repro_config_key_name(k), v);
        if (!vi || vi->deterministic)
            continue;
        if (b->quarantine && !strcmp(b->quarantine, repro_config_key_name(k)))
            continue;
        if (b->ncand < MAX_CAND)
            b->cand[b->ncand++] = k;
    }
    return 0;
}

/* "variant.<op>=<its deterministic default>" for key k. */
static char *default_set(int k)
{
    static char bufs[MAX_CAND * 2][96];
    static int next;
    char *buf = bufs[next++ % (MAX_CAND * 2)];
    repro_config d;
    repro_config_defaults(&d);
    char v[64];
    repro_config_variant_name(&d, k, v, sizeof v);
    snprintf(buf, 96, "variant.%s=%s", repro_config_key_name(k), v);
    return buf;
}

/* Sets up a multirun with b's options plus extra pass-through pairs. */
static void setup(bisect_ctx *b, repro_multirun *m, const char *kind, char **extra, int nextra)
{
    repro_multirun_init(m, b->exp, b->cfg.name, kind);
    memcpy(m->pass, b->pass, sizeof(char *) * (size_t)b->npass);
    m->npass = b->npass;
    for (int i = 0; i < nextra; i++)
        m->pass[m->npass++] = extra[i];
    m->quiet = 1;
    m->no_element_detail = 1; /* bisect wants where and which, not the element range */
}

/* Does the run still differ with only the candidates in `keep` left
 * nondeterministic (the others replaced by their defaults)? -1 on error. */
static int still_fails(bisect_ctx *b, const int *keep, int nkeep)
{
    static repro_multirun m;
    char *extra[2 * MAX_CAND + 8];
    int ne = 0;
    static char steps[32];
    snprintf(steps, sizeof steps, "%ld", b->test_steps);
    extra[ne++] = "--steps";
    extra[ne++] = steps;
    extra[ne++] = "--set";
    extra[ne++] = "trace.level=step";
    for (int i = 0; i < b->ncand; i++) {
        int kept = 0;
        for (int j = 0; j < nkeep; j++)
            kept |= keep[j] == b->cand[i];
        if (!kept) {
            extra[ne++] = "--set";
            extra[ne++] = default_set(b->cand[i]);
        }
    }
    if (b->quarantine) { /* a quarantined variant is replaced too: known, not a suspect */
        int k = repro_config_find_key(b->quarantine);
        if (k >= 0 && repro_config_key_is_variant(k)) {
            extra[ne++] = "--set";
            extra[ne++] = default_set(k);
        }
    }
    setup(b, &m, "bisect-test", extra, ne);
    for (int i = 0; i < b->repeat; i++) {
        char label[32];
        snprintf(label, sizeof label, "run %d", i + 1);
        repro_multirun_add(&m, label, "fresh-process run to run", NULL, NULL);
    }
    int rc = repro_multirun_execute(&m);
    b->runs += m.nplan;
    int fails = rc ? -1 : m.failed > 0;
    if (!b->json) {
        fprintf(stderr, "bisect: nondeterministic {");
        for (int j = 0; j < nkeep; j++)
            fprintf(stderr, "%s%s", j ? ", " : "", repro_config_key_name(keep[j]));
        fprintf(stderr, "}: %s\n", fails < 0 ? "error" : fails ? "differs" : "reproduces");
    }
    repro_multirun_release(&m);
    return fails;
}

/* Zeller's ddmin: a 1-minimal subset of `set` that still fails. */
static int ddmin(bisect_ctx *b, int *set, int n, int *out)
{
    int gran = 2;
    int cur[MAX_CAND], ncur = n;
    memcpy(cur, set, sizeof(int) * (size_t)n);
    while (ncur >= 2) {
        int found = 0;
        int chunk = (ncur + gran - 1) / gran;
        for (int start = 0; start < ncur && !found; start += chunk) {
            int sub[MAX_CAND], ns = 0, comp[MAX_CAND], nc = 0;
            for (int i = 0; i < ncur; i++) {
                if (i >= start && i < start + chunk)
                    sub[ns++] = cur[i];
                else
                    comp[nc++] = cur[i];
            }
            int f = still_fails(b, sub, ns);
            if (f < 0)
                return -1;
            if (f) {
                memcpy(cur, sub, sizeof(int) * (size_t)ns);
                ncur = ns;
                gran = 2;
                found = 1;
                break;
            }
            if (gran > 2 || ns * 2 < ncur) { /* complements only add information then */
                f = still_fails(b, comp, nc);
                if (f < 0)
                    return -1;
                if (f) {
                    memcpy(cur, comp, sizeof(int) * (size_t)nc);
                    ncur = nc;
                    gran = gran - 1 > 2 ? gran - 1 : 2;
                    found = 1;
                }
            }
        }
        if (found)
            continue;
        if (gran >= ncur)
            break;
        gran = gran * 2 < ncur ? gran * 2 : ncur;
    }
    memcpy(out, cur, sizeof(int) * (size_t)ncur);
    return ncur;
}

/* (b): every culprit, as the union of successive minimal sets. */
static int find_culprits(bisect_ctx *b, int *culprits)
{
    int rest[MAX_CAND], nrest = b->ncand, nc = 0;
    memcpy(rest, b->cand, sizeof(int) * (size_t)b->ncand);
    while (nrest > 0) {
        int f = still_fails(b, rest, nrest);
        if (f <= 0)
            return f < 0 ? -1 : nc;
        int min[MAX_CAND];
        int nm = nrest == 1 ? (min[0] = rest[0], 1) : ddmin(b, rest, nrest, min);
        if (nm < 0)
            return -1;
        for (int i = 0; i < nm; i++) {
            culprits[nc++] = min[i];
            for (int j = 0; j < nrest; j++)
                if (rest[j] == min[i]) {
                    rest[j] = rest[--nrest];
                    break;
                }
        }
    }
    return nc;
}

int repro_bisect_ops_main(int argc, char **argv)
{
    static bisect_ctx b;
    memset(&b, 0, sizeof b);
    int rc = parse(argc, argv, &b);
    if (rc == 1)
        return repro_finish_stdout(0);
    if (rc)
        return repro_report_error();

    /* (a) two runs at op level, the second quarantined if asked. */
    static repro_multirun m;
    char *extra[] = {"--set", "trace.level=op"};
    setup(&b, &m, "bisect", extra, 2);
    m.quiet = b.json;
    repro_multirun_add(&m, "reference", "fresh-process run to run", NULL, NULL);
    repro_multirun_add(&m, "run 2", "fresh-process run to run", NULL, NULL);
    if (b.quarantine) {
        snprintf(m.plan[0].extra[0], sizeof m.plan[0].extra[0], "--tap-write");
        snprintf(m.plan[0].extra[1], sizeof m.plan[0].extra[1], "%s=%s/quarantine.tap",
                 b.quarantine, m.root);
        snprintf(m.plan[1].extra[0], sizeof m.plan[1].extra[0], "--tap-read");
        snprintf(m.plan[1].extra[1], sizeof m.plan[1].extra[1], "%s=%s/quarantine.tap",
                 b.quarantine, m.root);
    }
    rc = repro_multirun_execute(&m);
    if (rc) {
        int code = rc < 0 ? repro_report_error() : rc;
        repro_multirun_release(&m);
        return code;
    }
    b.runs = m.nplan;
    const repro_divergence *d = &m.divs[1];
    json_t *doc = json_object();
    json_object_set_new(doc, "experiment", json_string(b.cfg.name));
    if (b.quarantine)
        json_object_set_new(doc, "quarantine", json_string(b.quarantine));
    int exit_code = 0;
    if (d->identical) {
        json_object_set_new(doc, "diverged", json_false());
        if (!b.json)
            printf("no divergence: two runs agree bit for bit over %ld steps%s\n",
                   m.traces[0].trailer_steps,
                   b.quarantine ? " (with the quarantined op substituted)" : "");
    } else {
        exit_code = REPRO_EXIT_MISMATCH;
        const repro_tensor_diff *first = d->nops > 0 ? &d->ops[0]
                                         : d->ntensors > 0 ? &d->tensors[0] : NULL;
        const char *name = first ? first->name : "?";
        const char *vop = repro_op_variant(name);
        char phase[32] = "", layer[32] = "", out[32] = "", vname[64] = "";
        repro_op_split(name, phase, layer, out, sizeof phase);
        int vk = vop ? repro_config_find_key(vop) : -1;
        const repro_variant_info *vi = NULL;
        if (vk >= 0 && repro_config_key_is_variant(vk)) {
            repro_config_variant_name(&b.cfg, vk, vname, sizeof vname);
            vi = repro_variant_find(vop, vname);
        } else if (vop) {
            /* ops with one implementation: the registry's only entry */
            for (const repro_variant_info *v = repro_variants; v->op; v++)
                if (!strcmp(v->op, vop)) {
                    vi = v;
                    snprintf(vname, sizeof vname, "%s", v->variant);
                    break;
                }
        }
        json_t *fo = json_pack("{s:I, s:s, s:s, s:s}", "step", (json_int_t)d->first_step, "name",
                               name, "phase", phase[0] ? phase : "?", "layer", layer);
        if (vop)
            json_object_set_new(fo, "op", json_string(vop));
        if (vname[0])
            json_object_set_new(fo, "variant", json_string(vname));
        if (vi)
            json_object_set_new(fo, "deterministic", json_boolean(vi->deterministic));
        json_object_set_new(doc, "diverged", json_true());
        json_object_set_new(doc, "first_divergent_op", fo);
        if (!b.json) {
            printf("first divergence: step %ld, %s, layer %s, %s (op %s, variant %s%s)\n",
                   d->first_step,
                   !strcmp(phase, "fwd") ? "forward" : !strcmp(phase, "bwd") ? "backward" : "-",
                   layer[0] ? layer : "-", name, vop ? vop : "?", vname[0] ? vname : "?",
                   vi ? (vi->deterministic ? ", deterministic" : ", NONdeterministic") : "");
            if (d->nops == 0)
                printf("  (no op output differs there: the first differing tensor is shown)\n");
        }

        /* (b) the culprits among the nondeterministic variants in use. */
        /* Atomic-add nondeterminism shows only when threads contend, which a
         * small reduction may not do at every step: test over enough steps. */
        b.test_steps = d->first_step * 2 + 4 > 20 ? d->first_step * 2 + 4 : 20;
        if (b.test_steps > b.cfg.train_steps)
            b.test_steps = b.cfg.train_steps;
        json_t *cul = json_array();
        if (b.ncand == 0) {
            if (!b.json)
                printf("no nondeterministic kernel variant is in use%s: the divergence comes from "
                       "elsewhere (data, environment, a fault)\n",
                       b.quarantine ? " besides the quarantined one" : "");
        } else {
            int culprits[MAX_CAND];
            int nc = find_culprits(&b, culprits);
            if (nc < 0) {
                exit_code = repro_report_error();
            } else {
                for (int i = 0; i < nc; i++) {
                    char v[64];
                    repro_config_variant_name(&b.cfg, culprits[i], v, sizeof v);
                    json_array_append_new(cul, json_pack("{s:s, s:s}", "op",
                                                         repro_config_key_name(culprits[i]),
                                                         "variant", v));
                }
                if (!b.json) {
                    if (nc == 0)
                        printf("culprits: none of the %d nondeterministic variants in use makes "
                               "the runs differ on its own within %ld steps x %d runs\n",
                               b.ncand, b.test_steps, b.repeat);
                    else
                        printf("culprit%s (minimal: with %s deterministic the runs reproduce):\n",
                               nc == 1 ? "" : "s", nc == 1 ? "it" : "them");
                    for (int i = 0; i < nc; i++) {
                        char v[64];
                        repro_config_variant_name(&b.cfg, culprits[i], v, sizeof v);
                        printf("  variant.%s = %s\n", repro_config_key_name(culprits[i]), v);
                    }
                }
            }
        }
        json_object_set_new(doc, "culprits", cul);
        json_object_set_new(doc, "candidates", json_integer(b.ncand));
    }
    json_object_set_new(doc, "runs", json_integer(b.runs));
    if (b.json) {
        json_dumpf(doc, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    } else {
        printf("%ld fresh runs (traces under runs/%s/)\n", b.runs, b.cfg.name);
    }
    json_decref(doc);
    repro_multirun_release(&m);
    return repro_finish_stdout(exit_code);
}
