/* The OpenAI-compatible routes (openai.h): their tables of fields, the
 * answers of /v1/models, /v1/completions (not streamed), /tokenize,
 * /detokenize and /metrics, and errors in OpenAI's shape. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "openai.h"
#include "storylm/clock.h"
#include "storylm/registry.h"
#include "storylm/text.h"

/* ---- errors in OpenAI's shape ---- */

static const char *error_type(int status) {
    return status == 401 || status == 403 ? "permission_error"
           : status == 404                ? "not_found_error"
           : status >= 500                ? "server_error"
                                          : "invalid_request_error";
}

static cJSON *error_object(int status, const char *message, const char *hint, const char *param, const char *code) {
    cJSON *j = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(j, "error");
    cJSON_AddStringToObject(o, "message", message);
    cJSON_AddStringToObject(o, "type", error_type(status));
    cJSON_AddItemToObject(o, "param", param ? cJSON_CreateString(param) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "code", code ? cJSON_CreateString(code) : cJSON_CreateNull());
    if (hint && hint[0]) cJSON_AddStringToObject(o, "hint", hint); /* storylm's: what to do */
    return j;
}

int openai_error(Reply *r, int status, const char *message, const char *param, const char *code) {
    return reply_json(r, status, error_object(status, message, NULL, param, code));
}

/* e (a field's, naming it or not) as 400 (413 for a text too long). */
static int openai_param_error(Reply *r, const Error *e) {
    char text[sizeof e->message + 300];
    slm_error_text(e, ERROR_STYLE_JSON, text, sizeof text);
    int status = e->param.kind == ERROR_PARAM_TOO_LONG ? 413 : 400;
    const char *param = e->param.kind != ERROR_PARAM_NONE && e->param.key[0] ? e->param.key : NULL;
    const char *code = e->param.kind == ERROR_PARAM_UNKNOWN ? "unknown_parameter" : NULL;
    return reply_json(r, status, error_object(status, text, e->hint, param, code));
}

void openai_error_shape(Reply *r) {
    if (!r->body || r->status < 400) return;
    cJSON *j = cJSON_Parse(r->body), *msg = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (cJSON_IsString(msg)) { /* the server's own {"error", "hint"}: rewritten */
        const cJSON *hint = cJSON_GetObjectItemCaseSensitive(j, "hint");
        cJSON *o = error_object(r->status, msg->valuestring, cJSON_IsString(hint) ? hint->valuestring : NULL, NULL,
                                r->status == 404 ? "not_found" : NULL);
        char *body = o ? cJSON_PrintUnformatted(o) : NULL;
        cJSON_Delete(o);
        if (body) free(r->body), r->body = body;
    }
    cJSON_Delete(j);
}

/* Sets the error's "param" (and "code") of an answer in OpenAI's shape. */
static void error_param(Reply *r, const char *param, const char *code) {
    openai_error_shape(r);
    cJSON *j = r->body ? cJSON_Parse(r->body) : NULL, *o = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (cJSON_IsObject(o)) {
        cJSON_ReplaceItemInObjectCaseSensitive(o, "param", cJSON_CreateString(param));
        if (code) cJSON_ReplaceItemInObjectCaseSensitive(o, "code", cJSON_CreateString(code));
        char *body = cJSON_PrintUnformatted(j);
        if (body) free(r->body), r->body = body;
    }
    cJSON_Delete(j);
}

/* A session's refusal in OpenAI's shape: an unknown model (404) names "model". */
static void model_error(Reply *r) {
    if (r->status == 404)
        error_param(r, "model", "model_not_found");
    else
        openai_error_shape(r);
}

/* ---- the tables of fields ---- */

static int check_text(const char *text, size_t len, const char *what, Error *e) {
    return slm_utf8_validate(text, len, what, e);
}

