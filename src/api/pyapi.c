/* The flat interface of pyapi.h: the loaded model of a session, the probes'
 * runner with hooks, and the generation views, behind plain C types. */
#include "storylm/pyapi.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/ablation.h"
#include "storylm/clock.h"
#include "storylm/data_files.h"
#include "storylm/generate_output.h"
#include "storylm/loaded_model.h"
#include "storylm/params.h"
#include "storylm/sample.h"
#include "storylm/text.h"
#include "storylm/train_params.h"
#include "storylm/views.h"
#include "pyapi_model.h"

void slm_py_release(void *p) { free(p); }

PyModel *slm_py_load(const char *path, Error *e) {
    char shipped[PATH_MAX];
    bool is_shipped;
    if (!path) path = slm_default_model(shipped, sizeof shipped, &is_shipped);
    PyModel *m = xcalloc(1, sizeof *m, e);
    if (!m) return NULL;
    if (!(m->path = xmalloc(strlen(path) + 1, e))) return free(m), NULL;
    strcpy(m->path, path);
    if (slm_loaded_model_load(&m->lm, m->path, e)) {
        free(m->path);
        free(m);
        return NULL;
    }
    return m;
}

int slm_py_set_kernels(PyModel *m, const char *name, Error *e) {
    Kernels k;
    if (slm_kernels_parse(name, &k, e) || slm_kernels_check(k, PRECISION_FP32, e)) return -1;
    m->lm.model.kernels = k;
    return 0;
}

void slm_py_free(PyModel *m) {
    if (!m) return;
    slm_loaded_model_free(&m->lm);
    free(m->path);
    free(m);
}

/* j printed and deleted; NULL (e set) when out of memory. */
static char *json_out(cJSON *j, Error *e) {
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!s) FAIL(e, NULL, "out of memory making JSON");
    return s;
}

char *slm_py_config_json(const PyModel *m, Error *e) {
    const Model *model = &m->lm.model;
    const ModelConfig *c = &model->cfg;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "file", m->path);
    cJSON_AddStringToObject(j, "arch", c->arch->name);
    cJSON_AddStringToObject(j, "pos", slm_pos_name(c->pos));
    cJSON_AddStringToObject(j, "score", slm_score_name(c->score));
    cJSON_AddNumberToObject(j, "parameters", (double)model->n_params);
    const char *names[] = {"vocab_size", "row_dim", "n_heads",    "key_dim",
                           "value_dim",  "window",  "hidden_dim", "context"};
    int sizes[] = {c->vocab_size, c->row_dim, c->n_heads,    c->key_dim,
                   c->value_dim,  c->window,  c->hidden_dim, c->context};
    for (int i = 0; i < 8; i++) cJSON_AddNumberToObject(j, names[i], sizes[i]);
    if (slm_model_heads(c) > 0) /* layers of heads, or the transformer's blocks (as info --json) */
        cJSON_AddNumberToObject(j, "layers", slm_model_layers(c));
    cJSON_AddBoolToObject(j, "tie_embeddings", c->tie_embeddings); /* W_U is W_E^T: no unembed.W_U in the file */
    return json_out(j, e);
}

char *slm_py_hook_names(const PyModel *m, Error *e) { return slm_hook_names(&m->lm.model.cfg, e); }

int slm_py_tokenize(const PyModel *m, const char *text, size_t len, int32_t **ids, Error *e) {
    IntVec v = {0};
    *ids = NULL;
    if (slm_text_check(text, len, "the text", e) || slm_tokenizer_encode(&m->lm.tokenizer, text, len, &v, e)) return -1;
    if (v.len > INT_MAX / 2) return slm_intvec_free(&v), FAIL(e, "give a shorter text", "the text has too many tokens");
    if (!v.data && !(v.data = xmalloc(sizeof(int32_t), e))) return -1; /* an empty text: still a buffer to release */
    *ids = v.data;
    return (int)v.len;
}

char *slm_py_decode(const PyModel *m, const int32_t *ids, int n, Error *e) {
    if (n < 0) return FAIL(e, NULL, "a negative number of ids (%d)", n), NULL;
    return slm_tokenizer_decode(&m->lm.tokenizer, ids, (size_t)n, 0, e);
}

char *slm_py_vocab(const PyModel *m, Error *e) {
    size_t len;
    return slm_tokenizer_to_text(&m->lm.tokenizer, &len, e);
}

int slm_py_eos(const PyModel *m) { return m->lm.tokenizer.eos_id; }

