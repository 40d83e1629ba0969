/* Parameters declared once (storylm/params.h): a table with a group reads
 * the command line's text, a request's JSON and Python's keywords into one
 * struct, each value checked with the table's type and range (a request's
 * bound below the CLI's), unknown names refused with the nearest one; an
 * error names the parameter and the value, which each front end says in its
 * own words; the verbs' tables (generate, train, the sampler's group) are
 * well formed, their choices in their enums' order and train's defaults
 * the trainer's. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/params.h"
#include "storylm/registry.h"
#include "storylm/sample.h"
#include "storylm/train_params.h"
#include "storylm/views.h"

/* A verb of our own: a group (two numbers) inside a table of every type. */
typedef struct Inner {
    int count;
    double rate;
} Inner;
typedef struct Outer {
    const char *text, *heads, *name;
    int mode;
    bool flag;
    Inner inner;
    StringList list;
    const char *local;
} Outer;

static const Param inner_params[] = {
    {.name = "count",
     .short_name = 'n',
     .type = PARAM_INT,
     .offset = offsetof(Inner, count),
     .help = "a count",
     .min = 0,
     .max = 100,
     .def = 7,
     .served_max = 20},
    {.name = "rate",
     .type = PARAM_DOUBLE,
     .offset = offsetof(Inner, rate),
     .help = "a rate",
     .min = 0,
     .max = 1,
     .def = 0.5},
};
static const ParamTable inner_table = {"inner", inner_params, PARAMS_COUNT(inner_params)};

static const Param outer_params[] = {
    {.name = "name",
     .type = PARAM_STRING,
     .offset = offsetof(Outer, name),
     .help = "a name",
     .def_string = "lily",
     .choices = "lily,tom,mia"},
    PARAM_GROUP_OF(Outer, inner, inner_table),
    {.name = "mode",
     .type = PARAM_CHOICE,
     .offset = offsetof(Outer, mode),
     .help = "how",
     .def_string = "mean",
     .choices = "zero,mean"},
    {.name = "flag", .type = PARAM_BOOL, .offset = offsetof(Outer, flag), .help = "a flag"},
    {.name = "heads", .type = PARAM_HEADS, .offset = offsetof(Outer, heads), .help = "heads", .flags = PARAM_NO_PYTHON},
    {.name = "stop", .type = PARAM_STRINGS, .offset = offsetof(Outer, list), .help = "texts", .flags = PARAM_NONEMPTY},
    {.name = "local",
     .type = PARAM_STRING,
     .offset = offsetof(Outer, local),
     .help = "a file",
     .flags = PARAM_CLI_ONLY},
    {.name = "TEXT",
     .type = PARAM_STRING,
     .offset = offsetof(Outer, text),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED | PARAM_TEXT},
};
static const ParamTable outer_table = {"outer", outer_params, PARAMS_COUNT(outer_params)};

static const ParamRef *ref(const ParamList *l, const char *name) {
    int i = slm_params_find(l, name);
    CHECK(i >= 0);
    return i >= 0 ? &l->at[i] : &l->at[0];
}

/* The group's parameters in their place, at the group's offset plus their own. */
static void a_group_opens_in_place(void) {
    ParamList l;
    slm_params_list(&outer_table, &l);
    CHECK(l.n == 9);
    CHECK(strcmp(l.at[1].p->name, "count") == 0 && l.at[1].offset == offsetof(Outer, inner.count));
    CHECK(strcmp(l.at[2].p->name, "rate") == 0 && l.at[2].offset == offsetof(Outer, inner.rate));
    CHECK(strcmp(l.at[3].p->name, "mode") == 0);
    Outer o;
    memset(&o, 0xAB, sizeof o);
    slm_params_init(&outer_table, &o);
    CHECK(o.inner.count == 7 && o.inner.rate == 0.5 && o.mode == 1 && !o.flag && o.list.count == 0);
    CHECK(strcmp(o.name, "lily") == 0 && o.heads == NULL && o.text == NULL);
    char def[64];
    slm_param_default_text(ref(&l, "mode"), &o, def, sizeof def);
    CHECK(strcmp(def, "mean") == 0);
    slm_param_default_text(ref(&l, "rate"), &o, def, sizeof def);
    CHECK(strcmp(def, "0.5") == 0);
    slm_param_default_text(ref(&l, "flag"), &o, def, sizeof def);
    CHECK(def[0] == '\0');
}

