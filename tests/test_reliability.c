/* What a hostile-input pass found wrong in the numbers: a long story run in
 * pieces predicts exactly what it predicts whole (with memory bounded by a
 * piece), the loss stays right for huge but finite logits (per token too) and
 * stops naming the position when they overflow, the sampler never draws from
 * NaN, and more alternatives asked for than a model has tokens give them all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/model.h"
#include "storylm/probes.h"
#include "storylm/rng.h"
#include "storylm/sample.h"
#include "storylm/shards.h"
#include "storylm/views.h"

enum { V = 2000 };

static int32_t *random_story(int len, uint64_t seed) {
    Rng r;
    slm_rng_seed(&r, seed);
    int32_t *ids = malloc((size_t)len * sizeof *ids);
    ids[0] = 1;
    for (int t = 1; t < len; t++) ids[t] = 2 + (int32_t)slm_rng_below(&r, V - 2);
    return ids;
}

typedef struct PassResult {
    double loss_sum;
    long long correct;
    float *grads;
} PassResult;

/* The stories through shards of `positions` positions each, on `threads` shards. */
static PassResult run_pass(const Model *m, const StoryRef *stories, int n, int threads, int positions) {
    PassResult r = {0};
    Shards s;
    Error e = {0};
    r.grads = calloc(m->n_params, sizeof(float));
    if (slm_shards_init(&s, m, threads, positions, n, &e)) {
        fprintf(stderr, "shards_init: %s\n", e.message);
        abort();
    }
    long long total = 0;
    for (int i = 0; i < n; i++) total += stories[i].len - 1;
    CHECK(slm_shards_run(&s, stories, n, NULL, 1.0f / (float)total, r.grads, &r.loss_sum, &r.correct, &e) == 0);
    slm_shards_free(&s);
    return r;
}

/* The largest |a - b| over the largest |a|: rounding, not a wrong term. */
static double relative_gap(const float *a, const float *b, size_t n) {
    double gap = 0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) {
        gap = fmax(gap, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)a[i]));
    }
    return gap / scale;
}

/* "A story of 3,000 tokens read in pieces of 700 positions sees in every
 * position the same 256 keys as read whole": loss, correct predictions and
 * every gradient agree up to float rounding, with either architecture. */
static void test_pieces_equal_whole(const Architecture *arch) {
    ModelConfig c = slm_model_config_default(arch, V);
    Model m;
    if (slm_model_init(&m, &c, NULL)) abort();
    slm_model_randomize(&m, 3);
    for (int i = 0; i < m.cfg.n_heads * m.cfg.window && m.distance; i++) m.distance[i] = -0.01f * (float)(i % 256);
    int lens[3] = {3000, 120, 1300};
    StoryRef stories[3];
    int32_t *ids[3];
    for (int i = 0; i < 3; i++) stories[i] = (StoryRef){ids[i] = random_story(lens[i], 10 + (uint64_t)i), lens[i]};
    PassResult whole = run_pass(&m, stories, 3, 1, 3000), pieces = run_pass(&m, stories, 3, 1, 700),
               threads = run_pass(&m, stories, 3, 2, 1024);
    CHECK_CLOSE(pieces.loss_sum, whole.loss_sum, 1e-6, 0);
    CHECK_CLOSE(threads.loss_sum, whole.loss_sum, 1e-6, 0);
    CHECK(pieces.correct == whole.correct && threads.correct == whole.correct);
    double gap = relative_gap(whole.grads, pieces.grads, m.n_params);
    CHECK(gap < 1e-5);
    CHECK(relative_gap(whole.grads, threads.grads, m.n_params) < 1e-5);
    if (gap >= 1e-5) fprintf(stderr, "  %s: gradient gap %g\n", arch->name, gap);
    free(whole.grads), free(pieces.grads), free(threads.grads);
    for (int i = 0; i < 3; i++) free(ids[i]);
    slm_model_free(&m);
}

