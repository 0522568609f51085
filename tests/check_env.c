/* The environment fingerprint and class: filled, a safe and stable file
 * name, sensitive to exactly the class fields, printed by `repro env`, and
 * carried in every trace header. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/env.h"
#include "testutil.h"
#include "record/trace.h"
#include "util/error.h"

static char out[65536], err[65536];

static void assert_filename_safe(const char *id)
{
    ck_assert_msg(id[0] != '\0', "empty class id");
    ck_assert_msg(id[0] != '.' && id[0] != '-', "class id '%s' starts with . or -", id);
    ck_assert_uint_lt(strlen(id), REPRO_ENV_CLASS_MAX);
    for (const char *c = id; *c; c++)
        ck_assert_msg((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                          (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-',
                      "class id '%s' has '%c'", id, *c);
}

static const char *class_of(const repro_env *e)
{
    static char id[REPRO_ENV_CLASS_MAX];
    ck_assert_int_eq(repro_env_class_id(e, id, sizeof id), 0);
    return id;
}

START_TEST(test_fields_are_filled)
{
    repro_env e;
    ck_assert_int_eq(repro_env_get(&e), 0);
    ck_assert_str_eq(e.backend, "cpu");
    const char *must[] = {e.arch, e.machine, e.cpu_model, e.cpu_flags, e.isa_path,
                          e.compiler, e.compiler_version, e.cflags, e.repro_version,
                          e.trace_format, e.seed_scheme, e.rng, e.tensor_hash, e.openssl,
                          e.libgit2, e.jansson, e.inih, e.libc, e.os_kernel, e.class_id};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        ck_assert_msg(must[i][0] != '\0', "field %zu is empty", i);
    /* GPU fields belong to the CUDA backend. */
    ck_assert_str_eq(e.gpu_name, "");
    ck_assert_ptr_nonnull(strstr(e.cflags, "-ffp-contract=off"));
    ck_assert_ptr_nonnull(strstr(e.isa_path, "no FMA contraction"));
#if defined(__x86_64__)
    ck_assert_str_eq(e.arch, "x86_64");
    ck_assert_msg(strncmp(e.class_id, "cpu-x86_64-", 11) == 0, "class %s", e.class_id);
#endif
    /* The id is backend-arch-12 hex digits. */
    size_t n = strlen(e.class_id);
    ck_assert_uint_gt(n, 13);
    ck_assert_int_eq(e.class_id[n - 13], '-');
    ck_assert_uint_eq(strspn(e.class_id + n - 12, "0123456789abcdef"), 12);
}
END_TEST

START_TEST(test_class_id_safe_and_stable)
{
    repro_env a, b;
    ck_assert_int_eq(repro_env_get(&a), 0);
    ck_assert_int_eq(repro_env_get(&b), 0);
    assert_filename_safe(a.class_id);
    ck_assert_str_eq(a.class_id, b.class_id);
    ck_assert_str_eq(class_of(&a), a.class_id);

    /* Unsafe characters in the clear part become '_', and the id stays safe. */
    repro_env c = a;
    snprintf(c.arch, sizeof c.arch, "../x 86/\x01");
    assert_filename_safe(class_of(&c));
    ck_assert_ptr_null(strchr(class_of(&c), '/'));
    /* Sanitizing does not merge classes: the digest sees the raw value. */
    repro_env d = a;
    snprintf(d.arch, sizeof d.arch, ".._x_86__"); /* = c.arch sanitized */
    char idc[REPRO_ENV_CLASS_MAX];
    snprintf(idc, sizeof idc, "%s", class_of(&c));
    ck_assert_str_ne(idc, class_of(&d));
    /* Longest fields still fit. */
    memset(c.backend, 'b', sizeof c.backend - 1);
    memset(c.arch, 'a', sizeof c.arch - 1);
    assert_filename_safe(class_of(&c));
}
END_TEST

