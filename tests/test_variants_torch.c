/* The variants of --pos, --score and --layers against PyTorch: scripts/torch_variants.py
 * wrote each variant's loss and every gradient (float64) on a tiny case into
 * tests/fixtures/variants.json; the C passes must give the loss to 1e-5
 * relative and every gradient to 1e-4 of its tensor's largest, on one thread
 * and on two, through slm_model_backward and through training's fused pass. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/fileio.h"
#include "storylm/model.h"

static cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static ModelConfig config_of(const cJSON *fixture, const cJSON *cas) {
    const cJSON *c = item(fixture, "config");
    ModelConfig cfg = {.arch = &slm_attention_arch, .context = 3};
    cfg.vocab_size = item(c, "vocab_size")->valueint;
    cfg.row_dim = item(c, "row_dim")->valueint;
    cfg.n_heads = item(c, "n_heads")->valueint;
    cfg.key_dim = item(c, "key_dim")->valueint;
    cfg.value_dim = item(c, "value_dim")->valueint;
    cfg.window = item(c, "window")->valueint;
    cfg.hidden_dim = item(c, "hidden_dim")->valueint;
    Error e;
    CHECK(slm_pos_parse(item(cas, "pos")->valuestring, &cfg.pos, &e) == 0);
    CHECK(slm_score_parse(item(cas, "score")->valuestring, &cfg.score, &e) == 0);
    cfg.n_layers = item(cas, "layers") ? item(cas, "layers")->valueint : 1; /* absent: one layer */
    return cfg;
}

static void check_case(const cJSON *fixture, const cJSON *cas, const Batch *b) {
    ModelConfig cfg = config_of(fixture, cas);
    char what[64];
    snprintf(what, sizeof what, "--position-scheme %s --score %s --layers %d", slm_pos_name(cfg.pos),
             slm_score_name(cfg.score), slm_model_layers(&cfg));
    check_fixture_case(&cfg, cas, b, what);
}

int main(void) {
    Batch b;
    cJSON *fixture = check_fixture_load("tests/fixtures/variants.json", &b);
    if (!fixture) return check_report();
    int cases = 0;
    for (int threads = 1; threads <= 2; threads++) {
        slm_model_threads_setup(threads);
        const cJSON *cas;
        cJSON_ArrayForEach(cas, item(fixture, "cases")) {
            check_case(fixture, cas, &b);
            cases++;
        }
    }
    CHECK(cases >= 2 * 3); /* at least rope, alibi and absolute */
    int layered = 0;
    const cJSON *cas;
    cJSON_ArrayForEach(cas, item(fixture, "cases")) layered +=
        item(cas, "layers") && item(cas, "layers")->valueint == 2;
    CHECK(layered >= 1); /* and --layers 2 */
    slm_batch_free(&b);
    cJSON_Delete(fixture);
    return check_report();
}
