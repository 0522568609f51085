/* The backend registry (repro_backend_get) and the names every backend
 * shares (convolution algorithms). A new backend adds one line to `all`:
 * the CUDA one under the build flag that compiles it. */
#include "backend.h"

#include <string.h>

static const repro_backend *const all[] = {
    &repro_backend_cpu,
    NULL,
};

const repro_backend *const *repro_backend_list(void)
{
    return all;
}

const repro_backend *repro_backend_get(const char *name)
{
    for (int i = 0; name && all[i]; i++)
        if (!strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}

static const char *const algo_names[REPRO_CONV_NALGOS] = {"direct", "im2col", "winograd"};

const char *repro_conv_algo_name(repro_conv_algo a)
{
    return (int)a >= 0 && a < REPRO_CONV_NALGOS ? algo_names[a] : "?";
}

int repro_conv_algo_from_name(const char *name)
{
    for (int a = 0; name && a < REPRO_CONV_NALGOS; a++)
        if (strcmp(name, algo_names[a]) == 0)
            return a;
    return -1;
}
