/* Generation with BF16 products (generate --precision bf16): the query,
 * key, value, hidden and output layers give, bit for bit, the plain-C
 * emulation of VDPBF16PS (slm_matmul_bf16_emulated) plus the bias, at every
 * step of a story; a batch gives each sample the bits it gets alone (5 and
 * 64 samples, one and two threads, a window of 37), for the transformer
 * too, and also when switched back to FP32 mid-story; switching back to
 * FP32 gives FP32's bits. On the shipped attention
 * network and transformer and their 100 held-out stories, the BF16
 * generator's loss is within 0.5% of the FP32 generator's. On a CPU
 * without avx512_bf16 the test skips (77). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "generate_batch.h"
#include "storylm/bf16.h"
#include "storylm/fileio.h"
#include "storylm/dense_bf16.h"
#include "storylm/generate.h"
#include "storylm/loaded_model.h"
#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/stories.h"

/* y (rows) = the emulated BF16 product of x (cols) with W (rows, cols) stored
 * (rows, cols) when trans, else (cols, rows), plus bias (NULL: none). */
static void reference(const float *W, int trans, const float *x, const float *bias, int rows, int cols, float *y) {
    slm_matmul_bf16_emulated(0, trans, 1, rows, cols, x, cols, W, trans ? cols : rows, 0.0f, y, rows);
    for (int i = 0; bias && i < rows; i++) y[i] += bias[i];
}

/* A random model of arch (layers of heads), fed T random tokens with BF16
 * products: after each, its first layer's queries, keys and values (one
 * layer), hidden layer and logits equal the reference's bits from the same
 * inputs (the z the generator built: the attention stays FP32). */
static void products_are_the_emulated_bits(const Architecture *arch, int layers, uint64_t seed) {
    enum { T = 40 };
    Error e = {0};
    ModelConfig cfg = slm_model_config_default(arch, 300);
    if (arch == &slm_attention_arch) cfg.n_layers = layers;
    Model m;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, seed);
    GeneratorBatch g;
    CHECK(slm_generator_batch_init(&g, &m, NULL, 1, &e) == 0 &&
          slm_generator_batch_set_precision(&g, PRECISION_BF16, &e) == 0);
    int Z = slm_model_hidden_input_dim(&cfg), Hd = cfg.hidden_dim, V = cfg.vocab_size;
    int QKV = cfg.n_heads * (2 * cfg.key_dim + cfg.value_dim);
    float *hidden = malloc(Hd * sizeof(float)), *logits = malloc(V * sizeof(float)), *qkv = malloc(QKV * sizeof(float));
    Rng r;
    slm_rng_seed(&r, seed + 3);
    int same = 1, zero = 0;
    for (int t = 0; t < T; t++) {
        int32_t tok = t == 0 ? 1 : (int32_t)slm_rng_below(&r, 300);
        slm_generator_batch_feed(&g, &zero, &tok, 1);
        if (arch == &slm_attention_arch && layers == 1) { /* the row -> queries (scaled), keys, values */
            reference(g.qkv_w, 0, g.z, NULL, QKV, cfg.row_dim, qkv);
            same &= memcmp(qkv, g.qkv, QKV * sizeof(float)) == 0;
        }
        reference(m.hidden_w, 1, g.z, m.hidden_b, Hd, Z, hidden);
        slm_tanh_inplace(hidden, Hd);
        same &= memcmp(hidden, g.hidden, Hd * sizeof(float)) == 0;
        reference(m.output_w, 1, g.hidden, m.output_b, V, Hd, logits);
        same &= memcmp(logits, slm_generator_batch_logits(&g, 0), V * sizeof(float)) == 0;
    }
    printf("%s, %d layer(s): BF16 products equal the emulation over %d steps: %s\n",
           arch == &slm_window8_arch ? "window8" : "attention", layers, T, same ? "yes" : "no");
    CHECK(same);
    free(hidden), free(logits), free(qkv);
    slm_generator_batch_free(&g);
    slm_model_free(&m);
}

/* arch's BF16 logits differ from FP32's (by little); switched back to FP32
 * mid-story, window8 (which caches nothing BF16 made) gives FP32's bits from
 * the next token on, and any generator switched back before its first token
 * gives them throughout. */
