/* The probe session: see probe_session.h. */
#include "storylm/probe_session.h"

#include <stdlib.h>
#include <string.h>

#include "storylm/ablation.h"
#include "storylm/data_files.h"
#include "storylm/name_swap.h"
#include "storylm/outputs.h"

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
    if (ps->stories.n_test == 0 && !(flags & PROBE_ALL_STORIES))
        return FAIL(e, "give a file with at least 2 stories", "'%s' has too few stories to hold any out for testing",
                    ps->stories_path);
    return flags & PROBE_NAMES ? learn_names(ps, e) : 0;
}

int slm_probe_session_check_outputs(const ProbeOptions *o, const char *model_path, const char *stories_path,
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
    bool shipped;
    if (!ps->model_path) /* the CLI resolves (and announces) its default before; others get it silently */
        ps->model_path = slm_default_model(ps->shipped, sizeof ps->shipped, &shipped);
    int rc = slm_probe_session_check_outputs(o, ps->model_path, stories_path, NULL, e); /* before the work */
    if (!rc) rc = slm_kernels_check((Kernels)o->kernels, PRECISION_FP32, e);
    if (!rc) rc = slm_loaded_model_load(&ps->lm, ps->model_path, e);
    if (!rc) ps->lm.model.kernels = (Kernels)o->kernels;
    if (!rc && (flags & PROBE_HEADS)) rc = slm_probe_need_heads(&ps->lm.model, what, e);
    if (!rc && stories_path) rc = slm_probe_session_stories(ps, o->n_test, flags, e);
    if (!rc)
        rc = slm_ablation_setup(&ps->lm, o->ablate, o->ablate_mode, stories_path ? &ps->stories : NULL,
                                stories_path ? stories_path : o->mean_stories, o->n_test, &ps->ablation, &ps->mean,
                                ps->ablation_desc, sizeof ps->ablation_desc, e);
    if (rc) slm_probe_session_close(ps);
    return rc;
}

void slm_probe_session_close(ProbeSession *ps) {
    slm_loaded_model_free(&ps->lm);
    slm_stories_free(&ps->stories);
    slm_names_free(&ps->names);
    free(ps->mean);
    *ps = (ProbeSession){0};
}

int slm_probe_session_load_other(const ProbeSession *ps, const char *path, LoadedModel *other, Error *e) {
    if (slm_loaded_model_load(other, path, e)) return -1;
    other->model.kernels = ps->lm.model.kernels;
    if (strcmp(other->vocab, ps->lm.vocab) != 0) {
        slm_loaded_model_free(other);
        return FAIL(e, "train both models with the same --vocab file",
                    "'%s' and '%s' use different vocabularies, so their guesses cannot be compared", path,
                    ps->model_path);
    }
    return 0;
}

const char *slm_probe_session_token(const ProbeSession *ps, int32_t id) {
    return id >= 0 && id < ps->lm.tokenizer.size ? ps->lm.tokenizer.pieces[id] : "?";
}

int slm_probe_session_swap_names(const ProbeSession *ps, const char *list, SwapName *out, int max, Error *e) {
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
