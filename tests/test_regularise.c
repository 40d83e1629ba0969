/* Training's regularisation (regularise.h, dropout.h, name_swap.h): weight
 * decay shrinks exactly the tensors it names; dropout's masks are seeded,
 * drop about P and scale the rest by 1/(1-P), and do not depend on how
 * stories are packed; the moving average's arithmetic; --swap-names renames
 * only a hero's tokens, learns names from training stories only, and the
 * trainer never hands it a test story. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/adam.h"
#include "storylm/dropout.h"
#include "storylm/fileio.h"
#include "storylm/model.h"
#include "storylm/name_swap.h"
#include "storylm/regularise.h"
#include "storylm/rng.h"
#include "storylm/train.h"

/* One AdamW step with zero gradients: Adam's direction is 0, so a tensor
 * with decay is multiplied by exactly 1 - lr * decay and the others stay;
 * with gradients, decayed entries are w (1 - lr wd) - Adam's step. */
static void weight_decay_on_known_tensors(void) {
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, 50);
    Model m;
    Adam adam;
    Error e;
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_adam_init(&adam, m.n_params, &e) == 0);
    slm_model_randomize(&m, 3);
    float *before = malloc(m.n_params * sizeof(float)), *grads = calloc(m.n_params, sizeof(float));
    uint8_t *mask = malloc(m.n_params);
    memcpy(before, m.params, m.n_params * sizeof(float));
    slm_model_decay_mask(&m, mask);
    adam.weight_decay = 0.5f;
    adam.decay_mask = mask;
    slm_adam_update(&adam, m.params, grads, 0.1f);
    for (int t = 0; t < m.n_tensors; t++) {
        const ParamTensor *pt = &m.tensors[t];
        int want = !strcmp(pt->name, "query") || !strcmp(pt->name, "key") || !strcmp(pt->name, "value") ||
                   !strcmp(pt->name, "hidden.weight") || !strcmp(pt->name, "output.weight");
        CHECK(pt->decay == want);
        size_t wrong = 0;
        for (size_t i = pt->offset; i < pt->offset + pt->size; i++)
            wrong += m.params[i] != (want ? before[i] * (1.0f - 0.1f * 0.5f) : before[i]);
        if (!CHECK(wrong == 0)) fprintf(stderr, "  %s: %zu entries not as decay says\n", pt->name, wrong);
    }
    /* one entry with a gradient, step 2: PyTorch's AdamW formula by hand */
    size_t i = slm_model_tensor(&m, "output.weight")->offset + 7;
    double w = m.params[i], mom = 0.1 * 0.25, var = 0.001 * 0.0625;
    grads[i] = 0.25f;
    slm_adam_update(&adam, m.params, grads, 0.1f);
    double want = w * (1 - 0.1 * 0.5) - 0.1 / (1 - 0.81) * mom / (sqrt(var) / sqrt(1 - 0.999 * 0.999) + 1e-8);
    CHECK_CLOSE(m.params[i], want, 1e-5, 0);
    free(before), free(grads), free(mask);
    slm_adam_free(&adam), slm_model_free(&m);
}

/* AdamW over 1,039 entries (a whole block of 1,024 in vectors, then 15 one
 * by one), half of them decaying, three steps: every bit of the weights and
 * both moments equals the update
 * written out element by element in PyTorch's order (the build has no FMA
 * contraction, so each product and sum is rounded on its own, as in Adam). */
static void adam_bits_equal_plain_formula(void) {
    enum { N = 1039 };
    static float p[N], want[N], g[N], m[N], v[N];
    static uint8_t mask[N];
    Adam adam;
    Error e;
    CHECK(slm_adam_init(&adam, N, &e) == 0);
    adam.weight_decay = 0.1f;
    adam.decay_mask = mask;
    uint64_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = want[i] = (float)((x >> 40) % 20001) / 10000.0f - 1.0f;
        mask[i] = (x >> 20) & 1;
    }
    size_t wrong = 0;
    for (int t = 1; t <= 3; t++) {
        for (int i = 0; i < N; i++) g[i] = sinf((float)(i * t)) * (i % 7 == 0 ? 1e-6f : 0.3f);
        slm_adam_update(&adam, p, g, 0.01f);
        float step = (float)((double)0.01f / (1.0 - pow(0.9f, t))), bc2 = (float)sqrt(1.0 - pow(0.999f, t));
        for (int i = 0; i < N; i++) {
            m[i] = 0.9f * m[i] + (1.0f - 0.9f) * g[i];
            v[i] = 0.999f * v[i] + (1.0f - 0.999f) * g[i] * g[i];
            float keep = mask[i] ? 1.0f - 0.01f * 0.1f : 1.0f;
            want[i] = want[i] * keep - step * m[i] / (sqrtf(v[i]) / bc2 + 1e-8f);
        }
        wrong += memcmp(p, want, sizeof p) || memcmp(adam.m, m, sizeof m) || memcmp(adam.v, v, sizeof v);
    }
    if (!CHECK(wrong == 0)) fprintf(stderr, "  Adam's bits differ from the formula after %zu of 3 steps\n", wrong);
    slm_adam_free(&adam);
}