/* body's fields read with t into params (defaults set first): 0, or -1 with r (OpenAI's shape). */
static int read_fields(const ParamTable *t, const cJSON *body, void *params, ParamsGiven *given, Reply *r) {
    char scratch[256]; /* "ablate": [3, 5] as text: a request's copy */
    ParamRead how = {.front = PARAM_FROM_REQUEST,
                     .skip_served = true,
                     .max_text = SERVER_MAX_TEXT,
                     .max_string = PATH_MAX - 1,
                     .scratch = scratch,
                     .scratch_size = sizeof scratch,
                     .check_text = check_text};
    Error e = {0};
    if (slm_params_read_json(t, body, &how, params, given, &e) == 0) return 0;
    openai_param_error(r, &e);
    return -1;
}

static const ParamTable no_fields = {"none", NULL, 0};
static const Param model_param[] = {PARAM_GROUP_AT(0, params_model)};
static const ParamTable model_fields = {"model", model_param, PARAMS_COUNT(model_param)}; /* a GET's "model" */

static const Param completion_params[] = {
    PARAM_GROUP_OF(CompletionFields, po, params_model),
    {.name = "prompt",
     .type = PARAM_STRING,
     .offset = offsetof(CompletionFields, prompt),
     .help = "the story's beginning: a string, a list of strings, a list of token ids or a list of such lists",
     .flags = PARAM_SERVED},
    {.name = "max-tokens",
     .type = PARAM_INT,
     .offset = offsetof(CompletionFields, max_tokens),
     .help = "most new tokens of each choice; 0: none (the prompt's log-probabilities with echo)",
     .min = 0,
     .max = GENERATE_SERVED_TOKENS,
     .def = 16},
    PARAM_GROUP_OF(CompletionFields, sampling, params_sampling),
    {.name = "n",
     .type = PARAM_INT,
     .offset = offsetof(CompletionFields, n),
     .help = "choices for each prompt (choice i draws with seed + i)",
     .min = 1,
     .max = OPENAI_MAX_CHOICES,
     .def = 1},
    {.name = "seed",
     .type = PARAM_INT,
     .offset = offsetof(CompletionFields, seed),
     .help = "sampling seed (-1 or left out: from the clock)",
     .min = -1,
     .max = INT_MAX,
     .def = -1},
    {.name = "stop",
     .type = PARAM_STRINGS,
     .offset = offsetof(CompletionFields, stop),
     .help = "end the text before this string (at most 16 of 256 bytes)",
     .flags = PARAM_NONEMPTY},
    {.name = "stream", .type = PARAM_BOOL, .offset = offsetof(CompletionFields, stream), .help = "server-sent events"},
    {.name = "logprobs",
     .type = PARAM_INT,
     .offset = offsetof(CompletionFields, logprobs),
     .help = "each token's log-probability and this many likeliest alternatives",
     .min = 0,
     .max = SAMPLER_MAX_N_PROBS},
    {.name = "echo", .type = PARAM_BOOL, .offset = offsetof(CompletionFields, echo), .help = "the prompt first"},
    {.name = "user", .type = PARAM_STRING, .offset = offsetof(CompletionFields, user), .help = "taken, not used"},
    PARAM_GROUP_OF(CompletionFields, po, params_ablation),
};
static const ParamTable completion_table = {"completions", completion_params, PARAMS_COUNT(completion_params)};

/* /tokenize and /detokenize as llama.cpp's server has them ("content",
 * "add_special", "with_pieces") and as vLLM's ("prompt", "add_special_tokens":
 * lm-evaluation-harness's remote tokenizer), with storylm's "model". */
