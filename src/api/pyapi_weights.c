/* The weights of pyapi.h: the model's tensor table and parameter buffer as
 * Python reads them (state_dict), a copy of a model with changed parameters
 * (load_state_dict) and saving one. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pyapi_model.h"
#include "storylm/checkpoint.h"

char *slm_py_tensors_json(const PyModel *m, Error *e) {
    const Model *model = &m->lm.model;
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; list && i < model->n_tensors; i++) {
        const ParamTensor *t = &model->tensors[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", t->name);
        cJSON_AddItemToObject(j, "shape", cJSON_CreateIntArray(t->shape, t->ndim));
        cJSON_AddNumberToObject(j, "offset", (double)t->offset);
        cJSON_AddItemToArray(list, j);
    }
    char *s = list ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    if (!s) FAIL(e, NULL, "out of memory making JSON");
    return s;
}

const float *slm_py_params(const PyModel *m, size_t *n) {
    *n = m->lm.model.n_params;
    return m->lm.model.params;
}

/* params (model's layout) all finite, else e names the tensor and index, as a model file's check does. */
static int params_finite(const Model *model, const float *params, Error *e) {
    for (int i = 0; i < model->n_tensors; i++) {
        const ParamTensor *t = &model->tensors[i];
        for (size_t j = 0; j < t->size; j++)
            if (!isfinite(params[t->offset + j]))
                return FAIL(e, "give finite numbers: a model holding one computes NaN losses",
                            "tensor '%s' holds %s at element %zu", t->name,
                            isnan(params[t->offset + j]) ? "NaN" : "an infinity", j);
    }
    return 0;
}

/* dst = a copy of src's metadata. */
static int copy_meta(Metadata *dst, const Metadata *src, Error *e) {
    for (int i = 0; i < src->count; i++)
        if (slm_metadata_append(dst, src->items[i].key, src->items[i].value, e)) return -1;
    return 0;
}

PyModel *slm_py_with_params(const PyModel *m, const float *params, size_t n, Error *e) {
    const LoadedModel *from = &m->lm;
    if (n != from->model.n_params)
        return FAIL(e, NULL, "%zu parameters given; the model has %zu", n, from->model.n_params), NULL;
    if (params_finite(&from->model, params, e)) return NULL;
    PyModel *out = xcalloc(1, sizeof *out, e);
    if (!out) return NULL;
    size_t vocab_len = strlen(from->vocab);
    int rc = !(out->path = xmalloc(strlen(m->path) + 1, e)) || !(out->lm.vocab = xmalloc(vocab_len + 1, e));
    if (!rc) {
        strcpy(out->path, m->path);
        memcpy(out->lm.vocab, from->vocab, vocab_len + 1);
        out->lm.path = out->path;
        rc = slm_model_init(&out->lm.model, &from->model.cfg, e) || copy_meta(&out->lm.meta, &from->meta, e) ||
             slm_tokenizer_from_text(&out->lm.tokenizer, out->lm.vocab, vocab_len, from->model.cfg.vocab_size, e);
    }
    if (rc) {
        slm_py_free(out);
        return NULL;
    }
    memcpy(out->lm.model.params, params, n * sizeof(float));
    out->lm.model.kernels = from->model.kernels;
    return out;
}

int slm_py_save(const PyModel *m, const char *path, Error *e) {
    return slm_checkpoint_save_model(path, &m->lm.model, m->lm.vocab, &m->lm.meta, e);
}
