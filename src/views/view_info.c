/* What a model file holds: the view info (registry.h), its entry at the end. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storylm/checkpoint.h"
#include "storylm/fileio.h" /* slm_hash64_more */
#include "storylm/loaded_model.h"
#include "storylm/probe_views.h"
#include "storylm/registry.h"

/* info: a model file, validated fully, with the optimizer state beside it
 * (MODEL.adam.safetensors, or the ".next" one that pairs). Its own JSON
 * (every tensor's sum and FNV-1a 64 checksum) and text, which a Report
 * would print otherwise. */
typedef struct OptimizerInfo {
    char *path;
    bool present, readable, pairs;
    uint64_t step;
    Error error;
} OptimizerInfo;
typedef struct ViewInfo {
    const char *path;
    long long file_bytes;
    Model model;
    Metadata meta;
    OptimizerInfo optimizer;
    int loaded;
} ViewInfo;

/* Per-tensor numbers for --json: a sum in index order, a byte checksum. */
typedef struct TensorStats {
    double sum;
    uint64_t fnv1a64;
    size_t nonfinite;
} TensorStats;

/* x (n) -> sum, FNV-1a 64 of the little-endian bytes, count of NaN/inf. */
static TensorStats tensor_stats(const float *x, size_t n) {
    TensorStats s = {0.0, SLM_HASH64_BASIS, 0};
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        unsigned char le[4] = {u & 0xff, u >> 8 & 0xff, u >> 16 & 0xff, u >> 24}; /* the same on any host */
        s.fnv1a64 = slm_hash64_more(s.fnv1a64, le, 4);
        s.sum += x[i];
        s.nonfinite += !isfinite(x[i]);
    }
    return s;
}

