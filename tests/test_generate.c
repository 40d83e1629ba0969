/* Incremental generation agrees with the whole-story forward pass: the
 * logits slm_generator_feed gives at each position equal slm_model_forward's, also
 * past the 256-token window (where the ring buffer wraps), with heads
 * ablated, and for window8; a batch of samples gives each sample the bits it
 * gets alone, on one thread or several; the sampler does what its settings say. The view on top:
 * samples written together are the stories written one by one with their
 * seeds, the streamed pieces add up to the text, the prompt is echoed as
 * typed and names get their capitals, and a prompt the vocabulary cannot
 * read is told apart. And no idle OpenBLAS thread is left spinning beside
 * a generation. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "generate_batch.h"
#include "storylm/generate.h"
#include "storylm/kernels16.h"
#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/sample.h"
#include "storylm/views.h"

static double max_abs(const float *x, const float *y, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)x[i] - y[i]));
    return d;
}

/* A story of T random ids through both paths; returns the worst difference. */
static double compare(const Architecture *arch, int T, const Ablation *ab, uint64_t seed) {
    Error e = {0};
    ModelConfig cfg = slm_model_config_default(arch, 300);
    Model m;
    Activations a;
    Batch b;
    Generator g;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, seed);
    Rng r;
    slm_rng_seed(&r, seed + 1);
    for (int i = 0; i < cfg.n_heads * cfg.window && m.distance; i++) m.distance[i] = (float)slm_rng_range(&r, -2, 2);
    int32_t *ids = malloc(T * sizeof *ids);
    for (int t = 0; t < T; t++) ids[t] = t == 0 ? 1 : (int32_t)slm_rng_below(&r, 300);
    CHECK(slm_activations_init(&a, &cfg, T, &e) == 0);
    CHECK(slm_batch_init(&b, T, 1, &e) == 0);
    CHECK(slm_batch_add(&b, ids, T, &e) == 0);
    float loss;
    CHECK(slm_model_forward(&m, &a, &b, ab, &loss, &e) == 0);
    CHECK(slm_generator_init(&g, &m, ab, &e) == 0);
    double worst = 0;
    for (int t = 0; t < T; t++) {
        const float *logits = slm_generator_feed(&g, ids[t]);
        worst = fmax(worst, max_abs(logits, a.logits + (size_t)t * cfg.vocab_size, cfg.vocab_size));
    }
    slm_generator_free(&g);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
    free(ids);
    return worst;
}

static void generation_matches_forward(void) {
    CHECK(compare(&slm_attention_arch, 40, NULL, 1) < 1e-4);
    CHECK(compare(&slm_attention_arch, 600, NULL, 2) < 1e-4); /* the window wraps twice */
    CHECK(compare(&slm_window8_arch, 50, NULL, 3) < 1e-4);
    float mean[8 * 16];
    for (int i = 0; i < 8 * 16; i++) mean[i] = 0.01f * (float)(i % 17) - 0.08f;
    Ablation zero = {.heads = check_heads((1u << 3) | (1u << 5)), .mode = ABLATE_ZERO};
    Ablation avg = {.heads = check_heads(0xffu), .mode = ABLATE_MEAN, .mean = mean};
    CHECK(compare(&slm_attention_arch, 300, &zero, 4) < 1e-4);
    CHECK(compare(&slm_attention_arch, 100, &avg, 5) < 1e-4);
}

static void greedy_takes_the_largest(void) {
    Error e = {0};
    Sampler s;
    float logits[5] = {0.1f, 2.0f, 2.0f, -1.0f, 0.5f};
    CHECK(slm_sampler_init(&s, 5, 0.0f, 0, 1.0f, 1, &e) == 0);
    CHECK(slm_sampler_sample(&s, logits) == 1); /* ties go to the lower id */
    slm_sampler_free(&s);
}

/* Draws n samples and counts them per token. */
static void histogram(float temperature, int top_k, float top_p, const float *logits, int V, int n, int *counts) {
    Error e = {0};
    Sampler s;
    CHECK(slm_sampler_init(&s, V, temperature, top_k, top_p, 42, &e) == 0);
    memset(counts, 0, V * sizeof *counts);
    for (int i = 0; i < n; i++) counts[slm_sampler_sample(&s, logits)]++;
    slm_sampler_free(&s);
}

static void sampling_follows_its_settings(void) {
    enum { V = 6, N = 60000 };
    float logits[V] = {2.0f, 1.0f, 0.0f, -1.0f, 0.5f, 1.5f};
    float p[V];
    int counts[V];
    slm_softmax_probs(logits, V, p);
    histogram(1.0f, 0, 1.0f, logits, V, N, counts);
    for (int i = 0; i < V; i++) CHECK_CLOSE((double)counts[i] / N, p[i], 0.05, 0.005);
    histogram(1.0f, 2, 1.0f, logits, V, N, counts); /* top-2: tokens 0 and 5 only */
    CHECK(counts[0] + counts[5] == N);
    CHECK_CLOSE((double)counts[0] / N, p[0] / (p[0] + p[5]), 0.05, 0.005);
    histogram(1.0f, 0, 0.5f, logits, V, N, counts); /* p[0] = 0.39 < 0.5: tokens 0 and 5 */
    CHECK(counts[0] + counts[5] == N && counts[5] > 0);
    histogram(0.01f, 0, 1.0f, logits, V, 1000, counts); /* a cold sampler is nearly greedy */
    CHECK(counts[0] == 1000);
    Sampler s;
    Error e = {0};
    /* refused naming the parameter and the value, for each front end to say in its words */
    CHECK(slm_sampler_init(&s, V, -1.0f, 0, 1.0f, 1, &e) == -1 && strstr(e.message, "out of range (0 to 100)"));
    CHECK(e.param.kind == ERROR_PARAM_VALUE && strcmp(e.param.name, "temperature") == 0 &&
          strcmp(e.param.value, "-1") == 0);
    CHECK(slm_sampler_init(&s, V, 1.0f, 0, 2.0f, 1, &e) == -1 && strcmp(e.param.key, "top_p") == 0);
}