/* The command line's text: numbers parsed and range-checked, the error naming the parameter. */
static void text_is_read_by_type_and_range(void) {
    ParamList l;
    slm_params_list(&outer_table, &l);
    Outer o = {0};
    slm_params_init(&outer_table, &o);
    Error e = {0};
    CHECK(slm_param_set_text(ref(&l, "count"), &o, "42", &e) == 0 && o.inner.count == 42);
    CHECK(slm_param_set_text(ref(&l, "count"), &o, "101", &e) == -1 && o.inner.count == 42);
    CHECK(e.param.kind == ERROR_PARAM_VALUE && strcmp(e.param.name, "count") == 0 && strcmp(e.param.value, "101") == 0);
    CHECK(strcmp(e.message, "is out of range (0 to 100)") == 0);
    CHECK(slm_param_set_text(ref(&l, "count"), &o, "4294967338", &e) == -1 && o.inner.count == 42); /* no wrap */
    CHECK(slm_param_set_text(ref(&l, "count"), &o, "x", &e) == -1 && e.param.kind == ERROR_PARAM_TYPE);
    CHECK(slm_param_set_text(ref(&l, "rate"), &o, "0.25", &e) == 0 && o.inner.rate == 0.25);
    CHECK(slm_param_set_text(ref(&l, "rate"), &o, "nan", &e) == -1);
    CHECK(slm_param_set_text(ref(&l, "mode"), &o, "zero", &e) == 0 && o.mode == 0);
    CHECK(slm_param_set_text(ref(&l, "mode"), &o, "half", &e) == -1 && strcmp(e.message, "is not zero or mean") == 0);
    CHECK(slm_param_set_text(ref(&l, "name"), &o, "tom", &e) == 0 && strcmp(o.name, "tom") == 0);
    CHECK(slm_param_set_text(ref(&l, "name"), &o, "zed", &e) == -1 && strstr(e.message, "lily, tom or mia"));
    CHECK(slm_param_set_text(ref(&l, "stop"), &o, "a", &e) == 0 &&
          slm_param_set_text(ref(&l, "stop"), &o, "b", &e) == 0);
    CHECK(o.list.count == 2 && strcmp(o.list.items[1], "b") == 0);
    CHECK(slm_param_set_text(ref(&l, "stop"), &o, "", &e) == -1 && o.list.count == 2); /* PARAM_NONEMPTY */
    for (int i = 2; i < STRING_LIST_MAX; i++) slm_param_set_text(ref(&l, "stop"), &o, "c", &e);
    CHECK(slm_param_set_text(ref(&l, "stop"), &o, "d", &e) == -1 && o.list.count == STRING_LIST_MAX);
    CHECK(slm_param_set_text(ref(&l, "flag"), &o, NULL, &e) == 0 && o.flag);
}

static int read_json(const char *json, ParamFront front, Outer *o, ParamsGiven *given, Error *e, char *scratch,
                     size_t size) {
    cJSON *j = cJSON_Parse(json);
    CHECK(j != NULL);
    slm_params_init(&outer_table, o);
    ParamRead how = {.front = front, .max_text = 8, .scratch = scratch, .scratch_size = size};
    int rc = slm_params_read_json(&outer_table, j, &how, o, given, e);
    /* strings point into j: keep what the checks below read */
    static char keep[64], keep_heads[64];
    if (!rc && o->text) snprintf(keep, sizeof keep, "%s", o->text), o->text = keep;
    if (!rc && o->heads) snprintf(keep_heads, sizeof keep_heads, "%s", o->heads), o->heads = keep_heads;
    cJSON_Delete(j);
    return rc;
}

/* A request's JSON: each field by its key, typed, in range (a request's
 * bound); a field of no parameter refused with the nearest name. */
