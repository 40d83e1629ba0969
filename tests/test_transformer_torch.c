/* The transformer against PyTorch: scripts/torch_transformer.py, written from
 * TransformerLens's conventions, wrote each case's loss and every gradient
 * (float64) on a tiny case of two blocks into tests/fixtures/transformer.json
 * (absolute, rope and alibi positions, gelu, gelu_new and relu); the C passes
 * must give the loss to 1e-5 relative and every gradient to 1e-4 of its
 * tensor's largest, on one thread and on two, through slm_model_backward and
 * through training's fused pass. Then every hook point of the forward
 * (TransformerLens's names, hooks.h) on the first story against the
 * activations PyTorch recorded under the same names, to 1e-4 of each
 * tensor's largest; and hooks that change numbers: hook_z of a head set to 0
 * gives the logits of --ablate of that head bit for bit, hook_pos_embed set
 * to 0 those of the model with W_pos zeroed. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/fileio.h"
#include "storylm/hooks.h"
#include "storylm/model.h"
#include "transformer/transformer.h"

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static ModelConfig config_of(const cJSON *fixture, const cJSON *cas) {
    const cJSON *c = item(fixture, "config");
    ModelConfig cfg = slm_transformer_config_default(item(c, "vocab_size")->valueint);
    cfg.row_dim = item(c, "d_model")->valueint;
    cfg.n_heads = item(c, "n_heads")->valueint;
    cfg.key_dim = cfg.value_dim = item(c, "d_head")->valueint;
    cfg.hidden_dim = item(c, "d_mlp")->valueint;
    cfg.window = item(c, "n_ctx")->valueint;
    cfg.n_layers = item(c, "n_layers")->valueint;
    Error e;
    ActFn act;
    CHECK(slm_pos_parse(item(cas, "pos")->valuestring, &cfg.pos, &e) == 0);
    CHECK(slm_act_parse(item(cas, "act_fn")->valuestring, &act, &e) == 0);
    cfg.act = (int)act;
    return cfg;
}

/* What the hooks compare against: PyTorch's activations by name; counts. */
typedef struct HookCheck {
    const cJSON *want; /* {"name": [floats]} */
    int seen, missing;
    double worst;
} HookCheck;

static int compare_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)writable;
    HookCheck *hc = ctx;
    const cJSON *w = item(hc->want, name);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    if (!w || (size_t)cJSON_GetArraySize(w) != n) {
        fprintf(stderr, "  hook %s: %s\n", name, w ? "another size than PyTorch's" : "not in the fixture");
        hc->missing++;
        return 0;
    }
    double largest = 0, diff = 0;
    const cJSON *x;
    size_t i = 0;
    cJSON_ArrayForEach(x, w) {
        largest = fmax(largest, fabs(x->valuedouble));
        diff = fmax(diff, fabs(data[i++] - x->valuedouble));
    }
    double ratio = diff / fmax(largest, 1e-6);
    if (!CHECK(ratio < 1e-4)) fprintf(stderr, "  hook %s differs from PyTorch's by %.2e of its largest\n", name, ratio);
    hc->worst = fmax(hc->worst, ratio);
    hc->seen++;
    return 0;
}

/* Sets head 0 of block 0's z (hook_z [T, H, dh]) to 0, or the whole hook_pos_embed. */
static int zero_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)ctx, (void)writable;
    int z = strcmp(name, "blocks.0.attn.hook_z") == 0;
    for (int t = 0; t < shape[0] && ndim >= 2; t++)
        for (int i = 0; i < (z ? shape[2] : shape[1]); i++) data[(size_t)t * shape[1] * (z ? shape[2] : 1) + i] = 0;
    return 1;
}

/* The first story run with hooks fn (names: NULL for all) and ablation -> logits (T, V). */
static void run_first(const Model *m, const Batch *all, const char *const *names, int n_names, HookFn fn, void *ctx,
                      const Ablation *ab, float *logits) {
    Batch b;
    Activations a;
    Error e = {0};
    int T = all->starts[1];
    ForwardHooks hooks = {.fn = fn, .ctx = ctx, .names = names, .n_names = n_names};
    CHECK(slm_batch_init(&b, T, 1, &e) == 0 && slm_batch_add(&b, all->tokens, T, &e) == 0);
    CHECK(slm_activations_init(&a, &m->cfg, T, &e) == 0);
    a.hooks = fn ? &hooks : NULL;
    CHECK(slm_model_forward(m, &a, &b, ab, NULL, &e) == 0);
    memcpy(logits, a.logits, (size_t)T * m->cfg.vocab_size * sizeof(float));
    slm_hooks_free(&hooks);
    slm_activations_free(&a);
    slm_batch_free(&b);
}

