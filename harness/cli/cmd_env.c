/* `repro env`: prints the environment fingerprint and its class. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "record/env.h"
#include "util/error.h"

static const char synopsis[] =
    "usage: repro env [--json] [--backend cpu|cuda]\n"
    "\n"
    "Prints the environment fingerprint: backend, architecture, CPU model and\n"
    "flags, the vector path the CPU kernels run on (REPRO_ISA=sse2|avx2|avx512\n"
    "forces one) and what they were compiled for, how tensor leaves are\n"
    "SHA-256'd (leaf_sha; REPRO_SHA=openssl forces OpenSSL), compiler, version\n"
    "and flags, repro, trace format, seed scheme, RNG and tensor-hash versions,\n"
    "library versions and the OS kernel (never the host name). Neither setting\n"
    "changes a bit.\n"
    "\n"
    "Last, the environment class: the part of the fingerprint under which runs\n"
    "are promised to be bitwise identical (backend, architecture, seed scheme,\n"
    "RNG, tensor hash; GPU, driver and CUDA/cuDNN for a GPU backend). Goldens\n"
    "are stored as golden/EXPERIMENT/CLASS.jsonl. Every trace header carries\n"
    "the fingerprint (\"env\") and the class (\"env_class\").\n";

enum { O_JSON = 1, O_BACKEND };

static const repro_cli_opt own_opts[] = {
    {"json", 0, NULL, "the fingerprint as one JSON object, with \"class\" and\n\"class_fields\"",
     O_JSON},
    {"backend", 0, "B",
     "the class of runs on backend B, cpu or cuda (default cpu);\ncuda adds the GPU, driver, "
     "CUDA and cuDNN versions to the\nclass (\"unavailable: ...\" without a usable GPU). Either "
     "way\nthe GPU this machine has, if any, and whether this build's\nCUDA backend is verified "
     "on hardware are shown",
     O_BACKEND},
    {NULL, 0, NULL, NULL, 0},
};

const repro_cli_spec repro_env_spec = {"env", REPRO_CLI_ENV, synopsis, own_opts, NULL};

typedef struct {
    int json;
    const char *backend;
} env_opts;

static int env_option(void *ctx, int id, const char *v)
{
    env_opts *o = ctx;
    if (id == O_JSON) {
        o->json = 1;
        return 0;
    }
    if (strcmp(v, "cpu") && strcmp(v, "cuda"))
        return repro_error_set(REPRO_EINVAL, "env: --backend %s: expected cpu or cuda", v);
    o->backend = v;
    return 0;
}

static void print_text(const repro_env *e)
{
    const char *key, *val;
    int cls, width = (int)strlen("class");
    for (int i = 0; (key = repro_env_field(e, i, &val, &cls)); i++)
        if ((int)strlen(key) + 2 > width)
            width = (int)strlen(key) + 2; /* class fields are indented by 2 */
    /* Everything, then the class with the fields that define it. Empty class
     * fields (the GPU ones on cpu) are not part of the class: not shown. */
    for (int i = 0; (key = repro_env_field(e, i, &val, &cls)); i++)
        if (val[0])
            printf("%s:%*s %s\n", key, width - (int)strlen(key), "", val);
    printf("class:%*s %s\n", width - (int)strlen("class"), "", e->class_id);
    for (int i = 0; (key = repro_env_field(e, i, &val, &cls)); i++)
        if (cls && val[0])
            printf("  %s:%*s %s\n", key, width - 2 - (int)strlen(key), "", val);
}

int repro_cmd_env(int argc, char **argv)
{
    env_opts o = {0, "cpu"};
    repro_common co = {0};
    repro_cli_parser p;
    int parsed = repro_cli_parse(&p, &repro_env_spec, argc, argv, &co, env_option, &o);
    if (parsed == 1)
        return repro_finish_stdout(0);
    if (parsed || repro_cli_operands(&p, 0, 0, "no operands"))
        return repro_report_error();
    const char *backend = o.backend;
    int json = o.json;
    repro_env e;
    if (repro_env_get_backend(&e, backend))
        return repro_report_error();
    if (!strcmp(backend, "cpu"))
        repro_env_probe_gpu(&e); /* shown, not in the class */
    if (json) {
        json_t *o = repro_env_to_json(&e);
        char *s = json_dumps(o, JSON_INDENT(2) | JSON_ENSURE_ASCII);
        json_decref(o);
        if (!s) {
            repro_error_set(REPRO_EIO, "env: cannot encode JSON");
            return repro_report_error();
        }
        puts(s);
        free(s);
    } else {
        print_text(&e);
    }
    return repro_finish_stdout(0);
}
