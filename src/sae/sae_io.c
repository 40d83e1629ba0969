/* A sparse autoencoder's folder in SAELens's format (sae_io.h). */
#include "storylm/sae_io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storylm/fileio.h"
#include "storylm/safetensors.h"

/* dir/name into buf. */
static const char *in_dir(char *buf, size_t size, const char *dir, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

/* The layer of a hook inside the blocks ("blocks.1.hook_mlp_out": 1), else 0. */
static int hook_layer(const char *hook) {
    int l = 0;
    return sscanf(hook, "blocks.%d.", &l) == 1 ? l : 0;
}

/* The keys SAELens's loaders read: its current ones at the top level, the
 * older ones beside them, and the model's in "metadata". */
static cJSON *config_json(const Sae *s, const SaeRecord *rec) {
    const SaeConfig *c = &s->cfg;
    int topk = c->kind == SAE_TOPK, jump = c->kind == SAE_JUMPRELU;
    cJSON *j = cJSON_CreateObject(), *md = cJSON_CreateObject(), *kw = cJSON_CreateObject(),
          *own = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "architecture", slm_sae_architecture(c->kind));
    cJSON_AddNumberToObject(j, "d_in", c->d_in);
    cJSON_AddNumberToObject(j, "d_sae", c->d_sae);
    if (topk) cJSON_AddNumberToObject(j, "k", c->k);
    cJSON_AddStringToObject(j, "dtype", "float32");
    cJSON_AddStringToObject(j, "device", "cpu");
    cJSON_AddBoolToObject(j, "apply_b_dec_to_input", 1);
    cJSON_AddStringToObject(j, "normalize_activations", "none");
    cJSON_AddStringToObject(j, "reshape_activations", "none");
    cJSON_AddStringToObject(j, "model_name", rec->model);
    cJSON_AddStringToObject(j, "hook_name", c->hook_name);
    cJSON_AddNumberToObject(j, "hook_layer", hook_layer(c->hook_name));
    cJSON_AddNullToObject(j, "hook_head_index");
    cJSON_AddStringToObject(j, "activation_fn_str", topk ? "topk" : "relu");
    if (topk) cJSON_AddNumberToObject(kw, "k", c->k);
    cJSON_AddItemToObject(j, "activation_fn_kwargs", kw);
    cJSON_AddBoolToObject(j, "finetuning_scaling_factor", 0);
    cJSON_AddNumberToObject(j, "context_size", rec->context_size);
    cJSON_AddBoolToObject(j, "prepend_bos", 1);
    cJSON_AddStringToObject(j, "dataset_path", rec->stories ? rec->stories : "");
    cJSON_AddStringToObject(md, "model_name", rec->model);
    cJSON_AddStringToObject(md, "hook_name", c->hook_name);
    cJSON_AddNullToObject(md, "hook_head_index");
    cJSON_AddBoolToObject(md, "prepend_bos", 1);
    cJSON_AddNumberToObject(md, "context_size", rec->context_size);
    cJSON_AddStringToObject(md, "dataset_path", rec->stories ? rec->stories : "");
    cJSON_AddItemToObject(j, "metadata", md);
    cJSON_AddStringToObject(own, "kind", topk ? "topk" : jump ? "batchtopk" : "l1");
    if (jump) cJSON_AddNumberToObject(own, "k", c->k); /* BatchTopK's mean in training; JumpReLU has none */
    cJSON_AddNumberToObject(own, "expansion", rec->expansion);
    cJSON_AddNumberToObject(own, "k_aux", c->k_aux);
    cJSON_AddNumberToObject(own, "l1_coefficient", rec->l1);
    cJSON_AddNumberToObject(own, "lr", rec->lr);
    cJSON_AddNumberToObject(own, "tokens", (double)rec->tokens);
    cJSON_AddNumberToObject(own, "steps", rec->steps);
    cJSON_AddNumberToObject(own, "batch_tokens", rec->batch_tokens);
    cJSON_AddNumberToObject(own, "seed", (double)rec->seed);
    cJSON_AddNumberToObject(own, "activation_scale_folded", rec->scale);
    cJSON_AddNumberToObject(own, "seconds", rec->seconds);
    cJSON_AddItemToObject(j, "storylm", own);
    return j;
}

