/* Model files: a saved model comes back bit for bit; every kind of bad file
 * is refused with a message naming it; saves are atomic; a model and its
 * optimizer state from different saves are caught.
 *
 * `test_checkpoint --write-models DIR` instead writes models and raw dumps of
 * their numbers for tests/e2e_checkpoint.sh to compare numpy's reading with. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archs.h"
#include "check.h"
#include "storylm/checkpoint.h"
#include "storylm/fileio.h"
#include "storylm/vec.h"

/* ---- test material ----------------------------------------------------- */

static uint64_t next_random(uint64_t *state) { /* slm_splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Every finite bit pattern, denormals and negative zero included (a pattern
 * of NaN or infinity gets its exponent's top bit cleared: the loader refuses
 * those, see test_nonfinite). */
static void fill_any_bits(float *x, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)next_random(&seed);
        if ((u & 0x7f800000u) == 0x7f800000u) u &= ~0x40000000u;
        memcpy(&x[i], &u, 4);
    }
}

/* Ordinary weights in [-1, 1), with a negative zero and a denormal. */
static void fill_weights(float *x, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) x[i] = (float)((double)(next_random(&seed) >> 11) / 4503599627370496.0 - 1.0);
    if (n > 2) {
        x[0] = -0.0f;
        x[1] = 1e-40f;
    }
}

/* A made-up vocabulary of n lines with characters JSON must escape. */
static char *make_vocab(int n) {
    static const char *const first[] = {"[UNK]", "[EOS]", "\"", "\\", "\xc3\xbc", "##\t", "{}", "\x7f"};
    ByteVec v = {0};
    for (int i = 0; i < n; i++) {
        char line[32];
        if (i < 8)
            snprintf(line, sizeof line, "%s\n", first[i]);
        else
            snprintf(line, sizeof line, "w%d\n", i);
        if (slm_bytevec_append(&v, line, strlen(line), NULL)) abort();
    }
    return v.data;
}

static void make_model(Model *m, const Architecture *arch, uint64_t seed, int any_bits) {
    ModelConfig c = slm_model_config_default(arch, 2000);
    if (slm_model_init(m, &c, NULL)) abort();
    if (any_bits)
        fill_any_bits(m->params, m->n_params, seed);
    else
        fill_weights(m->params, m->n_params, seed);
}

static void make_meta(Metadata *md) {
    *md = (Metadata){0};
    slm_metadata_set(md, "steps", "1234", NULL);
    slm_metadata_set(md, "seed", "42", NULL);
    slm_metadata_set(md, "data", "stories \"one\"\n\\two \xc3\xa9.txt", NULL);
    slm_metadata_set(md, "test_loss", "3.14159", NULL);
}

static const char *tmp_path(const char *name) {
    static char buf[8][1024];
    static int which;
    char *p = buf[which++ % 8];
    snprintf(p, sizeof buf[0], "%s/checkpoint_%s", check_tmpdir(), name);
    return p;
}

static char *slurp(const char *path, size_t *len) {
    char *data;
    Error e;
    if (slm_file_read_all(path, 0, &data, len, &e)) {
        fprintf(stderr, "cannot read %s: %s\n", path, e.message);
        abort();
    }
    return data;
}

static void spit(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f)) abort();
}

static uint64_t le64(const unsigned char *b) {
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = (x << 8) | b[i];
    return x;
}

static void put_le64(unsigned char *b, uint64_t x) {
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(x >> (8 * i));
}

/* ---- round trips ------------------------------------------------------- */

static void test_round_trip(const Architecture *arch, size_t want_params) {
    const char *path = tmp_path(arch == &slm_attention_arch ? "rt_attention.safetensors" : "rt_window8.safetensors");
    Model m, back;
    Metadata meta, meta_back;
    char *vocab = make_vocab(2000), *vocab_back;
    Error e = {0};
    make_model(&m, arch, 7 + (uint64_t)(arch == &slm_window8_arch), 1);
    make_meta(&meta);
    CHECK(m.n_params == want_params);
    CHECK(slm_checkpoint_save_model(path, &m, vocab, &meta, &e) == 0);
    CHECK(slm_checkpoint_load_model(path, &back, &vocab_back, &meta_back, &e) == 0);
    CHECK(back.n_params == want_params);
    CHECK(back.n_params == m.n_params && memcmp(back.params, m.params, m.n_params * 4) == 0);
    CHECK(memcmp(&back.cfg, &m.cfg, sizeof m.cfg) == 0);
    CHECK(vocab_back && strcmp(vocab_back, vocab) == 0);
    CHECK(meta_back.count == meta.count);
    for (int i = 0; i < meta.count; i++) {
        const char *v = slm_metadata_get(&meta_back, meta.items[i].key);
        CHECK(v && strcmp(v, meta.items[i].value) == 0);
    }
    /* the layout on disk: 8-byte length, '{', data 8-aligned, the data exactly the parameters */
    size_t len;
    unsigned char *bytes = (unsigned char *)slurp(path, &len);
    uint64_t n = le64(bytes);
    CHECK(bytes[8] == '{');
    CHECK((8 + n) % 8 == 0);
    CHECK(len == 8 + n + 4 * want_params);
    free(bytes);
    free(vocab);
    free(vocab_back);
    slm_metadata_free(&meta);
    slm_metadata_free(&meta_back);
    slm_model_free(&m);
    slm_model_free(&back);
}

