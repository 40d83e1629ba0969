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

static size_t field_size(ParamType t) {
    switch (t) {
        case PARAM_BOOL: return sizeof(bool);
        case PARAM_INT:
        case PARAM_CHOICE: return sizeof(int);
        case PARAM_DOUBLE: return sizeof(double);
        case PARAM_STRING:
        case PARAM_HEADS: return sizeof(const char *);
        case PARAM_STRINGS: return sizeof(StringList);
        case PARAM_GROUP: return 0;
    }
    return 0;
}

/* Each parameter inside the struct, its default in range and among its choices. */
static void params_are_in_their_struct(const View *v, const ParamList *l) {
    CHECK(v->params_size >= sizeof(ProbeOptions));
    for (int i = 0; i < l->n; i++) {
        const Param *p = l->at[i].p;
        CHECK(p->name && p->name[0] && (p->help || (p->flags & PARAM_POSITIONAL)));
        CHECK(l->at[i].offset + field_size(p->type) <= v->params_size);
        if ((p->type == PARAM_INT || p->type == PARAM_DOUBLE) && p->min != p->max && strcmp(p->name, "threads") != 0)
            CHECK(p->def >= p->min && p->def <= p->max);
        if (p->type == PARAM_INT) CHECK(p->def == floor(p->def));
        if (p->choices && p->def_string) CHECK(slm_param_choice(p, p->def_string) >= 0);
        if (p->flags & PARAM_POSITIONAL) CHECK(p->type == PARAM_STRING);
    }
}

/* No two options of a view share a name, and no two request fields a key. */
static void names_and_keys_appear_once(const ParamList *l) {
    char a[64], b[64];
    for (int i = 0; i < l->n; i++)
        for (int j = i + 1; j < l->n; j++) {
            const Param *p = l->at[i].p, *q = l->at[j].p;
            CHECK(strcmp(p->name, q->name) != 0);
            if (slm_param_from(p, PARAM_FROM_REQUEST) && slm_param_from(q, PARAM_FROM_REQUEST))
                CHECK(strcmp(slm_param_key(p, a, sizeof a), slm_param_key(q, b, sizeof b)) != 0);
        }
}

/* The defaults fill the struct; the check refuses a missing required text and a bad choice. */
static void defaults_fill_the_struct(const View *v, const ParamList *l) {
    void *params = calloc(1, v->params_size);
    CHECK(params != NULL);
    if (!params) return;
    slm_view_params_init(v, params);
    const ProbeOptions *po = slm_view_probe_options(params);
    CHECK(po->ablate_mode == ABLATE_ZERO && po->n_test > 0);
    int required = 0;
    for (int i = 0; i < l->n; i++) {
        const Param *p = l->at[i].p;
        void *t = slm_param_field(&l->at[i], params);
        if (p->type == PARAM_INT) CHECK(*(int *)t == (int)p->def || strcmp(p->name, "threads") == 0);
        if (p->type == PARAM_STRING && !(p->flags & PARAM_POSITIONAL) && l->at[i].offset >= sizeof(ProbeOptions))
            CHECK(*(const char **)t == p->def_string);
        required |= (p->flags & PARAM_REQUIRED) && !(p->flags & PARAM_STORIES);
    }
    Error e = {0};
    if (required) CHECK(slm_view_params_check(v, params, PARAM_FROM_CLI, &e) != 0 && e.message[0]);
    for (int i = 0; i < l->n; i++) /* every required one given: the choice is what is wrong */
        if (l->at[i].p->flags & PARAM_REQUIRED) *(const char **)slm_param_field(&l->at[i], params) = "x";
    for (int i = 0; i < l->n; i++) {
        const Param *p = l->at[i].p;
        void *t = slm_param_field(&l->at[i], params);
        if (!p->choices) continue;
        Error bad = {0};
        if (p->type == PARAM_CHOICE) {
            int was = *(int *)t;
            *(int *)t = 99;
            CHECK(slm_view_params_check(v, params, PARAM_FROM_REQUEST, &bad) != 0 &&
                  bad.param.kind == ERROR_PARAM_VALUE);
            *(int *)t = was;
            continue;
        }
        *(const char **)t = "no such choice";
        CHECK(slm_view_params_check(v, params, PARAM_FROM_CLI, &bad) != 0 &&
              strcmp(bad.param.value, "no such choice") == 0 && strcmp(bad.param.name, p->name) == 0);
        *(const char **)t = p->def_string;
    }
    free(params);
}

/* /api/views' entry: the name, and one described parameter a row of the table. */
static void description_lists_every_param(const View *v, const ParamList *l) {
    cJSON *j = slm_view_describe(v);
    CHECK(j != NULL);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    CHECK(cJSON_IsString(name) && strcmp(name->valuestring, v->name) == 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "params")) == l->n);
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
        ParamTable t = slm_view_table(v);
        ParamList l;
        slm_params_list(&t, &l);
        params_are_in_their_struct(v, &l);
        names_and_keys_appear_once(&l);
        defaults_fill_the_struct(v, &l);
        description_lists_every_param(v, &l);
    }
    return check_report();
}