typedef struct TokenizeFields {
    ProbeOptions po;
    const char *content, *prompt, *tokens;
    bool with_pieces, add_special, add_special_tokens;
} TokenizeFields;
static const Param tokenize_params[] = {
    PARAM_GROUP_OF(TokenizeFields, po, params_model),
    {.name = "content",
     .type = PARAM_STRING,
     .offset = offsetof(TokenizeFields, content),
     .help = "the text to cut into tokens",
     .flags = PARAM_TEXT},
    {.name = "prompt",
     .type = PARAM_STRING,
     .offset = offsetof(TokenizeFields, prompt),
     .help = "the same, as vLLM names it",
     .flags = PARAM_TEXT},
    {.name = "with-pieces",
     .type = PARAM_BOOL,
     .offset = offsetof(TokenizeFields, with_pieces),
     .help = "each token as {\"id\", \"piece\"}"},
    {.name = "add-special",
     .type = PARAM_BOOL,
     .offset = offsetof(TokenizeFields, add_special),
     .help = "[EOS] first, as the model reads a story"},
    {.name = "add-special-tokens",
     .type = PARAM_BOOL,
     .offset = offsetof(TokenizeFields, add_special_tokens),
     .help = "the same, as vLLM names it"},
};
static const ParamTable tokenize_table = {"tokenize", tokenize_params, PARAMS_COUNT(tokenize_params)};
static const Param detokenize_params[] = {
    PARAM_GROUP_OF(TokenizeFields, po, params_model),
    {.name = "tokens",
     .type = PARAM_STRING,
     .offset = offsetof(TokenizeFields, tokens),
     .help = "token ids",
     .flags = PARAM_SERVED | PARAM_REQUIRED},
};
static const ParamTable detokenize_table = {"detokenize", detokenize_params, PARAMS_COUNT(detokenize_params)};

/* body without its null fields: OpenAI's clients send null for "not given". */
static cJSON *without_nulls(const cJSON *body) {
    cJSON *copy = cJSON_Duplicate(body, 1), *v = copy ? copy->child : NULL;
    while (v) {
        cJSON *next = v->next;
        if (cJSON_IsNull(v)) cJSON_Delete(cJSON_DetachItemViaPointer(copy, v));
        v = next;
    }
    return copy;
}

/* ---- prompts ---- */

/* ids (a JSON list of whole numbers, each a token of t) into out. */
static int read_ids(const Tokenizer *t, const cJSON *list, IntVec *out, Reply *r) {
    const cJSON *x;
    Error e = {0};
    cJSON_ArrayForEach(x, list) {
        double v = cJSON_IsNumber(x) ? x->valuedouble : -1;
        if (!(v >= 0 && v < t->size) || v != floor(v)) { /* in range before any cast */
            char msg[160];
            snprintf(msg, sizeof msg, "\"prompt\": a token id must be a whole number from 0 to %d", t->size - 1);
            return openai_error(r, 400, msg, "prompt", NULL), -1;
        }
        if (slm_intvec_push(out, (int32_t)v, &e)) return openai_error(r, 500, "out of memory", NULL, NULL), -1;
    }
    return 0;
}

/* One prompt from v (a string, or a list of ids) into p: text and ids, bounded. */
static int read_prompt(const Tokenizer *t, const cJSON *v, Prompt *p, Reply *r) {
    Error e = {0};
    if (cJSON_IsString(v)) {
        size_t len = strlen(v->valuestring);
        if (len > SERVER_MAX_TEXT) return openai_error(r, 413, "\"prompt\" is longer than 64 KiB", "prompt", NULL), -1;
        if (!(p->text = strdup(v->valuestring))) return openai_error(r, 500, "out of memory", NULL, NULL), -1;
        if (slm_tokenizer_encode(t, p->text, len, &p->ids, &e)) return openai_param_error(r, &e), -1;
    } else {
        if (read_ids(t, v, &p->ids, r)) return -1;
        if (!(p->text = slm_tokenizer_decode(t, p->ids.data, p->ids.len, 1, &e))) return openai_param_error(r, &e), -1;
    }
    if (p->ids.len < SERVER_MAX_TOKENS) return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "\"prompt\" is %zu tokens; the limit is %d", p->ids.len, SERVER_MAX_TOKENS - 1);
    return openai_error(r, 413, msg, "prompt", NULL), -1;
}

