/* Sessions: see session.h. Moved from the CLI so the server shares them. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "storylm/parse.h"
#include "storylm/session.h"

#include <inttypes.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storylm/checkpoint.h"
#include "storylm/fileio.h"
#include "storylm/outputs.h"
#include "storylm/name_swap.h"
#include "storylm/record.h"

bool slm_session_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

#ifndef STORYLM_DATA_DIR /* CMakeLists.txt sets both from the install prefix */
#define STORYLM_DATA_DIR "/usr/local/share/storylm"
#endif
#ifndef STORYLM_DATA_FROM_BIN
#define STORYLM_DATA_FROM_BIN "../share/storylm"
#endif

/* The executable's folder into buf (size); false when it cannot be known. */
static bool exe_dir(char *buf, size_t size) {
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1) return false;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash) return false;
    *slash = '\0';
    return true;
}

/* Place i where rel is looked for, into buf; false past the last one. The
 * first three need the executable's folder (dir, or NULL when unknown). */
static bool source_place(int i, const char *dir, const char *rel, char *buf, size_t size) {
    const char *beside[] = {"../", "", STORYLM_DATA_FROM_BIN "/"};
    if (i < 3) {
        if (dir)
            snprintf(buf, size, "%s/%s%s", dir, beside[i], rel);
        else
            buf[0] = '\0'; /* skipped */
        return true;
    }
    if (i > 3) return false;
    snprintf(buf, size, "%s/%s", STORYLM_DATA_DIR, rel);
    return true;
}

bool slm_session_source_file(const char *rel, char *buf, size_t size) {
    char dir[4096], candidate[8192], resolved[PATH_MAX];
    bool have_dir = exe_dir(dir, sizeof dir);
    for (int i = 0; source_place(i, have_dir ? dir : NULL, rel, candidate, sizeof candidate); i++) {
        if (!candidate[0] || !slm_session_file_exists(candidate)) continue;
        /* "…/models/x" rather than "…/build/../models/x" in what we tell the user */
        const char *path = realpath(candidate, resolved) ? resolved : candidate;
        if (strlen(path) >= size) return false;
        strcpy(buf, path);
        return true;
    }
    return false;
}

void slm_session_source_places(const char *rel, char *buf, size_t size) {
    char dir[4096], candidate[8192];
    bool have_dir = exe_dir(dir, sizeof dir);
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; source_place(i, have_dir ? dir : NULL, rel, candidate, sizeof candidate); i++) {
        if (!candidate[0]) continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", candidate);
        if (n < 0 || (size_t)n >= size - used) return; /* cut short: the first places matter most */
        used += (size_t)n;
    }
}

bool slm_session_shipped_model(char *buf, size_t size) { return slm_session_source_file(SHIPPED_MODEL_REL, buf, size); }

int slm_session_no_model(const char *path, Error *e) {
    char shipped[PATH_MAX];
    /* a file given, or the default name asked for while a shipped model is there (--model given) */
    if (strcmp(path, DEFAULT_MODEL_PATH) != 0 || slm_session_shipped_model(shipped, sizeof shipped))
        return FAIL(e, "train one with 'storylm train STORIES', or give --model FILE", "no model file '%s'", path);
    char places[800]; /* the default: say where else we looked */
    slm_session_source_places(SHIPPED_MODEL_REL, places, sizeof places);
    return FAIL(e, "train one with 'storylm train STORIES', give --model FILE, or install storylm with its models",
                "no model file '%s' here, and no shipped model in %s", path, places);
}

int slm_cli_load_model(LoadedModel *lm, const char *path, Error *e) {
    *lm = (LoadedModel){.path = path};
    struct stat st;
    if (stat(path, &st) != 0)
        return slm_session_no_model(path, e); /* anything else there (a folder, say) the loader names */
    if (slm_checkpoint_load_model(path, &lm->model, &lm->vocab, &lm->meta, e)) return -1;
    if (slm_tokenizer_from_text(&lm->tokenizer, lm->vocab, strlen(lm->vocab), lm->model.cfg.vocab_size, e)) {
        slm_error_prefix(e, "the vocabulary in '%s' is unusable: ", path);
        slm_cli_free_model(lm);
        return -1;
    }
    return 0;
}

void slm_cli_free_model(LoadedModel *lm) {
    slm_model_free(&lm->model);
    slm_tokenizer_free(&lm->tokenizer);
    slm_metadata_free(&lm->meta);
    free(lm->vocab);
    *lm = (LoadedModel){0};
}

/* "3,5" or "1:3,2:5" -> mask of heads numbered over `layers` layers of n_heads
 * (plain H: the first layer's). */
