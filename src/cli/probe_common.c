/* What the probe verbs share: see probe_common.h. */
#include "probe_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/fileio.h"
#include "storylm/name_swap.h"

int probe_check_mode(const Command *cmd, const char *mode) {
    if (strcmp(mode, "zero") == 0 || strcmp(mode, "mean") == 0) return 0;
    return args_usage_error(cmd, "--ablate-mode is zero or mean, not '%s'", mode);
}

/* mean (H, vd) over the held-out test stories of path, read with lm's vocabulary. */
static int mean_from_file(const LoadedModel *lm, const char *path, int n_test, float *mean, Error *e) {
    Stories s;
    StoriesOptions so = stories_default_options();
    so.n_test = n_test;
    if (stories_load(&s, path, &lm->tokenizer, &so, e)) return -1;
    int rc = s.n_test > 0 ? probe_head_means(&lm->model, &s, s.test, s.n_test, mean, e)
                          : FAIL(e, "give --stories FILE with more stories", "'%s' has too few stories to hold any out", path);
    stories_free(&s);
    return rc;
}

/* Where mean ablation reads its stories when the verb has none: --stories or the model's "data". */
static const char *mean_stories_path(const LoadedModel *lm, const char *given, Error *e) {
    if (given) return given;
    const char *data = metadata_get(&lm->meta, "data");
    if (!data || !data[0]) {
        FAIL(e, "give --stories FILE", "--ablate-mode mean needs stories, and '%s' does not say what it was trained on",
             lm->path);
        return NULL;
    }
    return data;
}

int cli_setup_ablation(const LoadedModel *lm, const char *ablate, const char *mode, const Stories *s,
                       const char *stories_path, int n_test, Ablation *ab, float **mean, char *desc, size_t size,
                       Error *e) {
    *ab = (Ablation){0};
    *mean = NULL;
    desc[0] = '\0';
    if (!ablate) return 0;
    if (lm->model.cfg.arch != ARCH_ATTENTION)
        return FAIL(e, "leave out --ablate", "'%s' is a %s model: it has no heads to switch off", lm->path,
                    arch_name(lm->model.cfg.arch));
    if (cli_parse_heads(ablate, lm->model.cfg.n_heads, &ab->heads, e)) return -1;
    if (strcmp(mode, "mean") != 0) {
        snprintf(desc, size, "heads %s set to 0", ablate);
        return 0;
    }
    const ModelConfig *c = &lm->model.cfg;
    *mean = xmalloc((size_t)c->n_heads * c->value_dim * sizeof(float), e);
    if (!*mean) return -1;
    const char *path = s ? NULL : mean_stories_path(lm, stories_path, e);
    int rc = s ? (s->n_test > 0 ? probe_head_means(&lm->model, s, s->test, s->n_test, *mean, e)
                                : FAIL(e, "use --ablate-mode zero", "there are no held-out test stories to average over"))
               : path ? mean_from_file(lm, path, n_test, *mean, e) : -1;
    if (rc) {
        free(*mean);
        *mean = NULL;
        return -1;
    }
    ab->mode = ABLATE_MEAN;
    ab->mean = *mean;
    snprintf(desc, size, "heads %s set to their mean output over the test stories of %s", ablate,
             s ? stories_path : path);
    return 0;
}

/* ---- sessions ------------------------------------------------------------------ */

/* Names from the training stories' text: the file split as stories_load
 * splits it; when the counts agree the stories line up, and test stories are
 * left out. */
static int learn_names(ProbeSession *ps, Error *e) {
    return names_learn_training(&ps->names, ps->stories_path, &ps->stories, &ps->names_from_all, e);
}

static int open_stories(ProbeSession *ps, const ProbeOptions *o, int flags, Error *e) {
    StoriesOptions so = stories_default_options();
    so.n_test = o->n_test;
    if (stories_load(&ps->stories, ps->stories_path, &ps->lm.tokenizer, &so, e)) return -1;
    if (ps->stories.n_test == 0)
        return FAIL(e, "give a file with at least 2 stories", "'%s' has too few stories to hold any out for testing",
                    ps->stories_path);
    return flags & PROBE_NAMES ? learn_names(ps, e) : 0;
}