/* Masks: numbers are 0 or exactly 1/(1-P), about P of them 0, the same for
 * the same key and another for another key. */
static void dropout_masks_seeded_and_scaled(void) {
    enum { N = 200000 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    uint64_t keys[2] = {slm_dropout_story_key(1, 5, 0), slm_dropout_story_key(1, 5, 1)};
    CHECK(keys[0] != keys[1] && keys[0] != slm_dropout_story_key(1, 6, 0) && keys[0] != slm_dropout_story_key(2, 5, 0));
    DropoutMask d = slm_dropout_mask(0.3f, DROPOUT_SALT_HIDDEN, keys, NULL);
    for (int i = 0; i < N; i++) x[i] = y[i] = 1.0f;
    slm_dropout_apply(&d, 0, 0, 0, x, N);
    slm_dropout_apply(&d, 0, 0, 0, y, N);
    long zeros = 0, other = 0;
    for (int i = 0; i < N; i++) {
        zeros += x[i] == 0.0f;
        other += x[i] != 0.0f && x[i] != 1.0f / 0.7f;
    }
    CHECK(other == 0);
    CHECK(fabs((double)zeros / N - 0.3) < 0.005);
    CHECK(memcmp(x, y, N * sizeof(float)) == 0); /* the backward draws the forward's mask */
    for (int i = 0; i < N; i++) y[i] = 1.0f;
    slm_dropout_apply(&d, 1, 0, 0, y, N); /* another story */
    long same = 0;
    for (int i = 0; i < N; i++) same += x[i] == y[i];
    CHECK(same < N * 0.7); /* independent: 0.3^2 + 0.7^2 = 58% agree */
    for (int i = 0; i < N; i++) y[i] = 1.0f;
    slm_dropout_apply(&d, 0, 1, 0, y, N); /* another head */
    CHECK(memcmp(x, y, N * sizeof(float)) != 0);
    DropoutMask off = slm_dropout_mask(0.0f, DROPOUT_SALT_HIDDEN, keys, NULL);
    CHECK(off.p == 0.0f);
    free(x), free(y);
}

/* The draws are the slm_splitmix64 stream of the position's key, salt and
 * stream, two 32-bit halves a value (low half first), as every run's masks
 * have been drawn: so a run resumed across versions draws the same masks
 * (any n, odd ones too, any x: each number times 0 or exactly 1/(1-P)). */
static void dropout_draws_are_splitmix(void) {
    enum { N = 273 };
    uint64_t keys[1] = {slm_dropout_story_key(7, 3, 2)};
    DropoutMask d = slm_dropout_mask(0.3f, DROPOUT_SALT_ATTENTION, keys, NULL);
    static const int sizes[] = {1, 2, 7, 64, N};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int n = sizes[i];
        float x[N], want[N];
        for (int j = 0; j < n; j++) x[j] = want[j] = (float)(j % 5) - 2.5f;
        slm_dropout_apply(&d, 0, 5, 0, x, n);
        uint64_t state = keys[0] ^ DROPOUT_SALT_ATTENTION ^ (5 + 1) * 0x9FB21C651E98DF25ULL, r = 0;
        for (int j = 0; j < n; j++) {
            if (j % 2 == 0) r = slm_splitmix64(&state);
            uint64_t draw = j % 2 ? r >> 32 : r & 0xFFFFFFFFu;
            want[j] *= draw < d.threshold ? 0.0f : d.scale;
        }
        CHECK(memcmp(x, want, (size_t)n * sizeof(float)) == 0);
    }
}

