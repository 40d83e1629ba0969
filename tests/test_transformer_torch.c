/* The transformer against PyTorch: scripts/torch_transformer.py, written from
 * TransformerLens's conventions, wrote each case's loss and every gradient
 * (float64) on a tiny case of two blocks into tests/fixtures/transformer.json
 * (absolute, rope and alibi positions, gelu, gelu_new and relu); the C passes
 * must give the loss to 1e-5 relative and every gradient to 1e-4 of its
 * tensor's largest, on one thread and on two, through slm_model_backward and
 * through training's fused pass. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/fileio.h"
#include "storylm/model.h"

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

static void check_case(const cJSON *fixture, const cJSON *cas, const Batch *b) {
    ModelConfig cfg = config_of(fixture, cas);
    char what[64];
    snprintf(what, sizeof what, "--position-scheme %s --act %s", slm_pos_name(cfg.pos), slm_act_name((ActFn)cfg.act));
    check_fixture_case(&cfg, cas, b, what);
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
