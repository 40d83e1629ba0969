/* sae features --json (sae_features_json.h): the features as JSON, each
 * context's window with the latent's value at every token, from a pass
 * over the context's story alone. */
#include "storylm/sae_features_json.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const Param feature_params[] = {
    {.name = "latents",
     .type = PARAM_INT,
     .offset = offsetof(SaeFeatureParams, latents),
     .meta = "N",
     .help = "show the N densest latents",
     .min = 1,
     .max = 64,
     .def = 10},
    {.name = "latent",
     .type = PARAM_STRING,
     .offset = offsetof(SaeFeatureParams, latent),
     .meta = "I,J,..",
     .help = "show these latents (from 0) instead"},
    {.name = "contexts",
     .type = PARAM_INT,
     .offset = offsetof(SaeFeatureParams, contexts),
     .meta = "N",
     .help = "strongest contexts a latent",
     .min = 1,
     .max = SAE_CONTEXTS_MAX,
     .def = 3},
    {.name = "promoted",
     .type = PARAM_INT,
     .offset = offsetof(SaeFeatureParams, tokens),
     .meta = "N",
     .help = "promoted and suppressed tokens a latent",
     .min = 1,
     .max = SAE_TOKENS_MAX,
     .def = 5},
    {.name = "width",
     .type = PARAM_INT,
     .offset = offsetof(SaeFeatureParams, width),
     .meta = "N",
     .help = "tokens of context before the firing token",
     .min = 0,
     .max = 64,
     .def = 8},
};
const ParamTable params_sae_features = {"sae features", feature_params, PARAMS_COUNT(feature_params)};

/* e names the latent parameter, whose value p->latent is not a list of latents. */
static int bad_latents(const SaeFeatureParams *p, Error *e) {
    FAIL(e, "give up to 64 latents from 0, such as 3,17,40", "is not a list of latents such as 3,17,40");
    slm_error_set_param(e, ERROR_PARAM_VALUE, "latent", "latent", p->latent, 1, 0);
    return -1;
}

int slm_sae_feature_options(const SaeFeatureParams *p, SaeFeatureOptions *o, Error *e) {
    *o = (SaeFeatureOptions){.n_latents = p->latents, .contexts = p->contexts, .tokens = p->tokens};
    for (const char *at = p->latent; at && *at;) {
        char *end;
        long v = strtol(at, &end, 10);
        if (end == at || v < 0 || v > 100000000 || o->n_named == 64 || (*end && *end != ',') || (*end && !end[1]))
            return bad_latents(p, e);
        o->latents[o->n_named++] = (int)v;
        at = *end ? end + 1 : end;
    }
    return p->latent && !o->n_named ? bad_latents(p, e) : 0;
}

/* The window of context c: width tokens before its position and 2 after, within the story. */
static void window(const Stories *s, const SaeContext *c, int width, int *from, int *to) {
    int len = (int)story_len(s, c->story);
    *from = c->position - width > 0 ? c->position - width : 0;
    *to = c->position + 3 < len ? c->position + 3 : len;
}

void slm_sae_context_text(const Tokenizer *t, const Stories *s, const SaeContext *c, int width, char *buf,
                          size_t size) {
    int from, to;
    window(s, c, width, &from, &to);
    size_t used = 0;
    buf[0] = 0;
    for (int p = from; p < to && used + 1 < size; p++) {
        const char *piece = t->pieces[story_token(s, c->story, (size_t)p)];
        int glued = strncmp(piece, "##", 2) == 0;
        used += (size_t)snprintf(buf + used, size - used, "%s%s%s%s", p > from && !glued ? " " : "",
                                 p == c->position ? "[" : "", glued ? piece + 2 : piece, p == c->position ? "]" : "");
    }
}