int probe_session_open(ProbeSession *ps, const ProbeOptions *o, const char *what, const char *stories_path, int flags,
                       Error *e) {
    *ps = (ProbeSession){.stories_path = stories_path};
    ps->model_path = cli_model_path(o->model, o->json);
    int rc = cli_load_model(&ps->lm, ps->model_path, e);
    if (!rc && (flags & PROBE_ATTENTION_ONLY)) rc = probe_need_attention(&ps->lm.model, what, e);
    if (!rc && stories_path) rc = open_stories(ps, o, flags, e);
    if (!rc)
        rc = cli_setup_ablation(&ps->lm, o->ablate, o->ablate_mode, stories_path ? &ps->stories : NULL,
                                stories_path ? stories_path : o->mean_stories, o->n_test, &ps->ablation, &ps->mean, ps->ablation_desc,
                                sizeof ps->ablation_desc, e);
    if (rc) probe_session_close(ps);
    return rc;
}

void probe_session_close(ProbeSession *ps) {
    cli_free_model(&ps->lm);
    stories_free(&ps->stories);
    names_free(&ps->names);
    free(ps->mean);
    *ps = (ProbeSession){0};
}

int probe_load_other(const ProbeSession *ps, const char *path, LoadedModel *other, Error *e) {
    if (cli_load_model(other, path, e)) return -1;
    if (strcmp(other->vocab, ps->lm.vocab) != 0) {
        cli_free_model(other);
        return FAIL(e, "train both models with the same --vocab file",
                    "'%s' and '%s' use different vocabularies, so their guesses cannot be compared", path,
                    ps->model_path);
    }
    return 0;
}

void probe_report_header(Report *r, const ProbeSession *ps) {
    const Model *m = &ps->lm.model;
    report_text(r, "model", "model", ps->model_path);
    report_text(r, "arch", "architecture", arch_name(m->cfg.arch));
    if (ps->stories_path) {
        report_text(r, "stories", "stories", ps->stories_path);
        report_int(r, "test_stories", "test stories", ps->stories.n_test);
    }
    report_text(r, "ablation", "ablation", ps->ablation_desc[0] ? ps->ablation_desc : "none");
}

int probe_emit(const Report *r, const ProbeOptions *o, Error *e) {
    if (report_failed(r, e)) return -1;
    if (!o->json) {
        report_print(r, stdout);
        return 0;
    }
    cJSON *j = report_json(r);
    char *s = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    if (!s) return FAIL(e, NULL, "out of memory printing JSON");
    printf("%s\n", s);
    free(s);
    return 0;
}

const char *probe_token(const ProbeSession *ps, int32_t id) {
    return id >= 0 && id < ps->lm.tokenizer.size ? ps->lm.tokenizer.pieces[id] : "?";
}

int cli_swap_names(const ProbeSession *ps, const char *list, SwapName *out, int max, Error *e) {
    if (!list) return swap_default_names(&ps->lm.tokenizer, &ps->names, out, max);
    int n = 0;
    char word[64];
    for (const char *p = list; *p && n < max;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof word)
            return FAIL(e, "give names separated by commas, like lily,fred,zarko", "cannot read the name list '%s'", list);
        memcpy(word, p, len);
        word[len] = '\0';
        if (swap_name_make(&ps->lm.tokenizer, &ps->names, word, &out[n++], e)) return -1;
        p += len + (p[len] == ',');
    }
    return n;
}

int probe_parse(const Command *cmd, int argc, char **argv, const Option *opts, int n_opts, ProbeOptions *po,
                const char **positional, int n_positional) {
    int np, rc = args_parse(cmd, argc, argv, opts, n_opts, positional, n_positional, n_positional, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (probe_check_mode(cmd, po->ablate_mode)) return 2;
    cli_set_threads(po->threads);
    return -1;
}