static int parse_heads(const char *list, int layers, int n_heads, uint32_t *mask, Error *e) {
    *mask = 0;
    const char *p = list;
    const char *hint =
        layers > 1 ? "give heads like 1:3,2:5 (layer:head; a plain 3 is layer 1's)" : "give head numbers like 3,5";
    if (!*p) return FAIL(e, hint, "empty head list");
    while (*p) {
        const char *end;
        long long l = 1, h = -1;
        /* out of int's range reads as out of range, below */
        if (slm_parse_integer_prefix(p, &end, -1000000, 1000000, &h) == PARSE_OUT_OF_RANGE) h = 1000000;
        if (end != p && *end == ':') {
            const char *at = end + 1;
            l = h;
            if (slm_parse_integer_prefix(at, &end, -1000000, 1000000, &h) == PARSE_OUT_OF_RANGE) h = 1000000;
            if (end == at) end = p; /* "2:" reads as nothing */
        }
        if (end == p || (*end && *end != ','))
            return FAIL(e, layers > 1 ? hint : "give head numbers separated by commas, like 3,5",
                        "cannot read head list '%s'", list);
        if (l < 1 || l > layers)
            return FAIL(e, "layers are numbered from 1", "layer %lld is out of range: this model has %s %d", l,
                        layers > 1 ? "layers 1 to" : "only layer", layers);
        if (h < 0 || h >= n_heads)
            return FAIL(e, "heads are numbered from 0", "head %lld is out of range: this model has heads 0 to %d", h,
                        n_heads - 1);
        *mask |= 1u << ((l - 1) * n_heads + h);
        p = *end ? end + 1 : end;
    }
    return 0;
}

int slm_cli_parse_heads(const char *list, int n_heads, uint32_t *mask, Error *e) {
    return parse_heads(list, 1, n_heads, mask, e);
}

int slm_cli_parse_model_heads(const char *list, const ModelConfig *c, uint32_t *mask, Error *e) {
    return parse_heads(list, slm_model_layers(c), c->n_heads, mask, e);
}

/* mean (layers*H, vd) over the held-out test stories of path, read with lm's vocabulary. */
static int mean_from_file(const LoadedModel *lm, const char *path, int n_test, float *mean, Error *e) {
    Stories s;
    StoriesOptions so = slm_stories_default_options();
    so.n_test = n_test;
    if (slm_stories_load(&s, path, &lm->tokenizer, &so, e)) return -1;
    int rc = s.n_test > 0
                 ? slm_probe_head_means(&lm->model, &s, s.test, s.n_test, mean, e)
                 : FAIL(e, "give --stories FILE with more stories", "'%s' has too few stories to hold any out", path);
    slm_stories_free(&s);
    return rc;
}

const char *slm_session_mean_stories(const LoadedModel *lm, const char *given, const char *what, char *warning,
                                     size_t size, Error *e) {
    StoriesRecord rec;
    slm_record_from_metadata(&rec, &lm->meta);
    if (size) warning[0] = '\0';
    if (given) return slm_record_check_file(&rec, given, warning, size, e) < 0 ? NULL : given;
    char hint[400];
    if (rec.name[0] && rec.has_sums)
        snprintf(hint, sizeof hint, "give --stories FILE: '%s' was trained on '%s' (%" PRIu64 " bytes)", lm->path,
                 rec.name, rec.bytes);
    else if (rec.name[0])
        snprintf(hint, sizeof hint, "give --stories FILE: '%s' was trained on '%s'", lm->path, rec.name);
    else
        snprintf(hint, sizeof hint, "give --stories FILE, the stories to average over");
    FAIL(e, hint, "%s averages over held-out test stories: say which with --stories", what);
    return NULL;
}

int slm_session_ablation(const LoadedModel *lm, const char *ablate, const char *mode, const float *mean,
                         const char *mean_from, Ablation *ab, char *desc, size_t size, Error *e) {
    *ab = (Ablation){0};
    desc[0] = '\0';
    if (!ablate) return 0;
    if (lm->model.cfg.arch == ARCH_TRANSFORMER && slm_model_heads(&lm->model.cfg) > 32)
        return FAIL(e, "leave out --ablate", "'%s' has %d heads; --ablate names at most 32", lm->path,
                    slm_model_heads(&lm->model.cfg));
    if (lm->model.cfg.arch == ARCH_WINDOW8)
        return FAIL(e, "leave out --ablate", "'%s' is a %s model: it has no heads to switch off", lm->path,
                    slm_arch_name(lm->model.cfg.arch));
    if (slm_cli_parse_model_heads(ablate, &lm->model.cfg, &ab->heads, e)) return -1;
    if (strcmp(mode, "mean") != 0) {
        snprintf(desc, size, "heads %s set to 0", ablate);
        return 0;
    }
    if (!mean) return 0; /* checked only; the caller averages */
    ab->mode = ABLATE_MEAN;
    ab->mean = mean;
    snprintf(desc, size, "heads %s set to their mean output over the test stories of %s", ablate, mean_from);
    return 0;
}

