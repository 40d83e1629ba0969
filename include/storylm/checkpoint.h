/* Model files (SPEC section 5) and the optimizer state for resuming.
 *
 * MODEL.safetensors: every tensor of the model's parameter table (same names
 * and shapes, F32, C order) and "__metadata__" with
 *   format "storylm", format_version "1", arch, the ModelConfig sizes
 *   (vocab_size row_dim n_heads key_dim value_dim window hidden_dim context),
 *   the caller's training keys (steps, seed, data, test_loss, ...), and
 *   vocab: the whole vocab.txt text, so one file is enough to generate.
 *
 * MODEL.adam.safetensors (slm_checkpoint_adam_path: ".safetensors" replaced by
 * ".adam.safetensors", or that appended): Adam's moments "m.NAME" and
 * "v.NAME" for every parameter tensor NAME, and "__metadata__" with
 *   format "storylm-adam", format_version "1", arch and sizes (as above),
 *   step, rng_state (decimal), data_hash and run_id (16 hex digits each),
 *   and the training code's own keys.
 *
 * slm_checkpoint_save_all writes both with the same step and run_id (the model
 * file gets "step" and "run_id" keys too): the state first to
 * MODEL.adam.safetensors.next, then the model, then renames the state into
 * place, so that whenever the process dies the model pairs with one of the
 * two. slm_checkpoint_load_all takes the one that pairs, and refuses a model
 * whose step or run_id neither has (files from different runs or saves).
 *
 * Every write is atomic (temporary file, fsync, rename): on any error the old
 * file stays. Every read validates the whole header first and names the file
 * and the problem when it refuses. */
#ifndef STORYLM_CHECKPOINT_H
#define STORYLM_CHECKPOINT_H

#include <stdint.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/safetensors.h"

#define CHECKPOINT_FORMAT "storylm"
#define CHECKPOINT_ADAM_FORMAT "storylm-adam"
#define CHECKPOINT_FORMAT_VERSION "1"
/* A pass holds the logits of up to --max-positions (4,096) positions: at 65,536
 * tokens that is 1 GB; a vocabulary of a million in a file of a few MB asked 16 GB. */
#define CHECKPOINT_MAX_VOCAB 65536
#define CHECKPOINT_MAX_DIM 4096

/* Saves m's tensors with its vocabulary (vocab.txt text: vocab_size lines)
 * and meta (the caller's keys; NULL for none; the keys the format itself
 * writes, such as "arch" or "vocab", are refused). */
int slm_checkpoint_save_model(const char *path, const Model *m, const char *vocab, const Metadata *meta, Error *e);

/* Loads a model file: validates it, slm_model_init()s m with the sizes it holds
 * and reads its tensors. *vocab gets the vocab.txt text (caller frees); meta
 * (may be NULL) gets the caller's keys, those the format writes left out.
 * On failure m, *vocab and meta are left empty. */
int slm_checkpoint_load_model(const char *path, Model *m, char **vocab, Metadata *meta, Error *e);

/* The model's configuration from an open file's header alone (its architecture,
 * sizes and the architecture's own keys, each checked), without its tensors. */
int slm_checkpoint_read_config(const SafeTensorsFile *st, ModelConfig *c, Error *e);

/* A metadata value as a whole number in base 10 or 16 (lower-case digits
 * only, fitting 64 bits) into *out: 1, or 0 when it is not one (or NULL). */
int slm_checkpoint_parse_u64(const char *s, int base, uint64_t *out);

/* Where a resume needs to pick up. */
typedef struct TrainingState {
    float *adam_m; /* (n_params): Adam's first moments, laid out like Model.params */
    float *adam_v; /* (n_params): second moments */
    size_t n_params;
    uint64_t step;      /* optimizer steps taken */
    uint64_t rng_state; /* the trainer's RNG, to go on with the same draws */
    uint64_t data_hash; /* hash of the stories (and vocabulary) trained on */
    uint64_t run_id;    /* random per training run: pairs a model file with its optimizer state */
    Metadata extra;     /* the training code's own keys (learning rate, position in the data, ...) */
} TrainingState;

/* Zeroed moments for m, step 0, a new run id. */
int slm_training_state_init(TrainingState *s, const Model *m, Error *e);
void slm_training_state_free(TrainingState *s);
/* A random 64-bit id (time, process id, addresses): not seeded, so two runs
 * with the same seed still differ. Never 0. */
uint64_t slm_checkpoint_new_run_id(void);

/* "x/model.safetensors" -> "x/model.adam.safetensors" (caller frees). */
char *slm_checkpoint_adam_path(const char *model_path, Error *e);
/* "x/model.safetensors" -> "x/model.adam.safetensors.next", where a save keeps
 * the optimizer state until its model is in place (caller frees). */
char *slm_checkpoint_adam_next_path(const char *model_path, Error *e);

/* The optimizer state alone. The loader checks that the file's architecture
 * and sizes are m's, and allocates s's moments (slm_training_state_free). */
int slm_checkpoint_save_adam(const char *path, const Model *m, const TrainingState *s, Error *e);
int slm_checkpoint_load_adam(const char *path, const Model *m, TrainingState *s, Error *e);

/* Both files: the model at model_path, the state at slm_checkpoint_adam_path()
 * (or, after a crash between the two, its ".next"), as described above. */
int slm_checkpoint_save_all(const char *model_path, const Model *m, const char *vocab, const Metadata *meta,
                            const TrainingState *s, Error *e);
int slm_checkpoint_load_all(const char *model_path, Model *m, char **vocab, Metadata *meta, TrainingState *s, Error *e);

#endif