/* eval --text's loss: the mean of -log p over positions 0..T-2, in double from the logits (slm_probe_loss). */
static double text_loss(const Activations *a, const int32_t *ids, int T) {
    double sum = 0;
    for (int p = 0; p + 1 < T; p++) sum += slm_probe_loss(a, p, ids[p + 1]);
    return T > 1 ? sum / (T - 1) : 0.0;
}

/* ablate= (NULL: none) as the heads it switches off, to 0; an error names ablate (Error.param). */
static int python_ablation(const PyModel *m, const char *ablate, Ablation *ab, Error *e) {
    char desc[64];
    return slm_ablation_parse(&m->lm, ablate, ABLATE_ZERO, NULL, NULL, ab, desc, sizeof desc, e);
}

int slm_py_run(const PyModel *m, const int32_t *ids, int T, HookFn fn, void *ctx, const char *const *names, int n_names,
               const char *ablate, float *logits, double *loss, Error *e) {
    if (T < 1) return FAIL(e, "give at least one token ([EOS] first)", "nothing to run: no token");
    Ablation ab;
    if (python_ablation(m, ablate, &ab, e)) return -1;
    ForwardHooks hooks = {.fn = fn, .ctx = ctx, .names = names, .n_names = n_names};
    ProbeRunner r;
    if (slm_probe_runner_init(&r, &m->lm.model, T, e)) return -1;
    r.acts.hooks = fn ? &hooks : NULL;
    int rc = slm_probe_run(&r, ids, T, &ab, e);
    if (!rc && logits) memcpy(logits, r.acts.logits, (size_t)T * m->lm.model.cfg.vocab_size * sizeof(float));
    if (!rc && loss) *loss = text_loss(&r.acts, ids, T);
    slm_probe_runner_free(&r);
    slm_hooks_free(&hooks);
    return rc;
}

/* The names generation capitalises, found as the CLI finds them, else in fallback. */
static int find_names(NameList *nl, const LoadedModel *lm, const char *stories, const char *fallback, char *from,
                      size_t size, Error *e) {
    if (slm_view_generate_names(nl, lm, stories, from, size, e)) return -1;
    if (from[0] || stories || !fallback) return 0;
    slm_names_free(nl);
    return slm_view_generate_names(nl, lm, fallback, from, size, e);
}

char *slm_py_generate_defaults(Error *e) { return json_out(slm_view_generate_defaults_json(), e); }

/* The verbs whose parameters Python gives by keyword. */
static const ParamTable *verb_table(const char *verb, Error *e) {
    if (verb && strcmp(verb, "generate") == 0) return &params_generate;
    if (verb && strcmp(verb, "train") == 0) return &params_train;
    FAIL(e, NULL, "no parameters of a verb '%.40s'", verb ? verb : "");
    return NULL;
}

char *slm_py_params_json(const char *verb, Error *e) {
    const ParamTable *t = verb_table(verb, e);
    return t ? json_out(slm_params_describe(t, NULL, PARAM_FROM_PYTHON), e) : NULL;
}

/* The texts of heads given as numbers or lists (ablate=[3, "2:5"]): every head of the largest model. */
#define PY_HEADS_TEXT (STORYLM_MAX_ALL_HEADS * 16)

/* options (a JSON object of keywords) into params, filled with t's defaults
 * first: each keyword one of Python's parameters of t, in its range. The
 * strings of params point into *json (the caller deletes it, also on error)
 * and heads (PY_HEADS_TEXT bytes). */
static int read_options(const ParamTable *t, const char *options, void *params, cJSON **json, char *heads, Error *e) {
    slm_params_init(t, params);
    *json = cJSON_Parse(options ? options : "{}");
    if (!*json) return FAIL(e, NULL, "the options are not a JSON object");
    ParamRead how = {.front = PARAM_FROM_PYTHON, .scratch = heads, .scratch_size = PY_HEADS_TEXT};
    return slm_params_read_json(t, *json, &how, params, NULL, e);
}

int slm_py_params_check(const char *verb, const char *options, Error *e) {
    const ParamTable *t = verb_table(verb, e);
    if (!t) return -1;
    union { /* a verb's struct, as large as the largest */
        GenerateParams g;
        TrainParams t;
    } params;
    cJSON *json = NULL;
    char heads[PY_HEADS_TEXT];
    int rc = read_options(t, options, &params, &json, heads, e);
    cJSON_Delete(json);
    return rc;
}