START_TEST(test_class_changes_with_each_class_field)
{
    repro_env base;
    ck_assert_int_eq(repro_env_get(&base), 0);
    const char *key, *val;
    int cls, nclass = 0;
    for (int i = 0; (key = repro_env_field(&base, i, &val, &cls)); i++) {
        repro_env e = base;
        char *field = (char *)&e + (val - (const char *)&base);
        /* Change the value (or, for an empty GPU field, set one). */
        if (field[0])
            field[0] = field[0] == 'Z' ? 'Y' : 'Z';
        else
            strcpy(field, "9");
        const char *id = class_of(&e);
        assert_filename_safe(id);
        if (cls) {
            nclass++;
            ck_assert_msg(strcmp(id, base.class_id) != 0, "class ignores %s", key);
        } else {
            ck_assert_msg(strcmp(id, base.class_id) == 0, "class depends on %s", key);
        }
    }
    /* backend, arch, seed scheme, RNG and the 6 GPU fields (the tensor hash
     * left the class in repro-env-class/v2). */
    ck_assert_int_eq(nclass, 10);

    /* The non-class fields that differ between machines of one class. */
    repro_env e = base;
    snprintf(e.cflags, sizeof e.cflags, "-O3 -march=x86-64-v3 -ffp-contract=off");
    snprintf(e.compiler_version, sizeof e.compiler_version, "clang version 17.0.0");
    snprintf(e.cpu_model, sizeof e.cpu_model, "Some Other CPU @ 5 GHz");
    snprintf(e.machine, sizeof e.machine, "x86_64-other");
    snprintf(e.repro_version, sizeof e.repro_version, "9.9.9");
    ck_assert_str_eq(class_of(&e), base.class_id);
}
END_TEST

/* A golden blessed before v2 is filed under the v1 id: the same class
 * fields plus tensor_hash = "repro-tensor/v1", under the v1 prefix. On
 * x86_64 the cpu class is made of constants, so its v1 id is the name of
 * the goldens blessed then (golden/mlp/cpu-x86_64-73a3e9ca5627.jsonl);
 * the v1 id never depends on this build's default digest function, and
 * the header's "env" gives back the same ids. */
START_TEST(test_v1_class_id_finds_old_goldens)
{
    repro_env e, f;
    char v1[REPRO_ENV_CLASS_MAX], v1f[REPRO_ENV_CLASS_MAX];
    ck_assert_int_eq(repro_env_get(&e), 0);
    ck_assert_int_eq(repro_env_class_id_v1(&e, v1, sizeof v1), 0);
    ck_assert_str_ne(v1, e.class_id);
#if defined(__x86_64__)
    ck_assert_str_eq(v1, "cpu-x86_64-73a3e9ca5627");
#endif
    f = e;
    snprintf(f.tensor_hash, sizeof f.tensor_hash, "anything");
    ck_assert_int_eq(repro_env_class_id_v1(&f, v1f, sizeof v1f), 0);
    ck_assert_str_eq(v1, v1f);
    json_t *o = repro_env_to_json(&e);
    repro_env back;
    ck_assert_int_eq(repro_env_from_json(o, &back), 0);
    ck_assert_str_eq(back.class_id, e.class_id);
    ck_assert_int_eq(repro_env_class_id_v1(&back, v1f, sizeof v1f), 0);
    ck_assert_str_eq(v1, v1f);
    json_decref(o);
    ck_assert_int_eq(repro_env_from_json(NULL, &back), -1);
    repro_error_clear();
}
END_TEST

START_TEST(test_json_has_everything)
{
    repro_env e;
    ck_assert_int_eq(repro_env_get(&e), 0);
    json_t *o = repro_env_to_json(&e);
    ck_assert_str_eq(json_string_value(json_object_get(o, "class")), e.class_id);
    ck_assert_str_eq(json_string_value(json_object_get(o, "compiler_version")),
                     e.compiler_version);
    json_t *cf = json_object_get(o, "class_fields");
    ck_assert(json_is_object(cf));
    ck_assert_int_eq(json_object_size(cf), 4); /* no GPU fields on cpu */
    ck_assert_str_eq(json_string_value(json_object_get(cf, "backend")), "cpu");
    ck_assert_str_eq(json_string_value(json_object_get(cf, "arch")), e.arch);
    ck_assert_str_eq(json_string_value(json_object_get(cf, "seed_scheme")), e.seed_scheme);
    ck_assert_str_eq(json_string_value(json_object_get(cf, "rng")), e.rng);
    /* the digest function is the trace's, not the class's (env.h) */
    ck_assert_ptr_null(json_object_get(cf, "tensor_hash"));
    ck_assert_str_eq(json_string_value(json_object_get(o, "tensor_hash")), e.tensor_hash);
    ck_assert_ptr_null(json_object_get(o, "gpu_name"));
    ck_assert_ptr_null(json_object_get(o, "hostname"));
    json_decref(o);
}
END_TEST

