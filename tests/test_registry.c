/* The view registry's entries are well formed: every view has a name that
 * is found again, a build, a table whose fields lie inside its params
 * struct (the ProbeOptions first), names and request keys that appear once,
 * defaults inside their ranges and among their choices; the defaults fill
 * the struct; a bad choice or a missing required field is refused with a
 * message; /api/views' description of a view lists each parameter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/registry.h"

static size_t field_size(ViewParamType t) {
    switch (t) {
        case VIEW_BOOL: return sizeof(bool);
        case VIEW_INT: return sizeof(int);
        case VIEW_DOUBLE: return sizeof(double);
        case VIEW_STRING: return sizeof(const char *);
        case VIEW_STRINGS: return sizeof(StringList);
    }
    return 0;
}

/* Each parameter inside the struct, its default in range and among its choices. */
static void params_are_in_their_struct(const View *v) {
    CHECK(v->params_size >= sizeof(ProbeOptions));
    for (int i = 0; i < v->n_params; i++) {
        const ViewParam *p = &v->params[i];
        CHECK(p->name && p->name[0] && (p->help || (p->flags & VP_POSITIONAL)));
        CHECK(p->offset + field_size(p->type) <= v->params_size);
        if ((p->type == VIEW_INT || p->type == VIEW_DOUBLE) && p->min != p->max && strcmp(p->name, "threads") != 0)
            CHECK(p->def >= p->min && p->def <= p->max);
        if (p->type == VIEW_INT) CHECK(p->def == floor(p->def));
        if (p->choices) CHECK(slm_view_param_choice_ok(p, p->def_string));
        if (p->flags & VP_POSITIONAL) CHECK(p->type == VIEW_STRING);
    }
}

/* No two options of a view share a name, and no two request fields a key. */
static void names_and_keys_appear_once(const View *v) {
    char a[64], b[64];
    for (int i = 0; i < v->n_params; i++)
        for (int j = i + 1; j < v->n_params; j++) {
            const ViewParam *p = &v->params[i], *q = &v->params[j];
            CHECK(strcmp(p->name, q->name) != 0);
            if (!(p->flags & VP_CLI_ONLY) && !(q->flags & VP_CLI_ONLY))
                CHECK(strcmp(slm_view_param_key(p, a, sizeof a), slm_view_param_key(q, b, sizeof b)) != 0);
        }
}

/* The defaults fill the struct; the check refuses a missing required text and a bad choice. */
static void defaults_fill_the_struct(const View *v) {
    void *params = calloc(1, v->params_size);
    CHECK(params != NULL);
    if (!params) return;
    slm_view_params_init(v, params);
    const ProbeOptions *po = slm_view_probe_options(params);
    CHECK(strcmp(po->ablate_mode, "zero") == 0 && po->n_test > 0);
    int required = 0;
    for (int i = 0; i < v->n_params; i++) {
        const ViewParam *p = &v->params[i];
        void *t = slm_view_param_target(p, params);
        if (p->type == VIEW_INT) CHECK(*(int *)t == (int)p->def || strcmp(p->name, "threads") == 0);
        if (p->type == VIEW_STRING && !(p->flags & VP_POSITIONAL) && p->offset >= sizeof(ProbeOptions))
            CHECK(*(const char **)t == p->def_string);
        required |= (p->flags & VP_REQUIRED) && !(p->flags & VP_STORIES);
    }
    Error e = {0};
    if (required) CHECK(slm_view_params_check(v, params, &e) != 0 && e.message[0]);
    for (int i = 0; i < v->n_params; i++) /* every required one given: the choice is what is wrong */
        if (v->params[i].flags & VP_REQUIRED) *(const char **)slm_view_param_target(&v->params[i], params) = "x";
    for (int i = 0; i < v->n_params; i++) {
        const ViewParam *p = &v->params[i];
        if (!p->choices) continue;
        *(const char **)slm_view_param_target(p, params) = "no such choice";
        Error bad = {0};
        CHECK(slm_view_params_check(v, params, &bad) != 0 && strstr(bad.message, "no such choice"));
        *(const char **)slm_view_param_target(p, params) = p->def_string;
    }
    free(params);
}

/* /api/views' entry: the name, and one described parameter a row of the table. */
static void description_lists_every_param(const View *v) {
    cJSON *j = slm_view_describe(v);
    CHECK(j != NULL);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    CHECK(cJSON_IsString(name) && strcmp(name->valuestring, v->name) == 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "params")) == v->n_params);
    cJSON_Delete(j);
}

int main(void) {
    CHECK(slm_view_count() > 0);
    CHECK(slm_view_find("no such view") == NULL && slm_view_at(slm_view_count()) == NULL);
    for (int i = 0; i < slm_view_count(); i++) {
        const View *v = slm_view_at(i);
        CHECK(v->name && slm_view_find(v->name) == v);
        CHECK(v->build != NULL && v->summary && v->usage && v->description);
        CHECK(v->session == VIEW_SESSION_PROBE || v->session == VIEW_SESSION_NONE);
        for (int j = 0; j < i; j++) CHECK(strcmp(slm_view_at(j)->name, v->name) < 0); /* view_list.h in order */
        params_are_in_their_struct(v);
        names_and_keys_appear_once(v);
        defaults_fill_the_struct(v);
        description_lists_every_param(v);
    }
    return check_report();
}