static void json_is_read_with_the_same_table(void) {
    Outer o;
    Error e = {0};
    ParamsGiven g;
    char scratch[32];
    ParamList l;
    slm_params_list(&outer_table, &l);
    CHECK(read_json("{\"text\": \"hi\", \"count\": 12, \"rate\": 0.75, \"mode\": \"zero\", \"flag\": true}",
                    PARAM_FROM_REQUEST, &o, &g, &e, scratch, sizeof scratch) == 0);
    CHECK(o.inner.count == 12 && o.inner.rate == 0.75 && o.mode == 0 && o.flag && strcmp(o.text, "hi") == 0);
    CHECK(slm_params_given(&g, &l, "count") && slm_params_given(&g, &l, "TEXT") && !slm_params_given(&g, &l, "name"));
    /* a request's bound (served_max 20) is below the table's (100); Python's is the table's */
    CHECK(read_json("{\"text\": \"hi\", \"count\": 21}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1);
    CHECK(strcmp(e.message, "is out of range (0 to 20)") == 0 && strcmp(e.param.key, "count") == 0);
    CHECK(read_json("{\"text\": \"hi\", \"count\": 21}", PARAM_FROM_PYTHON, &o, NULL, &e, NULL, 0) == 0 &&
          o.inner.count == 21);
    /* a typo of a key: its nearest; a command-line-only or Python-less field is no field there */
    CHECK(read_json("{\"text\": \"hi\", \"cuont\": 3}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1);
    CHECK(e.param.kind == ERROR_PARAM_UNKNOWN && strcmp(e.param.key, "cuont") == 0 &&
          strcmp(e.param.near, "count") == 0);
    CHECK(read_json("{\"text\": \"hi\", \"local\": \"x\"}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1 &&
          e.param.kind == ERROR_PARAM_UNKNOWN);
    CHECK(read_json("{\"text\": \"hi\", \"heads\": \"3\"}", PARAM_FROM_PYTHON, &o, NULL, &e, NULL, 0) == -1 &&
          e.param.kind == ERROR_PARAM_UNKNOWN);
    /* types: a fraction, a string, null where a number goes; null where a string goes is left out */
    CHECK(read_json("{\"text\": \"hi\", \"count\": 1.5}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1 &&
          e.param.kind == ERROR_PARAM_TYPE);
    CHECK(read_json("{\"text\": \"hi\", \"count\": \"3\"}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1 &&
          e.param.text && strcmp(e.param.value, "3") == 0);
    CHECK(read_json("{\"text\": \"hi\", \"rate\": null}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1);
    CHECK(read_json("{\"text\": \"hi\", \"name\": null}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == 0 &&
          strcmp(o.name, "lily") == 0);
    CHECK(read_json("{\"text\": \"hi\", \"flag\": 1}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1);
    /* a required field missing; a text past the bound (413 on the server) */
    CHECK(read_json("{}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1 && e.param.kind == ERROR_PARAM_MISSING);
    CHECK(read_json("{\"text\": \"123456789\"}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1 &&
          e.param.kind == ERROR_PARAM_TOO_LONG);
    /* heads as a number, or a list of numbers and names, become the text --ablate takes (the head
     * reader judges it against the model); anything else is no head */
    CHECK(read_json("{\"text\": \"hi\", \"heads\": [3, 5]}", PARAM_FROM_REQUEST, &o, NULL, &e, scratch,
                    sizeof scratch) == 0 &&
          strcmp(o.heads, "3,5") == 0);
    CHECK(read_json("{\"text\": \"hi\", \"heads\": [3, \"2:5\"]}", PARAM_FROM_REQUEST, &o, NULL, &e, scratch,
                    sizeof scratch) == 0 &&
          strcmp(o.heads, "3,2:5") == 0);
    CHECK(read_json("{\"text\": \"hi\", \"heads\": 7}", PARAM_FROM_REQUEST, &o, NULL, &e, scratch, sizeof scratch) ==
              0 &&
          strcmp(o.heads, "7") == 0);
    CHECK(read_json("{\"text\": \"hi\", \"heads\": \"1:3,2:5\"}", PARAM_FROM_REQUEST, &o, NULL, &e, scratch,
                    sizeof scratch) == 0 &&
          strcmp(o.heads, "1:3,2:5") == 0);
    CHECK(read_json("{\"text\": \"hi\", \"heads\": [3, true]}", PARAM_FROM_REQUEST, &o, NULL, &e, scratch,
                    sizeof scratch) == -1 &&
          e.param.kind == ERROR_PARAM_TYPE);
    CHECK(read_json("{\"text\": \"hi\", \"heads\": 1.5}", PARAM_FROM_REQUEST, &o, NULL, &e, scratch, sizeof scratch) ==
              -1 &&
          e.param.kind == ERROR_PARAM_TYPE);
    CHECK(read_json("{\"text\": \"hi\", \"heads\": [1000, 2000, 3000, 4000, 5000, 6000, 7000]}", PARAM_FROM_REQUEST, &o,
                    NULL, &e, scratch, sizeof scratch) == -1 &&
          strstr(e.message, "too many heads")); /* past the scratch: refused, never cut */
    CHECK(read_json("{\"text\": \"hi\", \"stop\": [\".\", \"!\"]}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == 0 &&
          o.list.count == 2);
    CHECK(read_json("{\"text\": \"hi\", \"stop\": [\"\"]}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1);
    CHECK(read_json("{\"text\": \"hi\", \"stop\": 3}", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1);
    CHECK(read_json("[1]", PARAM_FROM_REQUEST, &o, NULL, &e, NULL, 0) == -1);
}

/* A reader of a few fields passes over the others; PARAM_SERVED ones are
 * known to the route's reader but left to their own. */
static void partial_and_served_reading(void) {
    static const Param served[] = {
        {.name = "model", .type = PARAM_STRING, .offset = 0, .help = "m", .flags = PARAM_SERVED},
        {.name = "count", .type = PARAM_INT, .offset = sizeof(const char *), .help = "c", .min = 0, .max = 9},
    };
    static const ParamTable t = {"served", served, PARAMS_COUNT(served)};
    struct {
        const char *model;
        int count;
    } v = {0};
    cJSON *j = cJSON_Parse("{\"model\": \"m.safetensors\", \"count\": 4, \"other\": 1}");
    Error e = {0};
    ParamRead skip = {.front = PARAM_FROM_REQUEST, .skip_served = true};
    CHECK(slm_params_read_json(&t, j, &skip, &v, NULL, &e) == -1 && strcmp(e.param.key, "other") == 0);
    cJSON_DeleteItemFromObject(j, "other");
    CHECK(slm_params_read_json(&t, j, &skip, &v, NULL, &e) == 0 && v.model == NULL && v.count == 4);
    cJSON_AddNumberToObject(j, "other", 1);
    ParamRead some = {.front = PARAM_FROM_REQUEST, .allow_unknown = true};
    CHECK(slm_params_read_json(&t, j, &some, &v, NULL, &e) == 0 && strcmp(v.model, "m.safetensors") == 0);
    cJSON_Delete(j);
}

/* One error, three front ends' words. */
static void each_front_end_says_the_parameter_its_way(void) {
    Error e = {0};
    SamplerSettings st = slm_sampler_settings_default();
    st.temperature = 200;
    CHECK(slm_sampler_settings_check(&st, &e) == -1);
    char buf[256];
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_CLI, buf, sizeof buf),
                 "--temperature 200 is out of range (0 to 100)") == 0);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_PYTHON, buf, sizeof buf),
                 "temperature=200 is out of range (0 to 100)") == 0);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_JSON, buf, sizeof buf),
                 "\"temperature\": 200 is out of range (0 to 100)") == 0);
    st = slm_sampler_settings_default();
    st.top_k = -1;
    CHECK(slm_sampler_settings_check(&st, &e) == -1);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_CLI, buf, sizeof buf), "--top-k -1 is out of range (0 to 1000000)") ==
          0);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_PYTHON, buf, sizeof buf), "top_k=-1 is out of range (0 to 1000000)") ==
          0);
    /* a text is quoted where it must be */
    ParamList l;
    slm_params_list(&outer_table, &l);
    Outer o = {0};
    CHECK(slm_param_set_text(ref(&l, "mode"), &o, "half way", &e) == -1);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_CLI, buf, sizeof buf), "--mode 'half way' is not zero or mean") == 0);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_PYTHON, buf, sizeof buf), "mode='half way' is not zero or mean") == 0);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_JSON, buf, sizeof buf), "\"mode\": \"half way\" is not zero or mean") ==
          0);
    /* a character of two bytes is copied whole, with no backslash before it (as a quote or backslash has) */
    CHECK(slm_param_set_text(ref(&l, "mode"), &o, "mode\xdb\x8b \"x\"", &e) == -1);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_JSON, buf, sizeof buf),
                 "\"mode\": \"mode\xdb\x8b \\\"x\\\"\" is not zero or mean") == 0);
    /* an unknown name, with the nearest */
    Outer j;
    CHECK(read_json("{\"text\": \"hi\", \"rat\": 1}", PARAM_FROM_REQUEST, &j, NULL, &e, NULL, 0) == -1);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_JSON, buf, sizeof buf),
                 "unknown field \"rat\"; did you mean \"rate\"?") == 0);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_PYTHON, buf, sizeof buf), "no option rat=; did you mean rate=?") == 0);
    /* a message that names no parameter is as it was; a prefix keeps the parameter in the message */
    FAIL(&e, NULL, "plain");
    CHECK(e.param.kind == ERROR_PARAM_NONE &&
          strcmp(slm_error_text(&e, ERROR_STYLE_JSON, buf, sizeof buf), "plain") == 0);
    st.top_k = -1;
    slm_sampler_settings_check(&st, &e);
    slm_error_prefix(&e, "reading x: ");
    CHECK(e.param.kind == ERROR_PARAM_NONE &&
          strcmp(e.message, "reading x: --top-k -1 is out of range (0 to 1000000)") == 0);
}

