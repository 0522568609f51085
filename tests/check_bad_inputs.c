/* The bad-input table: hostile or broken files of every kind repro reads
 * from someone else — experiment configs, traces, bundle manifests,
 * receipts — each run through the CLI as a user would (`repro run`,
 * `repro diff`, `repro verify`, `repro verify-receipt`) with its expected
 * exit code and a phrase of the expected message. Truncated, garbled,
 * huge, duplicate-key, wrong-type, NaN/Inf, invalid UTF-8, very long lines
 * and path traversal, for each kind. `make asan` runs the same table under
 * the sanitizers, which is where a parser bug would show. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char out[1 << 16], err[1 << 16];

typedef struct {
    const char *kind;  /* config, trace, manifest, receipt */
    const char *label;
    const char *text;  /* the file's content, or NULL when gen makes it */
    char *(*gen)(void); /* malloc'd content (huge or long inputs) */
    int exit;
    const char *phrase; /* expected in stderr */
    int special;        /* manifest: 1 trace is a symlink out, 2 manifest is a symlink,
                           3 no manifest; receipt: 1 --pub outside, 2 --pub is a FIFO;
                           config: 4 the file is a FIFO, 5 the IDX data path is a FIFO;
                           trace: 4 the file is a FIFO */
    size_t len;         /* bytes of text when it holds NULs (0: strlen) */
} row;

/* Rows leave their trailing fields (special, len) out when zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* Bytes with NULs inside: text and length. */
#define BYTES(S) S, NULL
#define LEN(S) (sizeof S - 1)

#define Z64 "0000000000000000000000000000000000000000000000000000000000000000"
/* A well-formed manifest, with pieces swapped in per row. */
#define MF(EXP, STEPS, TRACE, EXTRA)                                                            \
    "{\"repro_bundle\":1,\"experiment\":\"" EXP "\",\"config\":\"[train]\\nsteps = 6\\n\","      \
    "\"seed\":\"0\",\"steps\":" STEPS ",\"trace\":\"" TRACE "\",\"chain\":\"" Z64 "\","          \
    "\"env\":{\"class\":\"cpu-x\"},\"env_class\":\"cpu-x\",\"commit\":\"unknown\","              \
    "\"repro_version\":\"0.1.0\"" EXTRA "}"
#define GOOD_MF MF("tiny", "6", "trace.jsonl", "")

/* A trace header that passes every check; EXTRA adds members. */
#define TH(EXTRA) TH_EXP("x", "0", EXTRA)
#define TH_AS(EXP, SEED) TH_EXP(EXP, SEED, "")
#define TH_EXP(EXP, SEED, EXTRA)                                                                   \
    "{\"repro_trace\":1,\"type\":\"header\",\"experiment\":\"" EXP "\",\"experiment_path\":\"x.ini\"," \
    "\"config\":{},\"config_digest\":\"" Z64 "\",\"numerics_digest\":\"" Z64 "\",\"seed\":\"" SEED "\"," \
    "\"seed_scheme\":\"repro-seed/v1\",\"rng\":\"philox4x32-10/v1\","                              \
    "\"tensor_hash\":\"repro-tensor/v1\",\"repro_version\":\"0.1.0\",\"compiler\":\"cc\","         \
    "\"cflags\":\"\",\"level\":\"step\",\"every\":1,\"threads\":1,\"num_workers\":0" EXTRA "}\n"
#define RESUMED(K) ",\"resumed_from\":{\"path\":\"c\",\"step\":" K ",\"chain\":\"" Z64 "\"}"
/* SHA-256 of 64 zero bytes: the chain after a step whose digest is zero,
 * continuing a zero chain. */
#define C1 "f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b"
#define STEP(N) "{\"type\":\"step\",\"step\":" N ",\"step_digest\":\"" Z64 "\",\"chain\":\"" C1 "\"}\n"
#define TRAILER(N, C) "{\"type\":\"trailer\",\"steps\":" N ",\"chain\":\"" C "\"}\n"
#define MIN_INI "[model]\ntype = mlp\n[train]\nsteps = 1\n"
/* A detailed step 1 with the tensors TS (each TT(NAME, DTYPE, L2), whose
 * digest is zero): DSTEP's digests are right for one tensor (D1: SHA-256 of
 * 32 zero bytes; DC1 the chain after it), DSTEP2's for two (C1: of 64 zero
 * bytes; DC2), so that each row is wrong in one way only. */