static void same_seed_same_draws(void) {
    enum { V = 50 };
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = sinf((float)i);
    Error e = {0};
    Sampler a, b;
    CHECK(slm_sampler_init(&a, V, 0.9f, 10, 0.9f, 7, &e) == 0 && slm_sampler_init(&b, V, 0.9f, 10, 0.9f, 7, &e) == 0);
    int same = 1;
    for (int i = 0; i < 200; i++) same &= slm_sampler_sample(&a, logits) == slm_sampler_sample(&b, logits);
    CHECK(same);
    slm_sampler_free(&a);
    slm_sampler_free(&b);
}

/* Samplers drawing one after the other in one scratch (slm_sampler_share_scratch,
 * as a batch's samples do) draw what each draws in its own, on settings that
 * use every scratch buffer (the radix sort's many candidates, the penalty's,
 * min-p's), and give the same log-probabilities; freeing the ones that borrow
 * leaves the owner's scratch alone. */
static void shared_scratch_same_draws(void) {
    enum { V = 2000, N = 6, STEPS = 150 };
    const double temps[N] = {0.8, 1.5, 0.8, 1.0, 0.0, 2.0}, top_ps[N] = {0.95, 0.999, 1.0, 0.9, 0.95, 1.0};
    const int top_ks[N] = {0, 0, 40, 0, 0, 0};
    const double min_ps[N] = {0, 0, 0, 0.05, 0, 0}, penalties[N] = {1, 1.3, 1, 1.1, 1, 1};
    Error e = {0};
    Sampler own[N], shared[N];
    for (int i = 0; i < N; i++) {
        SamplerSettings st = slm_sampler_settings_default();
        st.temperature = temps[i], st.top_p = top_ps[i], st.top_k = top_ks[i], st.min_p = min_ps[i];
        st.repeat_penalty = penalties[i], st.repeat_last_n = 64;
        CHECK(slm_sampler_init_with(&own[i], V, &st, 40 + i, &e) == 0);
        CHECK(slm_sampler_init_with(&shared[i], V, &st, 40 + i, &e) == 0);
        if (i) slm_sampler_share_scratch(&shared[i], &shared[0]);
    }
    Rng r;
    slm_rng_seed(&r, 41);
    float *logits = malloc((size_t)N * V * sizeof(float));
    int32_t story[N][STEPS];
    int differ = 0;
    for (int t = 0; t < STEPS; t++) {
        for (int i = 0; i < N * V; i++) logits[i] = (float)(slm_rng_normal(&r) * (1 + t % 5)); /* flat to peaked */
        for (int i = 0; i < N; i++) {
            const float *x = logits + (size_t)i * V;
            int a = slm_sampler_sample_story(&own[i], x, story[i], t);
            int b = slm_sampler_sample_story(&shared[i], x, story[i], t);
            int32_t ids_a[3], ids_b[3];
            float lp_a[3], lp_b[3];
            float la = slm_sampler_logprobs(&own[i], x, a, 3, ids_a, lp_a);
            float lb = slm_sampler_logprobs(&shared[i], x, a, 3, ids_b, lp_b);
            differ += a != b || memcmp(&la, &lb, sizeof la) || memcmp(ids_a, ids_b, sizeof ids_a) ||
                      memcmp(lp_a, lp_b, sizeof lp_a);
            story[i][t] = a;
        }
    }
    printf("shared scratch: %d samplers x %d draws, %d differ from their own scratch's\n", N, STEPS, differ);
    CHECK(differ == 0);
    for (int i = N - 1; i >= 0; i--) slm_sampler_free(&shared[i]), slm_sampler_free(&own[i]);
    CHECK(shared[0].probs == NULL && !shared[1].borrowed);
    free(logits);
}

static void batch_gives_each_sample_its_own_bits(const Architecture *arch, const Ablation *ab, uint64_t seed,
                                                 int threads) {
    batch_of_n_gives_each_sample_its_own_bits(arch, ab, seed, threads, 5, 0, PRECISION_FP32);
}

static void batches_match_alone(void) {
    batch_gives_each_sample_its_own_bits(&slm_attention_arch, NULL, 11, 1);
    batch_gives_each_sample_its_own_bits(&slm_window8_arch, NULL, 12, 1);
    Ablation zero = {.heads = check_heads((1u << 1) | (1u << 6)), .mode = ABLATE_ZERO};
    batch_gives_each_sample_its_own_bits(&slm_attention_arch, &zero, 13, 1);
    batch_gives_each_sample_its_own_bits(&slm_attention_arch, NULL, 14, 2);
    batch_gives_each_sample_its_own_bits(&slm_window8_arch, NULL, 15, 3);
    /* 64 samples, as generate --samples 64; a window that is no multiple of the cache's blocks of 16 slots */
    batch_of_n_gives_each_sample_its_own_bits(&slm_attention_arch, NULL, 16, 1, 64, 0, PRECISION_FP32);
    batch_of_n_gives_each_sample_its_own_bits(&slm_attention_arch, NULL, 17, 2, 64, 37, PRECISION_FP32);
}