void slm_session_add_warning(char *desc, size_t size, const char *warning) {
    size_t used = strlen(desc);
    if (warning[0] && used < size) snprintf(desc + used, size - used, " (warning: %s)", warning);
}

int slm_cli_setup_ablation(const LoadedModel *lm, const char *ablate, const char *mode, const Stories *s,
                           const char *stories_path, int n_test, Ablation *ab, float **mean, char *desc, size_t size,
                           Error *e) {
    *mean = NULL;
    if (slm_session_ablation(lm, ablate, mode, NULL, NULL, ab, desc, size, e)) return -1;
    if (!ablate || strcmp(mode, "mean") != 0) return 0;
    const ModelConfig *c = &lm->model.cfg;
    *mean = xmalloc((size_t)slm_model_heads(c) * c->value_dim * sizeof(float), e); /* every layer's heads */
    if (!*mean) return -1;
    char warning[400];
    const char *path =
        s ? NULL : slm_session_mean_stories(lm, stories_path, "--ablate-mode mean", warning, sizeof warning, e);
    int rc =
        s      ? (s->n_test > 0 ? slm_probe_head_means(&lm->model, s, s->test, s->n_test, *mean, e)
                                : FAIL(e, "use --ablate-mode zero", "there are no held-out test stories to average over"))
        : path ? mean_from_file(lm, path, n_test, *mean, e)
               : -1;
    if (!rc) rc = slm_session_ablation(lm, ablate, mode, *mean, s ? stories_path : path, ab, desc, size, e);
    if (rc) {
        free(*mean);
        *mean = NULL;
        return -1;
    }
    if (path) slm_session_add_warning(desc, size, warning);
    return 0;
}

/* ---- sessions ------------------------------------------------------------------ */

/* Names from the training stories' text: the file split as slm_stories_load
 * splits it; when the counts agree the stories line up, and test stories are
 * left out. */
static int learn_names(ProbeSession *ps, Error *e) {
    return slm_names_learn_training(&ps->names, ps->stories_path, &ps->stories, &ps->names_from_all, e);
}

int slm_probe_session_stories(ProbeSession *ps, int n_test, int flags, Error *e) {
    StoriesOptions so = slm_stories_default_options();
    so.n_test = n_test;
    if (slm_stories_load(&ps->stories, ps->stories_path, &ps->lm.tokenizer, &so, e)) return -1;
    if (ps->stories.n_test == 0)
        return FAIL(e, "give a file with at least 2 stories", "'%s' has too few stories to hold any out for testing",
                    ps->stories_path);
    return flags & PROBE_NAMES ? learn_names(ps, e) : 0;
}

int slm_probe_check_outputs(const ProbeOptions *o, const char *model_path, const char *stories_path,
                            const char *other_input, Error *e) {
    OutputPlan p;
    slm_outputs_init(&p, o->force);
    slm_outputs_read(&p, model_path);
    slm_outputs_read(&p, stories_path);
    slm_outputs_read(&p, o->mean_stories);
    slm_outputs_read(&p, other_input);
    slm_outputs_write(&p, o->svg, FILE_SVG);
    slm_outputs_write(&p, o->out, FILE_ACTIVATIONS);
    return slm_outputs_check(&p, e);
}

int slm_probe_session_open(ProbeSession *ps, const ProbeOptions *o, const char *what, const char *stories_path,
                           int flags, Error *e) {
    *ps = (ProbeSession){.stories_path = stories_path};
    ps->model_path = o->model;
    if (!ps->model_path) /* the CLI resolves (and announces) its default before; others get it silently */
        ps->model_path =
            slm_session_file_exists(DEFAULT_MODEL_PATH) || !slm_session_shipped_model(ps->shipped, sizeof ps->shipped)
                ? DEFAULT_MODEL_PATH
                : ps->shipped;
    int rc = slm_probe_check_outputs(o, ps->model_path, stories_path, NULL, e); /* before the work */
    if (!rc) rc = slm_cli_load_model(&ps->lm, ps->model_path, e);
    if (!rc && (flags & PROBE_TRANSFORMER) && ps->lm.model.cfg.arch == ARCH_TRANSFORMER) flags &= ~PROBE_ATTENTION_ONLY;
    if (!rc && (flags & PROBE_ATTENTION_ONLY)) rc = slm_probe_need_attention(&ps->lm.model, what, e);
    if (!rc && (flags & PROBE_ATTENTION_ONLY) && !(flags & PROBE_LAYERS))
        rc = slm_probe_need_one_layer(&ps->lm.model, what, e);
    if (!rc && stories_path) rc = slm_probe_session_stories(ps, o->n_test, flags, e);
    if (!rc)
        rc = slm_cli_setup_ablation(&ps->lm, o->ablate, o->ablate_mode, stories_path ? &ps->stories : NULL,
                                    stories_path ? stories_path : o->mean_stories, o->n_test, &ps->ablation, &ps->mean,
                                    ps->ablation_desc, sizeof ps->ablation_desc, e);
    if (rc) slm_probe_session_close(ps);
    return rc;
}