/* ---- refusals ---------------------------------------------------------- */

/* Loading path must fail, name the file, contain `says`, and leave nothing. */
static void expect_refused(const char *path, const char *says, const char *label, int line) {
    Model m;
    char *vocab = (char *)"not touched";
    Metadata meta;
    Error e = {0};
    int rc = slm_checkpoint_load_model(path, &m, &vocab, &meta, &e);
    int ok = rc == -1 && strstr(e.message, path) && strstr(e.message, says) && !m.params && !vocab && !meta.count;
    if (!ok)
        fprintf(stderr, "  %s: rc %d, message \"%s\" (wanted \"%s\")\n", label, rc, e.message, says);
    else if (getenv("STORYLM_TEST_VERBOSE"))
        printf("refused: %s\n   HINT: %s\n", e.message, e.hint);
    check_at(ok, label, __FILE__, line);
    if (!rc) {
        slm_model_free(&m);
        free(vocab);
        slm_metadata_free(&meta);
    }
}
#define REFUSED(path, says) expect_refused((path), (says), #path " refused: " says, __LINE__)

/* A file from base's data area and a new header text (not padded). */
static void with_header(const char *base, const char *out, const char *header, size_t header_len, long delta) {
    size_t len;
    unsigned char *b = (unsigned char *)slurp(base, &len);
    size_t data_at = 8 + (size_t)le64(b), data_len = len - data_at, new_len = (size_t)((long)data_len + delta);
    unsigned char *f = calloc(8 + header_len + new_len, 1);
    put_le64(f, header_len);
    memcpy(f + 8, header, header_len);
    memcpy(f + 8 + header_len, b + data_at, new_len < data_len ? new_len : data_len);
    spit(out, f, 8 + header_len + new_len);
    free(f);
    free(b);
}

static cJSON *header_of(const char *path) {
    size_t len;
    char *b = slurp(path, &len);
    cJSON *root = cJSON_ParseWithLength(b + 8, (size_t)le64((unsigned char *)b));
    free(b);
    if (!root) abort();
    return root;
}

/* base with header entry `entry`'s `field` set to the JSON `json` (field
 * NULL: the whole entry; json NULL: removed), the data grown by delta bytes. */
static const char *mutant(const char *base, const char *out, const char *entry, const char *field, const char *json,
                          long delta) {
    cJSON *root = header_of(base);
    cJSON *parent = field ? cJSON_GetObjectItemCaseSensitive(root, entry) : root;
    const char *key = field ? field : entry;
    if (!parent) abort();
    cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
    if (json) {
        cJSON *value = cJSON_Parse(json);
        if (!value) abort();
        cJSON_AddItemToObject(parent, key, value);
    }
    char *text = cJSON_PrintUnformatted(root);
    with_header(base, out, text, strlen(text), delta);
    free(text);
    cJSON_Delete(root);
    return out;
}

/* Offsets of a tensor in base, and the data area's size. */
static void offsets_of(const char *base, const char *name, uint64_t *begin, uint64_t *end, uint64_t *data_size) {
    cJSON *root = header_of(base);
    cJSON *off = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, name), "data_offsets");
    *begin = (uint64_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    *end = (uint64_t)cJSON_GetArrayItem(off, 1)->valuedouble;
    size_t len;
    char *b = slurp(base, &len);
    *data_size = len - 8 - le64((unsigned char *)b);
    free(b);
    cJSON_Delete(root);
}

/* The header text of base with `insert` put right after the first `after`. */
static const char *spliced(const char *base, const char *out, const char *after, const char *insert) {
    cJSON *root = header_of(base);
    char *text = cJSON_PrintUnformatted(root);
    char *at = strstr(text, after) + strlen(after);
    size_t len = strlen(text) + strlen(insert);
    char *h = malloc(len + 1);
    snprintf(h, len + 1, "%.*s%s%s", (int)(at - text), text, insert, at);
    with_header(base, out, h, len, 0);
    free(h);
    free(text);
    cJSON_Delete(root);
    return out;
}

