/* --arch attn-only (TransformerLens's attn_only): its table (no MLP, 308,048
 * parameters by default, TransformerLens's hook names without the mlp ones
 * and hook_resid_mid); against PyTorch (scripts/torch_attn_only.py wrote
 * tests/fixtures/attn_only.json: loss to 1e-5 relative, every gradient to
 * 1e-4 of its tensor's largest, every hook to 1e-4, on one thread and two;
 * hook_z of a head set to 0 is --ablate of it bit for bit); every gradient
 * against central differences of the whole model's loss, every position
 * scheme, with a head switched off too; the same bits on one thread and two;
 * the key/value cache's logits equal the forward's; BF16 training's pass near
 * FP32's and the same bits twice (where the CPU has avx512_bf16). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/arch.h"
#include "storylm/bf16.h"
#include "storylm/generate.h"
#include "storylm/hooks.h"
#include "storylm/model.h"
#include "storylm/rng.h"

static const Architecture *attn_only(void) {
    Error e;
    const Architecture *a = slm_arch_find("attn-only", &e);
    CHECK(a != NULL);
    return a;
}

static ModelConfig tiny(PosScheme pos) {
    ModelConfig c = attn_only()->config_default(11);
    c.row_dim = 6, c.n_heads = 2, c.key_dim = c.value_dim = 4, c.window = 4, c.n_layers = 2, c.pos = pos;
    return c;
}

/* Weights large enough that attention is far from even; LayerNorm weights around 1. */
static void random_params(Model *m, Rng *rng) {
    for (int t = 0; t < m->n_tensors; t++) {
        const ParamTensor *pt = &m->tensors[t];
        const char *last = strrchr(pt->name, '.');
        int ln_weight = last && strcmp(last, ".w") == 0;
        for (size_t i = pt->offset; i < pt->offset + pt->size; i++)
            m->params[i] = (float)(ln_weight ? 1 + 0.3 * slm_rng_normal(rng) : 0.6 * slm_rng_normal(rng));
    }
}

/* ---- the table and hook points -------------------------------------------- */

static void check_default_table(void) {
    ModelConfig c = attn_only()->config_default(2000);
    Model m;
    Error e;
    CHECK(c.hidden_dim == 0 && c.n_layers == 2 && c.pos == POS_ABSOLUTE);
    CHECK(slm_model_init(&m, &c, &e) == 0);
    CHECK(m.n_params == 308048); /* the transformer's 374,480 less 2 blocks' LN2 and MLP (33,216) */
    CHECK(m.n_tensors == 2 + 2 * 10 + 4);
    for (int t = 0; t < m.n_tensors; t++) CHECK(!strstr(m.tensors[t].name, "mlp") && !strstr(m.tensors[t].name, "ln2"));
    slm_model_free(&m);
    c.pos = POS_ROPE;
    CHECK(slm_model_init(&m, &c, &e) == 0 && m.n_params == 308048 - 256 * 64);
    slm_model_free(&m);
    c.hidden_dim = 16; /* an MLP's width: not this architecture's */
    CHECK(slm_model_init(&m, &c, &e) != 0 && strstr(e.message, "no MLP"));
    c = tiny(POS_ABSOLUTE);
    char *names = slm_hook_names(&c, &e);
    CHECK(names &&
          strcmp(names,
                 "hook_embed\nhook_pos_embed\n"
                 "blocks.0.hook_resid_pre\nblocks.0.ln1.hook_scale\nblocks.0.ln1.hook_normalized\n"
                 "blocks.0.attn.hook_q\nblocks.0.attn.hook_k\nblocks.0.attn.hook_v\nblocks.0.attn.hook_attn_scores\n"
                 "blocks.0.attn.hook_pattern\nblocks.0.attn.hook_z\nblocks.0.attn.hook_result\nblocks.0.hook_attn_out\n"
                 "blocks.0.hook_resid_post\n"
                 "blocks.1.hook_resid_pre\nblocks.1.ln1.hook_scale\nblocks.1.ln1.hook_normalized\n"
                 "blocks.1.attn.hook_q\nblocks.1.attn.hook_k\nblocks.1.attn.hook_v\nblocks.1.attn.hook_attn_scores\n"
                 "blocks.1.attn.hook_pattern\nblocks.1.attn.hook_z\nblocks.1.attn.hook_result\nblocks.1.hook_attn_out\n"
                 "blocks.1.hook_resid_post\n"
                 "ln_final.hook_scale\nln_final.hook_normalized\nhook_logits") == 0);
    if (names) printf("hook points:\n%s\n", names);
    free(names);
}

