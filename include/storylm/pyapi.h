/* A flat C interface for foreign-function callers (python/storylm, through
 * ctypes): an opaque loaded model and calls that take and return plain C
 * types, so the caller needs none of the library's structs but Error.
 * Strings returned are the caller's, freed with slm_py_release. Every call
 * is safe from several threads at once on the same model: each allocates
 * its own activations. */
#ifndef STORYLM_PYAPI_H
#define STORYLM_PYAPI_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/hooks.h"

typedef struct PyModel PyModel;

/* The model file path (NULL: the shipped model, found as the CLI finds it). */
PyModel *slm_py_load(const char *path, Error *e);
/* Never while a call on m runs (python/storylm counts them: Handle in _lib.py). */
void slm_py_free(PyModel *m);
/* The kernels of m's passes (its forward, loss and probes): "blas" or
 * "portable" (the WebAssembly build's bits); -1 with e set for another name. */
int slm_py_set_kernels(PyModel *m, const char *name, Error *e);
/* Frees what the calls below returned. */
void slm_py_release(void *p);

/* JSON: the model's file, arch, pos, score, parameters and info --json's
 * config (vocab_size, row_dim, n_heads, ...; layers for attention). */
char *slm_py_config_json(const PyModel *m, Error *e);
/* The hook names of the model, "\n"-separated (hooks.h). */
char *slm_py_hook_names(const PyModel *m, Error *e);

/* text's token ids (without [EOS]) into *ids (caller releases); count, or -1.
 * text is len bytes: one with a NUL byte (or invalid UTF-8) is refused, as
 * the CLI refuses it, not cut short there. */
int slm_py_tokenize(const PyModel *m, const char *text, size_t len, int32_t **ids, Error *e);
/* The ids as text (the tokenizer's decoding, pieces joined). */
char *slm_py_decode(const PyModel *m, const int32_t *ids, int n, Error *e);
/* The vocabulary, one piece a line (line number = id), as vocab.txt holds it. */
char *slm_py_vocab(const PyModel *m, Error *e);
/* The vocabulary's id of [EOS]. */
int slm_py_eos(const PyModel *m);

/* ids (T >= 1, the caller's [EOS] first) through slm_model_forward, hooks
 * fn(ctx, ...) at the points names[0..n_names) (names NULL: all; fn NULL:
 * none), the heads of ablate ("3,5", "1:3,2:5"; NULL: none) set to 0 ->
 * logits (T, V) when not NULL and *loss (may be NULL): the mean of
 * -log p(ids[t+1]) over t < T-1, as eval --text reports it (0 when T = 1). */
int slm_py_run(const PyModel *m, const int32_t *ids, int T, HookFn fn, void *ctx, const char *const *names, int n_names,
               const char *ablate, float *logits, double *loss, Error *e);

/* The model's tensors, in its table's order, as JSON: [{"name", "shape",
 * "offset"}] (offset in floats into the buffer slm_py_params gives). */
char *slm_py_tensors_json(const PyModel *m, Error *e);
/* The parameter buffer (*n floats), read-only: the loaded model's own, alive
 * until slm_py_free. */
const float *slm_py_params(const PyModel *m, size_t *n);
/* A new model: m with its parameters replaced by params (n floats, laid out
 * as slm_py_params's), its vocabulary, configuration and metadata copied;
 * m is unchanged. A number that is not finite is refused, named by its
 * tensor and index, as a model file holding one is. */
PyModel *slm_py_with_params(const PyModel *m, const float *params, size_t n, Error *e);
/* m saved as a model file at path (its vocabulary and metadata with it), as
 * training saves one. */
int slm_py_save(const PyModel *m, const char *path, Error *e);

/* The sampler's defaults, as JSON text (slm_view_generate_defaults_json). */
char *slm_py_generate_defaults(Error *e);

/* A verb's parameters that Python gives by keyword ("generate", "train"),
 * as JSON: [{"name", "key", "type", "help", "default", "min", "max",
 * "choices", ...}] (params.h's slm_params_describe): the one table the
 * command line reads its options with. */
char *slm_py_params_json(const char *verb, Error *e);
/* options (a JSON object of Python's keywords of verb) checked against its
 * table: 0, or -1 with e naming the keyword (Error.param): one it does not
 * take (with the nearest), a value of the wrong type or out of range. */
int slm_py_params_check(const char *verb, const char *options, Error *e);

/* storylm generate's text for prompt (prompt_len bytes, refused with a NUL
 * byte as slm_py_tokenize refuses it) with options (a JSON object of
 * generate's keywords, read with its table as slm_py_params_check reads
 * them; "seed" drawn by the caller, 0 or more): "samples" stories (sample i
 * with seed seed + i), as a JSON array of strings. Names are capitalised as
 * the CLI does (stories, else the model's training file, else
 * data/stories.txt; then fallback_stories when none of those is found; each
 * may be NULL). */
char *slm_py_generate(const PyModel *m, const char *prompt, size_t prompt_len, const char *options, const char *stories,
                      const char *fallback_stories, Error *e);
/* As slm_py_generate, the run as storylm generate --json's object (each new
 * token's log-probability and its n_probs likeliest alternatives, 0 to
 * SAMPLER_MAX_N_PROBS; the seconds it took). */
char *slm_py_generate_json(const PyModel *m, const char *prompt, size_t prompt_len, const char *options, int n_probs,
                           const char *stories, const char *fallback_stories, Error *e);
/* As slm_py_generate (n_probs < 0) or slm_py_generate_json, each token drawn
 * from the logits of a whole forward pass over the story so far with hooks
 * fn(ctx, ...) at names (slm_py_run's), not from the generator's one
 * position at a time: the same arithmetic to float rounding, so with hooks
 * that change nothing the same text in practice. Samples are written one
 * after another (sample i with seed + i). */
char *slm_py_generate_hooked(const PyModel *m, const char *prompt, size_t prompt_len, const char *options, int n_probs,
                             HookFn fn, void *ctx, const char *const *names, int n_names, const char *stories,
                             const char *fallback_stories, Error *e);

#endif