static void test_raw_refusals(const char *base) {
    size_t len;
    unsigned char *b = (unsigned char *)slurp(base, &len);
    const char *out = tmp_path("bad.safetensors");
    for (int k = 0; k < 16; k++) { /* cut at every sixteenth of the length */
        char label[64];
        spit(out, b, len * (size_t)k / 16);
        snprintf(label, sizeof label, "truncated to %d/16 refused", k);
        expect_refused(out, "", label, __LINE__);
    }
    spit(out, b, len - 1);
    REFUSED(out, "past the end of the data");
    unsigned char *c = malloc(len + 8);
    memcpy(c, b, len);
    put_le64(c, 1ULL << 63);
    spit(out, c, len);
    REFUSED(out, "header length 9223372036854775808 runs past the end");
    put_le64(c, 0);
    spit(out, c, len);
    REFUSED(out, "header length is 0");
    put_le64(c, len - 7);
    spit(out, c, len);
    REFUSED(out, "runs past the end of the file");
    memset(c + len, 0, 8); /* 8 bytes no tensor covers */
    memcpy(c, b, 8);
    spit(out, c, len + 8);
    REFUSED(out, "belong to no tensor");
    free(c);
    free(b);
    spit(out, "short", 5);
    REFUSED(out, "too few");
    with_header(base, out, "{\"a\": [1, 2", 11, 0);
    REFUSED(out, "not valid JSON");
    with_header(base, out, "[1, 2]", 6, 0);
    REFUSED(out, "does not start with '{'");
    with_header(base, out, "{} x", 4, 0);
    REFUSED(out, "text after its JSON object");
    with_header(base, out, "{\"a\0\": 1}", 9, 0);
    REFUSED(out, "NUL byte");
    with_header(base, out, "{\"\xff\": 1}", 8, 0);
    REFUSED(out, "not valid UTF-8");
    REFUSED(tmp_path("no_such_file.safetensors"), "No such file");
    REFUSED(check_tmpdir(), "is a directory");
}

static void test_tensor_refusals(const char *base) {
    const char *out = tmp_path("bad.safetensors");
    char json[256];
    uint64_t begin, end, size;
    offsets_of(base, "output.bias", &begin, &end, &size);

    /* the mutation helper itself keeps a good file good (re-serialised, no padding) */
    Model m;
    char *vocab;
    Error e = {0};
    mutant(base, out, "embedding", "dtype", "\"F32\"", 0);
    CHECK(slm_checkpoint_load_model(out, &m, &vocab, NULL, &e) == 0);
    slm_model_free(&m);
    free(vocab);

    REFUSED(mutant(base, out, "query", "data_offsets", "null", 0), "\"data_offsets\" is not two whole numbers");
    REFUSED(mutant(base, out, "query", "data_offsets", "[0]", 0), "\"data_offsets\" is not two whole numbers");
    REFUSED(mutant(base, out, "query", "data_offsets", "[1.5, 3]", 0), "\"data_offsets\" is not two whole numbers");
    REFUSED(mutant(base, out, "query", "data_offsets", "[-4, 3]", 0), "\"data_offsets\" is not two whole numbers");
    REFUSED(mutant(base, out, "query", "data_offsets", "[10, 5]", 0), "begins after it ends");
    snprintf(json, sizeof json, "[%" PRIu64 ", %" PRIu64 "]", begin + 8, end + 8);
    REFUSED(mutant(base, out, "output.bias", "data_offsets", json, 0), "run past the end of the data");
    snprintf(json, sizeof json, "[%" PRIu64 ", %" PRIu64 "]", begin - 8, end - 8);
    REFUSED(mutant(base, out, "output.bias", "data_offsets", json, 0), "overlap");
    REFUSED(mutant(base, out, "hidden.bias", "shape", "[64]", 0),
            "tensor 'hidden.bias' holds 512 bytes, but F32 [64] needs 256");
    REFUSED(mutant(base, out, "hidden.bias", "shape", "[-128]", 0), "not a whole number");
    REFUSED(mutant(base, out, "hidden.bias", "shape", "[1,1,1,1,1,1,1,1,128]", 0), "9 dimensions");
    REFUSED(mutant(base, out, "hidden.bias", "shape", "[4294967296, 4294967296, 4294967296]", 0), "too large");
    REFUSED(mutant(base, out, "hidden.weight", "shape", "[160, 128]", 0),
            "tensor 'hidden.weight' has shape [160, 128]; the attention model with these sizes needs [128, 160]");
    REFUSED(mutant(base, out, "embedding", "dtype", "\"I32\"", 0), "tensor 'embedding' has dtype I32");
    REFUSED(mutant(base, out, "embedding", "dtype", "\"F16\"", 0), "needs 128000");
    REFUSED(mutant(base, out, "embedding", "dtype", "\"F33\"", 0), "safetensors does not define");
    REFUSED(mutant(base, out, "embedding", "dtype", NULL, 0), "no \"dtype\"");
    REFUSED(mutant(base, out, "embedding", NULL, "[1]", 0), "not an object");
    REFUSED(mutant(base, out, "output.bias", NULL, NULL, -(long)(end - begin)), "tensor 'output.bias' is missing");
    REFUSED(mutant(base, out, "query", NULL, NULL, 0), "belong to no tensor");
    snprintf(json, sizeof json, "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", size,
             size + 8);
    REFUSED(mutant(base, out, "extra", NULL, json, 8), "unexpected tensor 'extra'");
    snprintf(json, sizeof json, "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", size,
             size + 8);
    REFUSED(mutant(base, out, "m.embedding", NULL, json, 8), "unexpected tensor 'm.embedding'");
    REFUSED(
        spliced(base, out, "\"__metadata__\":{", "\"query\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"),
        "metadata 'query' is not a string");
    REFUSED(spliced(base, out, "{", "\"query\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"),
            "tensor 'query' occurs twice");
}