/* N samples of a random model of config cfg (300 tokens) fed the same
 * random tokens through the token table (the first layer's keys and values
 * of each token, shared) and through each sample's own cache: the same
 * logits, bit for bit, every step, also past the window; the table read
 * again after some steps that read the caches. */
static void table_as_caches(ModelConfig cfg, const Ablation *ab, int N, uint64_t seed) {
    enum { MAX_N = 64, STEPS = 300 };
    Error e = {0};
    Model m;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, seed);
    Rng r;
    slm_rng_seed(&r, seed + 1);
    for (int i = 0; i < cfg.n_heads * cfg.window; i++) m.distance[i] = (float)slm_rng_range(&r, -2, 2);
    GeneratorBatch table, caches;
    CHECK(slm_generator_batch_init(&table, &m, ab, N, &e) == 0 &&
          slm_generator_batch_init(&caches, &m, ab, N, &e) == 0);
    CHECK((table.token_table != NULL) == (N > 1)); /* one sample reads its own cache, in the core's caches */
    caches.cache_only = 1;
    int which[MAX_N], same = 1;
    for (int s = 0; s < N; s++) which[s] = s;
    for (int step = 0; step < STEPS; step++) {
        int32_t tokens[MAX_N];
        for (int s = 0; s < N; s++)
            tokens[s] = (int32_t)slm_rng_below(&r, step < 270 ? 30 + step : 300); /* ever more tokens */
        table.cache_only = step >= 100 && step < 110;                             /* a stretch read from the caches */
        slm_generator_batch_feed(&table, which, tokens, N);
        slm_generator_batch_feed(&caches, which, tokens, N);
        same &= memcmp(table.logits, caches.logits, (size_t)N * cfg.vocab_size * sizeof(float)) == 0;
    }
    CHECK(same);
    slm_generator_batch_free(&table);
    slm_generator_batch_free(&caches);
    slm_model_free(&m);
}

/* The token table gives each sample's heads the bits its own cache gives:
 * batches of 1, 5 and 64, a window of 256 and of 37 slots (no multiple of
 * 16: a last block of fewer slots), a head switched off, --score additive
 * (the keys from the caches, the values from the table), two layers (the
 * second reads the caches). */
static void token_table_reads_as_the_caches(void) {
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, 300);
    Ablation off = {.heads = check_heads(1u << 2), .mode = ABLATE_ZERO};
    table_as_caches(cfg, NULL, 1, 31);
    table_as_caches(cfg, NULL, 5, 32);
    table_as_caches(cfg, NULL, 64, 33);
    table_as_caches(cfg, &off, 5, 34);
    ModelConfig short_window = cfg, additive = cfg, two = cfg;
    short_window.window = 37;
    table_as_caches(short_window, NULL, 5, 35);
    table_as_caches(short_window, &off, 64, 36);
    additive.score = SCORE_ADDITIVE;
    table_as_caches(additive, NULL, 5, 37);
    two.n_layers = 2;
    table_as_caches(two, &off, 5, 38);
}

/* A copy copies only the slots written so far: sample 1's short story
 * copied onto sample 0, whose longer story left its slots past them full,
 * goes on as sample 1's story alone, bit for bit (the old slots are written
 * before they are read), also once the window (37 slots) wraps. */
static void copy_over_a_longer_story(void) {
    Error e = {0};
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, 300);
    cfg.window = 37;
    Model m;
    GeneratorBatch batch;
    Generator alone;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, 21);
    CHECK(slm_generator_batch_init(&batch, &m, NULL, 2, &e) == 0 && slm_generator_init(&alone, &m, NULL, &e) == 0);
    Rng r;
    slm_rng_seed(&r, 22);
    int first = 0, second = 1, same = 1;
    for (int t = 0; t < 30; t++) {
        int32_t token = (int32_t)slm_rng_below(&r, 300), other = (token + 1) % 300;
        slm_generator_batch_feed(&batch, &first, &token, 1);
        if (t < 3) slm_generator_batch_feed(&batch, &second, &other, 1), slm_generator_feed(&alone, other);
    }
    slm_generator_batch_copy(&batch, 1, 0);
    for (int t = 0; t < 80; t++) {
        int32_t token = (int32_t)slm_rng_below(&r, 300);
        slm_generator_batch_feed(&batch, &first, &token, 1);
        same &= memcmp(slm_generator_feed(&alone, token), slm_generator_batch_logits(&batch, 0),
                       cfg.vocab_size * sizeof(float)) == 0;
    }
    CHECK(same);
    slm_generator_free(&alone);
    slm_generator_batch_free(&batch);
    slm_model_free(&m);
}

/* slm_blend_values_by_slot's order written out: lane l of channel c sums
 * the slots j = l mod 16 (j < n) in order, one fmaf each; then
 * s1[i] = L[i] + L[i+8], s2[i] = s1[i] + s1[i+4], s3[i] = s2[i] + s2[i+2],
 * out = s3[0] + s3[1]. values as the keys (slm_key_at). */
static float blend_by_slot_emulated(const float *a, int n, const float *values, int vd, int c) {
    float L[16], s1[8], s2[4], s3[2];
    for (int l = 0; l < 16; l++) {
        L[l] = 0.0f;
        for (int j = l; j < n; j += 16) L[l] = fmaf(a[j], values[slm_key_at(vd, c, j)], L[l]);
    }
    for (int i = 0; i < 8; i++) s1[i] = L[i] + L[i + 8];
    for (int i = 0; i < 4; i++) s2[i] = s1[i] + s1[i + 4];
    for (int i = 0; i < 2; i++) s3[i] = s2[i] + s2[i + 2];
    return s3[0] + s3[1];
}

