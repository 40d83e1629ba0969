/* Model files and optimizer state in safetensors: see include/storylm/checkpoint.h.
 * The tensors written and expected are the model's parameter table, walked,
 * never listed here. */
#include "storylm/checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storylm/tokenizer.h"

#define BAD_MODEL_HINT "the file is damaged or was not written by storylm; train or save the model again"
#define PAIR_HINT "a model and its optimizer state must come from one save: restore both, or train afresh"

/* The ModelConfig sizes as metadata keys, with the values a file may hold:
 * heads only as many as an Ablation's 32-bit mask names, and of no more
 * numbers than the passes take. */
static const struct {
    const char *key;
    size_t offset;
    int min, max;
} config_sizes[] = {
    {"vocab_size", offsetof(ModelConfig, vocab_size), 2, CHECKPOINT_MAX_VOCAB},
    {"row_dim", offsetof(ModelConfig, row_dim), 1, CHECKPOINT_MAX_DIM},
    {"n_heads", offsetof(ModelConfig, n_heads), 1, STORYLM_MAX_HEADS},
    {"key_dim", offsetof(ModelConfig, key_dim), 1, STORYLM_MAX_HEAD_DIM},
    {"value_dim", offsetof(ModelConfig, value_dim), 1, STORYLM_MAX_HEAD_DIM},
    {"window", offsetof(ModelConfig, window), 1, CHECKPOINT_MAX_DIM},
    {"hidden_dim", offsetof(ModelConfig, hidden_dim), 0, CHECKPOINT_MAX_DIM}, /* 0: no MLP (attn-only); config_check
                                                                                 holds each architecture's least */
    {"context", offsetof(ModelConfig, context), 1, CHECKPOINT_MAX_DIM},
};
#define N_SIZES ((int)(sizeof config_sizes / sizeof config_sizes[0]))

static int *size_field(ModelConfig *c, int i) { return (int *)((char *)c + config_sizes[i].offset); }
static int size_value(const ModelConfig *c, int i) { return *(const int *)((const char *)c + config_sizes[i].offset); }

/* A key some architecture writes of its own (arch.h's config_keys). */
static int is_arch_key(const char *key) {
    for (int i = 0; i < slm_arch_count(); i++)
        for (const char *const *k = slm_arch_at(i)->config_keys; k && *k; k++)
            if (strcmp(key, *k) == 0) return 1;
    return 0;
}

/* ---- which metadata keys the format writes itself ---------------------- */

static int is_config_key(const char *key) {
    if (!strcmp(key, "format") || !strcmp(key, "format_version") || !strcmp(key, "arch")) return 1;
    if (is_arch_key(key)) return 1;
    for (int i = 0; i < N_SIZES; i++)
        if (strcmp(key, config_sizes[i].key) == 0) return 1;
    return 0;
}

static int is_model_key(const char *key) { return is_config_key(key) || !strcmp(key, "vocab"); }

static int reserves_nothing(const char *key) { return key == NULL; }

static int is_adam_key(const char *key) {
    return is_config_key(key) || !strcmp(key, "step") || !strcmp(key, "rng_state") || !strcmp(key, "data_hash") ||
           !strcmp(key, "run_id");
}

/* ---- small helpers ----------------------------------------------------- */

static char *copy_string(const char *s, Error *e) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n, e);
    if (p) memcpy(p, s, n);
    return p;
}

/* See checkpoint.h. */
int slm_checkpoint_parse_u64(const char *s, int base, uint64_t *out) {
    if (!s || !*s) return 0;
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : base == 16 && *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0 || x > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return 0;
        x = x * (uint64_t)base + (uint64_t)d;
    }
    *out = x;
    return 1;
}

/* Lines of vocab.txt text; a last line may lack its newline. */
static size_t count_lines(const char *text) {
    size_t n = 0, len = strlen(text);
    for (size_t i = 0; i < len; i++) n += text[i] == '\n';
    return n + (len && text[len - 1] != '\n');
}