void slm_probe_session_close(ProbeSession *ps) {
    slm_cli_free_model(&ps->lm);
    slm_stories_free(&ps->stories);
    slm_names_free(&ps->names);
    free(ps->mean);
    *ps = (ProbeSession){0};
}

int slm_probe_load_other(const ProbeSession *ps, const char *path, LoadedModel *other, Error *e) {
    if (slm_cli_load_model(other, path, e)) return -1;
    if (strcmp(other->vocab, ps->lm.vocab) != 0) {
        slm_cli_free_model(other);
        return FAIL(e, "train both models with the same --vocab file",
                    "'%s' and '%s' use different vocabularies, so their guesses cannot be compared", path,
                    ps->model_path);
    }
    return 0;
}

void slm_probe_report_header(Report *r, const ProbeSession *ps) {
    slm_report_model(r, &ps->lm.model, ps->model_path);
    if (ps->stories_path) slm_report_stories(r, ps->stories_path, ps->stories.n_stories, ps->stories.n_test);
    slm_report_ablation(r, &ps->ablation, &ps->lm.model.cfg, ps->ablation_desc);
}

/* The JSON convention of docs/json.md: the same nested keys in every verb. */
void slm_report_model(Report *r, const Model *m, const char *path) {
    slm_report_text(r, "model.file", "model", path);
    slm_report_text(r, "model.arch", "architecture", slm_arch_name(m->cfg.arch));
    if (m->cfg.arch == ARCH_ATTENTION) { /* the variant: in the table only when not the chapter's */
        int plain = m->cfg.pos == POS_DISTANCE && m->cfg.score == SCORE_SCALED_DOT;
        slm_report_text(r, "model.pos", plain ? NULL : "position scheme", slm_pos_name(m->cfg.pos));
        slm_report_text(r, "model.score", plain ? NULL : "score", slm_score_name(m->cfg.score));
    }
    slm_report_int(r, "model.parameters", NULL, (long long)m->n_params);
}

void slm_report_stories(Report *r, const char *path, int n_stories, int n_test) {
    slm_report_text(r, "stories.file", "stories", path);
    slm_report_int(r, "stories.stories", NULL, n_stories);
    slm_report_int(r, "stories.test_stories", "test stories", n_test);
}

void slm_report_ablation(Report *r, const Ablation *ab, const ModelConfig *c, const char *desc) {
    int heads[32], n = 0;
    char names[32 * 8] = "";
    for (int h = 0; h < slm_model_heads(c) && h < 32; h++)
        if (ab && (ab->heads >> h & 1u)) heads[n++] = h;
    slm_report_text(r, "ablation.text", "ablation", n && desc && desc[0] ? desc : "none");
    slm_report_ints(r, "ablation.heads", NULL, heads, n); /* numbered over all layers: layer l's head h is l*H + h */
    for (int i = 0, used = 0; slm_model_layers(c) > 1 && i < n; i++) {
        char name[16];
        slm_head_name(c, heads[i], name, sizeof name);
        used += snprintf(names + used, sizeof names - (size_t)used, "%s%s", i ? "," : "", name);
    }
    if (slm_model_layers(c) > 1) slm_report_text(r, "ablation.names", NULL, names); /* "1:3,2:5" */
    slm_report_text(r, "ablation.mode", NULL, !n ? "none" : ab->mode == ABLATE_MEAN ? "mean" : "zero");
}

const char *slm_probe_token(const ProbeSession *ps, int32_t id) {
    return id >= 0 && id < ps->lm.tokenizer.size ? ps->lm.tokenizer.pieces[id] : "?";
}

int slm_cli_swap_names(const ProbeSession *ps, const char *list, SwapName *out, int max, Error *e) {
    if (!list) return slm_swap_default_names(&ps->lm.tokenizer, &ps->names, out, max);
    int n = 0;
    char word[64];
    for (const char *p = list; *p && n < max;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof word)
            return FAIL(e, "give names separated by commas, like lily,fred,zarko", "cannot read the name list '%s'",
                        list);
        memcpy(word, p, len);
        word[len] = '\0';
        if (slm_swap_name_make(&ps->lm.tokenizer, &ps->names, word, &out[n++], e)) return -1;
        p += len + (p[len] == ',');
    }
    return n;
}