/* A story's position keys are the same wherever it is packed. */
static void dropout_keys_ignore_packing(void) {
    uint64_t story[3] = {11, 22, 33}, alone[3] = {22}, keys[40], keys_alone[40];
    int starts[4] = {0, 10, 25, 40}, starts_alone[2] = {0, 15};
    slm_dropout_position_keys(story, starts, 3, keys);
    slm_dropout_position_keys(alone, starts_alone, 1, keys_alone);
    CHECK(memcmp(keys + 10, keys_alone, 15 * sizeof(uint64_t)) == 0);
    CHECK(keys[0] != keys[10] && keys[10] != keys[11]);
}

/* A training pass's gradients with dropout differ from evaluation's, repeat
 * bit for bit, and evaluation (no keys) drops nothing. */
static void dropout_only_with_keys(void) {
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, 30);
    Model m;
    Activations a;
    Batch b;
    Error e;
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_activations_init(&a, &cfg, 64, &e) == 0 &&
          slm_batch_init(&b, 64, 2, &e) == 0);
    slm_model_randomize(&m, 5);
    int32_t ids[40];
    for (int t = 0; t < 40; t++) ids[t] = t ? 2 + (t * 7) % 28 : 1;
    CHECK(slm_batch_add(&b, ids, 40, &e) == 0);
    float loss[4];
    uint64_t key = slm_dropout_story_key(3, 0, 0);
    a.dropout = (Dropout){0};
    CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f, NULL, &e) == 0);
    loss[0] = (float)a.mean_loss;
    a.dropout = (Dropout){.hidden = 0.5f, .attention = 0.5f}; /* rates without keys: nothing */
    CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f, NULL, &e) == 0);
    loss[1] = (float)a.mean_loss;
    a.dropout = (Dropout){.hidden = 0.5f, .attention = 0.5f, .story_keys = &key};
    CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f, NULL, &e) == 0);
    loss[2] = (float)a.mean_loss;
    CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f, NULL, &e) == 0);
    loss[3] = (float)a.mean_loss;
    CHECK(loss[0] == loss[1] && loss[2] != loss[0] && loss[2] == loss[3]);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

/* ---- against PyTorch (scripts/torch_dropout.py), the same masks given to both ---- */

/* The JSON array `key` of obj into a new array of n floats / bytes / ids. */
static size_t json_floats(const cJSON *obj, const char *key, float **out) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key), *x;
    size_t n = (size_t)cJSON_GetArraySize(a), i = 0;
    *out = malloc((n + 1) * sizeof(float));
    cJSON_ArrayForEach(x, a)(*out)[i++] = (float)x->valuedouble;
    return n;
}

static double json_number(const cJSON *obj, const char *key) {
    return cJSON_GetObjectItemCaseSensitive(obj, key)->valuedouble;
}