/* Latent j's value z (T, L) at each token of c's window: [{"position", "token", "id", "value"}]. */
static cJSON *window_tokens(const Tokenizer *t, const Stories *s, const SaeContext *c, int width, const float *z, int L,
                            int j) {
    int from, to;
    window(s, c, width, &from, &to);
    cJSON *a = cJSON_CreateArray();
    for (int p = from; a && p < to; p++) {
        int32_t id = story_token(s, c->story, (size_t)p);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "position", p);
        cJSON_AddStringToObject(o, "token", t->pieces[id]);
        cJSON_AddNumberToObject(o, "id", id);
        cJSON_AddNumberToObject(o, "value", z[(size_t)p * L + j]);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* Story i alone through the model and the SAE: r->pass.z holds its latents (T, L). */
static int story_latents(SaeModelRun *r, const Stories *s, int i, Error *e) {
    int next = 0;
    if (slm_sae_model_batch(r, s, &i, 1, &next, e) || slm_sae_model_forward(r, SITE_READ, r->site->to_logits, e))
        return -1;
    slm_sae_encode(r->sae, &r->pass, r->x, r->T);
    return 0;
}

static cJSON *token_list(const Tokenizer *t, const int32_t *ids, const float *by, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < n; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "token", t->pieces[ids[k]]);
        cJSON_AddNumberToObject(o, "id", ids[k]);
        cJSON_AddNumberToObject(o, "log_prob_change", by[k]);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* Feature x's contexts, each with its window's values from a pass over its story. */
static int contexts_json(SaeModelRun *r, const Tokenizer *t, const Stories *s, const SaeFeature *x, int width,
                         cJSON *list, Error *e) {
    for (int c = 0; c < x->n_contexts; c++) {
        const SaeContext *ctx = &x->contexts[c];
        char text[1024];
        if (story_latents(r, s, ctx->story, e)) return -1;
        cJSON *co = cJSON_CreateObject();
        slm_sae_context_text(t, s, ctx, width, text, sizeof text);
        cJSON_AddNumberToObject(co, "story", ctx->story);
        cJSON_AddNumberToObject(co, "position", ctx->position);
        cJSON_AddNumberToObject(co, "value", ctx->value);
        cJSON_AddStringToObject(co, "text", text);
        cJSON_AddItemToObject(co, "tokens", window_tokens(t, s, ctx, width, r->pass.z, r->sae->cfg.d_sae, x->latent));
        cJSON_AddItemToArray(list, co);
    }
    return 0;
}

cJSON *slm_sae_features_json(const Model *m, const Sae *sae, const SaeSite *site, const Tokenizer *t, const Stories *s,
                             const SaeFeatures *ft, const char *dir, int width, Error *e) {
    int longest = 1;
    for (int i = 0; i < ft->n; i++)
        for (int c = 0; c < ft->features[i].n_contexts; c++) {
            int len = (int)story_len(s, ft->features[i].contexts[c].story);
            if (len > longest) longest = len;
        }
    SaeModelRun r;
    if (slm_sae_model_run_init(&r, m, site, sae, longest, e)) return NULL;
    cJSON *j = cJSON_CreateObject(), *list = cJSON_CreateArray();
    cJSON_AddStringToObject(j, "command", "sae");
    cJSON_AddStringToObject(j, "work", "features");
    cJSON_AddStringToObject(j, "sae", dir);
    cJSON_AddStringToObject(j, "hook_name", sae->cfg.hook_name);
    cJSON_AddNumberToObject(j, "d_sae", sae->cfg.d_sae);
    cJSON_AddNumberToObject(j, "tokens", (double)ft->tokens);
    cJSON_AddNumberToObject(j, "dead", ft->n_dead);
    cJSON_AddItemToObject(j, "density", cJSON_CreateFloatArray(ft->density, ft->d_sae));
    int rc = 0;
    for (int i = 0; !rc && i < ft->n; i++) {
        const SaeFeature *x = &ft->features[i];
        cJSON *o = cJSON_CreateObject(), *cs = cJSON_CreateArray();
        cJSON_AddNumberToObject(o, "latent", x->latent);
        cJSON_AddNumberToObject(o, "density", x->density);
        cJSON_AddNumberToObject(o, "max", x->max_value);
        cJSON_AddNumberToObject(o, "mean", x->mean_value);
        rc = contexts_json(&r, t, s, x, width, cs, e);
        cJSON_AddItemToObject(o, "contexts", cs);
        cJSON_AddItemToObject(o, "promotes", token_list(t, x->promoted, x->promoted_by, x->n_tokens));
        cJSON_AddItemToObject(o, "suppresses", token_list(t, x->suppressed, x->suppressed_by, x->n_tokens));
        cJSON_AddItemToArray(list, o);
    }
    cJSON_AddItemToObject(j, "features", list);
    slm_sae_model_run_free(&r);
    if (rc) cJSON_Delete(j), j = NULL;
    return j;
}
