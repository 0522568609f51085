/* The effective config as the trace header records it: every key as a
 * string, grouped by section, and its two digests (trace.h, "Header"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "record/hash.h"
#include "util/error.h"

/* The config digests. The numerics digest leaves out the bits-neutral keys
 * and every key at its default value: so adding a new key (at a default
 * that keeps today's behaviour) does not turn every existing golden into
 * "a different config", while any key set away from its default counts. */
static int digest_text(const repro_config *cfg, int numerics, repro_digest *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    char val[REPRO_CONFIG_PATH_MAX + 16], def[REPRO_CONFIG_PATH_MAX + 16];
    repro_config *defaults = malloc(sizeof *defaults);
    if (!defaults) {
        fclose(f);
        free(text);
        return repro_error_set(REPRO_ENOMEM, "out of memory");
    }
    repro_config_defaults(defaults);
    if (numerics)
        fprintf(f, "repro-numerics/v2\n");
    for (int k = 0; k < REPRO_KEY_COUNT; k++) {
        if (numerics && repro_config_key_bits_neutral(k))
            continue;
        repro_config_value_str(cfg, k, val, sizeof val);
        if (numerics) {
            repro_config_value_str(defaults, k, def, sizeof def);
            if (!strcmp(val, def))
                continue;
        }
        fprintf(f, "%s.%s = %s\n", repro_config_key_section(k), repro_config_key_name(k), val);
    }
    fclose(f);
    free(defaults);
    int rc = repro_sha256(text, len, out);
    free(text);
    return rc;
}

int repro_config_digests(const repro_config *cfg, repro_digest *all, repro_digest *numerics)
{
    return digest_text(cfg, 0, all) || digest_text(cfg, 1, numerics) ? -1 : 0;
}

void *repro_config_to_json(const repro_config *cfg)
{
    json_t *config = json_object();
    char val[REPRO_CONFIG_PATH_MAX + 16];
    for (int k = 0; config && k < REPRO_KEY_COUNT; k++) {
        const char *sec = repro_config_key_section(k);
        json_t *s = json_object_get(config, sec);
        if (!s) {
            s = json_object();
            json_object_set_new(config, sec, s);
        }
        repro_config_value_str(cfg, k, val, sizeof val);
        json_object_set_new(s, repro_config_key_name(k), json_string(val));
    }
    if (!config)
        repro_error_set(REPRO_ENOMEM, "out of memory");
    return config;
}