#define D1 "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"
#define DC1 "6e96bce3e21a7bdcddd1735dab055b838071df7dc4ae4f0e16be0a1b4cb8735c"
#define DC2 "b62c0bf36d7fee9a6ed49f7529e9fbf6ebc93268f43832b4033eef0ba335ba65"
#define TT(NAME, DTYPE, L2)                                                                     \
    "{\"name\":\"" NAME "\",\"dtype\":\"" DTYPE "\",\"shape\":[2],\"digest\":\"" Z64 "\",\"l2\":" L2 \
    ",\"sum\":0,\"max_abs\":0,\"nonfinite\":0}"
#define DSTEP_AS(SD, CH, LOSS, TS)                                                              \
    "{\"type\":\"step\",\"step\":1,\"step_digest\":\"" SD "\",\"chain\":\"" CH "\",\"epoch\":0," \
    "\"loss\":\"" LOSS "\",\"tensors\":[" TS "]}\n"
#define DSTEP(LOSS, TS) DSTEP_AS(D1, DC1, LOSS, TS) TRAILER("1", DC1)
#define DSTEP2(LOSS, TS) DSTEP_AS(C1, DC2, LOSS, TS) TRAILER("1", DC2)

/* A receipt-shaped object without a valid signature. */
#define RC(VERDICT, EXTRA) "{\"repro_receipt\": 1, \"verdict\": " VERDICT EXTRA "}\n"

static char *repeat(const char *head, char c, size_t n, const char *tail)
{
    size_t h = strlen(head), t = strlen(tail);
    char *s = malloc(h + n + t + 1);
    memcpy(s, head, h);
    memset(s + h, c, n);
    memcpy(s + h + n, tail, t + 1);
    return s;
}

static char *huge_config(void) { return repeat("[model]\nhidden = ", '1', 8 << 20, "\n"); }
static char *long_key_config(void) { return repeat("[train]\n", 'k', 100000, " = 1\n"); }
static char *huge_trace(void)
{
    return repeat("{\"repro_trace\":1,\"type\":\"header\",\"experiment\":\"", 'a', 4 << 20, "\"}\n");
}
static char *long_trace_line(void) { return repeat("", ' ', 200000, "{\n"); }
static char *huge_manifest(void) { return repeat("", ' ', (1 << 20) + 10, GOOD_MF); }
static char *long_config_manifest(void)
{
    return repeat("{\"repro_bundle\":1,\"experiment\":\"tiny\",\"config\":\"", ';', 100 << 10,
                  "\",\"seed\":\"0\",\"steps\":6,\"trace\":\"trace.jsonl\",\"chain\":\"" Z64
                  "\",\"env\":{},\"env_class\":\"cpu-x\",\"commit\":\"unknown\","
                  "\"repro_version\":\"0.1.0\"}");
}
/* A 2 MiB trace line: past the 1 MiB line limit, refused while read. */
static char *over_limit_trace_line(void) { return repeat("{\"repro_trace\":1,\"x\":\"", 'a', 2 << 20, "\"}\n"); }
static char *huge_receipt(void) { return repeat("", ' ', (1 << 20) + 10, "{}"); }
static char *long_receipt_line(void) { return repeat("{\"repro_receipt\": 1, \"verdict\": \"", 'x', 900 << 10, "\"}\n"); }