static int save_cfg(const Sae *s, const char *path, const SaeRecord *rec, Error *e) {
    cJSON *j = config_json(s, rec);
    char *text = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    if (!text) return FAIL(e, NULL, "out of memory");
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON's terminating NUL becomes the final newline */
    int rc = slm_file_write_atomic(path, text, len + 1, e);
    free(text);
    return rc;
}

/* sparsity [d_sae] = log10(density + 1e-10). */
static int save_sparsity(const Sae *s, const char *path, const float *density, Error *e) {
    int L = s->cfg.d_sae;
    float *log_density = xmalloc((size_t)L * sizeof(float), e);
    if (!log_density) return -1;
    for (int j = 0; j < L; j++) log_density[j] = (float)log10((double)density[j] + 1e-10);
    SafeTensorOut t = {"sparsity", 1, {L}, log_density};
    int rc = slm_safetensors_write_f32(path, &t, 1, NULL, e);
    free(log_density);
    return rc;
}

int slm_sae_save(const Sae *s, const char *dir, const SaeRecord *rec, const float *density, Error *e) {
    char path[4096];
    struct stat st;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return FAIL(e, "give -o a folder whose parent exists", "cannot make the folder '%s': %s", dir, strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return FAIL(e, "give -o a folder (it is made when missing)", "'%s' is not a folder", dir);
    int D = s->cfg.d_in, L = s->cfg.d_sae;
    SafeTensorOut t[5] = {{"W_enc", 2, {D, L}, s->W_enc},
                          {"b_enc", 1, {L}, s->b_enc},
                          {"W_dec", 2, {L, D}, s->W_dec},
                          {"b_dec", 1, {D}, s->b_dec},
                          {"threshold", 1, {L}, s->threshold}};
    int n = s->threshold ? 5 : 4;
    /* the weights first: a cfg.json is only ever beside the weights it describes */
    if (slm_safetensors_write_f32(in_dir(path, sizeof path, dir, "sae_weights.safetensors"), t, n, NULL, e) ||
        save_cfg(s, in_dir(path, sizeof path, dir, "cfg.json"), rec, e))
        return -1;
    return density ? save_sparsity(s, in_dir(path, sizeof path, dir, "sparsity.safetensors"), density, e) : 0;
}

const char *slm_sae_architecture(SaeKind kind) {
    return kind == SAE_TOPK ? "topk" : kind == SAE_JUMPRELU || kind == SAE_BATCHTOPK ? "jumprelu" : "standard";
}

/* ---- reading ---------------------------------------------------------------- */

static int json_int(const cJSON *j, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsNumber(v) || v->valuedouble != (int)v->valuedouble) return -1;
    *out = (int)v->valuedouble;
    return 0;
}