/* "prompt": a string, strings, ids, or lists of ids (left out: the empty story's start). */
static int read_prompts(Completion *c, const cJSON *v, Reply *r) {
    const Tokenizer *t = &c->entry->ps.lm.tokenizer;
    static const char kinds[] = "\"prompt\" must be a string, a list of strings, a list of token ids or a list of "
                                "lists of token ids";
    cJSON *none = v ? NULL : cJSON_CreateString("");
    const cJSON *one = none ? none : v, *item;
    int list = cJSON_IsArray(one) && one->child && (cJSON_IsString(one->child) || cJSON_IsArray(one->child));
    int n = list ? cJSON_GetArraySize(one) : 1, rc = 0;
    if (!cJSON_IsString(one) && !cJSON_IsArray(one)) rc = openai_error(r, 400, kinds, "prompt", NULL);
    if (!rc && cJSON_IsArray(one) && !one->child)
        rc = openai_error(r, 400, "\"prompt\" is an empty list", "prompt", NULL);
    if (!rc && n * c->n > OPENAI_MAX_CHOICES) {
        char msg[160];
        snprintf(msg, sizeof msg, "%d prompts times n %d is more than %d choices", n, c->n, OPENAI_MAX_CHOICES);
        rc = openai_error(r, 400, msg, "prompt", NULL);
    }
    if (!rc && !(c->prompts = calloc((size_t)n, sizeof *c->prompts)))
        rc = openai_error(r, 500, "out of memory", NULL, NULL);
    for (item = list ? one->child : one; !rc && item; item = list ? item->next : NULL) {
        int same = list ? cJSON_IsArray(item) == cJSON_IsArray(one->child) : 1;
        if (!same || (list && !cJSON_IsString(item) && !cJSON_IsArray(item)))
            rc = openai_error(r, 400, kinds, "prompt", NULL);
        if (!rc) rc = read_prompt(t, item, &c->prompts[c->n_prompts++], r) ? r->status : 0;
    }
    cJSON_Delete(none);
    return rc ? -1 : 0;
}

/* ---- a completion's request ---- */

/* The stop strings (at most 16 of at most 256 bytes), copied into c. */
static int copy_stops(const StringList *stops, Completion *c, Reply *r) {
    if (stops->count > OPENAI_MAX_STOPS)
        return openai_error(r, 400, "\"stop\" must be a string or a list of at most 16 strings", "stop", NULL), -1;
    for (int i = 0; i < stops->count; i++) {
        if (strlen(stops->items[i]) > OPENAI_MAX_STOP_BYTES)
            return openai_error(r, 400, "each \"stop\" must be a string of 1 to 256 bytes", "stop", NULL), -1;
        if (!(c->stops[c->n_stops] = strdup(stops->items[i])))
            return openai_error(r, 500, "out of memory", NULL, NULL), -1;
        c->n_stops++;
    }
    return 0;
}

/* The request's sampling as OpenAI's: temperature 1 and top_p 1 unless given, nothing else. */
static void openai_sampling(SamplerSettings *st) {
    *st = slm_sampler_settings_default();
    st->temperature = 1, st->top_k = 0, st->top_p = 1, st->min_p = 0, st->repeat_penalty = 1;
}

/* The fields read (no model needed): what fuzz_request checks too. */
static int completion_fields(const cJSON *body, CompletionFields *f, Reply *r) {
    *f = (CompletionFields){0};
    slm_params_init(&completion_table, f);
    openai_sampling(&f->sampling);
    ParamsGiven given = {0};
    ParamList l;
    slm_params_list(&completion_table, &l);
    if (read_fields(&completion_table, body, f, &given, r)) return -1;
    f->logprobs_given = slm_params_given(&given, &l, "logprobs");
    return 0;
}

