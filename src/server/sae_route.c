/* /api/sae/features: storylm sae features --json for a model with an SAE
 * beside it (MODEL.sae/ next to MODEL.safetensors), on the server's
 * held-out stories. The folder is found from the model, never named by the
 * request, so a request reads no other path. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server_internal.h"
#include "storylm/registry.h"
#include "storylm/sae_io.h"

static const Param sae_feature_field[] = {
    PARAM_GROUP_OF(SaeFeatureFields, po, params_model),
    PARAM_GROUP_OF(SaeFeatureFields, fp, params_sae_features),
};
const ParamTable sae_features_fields = {"sae features", sae_feature_field, PARAMS_COUNT(sae_feature_field)};

int model_sae_dir(const char *model, char *dir, size_t size) {
    size_t n = strlen(model), ext = strlen(".safetensors");
    if (n > ext && strcmp(model + n - ext, ".safetensors") == 0) n -= ext;
    if (snprintf(dir, size, "%.*s.sae", (int)n, model) >= (int)size) return -1;
    char cfg[PATH_MAX];
    return snprintf(cfg, sizeof cfg, "%s/cfg.json", dir) < (int)sizeof cfg && access(cfg, R_OK) == 0 ? 0 : -1;
}

/* The features of the session's model's SAE on its held-out stories, as JSON; NULL (e set) on error. */
static cJSON *features_json(const ProbeSession *ps, const char *dir, const SaeFeatureOptions *o, int width, Error *e) {
    Sae sae = {0};
    SaeSite site;
    SaeFeatures ft = {0};
    cJSON *j = NULL;
    if (!slm_sae_load(&sae, dir, NULL, e) && !slm_sae_site(&ps->lm.model, sae.cfg.hook_name, &site, e) &&
        !slm_sae_features(&ps->lm.model, &sae, &site, &ps->stories, ps->stories.test, ps->stories.n_test, o, &ft, e))
        j = slm_sae_features_json(&ps->lm.model, &sae, &site, &ps->lm.tokenizer, &ps->stories, &ft, dir, width, e);
    slm_sae_features_free(&ft);
    slm_sae_free(&sae);
    return j;
}

int api_sae_features(Server *s, const cJSON *body, Reply *r) {
    SaeFeatureFields f = {0};
    SaeFeatureOptions o;
    Session ss;
    Error e = {0};
    char dir[PATH_MAX];
    slm_params_init(&sae_features_fields, &f);
    if (request_read(&sae_features_fields, body, &f, NULL, NULL, 0, r)) return r->status;
    if (slm_sae_feature_options(&f.fp, &o, &e)) return reply_failure(r, 400, &e);
    if (session_open(s, body, NEED_STORIES, &ss, r)) return r->status;
    if (model_sae_dir(ss.ps.model_path, dir, sizeof dir)) {
        char msg[PATH_MAX + 80];
        snprintf(msg, sizeof msg, "the model '%s' has no SAE beside it", ss.ps.model_path);
        reply_error(r, 404, msg,
                    "train one with storylm sae train STORIES -m MODEL.safetensors --hook HOOK -o MODEL.sae");
    } else {
        cJSON *j = features_json(&ss.ps, dir, &o, f.fp.width, &e);
        if (j)
            reply_json(r, 200, j);
        else
            reply_failure(r, 400, &e);
    }
    session_release(s, &ss);
    return r->status;
}