/* The fixture's hook names (want's keys) into names (at most max), each
 * checked to be one cfg declares; returns their count. The fixture holds
 * PyTorch's points as its script made them: the points computed only when a
 * hook asks (scales, scores, results, attn_out, mlp_pre and mlp_out) are held
 * to direct computations in tests/python/test_tl_hooks.py. */
static int fixture_hooks(const ModelConfig *cfg, const cJSON *want, const char **names, int max) {
    Error e = {0};
    char *declared = slm_hook_names(cfg, &e);
    int n = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, want) {
        char line[96];
        snprintf(line, sizeof line, "\n%s\n", x->string);
        size_t len = declared ? strlen(declared) : 0;
        char *framed = malloc(len + 3);
        if (framed) snprintf(framed, len + 3, "\n%s\n", declared ? declared : "");
        if (!CHECK(framed && strstr(framed, line))) fprintf(stderr, "  hook %s is not declared\n", x->string);
        free(framed);
        if (n < max) names[n++] = x->string;
    }
    free(declared);
    return n;
}

static void check_hooks(const ModelConfig *cfg, const cJSON *cas, const Batch *b, const char *what) {
    Model m;
    Error e = {0};
    CHECK(slm_model_init(&m, cfg, &e) == 0);
    if (check_fixture_tensors(cas, &m) != 0) return slm_model_free(&m);
    HookCheck hc = {.want = item(cas, "hooks")};
    size_t n = (size_t)b->starts[1] * cfg->vocab_size;
    float *got = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    const char *fixture[64];
    int n_fixture = fixture_hooks(cfg, hc.want, fixture, 64);
    run_first(&m, b, fixture, n_fixture, compare_hook, &hc, NULL, got);
    CHECK(hc.missing == 0 && hc.seen == cJSON_GetArraySize(hc.want) && hc.seen == n_fixture);
    printf("%-36s %d hooks, worst %.2e of their largest\n", what, hc.seen, hc.worst);
    const char *z[] = {"blocks.0.attn.hook_z"}, *pos[] = {"hook_pos_embed"};
    Ablation head0 = {.heads = check_heads(1u), .mode = ABLATE_ZERO};
    run_first(&m, b, z, 1, zero_hook, NULL, NULL, got);
    run_first(&m, b, NULL, 0, NULL, NULL, &head0, want);
    CHECK(memcmp(got, want, n * sizeof(float)) == 0); /* hook_z set to 0 is --ablate 1:0 */
    const ParamTensor *wpos = slm_model_tensor(&m, "pos_embed.W_pos");
    if (wpos) {
        run_first(&m, b, pos, 1, zero_hook, NULL, NULL, got);
        memset(m.params + wpos->offset, 0, wpos->size * sizeof(float));
        run_first(&m, b, NULL, 0, NULL, NULL, NULL, want);
        double diff = 0;
        for (size_t i = 0; i < n; i++) diff = fmax(diff, fabs(got[i] - want[i]));
        CHECK(diff < 1e-4);
    }
    free(got);
    free(want);
    slm_model_free(&m);
}

static void check_case(const cJSON *fixture, const cJSON *cas, const Batch *b) {
    ModelConfig cfg = config_of(fixture, cas);
    char what[64];
    snprintf(what, sizeof what, "--position-scheme %s --act %s", slm_pos_name(cfg.pos), slm_act_name((ActFn)cfg.act));
    check_fixture_case(&cfg, cas, b, what);
    check_hooks(&cfg, cas, b, what);
}

int main(void) {
    Batch b;
    cJSON *fixture = check_fixture_load("tests/fixtures/transformer.json", &b);
    if (!fixture) return check_report();
    int cases = 0, absolute = 0, rope = 0;
    for (int threads = 1; threads <= 2; threads++) {
        slm_model_threads_setup(threads);
        const cJSON *cas;
        cJSON_ArrayForEach(cas, item(fixture, "cases")) {
            check_case(fixture, cas, &b);
            cases++;
            absolute += strcmp(item(cas, "pos")->valuestring, "absolute") == 0;
            rope += strcmp(item(cas, "pos")->valuestring, "rope") == 0;
        }
    }
    CHECK(cases >= 2 * 3 && absolute >= 2 && rope >= 2); /* 2 layers, at least absolute and rope */
    CHECK(item(item(fixture, "config"), "n_layers")->valueint == 2);
    slm_batch_free(&b);
    cJSON_Delete(fixture);
    return check_report();
}