static void back_to_fp32(const Architecture *arch) {
    Error e = {0};
    ModelConfig cfg = slm_model_config_default(arch, 300);
    Model m;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, 5);
    Generator a, b, c;
    CHECK(slm_generator_init(&a, &m, NULL, &e) == 0 && slm_generator_init(&b, &m, NULL, &e) == 0 &&
          slm_generator_init(&c, &m, NULL, &e) == 0);
    CHECK(slm_generator_batch_set_precision(&b.batch, PRECISION_BF16, &e) == 0 &&
          slm_generator_batch_set_precision(&c.batch, PRECISION_BF16, &e) == 0 &&
          slm_generator_batch_set_precision(&c.batch, PRECISION_FP32, &e) == 0);
    size_t bytes = cfg.vocab_size * sizeof(float);
    const float *la = slm_generator_feed(&a, 1), *lb = slm_generator_feed(&b, 1);
    double worst = 0, top = 0;
    for (int i = 0; i < cfg.vocab_size; i++) worst = fmax(worst, fabs(la[i] - lb[i])), top = fmax(top, fabs(la[i]));
    CHECK(worst > 0 && worst < 0.05 * top + 1e-3);
    CHECK(memcmp(slm_generator_feed(&c, 1), la, bytes) == 0);
    CHECK(slm_generator_batch_set_precision(&b.batch, PRECISION_FP32, &e) == 0);
    la = slm_generator_feed(&a, 7), lb = slm_generator_feed(&b, 7);
    if (arch == &slm_window8_arch) CHECK(memcmp(lb, la, bytes) == 0);
    CHECK(memcmp(slm_generator_feed(&c, 7), la, bytes) == 0);
    slm_generator_free(&a), slm_generator_free(&b), slm_generator_free(&c);
    slm_model_free(&m);
}

/* A batch (whose first layer reads the token table) switched from BF16 to
 * FP32 mid-story gives each sample, every step, the bits the sample gets
 * alone switched alike: the slots written before keep BF16's keys and
 * values, which the table, holding a token's row in one precision, cannot. */
static void batch_switched_mid_story(void) {
    enum { N = 3, T = 8 };
    Error e = {0};
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, 300);
    Model m;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, 51);
    GeneratorBatch batch, alone[N];
    CHECK(slm_generator_batch_init(&batch, &m, NULL, N, &e) == 0 &&
          slm_generator_batch_set_precision(&batch, PRECISION_BF16, &e) == 0);
    for (int s = 0; s < N; s++)
        CHECK(slm_generator_batch_init(&alone[s], &m, NULL, 1, &e) == 0 &&
              slm_generator_batch_set_precision(&alone[s], PRECISION_BF16, &e) == 0);
    int which[N] = {0, 1, 2}, zero = 0, same = 1;
    for (int t = 0; t < T; t++) {
        if (t == T / 2) {
            CHECK(slm_generator_batch_set_precision(&batch, PRECISION_FP32, &e) == 0);
            for (int s = 0; s < N; s++) CHECK(slm_generator_batch_set_precision(&alone[s], PRECISION_FP32, &e) == 0);
        }
        int32_t tok[N];
        for (int s = 0; s < N; s++) tok[s] = t == 0 ? 1 : (int32_t)((7 * t + 31 * s) % 300);
        slm_generator_batch_feed(&batch, which, tok, N);
        for (int s = 0; s < N; s++) {
            slm_generator_batch_feed(&alone[s], &zero, &tok[s], 1);
            same &= memcmp(slm_generator_batch_logits(&batch, s), slm_generator_batch_logits(&alone[s], 0),
                           cfg.vocab_size * sizeof(float)) == 0;
        }
    }
    printf("a batch switched to FP32 mid-story gives each sample its bits alone: %s\n", same ? "yes" : "no");
    CHECK(same);
    slm_generator_batch_free(&batch);
    for (int s = 0; s < N; s++) slm_generator_batch_free(&alone[s]);
    slm_model_free(&m);
}

/* The transformer in BF16: its products are packed from its FP32 blocks
 * (the bits of packing the weights themselves), and a batch gives each
 * sample its bits alone (alibi; rope with a window of 37 and heads off). */
static void transformer_in_bf16(void) {
    Error e = {0};
    Rng r;
    slm_rng_seed(&r, 41);
    enum { ROWS = 37, COLS = 21 };
    float W[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) W[i] = (float)slm_rng_normal(&r);
    Dense16 f;
    DenseBf16 a, b;
    CHECK(slm_dense16_pack(&f, W, COLS, 1, ROWS, COLS, &e) == 0 && slm_dense_bf16_from16(&a, &f, &e) == 0 &&
          slm_dense_bf16_pack(&b, W, COLS, 1, ROWS, COLS, &e) == 0);
    CHECK(a.pairs == b.pairs && memcmp(a.w, b.w, (size_t)(ROWS + 15) / 16 * a.pairs * 16 * sizeof *a.w) == 0);
    slm_dense16_free(&f), slm_dense_bf16_free(&a), slm_dense_bf16_free(&b);
    ModelConfig cfg = slm_model_config_default(&slm_transformer_arch, 300);
    cfg.pos = POS_ALIBI;
    batch_of_config_gives_each_sample_its_own_bits(cfg, NULL, 42, 1, 5, PRECISION_BF16);
    batch_of_config_gives_each_sample_its_own_bits(cfg, NULL, 43, 2, 64, PRECISION_BF16);
    cfg.pos = POS_ROPE;
    cfg.window = 37;
    Ablation zero = {.heads = check_heads((1u << 2) | (1u << 11)), .mode = ABLATE_ZERO};
    batch_of_config_gives_each_sample_its_own_bits(cfg, &zero, 44, 2, 5, PRECISION_BF16);
}