/* ---- against PyTorch -------------------------------------------------------- */

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static ModelConfig config_of(const cJSON *fixture, const cJSON *cas) {
    const cJSON *c = item(fixture, "config");
    ModelConfig cfg = attn_only()->config_default(item(c, "vocab_size")->valueint);
    cfg.row_dim = item(c, "d_model")->valueint;
    cfg.n_heads = item(c, "n_heads")->valueint;
    cfg.key_dim = cfg.value_dim = item(c, "d_head")->valueint;
    cfg.window = item(c, "n_ctx")->valueint;
    cfg.n_layers = item(c, "n_layers")->valueint;
    Error e;
    CHECK(slm_pos_parse(item(cas, "pos")->valuestring, &cfg.pos, &e) == 0);
    return cfg;
}

/* Sets head 0 of block 0's z (hook_z [T, H, dh]) to 0. */
static int zero_head0(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)ctx, (void)name, (void)writable, (void)ndim;
    for (int t = 0; t < shape[0]; t++) memset(data + (size_t)t * shape[1] * shape[2], 0, shape[2] * sizeof(float));
    return 1;
}

static void check_hooks(const ModelConfig *cfg, const cJSON *cas, const Batch *b, const char *what) {
    Model m;
    Error e = {0};
    CHECK(slm_model_init(&m, cfg, &e) == 0);
    if (check_fixture_tensors(cas, &m) != 0) return slm_model_free(&m);
    size_t n = (size_t)b->starts[1] * cfg->vocab_size;
    float *got = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    check_fixture_hooks(&m, cas, b, what);
    const char *z[] = {"blocks.0.attn.hook_z"};
    Ablation head0 = {.heads = check_heads(1u), .mode = ABLATE_ZERO};
    check_first_story(&m, b, z, 1, zero_head0, NULL, NULL, got);
    check_first_story(&m, b, NULL, 0, NULL, NULL, &head0, want);
    CHECK(memcmp(got, want, n * sizeof(float)) == 0); /* hook_z set to 0 is --ablate 1:0 */
    free(got);
    free(want);
    slm_model_free(&m);
}

static void check_torch(void) {
    Batch b;
    cJSON *fixture = check_fixture_load("tests/fixtures/attn_only.json", &b);
    if (!fixture) return;
    int cases = 0;
    for (int threads = 1; threads <= 2; threads++) {
        slm_model_threads_setup(threads);
        const cJSON *cas;
        cJSON_ArrayForEach(cas, item(fixture, "cases")) {
            ModelConfig cfg = config_of(fixture, cas);
            char what[64];
            snprintf(what, sizeof what, "torch --position-scheme %s, %d thread(s)", slm_pos_name(cfg.pos), threads);
            check_fixture_case(&cfg, cas, &b, what);
            check_hooks(&cfg, cas, &b, what);
            cases++;
        }
    }
    CHECK(cases == 2 * 4 && strcmp(item(item(fixture, "config"), "arch")->valuestring, "attn-only") == 0);
    slm_batch_free(&b);
    cJSON_Delete(fixture);
}

/* ---- the gradient: central differences of the whole model's loss ------------- */

/* Every parameter moved by +-h, the loss of the float forward (with ablation
 * ab) against slm_model_backward's and training's fused pass's gradient; with
 * drop, every pass drops by the same fixed masks (P 0.3 on the residual
 * stream's additions, laid out as TfActivations.resid_drop, 0.25 on the
 * attention weights), so the gradients are of the dropped network. */