/* Output o of slm_dense16 for input x (cols) as its comment says: the even
 * columns' FMAs in one chain, the odd ones' in another, added, then the bias. */
static float dense_emulated(const float *W, const float *bias, const float *x, int cols, int o) {
    float even = 0.0f, odd = 0.0f;
    for (int k = 0; k < cols; k++) {
        if (k % 2 == 0)
            even = fmaf(W[(size_t)o * cols + k], x[k], even);
        else
            odd = fmaf(W[(size_t)o * cols + k], x[k], odd);
    }
    return (even + odd) + bias[o];
}

/* slm_dense16 over any number of samples (groups of 6 through pairs of
 * blocks, of 8 through one, 4, 2, 1 and one alone), in any order, gives
 * each sample the bits of its sums written out, for rows in and off the
 * blocks of 16 and 32 and odd and even widths. */
static void dense_groups_are_their_sums(void) {
    const int shapes[][2] = {{7, 5}, {16, 1}, {33, 128}, {48, 160}, {300, 127}, {2000, 128}};
    const int counts[] = {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 64};
    Rng r;
    slm_rng_seed(&r, 37);
    int wrong = 0, checked = 0;
    for (int sh = 0; sh < 6; sh++) {
        int rows = shapes[sh][0], cols = shapes[sh][1], N = 64;
        float *W = malloc((size_t)rows * cols * sizeof(float)), *bias = malloc(rows * sizeof(float));
        float *x = malloc((size_t)N * (cols + 3) * sizeof(float)), *y = malloc((size_t)N * (rows + 5) * sizeof(float));
        for (int i = 0; i < rows * cols; i++) W[i] = (float)slm_rng_normal(&r);
        for (int i = 0; i < rows; i++) bias[i] = (float)slm_rng_normal(&r);
        for (int i = 0; i < N * (cols + 3); i++) x[i] = (float)slm_rng_normal(&r);
        Dense16 d;
        Error e = {0};
        CHECK(slm_dense16_pack(&d, W, cols, 1, rows, cols, &e) == 0);
        for (int c = 0; c < 11; c++) {
            int k = counts[c], which[64];
            for (int j = 0; j < N; j++) which[j] = j;
            for (int j = N - 1; j > 0; j--) { /* a shuffled batch of k of the 64 */
                int t = (int)slm_rng_below(&r, (uint64_t)j + 1), u = which[j];
                which[j] = which[t], which[t] = u;
            }
            for (int i = 0; i < N * (rows + 5); i++) y[i] = NAN;
            slm_dense16(&d, bias, x, cols + 3, which, k, y, rows + 5);
            for (int j = 0; j < k; j++)
                for (int o = 0; o < rows; o++, checked++) {
                    float want = dense_emulated(W, bias, x + (size_t)which[j] * (cols + 3), cols, o);
                    wrong += memcmp(&want, &y[(size_t)which[j] * (rows + 5) + o], sizeof want) != 0;
                }
        }
        slm_dense16_free(&d);
        free(W), free(bias), free(x), free(y);
    }
    printf("dense: %d outputs, %d not their sums' bits\n", checked, wrong);
    CHECK(wrong == 0);
}

/* A head's blend over values laid out by slot (the transformer's 8-wide
 * heads) has the bits of its order written out, and is the weighted sum to
 * rounding, for slot counts in and off the blocks of 16 and widths of 8, 12, 4. */
static void blend_by_slot_is_its_order(void) {
    enum { SLOTS = 272 };
    const int widths[] = {8, 12, 4}, counts[] = {1, 15, 16, 37, 256, 272};
    Rng r;
    slm_rng_seed(&r, 31);
    float *a = calloc(SLOTS, sizeof(float)), *values = calloc(SLOTS * 12, sizeof(float)), out[12];
    int same = 1;
    double worst = 0;
    for (int w = 0; w < 3; w++)
        for (int t = 0; t < 6; t++) {
            int vd = widths[w], n = counts[t];
            for (int j = 0; j < SLOTS; j++) a[j] = j < n ? (float)slm_rng_uniform(&r) : 1e30f; /* past n: unread */
            for (int i = 0; i < SLOTS * vd; i++) values[i] = (float)slm_rng_uniform(&r) - 0.5f;
            slm_blend_values_by_slot(a, n, values, vd, out);
            for (int c = 0; c < vd; c++) {
                double sum = 0;
                for (int j = 0; j < n; j++) sum += (double)a[j] * values[slm_key_at(vd, c, j)];
                same &= out[c] == blend_by_slot_emulated(a, n, values, vd, c);
                worst = fmax(worst, fabs(out[c] - sum));
            }
        }
    CHECK(same && worst < 1e-4);
    free(a);
    free(values);
}

/* The transformer the same: its products over the samples of a step, on one
 * thread or two, with --pos alibi (the shipped model's distance scores) and
 * rope, past the window, with heads switched off. */