/* One case: C's loss and gradients, through both passes, with torch's. */
static void dropout_case_against_torch(const cJSON *c, const char *name) {
    const cJSON *cfgj = cJSON_GetObjectItemCaseSensitive(c, "config");
    ModelConfig cfg = {.arch = &slm_attention_arch,
                       .vocab_size = (int)json_number(cfgj, "V"),
                       .row_dim = (int)json_number(cfgj, "D"),
                       .n_heads = (int)json_number(cfgj, "H"),
                       .key_dim = (int)json_number(cfgj, "KD"),
                       .value_dim = (int)json_number(cfgj, "VD"),
                       .window = (int)json_number(cfgj, "W"),
                       .hidden_dim = (int)json_number(cfgj, "HID"),
                       .context = 8};
    Model m;
    Activations a;
    Batch b;
    Error e;
    float *tokens, *lengths, *zmask_f, *amask_f, *x;
    size_t n_tokens = json_floats(c, "tokens", &tokens), n_stories = json_floats(c, "lengths", &lengths);
    size_t nz = json_floats(c, "hidden_mask", &zmask_f), na = json_floats(c, "attention_mask", &amask_f);
    uint8_t *zmask = malloc(nz), *amask = malloc(na);
    for (size_t i = 0; i < nz; i++) zmask[i] = zmask_f[i] != 0;
    for (size_t i = 0; i < na; i++) amask[i] = amask_f[i] != 0;
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_activations_init(&a, &cfg, (int)n_tokens, &e) == 0 &&
          slm_batch_init(&b, (int)n_tokens, (int)n_stories, &e) == 0);
    int32_t ids[256];
    for (size_t s = 0, at = 0; s < n_stories; at += (size_t)lengths[s++]) {
        for (int t = 0; t < (int)lengths[s]; t++) ids[t] = (int32_t)tokens[at + t];
        CHECK(slm_batch_add(&b, ids, (int)lengths[s], &e) == 0);
    }
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(c, "params");
    const cJSON *grads_j = cJSON_GetObjectItemCaseSensitive(c, "grads");
    for (int t = 0; t < m.n_tensors; t++) {
        CHECK(json_floats(params, m.tensors[t].name, &x) == m.tensors[t].size);
        memcpy(m.params + m.tensors[t].offset, x, m.tensors[t].size * sizeof(float));
        free(x);
    }
    a.dropout = (Dropout){.hidden = (float)json_number(c, "p_hidden"),
                          .attention = (float)json_number(c, "p_attention"),
                          .hidden_mask = zmask,
                          .attention_mask = amask};
    float *g1 = calloc(m.n_params, sizeof(float)), *g2 = calloc(m.n_params, sizeof(float)), loss;
    CHECK(slm_model_forward(&m, &a, &b, NULL, &loss, &e) == 0);
    slm_model_backward(&m, &a, &b, g1);
    CHECK_CLOSE(loss, json_number(c, "loss"), 1e-5, 0);
    CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f / a.n_predicted, g2, &e) == 0);
    CHECK_CLOSE(a.mean_loss, json_number(c, "loss"), 1e-5, 0);
    for (int t = 0; t < m.n_tensors; t++) {
        const ParamTensor *pt = &m.tensors[t];
        CHECK(json_floats(grads_j, pt->name, &x) == pt->size);
        double diff = 0, largest = 0;
        for (size_t i = 0; i < pt->size; i++) {
            largest = fmax(largest, fabs(x[i]));
            diff = fmax(diff, fmax(fabs(x[i] - g1[pt->offset + i]), fabs(x[i] - g2[pt->offset + i])));
        }
        if (!CHECK(diff <= 1e-4 * largest + 1e-7))
            fprintf(stderr, "  %s %s: gradient off by %.3g (largest %.3g)\n", name, pt->name, diff, largest);
        free(x);
    }
    printf("dropout against torch, %-10s loss %.6f\n", name, loss);
    free(g1), free(g2), free(tokens), free(lengths), free(zmask_f), free(amask_f), free(zmask), free(amask);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

static void dropout_against_torch(void) {
    char *text;
    size_t len;
    Error e;
    if (!CHECK(slm_file_read_all(check_source_path("tests/fixtures/dropout.json"), 0, &text, &len, &e) == 0)) return;
    cJSON *root = cJSON_Parse(text), *c;
    int cases = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases")) {
        dropout_case_against_torch(c, c->string);
        cases++;
    }
    CHECK(cases == 2);
    cJSON_Delete(root);
    free(text);
}

/* avg = d avg + (1 - d) x, step by step, against doubles. */
static void ema_arithmetic(void) {
    float avg[3] = {1.0f, -2.0f, 0.5f}, x[3] = {3.0f, 0.0f, 0.5f};
    double want[3] = {1.0, -2.0, 0.5};
    for (int step = 0; step < 5; step++) {
        slm_ema_update(avg, x, 3, 0.9f);
        for (int i = 0; i < 3; i++) want[i] = 0.9 * want[i] + 0.1 * x[i];
    }
    for (int i = 0; i < 3; i++) CHECK_CLOSE(avg[i], want[i], 1e-6, 1e-7);
    CHECK(avg[2] == 0.5f); /* a constant stays exactly */
    CHECK_CLOSE(avg[0], 3.0 - 2.0 * pow(0.9, 5), 1e-6, 0);
}

/* ---- --swap-names ---------------------------------------------------------------- */

static const char vocab_text[] =
    "[UNK]\n[EOS]\n.\n,\nonce\nthere\nwas\na\ngirl\nboy\nnamed\nsaw\ndog\nand\nmet\nthe\npark\nmia\ntom\nlily\n"
    "z\nb\n##ark\n##o\n##en\n##ob\nsam\nann\n";

/* 12 stories; story i's hero comes back, and story i also meets its own
 * friend (a name no other story holds), twice, mid-sentence. */
static const char *const heroes[] = {"Mia", "Tom", "Lily", "Zarko", "Bob", "Ben"};
static const char *const friends[] = {"Anna", "Bert", "Cleo", "Dora", "Egon", "Finn",
                                      "Gus",  "Hugo", "Ivy",  "Jon",  "Kim",  "Lars"};

static void write_stories(const char *path) {
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 12; i++)
        fprintf(f, "Once there was a girl named %s. %s saw the dog and %s. The dog met %s and %s.\n\n", heroes[i % 6],
                heroes[i % 6], friends[i], friends[i], heroes[i % 6]);
    fclose(f);
}

