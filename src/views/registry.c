/* The view registry: see registry.h. */
#include "storylm/registry.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define VIEW(name) extern const View view_##name;
#include "view_list.h"
#undef VIEW

static const View *const views[] = {
#define VIEW(name) &view_##name,
#include "view_list.h"
#undef VIEW
};
#define N_VIEWS ((int)(sizeof views / sizeof views[0]))

int slm_view_count(void) { return N_VIEWS; }
const View *slm_view_at(int i) { return i >= 0 && i < N_VIEWS ? views[i] : NULL; }

const View *slm_view_find(const char *name) {
    for (int i = 0; i < N_VIEWS; i++)
        if (strcmp(views[i]->name, name) == 0) return views[i];
    return NULL;
}

const char *slm_view_param_key(const ViewParam *p, char *buf, size_t size) {
    if (p->key) return p->key;
    size_t n = 0;
    for (; p->name[n] && n + 1 < size; n++) /* a positional's "TEXT" is "text" */
        buf[n] = p->name[n] == '-' ? '_' : (char)tolower((unsigned char)p->name[n]);
    buf[n] = '\0';
    return buf;
}

void *slm_view_param_target(const ViewParam *p, void *params) { return (char *)params + p->offset; }

ProbeOptions *slm_view_probe_options(void *params) { return params; }

void slm_view_params_init(const View *v, void *params) {
    memset(params, 0, v->params_size);
    /* what a view that lists no --test-stories or --ablate-mode still reads */
    *slm_view_probe_options(params) = (ProbeOptions){.ablate_mode = "zero", .n_test = STORIES_DEFAULT_TEST};
    for (int i = 0; i < v->n_params; i++) {
        const ViewParam *p = &v->params[i];
        void *t = slm_view_param_target(p, params);
        switch (p->type) {
            case VIEW_BOOL: *(bool *)t = p->def != 0; break;
            case VIEW_INT: *(int *)t = (int)p->def; break;
            case VIEW_DOUBLE: *(double *)t = p->def; break;
            case VIEW_STRING: *(const char **)t = p->def_string; break;
            case VIEW_STRINGS: break;
        }
    }
}

int slm_view_param_choice_ok(const ViewParam *p, const char *s) {
    if (!p->choices || !s) return 1;
    size_t n = strlen(s);
    for (const char *c = p->choices; *c;) {
        size_t len = strcspn(c, ",");
        if (len == n && strncmp(c, s, n) == 0) return 1;
        c += len + (c[len] == ',');
    }
    return 0;
}

void slm_view_param_choices(const ViewParam *p, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (const char *c = p->choices; c && *c && used < size;) {
        size_t len = strcspn(c, ",");
        const char *sep = used == 0 ? "" : c[len] ? ", " : " or ";
        used += (size_t)snprintf(buf + used, size - used, "%s%.*s", sep, (int)len, c);
        c += len + (c[len] == ',');
    }
}

int slm_view_params_check(const View *v, void *params, Error *e) {
    for (int i = 0; i < v->n_params; i++) {
        const ViewParam *p = &v->params[i];
        if (p->type != VIEW_STRING) continue;
        const char *s = *(const char *const *)slm_view_param_target(p, params);
        if ((p->flags & VP_REQUIRED) && !s) return FAIL(e, NULL, "missing %s", p->name);
        if (!slm_view_param_choice_ok(p, s)) {
            char choices[128];
            slm_view_param_choices(p, choices, sizeof choices);
            return FAIL(e, NULL, "%s%s is %s, not '%s'", p->flags & VP_POSITIONAL ? "" : "--", p->name, choices, s);
        }
    }
    return v->check ? v->check(params, e) : 0;
}

const char *slm_view_stories(const View *v, void *params) {
    for (int i = 0; i < v->n_params; i++)
        if (v->params[i].flags & VP_STORIES) return *(const char **)slm_view_param_target(&v->params[i], params);
    return NULL;
}

