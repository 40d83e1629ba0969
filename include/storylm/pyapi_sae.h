/* Sparse autoencoders for foreign-function callers (python/storylm/sae.py,
 * through ctypes): an SAE folder loaded by the library's reader
 * (slm_sae_load) and its passes by the library's own encoder and decoder,
 * so Python's numbers are the CLI's (sae eval, sae features) bit for bit.
 * A call passes its rows through the library together (up to
 * PY_SAE_ROWS at a time), as the CLI passes a batch's: a row's numbers can
 * differ in the last bits with the rows it is passed with (the products
 * are blocked by their size), so the rows of one story give the bits of the
 * CLI's pass over that story. Never prints. */
#ifndef STORYLM_PYAPI_SAE_H
#define STORYLM_PYAPI_SAE_H

#include <stddef.h>

#include "storylm/error.h"

/* Rows passed through the library at once: beyond, in chunks of this many. */
#define PY_SAE_ROWS 4096

typedef struct PySae PySae;

/* The SAE in dir (cfg.json and sae_weights.safetensors), checked as sae eval checks it. */
PySae *slm_py_sae_load(const char *dir, Error *e);
void slm_py_sae_free(PySae *s);
/* JSON: what the library read of cfg.json: architecture, d_in, d_sae, k, hook_name, model_name (or null). */
char *slm_py_sae_config_json(const PySae *s, Error *e);
/* The parameters in one buffer, SAELens's order: W_enc (d_in, d_sae), b_enc (d_sae), W_dec (d_sae, d_in), b_dec (d_in).
 */
const float *slm_py_sae_params(const PySae *s, size_t *n);

/* x (B, d_in) -> z (B, d_sae): TopK's k largest pre-activations, ReLU'd; standard: ReLU of all. */
int slm_py_sae_encode(const PySae *s, const float *x, int B, float *z, Error *e);
/* z (B, d_sae) -> x_hat (B, d_in) = z W_dec + b_dec; TopK's rows add their
 * latents largest first, as the library's decoder adds the chosen ones. */
int slm_py_sae_decode(const PySae *s, const float *z, int B, float *x_hat, Error *e);
/* x (B, d_in) -> x_hat (B, d_in): encode then decode, the reconstruction sae eval splices in. */
int slm_py_sae_forward(const PySae *s, const float *x, int B, float *x_hat, Error *e);

#endif