void completion_close(Completion *c) {
    for (int i = 0; i < c->n_prompts; i++) {
        free(c->prompts[i].text);
        slm_intvec_free(&c->prompts[i].ids);
    }
    free(c->prompts);
    for (int i = 0; i < c->n_stops; i++) free(c->stops[i]);
    if (c->entry) cache_release(&c->s->cache, c->entry);
    *c = (Completion){0};
}

/* The request read into c (4xx in OpenAI's shape on r, -1). */
static int completion_open(Server *s, const cJSON *given_body, Completion *c, bool *stream, Reply *r) {
    *c = (Completion){.s = s};
    CompletionFields f;
    cJSON *body = without_nulls(given_body);
    int rc = body ? completion_fields(body, &f, r) : openai_error(r, 500, "out of memory", NULL, NULL);
    if (!rc) rc = copy_stops(&f.stop, c, r);
    if (!rc && session_model_ablation(s, body, &c->entry, &c->ab, r)) {
        model_error(r);
        rc = -1;
    }
    if (!rc) c->n = f.n;
    if (!rc) rc = read_prompts(c, cJSON_GetObjectItemCaseSensitive(body, "prompt"), r);
    if (!rc) {
        const cJSON *model = cJSON_GetObjectItemCaseSensitive(body, "model"); /* read by the session */
        snprintf(c->model, sizeof c->model, "%s", cJSON_IsString(model) ? model->valuestring : s->dirs.default_model);
        c->max_tokens = f.max_tokens;
        c->logprobs = f.logprobs_given ? f.logprobs : -1;
        c->echo = f.echo;
        c->seed = (uint64_t)(f.seed < 0 ? slm_clock_seed() : f.seed);
        c->go = slm_view_generate_defaults();
        c->go.max_tokens = f.max_tokens;
        c->go.sampling = f.sampling;
        c->go.n_stops = c->n_stops;
        c->go.logprobs = c->logprobs >= 0;
        c->go.n_probs = c->logprobs > 0 ? c->logprobs : 0;
        c->go.names = entry_generate_names(c->entry);
        c->created = (long long)time(NULL);
        static const char digits[] = "0123456789abcdef";
        uint64_t x = c->seed * 0x9E3779B97F4A7C15ull ^ (uint64_t)(slm_clock_seconds() * 1e9);
        snprintf(c->id, sizeof c->id, "cmpl-");
        for (int i = 0; i < 16; i++, x >>= 4) c->id[5 + i] = digits[x & 15];
        c->id[21] = '\0';
        *stream = f.stream;
    }
    cJSON_Delete(body);
    if (rc) completion_close(c);
    return rc ? -1 : 0;
}

cJSON *completion_envelope(const Completion *c) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", c->id);
    cJSON_AddStringToObject(j, "object", "text_completion");
    cJSON_AddNumberToObject(j, "created", (double)c->created);
    cJSON_AddStringToObject(j, "model", c->model);
    cJSON_AddNumberToObject(j, "seed", (double)c->seed); /* storylm's: the seed drawn when none was given */
    cJSON_AddArrayToObject(j, "choices");
    return j;
}

/* ---- /v1/completions, not streamed ---- */

/* Choice k into choices: its text, logprobs (the prompt's, echo, from
 * *echo_lp: made once a prompt) and finish_reason; *tokens counts its new tokens. */