/* The texts of vb's samples as a JSON array; NULL (e set) on error. */
static cJSON *sample_texts(ViewBatch *vb, int samples, Error *e) {
    cJSON *texts = cJSON_CreateArray();
    for (int i = 0; texts && i < samples; i++) {
        char *text = slm_view_generator_text(&vb->samples[i], e);
        if (!text) return cJSON_Delete(texts), NULL;
        cJSON_AddItemToArray(texts, cJSON_CreateString(text));
        free(text);
    }
    if (!texts) FAIL(e, NULL, "out of memory making JSON");
    return texts;
}

/* generate's stories for prompt with go (names found already) -> the texts,
 * or with json generate --json's object (its n_probs alternatives). */
static cJSON *run_generate(const PyModel *m, const Ablation *ab, const char *prompt, ViewGenerateOptions *go,
                           int samples, const char *names_from, int json, Error *e) {
    ViewBatch vb;
    PromptUnknown pu = {0};
    char chars[256];
    if (json && slm_view_prompt_unknown(&m->lm.tokenizer, prompt, &pu, chars, sizeof chars, e)) return NULL;
    if (slm_view_batch_init(&vb, &m->lm, ab, prompt, go, samples, e)) return NULL;
    cJSON *out = NULL;
    double start = slm_clock_seconds(), cpu_start = slm_clock_cpu_seconds();
    if (!slm_view_batch_run(&vb, NULL, NULL, e)) {
        GenerateRun run = {prompt, names_from, pu, slm_clock_seconds() - start, slm_clock_cpu_seconds() - cpu_start};
        out = json ? slm_generate_json(&vb, &m->lm, go, &run, e) : sample_texts(&vb, samples, e);
    }
    slm_view_batch_free(&vb);
    return out;
}

/* vg's next-token logits (V) into last from the whole pass over [EOS] and
 * its tokens so far, with hooks (slm_py_run's; the probes' runner). */
static int hooked_logits(const PyModel *m, const Ablation *ab, const ViewGenerator *vg, ForwardHooks *hooks,
                         float *last, Error *e) {
    int T = (int)vg->ids.len + 1, V = m->lm.model.cfg.vocab_size;
    int32_t *ids = xmalloc((size_t)T * sizeof *ids, e);
    ProbeRunner r;
    if (!ids) return -1;
    ids[0] = m->lm.tokenizer.eos_id;
    memcpy(ids + 1, vg->ids.data, vg->ids.len * sizeof *ids);
    int rc = slm_probe_runner_init(&r, &m->lm.model, T, e);
    if (!rc) {
        r.acts.hooks = hooks;
        rc = slm_probe_run(&r, ids, T, ab, e);
        if (!rc) memcpy(last, r.acts.logits + (size_t)(T - 1) * V, (size_t)V * sizeof(float));
        slm_probe_runner_free(&r);
    }
    free(ids);
    return rc;
}

/* Sample vg (initialised) written to its end, each token drawn by its
 * sampler from the hooked pass's logits instead of its generator's. */
static int hooked_story(const PyModel *m, const Ablation *ab, ViewGenerator *vg, ForwardHooks *hooks, Error *e) {
    float *last = xmalloc((size_t)m->lm.model.cfg.vocab_size * sizeof(float), e);
    int rc = last ? 1 : -1;
    while (rc == 1) {
        rc = hooked_logits(m, ab, vg, hooks, last, e);
        if (!rc) {
            vg->logits = last;
            rc = slm_view_generator_next(vg, e);
        }
    }
    free(last);
    return rc;
}

/* generate with hooks: each sample alone (seed + i), as a ViewBatch's
 * samples are -> the texts, or with json generate --json's object. */
static cJSON *run_hooked(const PyModel *m, const Ablation *ab, const char *prompt, ViewGenerateOptions *go, int samples,
                         const char *names_from, int json, ForwardHooks *hooks, Error *e) {
    ViewBatch vb = {.n = samples};
    PromptUnknown pu = {0};
    char chars[256];
    if (json && slm_view_prompt_unknown(&m->lm.tokenizer, prompt, &pu, chars, sizeof chars, e)) return NULL;
    if (!(vb.samples = xcalloc((size_t)samples, sizeof *vb.samples, e))) return NULL;
    double start = slm_clock_seconds(), cpu_start = slm_clock_cpu_seconds();
    uint64_t seed = go->seed;
    int rc = 0, made = 0; /* the samples initialised, freed at the end */
    while (!rc && made < samples) {
        go->seed = seed + (uint64_t)made;
        rc = slm_view_generator_init(&vb.samples[made], &m->lm, ab, prompt, go, e);
        if (!rc) rc = hooked_story(m, ab, &vb.samples[made++], hooks, e);
    }
    go->seed = seed;
    cJSON *out = NULL;
    if (!rc) {
        GenerateRun run = {prompt, names_from, pu, slm_clock_seconds() - start, slm_clock_cpu_seconds() - cpu_start};
        out = json ? slm_generate_json(&vb, &m->lm, go, &run, e) : sample_texts(&vb, samples, e);
    }
    for (int i = 0; i < made; i++) slm_view_generator_free(&vb.samples[i]);
    free(vb.samples);
    return out;
}