static void transformer_batches_match_alone(void) {
    ModelConfig cfg = slm_model_config_default(&slm_transformer_arch, 300);
    cfg.pos = POS_ALIBI;
    batch_of_config_gives_each_sample_its_own_bits(cfg, NULL, 21, 1, 5, PRECISION_FP32);
    batch_of_config_gives_each_sample_its_own_bits(cfg, NULL, 22, 2, 5, PRECISION_FP32);
    batch_of_config_gives_each_sample_its_own_bits(cfg, NULL, 23, 1, 64, PRECISION_FP32);
    batch_of_config_gives_each_sample_its_own_bits(cfg, NULL, 24, 2, 64, PRECISION_FP32);
    cfg.pos = POS_ROPE;
    cfg.window = 37; /* no multiple of the cache's blocks of 16 slots */
    float mean[2 * 8 * 8];
    for (int i = 0; i < 2 * 8 * 8; i++) mean[i] = 0.01f * (float)(i % 13) - 0.06f;
    Ablation zero = {.heads = check_heads((1u << 2) | (1u << 11)), .mode = ABLATE_ZERO};
    Ablation avg = {.heads = check_heads(0x0f0u), .mode = ABLATE_MEAN, .mean = mean};
    batch_of_config_gives_each_sample_its_own_bits(cfg, &zero, 25, 2, 5, PRECISION_FP32);
    batch_of_config_gives_each_sample_its_own_bits(cfg, &avg, 26, 2, 64, PRECISION_FP32);
}

/* ---- the view: a small vocabulary and a random model over it --------------------- */

/* Every letter as a word and as a "##" piece, some punctuation and words. */
static char *test_vocab(void) {
    static const char *const words[] = {"[UNK]", "[EOS]", ".",   ",",     "!",   "?",    "\"",
                                        "'",     "lily",  "tom", "found", "the", "ball", "she",
                                        "saw",   "then",  "and", "ran",   "we",  "met",  "today"};
    char *v = malloc(4096), *p = v;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) p += sprintf(p, "%s\n", words[i]);
    for (char c = 'a'; c <= 'z'; c++) p += sprintf(p, "%c\n##%c\n", c, c); /* "a" among them */
    return v;
}

static int open_test_model(LoadedModel *lm, uint64_t seed, Error *e) {
    *lm = (LoadedModel){.path = "test.safetensors"};
    char *vocab = test_vocab();
    int rc = slm_tokenizer_from_text(&lm->tokenizer, vocab, strlen(vocab), 0, e);
    free(vocab);
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, lm->tokenizer.size);
    if (!rc) rc = slm_model_init(&lm->model, &cfg, e);
    if (!rc) slm_model_randomize(&lm->model, seed);
    return rc;
}

static void close_test_model(LoadedModel *lm) {
    slm_model_free(&lm->model);
    slm_tokenizer_free(&lm->tokenizer);
}

/* What the streaming callback was told, per sample. */
typedef struct Streamed {
    ByteVec text[3];
    int calls[3], done[3], after_done, first_is_prompt[3];
    const char *prompt;
} Streamed;

static int collect(void *ctx, int sample, const char *text, size_t len, int done) {
    Streamed *st = ctx;
    Error e;
    if (st->done[sample]) st->after_done++;
    if (st->calls[sample]++ == 0)
        st->first_is_prompt[sample] = len >= strlen(st->prompt) && !strncmp(text, st->prompt, strlen(st->prompt));
    st->done[sample] += done;
    return slm_bytevec_append(&st->text[sample], text, len, &e);
}

/* Three samples together: each writes what it writes alone with seed + i,
 * and its streamed pieces, the prompt first, add up to its text. */
static void samples_together_are_samples_alone(void) {
    Error e = {0};
    LoadedModel lm;
    CHECK(open_test_model(&lm, 21, &e) == 0);
    const char *prompt = "Lily found a";
    const char *stops[] = {"ball"};
    ViewGenerateOptions go = {
        .max_tokens = 60,
        .seed = 5,
        .sampling = {.temperature = 1.0, .top_p = 0.95, .min_p = 0.02, .repeat_penalty = 1.3, .repeat_last_n = 8},
        .stops = stops,
        .n_stops = 1,
        .n_probs = 3};
    ViewBatch vb;
    Streamed st = {.prompt = prompt};
    CHECK(slm_view_batch_init(&vb, &lm, NULL, prompt, &go, 3, &e) == 0);
    CHECK(slm_view_batch_run(&vb, collect, &st, &e) == 0);
    for (int i = 0; i < 3; i++) {
        ViewGenerateOptions one = go;
        one.seed = go.seed + (uint64_t)i;
        ViewGenerator vg;
        CHECK(slm_view_generator_init(&vg, &lm, NULL, prompt, &one, &e) == 0);
        while (slm_view_generator_next(&vg, &e) > 0) {}
        const ViewGenerator *b = &vb.samples[i];
        CHECK(b->ids.len == vg.ids.len && !memcmp(b->ids.data, vg.ids.data, vg.ids.len * sizeof(int32_t)));
        CHECK(b->tokens == vg.tokens && strcmp(b->stop_reason, vg.stop_reason) == 0);
        CHECK(b->logprob.len == vg.logprob.len && !memcmp(b->logprob.data, vg.logprob.data, vg.logprob.len));
        CHECK(b->alternatives.len == vg.alternatives.len &&
              vg.alternatives.len == vg.logprob.len * 6 && /* 3 of 8 bytes a 4-byte logprob */
              !memcmp(b->alternatives.data, vg.alternatives.data, vg.alternatives.len));
        char *text = slm_view_generator_text(b, &e);
        CHECK(text && st.text[i].len == strlen(text) && !memcmp(st.text[i].data, text, st.text[i].len));
        CHECK(st.done[i] == 1 && st.first_is_prompt[i] &&
              (st.calls[i] > 2 || b->tokens <= 2)); /* "ball" may come at once */
        free(text);
        slm_view_generator_free(&vg);
        slm_bytevec_free(&st.text[i]);
    }
    CHECK(st.after_done == 0);
    CHECK(strcmp(vb.samples[1].stop_reason, "stop") == 0); /* seed 6 writes "ball" */
    CHECK(vb.samples[0].ids.len != vb.samples[1].ids.len ||
          memcmp(vb.samples[0].ids.data, vb.samples[1].ids.data, vb.samples[0].ids.len * sizeof(int32_t)) != 0);
    slm_view_batch_free(&vb);
    close_test_model(&lm);
}