static const row rows[] = {
    /* ---- experiment configs: `repro run` ---- */
    {"config", "truncated", "[mod", NULL, 2, "syntax error", 0},
    {"config", "garbled", "\x01\x02garbage===\n", NULL, 2, "outside a section", 0},
    {"config", "huge", NULL, huge_config, 2, "line longer than", 0},
    {"config", "duplicate key", "[train]\nsteps = 1\nsteps = 2\n", NULL, 2, "duplicate key 'steps'", 0},
    {"config", "wrong type", "[train]\nsteps = many\n", NULL, 2, "'many' is not an integer", 0},
    {"config", "integer overflow", "[train]\nsteps = 99999999999999999999999\n", NULL, 2, "is not an integer", 0},
    {"config", "NaN", "[train]\nlr = nan\n", NULL, 2, "not a finite number", 0},
    {"config", "Inf", "[train]\nlr = -inf\n", NULL, 2, "not a finite number", 0},
    {"config", "invalid UTF-8", "[data]\ntrain_images = \xff\xfe.idx\n", NULL, 2, "not valid UTF-8", 0},
    {"config", "very long line", NULL, long_key_config, 2, "line longer than", 0},
    {"config", "path traversal", MIN_INI "[data]\ndataset = idx\ntrain_images = ../../../../../../etc/passwd\n"
                                 "train_labels = ../../../../../../etc/passwd\n", NULL, 2, "not an IDX file", 0},
    {"config", "empty", "", NULL, 2, "missing [model] type and [train] steps", 0},
    {"config", "comment only", "; all defaults, please\n# really\n", NULL, 2, "missing [model] type and [train] steps", 0},
    {"config", "no steps", "[model]\ntype = cnn\n", NULL, 2, "bad.ini: missing [train] steps", 0},
    {"config", "NUL in a value", BYTES("[model]\ntype = mlp\n[train]\nsteps = 10\0" "00\n"), 2, "bad.ini:4: NUL byte", 0,
     LEN("[model]\ntype = mlp\n[train]\nsteps = 10\0" "00\n")},
    {"config", "NUL in a comment", BYTES(MIN_INI "; x\0\nseed = 9\n"), 2, "bad.ini:5: NUL byte", 0, LEN(MIN_INI "; x\0\nseed = 9\n")},
    {"config", "text after a section header", "[model]\ntype = mlp\n[train] steps = 9\n", NULL, 2,
     "bad.ini:3: text after the section header [train]: 'steps = 9'", 0},
    {"config", "junk after a section header", MIN_INI "[train]junk\n", NULL, 2, "bad.ini:5: text after the section header [train]: 'junk'", 0},
    {"config", "bare CR line ends", "[model]\rtype = mlp\r[train]\rsteps = 1\r", NULL, 2,
     "bad.ini:1: carriage return without a line feed", 0},
    {"config", "CRLF line ends", "[model]\r\ntype = mlp\r\nhidden = 4\r\n[train]\r\nsteps = 1\r\n", NULL, 0, "", 0},
    {"config", "hex seed", MIN_INI "seed = 0x1F\n", NULL, 2, "bad.ini:5: seed: '0x1F' is not an unsigned 64-bit decimal", 0},
    {"config", "signed count", MIN_INI "batch_size = +8\n", NULL, 2, "bad.ini:5: batch_size: '+8' is not an integer", 0},
    {"config", "8 hidden layers (params[16] overflow)", "[model]\ntype = mlp\nhidden = 4,4,4,4,4,4,4,4\ndropout = 0.1\n"
     "[data]\ntrain_size = 64\ntest_size = 64\n[train]\nsteps = 1\n", NULL, 0, "", 0},
    {"config", "8 conv blocks (layers[32] overflow)", "[model]\ntype = cnn\nconv_channels = 1,1,1,1,1,1,1,1\npadding = 4\n"
     "dropout = 0.1\n[data]\ntrain_size = 64\ntest_size = 64\n[train]\nsteps = 1\n", NULL, 0, "", 0},
    {"config", "FIFO", MIN_INI, NULL, 2, "not a regular file (a FIFO)", 4},
    /* Terminal escapes in what an error quotes: shown as \xNN, never raw. */
    {"config", "ESC in a value", "[train]\nsteps = \x1b[2J\x1b[1;1Hreproduced\n", NULL, 2,
     "'\\x1b[2J\\x1b[1;1Hreproduced' is not an integer", 0},
    {"config", "ESC in a key", "[train]\n\x1b]0;owned\x07 = 1\n", NULL, 2, "\\x1b]0;owned\\x07", 0},
    {"config", "FIFO as IDX data", MIN_INI, NULL, 2, "fifo.idx: not a regular file (a FIFO)", 5},
    /* ---- traces: `repro diff` ---- */
    {"trace", "truncated", "{\"repro_trace\":1,\"type\":\"hea", NULL, 2, "the last line is incomplete", 0},
    {"trace", "garbled", "\x01\x02\xff garbage\n", NULL, 2, "not JSON", 0},
    {"trace", "huge", NULL, huge_trace, 2, ":1:", 0},
    {"trace", "duplicate key", "{\"repro_trace\":1,\"repro_trace\":1}\n", NULL, 2, "duplicate object key", 0},
    {"trace", "wrong type", "{\"repro_trace\":\"1\",\"type\":\"header\"}\n", NULL, 2, "must be an integer, not a string", 0},
    {"trace", "NaN", "{\"repro_trace\":1,\"type\":\"header\",\"x\":NaN}\n", NULL, 2, "invalid token near 'NaN'", 0},
    {"trace", "Inf", "{\"repro_trace\":1,\"type\":\"header\",\"x\":-Infinity}\n", NULL, 2, "not JSON", 0},
    {"trace", "invalid UTF-8", "{\"repro_trace\":1,\"type\":\"header\",\"experiment\":\"\xff\xfe\"}\n", NULL, 2, "unable to decode byte 0xff", 0},
    {"trace", "very long line", NULL, long_trace_line, 2, "not JSON", 0},
    {"trace", "path traversal", "{\"repro_trace\":1,\"type\":\"header\",\"experiment\":\"../../etc/passwd\"}\n", NULL, 2, "header: missing", 0},
    {"trace", "empty", "", NULL, 2, "empty file", 0},
    {"trace", "resume point near INT64_MAX", TH(RESUMED("9223372036854775806")) STEP("9223372036854775807")
     TRAILER("9223372036854775807", C1), NULL, 2,
     "bad.jsonl:1: header: resumed_from: \"step\" is 9223372036854775806, outside 0..9007199254740992", 0},
    {"trace", "step past 2^53", TH(RESUMED("9007199254740992")) STEP("9007199254740993")
     TRAILER("9007199254740993", C1), NULL, 2, "bad.jsonl:2: step 9007199254740993 is past the largest step number", 0},
    {"trace", "step number near INT64_MAX", TH("") STEP("9223372036854775807"), NULL, 2,
     "bad.jsonl:2: \"step\" is 9223372036854775807, outside 0..9007199254740992", 0},
    {"trace", "trailer count near INT64_MAX", TH("") TRAILER("9223372036854775807", Z64), NULL, 2,
     "bad.jsonl:2: trailer: \"steps\" is 9223372036854775807, outside", 0},
    {"trace", "resumed at the bound, no steps", TH(RESUMED("9007199254740992")) TRAILER("9007199254740992", Z64),
     NULL, 0, "", 0},
    {"trace", "line over the limit", NULL, over_limit_trace_line, 2, "bad.jsonl:1: line longer than the 1024 KiB limit", 0},
    {"trace", "FIFO", "{}\n", NULL, 2, "bad.jsonl: not a regular file (a FIFO)", 4},
    /* Looser than docs/FORMATS.md: each was read (issue 33, item 6). */
    {"trace", "detailed step (control)", TH("") DSTEP("0x3f800000", TT("w", "f32", "1")),
     NULL, 0, "", 0},
    {"trace", "loss bits with a sign", TH("") DSTEP("0x+0000001", TT("w", "f32", "1")), NULL, 2,
     "bad.jsonl:2: \"loss\" must be float32 bits as \"0x\" and 8 hex digits, not \"0x+0000001\"", 0},
    {"trace", "loss bits with a blank", TH("") DSTEP("0x 0000001", TT("w", "f32", "1")), NULL, 2,
     "bad.jsonl:2: \"loss\" must be float32 bits", 0},
    {"trace", "dtype f128", TH("") DSTEP("0x3f800000", TT("w", "f128", "1")), NULL, 2,
     "bad.jsonl:2: tensors[0] (\"w\"): \"dtype\" is \"f128\", expected one of", 0},
    {"trace", "two tensors (control)", TH("") DSTEP2("0x3f800000", TT("w", "f32", "1") "," TT("v", "f32", "2")),
     NULL, 0, "", 0},
    {"trace", "duplicate tensor names", TH("") DSTEP2("0x3f800000", TT("w", "f32", "1") "," TT("w", "f32", "2")),
     NULL, 2, "bad.jsonl:2: tensors[0] and tensors[1] are both named \"w\"", 0},
    {"trace", "null statistic", TH("") DSTEP("0x3f800000", TT("w", "f32", "null")), NULL, 2,
     "bad.jsonl:2: tensors[0] (\"w\"): \"l2\" must be a number, not null", 0},
    {"trace", "negative L2", TH("") DSTEP("0x3f800000", TT("w", "f32", "-1")), NULL, 2,
     "bad.jsonl:2: tensors[0] (\"w\"): \"l2\" is -1: it cannot be negative", 0},
    {"trace", "ESC in the experiment (a fake verdict line)",
     TH_AS("\\u001b[2J\\u001b[1;1Hreproduced", "0") STEP("1") TRAILER("1", C1), NULL, 0, "", 0},
    {"trace", "ESC in the seed", TH_AS("x", "\\u001b[31m0") STEP("1") TRAILER("1", C1), NULL, 0, "", 0},
    {"trace", "ESC in a quoted member", "{\"repro_trace\":1,\"type\":\"head\\u001b[2Jer\"}\n", NULL, 2,
     "head\\x1b[2Jer", 0},
    /* ---- bundle manifests: `repro verify` ---- */
    {"manifest", "truncated", "{\"repro_bundle\":1,\"experiment\":\"ti", NULL, 2, "not valid JSON", 0},
    {"manifest", "garbled", "\x01\x02\xff{{{", NULL, 2, "not valid JSON", 0},
    {"manifest", "huge", NULL, huge_manifest, 2, "too large", 0},
    {"manifest", "duplicate key", MF("tiny", "6,\"steps\":6", "trace.jsonl", ""), NULL, 2, "duplicate object key", 0},
    {"manifest", "wrong type", MF("tiny", "\"6\"", "trace.jsonl", ""), NULL, 2, "\"steps\" must be an integer, not a string", 0},
    {"manifest", "real for integer", MF("tiny", "6.0", "trace.jsonl", ""), NULL, 2, "not a real number", 0},
    {"manifest", "out of range", MF("tiny", "-6", "trace.jsonl", ""), NULL, 2, "\"steps\" must be 1 to", 0},
    {"manifest", "integer overflow", MF("tiny", "99999999999999999999", "trace.jsonl", ""), NULL, 2, "not valid JSON", 0},
    {"manifest", "NaN", MF("tiny", "NaN", "trace.jsonl", ""), NULL, 2, "not valid JSON", 0},
    {"manifest", "Inf", MF("tiny", "Infinity", "trace.jsonl", ""), NULL, 2, "not valid JSON", 0},
    {"manifest", "invalid UTF-8", MF("ti\xff\xfe", "6", "trace.jsonl", ""), NULL, 2, "unable to decode byte 0xff", 0},
    {"manifest", "very long line", NULL, long_config_manifest, 2, "\"config\" must be 1 to", 0},
    {"manifest", "unknown key", MF("tiny", "6", "trace.jsonl", ",\"run_this\":\"rm -rf /\""), NULL, 2, "unknown key \"run_this\"", 0},
    {"manifest", "not an object", "[1,2,3]", NULL, 2, "must be a JSON object", 0},
    {"manifest", "other version", "{\"repro_bundle\":2}", NULL, 2, "unsupported \"repro_bundle\" version", 0},
    {"manifest", "seed overflow", "{\"repro_bundle\":1,\"experiment\":\"tiny\",\"config\":\"x\",\"seed\":\"18446744073709551616\"}", NULL, 2, "decimal uint64", 0},
    {"manifest", "bad chain", "{\"repro_bundle\":1,\"experiment\":\"tiny\",\"config\":\"x\",\"seed\":\"0\",\"steps\":1,\"trace\":\"t\",\"chain\":\"" "ABCDEF" Z64 "\"}", NULL, 2, "\"chain\" must be 64 to 64 bytes", 0},
    {"manifest", "shell in a name", MF("tiny;rm -rf ~", "6", "trace.jsonl", ""), NULL, 2, "\"experiment\" has a character not allowed", 0},
    {"manifest", "ESC in a name", MF("tiny\\u001b[2J", "6", "trace.jsonl", ""), NULL, 2, "\"experiment\" has a character not allowed", 0},
    {"manifest", "ESC in an unknown key", MF("tiny", "6", "trace.jsonl", ",\"\\u001b[2Jx\":1"), NULL, 2, "unknown key \"\\x1b[2Jx\"", 0},
    {"manifest", "path traversal", MF("tiny", "6", "../../../etc/passwd", ""), NULL, 2, "no empty, \".\" or \"..\" components", 0},
    {"manifest", "absolute path", MF("tiny", "6", "/etc/passwd", ""), NULL, 2, "not absolute", 0},
    {"manifest", "symlink out of the bundle", GOOD_MF, NULL, 2, "resolves outside the bundle", 1},
    {"manifest", "manifest is a symlink", GOOD_MF, NULL, 2, "must not be a symbolic link", 2},
    {"manifest", "no manifest", GOOD_MF, NULL, 2, "cannot open", 3},
    {"manifest", "bad signature form", MF("tiny", "6", "trace.jsonl", ",\"signature\":{\"alg\":\"rsa\"}"), NULL, 2, "must be \"ed25519\"", 0},
    {"manifest", "forged signature", MF("tiny", "6", "trace.jsonl",
        ",\"signature\":{\"alg\":\"ed25519\",\"public_key\":\"-----BEGIN PUBLIC KEY-----\\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\\n-----END PUBLIC KEY-----\\n\","
        "\"key_id\":\"" Z64 "\",\"value\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\"}"),
        NULL, 2, "\"key_id\" is not the key's id", 0},
    /* ---- receipts: `repro verify-receipt` ---- */
    {"receipt", "truncated", "{\"repro_receipt\": 1, \"verd", NULL, 2, "not valid JSON", 0},
    {"receipt", "garbled", "\x7f\x45\x4c\x46\x02\x01", NULL, 2, "not valid JSON", 0},
    {"receipt", "huge", NULL, huge_receipt, 2, "too large", 0},
    {"receipt", "duplicate key", RC("\"reproduced\"", ", \"verdict\": \"diverged\""), NULL, 2, "duplicate object key", 0},
    {"receipt", "wrong type", RC("1", ""), NULL, 2, "\"verdict\" must be one of", 0},
    {"receipt", "NaN", RC("NaN", ""), NULL, 2, "not valid JSON", 0},
    {"receipt", "Inf", RC("\"reproduced\"", ", \"step\": Infinity"), NULL, 2, "not valid JSON", 0},
    {"receipt", "invalid UTF-8", RC("\"reproduced\xff\"", ""), NULL, 2, "unable to decode byte 0xff", 0},
    {"receipt", "very long line", NULL, long_receipt_line, 2, "\"verdict\" must be one of", 0},
    {"receipt", "not a receipt", "{\"repro_trace\": 1}", NULL, 2, "not a repro receipt", 0},
    {"receipt", "unsigned", RC("\"reproduced\"", ""), NULL, 1, "not signed", 0},
    {"receipt", "signature not base64", RC("\"reproduced\"", ", \"signature\": {\"alg\": \"ed25519\", \"public_key\": \"x\", \"key_id\": \"x\", \"value\": \"!!\"}"), NULL, 2, "not base64", 0},
    {"receipt", "path traversal (key)", RC("\"reproduced\"", ""), NULL, 2, "not a PEM public key", 1},
    {"receipt", "FIFO as --pub", RC("\"reproduced\"", ""), NULL, 2, "fifo.pub: not a regular file (a FIFO)", 2},
};