/* Copies the keys of from that reserved() does not claim. Into an empty list
 * appended (from has no duplicates): slm_metadata_set's search for an earlier
 * key made loading quadratic in the number of keys. */
static int copy_free_keys(Metadata *to, const Metadata *from, int (*reserved)(const char *), Error *e) {
    int (*add)(Metadata *, const char *, const char *, Error *) = to->count ? slm_metadata_set : slm_metadata_append;
    for (int i = 0; i < from->count; i++)
        if (!reserved(from->items[i].key) && add(to, from->items[i].key, from->items[i].value, e)) return -1;
    return 0;
}

/* ---- writing ----------------------------------------------------------- */

/* ConfigPut and ConfigGet (arch.h) on a file's metadata. */
static int put_key(void *md, const char *key, const char *value, Error *e) {
    return slm_metadata_set(md, key, value, e);
}
static const char *get_key(void *md, const char *key) { return slm_metadata_get(md, key); }

/* format, version, arch, the architecture's own keys and the sizes: what both files begin with. */
static int put_config_keys(Metadata *md, const char *format, const ModelConfig *c, Error *e) {
    if (slm_metadata_set(md, "format", format, e) ||
        slm_metadata_set(md, "format_version", CHECKPOINT_FORMAT_VERSION, e) ||
        slm_metadata_set(md, "arch", c->arch->name, e) || c->arch->config_write(c, put_key, md, e))
        return -1;
    for (int i = 0; i < N_SIZES; i++) {
        char num[16];
        snprintf(num, sizeof num, "%d", size_value(c, i));
        if (slm_metadata_set(md, config_sizes[i].key, num, e)) return -1;
    }
    return 0;
}

/* The caller's keys after ours; a key the format writes itself is refused.
 * Appended: meta has no duplicates (slm_metadata_set made it), ours are refused. */
static int put_caller_keys(Metadata *md, const Metadata *meta, int (*reserved)(const char *), Error *e) {
    for (int i = 0; meta && i < meta->count; i++) {
        if (reserved(meta->items[i].key))
            return FAIL(e, "give training metadata under another name",
                        "metadata key '%s' is written by storylm itself", meta->items[i].key);
        if (slm_metadata_append(md, meta->items[i].key, meta->items[i].value, e)) return -1;
    }
    return 0;
}

/* The model's tensors, named "prefix" + table name, data from base. */
typedef struct TensorList {
    SafeTensorOut items[2 * MODEL_MAX_TENSORS];
    char names[2 * MODEL_MAX_TENSORS][64];
    int n;
} TensorList;

/* base (n_params) laid out like m->params. */
static void list_add_table(TensorList *l, const Model *m, const char *prefix, const float *base) {
    for (int i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        SafeTensorOut *o = &l->items[l->n];
        snprintf(l->names[l->n], sizeof l->names[0], "%s%s", prefix, t->name);
        *o = (SafeTensorOut){.name = l->names[l->n], .ndim = t->ndim, .data = base + t->offset};
        for (int d = 0; d < t->ndim; d++) o->shape[d] = t->shape[d];
        l->n++;
    }
}

int slm_checkpoint_save_model(const char *path, const Model *m, const char *vocab, const Metadata *meta, Error *e) {
    size_t lines = vocab ? count_lines(vocab) : 0;
    if (lines != (size_t)m->cfg.vocab_size)
        return FAIL(e, "save the vocabulary the model was trained with",
                    "cannot save '%s': the vocabulary has %zu lines, the model %d tokens", path, lines,
                    m->cfg.vocab_size);
    Metadata md = {0};
    int rc = put_config_keys(&md, CHECKPOINT_FORMAT, &m->cfg, e) || put_caller_keys(&md, meta, is_model_key, e) ||
             slm_metadata_set(&md, "vocab", vocab, e);
    if (!rc) {
        TensorList l = {0};
        list_add_table(&l, m, "", m->params);
        rc = slm_safetensors_write_f32(path, l.items, l.n, &md, e);
    }
    slm_metadata_free(&md);
    return rc ? -1 : 0;
}