START_TEST(test_repro_env_command)
{
    repro_env e;
    ck_assert_int_eq(repro_env_get(&e), 0);
    ck_assert_int_eq(tu_run_repro("env", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "backend:"));
    ck_assert_ptr_nonnull(strstr(out, "cflags:"));
    char want[128];
    snprintf(want, sizeof want, "\nclass: ");
    char *cls = strstr(out, want);
    ck_assert_msg(cls != NULL, "stdout: %s", out);
    /* The binary and the test library are built alike: the same class. */
    ck_assert_ptr_nonnull(strstr(cls, e.class_id));
    ck_assert_ptr_null(strstr(cls, "\n  tensor_hash:"));
    ck_assert_ptr_nonnull(strstr(out, "\ntensor_hash:"));

    ck_assert_int_eq(tu_run_repro("env --json", out, sizeof out, err, sizeof err), 0);
    json_error_t je;
    json_t *o = json_loads(out, 0, &je);
    ck_assert_msg(o != NULL, "not JSON: %s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(o, "class")), e.class_id);
    ck_assert(json_is_object(json_object_get(o, "class_fields")));
    json_decref(o);

    ck_assert_int_eq(tu_run_repro("env --help", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: repro env"));
    ck_assert_int_eq(tu_run_repro("help env", out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: repro env"));
    ck_assert_int_eq(tu_run_repro("env --bogus", out, sizeof out, err, sizeof err), 2);
    ck_assert_ptr_nonnull(strstr(err, "unknown option '--bogus'"));
    ck_assert_int_eq(tu_run_repro("env extra", out, sizeof out, err, sizeof err), 2);
}
END_TEST

/* Rewrites the header of the trace at `path` with `edit` applied. */
static void edit_header(const char *path, void (*edit)(json_t *h))
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    char *nl = strchr(buf, '\n');
    ck_assert_ptr_nonnull(nl);
    json_error_t je;
    json_t *h = json_loadb(buf, (size_t)(nl - buf), 0, &je);
    ck_assert_ptr_nonnull(h);
    edit(h);
    char *line = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s%s", line, nl);
    fclose(f);
    free(line);
}

static void drop_env(json_t *h)
{
    json_object_del(h, "env");
    json_object_del(h, "env_class");
}

static void bad_env_class(json_t *h)
{
    json_object_set_new(h, "env_class", json_integer(7));
}

START_TEST(test_trace_header_carries_class)
{
    repro_env e;
    ck_assert_int_eq(repro_env_get(&e), 0);
    char dir[TU_TMP_LEN], path[256], args[512];
    tu_tmp_template(dir, sizeof dir, "env");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.jsonl", dir);
    snprintf(args, sizeof args, "run experiments/mlp.ini --steps 2 -q -o %s", path);
    ck_assert_msg(tu_run_repro(args, out, sizeof out, err, sizeof err) == 0, "stderr: %s", err);

    repro_trace t;
    ck_assert_msg(repro_trace_read(&t, path) == 0, "cannot read %s", path);
    ck_assert_str_eq(t.env_class, e.class_id);
    json_t *env = json_object_get((json_t *)t.header_json, "env");
    ck_assert(json_is_object(env));
    ck_assert_str_eq(json_string_value(json_object_get(env, "class")), e.class_id);
    ck_assert_str_eq(json_string_value(json_object_get(env, "rng")), e.rng);
    repro_trace_release(&t);

    /* Older traces have no class: read, with env_class empty. */
    edit_header(path, drop_env);
    ck_assert_int_eq(repro_trace_read(&t, path), 0);
    ck_assert_str_eq(t.env_class, "");
    repro_trace_release(&t);
    /* A mistyped one is an input error. */
    edit_header(path, bad_env_class);
    ck_assert_int_eq(repro_trace_read(&t, path), -1);
    repro_trace_release(&t);

    remove(path);
    rmdir(dir);
}
END_TEST

Suite *env_suite(void)
{
    Suite *s = suite_create("env");
    TCase *tc = tcase_create("fingerprint");
    tcase_add_test(tc, test_fields_are_filled);
    tcase_add_test(tc, test_class_id_safe_and_stable);
    tcase_add_test(tc, test_class_changes_with_each_class_field);
    tcase_add_test(tc, test_json_has_everything);
    tcase_add_test(tc, test_v1_class_id_finds_old_goldens);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_repro_env_command);
    tcase_add_test(tc, test_trace_header_carries_class);
    suite_add_tcase(s, tc);
    return s;
}