static void gradcheck_drop(PosScheme pos, uint32_t off, int drop) {
    ModelConfig cfg = tiny(pos);
    Ablation ab = {.heads = check_heads(off)}, *abp = off ? &ab : NULL;
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 7);
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_activations_init(&a, &cfg, 32, &e) == 0);
    check_tiny_batch(&b, 11, &rng);
    random_params(&m, &rng);
    static uint8_t resid[(1 + 2 * 2) * 32 * 6], att[2 * 2 * 32 * 32];
    for (size_t i = 0; i < sizeof resid; i++) resid[i] = slm_rng_uniform(&rng) >= 0.25;
    for (size_t i = 0; i < sizeof att; i++) att[i] = slm_rng_uniform(&rng) >= 0.25;
    if (drop) a.dropout = (Dropout){.hidden = 0.3f, .attention = 0.25f, .hidden_mask = resid, .attention_mask = att};
    float loss, *grads = calloc(m.n_params, sizeof(float)), *fused = calloc(m.n_params, sizeof(float));
    CHECK(slm_model_forward(&m, &a, &b, abp, &loss, &e) == 0);
    slm_model_backward(&m, &a, &b, grads);
    CHECK(slm_model_loss_and_grad(&m, &a, &b, abp, 1.0f / a.n_predicted, fused, &e) == 0);
    CHECK_CLOSE(a.mean_loss, loss, 1e-6, 0);
    const float h = 1e-2f;
    double worst = 0;
    for (int t = 0; t < m.n_tensors; t++) {
        const ParamTensor *pt = &m.tensors[t];
        double max_diff = 0, max_grad = 0;
        for (size_t i = pt->offset; i < pt->offset + pt->size; i++) {
            float saved = m.params[i];
            m.params[i] = saved + h;
            CHECK(slm_model_forward(&m, &a, &b, abp, NULL, &e) == 0);
            double up = a.mean_loss;
            m.params[i] = saved - h;
            CHECK(slm_model_forward(&m, &a, &b, abp, NULL, &e) == 0);
            double down = a.mean_loss;
            m.params[i] = saved;
            double num = (up - down) / (2.0 * h);
            max_diff = fmax(max_diff, fmax(fabs(num - grads[i]), fabs(num - fused[i])));
            max_grad = fmax(max_grad, fabs(num));
        }
        /* b_K's true gradient is 0 unless rope turns it (a bias on every key
         * moves all of a query's scores alike); a switched-off head's W_Q, W_K, W_V
         * columns get none: their differences are rounding alone */
        int ok = CHECK(max_grad > 1e-3 ? max_diff <= 1e-2 * max_grad : max_diff <= 5e-5);
        if (!ok) fprintf(stderr, "  %s %s: diff %.3g, max %.3g\n", slm_pos_name(pos), pt->name, max_diff, max_grad);
        if (max_grad > 1e-3) worst = fmax(worst, max_diff / max_grad);
    }
    printf("gradient %-10s%s%s loss %.6f, worst %.2e of its tensor's max\n", slm_pos_name(pos), off ? " ablated" : "",
           drop ? " dropout" : "", loss, worst);
    free(grads);
    free(fused);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

static void gradcheck(PosScheme pos, uint32_t off) { gradcheck_drop(pos, off, 0); }

/* ---- bits, generation, BF16 ------------------------------------------------------ */

/* Training's pass (loss, every gradient) at precision p with threads threads into grads; the mean loss. */
static double train_pass(const Model *m, const Batch *b, int threads, Precision p, float *grads) {
    Activations a;
    Error e;
    slm_model_threads_setup(threads);
    CHECK(slm_activations_init(&a, &m->cfg, 32, &e) == 0);
    a.precision = p;
    memset(grads, 0, m->n_params * sizeof(float));
    CHECK(slm_model_loss_and_grad(m, &a, b, NULL, 0.1f, grads, &e) == 0);
    double loss = a.mean_loss;
    slm_activations_free(&a);
    return loss;
}

/* The same batch on one thread, on two and on two again: the same bits; in
 * BF16 (where the CPU has it) the same bits twice, and near FP32's. */