/* slm_view_story_text of prompt + the tokens of continuation. */
static char *story(const LoadedModel *lm, const NameList *names, const char *prompt, const char *continuation) {
    Error e;
    IntVec ids = {0};
    CHECK(slm_tokenizer_encode(&lm->tokenizer, prompt, strlen(prompt), &ids, &e) == 0);
    size_t n_prompt = ids.len;
    CHECK(slm_tokenizer_encode(&lm->tokenizer, continuation, strlen(continuation), &ids, &e) == 0);
    char *text = slm_view_story_text(&lm->tokenizer, prompt, ids.data, n_prompt, ids.len, names, &e);
    slm_intvec_free(&ids);
    return text;
}

static int story_is(const LoadedModel *lm, const NameList *names, const char *prompt, const char *continuation,
                    const char *want) {
    char *got = story(lm, names, prompt, continuation);
    int ok = got && strcmp(got, want) == 0;
    if (!ok) printf("story: got \"%s\", want \"%s\"\n", got ? got : "(null)", want);
    free(got);
    return ok;
}

/* The prompt comes back byte for byte; the words written get capitals where
 * a sentence starts and where a name is: one the names know, one the prompt
 * wrote with a capital mid-sentence, one it wrote at a sentence start that
 * the names never saw; not a common word that merely started a sentence. */
static void prompt_as_typed_and_names_capitalised(void) {
    Error e = {0};
    LoadedModel lm;
    CHECK(open_test_model(&lm, 22, &e) == 0);
    const char *known = "Lily went out. Then Lily saw Tom. Tom and Lily played. Later Tom ran. Then they sat.";
    StorySpan all = {0, strlen(known)};
    NameList names;
    CHECK(slm_names_learn(&names, known, &all, 1, NULL, &e) == 0);
    CHECK(story_is(&lm, &names, "Lily found a", "ball. then tom saw lily", "Lily found a ball. Then Tom saw Lily"));
    CHECK(story_is(&lm, &names, "lily  FOUND\na ", "ball", "lily  FOUND\na ball")); /* as typed; no second space */
    CHECK(story_is(&lm, &names, "Zo\xc3\xab said: \"Hi", "zoe ran", "Zo\xc3\xab said: \"Hi zoe ran"));
    CHECK(story_is(&lm, &names, "We met Bip today.", "bip ran and then bip saw tom",
                   "We met Bip today. Bip ran and then Bip saw Tom"));
    CHECK(story_is(&lm, &names, "Zorbo ran. Then", "zorbo saw a ball then", "Zorbo ran. Then Zorbo saw a ball then"));
    IntVec ids = {0}; /* a word the prompt began goes on: "Lily jum" + "##p ##e ##d tom" */
    CHECK(slm_tokenizer_encode(&lm.tokenizer, "Lily jumped tom", 15, &ids, &e) == 0 && ids.len == 8);
    char *text = slm_view_story_text(&lm.tokenizer, "Lily jum", ids.data, 4, ids.len, &names, &e);
    CHECK(text && strcmp(text, "Lily jumped Tom") == 0);
    free(text);
    slm_intvec_free(&ids);
    CHECK(story_is(&lm, &names, "", "lily saw a ball. she ran", "Lily saw a ball. She ran"));
    CHECK(story_is(&lm, NULL, "Lily found Tom", "and tom saw the ball", "Lily found Tom and Tom saw the ball"));
    slm_names_free(&names);
    close_test_model(&lm);
}

/* [UNK] tokens counted, the characters behind them named once each, and a
 * warning only when they are most of the prompt. */
static void unknown_characters_are_named(void) {
    Error e = {0};
    LoadedModel lm;
    CHECK(open_test_model(&lm, 23, &e) == 0);
    PromptUnknown pu;
    char chars[64];
    CHECK(slm_view_prompt_unknown(&lm.tokenizer, "\xd0\x96\xd0\xb8\xd0\xb6 \xd0\xb6\xd0\xb8", &pu, chars, sizeof chars,
                                  &e) == 0);
    CHECK(pu.tokens == 2 && pu.unk == 2 && slm_view_prompt_mostly_unknown(&pu));
    CHECK(pu.n_chars == 3 && strcmp(chars, "'\xd0\x96', '\xd0\xb8', '\xd0\xb6'") == 0);
    CHECK(slm_view_prompt_unknown(&lm.tokenizer, "lily saw \xd0\x96\xd0\xb8 today", &pu, chars, sizeof chars, &e) == 0);
    CHECK(pu.unk == 1 && pu.tokens == 4 && !slm_view_prompt_mostly_unknown(&pu) && pu.n_chars == 2);
    CHECK(slm_view_prompt_unknown(&lm.tokenizer, "Zo\xc3\xab saw Tom", &pu, chars, sizeof chars, &e) == 0);
    CHECK(pu.unk == 0 && !slm_view_prompt_mostly_unknown(&pu) &&
          chars[0] == '\0'); /* accents are stripped, not unknown */
    CHECK(slm_view_prompt_unknown(&lm.tokenizer, "", &pu, chars, sizeof chars, &e) == 0 &&
          !slm_view_prompt_mostly_unknown(&pu));
    close_test_model(&lm);
}

/* ---- the repeat penalty, min-p, log-probabilities: against hand-computed cases ---- */