static int put_resume_keys(Metadata *md, const TrainingState *s, Error *e) {
    char step[24], rng[24], data[24], run[24];
    snprintf(step, sizeof step, "%" PRIu64, s->step);
    snprintf(rng, sizeof rng, "%" PRIu64, s->rng_state);
    snprintf(data, sizeof data, "%016" PRIx64, s->data_hash);
    snprintf(run, sizeof run, "%016" PRIx64, s->run_id);
    if (slm_metadata_set(md, "step", step, e) || slm_metadata_set(md, "rng_state", rng, e) ||
        slm_metadata_set(md, "data_hash", data, e) || slm_metadata_set(md, "run_id", run, e))
        return -1;
    return 0;
}

int slm_checkpoint_save_adam(const char *path, const Model *m, const TrainingState *s, Error *e) {
    if (!s->adam_m || !s->adam_v || s->n_params != m->n_params)
        return FAIL(e, "initialise it with training_state_init",
                    "cannot save '%s': the optimizer state holds %zu numbers, the model %zu", path, s->n_params,
                    m->n_params);
    Metadata md = {0};
    int rc = put_config_keys(&md, CHECKPOINT_ADAM_FORMAT, &m->cfg, e) || put_resume_keys(&md, s, e) ||
             put_caller_keys(&md, &s->extra, is_adam_key, e);
    if (!rc) {
        TensorList l = {0};
        list_add_table(&l, m, "m.", s->adam_m);
        list_add_table(&l, m, "v.", s->adam_v);
        rc = slm_safetensors_write_f32(path, l.items, l.n, &md, e);
    }
    slm_metadata_free(&md);
    return rc ? -1 : 0;
}

/* ---- reading: checks on the header ------------------------------------- */

static int check_format(const SafeTensorsFile *st, const char *format, Error *e) {
    if (!st->has_metadata)
        return FAIL(e, BAD_MODEL_HINT, "'%s' has no \"__metadata__\": it is not a storylm file", st->path);
    const char *f = slm_metadata_get(&st->metadata, "format"), *v = slm_metadata_get(&st->metadata, "format_version");
    if (!f) return FAIL(e, BAD_MODEL_HINT, "'%s': the metadata has no \"format\": it is not a storylm file", st->path);
    if (strcmp(f, format) != 0) {
        const char *hint =
            !strcmp(f, CHECKPOINT_ADAM_FORMAT) ? "give the model file, not its optimizer state" : BAD_MODEL_HINT;
        return FAIL(e, hint, "'%s' holds format '%.40s', not '%s'", st->path, f, format);
    }
    if (!v) return FAIL(e, BAD_MODEL_HINT, "'%s': the metadata has no \"format_version\"", st->path);
    if (strcmp(v, CHECKPOINT_FORMAT_VERSION) != 0)
        return FAIL(e, "a newer storylm may read it", "'%s' has format_version '%.20s'; this storylm reads version %s",
                    st->path, v, CHECKPOINT_FORMAT_VERSION);
    return 0;
}

/* The architecture and sizes, each present and in range. */
int slm_checkpoint_read_config(const SafeTensorsFile *st, ModelConfig *c, Error *e) {
    const char *arch = slm_metadata_get(&st->metadata, "arch");
    if (!arch) return FAIL(e, BAD_MODEL_HINT, "'%s': the metadata has no \"arch\"", st->path);
    const Architecture *a = slm_arch_find(arch, NULL);
    char names[256];
    slm_arch_names(names, sizeof names);
    if (!a)
        return FAIL(e, BAD_MODEL_HINT, "'%s': unknown architecture '%.40s' (storylm knows %s)", st->path, arch, names);
    *c = slm_model_config_default(a, 2);
    for (int i = 0; i < N_SIZES; i++) {
        const char *s = slm_metadata_get(&st->metadata, config_sizes[i].key);
        uint64_t x;
        if (!s) return FAIL(e, BAD_MODEL_HINT, "'%s': the metadata has no \"%s\"", st->path, config_sizes[i].key);
        if (!slm_checkpoint_parse_u64(s, 10, &x) || x < (uint64_t)config_sizes[i].min ||
            x > (uint64_t)config_sizes[i].max)
            return FAIL(e, BAD_MODEL_HINT, "'%s': metadata %s '%.40s' is not a whole number from %d to %d", st->path,
                        config_sizes[i].key, s, config_sizes[i].min, config_sizes[i].max);
        *size_field(c, i) = (int)x;
    }
    /* the architecture's own keys, read from the metadata by the architecture itself, then
     * its check of every size (the least it takes: hidden_dim 0 is only attn-only's) */
    if (c->arch->config_read(c, get_key, (void *)&st->metadata, e) || c->arch->config_check(c, e))
        return slm_error_prefix(e, "'%s': ", st->path), -1;
    return 0;
}