/* out is ids with the hero's mentions replaced by some other name, all alike. */
static int only_hero_changed(const Hero *h, const int32_t *ids, int len, const IntVec *out) {
    int grow = (int)out->len - len;
    if (grow % h->n_mentions) return 0;
    int n = h->n_pieces + grow / h->n_mentions, m0 = h->mentions[0];
    if (n < 1 || n > 16) return 0;
    IntVec want = {0};
    int starts[HERO_MAX_MENTIONS];
    Error e;
    int ok = slm_swap_hero(ids, len, h, out->data + m0, n, &want, starts, &e) == 0 && want.len == out->len &&
             !memcmp(want.data, out->data, want.len * sizeof(int32_t)) &&
             (n != h->n_pieces || memcmp(out->data + m0, h->pieces, (size_t)n * sizeof(int32_t)));
    slm_intvec_free(&want);
    return ok;
}

typedef struct Recorder {
    NameSwap *ns;
    const Stories *s;
    int calls, test_calls;
} Recorder;

static int record(void *ctx, const Stories *s, int story, uint64_t key, IntVec *out, Error *e) {
    Recorder *r = ctx;
    r->calls++;
    for (int i = 0; i < s->n_test; i++) r->test_calls += s->test[i] == story;
    return slm_name_swap_story(r->ns, s, story, key, out, e);
}

/* The 12 stories written to file (under the test's directory) and read with
 * vocab_text into t and s, and ns made for them with probability p; 0 when all went. */
static int swap_fixture(const char *file, Tokenizer *t, Stories *s, NameSwap *ns, double p) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", check_tmpdir(), file);
    write_stories(path);
    Error e;
    StoriesOptions so = slm_stories_default_options();
    so.use_cache = 0;
    CHECK(slm_tokenizer_from_text(t, vocab_text, strlen(vocab_text), 0, &e) == 0);
    if (!CHECK(slm_stories_load(s, path, t, &so, &e) == 0 && s->n_test == 1)) return -1;
    return CHECK(slm_name_swap_init(ns, t, path, s, p, &e) == 0) ? 0 : -1;
}

static void swap_names_renames_heroes_only(void) {
    char out[4096];
    snprintf(out, sizeof out, "%s/swap_model.safetensors", check_tmpdir());
    Tokenizer t;
    Stories s;
    NameSwap ns;
    Error e;
    if (swap_fixture("swap_stories.txt", &t, &s, &ns, 1.0)) return;
    /* the test story's friend is unknown: names come from training stories only */
    for (int i = 0; i < 12; i++) {
        char w[16];
        snprintf(w, sizeof w, "%s", friends[i]);
        w[0] = (char)(w[0] - 'A' + 'a');
        CHECK((slm_names_count(&ns.names, w) == 0) == (i == s.test[0]));
    }
    IntVec got = {0}, again = {0};
    int32_t ids[128];
    int renamed = 0;
    for (int k = 0; k < s.n_train; k++) {
        int i = s.train[k], len = (int)story_len(&s, i);
        story_copy_ids(&s, i, ids);
        Hero h;
        CHECK(slm_find_hero(&t, &ns.names, ids, len, &h) == 1);
        for (uint64_t key = 1; key <= 4; key++) {
            CHECK(slm_name_swap_story(&ns, &s, i, key, &got, &e) == 0);
            CHECK(slm_name_swap_story(&ns, &s, i, key, &again, &e) == 0); /* seeded */
            CHECK(got.len == again.len && !memcmp(got.data, again.data, got.len * sizeof(int32_t)));
            renamed += CHECK(only_hero_changed(&h, ids, len, &got));
        }
    }
    CHECK(renamed == 4 * s.n_train);
    ns.p = 0.0; /* never: the story as it is */
    story_copy_ids(&s, s.train[0], ids);
    CHECK(slm_name_swap_story(&ns, &s, s.train[0], 9, &got, &e) == 0);
    CHECK(got.len == story_len(&s, s.train[0]) && !memcmp(got.data, ids, got.len * sizeof(int32_t)));
    ns.p = 1.0;

    /* training hands it every story of every step, never a test story */
    Recorder rec = {&ns, &s, 0, 0};
    TrainOptions o = slm_train_default_options();
    o.steps = 6, o.batch = 4, o.eval_every = 0, o.out = out, o.vocab_text = vocab_text, o.vocab_size = t.size;
    o.swap_names = 1.0, o.augment = record, o.augment_ctx = &rec;
    TrainResult r;
    if (!CHECK(slm_train_run(&s, &o, NULL, NULL, &r, &e) == 0)) fprintf(stderr, "  train_run: %s\n", e.message);
    CHECK(rec.calls == 6 * 4 && rec.test_calls == 0);
    slm_intvec_free(&got), slm_intvec_free(&again);
    slm_name_swap_free(&ns), slm_stories_free(&s), slm_tokenizer_free(&t);
}