/* Mean cross-entropy (nats) of every token after the first of each story of
 * ids (stories of n tokens at off[i]) under a generator at precision p. */
static double generator_loss(const Model *m, const int32_t *ids, const int *off, const int *n, int stories,
                             Precision p) {
    Error e = {0};
    double sum = 0;
    long count = 0;
    for (int s = 0; s < stories; s++) {
        Generator g;
        CHECK(slm_generator_init(&g, m, NULL, &e) == 0 && slm_generator_batch_set_precision(&g.batch, p, &e) == 0);
        const float *logits = slm_generator_feed(&g, ids[off[s]]);
        for (int t = 1; t < n[s]; t++) {
            double mx = logits[0], z = 0;
            for (int i = 1; i < m->cfg.vocab_size; i++) mx = fmax(mx, logits[i]);
            for (int i = 0; i < m->cfg.vocab_size; i++) z += exp(logits[i] - mx);
            sum += mx + log(z) - logits[ids[off[s] + t]], count++;
            logits = slm_generator_feed(&g, ids[off[s] + t]);
        }
        slm_generator_free(&g);
    }
    return sum / (double)count;
}

/* A shipped model (path in the source tree) on its held-out stories: [EOS], the story, [EOS]. */
static void held_out_loss_within_half_a_percent(const char *path) {
    Error e = {0};
    LoadedModel lm;
    if (!CHECK(slm_loaded_model_load(&lm, check_source_path(path), &e) == 0)) return;
    size_t len = 0;
    char *text = NULL;
    StorySpan *spans = NULL;
    int n = 0;
    CHECK(slm_file_read_all(check_source_path("models/tinystories-test.txt"), 1 << 24, &text, &len, &e) == 0 &&
          slm_stories_split(text, len, "the held-out stories", &spans, &n, NULL, &e) == 0 && n == 100);
    IntVec ids = {0};
    int *off = calloc(n, sizeof(int)), *cnt = calloc(n, sizeof(int));
    for (int s = 0; s < n; s++) {
        off[s] = (int)ids.len;
        CHECK(slm_intvec_push(&ids, lm.tokenizer.eos_id, &e) == 0 &&
              slm_tokenizer_encode(&lm.tokenizer, text + spans[s].offset, spans[s].len, &ids, &e) == 0 &&
              slm_intvec_push(&ids, lm.tokenizer.eos_id, &e) == 0);
        cnt[s] = (int)ids.len - off[s];
    }
    double fp32 = generator_loss(&lm.model, ids.data, off, cnt, n, PRECISION_FP32);
    double bf16 = generator_loss(&lm.model, ids.data, off, cnt, n, PRECISION_BF16);
    printf("held-out loss of %s, %d stories, %zu tokens: FP32 %.5f, BF16 %.5f (%+.3f%%)\n", path, n, ids.len - n, fp32,
           bf16, 100 * (bf16 - fp32) / fp32);
    CHECK(fabs(bf16 - fp32) < 0.005 * fp32);
    free(off), free(cnt), free(spans), free(text);
    slm_intvec_free(&ids);
    slm_loaded_model_free(&lm);
}

int main(void) {
    if (!slm_bf16_supported()) {
        printf("skipped: this CPU has no avx512_bf16\n");
        return 77;
    }
    products_are_the_emulated_bits(&slm_attention_arch, 1, 21);
    products_are_the_emulated_bits(&slm_attention_arch, 2, 22);
    products_are_the_emulated_bits(&slm_window8_arch, 1, 23);
    back_to_fp32(&slm_attention_arch);
    back_to_fp32(&slm_window8_arch);
    batch_switched_mid_story();
    transformer_in_bf16();
    batch_of_n_gives_each_sample_its_own_bits(&slm_attention_arch, NULL, 31, 1, 5, 0, PRECISION_BF16);
    batch_of_n_gives_each_sample_its_own_bits(&slm_window8_arch, NULL, 32, 2, 5, 0, PRECISION_BF16);
    Ablation zero = {.heads = check_heads((1u << 1) | (1u << 6)), .mode = ABLATE_ZERO};
    batch_of_n_gives_each_sample_its_own_bits(&slm_attention_arch, &zero, 33, 1, 5, 0, PRECISION_BF16);
    batch_of_n_gives_each_sample_its_own_bits(&slm_attention_arch, NULL, 34, 1, 64, 0, PRECISION_BF16);
    batch_of_n_gives_each_sample_its_own_bits(&slm_attention_arch, NULL, 35, 2, 64, 37, PRECISION_BF16);
    held_out_loss_within_half_a_percent("models/tinystories.safetensors");
    held_out_loss_within_half_a_percent("models/tinystories-transformer.safetensors");
    return check_report();
}