static int check_vocab(const SafeTensorsFile *st, int vocab_size, Error *e) {
    const char *vocab = slm_metadata_get(&st->metadata, "vocab");
    if (!vocab) return FAIL(e, BAD_MODEL_HINT, "'%s': the metadata has no \"vocab\"", st->path);
    size_t lines = count_lines(vocab);
    if (lines != (size_t)vocab_size)
        return FAIL(e, BAD_MODEL_HINT, "'%s': the vocabulary has %zu lines, but vocab_size is %d", st->path, lines,
                    vocab_size);
    return 0;
}

/* Is name one of prefix + a tensor of m's table? */
static const ParamTensor *expected_tensor(const Model *m, const char *const *prefixes, int n_prefixes,
                                          const char *name) {
    for (int p = 0; p < n_prefixes; p++) {
        size_t len = strlen(prefixes[p]);
        const ParamTensor *t = strncmp(name, prefixes[p], len) == 0 ? slm_model_tensor(m, name + len) : NULL;
        if (t) return t;
    }
    return NULL;
}

/* Names and dtypes, which depend on the architecture alone: checked on a
 * small table before anything as large as the header claims is allocated. */
static int check_names(const SafeTensorsFile *st, const ModelConfig *have, const char *const *prefixes, int n_prefixes,
                       Error *e) {
    Model table;
    const Architecture *arch = have->arch;
    ModelConfig c = slm_model_config_default(arch, 2);
    c.pos = have->pos;
    c.score = have->score;
    c.n_layers = have->n_layers;
    c.tie_embeddings = have->tie_embeddings; /* the tensors it has: no unembed.W_U when tied */
    if (slm_model_init(&table, &c, e)) return -1;
    int rc = 0;
    for (int p = 0; p < n_prefixes && !rc; p++)
        for (int i = 0; i < table.n_tensors && !rc; i++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", prefixes[p], table.tensors[i].name);
            const SafeTensorInfo *t = slm_safetensors_find(st, name);
            if (!t)
                rc = FAIL(e, BAD_MODEL_HINT, "'%s': tensor '%s' is missing (the %s model has it)", st->path, name,
                          arch->name);
            else if (strcmp(t->dtype, "F32") != 0)
                rc = FAIL(e, BAD_MODEL_HINT, "'%s': tensor '%s' has dtype %s; storylm stores F32", st->path, name,
                          t->dtype);
        }
    for (int i = 0; i < st->n_tensors && !rc; i++)
        if (!expected_tensor(&table, prefixes, n_prefixes, st->tensors[i].name))
            rc = FAIL(e, BAD_MODEL_HINT, "'%s': unexpected tensor '%.60s' (the %s model has no such tensor)", st->path,
                      st->tensors[i].name, arch->name);
    slm_model_free(&table);
    return rc;
}

/* The sizes in the metadata must not claim more than the file holds, so what
 * slm_model_init allocates is bounded by the file's own size. */
static int check_fits(const SafeTensorsFile *st, const ModelConfig *c, int copies, Error *e) {
    uint64_t need = (uint64_t)slm_model_param_count(c) * 4 * (uint64_t)copies;
    if (need > st->data_size)
        return FAIL(e, BAD_MODEL_HINT,
                    "'%s': its sizes need %" PRIu64 " bytes of tensors but its tensors hold %" PRIu64
                    ": a tensor's shape does not match the sizes",
                    st->path, need, st->data_size);
    return 0;
}