/* ---- --invent-names ------------------------------------------------------------- */

/* Invented names: seeded, of 2+ pieces as the tokenizer spells them, never a
 * word of the training stories (b ##ob would spell bob, a hero), and many. */
static void invented_names_never_seen(const Tokenizer *t, const NameSwap *ns) {
    CHECK(ns->inventor.n_tails == 4 && ns->inventor.n_heads > 10);
    SwapName a, b;
    char seen[64][64];
    int n_seen = 0;
    for (uint64_t key = 1; key <= 200; key++) {
        Rng r1, r2;
        slm_rng_seed(&r1, key), slm_rng_seed(&r2, key);
        int n = slm_name_invent(&ns->inventor, t, &ns->names, &r1, &a);
        CHECK(n >= 2 && n == a.n_pieces);
        CHECK(slm_name_invent(&ns->inventor, t, &ns->names, &r2, &b) == n && !strcmp(a.word, b.word));
        CHECK(slm_names_count(&ns->names, a.word) == 0 && a.kind == NAME_INVENTED);
        CHECK(strcmp(a.word, "bob") != 0);
        SwapName again; /* the pieces are the tokenizer's own spelling */
        CHECK(slm_swap_name_make(t, &ns->names, a.word, &again, NULL) == 0 && again.n_pieces == n &&
              !memcmp(again.pieces, a.pieces, (size_t)n * sizeof(int32_t)));
        int known = 0;
        for (int i = 0; i < n_seen; i++) known |= !strcmp(seen[i], a.word);
        if (!known && n_seen < 64) snprintf(seen[n_seen++], sizeof seen[0], "%s", a.word);
    }
    CHECK(n_seen >= 40); /* different names at different draws */
}

/* With ns->invent 1 every training story's hero gets a name invented anew. */
static void invent_names_renames_heroes(void) {
    Tokenizer t;
    Stories s;
    NameSwap ns;
    Error e;
    if (swap_fixture("invent_stories.txt", &t, &s, &ns, 0.0)) return;
    invented_names_never_seen(&t, &ns);
    ns.invent = 1.0;
    IntVec got = {0}, again = {0};
    int32_t ids[128];
    int names = 0;
    char first[64] = "";
    for (int k = 0; k < s.n_train; k++) {
        int i = s.train[k], len = (int)story_len(&s, i);
        story_copy_ids(&s, i, ids);
        Hero h;
        CHECK(slm_find_hero(&t, &ns.names, ids, len, &h) == 1);
        CHECK(slm_name_swap_story(&ns, &s, i, 77 + (uint64_t)k, &got, &e) == 0);
        CHECK(slm_name_swap_story(&ns, &s, i, 77 + (uint64_t)k, &again, &e) == 0); /* seeded */
        CHECK(got.len == again.len && !memcmp(got.data, again.data, got.len * sizeof(int32_t)));
        CHECK(only_hero_changed(&h, ids, len, &got));
        char word[64];
        CHECK(slm_word_at(&t, got.data, (int)got.len, h.mentions[0], word, sizeof word) >= 2);
        CHECK(slm_names_count(&ns.names, word) == 0);
        if (k == 0) snprintf(first, sizeof first, "%s", word);
        names += strcmp(word, first) != 0;
    }
    CHECK(names > 0); /* not one name for all */
    slm_intvec_free(&got), slm_intvec_free(&again);
    slm_name_swap_free(&ns), slm_stories_free(&s), slm_tokenizer_free(&t);
}

int main(void) {
    weight_decay_on_known_tensors();
    adam_bits_equal_plain_formula();
    dropout_masks_seeded_and_scaled();
    dropout_draws_are_splitmix();
    dropout_keys_ignore_packing();
    dropout_only_with_keys();
    dropout_against_torch();
    ema_arithmetic();
    swap_names_renames_heroes_only();
    invent_names_renames_heroes();
    return check_report();
}
