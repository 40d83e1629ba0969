/* The metadata keys the architectures share: see src/arch/arch_shared.h. */
#include "arch_shared.h"

#include <stdint.h>
#include <stdio.h>

#include "storylm/model_params.h"
#include "storylm/position.h"
#include "storylm/score.h"

/* s a whole decimal number (digits only, no sign) not above max. */
static int parse_count(const char *s, uint64_t max, uint64_t *out) {
    if (!s || !*s) return 0;
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || x > (max - (uint64_t)(*p - '0')) / 10) return 0;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    *out = x;
    return 1;
}

int slm_arch_read_layers(ModelConfig *c, ConfigGet get, void *ctx, int max, Error *e) {
    const char *layers = get(ctx, "layers");
    uint64_t n_layers = 1;
    if (layers && (!parse_count(layers, UINT64_MAX, &n_layers) || n_layers < 1 || n_layers > (uint64_t)max))
        return FAIL(e, SLM_BAD_MODEL_HINT, "metadata layers '%.40s' is not a whole number from 1 to %d", layers, max);
    c->n_layers = (int)n_layers;
    return 0;
}

int slm_arch_read_variant(ModelConfig *c, ConfigGet get, void *ctx, Error *e) {
    const char *pos = get(ctx, "pos"), *score = get(ctx, "score");
    if (pos && slm_pos_parse(pos, &c->pos, NULL))
        return FAIL(e, "a newer storylm may read it", "unknown position scheme '%.40s' (storylm knows %s)", pos,
                    slm_pos_names());
    if (score && slm_score_parse(score, &c->score, NULL))
        return FAIL(e, "a newer storylm may read it", "unknown score function '%.40s' (storylm knows %s)", score,
                    slm_score_names());
    return 0;
}

int slm_arch_write_variant(const ModelConfig *c, ConfigPut put, void *ctx, Error *e) {
    return put(ctx, "pos", slm_pos_name(c->pos), e) || put(ctx, "score", slm_score_name(c->score), e) ? -1 : 0;
}

int slm_arch_write_layers(const ModelConfig *c, ConfigPut put, void *ctx, Error *e) {
    char layers[16]; /* only when more than one: a one-layer file stays as it was */
    snprintf(layers, sizeof layers, "%d", slm_model_layers(c));
    return slm_model_layers(c) > 1 && put(ctx, "layers", layers, e) ? -1 : 0;
}