static int one_choice(const Completion *c, int k, cJSON *choices, cJSON **echo_lp, long long *tokens, Error *e) {
    const Prompt *p = &c->prompts[k / c->n];
    if (c->echo && c->logprobs >= 0 && k % c->n == 0) {
        cJSON_Delete(*echo_lp);
        *echo_lp = completion_logprobs_new();
        if (!*echo_lp || completion_prompt_logprobs(c, k / c->n, *echo_lp, e)) return -1;
    }
    ViewGenerator vg;
    if (completion_generator(c, k, &vg, e)) return -1;
    int rc;
    while ((rc = slm_view_generator_next(&vg, e)) > 0) {}
    char *text = rc == 0 ? slm_view_generator_text(&vg, e) : NULL;
    size_t pl = strlen(p->text);
    cJSON *o = text ? cJSON_CreateObject() : NULL, *lp = NULL;
    if (o) {
        cJSON_AddStringToObject(o, "text", text + (c->echo ? 0 : pl));
        cJSON_AddNumberToObject(o, "index", k);
        if (c->logprobs >= 0) lp = *echo_lp ? cJSON_Duplicate(*echo_lp, 1) : completion_logprobs_new();
        for (int i = 0; lp && i < vg.tokens; i++)
            if (completion_token_logprobs(c, &vg, i, c->echo ? pl : 0, lp, e)) cJSON_Delete(lp), lp = NULL;
        if (lp && completion_end_logprobs(&vg, strlen(text) - (c->echo ? 0 : pl), lp, e)) cJSON_Delete(lp), lp = NULL;
        cJSON_AddItemToObject(o, "logprobs", lp ? lp : cJSON_CreateNull());
        cJSON_AddStringToObject(o, "finish_reason", completion_finish(&vg));
        cJSON_AddItemToArray(choices, o);
    }
    *tokens += vg.tokens;
    free(text);
    slm_view_generator_free(&vg);
    return o && (c->logprobs < 0 || lp) ? 0 : -1;
}

static int api_completions(Server *s, const cJSON *body, Reply *r) {
    Completion c;
    bool stream = false;
    if (completion_open(s, body, &c, &stream, r)) return r->status;
    if (stream) return openai_stream(&c, r);
    cJSON *j = completion_envelope(&c), *echo_lp = NULL;
    long long prompt_tokens = 0, tokens = 0, fed = 0;
    Error e = {0};
    int rc = j ? 0 : FAIL(&e, NULL, "out of memory");
    for (int k = 0; !rc && k < c.n_prompts * c.n; k++) {
        rc = one_choice(&c, k, cJSON_GetObjectItemCaseSensitive(j, "choices"), &echo_lp, &tokens, &e);
        fed += (long long)c.prompts[k / c.n].ids.len * (1 + (c.echo && c.logprobs >= 0 && k % c.n == 0));
    }
    for (int p = 0; p < c.n_prompts; p++) prompt_tokens += (long long)c.prompts[p].ids.len;
    cJSON_Delete(echo_lp);
    if (rc) {
        cJSON_Delete(j);
        completion_close(&c);
        return openai_error(r, 500, e.message[0] ? e.message : "out of memory", NULL, NULL);
    }
    cJSON *usage = cJSON_AddObjectToObject(j, "usage");
    cJSON_AddNumberToObject(usage, "prompt_tokens", (double)prompt_tokens);
    cJSON_AddNumberToObject(usage, "completion_tokens", (double)tokens);
    cJSON_AddNumberToObject(usage, "total_tokens", (double)(prompt_tokens + tokens));
    if (s->metrics) metrics_tokens(s->metrics, fed, tokens);
    completion_close(&c);
    return reply_json(r, 200, j);
}

/* ---- the other routes ---- */

static int api_chat(Server *s, const cJSON *body, Reply *r) {
    (void)s, (void)body;
    cJSON *j = error_object(400,
                            "a story model has no chat format: it was trained on stories alone (no roles, no turns), "
                            "so it cannot answer messages honestly",
                            "POST /v1/completions with the story's beginning as \"prompt\"; the model writes on",
                            "messages", "chat_not_supported");
    return reply_json(r, 400, j);
}

static int api_v1_models(Server *s, const cJSON *body, Reply *r) {
    (void)body;
    cJSON *list = model_list(&s->dirs), *j = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(j, "data"), *m;
    cJSON_AddStringToObject(j, "object", "list");
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(list, "models")) {
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(m, "path");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", cJSON_IsString(path) ? path->valuestring : "");
        cJSON_AddStringToObject(o, "object", "model");
        cJSON_AddNumberToObject(o, "created", 0);
        cJSON_AddStringToObject(o, "owned_by", "storylm");
        cJSON_AddItemToArray(data, o);
    }
    cJSON_Delete(list);
    return reply_json(r, 200, j);
}