static void test_metadata_refusals(const char *base) {
    const char *out = tmp_path("bad.safetensors");
    REFUSED(mutant(base, out, "__metadata__", NULL, NULL, 0), "has no \"__metadata__\"");
    REFUSED(mutant(base, out, "__metadata__", NULL, "[\"a\"]", 0), "not an object of strings");
    REFUSED(mutant(base, out, "__metadata__", "steps", "5", 0), "metadata 'steps' is not a string");
    REFUSED(spliced(base, out, "\"__metadata__\":{", "\"steps\":\"1\","), "metadata key 'steps' occurs twice");
    REFUSED(spliced(base, out, "{", "\"__metadata__\":{},"), "\"__metadata__\" occurs twice");
    REFUSED(mutant(base, out, "__metadata__", "format", NULL, 0), "has no \"format\"");
    REFUSED(mutant(base, out, "__metadata__", "format", "\"pytorch\"", 0), "holds format 'pytorch', not 'storylm'");
    REFUSED(mutant(base, out, "__metadata__", "format_version", "\"2\"", 0), "format_version '2'");
    REFUSED(mutant(base, out, "__metadata__", "format_version", NULL, 0), "no \"format_version\"");
    REFUSED(mutant(base, out, "__metadata__", "arch", NULL, 0), "no \"arch\"");
    REFUSED(mutant(base, out, "__metadata__", "arch", "\"lstm\"", 0), "unknown architecture 'lstm'");
    REFUSED(mutant(base, out, "__metadata__", "arch", "\"lstm\"", 0), "(storylm knows attention, window8, transformer");
    REFUSED(mutant(base, out, "__metadata__", "arch", "\"transformer\"", 0),
            "act_fn"); /* a transformer's file names its activation */
    REFUSED(mutant(base, out, "__metadata__", "n_heads", NULL, 0), "no \"n_heads\"");
    REFUSED(mutant(base, out, "__metadata__", "vocab_size", "\"1\"", 0), "vocab_size '1' is not a whole number from 2");
    REFUSED(mutant(base, out, "__metadata__", "vocab_size", "\"1000001\"", 0), "vocab_size '1000001'");
    REFUSED(mutant(base, out, "__metadata__", "vocab_size", "\"2000x\"", 0), "vocab_size '2000x'");
    REFUSED(mutant(base, out, "__metadata__", "vocab_size", "\"-2000\"", 0), "vocab_size '-2000'");
    REFUSED(mutant(base, out, "__metadata__", "row_dim", "\"4097\"", 0), "row_dim '4097'");
    REFUSED(mutant(base, out, "__metadata__", "row_dim", "\"0\"", 0), "row_dim '0'");
    REFUSED(mutant(base, out, "__metadata__", "vocab_size", "\"1999\"", 0), "the vocabulary has 2000 lines");
    REFUSED(mutant(base, out, "__metadata__", "vocab", NULL, 0), "no \"vocab\"");
    /* sizes claiming far more than the file holds are refused before any allocation */
    REFUSED(mutant(base, out, "__metadata__", "hidden_dim", "\"4096\"", 0), "bytes of tensors");
    /* hidden_dim 0 is attn-only's (no MLP): the chapter's network, which reads by its hidden layer, refuses it */
    REFUSED(mutant(base, out, "__metadata__", "hidden_dim", "\"0\"", 0), "invalid model sizes");
    REFUSED(mutant(base, out, "__metadata__", "value_dim", "\"15\"", 0), "tensor 'value' has shape [8, 32, 16]");
    REFUSED(mutant(base, out, "__metadata__", "arch", "\"window8\"", 0), "unexpected tensor 'query'");
    /* a string cut at an escaped NUL ("attention\u0000..." read as "attention"), in a value, a key, a name */
    REFUSED(spliced(base, out, "\"arch\":\"attention", "\\u0000, and more"), "NUL character");
    REFUSED(spliced(base, out, "\"__metadata__\":{", "\"steps\\u0000x\":\"1\","), "NUL character");
    REFUSED(spliced(base, out, "\"query", "\\u0000"), "NUL character");
    /* an escaped backslash before "u0000" is no NUL: that file loads (its arch is then unknown) */
    REFUSED(spliced(base, out, "\"arch\":\"attention", "\\\\u0000"), "unknown architecture");
}

/* Random bytes changed in the header (mostly among the tensor entries, after
 * the vocabulary): each load succeeds or fails with a message, never crashes
 * (the sanitizer build checks the "never reads out of bounds"). */