/* A verb's table: names once, request keys once, defaults in range. */
static void table_is_well_formed(const ParamTable *t) {
    ParamList l;
    slm_params_list(t, &l);
    CHECK(l.n > 0 && l.n < PARAMS_MAX);
    char a[64], b[64];
    for (int i = 0; i < l.n; i++) {
        const Param *p = l.at[i].p;
        CHECK(p->name && (p->help || p->help_more || (p->flags & PARAM_POSITIONAL)));
        /* 0: the transformer's own sizes (the command line shows them); threads: every core */
        int own = strcmp(p->name, "threads") == 0 || (p->def == 0 && p->help && strstr(p->help, "--arch transformer"));
        if ((p->type == PARAM_INT || p->type == PARAM_DOUBLE) && p->min != p->max && !own)
            CHECK(p->def >= p->min && p->def <= p->max);
        if (p->choices && p->def_string) CHECK(slm_param_choice(p, p->def_string) >= 0);
        for (int j = i + 1; j < l.n; j++) {
            const Param *q = l.at[j].p;
            CHECK(strcmp(p->name, q->name) != 0);
            for (ParamFront f = PARAM_FROM_REQUEST; f <= PARAM_FROM_PYTHON; f *= 2)
                if (slm_param_from(p, f) && slm_param_from(q, f))
                    CHECK(strcmp(slm_param_key(p, a, sizeof a), slm_param_key(q, b, sizeof b)) != 0);
        }
    }
    cJSON *d = slm_params_describe(t, NULL, 0);
    CHECK(cJSON_GetArraySize(d) == l.n);
    cJSON_Delete(d);
}

