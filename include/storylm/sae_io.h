/* A sparse autoencoder's folder in SAELens's format, so that SAELens's
 * loaders (and the 15 lines of numpy in docs/sae.md) read it:
 *
 *   DIR/cfg.json                  architecture ("topk", "standard" or "jumprelu": a
 *                                 trained BatchTopK, as SAELens saves one), d_in, d_sae,
 *                                 k, hook_name, apply_b_dec_to_input (true),
 *                                 normalize_activations ("none": the scale is folded
 *                                 into the weights), dtype, device, model_name, the
 *                                 older keys (activation_fn_str, hook_layer, ...), a
 *                                 "metadata" object and storylm's own training record
 *   DIR/sae_weights.safetensors   W_enc [d_in, d_sae], b_enc [d_sae],
 *                                 W_dec [d_sae, d_in], b_dec [d_in], (jumprelu)
 *                                 threshold [d_sae], F32
 *   DIR/sparsity.safetensors      sparsity [d_sae]: log10 of each latent's firing
 *                                 frequency (+ 1e-10), as SAELens writes it
 *
 * Each file is written atomically. Never prints. */
#ifndef STORYLM_SAE_IO_H
#define STORYLM_SAE_IO_H

#include "storylm/sae.h"

/* What a folder records beside the weights. */
typedef struct SaeRecord {
    const char *model; /* the model file the SAE reads */
    int context_size;  /* the model's positions */
    double l1, lr, scale, seconds;
    long long tokens;
    int batch_tokens, steps, expansion;
    unsigned long long seed;
    const char *stories;
} SaeRecord;

/* cfg.json's architecture of a kind: "topk", "standard" (L1), "jumprelu" (BatchTopK). */
const char *slm_sae_architecture(SaeKind kind);
/* Writes dir's three files (dir is made when missing); density (d_sae) may be NULL: no sparsity file. */
int slm_sae_save(const Sae *s, const char *dir, const SaeRecord *rec, const float *density, Error *e);
/* Reads dir's cfg.json and weights into s, checked (shapes, architecture,
 * finite numbers); *model (may be NULL) = cfg.json's model_name (caller frees). */
int slm_sae_load(Sae *s, const char *dir, char **model, Error *e);

#endif
