/* Where a sparse autoencoder meets a model: the hook point it reads (any
 * point the model declares with a value per position, or a transformer
 * block's blocks.L.hook_mlp_out, TransformerLens's name for the MLP's output,
 * read as resid_post - resid_mid and written back as resid_post = resid_mid +
 * the new value), the activations of training stories streamed from it, and
 * SAELens's evaluation with the SAE spliced into the forward pass through
 * the hook. Never prints. */
#ifndef STORYLM_SAE_MODEL_H
#define STORYLM_SAE_MODEL_H

#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/sae.h"
#include "storylm/sae_train.h"
#include "storylm/story_ids.h"

typedef struct SaeSite {
    char name[SAE_HOOK_MAX];  /* what the SAE reads, as cfg.json's hook_name */
    char point[SAE_HOOK_MAX]; /* the pass's point whose numbers are read and written */
    char mid[SAE_HOOK_MAX];   /* hook_mlp_out: the block's resid_mid; "" otherwise */
    int d_in;                 /* numbers a position */
    int to_logits;            /* the point is the logits: the pass must reach them */
} SaeSite;

/* The site called hook in m, its width learnt from a pass over two tokens;
 * refused with the model's points in the hint when m has no such point. */
int slm_sae_site(const Model *m, const char *hook, SaeSite *site, Error *e);

/* SITE_ADD: add_scale * add (d_in) added at every position (steering, a latent's effect). */
typedef enum { SITE_READ = 0, SITE_SPLICE, SITE_ZERO, SITE_ADD } SiteMode;

/* A model run over stories with a hook at the site: reads its numbers into
 * x (T, d_in) and, by mode, leaves them, puts the SAE's reconstruction in
 * their place, or zeroes them (hook_mlp_out: the MLP's output). */
typedef struct SaeModelRun {
    const Model *model;
    const SaeSite *site;
    Activations acts;
    Batch batch;
    ForwardHooks hooks;
    const char *names[2];
    SiteMode mode;
    const Sae *sae;   /* SITE_SPLICE */
    const float *add; /* SITE_ADD: (d_in) */
    float add_scale;
    SaePass pass;
    float *x, *mid; /* (T, d_in), grown as needed */
    size_t x_cap, mid_cap;
    int T, row; /* the last pass's positions and numbers a position at the site */
    int max_positions, max_stories;
} SaeModelRun;

/* A run for batches of up to max_positions tokens (sae: NULL, or the SAE to splice in). */
int slm_sae_model_run_init(SaeModelRun *r, const Model *m, const SaeSite *site, const Sae *sae, int max_positions,
                           Error *e);
void slm_sae_model_run_free(SaeModelRun *r);
/* Stories idx[*next..n) of s into one batch while they fit (*next advanced);
 * 0, or -1 when none fits (e says which story is too long). */
int slm_sae_model_batch(SaeModelRun *r, const Stories *s, const int *idx, int n, int *next, Error *e);
/* The batch through the model with the hook in mode; to_logits: the whole
 * pass (the losses), else as far as the site. r->x then holds its numbers. */
int slm_sae_model_forward(SaeModelRun *r, SiteMode mode, int to_logits, Error *e);

/* The stream of a site's activations over training stories, in an order
 * shuffled with a seed and again each time they are all read: slm_sae_train's SaeFill. */
typedef struct SaeStream {
    SaeModelRun run;
    const Stories *stories;
    int *order, n, next;
    Rng rng;
    uint64_t seed;
    int have, at;       /* rows of run.x not handed out yet: [at, have) */
    long long shuffles; /* times the order was shuffled (a resume replays them) */
    int batch_start;    /* the index into order of run.x's first story; -1: no batch yet */
} SaeStream;

int slm_sae_stream_init(SaeStream *st, const Model *m, const SaeSite *site, const Stories *s, uint64_t seed, Error *e);
void slm_sae_stream_free(SaeStream *st);
int slm_sae_stream_fill(void *ctx, float *x, int n, Error *e);
/* The stream's position (slm_sae_train's SaeTell) and a return to one
 * (SaeSeek): the shuffles replayed from the seed, the batch there made again. */
void slm_sae_stream_tell(void *ctx, SaeStreamPos *pos);
int slm_sae_stream_seek(void *ctx, const SaeStreamPos *pos, Error *e);

/* SAELens's metrics of an SAE on stories idx[0..n) of s. */
typedef struct SaeEval {
    int stories;
    long long tokens, predicted;
    double mse;                /* mean over every number of |x - x_hat|^2 */
    double explained_variance; /* 1 - sum |x - x_hat|^2 / sum |x - mean x|^2, in double */
    double l0, l1, cosine;     /* per token: latents firing, sum of z, cos(x, x_hat) */
    double dead_share;         /* latents that never fired on these tokens */
    double ce_clean, ce_spliced, ce_zero, ce_loss_score;
    double kl_spliced, kl_zero, kl_score; /* KL(clean || spliced or zeroed), per predicted token */
} SaeEval;

int slm_sae_eval(const Model *m, const Sae *sae, const SaeSite *site, const Stories *s, const int *idx, int n,
                 SaeEval *out, Error *e);

/* ---- features (sae_features.c) ---- */

#define SAE_CONTEXTS_MAX 16
#define SAE_TOKENS_MAX 16

/* Where a latent fired: story, position, value. */
typedef struct SaeContext {
    int story, position;
    float value;
} SaeContext;

/* One latent: how often it fires, its strongest contexts, and the tokens its
 * decoder direction (added at the hook at every position, scaled to its
 * largest value) makes more and less likely, by the mean change of their
 * log-probability over the predicted positions. */
typedef struct SaeFeature {
    int latent;
    double density, mean_value;
    float max_value;
    int n_contexts;
    SaeContext contexts[SAE_CONTEXTS_MAX]; /* strongest first */
    int32_t promoted[SAE_TOKENS_MAX], suppressed[SAE_TOKENS_MAX];
    float promoted_by[SAE_TOKENS_MAX], suppressed_by[SAE_TOKENS_MAX];
    int n_tokens;
} SaeFeature;

typedef struct SaeFeatureOptions {
    int n_latents;   /* the latents shown: the densest ones, unless latents[] names them */
    int latents[64]; /* n_named of them */
    int n_named;
    int contexts, tokens; /* per latent */
} SaeFeatureOptions;

typedef struct SaeFeatures {
    long long tokens;
    int d_sae, n_dead;
    float *density; /* (d_sae) */
    SaeFeature *features;
    int n;
} SaeFeatures;

/* The features of sae on stories idx[0..n) of s. */
int slm_sae_features(const Model *m, const Sae *sae, const SaeSite *site, const Stories *s, const int *idx, int n,
                     const SaeFeatureOptions *o, SaeFeatures *out, Error *e);
void slm_sae_features_free(SaeFeatures *f);

#endif