/* A shard's positions do not grow with the story past four windows. */
static void test_positions_bounded(void) {
    ModelConfig c = slm_model_config_default(&slm_attention_arch, V);
    CHECK(slm_shards_positions(&c, 2048, 30000) == 2048);
    CHECK(slm_shards_positions(&c, 512, 800) == 800); /* a story a shard can hold whole runs whole, as before */
    CHECK(slm_shards_positions(&c, 512, 30000) == 1024);
    CHECK(slm_shards_positions(&c, 512, 1 << 30) == 1024);
    ModelConfig w = slm_model_config_default(&slm_window8_arch, V);
    CHECK(slm_shards_positions(&w, 64, 30000) == 64);
}

/* One story through slm_model_loss_and_grad: its mean loss, or the error. */
static int story_loss(const Model *m, const int32_t *ids, int len, double *loss, long long *correct, Error *e) {
    Batch b;
    Activations a;
    if (slm_batch_init(&b, len, 1, NULL) || slm_activations_init(&a, &m->cfg, len, NULL)) abort();
    slm_batch_add(&b, ids, len, NULL);
    int rc = slm_model_loss_and_grad(m, &a, &b, NULL, 1.0f, NULL, e);
    *loss = a.mean_loss;
    *correct = 0;
    for (int p = 0; p < a.n_positions; p++) *correct += a.target[p] >= 0 && a.correct[p];
    slm_activations_free(&a);
    slm_batch_free(&b);
    return rc;
}

/* The per-token path (eval --text, Python's loss, the probes): the mean of
 * slm_probe_loss over the story, and how many targets rank first. */
static double per_token_loss(const Model *m, const int32_t *ids, int len, long long *right, double *first_prob) {
    ProbeRunner r;
    Error e = {0};
    if (slm_probe_runner_init(&r, m, len, &e) || slm_probe_run(&r, ids, len, NULL, &e)) abort();
    double sum = 0;
    *right = 0;
    for (int p = 0; p + 1 < len; p++) {
        int rank;
        double prob = slm_probe_probability(&r.acts, p, ids[p + 1], &rank);
        if (p == 0) *first_prob = prob;
        sum += slm_probe_loss(&r.acts, p, ids[p + 1]);
        *right += rank == 1;
    }
    slm_probe_runner_free(&r);
    return sum / (len - 1);
}

/* "Output biases of 3e38 make every token equally likely": the loss is
 * log(2000) = 7.6, not 0 (float's 3e38 + log 2000 lost the log), and a tie
 * is right only where argmax takes the target (the first of equals). When the
 * logits overflow, the pass stops naming the position. */
static void test_huge_logits(void) {
    ModelConfig c = slm_model_config_default(&slm_attention_arch, V);
    Model m;
    if (slm_model_init(&m, &c, NULL)) abort();
    slm_model_randomize(&m, 4);
    memset(m.output_w, 0, (size_t)V * c.hidden_dim * sizeof(float));
    for (int v = 0; v < V; v++) m.output_b[v] = 3e38f;
    int32_t *ids = random_story(50, 7);
    ids[10] = 0; /* predicted at position 9: the first of the equal logits */
    double loss;
    long long correct;
    Error e = {0};
    CHECK(story_loss(&m, ids, 50, &loss, &correct, &e) == 0);
    CHECK_CLOSE(loss, log(2000.0), 1e-6, 0);
    CHECK(correct == 1);
    /* the per-token path says the same: it gave loss 0, probability 1, every target first */
    long long right;
    double prob, token_loss = per_token_loss(&m, ids, 50, &right, &prob);
    CHECK_CLOSE(token_loss, loss, 1e-6, 0);
    CHECK_CLOSE(prob, 1.0 / 2000, 1e-6, 0);
    CHECK(right == correct);
    /* far apart: 3e38 and -2e37, whose loss is near the top of float */
    m.output_b[ids[1]] = -2e37f;
    CHECK(story_loss(&m, ids, 50, &loss, &correct, &e) == 0 && isfinite(loss) && loss > 1e36);
    token_loss = per_token_loss(&m, ids, 50, &right, &prob); /* its probability underflows; its loss does not */
    CHECK(prob == 0 && isfinite(token_loss));
    CHECK_CLOSE(token_loss, loss, 1e-6, 0);
    /* overflowing: logits of 3e38 + 3e38 */
    for (int k = 0; k < c.hidden_dim; k++) m.output_w[(size_t)5 * c.hidden_dim + k] = 3e38f;
    CHECK(story_loss(&m, ids, 50, &loss, &correct, &e) == -1 && strstr(e.message, "at position 0 of story 0"));
    free(ids);
    slm_model_free(&m);
}