START_TEST(test_bad_input)
{
    const row *r = &rows[_i];
    char path[512], dir[512], args[2048];
    char *gen = r->gen ? r->gen() : NULL;
    const char *text = gen ? gen : r->text;
    const char *name = !strcmp(r->kind, "config")     ? "bad.ini"
                       : !strcmp(r->kind, "trace")    ? "bad.jsonl"
                       : !strcmp(r->kind, "manifest") ? "manifest.json"
                                                      : "receipt.json";
    tu_write_temp(path, sizeof path, name, r->len ? "" : text);
    free(gen);
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(path, '/') - path), path);
    if (r->len) { /* bytes with NULs inside */
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(r->text, 1, r->len, f), r->len);
        ck_assert_int_eq(fclose(f), 0);
    }
    if (r->special == 4 && strcmp(r->kind, "manifest") != 0) { /* the file itself is a FIFO */
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(mkfifo(path, 0600), 0);
    }
    if (r->special == 5) { /* a config whose IDX data path is a FIFO */
        char fifo[600];
        snprintf(fifo, sizeof fifo, "%s/fifo.idx", dir);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        FILE *f = fopen(path, "a");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "[data]\ndataset = idx\ntrain_images = %s\ntrain_labels = %s\n", fifo, fifo);
        ck_assert_int_eq(fclose(f), 0);
    }

    if (!strcmp(r->kind, "config")) {
        snprintf(args, sizeof args, "run %s --steps 1 --no-trace -q", path);
    } else if (!strcmp(r->kind, "trace")) {
        snprintf(args, sizeof args, "diff %s %s", path, path);
    } else if (!strcmp(r->kind, "manifest")) {
        char t[600];
        snprintf(t, sizeof t, "%s/trace.jsonl", dir);
        if (r->special == 1) /* the claimed trace is a link to a host file */
            ck_assert_int_eq(symlink("/etc/passwd", t), 0);
        else { /* a file for the manifest to name (its content is checked later) */
            FILE *f = fopen(t, "w");
            ck_assert_ptr_nonnull(f);
            fputs("{}\n", f);
            ck_assert_int_eq(fclose(f), 0);
        }
        if (r->special == 2) { /* the manifest is a link to a file elsewhere */
            char real[600];
            snprintf(real, sizeof real, "%s.real", dir);
            ck_assert_int_eq(rename(path, real), 0);
            ck_assert_int_eq(symlink(real, path), 0);
        }
        if (r->special == 3)
            ck_assert_int_eq(unlink(path), 0);
        snprintf(args, sizeof args, "verify %s", dir);
    } else {
        char key[600];
        snprintf(key, sizeof key, "%s/host.pem", dir);
        ck_assert_int_eq(tu_run_repro((snprintf(args, sizeof args, "keygen -o %s", key), args),
                                      out, sizeof out, err, sizeof err),
                         0);
        if (r->special == 1)
            snprintf(args, sizeof args, "verify-receipt %s --pub %s/../../../../../etc/passwd",
                     path, dir);
        else if (r->special == 2) { /* a FIFO as the public key: it hung the open */
            char fifo[600];
            snprintf(fifo, sizeof fifo, "%s/fifo.pub", dir);
            ck_assert_int_eq(mkfifo(fifo, 0600), 0);
            snprintf(args, sizeof args, "verify-receipt %s --pub %s", path, fifo);
        }
        else
            snprintf(args, sizeof args, "verify-receipt %s --pub %s.pub", path, key);
    }
    int rc = tu_run_repro(args, out, sizeof out, err, sizeof err);
    ck_assert_msg(rc == r->exit, "%s / %s: exit %d, expected %d; stderr: %.400s", r->kind,
                  r->label, rc, r->exit, err);
    ck_assert_msg(strstr(err, r->phrase) != NULL, "%s / %s: expected '%s' in stderr: %.400s",
                  r->kind, r->label, r->phrase, err);
    /* No terminal escape reaches the terminal, whatever the input. */
    ck_assert_msg(!strchr(out, 0x1b) && !strchr(err, 0x1b), "%s / %s: ESC in the output: %.400s%.400s",
                  r->kind, r->label, out, err);
    /* No sanitizer report, whatever the exit code. */
    ck_assert_msg(!strstr(err, "Sanitizer"), "%s / %s: %.2000s", r->kind, r->label, err);
}
END_TEST

Suite *bad_inputs_suite(void)
{
    Suite *s = suite_create("bad_inputs");
    TCase *tc = tcase_create("table");
    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_bad_input, 0, (int)(sizeof rows / sizeof rows[0]));
    suite_add_tcase(s, tc);
    return s;
}
