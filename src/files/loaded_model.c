/* Loaded models: see loaded_model.h. */
#include "storylm/loaded_model.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storylm/checkpoint.h"
#include "storylm/data_files.h"

const char *slm_default_model(char *buf, size_t size, bool *shipped) {
    *shipped = !slm_data_file_exists(DEFAULT_MODEL_PATH) && slm_data_file_shipped_model(buf, size);
    return *shipped ? buf : DEFAULT_MODEL_PATH;
}

int slm_loaded_model_missing(const char *path, Error *e) {
    char shipped[PATH_MAX];
    /* a file given, or the default name asked for while a shipped model is there (--model given) */
    if (strcmp(path, DEFAULT_MODEL_PATH) != 0 || slm_data_file_shipped_model(shipped, sizeof shipped))
        return FAIL(e, "train one with 'storylm train STORIES', or give --model FILE", "no model file '%s'", path);
    char places[800]; /* the default: say where else we looked */
    slm_data_file_places(SHIPPED_MODEL_REL, places, sizeof places);
    return FAIL(e, "train one with 'storylm train STORIES', give --model FILE, or install storylm with its models",
                "no model file '%s' here, and no shipped model in %s", path, places);
}

int slm_loaded_model_load(LoadedModel *lm, const char *path, Error *e) {
    *lm = (LoadedModel){.path = path};
    struct stat st;
    if (stat(path, &st) != 0)
        return slm_loaded_model_missing(path, e); /* anything else there (a folder, say) the loader names */
    if (slm_checkpoint_load_model(path, &lm->model, &lm->vocab, &lm->meta, e)) return -1;
    if (slm_tokenizer_from_text(&lm->tokenizer, lm->vocab, strlen(lm->vocab), lm->model.cfg.vocab_size, e)) {
        slm_error_prefix(e, "the vocabulary in '%s' is unusable: ", path);
        slm_loaded_model_free(lm);
        return -1;
    }
    return 0;
}

void slm_loaded_model_free(LoadedModel *lm) {
    slm_model_free(&lm->model);
    slm_tokenizer_free(&lm->tokenizer);
    slm_metadata_free(&lm->meta);
    free(lm->vocab);
    *lm = (LoadedModel){0};
}