static int check_shapes(const SafeTensorsFile *st, const Model *m, const char *const *prefixes, int n_prefixes,
                        Error *e) {
    for (int p = 0; p < n_prefixes; p++)
        for (int i = 0; i < m->n_tensors; i++) {
            const ParamTensor *want = &m->tensors[i];
            char name[64];
            snprintf(name, sizeof name, "%s%s", prefixes[p], want->name);
            const SafeTensorInfo *t = slm_safetensors_find(st, name);
            int same = t && t->ndim == want->ndim;
            for (int d = 0; same && d < want->ndim; d++) same = t->shape[d] == (uint64_t)want->shape[d];
            if (same) continue;
            uint64_t want_shape[3] = {(uint64_t)want->shape[0], (uint64_t)want->shape[1], (uint64_t)want->shape[2]};
            char got[256], need[64];
            slm_safetensors_format_shape(got, sizeof got, t ? t->shape : want_shape, t ? t->ndim : 0);
            slm_safetensors_format_shape(need, sizeof need, want_shape, want->ndim);
            return FAIL(e, BAD_MODEL_HINT, "'%s': tensor '%s' has shape %s; the %s model with these sizes needs %s",
                        st->path, name, got, m->cfg.arch->name, need);
        }
    return 0;
}

/* Reads prefix + every table tensor into base (n_params, laid out like params). */
static int read_tensors(SafeTensorsFile *st, const Model *m, const char *prefix, float *base, Error *e) {
    for (int i = 0; i < m->n_tensors; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s", prefix, m->tensors[i].name);
        if (slm_safetensors_read_f32(st, slm_safetensors_find(st, name), base + m->tensors[i].offset, e)) return -1;
    }
    return 0;
}

/* Every number read must be finite: a model with a NaN or an infinity in it
 * computes NaN losses that look like results (eval printed "loss -nan"), so
 * it is refused here, where every verb loads it, naming the tensor. */
static int check_finite(const SafeTensorsFile *st, const Model *m, const char *prefix, const float *base, Error *e) {
    for (int i = 0; i < m->n_tensors; i++) {
        const ParamTensor *t = &m->tensors[i];
        for (size_t j = 0; j < t->size; j++)
            if (!isfinite(base[t->offset + j]))
                return FAIL(e, BAD_MODEL_HINT, "'%s': tensor '%s%s' holds %s at element %zu: the model is unusable",
                            st->path, prefix, t->name, isnan(base[t->offset + j]) ? "NaN" : "an infinity", j);
    }
    return 0;
}

/* The vocabulary must be one a tokenizer accepts (no empty or duplicate
 * piece, [UNK] and [EOS] present): checked here, once, so that info refuses
 * what generate would refuse. */
static int check_vocab_pieces(const SafeTensorsFile *st, const char *vocab, int vocab_size, Error *e) {
    Tokenizer t;
    if (slm_tokenizer_from_text(&t, vocab, strlen(vocab), vocab_size, e)) {
        slm_error_prefix(e, "'%s': ", st->path);
        return -1;
    }
    slm_tokenizer_free(&t);
    return 0;
}

/* ---- reading: the model ------------------------------------------------ */

static int load_model_from(SafeTensorsFile *st, Model *m, char **vocab, Metadata *meta, Error *e) {
    static const char *const prefixes[] = {""};
    ModelConfig cfg;
    if (check_format(st, CHECKPOINT_FORMAT, e) || slm_checkpoint_read_config(st, &cfg, e) ||
        check_vocab(st, cfg.vocab_size, e) || check_names(st, &cfg, prefixes, 1, e) || check_fits(st, &cfg, 1, e) ||
        slm_model_init(m, &cfg, e) || check_shapes(st, m, prefixes, 1, e) || read_tensors(st, m, "", m->params, e) ||
        check_finite(st, m, "", m->params, e) ||
        check_vocab_pieces(st, slm_metadata_get(&st->metadata, "vocab"), cfg.vocab_size, e))
        return -1;
    *vocab = copy_string(slm_metadata_get(&st->metadata, "vocab"), e);
    if (!*vocab) return -1;
    return meta ? copy_free_keys(meta, &st->metadata, is_model_key, e) : 0;
}