static void test_damaged_headers(const char *base) {
    size_t len;
    unsigned char *good = (unsigned char *)slurp(base, &len);
    unsigned char *bad = malloc(len);
    const char *out = tmp_path("fuzz.safetensors");
    uint64_t n = le64(good), seed = 99;
    int refused = 0, messages = 0;
    for (int i = 0; i < 300; i++) {
        memcpy(bad, good, len);
        for (int k = 0; k < 1 + i % 3; k++) {
            uint64_t r = next_random(&seed);
            size_t at = r % 2 ? 8 + (size_t)(n - 1 - (r >> 8) % 900) : 8 + (size_t)((r >> 8) % n);
            bad[at] = (unsigned char)(r >> 40);
        }
        spit(out, bad, len);
        Model m;
        char *vocab;
        Error e = {0};
        if (slm_checkpoint_load_model(out, &m, &vocab, NULL, &e) == 0) {
            slm_model_free(&m);
            free(vocab);
            continue;
        }
        refused++;
        messages += e.message[0] != '\0' && strstr(e.message, out) != NULL;
    }
    printf("damaged headers: %d of 300 refused\n", refused);
    CHECK(refused > 150);
    CHECK(messages == refused);
    free(bad);
    free(good);
}

/* ---- optimizer state and the pair -------------------------------------- */

static void fill_state(TrainingState *s, const Model *m) {
    if (slm_training_state_init(s, m, NULL)) abort();
    fill_any_bits(s->adam_m, s->n_params, 11);
    fill_any_bits(s->adam_v, s->n_params, 12);
    s->step = 123456789012ULL;
    s->rng_state = UINT64_MAX;
    s->data_hash = 0xfedcba9876543210ULL;
    slm_metadata_set(&s->extra, "learning_rate", "0.001", NULL);
}

static void test_adam(void) {
    const char *path = tmp_path("opt.adam.safetensors");
    Model m, w8;
    TrainingState s, back;
    Error e = {0};
    make_model(&m, &slm_attention_arch, 3, 0);
    make_model(&w8, &slm_window8_arch, 4, 0);
    fill_state(&s, &m);
    CHECK(s.run_id != 0);
    CHECK(slm_checkpoint_save_adam(path, &m, &s, &e) == 0);
    CHECK(slm_checkpoint_load_adam(path, &m, &back, &e) == 0);
    CHECK(back.n_params == m.n_params && memcmp(back.adam_m, s.adam_m, 4 * m.n_params) == 0 &&
          memcmp(back.adam_v, s.adam_v, 4 * m.n_params) == 0);
    CHECK(back.step == s.step && back.rng_state == s.rng_state && back.data_hash == s.data_hash &&
          back.run_id == s.run_id);
    CHECK(back.extra.count == 1 && strcmp(slm_metadata_get(&back.extra, "learning_rate"), "0.001") == 0);
    slm_training_state_free(&back);

    /* another architecture's state, the model file, and the state as a model are refused */
    CHECK(slm_checkpoint_load_adam(path, &w8, &back, &e) == -1 &&
          strstr(e.message, "of architecture attention, not window8") && !back.adam_m);
    const char *model_path = tmp_path("opt_model.safetensors");
    char *vocab = make_vocab(2000);
    CHECK(slm_checkpoint_save_model(model_path, &m, vocab, NULL, &e) == 0);
    CHECK(slm_checkpoint_load_adam(model_path, &m, &back, &e) == -1 && strstr(e.message, "not 'storylm-adam'"));
    Model wrong;
    char *wrong_vocab;
    CHECK(slm_checkpoint_load_model(path, &wrong, &wrong_vocab, NULL, &e) == -1 &&
          strstr(e.hint, "not its optimizer state"));
    const char *out = tmp_path("bad.adam.safetensors");
    CHECK(slm_checkpoint_load_adam(mutant(path, out, "__metadata__", "rng_state", "\"12x\"", 0), &m, &back, &e) == -1 &&
          strstr(e.message, "rng_state '12x' is not a decimal"));
    CHECK(slm_checkpoint_load_adam(mutant(path, out, "__metadata__", "run_id", NULL, 0), &m, &back, &e) == -1 &&
          strstr(e.message, "no \"run_id\""));
    CHECK(slm_checkpoint_load_adam(mutant(path, out, "v.embedding", "shape", "[32, 2000]", 0), &m, &back, &e) == -1 &&
          strstr(e.message, "'v.embedding' has shape [32, 2000]"));
    /* the format's own keys are not the trainer's to set */
    slm_metadata_set(&s.extra, "step", "5", NULL);
    CHECK(slm_checkpoint_save_adam(path, &m, &s, &e) == -1 && strstr(e.message, "'step' is written by storylm"));
    free(vocab);
    slm_training_state_free(&s);
    slm_model_free(&m);
    slm_model_free(&w8);
}