/* The verbs' tables; choices in their enums' order; one default each. */
static void the_verbs_tables(void) {
    table_is_well_formed(&params_generate);
    table_is_well_formed(&params_train);
    table_is_well_formed(&params_sampling);
    for (int i = 0; i < slm_view_count(); i++) {
        ParamTable t = slm_view_table(slm_view_at(i));
        table_is_well_formed(&t);
    }
    ParamList l;
    slm_params_list(&params_generate, &l);
    const Param *mode = ref(&l, "ablate-mode")->p, *precision = ref(&l, "precision")->p;
    CHECK(slm_param_choice(mode, "zero") == ABLATE_ZERO && slm_param_choice(mode, "mean") == ABLATE_MEAN);
    CHECK(slm_param_choice(precision, "fp32") == PRECISION_FP32 &&
          slm_param_choice(precision, "bf16") == PRECISION_BF16);
    GenerateParams g;
    memset(&g, 0xFF, sizeof g);
    slm_params_init(&params_generate, &g);
    CHECK(g.po.ablate_mode == ABLATE_ZERO && g.go.precision == PRECISION_FP32 && g.seed == -1 && g.samples == 1);
    CHECK(g.go.max_tokens == 200 && g.go.sampling.temperature == SAMPLER_DEFAULT_TEMPERATURE);
    CHECK(ref(&l, "tokens")->p->served_max == GENERATE_SERVED_TOKENS);
    /* train's defaults are the trainer's */
    TrainOptions o = slm_train_default_options();
    CHECK(o.arch == &slm_attention_arch && o.steps == 3000 && o.lr == 3e-3 && o.warmup == -1 && o.min_lr_ratio == 0.1);
    CHECK(o.batch == 8 && o.seed == 1 && o.threads == 0 && o.eval_every == 250 && o.max_positions == 4096);
    CHECK(strcmp(o.out, "model.safetensors") == 0 && o.precision == PRECISION_FP32 && o.d_model == 0 && o.ema == 0);
    /* --lr 0 is out of train's range (a request's too): not "the default" */
    slm_params_list(&params_train, &l);
    TrainParams tp = {0};
    Error e = {0};
    CHECK(slm_param_set_text(ref(&l, "lr"), &tp, "0", &e) == -1 && strcmp(e.param.key, "lr") == 0);
}

static void nearest_names(void) {
    const char *names[] = {"steps", "seed", "temperature", "top-k"};
    CHECK(strcmp(slm_nearest_name("stpes", names, 4), "steps") == 0);
    CHECK(strcmp(slm_nearest_name("tempreature", names, 4), "temperature") == 0);
    CHECK(slm_nearest_name("zzzzzz", names, 4) == NULL);
    CHECK(slm_nearest_name("ab", names, 4) == NULL);
}

int main(void) {
    a_group_opens_in_place();
    text_is_read_by_type_and_range();
    json_is_read_with_the_same_table();
    partial_and_served_reading();
    each_front_end_says_the_parameter_its_way();
    the_verbs_tables();
    nearest_names();
    return check_report();
}