int slm_checkpoint_load_model(const char *path, Model *m, char **vocab, Metadata *meta, Error *e) {
    *m = (Model){0};
    *vocab = NULL;
    if (meta) *meta = (Metadata){0};
    SafeTensorsFile st;
    if (slm_safetensors_open(&st, path, e)) return -1;
    int rc = load_model_from(&st, m, vocab, meta, e);
    slm_safetensors_close(&st);
    if (rc) {
        slm_model_free(m);
        free(*vocab);
        *vocab = NULL;
        if (meta) slm_metadata_free(meta);
    }
    return rc;
}

/* ---- reading: the optimizer state -------------------------------------- */

static int check_same_config(const SafeTensorsFile *st, const ModelConfig *have, const ModelConfig *model, Error *e) {
    const char *hint = "give the optimizer state saved with this model, or train afresh";
    if (have->arch != model->arch)
        return FAIL(e, hint, "'%s' is the optimizer state of a model of architecture %s, not %s", st->path,
                    have->arch->name, model->arch->name);
    if (have->pos != model->pos || have->score != model->score)
        return FAIL(e, hint,
                    "'%s' is the optimizer state of a model with --position-scheme %s --score %s, not "
                    "--position-scheme %s --score %s",
                    st->path, slm_pos_name(have->pos), slm_score_name(have->score), slm_pos_name(model->pos),
                    slm_score_name(model->score));
    if (have->act != model->act)
        return FAIL(e, hint, "'%s' is the optimizer state of a transformer with act_fn %s, not %s", st->path,
                    slm_act_name((ActFn)have->act), slm_act_name((ActFn)model->act));
    if (slm_model_layers(have) != slm_model_layers(model))
        return FAIL(e, hint, "'%s' is the optimizer state of a model of %d layers, not %d", st->path,
                    slm_model_layers(have), slm_model_layers(model));
    for (int i = 0; i < N_SIZES; i++)
        if (size_value(have, i) != size_value(model, i))
            return FAIL(e, hint, "'%s' is the optimizer state of a model with %s %d, not %d", st->path,
                        config_sizes[i].key, size_value(have, i), size_value(model, i));
    return 0;
}

static int read_resume_keys(const SafeTensorsFile *st, TrainingState *s, Error *e) {
    static const struct {
        const char *key;
        int base;
        size_t offset;
    } keys[] = {{"step", 10, offsetof(TrainingState, step)},
                {"rng_state", 10, offsetof(TrainingState, rng_state)},
                {"data_hash", 16, offsetof(TrainingState, data_hash)},
                {"run_id", 16, offsetof(TrainingState, run_id)}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = slm_metadata_get(&st->metadata, keys[i].key);
        if (!v) return FAIL(e, BAD_MODEL_HINT, "'%s': the metadata has no \"%s\"", st->path, keys[i].key);
        if (!slm_checkpoint_parse_u64(v, keys[i].base, (uint64_t *)((char *)s + keys[i].offset)))
            return FAIL(e, BAD_MODEL_HINT, "'%s': metadata %s '%.40s' is not a %s number", st->path, keys[i].key, v,
                        keys[i].base == 10 ? "decimal" : "hexadecimal");
    }
    return 0;
}