/* The model a tokenize request names, held (cache_release it). */
static int tokenize_model(Server *s, const cJSON *body, ModelEntry **m, Reply *r) {
    Ablation ab;
    if (session_model_ablation(s, body, m, &ab, r) == 0) return 0;
    model_error(r);
    return -1;
}

static int api_tokenize(Server *s, const cJSON *body, Reply *r) {
    TokenizeFields f = {0};
    ModelEntry *m;
    if (read_fields(&tokenize_table, body, &f, NULL, r)) return r->status;
    const char *text = f.content ? f.content : f.prompt;
    if (!text || (f.content && f.prompt))
        return openai_error(r, 400, "give the text as \"content\" (or \"prompt\"), once", "content", NULL);
    if (tokenize_model(s, body, &m, r)) return r->status;
    const Tokenizer *t = &m->ps.lm.tokenizer;
    IntVec ids = {0};
    Error e = {0};
    if (((f.add_special || f.add_special_tokens) && slm_intvec_push(&ids, t->eos_id, &e)) ||
        slm_tokenizer_encode(t, text, strlen(text), &ids, &e)) {
        openai_param_error(r, &e);
    } else if (ids.len >= SERVER_MAX_TOKENS) {
        openai_error(r, 413, "the text is more than 4095 tokens", f.content ? "content" : "prompt", NULL);
    } else {
        cJSON *j = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(j, "tokens");
        for (size_t i = 0; i < ids.len; i++) {
            cJSON *id = cJSON_CreateNumber(ids.data[i]), *o = f.with_pieces ? cJSON_CreateObject() : id;
            if (f.with_pieces) {
                cJSON_AddItemToObject(o, "id", id);
                cJSON_AddStringToObject(o, "piece", t->pieces[ids.data[i]]);
            }
            cJSON_AddItemToArray(list, o);
        }
        cJSON_AddNumberToObject(j, "count", (double)ids.len);
        cJSON_AddNumberToObject(j, "max_model_len", SERVER_MAX_TOKENS - 1);
        reply_json(r, 200, j);
    }
    slm_intvec_free(&ids);
    cache_release(&s->cache, m);
    return r->status;
}

/* GET /tokenizer_info (vLLM's): the end-of-text piece, which a story starts after. */
static int api_tokenizer_info(Server *s, const cJSON *body, Reply *r) {
    ModelEntry *m;
    if (tokenize_model(s, body, &m, r)) return r->status;
    const Tokenizer *t = &m->ps.lm.tokenizer;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "eos_token", t->pieces[t->eos_id]);
    cJSON_AddNumberToObject(j, "eos_token_id", t->eos_id);
    cJSON_AddNullToObject(j, "bos_token");
    cJSON_AddNullToObject(j, "pad_token");
    cJSON_AddNumberToObject(j, "vocab_size", t->size);
    cJSON_AddNumberToObject(j, "max_model_len", SERVER_MAX_TOKENS - 1);
    cache_release(&s->cache, m);
    return reply_json(r, 200, j);
}

static int api_detokenize(Server *s, const cJSON *body, Reply *r) {
    TokenizeFields f = {0};
    ModelEntry *m;
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(body, "tokens");
    if (read_fields(&detokenize_table, body, &f, NULL, r)) return r->status;
    if (!cJSON_IsArray(tokens)) return openai_error(r, 400, "\"tokens\" must be a list of token ids", "tokens", NULL);
    if (tokenize_model(s, body, &m, r)) return r->status;
    IntVec ids = {0};
    Error e = {0};
    char *text = NULL;
    if (read_ids(&m->ps.lm.tokenizer, tokens, &ids, r) == 0) {
        if (!(text = slm_tokenizer_decode(&m->ps.lm.tokenizer, ids.data, ids.len, 1, &e))) {
            openai_param_error(r, &e);
        } else {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "content", text); /* llama.cpp's name */
            cJSON_AddStringToObject(j, "prompt", text);  /* vLLM's */
            reply_json(r, 200, j);
        }
    } else {
        error_param(r, "tokens", NULL);
    }
    free(text);
    slm_intvec_free(&ids);
    cache_release(&s->cache, m);
    return r->status;
}