static const char *type_name(ViewParamType t) {
    static const char *const names[] = {"bool", "int", "number", "string", "strings"};
    return names[t];
}

static cJSON *describe_param(const ViewParam *p) {
    char key[64];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", p->name);
    /* STORIES: "stories", the server's own --stories unless a request names a file under --data-dir */
    if (!(p->flags & (VP_CLI_ONLY | VP_STORIES)))
        cJSON_AddStringToObject(j, "key", slm_view_param_key(p, key, sizeof key));
    if (p->alias) cJSON_AddStringToObject(j, "alias", p->alias);
    cJSON_AddStringToObject(j, "type", type_name(p->type));
    cJSON_AddStringToObject(j, "help", p->help ? p->help : "");
    if (p->type == VIEW_BOOL) cJSON_AddBoolToObject(j, "default", p->def != 0);
    if (p->type == VIEW_INT || p->type == VIEW_DOUBLE) {
        if (strcmp(p->name, "threads") == 0)
            cJSON_AddNullToObject(j, "default"); /* one per core of the machine it runs on */
        else
            cJSON_AddNumberToObject(j, "default", p->def);
        if (p->min != p->max) {
            cJSON_AddNumberToObject(j, "min", p->min);
            cJSON_AddNumberToObject(j, "max", p->max);
        }
    }
    if (p->type == VIEW_STRING || p->type == VIEW_STRINGS) { /* a list's default: none given */
        if (p->def_string)
            cJSON_AddStringToObject(j, "default", p->def_string);
        else
            cJSON_AddNullToObject(j, "default");
    }
    if (p->choices) cJSON_AddStringToObject(j, "choices", p->choices);
    cJSON_AddBoolToObject(j, "positional", (p->flags & VP_POSITIONAL) != 0);
    cJSON_AddBoolToObject(j, "required", (p->flags & VP_REQUIRED) != 0);
    cJSON_AddBoolToObject(j, "cli_only", (p->flags & VP_CLI_ONLY) != 0);
    cJSON_AddBoolToObject(j, "request_only", (p->flags & VP_REQUEST_ONLY) != 0);
    return j;
}

cJSON *slm_view_describe(const View *v) {
    static const char *const serve[] = {"GET,POST", "POST", "CLI only"};
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "name", v->name);
    cJSON_AddStringToObject(j, "summary", v->summary);
    cJSON_AddStringToObject(j, "usage", v->usage);
    cJSON_AddStringToObject(j, "serve", serve[v->serve]);
    cJSON_AddBoolToObject(j, "svg", v->draw != NULL);
    cJSON *list = cJSON_AddArrayToObject(j, "params");
    for (int i = 0; list && i < v->n_params; i++) cJSON_AddItemToArray(list, describe_param(&v->params[i]));
    return j;
}

int slm_view_run_text(ViewCall *c, const char *text, int pos, int how, ViewText *vt, Error *e) {
    *vt = (ViewText){0};
    if (c->host && c->host->run_text) return c->host->run_text(c->host->ctx, c->ps, text, pos, how, vt, e);
    return slm_view_text_run(vt, c->ps, text, pos, how, e);
}

void slm_view_release_text(ViewCall *c, ViewText *vt) {
    if (c->host && c->host->release_text)
        c->host->release_text(c->host->ctx, vt);
    else
        slm_view_text_free(vt);
}

int slm_view_other_model(ViewCall *c, const char *path, const LoadedModel **lm, Error *e) {
    return c->host && c->host->other_model ? c->host->other_model(c->host->ctx, c->ps, path, lm, e)
                                           : FAIL(e, NULL, "no other model can be opened here");
}

int slm_view_build(ViewCall *c, Error *e) {
    if (c->view->state_size && !c->state) {
        c->state = calloc(1, c->view->state_size);
        if (!c->state) return FAIL(e, NULL, "out of memory");
    }
    return c->view->build(c, e);
}

void slm_view_call_end(ViewCall *c) {
    if (c->view->done && c->state) c->view->done(c);
    free(c->state);
    c->state = NULL;
}
