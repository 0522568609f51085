/* `repro env`: prints the environment fingerprint and its class. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "record/env.h"
#include "util/error.h"

const char repro_env_usage[] =
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
    "the fingerprint (\"env\") and the class (\"env_class\").\n"
    "\n"
    "  --json       the fingerprint as one JSON object, with \"class\" and\n"
    "               \"class_fields\"\n"
    "  --backend B  the class of runs on backend B (default cpu); cuda adds\n"
    "               the GPU, driver, CUDA and cuDNN versions to the class\n"
    "               (\"unavailable: ...\" without a usable GPU). Either way the\n"
    "               GPU this machine has, if any, and whether this build's CUDA\n"
    "               backend is verified on hardware are shown\n"
    "  -h, --help   this text\n";

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
    int json = 0;
    const char *backend = "cpu";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(repro_env_usage, stdout);
            return repro_finish_stdout(0);
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--backend") && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "cpu") || !strcmp(argv[i + 1], "cuda"))) {
            backend = argv[++i];
        } else if (!strcmp(argv[i], "--backend")) {
            repro_error_set(REPRO_EINVAL, "env: --backend needs cpu or cuda");
            return repro_report_error();
        } else {
            repro_error_set(REPRO_EINVAL, "env: unknown %s '%s' (see `repro help env`)",
                            argv[i][0] == '-' ? "option" : "argument", argv[i]);
            return repro_report_error();
        }
    }
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