static void test_pair(void) {
    const char *path = tmp_path("pair.safetensors");
    Model m, back;
    TrainingState s, s_back;
    Metadata meta, meta_back;
    char *vocab = make_vocab(2000), *vocab_back;
    Error e = {0};
    make_model(&m, &slm_window8_arch, 5, 0);
    make_meta(&meta);
    fill_state(&s, &m);
    char *adam_path = slm_checkpoint_adam_path(path, &e);
    CHECK(adam_path && strcmp(adam_path, tmp_path("pair.adam.safetensors")) == 0);
    CHECK(slm_checkpoint_save_all(path, &m, vocab, &meta, &s, &e) == 0);
    CHECK(slm_checkpoint_load_all(path, &back, &vocab_back, &meta_back, &s_back, &e) == 0);
    CHECK(memcmp(back.params, m.params, 4 * m.n_params) == 0 && memcmp(s_back.adam_v, s.adam_v, 4 * m.n_params) == 0);
    CHECK(strcmp(slm_metadata_get(&meta_back, "step"), "123456789012") == 0 && s_back.step == s.step);
    CHECK(strcmp(slm_metadata_get(&meta_back, "test_loss"), "3.14159") == 0);
    slm_model_free(&back);
    free(vocab_back);
    slm_training_state_free(&s_back);

    /* a crash after the model of the next save, before its optimizer state */
    slm_metadata_set(&meta_back, "step", "123456789013", NULL);
    CHECK(slm_checkpoint_save_model(path, &m, vocab, &meta_back, &e) == 0);
    CHECK(slm_checkpoint_load_all(path, &back, &vocab_back, NULL, &s_back, &e) == -1 &&
          strstr(e.message, "is at step 123456789013 but") && strstr(e.message, "at step 123456789012") &&
          !back.params && !vocab_back && !s_back.adam_m);
    /* a model from another run at the same step */
    slm_metadata_set(&meta_back, "step", "123456789012", NULL);
    slm_metadata_set(&meta_back, "run_id", "0000000000000001", NULL);
    CHECK(slm_checkpoint_save_model(path, &m, vocab, &meta_back, &e) == 0);
    CHECK(slm_checkpoint_load_all(path, &back, &vocab_back, NULL, &s_back, &e) == -1 &&
          strstr(e.message, "comes from training run 0000000000000001"));
    /* a model saved alone */
    CHECK(slm_checkpoint_save_model(path, &m, vocab, &meta, &e) == 0);
    CHECK(slm_checkpoint_load_all(path, &back, &vocab_back, NULL, &s_back, &e) == -1 &&
          strstr(e.message, "has no step and run_id"));
    unlink(adam_path);
    CHECK(slm_checkpoint_load_all(path, &back, &vocab_back, NULL, &s_back, &e) == -1 &&
          strstr(e.message, "no optimizer state") && e.hint[0]);

    char *p = slm_checkpoint_adam_path("model", &e);
    CHECK(strcmp(p, "model.adam.safetensors") == 0);
    free(p);
    p = slm_checkpoint_adam_path("runs.v1/m.safetensors", &e);
    CHECK(strcmp(p, "runs.v1/m.adam.safetensors") == 0);
    free(p);
    free(adam_path);
    free(vocab);
    slm_metadata_free(&meta);
    slm_metadata_free(&meta_back);
    slm_training_state_free(&s);
    slm_model_free(&m);
}

/* ---- atomic saves ------------------------------------------------------ */

static int same_file(const char *path, const char *bytes, size_t len) {
    size_t got_len;
    char *got = slurp(path, &got_len);
    int same = got_len == len && memcmp(got, bytes, len) == 0;
    free(got);
    return same;
}

static int no_temp_left(const char *path) {
    char temp[1100];
    struct stat sb;
    snprintf(temp, sizeof temp, "%s.tmp.%ld", path, (long)getpid());
    return stat(temp, &sb) != 0;
}

static void test_atomic(void) {
    const char *path = tmp_path("atomic.safetensors");
    Model old_model, new_model;
    char *vocab = make_vocab(2000);
    Error e = {0};
    make_model(&old_model, &slm_attention_arch, 21, 0);
    make_model(&new_model, &slm_attention_arch, 22, 0);
    CHECK(slm_checkpoint_save_model(path, &old_model, vocab, NULL, &e) == 0);
    size_t len;
    char *old_bytes = slurp(path, &len);

    CHECK(slm_checkpoint_save_model(tmp_path("no_such_dir/m.safetensors"), &new_model, vocab, NULL, &e) == -1 &&
          strstr(e.message, "no_such_dir/m.safetensors"));

    /* the disk fills up half way: the write fails, the old model stays */
    struct rlimit old_limit, small;
    getrlimit(RLIMIT_FSIZE, &old_limit);
    small = old_limit;
    small.rlim_cur = 100000;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    e = (Error){0};
    int rc = slm_checkpoint_save_model(path, &new_model, vocab, NULL, &e);
    setrlimit(RLIMIT_FSIZE, &old_limit);
    CHECK(rc == -1 && e.message[0]);
    CHECK(same_file(path, old_bytes, len));
    CHECK(no_temp_left(path));

    /* a refused save (a vocabulary of the wrong size) does not touch the file either */
    char *short_vocab = make_vocab(1999);
    CHECK(slm_checkpoint_save_model(path, &new_model, short_vocab, NULL, &e) == -1 && strstr(e.message, "1999 lines"));
    CHECK(same_file(path, old_bytes, len));

    /* a read-only folder (root writes there all the same: then this part cannot run) */
    const char *dir = tmp_path("readonly");
    char ro_path[1100], probe[1100];
    mkdir(dir, 0755);
    snprintf(ro_path, sizeof ro_path, "%s/m.safetensors", dir);
    snprintf(probe, sizeof probe, "%s/probe", dir);
    CHECK(slm_checkpoint_save_model(ro_path, &old_model, vocab, NULL, &e) == 0);
    chmod(dir, 0555);
    FILE *f = fopen(probe, "w");
    if (f) {
        fclose(f);
        unlink(probe);
        printf("read-only folder check skipped: this user may write into read-only folders (root)\n");
    } else {
        CHECK(slm_checkpoint_save_model(ro_path, &new_model, vocab, NULL, &e) == -1 && strstr(e.message, ro_path));
        CHECK(same_file(ro_path, old_bytes, len));
    }
    chmod(dir, 0755);
    free(short_vocab);
    free(old_bytes);
    free(vocab);
    slm_model_free(&old_model);
    slm_model_free(&new_model);
}

