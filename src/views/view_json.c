/* The keys of docs/json.md for JSON a view builds itself: see probe_views.h. */
#include <cjson/cJSON.h>

#include "storylm/probe_views.h"

cJSON *slm_view_json_begin(const char *verb) {
    cJSON *j = cJSON_CreateObject();
    if (j) cJSON_AddStringToObject(j, "command", verb);
    return j;
}

void slm_view_json_model(cJSON *j, const Model *m, const char *path) {
    cJSON *o = cJSON_AddObjectToObject(j, "model");
    cJSON_AddStringToObject(o, "file", path);
    cJSON_AddStringToObject(o, "arch", m->cfg.arch->name);
    if (m->cfg.arch->takes & TAKES_SCORES) { /* the variant (--pos, --score) */
        cJSON_AddStringToObject(o, "pos", slm_pos_name(m->cfg.pos));
        cJSON_AddStringToObject(o, "score", slm_score_name(m->cfg.score));
        if (slm_model_layers(&m->cfg) > 1) cJSON_AddNumberToObject(o, "layers", slm_model_layers(&m->cfg));
    }
    cJSON_AddNumberToObject(o, "parameters", (double)m->n_params);
}

void slm_view_json_stories(cJSON *j, const char *path, const Stories *s) {
    cJSON *o = cJSON_AddObjectToObject(j, "stories");
    cJSON_AddStringToObject(o, "file", path);
    cJSON_AddNumberToObject(o, "stories", s->n_stories);
    cJSON_AddNumberToObject(o, "test_stories", s->n_test);
}