static int load_adam_from(SafeTensorsFile *st, const Model *m, TrainingState *s, Error *e) {
    static const char *const prefixes[] = {"m.", "v."};
    ModelConfig cfg;
    if (check_format(st, CHECKPOINT_ADAM_FORMAT, e) || slm_checkpoint_read_config(st, &cfg, e) ||
        check_same_config(st, &cfg, &m->cfg, e) || read_resume_keys(st, s, e) ||
        check_names(st, &cfg, prefixes, 2, e) || check_shapes(st, m, prefixes, 2, e))
        return -1;
    s->n_params = m->n_params;
    s->adam_m = xcalloc(m->n_params, sizeof(float), e);
    s->adam_v = s->adam_m ? xcalloc(m->n_params, sizeof(float), e) : NULL;
    if (!s->adam_v || read_tensors(st, m, "m.", s->adam_m, e) || read_tensors(st, m, "v.", s->adam_v, e) ||
        check_finite(st, m, "m.", s->adam_m, e) || check_finite(st, m, "v.", s->adam_v, e))
        return -1;
    return copy_free_keys(&s->extra, &st->metadata, is_adam_key, e);
}

int slm_checkpoint_load_adam(const char *path, const Model *m, TrainingState *s, Error *e) {
    *s = (TrainingState){0};
    SafeTensorsFile st;
    if (slm_safetensors_open(&st, path, e)) return -1;
    int rc = load_adam_from(&st, m, s, e);
    slm_safetensors_close(&st);
    if (rc) slm_training_state_free(s);
    return rc;
}

/* ---- the state's life and the pair ------------------------------------- */

int slm_training_state_init(TrainingState *s, const Model *m, Error *e) {
    *s = (TrainingState){0};
    s->adam_m = xcalloc(m->n_params, sizeof(float), e);
    s->adam_v = s->adam_m ? xcalloc(m->n_params, sizeof(float), e) : NULL;
    if (!s->adam_v) {
        free(s->adam_m);
        *s = (TrainingState){0};
        return -1;
    }
    s->n_params = m->n_params;
    s->run_id = slm_checkpoint_new_run_id();
    return 0;
}

void slm_training_state_free(TrainingState *s) {
    free(s->adam_m);
    free(s->adam_v);
    slm_metadata_free(&s->extra);
    *s = (TrainingState){0};
}

uint64_t slm_checkpoint_new_run_id(void) {
    uint64_t x = 0;
#ifdef __linux__
    int got = getrandom(&x, sizeof x, 0) == (ssize_t)sizeof x;
#else /* WebAssembly's C library has getentropy (the host's random source), not getrandom */
    int got = getentropy(&x, sizeof x) == 0;
#endif
    if (!got) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        x ^= (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)&ts;
        x += 0x9E3779B97F4A7C15ULL; /* slm_splitmix64's finish spreads the bits */
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
        x ^= x >> 31;
    }
    return x ? x : 1;
}

/* "x.adam.safetensors" -> "x.adam.safetensors.next": where a save puts the
 * optimizer state until its model is in place (caller frees). */
static char *next_path(const char *adam_path, Error *e) {
    size_t n = strlen(adam_path) + sizeof ".next";
    char *p = xmalloc(n, e);
    if (p) snprintf(p, n, "%s.next", adam_path);
    return p;
}

char *slm_checkpoint_adam_path(const char *model_path, Error *e) {
    static const char ext[] = ".safetensors";
    size_t len = strlen(model_path), ext_len = sizeof ext - 1;
    size_t stem = len >= ext_len && strcmp(model_path + len - ext_len, ext) == 0 ? len - ext_len : len;
    char *p = xmalloc(stem + sizeof ".adam.safetensors", e);
    if (p) snprintf(p, stem + sizeof ".adam.safetensors", "%.*s.adam.safetensors", (int)stem, model_path);
    return p;
}

char *slm_checkpoint_adam_next_path(const char *model_path, Error *e) {
    char *adam_path = slm_checkpoint_adam_path(model_path, e);
    char *next = adam_path ? next_path(adam_path, e) : NULL;
    free(adam_path);
    return next;
}