/* The token a sampler at temperature 1, no cut, seeded seed, draws from
 * these logits: the first whose cumulative probability passes the draw. */
static int draw_from(const float *logits, int V, uint64_t seed) {
    float p[512];
    Rng r;
    slm_rng_seed(&r, seed);
    slm_softmax_probs(logits, V, p);
    double u = slm_rng_uniform(&r), acc = 0;
    for (int i = 0; i < V; i++)
        if (u < (acc += p[i])) return i;
    return V - 1;
}

/* llama.cpp's rule on a tiny model's logits: each distinct token of the last
 * repeat_last_n has a positive logit divided by the penalty, a negative one
 * multiplied; tokens further back are untouched. */
static void repeat_penalty_by_hand(void) {
    Error e = {0};
    LoadedModel lm;
    CHECK(open_test_model(&lm, 31, &e) == 0);
    int V = lm.model.cfg.vocab_size;
    Generator g;
    CHECK(slm_generator_init(&g, &lm.model, NULL, &e) == 0);
    slm_generator_feed(&g, 1);
    const float *logits = slm_generator_feed(&g, 9);
    int top = 0, neg = -1; /* the likeliest token (positive logit after randomising) and a negative one */
    for (int i = 1; i < V; i++) top = logits[i] > logits[top] ? i : top;
    for (int i = 0; i < V && neg < 0; i++) neg = logits[i] < 0 ? i : -1;
    CHECK(logits[top] > 0 && neg >= 0);
    int32_t story[] = {neg, 5, top, top, top, 7}; /* top three times: penalised once */
    float want[512];
    memcpy(want, logits, V * sizeof(float));
    want[neg] *= 4.0f, want[top] /= 4.0f, want[5] = want[5] > 0 ? want[5] / 4.0f : want[5] * 4.0f;
    want[7] = want[7] > 0 ? want[7] / 4.0f : want[7] * 4.0f;
    SamplerSettings st = {.temperature = 0, .top_p = 1, .min_p = 0, .repeat_penalty = 4, .repeat_last_n = 64};
    Sampler s;
    CHECK(slm_sampler_init_with(&s, V, &st, 3, &e) == 0);
    int greedy = 0;
    for (int i = 1; i < V; i++) greedy = want[i] > want[greedy] ? i : greedy;
    CHECK(slm_sampler_sample_story(&s, logits, story, 6) == greedy && greedy != top);
    CHECK(slm_sampler_sample(&s, logits) == top); /* no story, no penalty */
    slm_sampler_free(&s);
    int same = 1;
    for (uint64_t seed = 0; seed < 200; seed++) { /* at temperature 1: the draw of the hand-penalised softmax */
        st.temperature = 1;
        CHECK(slm_sampler_init_with(&s, V, &st, seed, &e) == 0);
        same &= slm_sampler_sample_story(&s, logits, story, 6) == draw_from(want, V, seed);
        slm_sampler_free(&s);
    }
    CHECK(same);
    st.repeat_last_n = 2; /* only {top, 7}: neg untouched, so its logit is the model's */
    memcpy(want, logits, V * sizeof(float));
    want[top] /= 4.0f, want[7] = want[7] > 0 ? want[7] / 4.0f : want[7] * 4.0f;
    for (uint64_t seed = 0; seed < 200; seed++) {
        CHECK(slm_sampler_init_with(&s, V, &st, seed, &e) == 0);
        same &= slm_sampler_sample_story(&s, logits, story, 6) == draw_from(want, V, seed);
        slm_sampler_free(&s);
    }
    CHECK(same);
    st.repeat_penalty = 0; /* out of range: refused */
    CHECK(slm_sampler_init_with(&s, V, &st, 1, &e) == -1 && strcmp(e.param.name, "repeat-penalty") == 0);
    slm_generator_free(&g);
    close_test_model(&lm);
}

/* min-p 0.1 on probabilities 1 : 0.5 : 0.09 : 0.2 : 0.05 (as logits) keeps
 * tokens 0, 1 and 3 (0.09 and 0.05 are under a tenth of the likeliest) and
 * draws from them renormalised: 1/1.7, 0.5/1.7, 0.2/1.7. */
static void min_p_cuts_by_hand(void) {
    enum { V = 5, N = 60000 };
    float logits[V] = {logf(1.0f), logf(0.5f), logf(0.09f), logf(0.2f), logf(0.05f)};
    float kept_probs[V] = {1 / 1.7f, 0.5f / 1.7f, 0, 0.2f / 1.7f, 0};
    Error e = {0};
    SamplerSettings st = {.temperature = 1, .top_p = 1, .min_p = 0.1f, .repeat_penalty = 1};
    Sampler s;
    int counts[V] = {0};
    CHECK(slm_sampler_init_with(&s, V, &st, 9, &e) == 0);
    for (int i = 0; i < N; i++) counts[slm_sampler_sample(&s, logits)]++;
    slm_sampler_free(&s);
    CHECK(counts[2] == 0 && counts[4] == 0);
    for (int i = 0; i < V; i++) CHECK_CLOSE((double)counts[i] / N, kept_probs[i], 0.05, 0.005);
    st.min_p = 0.095f; /* 0.09 is cut, 0.1 would be kept: just under the line */
    st.top_k = 2;      /* and top-k after the cut: tokens 0 and 1 only */
    memset(counts, 0, sizeof counts);
    CHECK(slm_sampler_init_with(&s, V, &st, 9, &e) == 0);
    for (int i = 0; i < 6000; i++) counts[slm_sampler_sample(&s, logits)]++;
    slm_sampler_free(&s);
    CHECK(counts[0] + counts[1] == 6000 && counts[1] > 1000);
    st.min_p = 1.5f;
    CHECK(slm_sampler_init_with(&s, V, &st, 1, &e) == -1 && strcmp(e.param.name, "min-p") == 0);
}