/* The slm_py_generate calls: n_probs < 0 for the texts; fn NULL: no hooks. */
static char *generate(const PyModel *m, const char *prompt, size_t prompt_len, const char *options, int n_probs,
                      ForwardHooks *hooks, const char *stories, const char *fallback_stories, Error *e) {
    GenerateParams p = {0};
    cJSON *json = NULL; /* the options, which the stop strings point into */
    char heads[PY_HEADS_TEXT];
    Ablation ab;
    if (slm_text_check(prompt, prompt_len, "the prompt", e) ||
        read_options(&params_generate, options, &p, &json, heads, e) || python_ablation(m, p.po.ablate, &ab, e))
        return cJSON_Delete(json), NULL;
    if (p.seed < 0) /* the caller draws the seed it keeps (Python's model.last_seed) */
        return cJSON_Delete(json), FAIL(e, NULL, "no seed: draw one first"), NULL;
    if (n_probs > SAMPLER_MAX_N_PROBS)
        return cJSON_Delete(json), FAIL(e, NULL, "n_probs=%d is out of range (0 to %d)", n_probs, SAMPLER_MAX_N_PROBS),
               NULL;
    ViewGenerateOptions go = p.go;
    go.seed = (uint64_t)p.seed;
    go.threads = 1;
    go.stops = p.stops.items;
    go.n_stops = p.stops.count;
    go.steers = p.steers.items;
    go.n_steers = p.steers.count;
    if (hooks && go.n_steers) /* the hooked pass, not the generator, makes the logits: it would not steer */
        return cJSON_Delete(json),
               FAIL(e, "add the direction in a hook of fwd_hooks instead",
                    "steer= with fwd_hooks: the hooks' pass makes the logits"),
               NULL;
    go.logprobs = n_probs >= 0;
    go.n_probs = n_probs > 0 ? n_probs : 0;
    NameList names = {0};
    char from[4096];
    cJSON *out = NULL;
    if (!find_names(&names, &m->lm, stories, fallback_stories, from, sizeof from, e)) {
        if (from[0]) go.names = &names;
        const char *names_from = from[0] ? from : NULL;
        out = hooks ? run_hooked(m, &ab, prompt, &go, p.samples, names_from, n_probs >= 0, hooks, e)
                    : run_generate(m, &ab, prompt, &go, p.samples, names_from, n_probs >= 0, e);
    }
    slm_names_free(&names);
    cJSON_Delete(json);
    return out ? json_out(out, e) : NULL;
}

char *slm_py_generate(const PyModel *m, const char *prompt, size_t prompt_len, const char *options, const char *stories,
                      const char *fallback_stories, Error *e) {
    return generate(m, prompt, prompt_len, options, -1, NULL, stories, fallback_stories, e);
}

char *slm_py_generate_json(const PyModel *m, const char *prompt, size_t prompt_len, const char *options, int n_probs,
                           const char *stories, const char *fallback_stories, Error *e) {
    if (n_probs < 0) return FAIL(e, NULL, "n_probs=%d is out of range (0 to %d)", n_probs, SAMPLER_MAX_N_PROBS), NULL;
    return generate(m, prompt, prompt_len, options, n_probs, NULL, stories, fallback_stories, e);
}

char *slm_py_generate_hooked(const PyModel *m, const char *prompt, size_t prompt_len, const char *options, int n_probs,
                             HookFn fn, void *ctx, const char *const *names, int n_names, const char *stories,
                             const char *fallback_stories, Error *e) {
    if (!fn) return FAIL(e, NULL, "no hook function"), NULL;
    ForwardHooks hooks = {.fn = fn, .ctx = ctx, .names = names, .n_names = n_names};
    char *out =
        generate(m, prompt, prompt_len, options, n_probs < 0 ? -1 : n_probs, &hooks, stories, fallback_stories, e);
    slm_hooks_free(&hooks);
    return out;
}
