/* Report headers: see report_header.h. */
#include "storylm/report_header.h"

#include <stdio.h>

#include "storylm/head_list.h"

static void slm_report_header_ablation(Report *r, const Ablation *ab, const ModelConfig *c, const char *desc);

void slm_report_header_session(Report *r, const ProbeSession *ps) {
    slm_report_header_model(r, &ps->lm.model, ps->model_path);
    if (ps->stories_path) slm_report_header_stories(r, ps->stories_path, ps->stories.n_stories, ps->stories.n_test);
    slm_report_header_ablation(r, &ps->ablation, &ps->lm.model.cfg, ps->ablation_desc);
}

/* The JSON convention of docs/json.md: the same nested keys in every verb. */
void slm_report_header_model(Report *r, const Model *m, const char *path) {
    slm_report_text(r, "model.file", "model", path);
    slm_report_text(r, "model.arch", "architecture", m->cfg.arch->name);
    if (m->cfg.arch->takes & TAKES_SCORES) { /* the variant: in the table only when not the chapter's */
        int plain = m->cfg.pos == POS_DISTANCE && m->cfg.score == SCORE_SCALED_DOT;
        slm_report_text(r, "model.pos", plain ? NULL : "position scheme", slm_pos_name(m->cfg.pos));
        slm_report_text(r, "model.score", plain ? NULL : "score", slm_score_name(m->cfg.score));
    }
    slm_report_int(r, "model.parameters", NULL, (long long)m->n_params);
}

void slm_report_header_stories(Report *r, const char *path, int n_stories, int n_test) {
    slm_report_text(r, "stories.file", "stories", path);
    slm_report_int(r, "stories.stories", NULL, n_stories);
    slm_report_int(r, "stories.test_stories", "test stories", n_test);
}

/* ablation.heads: the heads switched off, numbered over all layers; on a
 * model of several layers also ablation.names, "1:3,2:5". */
static void slm_report_header_ablation(Report *r, const Ablation *ab, const ModelConfig *c, const char *desc) {
    int heads[STORYLM_MAX_ALL_HEADS], n = 0;
    char names[STORYLM_MAX_ALL_HEADS * 6] = ""; /* "8:31," each */
    for (int h = 0; h < slm_model_heads(c) && h < STORYLM_MAX_ALL_HEADS; h++)
        if (ab && slm_head_set_has(&ab->heads, h)) heads[n++] = h;
    slm_report_text(r, "ablation.text", "ablation", n && desc && desc[0] ? desc : "none");
    slm_report_ints(r, "ablation.heads", NULL, heads, n); /* numbered over all layers: layer l's head h is l*H + h */
    if (n && ab) slm_head_list_text(&ab->heads, c, names, sizeof names);
    if (slm_model_layers(c) > 1) slm_report_text(r, "ablation.names", NULL, names); /* "1:3,2:5" */
    slm_report_text(r, "ablation.mode", NULL, !n ? "none" : ab->mode == ABLATE_MEAN ? "mean" : "zero");
}
