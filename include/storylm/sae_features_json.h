/* storylm sae features --json's object, built once for the command line and
 * the server's /api/sae/features: the SAE and its hook, every latent's
 * density, and for each latent shown its density, largest and mean value,
 * strongest contexts (the text with the firing token in [brackets], and each
 * token of the window with the latent's value there) and the tokens its
 * decoder direction promotes and suppresses. Never prints. */
#ifndef STORYLM_SAE_FEATURES_JSON_H
#define STORYLM_SAE_FEATURES_JSON_H

#include <cjson/cJSON.h>

#include "storylm/params.h"
#include "storylm/sae_model.h"
#include "storylm/tokenizer.h"

/* The options of a features report, one table for sae features' flags and
 * /api/sae/features's fields (params_sae_features). */
typedef struct SaeFeatureParams {
    int latents;        /* the densest N */
    const char *latent; /* "3,17,40": these instead (NULL: none) */
    int contexts, tokens, width;
} SaeFeatureParams;
extern const ParamTable params_sae_features;

/* p as the library's options; "latent" refused (naming it) unless a list of latents such as 3,17,40. */
int slm_sae_feature_options(const SaeFeatureParams *p, SaeFeatureOptions *o, Error *e);

/* ft (slm_sae_features of sae at site on s) as JSON; dir names the SAE;
 * width: tokens of context before the firing token (2 follow it). NULL (e
 * set) on error. */
cJSON *slm_sae_features_json(const Model *m, const Sae *sae, const SaeSite *site, const Tokenizer *t, const Stories *s,
                             const SaeFeatures *ft, const char *dir, int width, Error *e);

/* The report j (slm_sae_features_json's) drawn into path (SVG, written
 * atomically): each latent's contexts as rows of tokens shaded by its value
 * at each (the firing token framed, values as tooltips) and its promoted and
 * suppressed tokens. */
int slm_sae_features_svg(const cJSON *j, const char *path, Error *e);

/* The tokens of c's story around its position (width before, 2 after) into
 * buf as text, the firing one in [brackets], "##" pieces glued on. */
void slm_sae_context_text(const Tokenizer *t, const Stories *s, const SaeContext *c, int width, char *buf, size_t size);

#endif