/* "-t 1e-38 wrote [UNK] [UNK] ...": 1/T overflowed and argmax of NaN gave 0. */
static void test_sampler_never_nan(void) {
    Sampler s;
    float logits[V];
    for (int v = 0; v < V; v++) logits[v] = (float)(v % 7) * 0.1f;
    logits[1234] = 5.0f;
    const float temps[] = {1e-38f, 1e-45f, 1e-5f, 0.0f};
    for (size_t i = 0; i < sizeof temps / sizeof temps[0]; i++) {
        if (slm_sampler_init(&s, V, temps[i], 0, 1.0f, 1, NULL)) abort();
        CHECK(slm_sampler_sample(&s, logits) == 1234);
        slm_sampler_free(&s);
    }
    /* logits whose spread overflows at T = 0.5, and a NaN among them: greedy over the numbers */
    logits[7] = 3e38f;
    logits[8] = -3e38f;
    logits[9] = NAN;
    if (slm_sampler_init(&s, V, 0.5f, 40, 0.9f, 1, NULL)) abort();
    CHECK(slm_sampler_sample(&s, logits) == 7);
    logits[0] = NAN;
    CHECK(slm_sampler_sample(&s, logits) == 7);
    slm_sampler_free(&s);
    /* an ordinary temperature still samples (not always the top token) */
    for (int v = 0; v < V; v++) logits[v] = 0.0f;
    if (slm_sampler_init(&s, V, 1.0f, 0, 1.0f, 1, NULL)) abort();
    int differ = 0;
    for (int k = 0; k < 20; k++) differ += slm_sampler_sample(&s, logits) != 0;
    CHECK(differ > 10);
    slm_sampler_free(&s);
}

/* "--n-probs 20 on a model of 3 tokens crashed": the sampler has 3
 * alternatives to give, and 3 are kept and shown, each token once, the
 * likeliest first; never the 17 slots it did not fill. */
static void test_n_probs_above_vocabulary(void) {
    const char *pieces = "[UNK]\n[EOS]\n.\n";
    LoadedModel lm = {.path = "three.safetensors"};
    Error e = {0};
    CHECK(slm_tokenizer_from_text(&lm.tokenizer, pieces, strlen(pieces), 0, &e) == 0);
    ModelConfig c = slm_model_config_default(&slm_attention_arch, 3);
    if (slm_model_init(&lm.model, &c, NULL)) abort();
    slm_model_randomize(&lm.model, 5);
    lm.model.output_b[1] = -50.0f; /* [EOS] unlikely: the story goes on */
    ViewGenerateOptions go = slm_view_generate_defaults();
    go.max_tokens = 12, go.logprobs = 1, go.n_probs = SAMPLER_MAX_N_PROBS;
    ViewGenerator vg;
    CHECK(slm_view_generator_init(&vg, &lm, NULL, ".", &go, &e) == 0);
    while (slm_view_generator_next(&vg, &e) > 0) {}
    CHECK(vg.tokens == 12 && vg.n_probs == 3);
    CHECK(vg.alternatives.len == (size_t)vg.tokens * 3 * sizeof(TokenAlternative));
    int each_once = 1;
    for (int i = 0; i < vg.tokens && vg.n_probs == 3; i++) {
        const TokenAlternative *alt = slm_view_generator_alternatives(&vg, i);
        int seen = 0;
        for (int j = 0; j < 3; j++) seen |= alt[j].id >= 0 && alt[j].id < 3 ? 1 << alt[j].id : 8;
        each_once &= seen == 7 && alt[0].logprob >= alt[1].logprob && alt[1].logprob >= alt[2].logprob;
    }
    CHECK(each_once);
    slm_view_generator_free(&vg);
    slm_model_free(&lm.model);
    slm_tokenizer_free(&lm.tokenizer);
}

int main(void) {
    test_pieces_equal_whole(&slm_attention_arch);
    test_pieces_equal_whole(&slm_window8_arch);
    test_positions_bounded();
    test_huge_logits();
    test_sampler_never_nan();
    test_n_probs_above_vocabulary();
    return check_report();
}