static int api_metrics(Server *s, const cJSON *body, Reply *r) {
    (void)body;
    if (!s->metrics)
        return reply_json(r, 404,
                          error_object(404, "no metrics: the server was started without --metrics",
                                       "start it with storylm serve --metrics", NULL, "not_found"));
    r->body = metrics_text(s->metrics);
    r->status = r->body ? 200 : 500;
    r->mime = "text/plain; version=0.0.4; charset=utf-8";
    return r->status;
}

/* ---- routing ---- */

typedef struct OpenAIRoute {
    const char *url;
    int post;
    int (*fn)(Server *, const cJSON *, Reply *);
    const ParamTable *fields; /* checked before fn (fn reads them again); NULL: fn reads its own */
} OpenAIRoute;
static const OpenAIRoute oa_routes[] = {
    {"/v1/models", 0, api_v1_models, &no_fields}, {"/v1/completions", 1, api_completions, NULL},
    {"/v1/chat/completions", 1, api_chat, NULL},  {"/tokenize", 1, api_tokenize, NULL},
    {"/detokenize", 1, api_detokenize, NULL},     {"/tokenizer_info", 0, api_tokenizer_info, &model_fields},
    {"/metrics", 0, api_metrics, &no_fields},
};
#define N_OA_ROUTES (sizeof oa_routes / sizeof oa_routes[0])

static const OpenAIRoute *find_route(const char *url) {
    for (size_t i = 0; i < N_OA_ROUTES; i++)
        if (strcmp(url, oa_routes[i].url) == 0) return &oa_routes[i];
    return NULL;
}

int openai_owns(const char *url) { return strncmp(url, "/v1/", 4) == 0 || find_route(url) != NULL; }

/* The route of url taking the method, or NULL with r (404, 405). */
static const OpenAIRoute *route_of(const char *url, int get, Reply *r) {
    const OpenAIRoute *rt = find_route(url);
    if (!rt) return openai_error(r, 404, "no such endpoint", NULL, "not_found"), NULL;
    if (rt->post == get)
        return openai_error(r, 405, rt->post ? "this endpoint takes POST with a JSON body" : "this endpoint takes GET",
                            NULL, NULL),
               NULL;
    return rt;
}

int openai_handle(Server *s, int get, const char *url, const cJSON *body, Reply *r) {
    const OpenAIRoute *rt = route_of(url, get, r);
    if (!rt) return r->status;
    if (rt->fields && read_fields(rt->fields, body, NULL, NULL, r)) return r->status;
    return rt->fn(s, body, r);
}

int openai_check_fields(const char *url, int get, const cJSON *body, Reply *r) {
    const OpenAIRoute *rt = route_of(url, get, r);
    if (!rt) return -1;
    if (rt->fields) return read_fields(rt->fields, body, NULL, NULL, r);
    if (rt->fn == api_chat) return api_chat(NULL, body, r), -1;
    TokenizeFields t = {0};
    if (rt->fn == api_tokenize) return read_fields(&tokenize_table, body, &t, NULL, r);
    if (rt->fn == api_detokenize) return read_fields(&detokenize_table, body, &t, NULL, r);
    CompletionFields f;
    cJSON *copy = without_nulls(body);
    int rc = copy ? completion_fields(copy, &f, r) : 0;
    if (!rc && f.stop.count > OPENAI_MAX_STOPS) rc = openai_error(r, 400, "too many stops", "stop", NULL);
    cJSON_Delete(copy);
    return rc ? -1 : 0;
}