static void test_metadata_list(void) {
    Metadata md = {0};
    Error e = {0};
    CHECK(slm_metadata_set(&md, "a", "1", &e) == 0 && slm_metadata_set(&md, "b", "2", &e) == 0);
    CHECK(slm_metadata_set(&md, "a", "3", &e) == 0);
    CHECK(md.count == 2 && strcmp(slm_metadata_get(&md, "a"), "3") == 0 && !slm_metadata_get(&md, "c"));
    Model m;
    char *vocab = make_vocab(2000);
    make_model(&m, &slm_attention_arch, 1, 0);
    CHECK(slm_metadata_set(&md, "vocab", "x", &e) == 0);
    CHECK(slm_checkpoint_save_model(tmp_path("reserved.safetensors"), &m, vocab, &md, &e) == -1 &&
          strstr(e.message, "'vocab' is written by storylm"));
    slm_metadata_free(&md);
    free(vocab);
    slm_model_free(&m);
}

/* ---- what the loader refuses in values, not in the header -------------- */

/* A NaN or an infinity anywhere is refused at load, naming the tensor and the
 * element: eval of such a model printed "loss -nan" and exited 0. */
static void test_nonfinite(void) {
    const char *path = tmp_path("nonfinite.safetensors");
    Model m, back;
    char *vocab = make_vocab(2000), *vocab_back;
    Error e = {0};
    make_model(&m, &slm_attention_arch, 5, 0);
    m.output_b[5] = NAN;
    CHECK(slm_checkpoint_save_model(path, &m, vocab, NULL, &e) == 0);
    CHECK(slm_checkpoint_load_model(path, &back, &vocab_back, NULL, &e) == -1 &&
          strstr(e.message, "tensor 'output.bias' holds NaN at element 5") && !back.params && !vocab_back);
    m.output_b[5] = 0.0f;
    m.embedding[100] = -INFINITY;
    CHECK(slm_checkpoint_save_model(path, &m, vocab, NULL, &e) == 0);
    CHECK(slm_checkpoint_load_model(path, &back, &vocab_back, NULL, &e) == -1 &&
          strstr(e.message, "tensor 'embedding' holds an infinity at element 100"));
    m.embedding[100] = 3e38f; /* huge but finite: loads (the loss is computed so that it stays right) */
    CHECK(slm_checkpoint_save_model(path, &m, vocab, NULL, &e) == 0);
    CHECK(slm_checkpoint_load_model(path, &back, &vocab_back, NULL, &e) == 0);
    slm_model_free(&back);
    free(vocab_back);
    /* the optimizer state too */
    TrainingState s, sb;
    if (slm_training_state_init(&s, &m, NULL)) abort();
    s.adam_v[m.tensors[1].offset + 3] = INFINITY;
    CHECK(slm_checkpoint_save_adam(path, &m, &s, &e) == 0);
    CHECK(slm_checkpoint_load_adam(path, &m, &sb, &e) == -1 && strstr(e.message, "tensor 'v.query' holds an infinity"));
    slm_training_state_free(&s);
    free(vocab);
    slm_model_free(&m);
}

/* A vocabulary stored in a model that a tokenizer would refuse (an empty or
 * a duplicate piece, no [UNK]) is refused at load, by every verb alike. */