static const char *json_string(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* cfg.json into c; *model its model_name (copied). */
static int read_cfg(const char *path, SaeConfig *c, char **model, Error *e) {
    char *text;
    size_t len;
    if (slm_file_read_all(path, 1u << 20, &text, &len, e)) return -1;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) return FAIL(e, "train it again with storylm sae train", "'%s' is not JSON", path);
    const char *arch = json_string(j, "architecture"), *hook = json_string(j, "hook_name"),
               *norm = json_string(j, "normalize_activations"), *name = json_string(j, "model_name");
    const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(j, "metadata"), *apply;
    if (!hook && metadata) hook = json_string(metadata, "hook_name");
    if (!name && metadata) name = json_string(metadata, "model_name");
    apply = cJSON_GetObjectItemCaseSensitive(j, "apply_b_dec_to_input");
    int rc = 0;
    *c = (SaeConfig){0};
    if (!arch || (strcmp(arch, "topk") && strcmp(arch, "standard") && strcmp(arch, "jumprelu")))
        rc = FAIL(e, "storylm reads SAEs of architecture topk, standard or jumprelu",
                  "'%s': architecture '%s' is not one storylm reads", path, arch ? arch : "(none)");
    else if (json_int(j, "d_in", &c->d_in) || json_int(j, "d_sae", &c->d_sae) || c->d_in < 1 || c->d_sae < 1 ||
             (!strcmp(arch, "topk") && json_int(j, "k", &c->k)))
        rc = FAIL(e, "train it again with storylm sae train", "'%s': d_in, d_sae or k is missing or not a whole number",
                  path);
    else if (!hook || strlen(hook) >= sizeof c->hook_name)
        rc = FAIL(e, "train it again with storylm sae train", "'%s' names no hook_name", path);
    else if ((norm && strcmp(norm, "none")) || (apply && !cJSON_IsTrue(apply)))
        rc = FAIL(e, "fold the normalisation into the weights (SAELens: fold_activation_norm_scaling_factor)",
                  "'%s': storylm reads SAEs with normalize_activations none and apply_b_dec_to_input true", path);
    if (!rc) {
        c->kind = !strcmp(arch, "topk") ? SAE_TOPK : !strcmp(arch, "jumprelu") ? SAE_JUMPRELU : SAE_L1;
        c->k_aux = c->d_in / 2 > 0 ? c->d_in / 2 : 1;
        snprintf(c->hook_name, sizeof c->hook_name, "%s", hook);
        if (model && name && !(*model = strdup(name))) rc = FAIL(e, NULL, "out of memory");
    }
    cJSON_Delete(j);
    return rc;
}

/* Tensor name of st into dst, of shape (rows, cols) (cols 0: a vector of rows). */
static int read_tensor(SafeTensorsFile *st, const char *name, int rows, int cols, float *dst, Error *e) {
    const SafeTensorInfo *t = slm_safetensors_find(st, name);
    int ndim = cols ? 2 : 1;
    if (!t || t->ndim != ndim || t->shape[0] != (uint64_t)rows || (cols && t->shape[1] != (uint64_t)cols))
        return FAIL(e, "the weights do not match cfg.json: train the SAE again",
                    "'%s' has no tensor %s of shape [%d%s%.0d]", st->path, name, rows, cols ? ", " : "", cols);
    if (slm_safetensors_read_f32(st, t, dst, e)) return -1;
    for (uint64_t i = 0, n = slm_safetensors_count(t); i < n; i++)
        if (!isfinite(dst[i]))
            return FAIL(e, "train the SAE again", "'%s': %s holds a value that is not finite (NaN or infinite)",
                        st->path, name);
    return 0;
}

int slm_sae_load(Sae *s, const char *dir, char **model, Error *e) {
    char path[4096];
    struct stat st;
    SaeConfig c;
    *s = (Sae){0};
    if (model) *model = NULL;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return FAIL(e, "give the folder storylm sae train -o DIR made", "no SAE folder '%s'", dir);
    if (read_cfg(in_dir(path, sizeof path, dir, "cfg.json"), &c, model, e) || slm_sae_init(s, &c, e)) goto fail;
    SafeTensorsFile f;
    if (slm_safetensors_open(&f, in_dir(path, sizeof path, dir, "sae_weights.safetensors"), e)) goto fail;
    int D = c.d_in, L = c.d_sae;
    int rc = read_tensor(&f, "W_enc", D, L, s->W_enc, e) || read_tensor(&f, "b_enc", L, 0, s->b_enc, e) ||
             read_tensor(&f, "W_dec", L, D, s->W_dec, e) || read_tensor(&f, "b_dec", D, 0, s->b_dec, e) ||
             (s->threshold && read_tensor(&f, "threshold", L, 0, s->threshold, e));
    slm_safetensors_close(&f);
    if (!rc) return 0;
fail:
    slm_error_prefix(e, "reading the SAE in '%s': ", dir);
    slm_sae_free(s);
    if (model) free(*model), *model = NULL;
    return -1;
}