/* 352848 -> "352,848". */
static const char *with_commas(uint64_t n, char *buf, size_t size) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%" PRIu64, n), o = 0;
    for (int i = 0; i < len && o + 2 < (int)size; i++) {
        if (i && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

static void shape_text(const ParamTensor *t, char *buf, size_t size) {
    uint64_t shape[3] = {(uint64_t)t->shape[0], (uint64_t)t->shape[1], (uint64_t)t->shape[2]};
    slm_safetensors_format_shape(buf, size, shape, t->ndim);
}

/* What a model file's neighbours tell: the optimizer state, if any. */

/* The state at o->path: present, readable, from the model's save. */
static void read_state(OptimizerInfo *o, const Model *m, const Metadata *meta) {
    struct stat sb;
    o->present = o->path && stat(o->path, &sb) == 0;
    if (!o->present) return;
    TrainingState s;
    o->readable = slm_checkpoint_load_adam(o->path, m, &s, &o->error) == 0;
    if (!o->readable) return;
    char step[24], run_id[24];
    snprintf(step, sizeof step, "%" PRIu64, s.step);
    snprintf(run_id, sizeof run_id, "%016" PRIx64, s.run_id);
    const char *model_step = slm_metadata_get(meta, "step"), *model_run = slm_metadata_get(meta, "run_id");
    o->pairs = model_step && model_run && !strcmp(model_step, step) && !strcmp(model_run, run_id);
    o->step = s.step;
    slm_training_state_free(&s);
}

static void optimizer_info(OptimizerInfo *o, const char *model_path, const Model *m, const Metadata *meta) {
    *o = (OptimizerInfo){.path = slm_checkpoint_adam_path(model_path, NULL)};
    read_state(o, m, meta);
    if (o->pairs) return;
    /* A save stopped after its model leaves the state that pairs in ".next" (--resume takes it). */
    OptimizerInfo next = {.path = slm_checkpoint_adam_next_path(model_path, NULL)};
    read_state(&next, m, meta);
    if (next.pairs) {
        free(o->path);
        *o = next;
    } else {
        free(next.path);
    }
}

/* A metadata value on one line: control characters shown as escapes. */
static void print_value(FILE *out, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    fputc('\n', out);
}

static void print_sizes(FILE *out, const ModelConfig *c) {
    char lines[1024];
    c->arch->describe(c, lines, sizeof lines);
    fputs(lines, out);
}

static void slm_view_info_print(const ViewInfo *vi, FILE *out) {
    const char *path = vi->path;
    long long file_bytes = vi->file_bytes;
    const Model *m = &vi->model;
    const Metadata *meta = &vi->meta;
    const OptimizerInfo *o = &vi->optimizer;
    char a[32], b[32];
    fprintf(out, "model         %s (%s bytes)\n", path, with_commas((uint64_t)file_bytes, a, sizeof a));
    fprintf(out, "format        %s, version %s\n", CHECKPOINT_FORMAT, CHECKPOINT_FORMAT_VERSION);
    print_sizes(out, &m->cfg);
    fprintf(out, "vocabulary    %s tokens, rows of %d\n", with_commas((uint64_t)m->cfg.vocab_size, a, sizeof a),
            m->cfg.row_dim);
    fprintf(out, "tensors\n");
    int name_width = 15; /* the names in one column: the widest sets it (a transformer's are long) */
    for (int i = 0; i < m->n_tensors; i++)
        if ((int)strlen(m->tensors[i].name) > name_width) name_width = (int)strlen(m->tensors[i].name);
    for (int i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        TensorStats s = tensor_stats(m->params + t->offset, t->size);
        shape_text(t, b, sizeof b);
        fprintf(out, "  %-*s %-14s %9s", name_width, t->name, b, with_commas(t->size, a, sizeof a));
        if (s.nonfinite) fprintf(out, "   (%zu NaN or infinite!)", s.nonfinite);
        fprintf(out, "\n");
    }
    fprintf(out, "  %-*s %9s parameters\n", name_width + 15, "total", with_commas(m->n_params, a, sizeof a));
    fprintf(out, "training%s\n", meta->count ? "" : "      (no metadata)");
    int width = 12; /* the keys in one column: the widest sets it */
    for (int i = 0; i < meta->count; i++)
        if ((int)strlen(meta->items[i].key) > width) width = (int)strlen(meta->items[i].key);
    for (int i = 0; i < meta->count; i++) {
        fprintf(out, "  %-*s ", width, meta->items[i].key);
        print_value(out, meta->items[i].value);
    }
    if (!o->present)
        fprintf(out, "optimizer     none beside the model\n");
    else if (!o->readable)
        fprintf(out, "optimizer     %s cannot be read: %s\n", o->path, o->error.message);
    else
        fprintf(out, "optimizer     %s: step %" PRIu64 ", %s\n", o->path, o->step,
                o->pairs ? "pairs with this model" : "NOT from the same save as this model");
}

static cJSON *json_tensor(const Model *m, const ParamTensor *t) {
    cJSON *j = cJSON_CreateObject();
    TensorStats s = tensor_stats(m->params + t->offset, t->size);
    char hash[24];
    snprintf(hash, sizeof hash, "%016" PRIx64, s.fnv1a64);
    cJSON_AddStringToObject(j, "name", t->name);
    cJSON *shape = cJSON_AddArrayToObject(j, "shape");
    for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber(t->shape[d]));
    cJSON_AddNumberToObject(j, "count", (double)t->size);
    cJSON_AddNumberToObject(j, "sum", s.sum);
    cJSON_AddStringToObject(j, "fnv1a64", hash);
    cJSON_AddNumberToObject(j, "nonfinite", (double)s.nonfinite);
    return j;
}

static cJSON *json_optimizer(const OptimizerInfo *o) {
    if (!o->present) return cJSON_CreateNull();
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "path", o->path);
    if (!o->readable) {
        cJSON_AddStringToObject(j, "error", o->error.message);
        return j;
    }
    cJSON_AddNumberToObject(j, "step", (double)o->step);
    cJSON_AddBoolToObject(j, "pairs", o->pairs);
    return j;
}