static void test_bad_vocab_at_load(void) {
    const char *path = tmp_path("badvocab.safetensors");
    Model m, back;
    char *vocab_back;
    Error e = {0};
    make_model(&m, &slm_attention_arch, 6, 0);
    static const struct {
        const char *line1, *want;
    } cases[] = {{"[EOS]", "duplicate piece '[EOS]'"}, {"", "line 1 is empty"}, {"unk", "has no [UNK] line"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *vocab = make_vocab(2000);
        char *nl = strchr(vocab, '\n'); /* replace line 1, "[UNK]" */
        size_t tail = strlen(nl), first = strlen(cases[c].line1);
        memmove(vocab + first, nl, tail + 1);
        memcpy(vocab, cases[c].line1, first);
        CHECK(slm_checkpoint_save_model(path, &m, vocab, NULL, &e) == 0);
        CHECK(slm_checkpoint_load_model(path, &back, &vocab_back, NULL, &e) == -1 && strstr(e.message, cases[c].want));
        if (!strstr(e.message, cases[c].want)) fprintf(stderr, "  got: %s\n", e.message);
        free(vocab);
    }
    slm_model_free(&m);
}

/* Loading is linear in the metadata's keys (80,000 took 10 s when each was
 * looked up among the earlier ones), and a header of more values than any
 * model has is refused before it is parsed. */
static void test_many_keys(void) {
    const char *path = tmp_path("keys.safetensors");
    Model m, back;
    Metadata meta = {0}, meta_back;
    char *vocab = make_vocab(2000), *vocab_back;
    Error e = {0};
    make_model(&m, &slm_attention_arch, 8, 0);
    for (int i = 0; i < 80000; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%06d", i);
        if (slm_metadata_append(&meta, key, "v", NULL)) abort();
    }
    CHECK(slm_checkpoint_save_model(path, &m, vocab, &meta, &e) == 0);
    clock_t t0 = clock();
    CHECK(slm_checkpoint_load_model(path, &back, &vocab_back, &meta_back, &e) == 0 && meta_back.count == 80000);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(cpu < 3.0); /* about 0.05 s; quadratic took 10 s (CPU time, so a loaded machine does not matter) */
    slm_model_free(&back);
    free(vocab_back);
    slm_metadata_free(&meta_back);
    slm_metadata_free(&meta);
    /* 2 million values in one shape: refused from a count, not parsed into 200 MB of JSON nodes */
    size_t n = 2000000, len = 0;
    char *h = malloc(2 * n + 128);
    len += (size_t)sprintf(h, "{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,0],\"shape\":[0");
    for (size_t i = 1; i < n; i++) h[len++] = ',', h[len++] = '0';
    len += (size_t)sprintf(h + len, "]}}");
    unsigned char lb[8];
    put_le64(lb, len);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(lb, 1, 8, f) != 8 || fwrite(h, 1, len, f) != len || fclose(f)) abort();
    t0 = clock();
    CHECK(slm_checkpoint_load_model(path, &back, &vocab_back, NULL, &e) == -1 &&
          strstr(e.message, "over the limit of 1000000"));
    CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 3.0);
    free(h);
    free(vocab);
    slm_model_free(&m);
}

/* ---- models for the end-to-end test ------------------------------------ */

static int write_dump(const char *dir, const char *name, const char *what, const float *x, size_t n) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s.%s.f32", dir, name, what);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(x, 4, n, f) == n;
    return f && !fclose(f) && ok ? 0 : -1;
}

static int write_models(const char *dir) {
    for (int a = 0; a < 2; a++) {
        const Architecture *arch = a ? &slm_window8_arch : &slm_attention_arch;
        const char *name = arch->name;
        char path[2048];
        Model m;
        TrainingState s;
        Metadata meta;
        Error e = {0};
        char *vocab = make_vocab(2000);
        make_model(&m, arch, 100 + (uint64_t)a, 0);
        make_meta(&meta);
        if (slm_training_state_init(&s, &m, &e)) return 1;
        fill_weights(s.adam_m, s.n_params, 200);
        fill_weights(s.adam_v, s.n_params, 300);
        s.step = 77;
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, name);
        int rc = slm_checkpoint_save_all(path, &m, vocab, &meta, &s, &e) ||
                 write_dump(dir, name, "params", m.params, m.n_params) ||
                 write_dump(dir, name, "adam_m", s.adam_m, s.n_params) ||
                 write_dump(dir, name, "adam_v", s.adam_v, s.n_params);
        snprintf(path, sizeof path, "%s/%s.layout.txt", dir, name);
        FILE *f = fopen(path, "w");
        for (int i = 0; f && i < m.n_tensors; i++)
            fprintf(f, "%s %zu %zu\n", m.tensors[i].name, m.tensors[i].offset, m.tensors[i].size);
        if (!f || fclose(f) || rc) {
            fprintf(stderr, "test_checkpoint: cannot write models to %s: %s\n", dir, e.message);
            return 1;
        }
        slm_training_state_free(&s);
        slm_metadata_free(&meta);
        free(vocab);
        slm_model_free(&m);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--write-models") == 0) return write_models(argv[2]);
    test_round_trip(&slm_attention_arch, 352848);
    test_round_trip(&slm_window8_arch, 354896);
    const char *base = tmp_path("base.safetensors");
    Model m;
    Metadata meta;
    char *vocab = make_vocab(2000);
    make_model(&m, &slm_attention_arch, 9, 0);
    make_meta(&meta);
    CHECK(slm_checkpoint_save_model(base, &m, vocab, &meta, NULL) == 0);
    test_raw_refusals(base);
    test_tensor_refusals(base);
    test_metadata_refusals(base);
    test_damaged_headers(base);
    test_adam();
    test_pair();
    test_atomic();
    test_metadata_list();
    test_nonfinite();
    test_bad_vocab_at_load();
    test_many_keys();
    slm_model_free(&m);
    slm_metadata_free(&meta);
    free(vocab);
    return check_report();
}
