/* Ablation from the user's flags: see ablation.h. */
#include "storylm/ablation.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/fileio.h"
#include "storylm/head_list.h"
#include "storylm/probes.h"
#include "storylm/record.h"

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

const char *slm_ablation_mean_stories(const LoadedModel *lm, const char *given, const char *what, char *warning,
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

int slm_ablation_parse(const LoadedModel *lm, const char *ablate, AblationMode mode, const float *mean,
                       const char *mean_from, Ablation *ab, char *desc, size_t size, Error *e) {
    *ab = (Ablation){0};
    desc[0] = '\0';
    if (!ablate) return 0;
    if (slm_model_heads(&lm->model.cfg) == 0)
        return FAIL(e, "leave out --ablate", "'%s' is a %s model: it has no heads to switch off", lm->path,
                    lm->model.cfg.arch->name);
    if (slm_head_list_parse(ablate, &lm->model.cfg, "ablate", &ab->heads, e)) return -1;
    if (mode != ABLATE_MEAN) {
        snprintf(desc, size, "heads %s set to 0", ablate);
        return 0;
    }
    if (!mean) return 0; /* checked only; the caller averages */
    ab->mode = ABLATE_MEAN;
    ab->mean = mean;
    snprintf(desc, size, "heads %s set to their mean output over the test stories of %s", ablate, mean_from);
    return 0;
}

void slm_ablation_add_warning(char *desc, size_t size, const char *warning) {
    size_t used = strlen(desc);
    if (warning[0] && used < size) snprintf(desc + used, size - used, " (warning: %s)", warning);
}

int slm_ablation_setup(const LoadedModel *lm, const char *ablate, AblationMode mode, const Stories *s,
                       const char *stories_path, int n_test, Ablation *ab, float **mean, char *desc, size_t size,
                       Error *e) {
    *mean = NULL;
    if (slm_ablation_parse(lm, ablate, mode, NULL, NULL, ab, desc, size, e)) return -1;
    if (!ablate || mode != ABLATE_MEAN) return 0;
    const ModelConfig *c = &lm->model.cfg;
    *mean = xmalloc((size_t)slm_model_heads(c) * c->value_dim * sizeof(float), e); /* every layer's heads */
    if (!*mean) return -1;
    char warning[400];
    const char *path =
        s ? NULL : slm_ablation_mean_stories(lm, stories_path, "--ablate-mode mean", warning, sizeof warning, e);
    int rc =
        s      ? (s->n_test > 0 ? slm_probe_head_means(&lm->model, s, s->test, s->n_test, *mean, e)
                                : FAIL(e, "use --ablate-mode zero", "there are no held-out test stories to average over"))
        : path ? mean_from_file(lm, path, n_test, *mean, e)
               : -1;
    if (!rc) rc = slm_ablation_parse(lm, ablate, mode, *mean, s ? stories_path : path, ab, desc, size, e);
    if (rc) {
        free(*mean);
        *mean = NULL;
        return -1;
    }
    if (path) slm_ablation_add_warning(desc, size, warning);
    return 0;
}
