/* The loaded model behind pyapi.h's opaque PyModel, shared by the files of src/api. */
#ifndef STORYLM_PYAPI_MODEL_H
#define STORYLM_PYAPI_MODEL_H

#include "storylm/loaded_model.h"
#include "storylm/pyapi.h"

struct PyModel {
    LoadedModel lm;
    char *path; /* lm.path points here */
};

#endif