static void check_bits_and_bf16(void) {
    ModelConfig c = tiny(POS_ALIBI);
    c.row_dim = 32, c.n_heads = 4, c.key_dim = c.value_dim = 8, c.window = 16; /* products wide enough for BF16 */
    Model m;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 3);
    CHECK(slm_model_init(&m, &c, &e) == 0);
    slm_model_randomize(&m, 99);
    check_tiny_batch(&b, 11, &rng);
    size_t bytes = m.n_params * sizeof(float);
    float *g1 = malloc(bytes), *g2 = malloc(bytes), *g3 = malloc(bytes);
    double l1 = train_pass(&m, &b, 1, PRECISION_FP32, g1), l2 = train_pass(&m, &b, 2, PRECISION_FP32, g2);
    CHECK(l1 == l2 && memcmp(g1, g2, bytes) == 0);
    CHECK(train_pass(&m, &b, 2, PRECISION_FP32, g3) == l2 && memcmp(g2, g3, bytes) == 0);
    if (slm_precision_check(PRECISION_BF16, &e) == 0) {
        double b1 = train_pass(&m, &b, 2, PRECISION_BF16, g2), b2 = train_pass(&m, &b, 2, PRECISION_BF16, g3);
        CHECK(b1 == b2 && memcmp(g2, g3, bytes) == 0);
        double dot = 0, n1 = 0, n2 = 0;
        for (size_t i = 0; i < m.n_params; i++)
            dot += (double)g1[i] * g2[i], n1 += (double)g1[i] * g1[i], n2 += (double)g2[i] * g2[i];
        CHECK(fabs(b1 - l1) < 0.01 * l1 && dot / sqrt(n1 * n2) > 0.99 && memcmp(g1, g2, bytes) != 0);
        printf("bf16: loss %.6f (fp32 %.6f), gradient cosine %.5f\n", b1, l1, dot / sqrt(n1 * n2));
    } else
        printf("bf16: not checked (%s)\n", e.message);
    slm_model_threads_setup(2);
    free(g1);
    free(g2);
    free(g3);
    slm_batch_free(&b);
    slm_model_free(&m);
}

/* The key/value cache per block gives the forward's logits at every position,
 * past the window too (a story of 9 in n_ctx 4), with heads of off switched
 * off (mean: set to a mean output of their own, else 0). */
static void check_generator(PosScheme pos, uint32_t off, int mean) {
    ModelConfig c = tiny(pos);
    float means[2 * 2 * 4]; /* (layers*H, dh) */
    for (int i = 0; i < 16; i++) means[i] = 0.3f * (float)(i % 5) - 0.5f;
    Ablation ab = {.heads = check_heads(off), .mode = mean ? ABLATE_MEAN : ABLATE_ZERO, .mean = mean ? means : NULL};
    Model m;
    Activations a;
    Batch b;
    Generator g;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 11);
    CHECK(slm_model_init(&m, &c, &e) == 0 && slm_activations_init(&a, &c, 32, &e) == 0);
    random_params(&m, &rng);
    check_tiny_batch(&b, 11, &rng);
    CHECK(slm_model_forward(&m, &a, &b, &ab, NULL, &e) == 0);
    CHECK(slm_generator_init(&g, &m, &ab, &e) == 0);
    double worst = 0;
    for (int p = 0; p < b.starts[1]; p++) {
        const float *logits = slm_generator_feed(&g, b.tokens[p]);
        for (int v = 0; v < c.vocab_size; v++)
            worst = fmax(worst, fabs(logits[v] - a.logits[(size_t)p * c.vocab_size + v]));
    }
    if (!CHECK(worst < 1e-4)) fprintf(stderr, "  generator %s: logits differ by %.3g\n", slm_pos_name(pos), worst);
    slm_generator_free(&g);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

int main(void) {
    slm_model_threads_setup(2);
    check_default_table();
    check_torch();
    slm_model_threads_setup(2);
    for (PosScheme pos = 0; pos < POS_COUNT; pos++) gradcheck(pos, 0);
    gradcheck(POS_ROPE, 1u << 1);
    gradcheck(POS_DISTANCE, 1u << 2);
    gradcheck_drop(POS_ALIBI, 0, 1); /* --dropout, --attention-dropout with fixed masks */
    gradcheck_drop(POS_ROPE, 1u << 1, 1);
    check_bits_and_bf16();
    for (PosScheme pos = 0; pos < POS_COUNT; pos++) check_generator(pos, 0, 0);
    check_generator(POS_ALIBI, 1u << 3, 0);
    check_generator(POS_ROPE, 1u | 1u << 2, 1);
    return check_report();
}
