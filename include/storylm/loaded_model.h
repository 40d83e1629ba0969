/* A model file loaded with its tokenizer (from the vocabulary stored in it):
 * what every verb that reads a model starts from. Never prints. */
#ifndef STORYLM_LOADED_MODEL_H
#define STORYLM_LOADED_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "storylm/error.h"
#include "storylm/model.h"
#include "storylm/safetensors.h"
#include "storylm/tokenizer.h"

#define DEFAULT_MODEL_PATH "model.safetensors"

typedef struct LoadedModel {
    Model model;
    Tokenizer tokenizer;
    Metadata meta;
    char *vocab;
    const char *path;
} LoadedModel;

/* The model a verb uses when none is given: ./model.safetensors when it is
 * there, else the shipped model (its path written to buf, *shipped set),
 * else ./model.safetensors still (its loader error says how to get one). */
const char *slm_default_model(char *buf, size_t size, bool *shipped);

int slm_loaded_model_load(LoadedModel *lm, const char *path, Error *e);
void slm_loaded_model_free(LoadedModel *lm);
/* The error for a model file path that does not exist (returns -1); for
 * ./model.safetensors, the default, it names where the shipped model was
 * looked for too (data_files.h). */
int slm_loaded_model_missing(const char *path, Error *e);

#endif
