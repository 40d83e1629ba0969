/* The chapter's network (SPEC section 4) and chapter 6's window8 baseline:
 * configuration, one parameter buffer with a table of named views. */
#ifndef STORYLM_MODEL_H
#define STORYLM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"

typedef enum { ARCH_ATTENTION = 0, ARCH_WINDOW8 = 1 } Arch;

typedef struct ModelConfig {
    Arch arch;
    int vocab_size; /* 2000 */
    int row_dim;    /* 32: a token's row of the embedding */
    int n_heads;    /* 8 */
    int key_dim;    /* 8: queries and keys */
    int value_dim;  /* 16 */
    int window;     /* 256: distances 0..window-1 are read */
    int hidden_dim; /* 128 */
    int context;    /* window8 only: 8 rows, oldest first, [EOS] row before the story */
} ModelConfig;

/* One named tensor inside the parameter buffer, safetensors-style shape. */
typedef struct ParamTensor {
    const char *name; /* "embedding", "query", ..., "output.bias" */
    int ndim;
    int shape[3];
    size_t offset; /* in floats, into Model.params */
    size_t size;   /* in floats */
} ParamTensor;

#define MODEL_MAX_TENSORS 12

typedef struct Model {
    ModelConfig cfg;
    float *params; /* every parameter, one buffer */
    size_t n_params;
    ParamTensor tensors[MODEL_MAX_TENSORS];
    int n_tensors;
    /* named views into params (NULL where the architecture has none) */
    float *embedding; /* (V, 32) */
    float *query;     /* (H, 32, 8): q = row @ query[h] */
    float *key;       /* (H, 32, 8) */
    float *value;     /* (H, 32, 16) */
    float *distance;  /* (H, 256): score added for each distance back */
    float *hidden_w;  /* (128, 160) attention / (128, 256) window8, PyTorch Linear layout */
    float *hidden_b;  /* (128) */
    float *output_w;  /* (V, 128) */
    float *output_b;  /* (V) */
} Model;

ModelConfig model_config_default(Arch arch, int vocab_size);
const char *arch_name(Arch arch);
int arch_parse(const char *name, Arch *arch, Error *e);

/* Lays out the tensor table for cfg and allocates params (zeroed). */
int model_init(Model *m, const ModelConfig *cfg, Error *e);
void model_free(Model *m);
/* Small random weights from seed; distance scores start at 0 (the chapter). */
void model_randomize(Model *m, uint64_t seed);
/* The tensor called name, or NULL. */
const ParamTensor *model_tensor(const Model *m, const char *name);
/* Number of floats the table would hold for cfg (352,848 for the default). */
size_t model_param_count(const ModelConfig *cfg);

#endif