static cJSON *slm_view_info_json(const ViewInfo *vi) {
    const char *path = vi->path;
    const Model *m = &vi->model;
    const Metadata *meta = &vi->meta;
    const OptimizerInfo *o = &vi->optimizer;
    const ModelConfig *c = &m->cfg;
    cJSON *root = slm_view_json_begin("info");
    slm_view_json_model(root, m, path);
    cJSON_AddNumberToObject(cJSON_GetObjectItem(root, "model"), "file_bytes", (double)vi->file_bytes);
    cJSON_AddStringToObject(root, "format", CHECKPOINT_FORMAT);
    cJSON_AddStringToObject(root, "format_version", CHECKPOINT_FORMAT_VERSION);
    cJSON *cfg = cJSON_AddObjectToObject(root, "config");
    const int sizes[] = {c->vocab_size, c->row_dim, c->n_heads,    c->key_dim,
                         c->value_dim,  c->window,  c->hidden_dim, c->context};
    const char *names[] = {"vocab_size", "row_dim", "n_heads",    "key_dim",
                           "value_dim",  "window",  "hidden_dim", "context"};
    for (int i = 0; i < 8; i++) cJSON_AddNumberToObject(cfg, names[i], sizes[i]);
    if (slm_model_heads(c) > 0) cJSON_AddNumberToObject(cfg, "layers", slm_model_layers(c));
    if (c->arch->takes & TAKES_MLP) cJSON_AddStringToObject(cfg, "act_fn", slm_act_name((ActFn)c->act));
    if (c->tie_embeddings) cJSON_AddTrueToObject(cfg, "tie_embeddings"); /* only then: untied answers unchanged */
    cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);
    cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
    for (int i = 0; i < m->n_tensors; i++) cJSON_AddItemToArray(tensors, json_tensor(m, &m->tensors[i]));
    cJSON *md = cJSON_AddObjectToObject(root, "metadata");
    for (int i = 0; i < meta->count; i++) cJSON_AddStringToObject(md, meta->items[i].key, meta->items[i].value);
    cJSON_AddItemToObject(root, "optimizer", json_optimizer(o));
    return root;
}

static int slm_view_info_open(ViewInfo *vi, const char *path, Error *e) {
    *vi = (ViewInfo){.path = path};
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT) return slm_loaded_model_missing(path, e);
    char *vocab;
    if (slm_checkpoint_load_model(path, &vi->model, &vocab, &vi->meta, e)) return -1;
    free(vocab);
    vi->loaded = 1;
    stat(path, &sb); /* again: the first may have failed for a reason the loader has reported */
    vi->file_bytes = (long long)sb.st_size;
    optimizer_info(&vi->optimizer, path, &vi->model, &vi->meta);
    return 0;
}

static void slm_view_info_close(ViewInfo *vi) {
    if (!vi->loaded) return;
    free(vi->optimizer.path);
    slm_metadata_free(&vi->meta);
    slm_model_free(&vi->model);
    vi->loaded = 0;
}

/* The text as info has always printed it, and the JSON as it has always
 * written it (the sums as cJSON prints doubles), both kept in the report. */
static int info(Report *r, const char *path, Error *e) {
    ViewInfo vi;
    if (slm_view_info_open(&vi, path, e)) return -1;
    cJSON *j = slm_view_info_json(&vi);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (f) {
        slm_view_info_print(&vi, f);
        fclose(f);
    }
    slm_view_info_close(&vi);
    int rc = 0;
    if (!j || !f || !text) rc = FAIL(e, "free some memory and try again", "out of memory describing '%s'", path);
    for (cJSON *item = j ? j->child : NULL; !rc && item;) { /* every key after "command", in order */
        cJSON *next = item->next;
        if (strcmp(item->string, "command") != 0)
            slm_report_json_value(r, item->string, cJSON_DetachItemViaPointer(j, item));
        item = next;
    }
    if (!rc) slm_report_raw_text(r, text);
    cJSON_Delete(j);
    free(text);
    return rc;
}

typedef struct InfoParams {
    ProbeOptions po;
} InfoParams;

/* The server's session's model (one of its own), else --model. */
static int build(ViewCall *c, Error *e) {
    return info(c->report, c->ps ? c->ps->model_path : slm_view_probe_options(c->params)->model, e);
}

static const Param params[] = {
    VIEW_PARAM_MODEL(InfoParams),
    VIEW_PARAMS_OUTPUT(InfoParams),
};
const View view_info = {
    .name = "info",
    .summary = "show what a model file holds",
    .usage = "storylm info [options]",
    .description =
        "Loads a model file, validating it fully, and prints its architecture and sizes, every tensor's name,\n"
        "shape and number count, the total parameter count, the vocabulary size, the file size and the\n"
        "training metadata. If the optimizer state MODEL.adam.safetensors lies beside the model, its step and\n"
        "whether it pairs with the model are shown too. With --json, one JSON object, where each tensor also\n"
        "has the sum of its numbers and the FNV-1a 64 checksum of its little-endian bytes, for scripts.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(InfoParams),
    .session = VIEW_SESSION_NONE,
    .no_ablation = "what the file holds, before any forward pass",
    .build = build,
};
