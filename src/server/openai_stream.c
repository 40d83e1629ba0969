/* POST /v1/completions with "stream": true: server-sent events in OpenAI's
 * shape, "data: {chunk}" a token (its text as far as it is settled, so the
 * chunks add up to the text the answer without stream gives, byte for
 * byte), the choices one after another, then "data: [DONE]". A token is
 * made when the client can take it (sse.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openai.h"
#include "sse.h"

typedef struct OpenAIStream {
    Sse sse; /* first: the writer's callbacks get the stream */
    Completion c;
    int k;       /* the choice being written */
    int started; /* its generator made (and the prompt echoed) */
    ViewGenerator vg;
    size_t shown; /* bytes of its story text sent (the prompt's counted) */
    int tokens_sent;
    long long fed, tokens; /* prompt tokens run, new tokens: for the metrics */
    cJSON *echo_lp;        /* the prompt's logprobs (echo), made once a prompt for its n choices */
} OpenAIStream;

/* A chunk of choice k: text, logprobs (taken; NULL: null), finish (NULL: null). */
static char *chunk(const OpenAIStream *st, const char *text, cJSON *lp, const char *finish) {
    cJSON *j = completion_envelope(&st->c), *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "text", text);
    cJSON_AddNumberToObject(o, "index", st->k);
    cJSON_AddItemToObject(o, "logprobs", lp ? lp : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "finish_reason", finish ? cJSON_CreateString(finish) : cJSON_CreateNull());
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(j, "choices"), o);
    return sse_event(NULL, j);
}

/* The choice's generator made; with echo, its prompt (and the prompt's logprobs) as the first chunk. */
static char *start_choice(OpenAIStream *st, Error *e) {
    const Completion *c = &st->c;
    const Prompt *p = &c->prompts[st->k / c->n];
    if (completion_generator(c, st->k, &st->vg, e)) return NULL;
    st->started = 1;
    st->tokens_sent = 0;
    st->shown = strlen(p->text);
    st->fed += (long long)p->ids.len;
    if (!c->echo) return NULL;
    if (c->logprobs >= 0 && st->k % c->n == 0) {
        cJSON_Delete(st->echo_lp);
        st->echo_lp = completion_logprobs_new();
        if (!st->echo_lp || completion_prompt_logprobs(c, st->k / c->n, st->echo_lp, e)) return NULL;
        st->fed += (long long)p->ids.len;
    }
    return chunk(st, p->text, st->echo_lp ? cJSON_Duplicate(st->echo_lp, 1) : NULL, NULL);
}

/* The choice's next token as a chunk (the text it settled), or its end. */
static char *next_chunk(OpenAIStream *st, Error *e) {
    ViewGenerator *vg = &st->vg;
    int rc = slm_view_generator_next(vg, e);
    if (rc == 0 && vg->tokens > st->tokens_sent) rc = 1; /* the token that wrote a stop string: its chunk first */
    if (rc < 0) return NULL;
    char *text = rc > 0 ? slm_view_generator_settled_text(vg, e) : slm_view_generator_text(vg, e);
    if (!text) return NULL;
    size_t len = strlen(text), from = st->shown < len ? st->shown : len;
    const Prompt *p = &st->c.prompts[st->k / st->c.n];
    size_t base = st->c.echo ? 0 : strlen(p->text);
    cJSON *lp = st->c.logprobs >= 0 ? completion_logprobs_new() : NULL;
    if (lp && (rc > 0 ? completion_token_logprobs(&st->c, vg, st->tokens_sent, st->c.echo ? strlen(p->text) : 0, lp, e)
                      : completion_end_logprobs(vg, len - base, lp, e))) {
        cJSON_Delete(lp);
        free(text);
        return NULL;
    }
    char *out = chunk(st, text + from, lp, rc > 0 ? NULL : completion_finish(vg));
    if (len > st->shown) st->shown = len;
    free(text);
    st->tokens_sent += rc > 0;
    if (rc == 0) { /* the choice is over: the next one starts at the next call */
        st->tokens += vg->tokens;
        slm_view_generator_free(vg);
        st->started = 0;
        st->k++;
    }
    return out;
}

/* The next event: a chunk, an error, or [DONE]. */
static void next_event(Sse *sse) {
    OpenAIStream *st = (OpenAIStream *)sse;
    Error e = {0};
    char *out = NULL;
    if (st->k == st->c.n_prompts * st->c.n) {
        out = strdup("data: [DONE]\n\n");
        sse->ended = 1;
    } else if (!st->started) {
        out = start_choice(st, &e);
        if (!out && st->started && !e.message[0]) out = next_chunk(st, &e); /* no echo: its first token */
    } else {
        out = next_chunk(st, &e);
    }
    if (!out && !sse->ended) { /* an error ends the stream: its event, then nothing */
        cJSON *j = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(j, "error");
        cJSON_AddStringToObject(o, "message", e.message[0] ? e.message : "out of memory");
        cJSON_AddStringToObject(o, "type", "server_error");
        cJSON_AddNullToObject(o, "param");
        cJSON_AddNullToObject(o, "code");
        out = sse_event(NULL, j);
        sse->ended = 1;
    }
    sse_set(sse, out);
}

static void free_stream(Sse *sse) {
    OpenAIStream *st = (OpenAIStream *)sse;
    if (st->started) st->tokens += st->vg.tokens;
    if (st->c.s->metrics) metrics_tokens(st->c.s->metrics, st->fed, st->tokens);
    slm_view_generator_free(&st->vg);
    completion_close(&st->c);
    cJSON_Delete(st->echo_lp);
    free(st);
}

int openai_stream(Completion *c, Reply *r) {
    OpenAIStream *st = calloc(1, sizeof *st);
    if (!st) {
        completion_close(c);
        return openai_error(r, 500, "out of memory", NULL, NULL);
    }
    st->c = *c; /* taken */
    st->sse.next = next_event, st->sse.free = free_stream;
    if (!(r->response = sse_response(&st->sse))) return openai_error(r, 500, "out of memory", NULL, NULL);
    r->status = 200;
    return 200;
}
