/* The transformer against PyTorch: scripts/torch_transformer.py, written from
 * TransformerLens's conventions, wrote each case's loss and every gradient
 * (float64) on a tiny case of two blocks into tests/fixtures/transformer.json
 * (absolute, rope and alibi positions, gelu, gelu_new and relu, and alibi with
 * tied embeddings, W_U = W_E^T); the C passes
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
    cfg.tie_embeddings = cJSON_IsTrue(item(cas, "tie_embeddings")); /* W_U = W_E^T: no unembed.W_U */
    return cfg;
}

/* Sets head 0 of block 0's z (hook_z [T, H, dh]) to 0, or the whole hook_pos_embed. */
static int zero_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)ctx, (void)writable;
    int z = strcmp(name, "blocks.0.attn.hook_z") == 0;
    for (int t = 0; t < shape[0] && ndim >= 2; t++)
        for (int i = 0; i < (z ? shape[2] : shape[1]); i++) data[(size_t)t * shape[1] * (z ? shape[2] : 1) + i] = 0;
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
    const char *z[] = {"blocks.0.attn.hook_z"}, *pos[] = {"hook_pos_embed"};
    Ablation head0 = {.heads = check_heads(1u), .mode = ABLATE_ZERO};
    check_first_story(&m, b, z, 1, zero_hook, NULL, NULL, got);
    check_first_story(&m, b, NULL, 0, NULL, NULL, &head0, want);
    CHECK(memcmp(got, want, n * sizeof(float)) == 0); /* hook_z set to 0 is --ablate 1:0 */
    const ParamTensor *wpos = slm_model_tensor(&m, "pos_embed.W_pos");
    if (wpos) {
        check_first_story(&m, b, pos, 1, zero_hook, NULL, NULL, got);
        memset(m.params + wpos->offset, 0, wpos->size * sizeof(float));
        check_first_story(&m, b, NULL, 0, NULL, NULL, NULL, want);
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
    snprintf(what, sizeof what, "--position-scheme %s --act %s%s", slm_pos_name(cfg.pos), slm_act_name((ActFn)cfg.act),
             cfg.tie_embeddings ? " --tie-embeddings" : "");
    check_fixture_case(&cfg, cas, b, what);
    check_hooks(&cfg, cas, b, what);
}

int main(void) {
    Batch b;
    cJSON *fixture = check_fixture_load("tests/fixtures/transformer.json", &b);
    if (!fixture) return check_report();
    int cases = 0, absolute = 0, rope = 0, tied = 0;
    for (int threads = 1; threads <= 2; threads++) {
        slm_model_threads_setup(threads);
        const cJSON *cas;
        cJSON_ArrayForEach(cas, item(fixture, "cases")) {
            check_case(fixture, cas, &b);
            cases++;
            absolute += strcmp(item(cas, "pos")->valuestring, "absolute") == 0;
            rope += strcmp(item(cas, "pos")->valuestring, "rope") == 0;
            tied += cJSON_IsTrue(item(cas, "tie_embeddings"));
        }
    }
    CHECK(cases >= 2 * 3 && absolute >= 2 && rope >= 2); /* 2 layers, at least absolute and rope */
    CHECK(tied >= 2);                                    /* and --tie-embeddings, on both thread counts */
    CHECK(item(item(fixture, "config"), "n_layers")->valueint == 2);
    slm_batch_free(&b);
    cJSON_Delete(fixture);
    return check_report();
}