int slm_checkpoint_save_all(const char *model_path, const Model *m, const char *vocab, const Metadata *meta,
                            const TrainingState *s, Error *e) {
    char *adam_path = slm_checkpoint_adam_path(model_path, e);
    char *next = adam_path ? next_path(adam_path, e) : NULL;
    if (!next) {
        free(adam_path);
        return -1;
    }
    char step[24], run[24];
    snprintf(step, sizeof step, "%" PRIu64, s->step);
    snprintf(run, sizeof run, "%016" PRIx64, s->run_id);
    Metadata md = {0};
    int rc = (meta && copy_free_keys(&md, meta, reserves_nothing, e)) || slm_metadata_set(&md, "step", step, e) ||
             slm_metadata_set(&md, "run_id", run, e);
    /* The state beside, the model, the state into place: whenever a kill comes,
     * the model pairs with the state in adam_path or in next. */
    if (!rc) rc = slm_checkpoint_save_adam(next, m, s, e);
    if (!rc) rc = slm_checkpoint_save_model(model_path, m, vocab, &md, e);
    if (!rc && rename(next, adam_path) != 0)
        rc = FAIL(e, "check the folder's permissions", "cannot rename '%s' to '%s': %s", next, adam_path,
                  strerror(errno));
    if (rc) unlink(next);
    slm_metadata_free(&md);
    free(next);
    free(adam_path);
    return rc ? -1 : 0;
}

/* The model's "step" and "run_id" must be the state's. */
static int check_pair(const char *model_path, const Metadata *meta, const char *adam_path, const TrainingState *s,
                      Error *e) {
    uint64_t step, run;
    if (!slm_checkpoint_parse_u64(slm_metadata_get(meta, "step"), 10, &step) ||
        !slm_checkpoint_parse_u64(slm_metadata_get(meta, "run_id"), 16, &run))
        return FAIL(e, PAIR_HINT, "'%s' has no step and run_id: it was not saved together with an optimizer state",
                    model_path);
    if (run != s->run_id)
        return FAIL(e, PAIR_HINT, "'%s' comes from training run %016" PRIx64 " but '%s' from run %016" PRIx64,
                    model_path, run, adam_path, s->run_id);
    if (step != s->step)
        return FAIL(e, PAIR_HINT, "'%s' is at step %" PRIu64 " but '%s' at step %" PRIu64 ": a save was interrupted",
                    model_path, step, adam_path, s->step);
    return 0;
}

/* The optimizer state at path, when it pairs with the model. */
static int load_state(const char *model_path, const Metadata *meta, const char *path, const Model *m, TrainingState *s,
                      Error *e) {
    if (slm_checkpoint_load_adam(path, m, s, e)) return -1;
    if (check_pair(model_path, meta, path, s, e) == 0) return 0;
    slm_training_state_free(s);
    return -1;
}

static int load_pair(const char *model_path, const char *adam_path, Model *m, char **vocab, Metadata *meta,
                     TrainingState *s, Error *e) {
    struct stat sb;
    if (slm_checkpoint_load_model(model_path, m, vocab, meta, e)) return -1;
    /* A save stopped after its model, before renaming its state into place. */
    char *next = next_path(adam_path, e);
    if (!next) return -1;
    int found = stat(next, &sb) == 0 && load_state(model_path, meta, next, m, s, NULL) == 0;
    free(next);
    if (found) return 0;
    if (stat(adam_path, &sb) != 0)
        return FAIL(e, "resuming needs the optimizer state that training saves beside the model; train afresh instead",
                    "there is no optimizer state '%s' beside '%s'", adam_path, model_path);
    return load_state(model_path, meta, adam_path, m, s, e);
}

int slm_checkpoint_load_all(const char *model_path, Model *m, char **vocab, Metadata *meta, TrainingState *s,
                            Error *e) {
    *m = (Model){0};
    *vocab = NULL;
    *s = (TrainingState){0};
    Metadata md = {0};
    char *adam_path = slm_checkpoint_adam_path(model_path, e);
    int rc = adam_path ? load_pair(model_path, adam_path, m, vocab, &md, s, e) : -1;
    free(adam_path);
    if (rc) {
        slm_model_free(m);
        free(*vocab);
        *vocab = NULL;
        slm_training_state_free(s);
        slm_metadata_free(&md);
    }
    if (meta)
        *meta = md;
    else
        slm_metadata_free(&md);
    return rc;
}