/* A token's log-probability is log softmax of the model's logits; the
 * alternatives are the likeliest, most likely first. */
static void logprobs_by_hand(void) {
    enum { V = 6 };
    float logits[V] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f, 2.0f};
    double z = 0;
    for (int i = 0; i < V; i++) z += exp(logits[i]);
    Error e = {0};
    Sampler s;
    CHECK(slm_sampler_init(&s, V, 0.8f, 0, 0.95f, 1, &e) == 0);
    int32_t ids[4];
    float lps[4];
    float lp = slm_sampler_logprobs(&s, logits, 4, 4, ids, lps);
    CHECK_CLOSE(lp, 0.5 - log(z), 1e-5, 1e-5);
    CHECK(ids[0] == 1 && ids[1] == 3 && ids[2] == 5 && ids[3] == 0); /* the tie at 3.0: lower id first */
    CHECK_CLOSE(lps[0], 3.0 - log(z), 1e-5, 1e-5);
    CHECK_CLOSE(lps[3], 1.0 - log(z), 1e-5, 1e-5);
    slm_sampler_free(&s);
}

/* Greedy from a prompt, then the same with a stop string made of the end of
 * one written token and the start of the next: the story ends at the token
 * that completes it, the text is the first text cut just before it, and the
 * streamed pieces never show any of it. */
static void stop_string_across_tokens(void) {
    Error e = {0};
    LoadedModel lm;
    CHECK(open_test_model(&lm, 24, &e) == 0);
    const char *prompt = "lily found";
    ViewGenerateOptions go = slm_view_generate_defaults();
    go.sampling.temperature = 0, go.max_tokens = 40;
    ViewGenerator vg;
    CHECK(slm_view_generator_init(&vg, &lm, NULL, prompt, &go, &e) == 0);
    while (slm_view_generator_next(&vg, &e) > 0) {}
    char *whole = slm_view_generator_text(&vg, &e);
    CHECK(whole && vg.tokens >= 6);
    /* the stop: the last 2 bytes of the text after 4 new tokens and the next byte */
    char *part = slm_view_story_text(&lm.tokenizer, prompt, vg.ids.data, (size_t)vg.prompt_tokens,
                                     (size_t)vg.prompt_tokens + 4, NULL, &e);
    size_t cut = strlen(part);
    CHECK(cut >= strlen(prompt) + 2 && strlen(whole) > cut);
    char stop[4] = {part[cut - 2], part[cut - 1], whole[cut], 0};
    size_t first = (size_t)(strstr(whole + strlen(prompt), stop) - whole);
    slm_view_generator_free(&vg);
    const char *stops[] = {"never written, surely", stop};
    go.stops = stops, go.n_stops = 2;
    ViewBatch vb;
    Streamed sd = {.prompt = prompt};
    CHECK(slm_view_batch_init(&vb, &lm, NULL, prompt, &go, 1, &e) == 0);
    CHECK(slm_view_batch_run(&vb, collect, &sd, &e) == 0);
    char *text = slm_view_generator_text(&vb.samples[0], &e);
    CHECK(strcmp(vb.samples[0].stop_reason, "stop") == 0 && vb.samples[0].stop == stops[1]);
    CHECK(text && strlen(text) == first && strncmp(text, whole, first) == 0);
    CHECK(sd.text[0].len == first && memcmp(sd.text[0].data, whole, first) == 0 && sd.done[0] == 1);
    CHECK(vb.samples[0].tokens <= 5 + (int)(first - cut + 2)); /* ended at the token that wrote it, not later */
    printf("stop '%s' across tokens: %d tokens, text \"%s\"\n", stop, vb.samples[0].tokens, text);
    free(text);
    free(part);
    free(whole);
    slm_bytevec_free(&sd.text[0]);
    slm_view_batch_free(&vb);
    close_test_model(&lm);
}

/* Threads of this process (Linux's /proc), or -1 where that is not there. */
static int process_threads(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *t; (t = readdir(d));) n += t->d_name[0] != '.';
    closedir(d);
    return n;
}

/* After the threads' setup (called first in main) only the main thread runs:
 * the pool a pthread OpenBLAS starts at load is stopped, not left spinning
 * for its first 0.1 s beside a story that takes 5 ms; a second setup (the
 * server's training job calls it again) starts none. */
static void no_idle_blas_threads(void) {
    int n = process_threads();
    if (n < 0) return;
    CHECK(n == 1);
    slm_model_threads_setup(2);
    CHECK(process_threads() == 1);
    printf("threads after the setup: %d\n", n);
}

int main(void) {
    slm_model_threads_setup(2);
    no_idle_blas_threads();
    generation_matches_forward();
    greedy_takes_the_largest();
    sampling_follows_its_settings();
    same_seed_same_draws();
    shared_scratch_same_draws();
    batches_match_alone();
    token_table_reads_as_the_caches();
    copy_over_a_longer_story();
    transformer_batches_match_alone();
    blend_by_slot_is_its_order();
    dense_groups_are_their_sums();
    samples_together_are_samples_alone();
    prompt_as_typed_and_names_capitalised();
    unknown_characters_are_named();
    repeat_penalty_by_hand();
    min_p_cuts_by_hand();
    logprobs_by_hand();
    stop_string_across_tokens();
    return check_report();
}
