/* The memory estimate from a config alone (core/memory.h), which `repro
 * verify` refuses submissions by: for the networks repro builds, it is
 * exactly what the model allocates (each arena; activations and
 * workspaces as the accounting counts them at fp32, as allocated under
 * bf16), and for configs no host could hold it is computed without
 * allocating anything and saturates instead of wrapping. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "core/memory.h"
#include "core/model.h"
#include "testutil.h"
#include "util/error.h"

static void load(repro_config *cfg, const char *ini)
{
    char p[512];
    tu_write_temp(p, sizeof p, "m.ini", ini);
    ck_assert_msg(repro_config_load(cfg, p) == 0 && repro_config_validate(cfg) == 0, "%s",
                  repro_error_message());
}

static const char *const nets[] = {
    "[model]\ntype = mlp\n[train]\nsteps = 1\n",
    "[model]\ntype = mlp\nhidden = 300,7,33\ndropout = 0.2\n[train]\nsteps = 1\nbatch_size = 17\n",
    "[model]\ntype = cnn\n[train]\nsteps = 1\noptimizer = adamw\n",
    "[model]\ntype = cnn\nconv_channels = 5,3,2\npadding = 2\ndropout = 0.1\n[train]\nsteps = 1\n",
    "[model]\ntype = cnn\nkernel_size = 5\n[train]\nsteps = 1\nprecision = bf16\n"
    "accumulation_steps = 2\noptimizer = adamw\n",
    "[model]\ntype = mlp\n[train]\nsteps = 1\nprecision = fp16\naccumulation_steps = 3\n",
};

START_TEST(test_estimate_is_what_the_model_allocates)
{
    repro_config cfg;
    load(&cfg, nets[_i]);
    repro_memory_estimate e;
    repro_memory_estimate_config(&cfg, &e);
    repro_model m;
    ck_assert_int_eq(repro_model_init(&m, &cfg, cfg.train_batch_size, &repro_backend_cpu), 0);
    ck_assert_uint_eq(e.params, m.arena_bytes[REPRO_ARENA_PARAMS]);
    ck_assert_uint_eq(e.grads, m.arena_bytes[REPRO_ARENA_GRADS]);
    ck_assert_uint_eq(e.optimizer, m.arena_bytes[REPRO_ARENA_OPTIMIZER]);
    ck_assert_uint_eq(e.working_weights, m.arena_bytes[REPRO_ARENA_WORK]);
    /* The accounting counts bf16/fp16 buffers at 2 bytes; the model
     * allocates 4 (the emulation keeps floats): scale back. */
    repro_memory acc;
    repro_memory_account(&m, cfg.train_zero_grad, &acc);
    if (acc.elem_bytes == 2) {
        size_t masks = 0, ws_conv = 0;
        for (int i = 0; i < m.nlayers; i++) {
            const repro_layer *l = &m.layers[i];
            size_t n = (size_t)m.capacity * (size_t)l->out_c * l->out_h * l->out_w;
            masks += l->kind == REPRO_LAYER_MAXPOOL ? 4 * n : l->kind == REPRO_LAYER_DROPOUT ? n : 0;
            if (l->kind == REPRO_LAYER_CONV)
                ws_conv += repro_model_conv_workspace(&m, l);
        }
        acc.activations = 2 * (acc.activations - masks) + masks;
        acc.activation_grads *= 2;
        acc.workspace = 2 * (acc.workspace - ws_conv) + ws_conv;
    }
    ck_assert_uint_eq(e.activations, acc.activations + acc.activation_grads);
    ck_assert_uint_eq(e.workspace, acc.workspace);
    ck_assert_uint_gt(e.loader, 0);
    ck_assert_uint_eq(e.dataset, (uint64_t)(cfg.data_train_size + cfg.data_test_size) * 785);
    ck_assert_uint_eq(e.total, e.params + e.grads + e.optimizer + e.working_weights +
                                   e.activations + e.workspace + e.loader + e.dataset + e.other);
    repro_model_release(&m);
}
END_TEST

/* Configs the strict reader accepts and no host could run: estimated in
 * microseconds, without a byte of it allocated. */
START_TEST(test_estimate_of_huge_configs_allocates_nothing)
{
    repro_config cfg;
    repro_memory_estimate e;
    load(&cfg, "[model]\ntype = mlp\nhidden = 65536,65536\n[train]\nsteps = 1\n");
    repro_memory_estimate_config(&cfg, &e);
    ck_assert_uint_gt(e.params, 16ull << 30); /* 65536^2 floats */
    ck_assert_uint_gt(e.total, 48ull << 30);

    load(&cfg, "[model]\ntype = mlp\nhidden = 16\n[data]\ntrain_size = 65536\nnum_workers = 64\n"
               "prefetch = 64\n[train]\nsteps = 1\nbatch_size = 65536\n");
    repro_memory_estimate_config(&cfg, &e);
    ck_assert_uint_gt(e.loader, 780ull << 30); /* 4096 slots of 65536 samples: 786 GiB */

    /* Every dimension at its largest: far past 2^64 in places; the sums
     * saturate, so the total is never a small wrapped number. */
    load(&cfg, "[model]\ntype = cnn\nconv_channels = 1024,1024,1024,1024,1024,1024,1024,1024\n"
               "kernel_size = 1\npadding = 4\n[data]\ntrain_size = 1000000\ntest_size = 1000000\n"
               "num_workers = 64\nprefetch = 64\n[train]\nsteps = 1\nbatch_size = 65536\n"
               "optimizer = adamw\nprecision = bf16\naccumulation_steps = 64\n");
    repro_memory_estimate_config(&cfg, &e);
    ck_assert_uint_ge(e.total, e.activations);
    ck_assert_uint_ge(e.total, e.loader);
    ck_assert_uint_gt(e.total, 1ull << 40);
}
END_TEST

Suite *memory_suite(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("estimate");
    tcase_add_loop_test(tc, test_estimate_is_what_the_model_allocates, 0,
                        (int)(sizeof nets / sizeof nets[0]));
    tcase_add_test(tc, test_estimate_of_huge_configs_allocates_nothing);
    suite_add_tcase(s, tc);
    return s;
}
