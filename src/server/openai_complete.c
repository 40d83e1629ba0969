/* A completion's choices and their legacy logprobs: the prompt's tokens'
 * log-probabilities from one run of [EOS] and the prompt through the model
 * (eval --text's pass: the same numbers), the new tokens' from the
 * generator (generate --json's). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "openai.h"
#include "storylm/probes.h"
#include "storylm/report.h"

int completion_generator(const Completion *c, int k, ViewGenerator *vg, Error *e) {
    const Prompt *p = &c->prompts[k / c->n];
    ViewGenerateOptions go = c->go;
    go.seed = c->seed + (uint64_t)(k % c->n); /* as generate --samples: sample i draws with seed + i */
    go.stops = (const char *const *)c->stops; /* c's own (a stream holds a copy of the request's Completion) */
    return slm_view_generator_init_ids(vg, &c->entry->ps.lm, &c->ab, p->text, &p->ids, &go, e);
}

const char *completion_finish(const ViewGenerator *vg) {
    return strcmp(vg->stop_reason, "max_tokens") == 0 ? "length" : "stop";
}

cJSON *completion_logprobs_new(void) {
    cJSON *j = cJSON_CreateObject();
    static const char *const keys[] = {"tokens", "token_logprobs", "top_logprobs", "text_offset"};
    for (int i = 0; j && i < 4; i++)
        if (!cJSON_AddArrayToObject(j, keys[i])) cJSON_Delete(j), j = NULL;
    return j;
}

/* Appends one token to lp: its piece, log-probability (null: none), top
 * alternatives (null: none) and offset. */
static int add_token(cJSON *lp, const char *piece, cJSON *logprob, cJSON *top, size_t offset) {
    cJSON *v[4] = {cJSON_CreateString(piece), logprob, top, cJSON_CreateNumber((double)offset)};
    static const char *const keys[] = {"tokens", "token_logprobs", "top_logprobs", "text_offset"};
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        if (!v[i]) v[i] = i == 1 || i == 2 ? cJSON_CreateNull() : NULL;
        ok = ok && v[i] && cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(lp, keys[i]), v[i]);
    }
    return ok ? 0 : -1;
}

/* Bytes of the decoding of ids[0..n) (as the story's text is decoded). */
static size_t decoded_len(const Tokenizer *t, const int32_t *ids, size_t n) {
    char *text = slm_tokenizer_decode(t, ids, n, 1, NULL);
    size_t len = text ? strlen(text) : 0;
    free(text);
    return len;
}

/* The n likeliest tokens of a row of logits (V), likeliest first (ties: the
 * lower id): one pass, each token that beats the n-th kept put in its place. */
static void top_ids(const float *row, int V, int n, int32_t *out) {
    int kept = 0;
    for (int v = 0; n > 0 && v < V; v++) {
        if (kept == n && !(row[v] > row[out[n - 1]])) continue;
        int at = kept < n ? kept++ : n - 1;
        while (at > 0 && row[v] > row[out[at - 1]]) out[at] = out[at - 1], at--;
        out[at] = v;
    }
}

/* A prompt token's log-probability as eval --json prints its loss (9 digits
 * of a float, 17 of a double when needed): the same text, negated. */
static cJSON *report_number(double x) {
    char buf[40];
    if (!isfinite(x)) return cJSON_CreateNull();
    slm_report_format_number(x, buf, sizeof buf);
    cJSON *n = cJSON_CreateRaw(buf);
    if (n) n->valuedouble = x;
    return n;
}

/* {piece: logprob} of the n likeliest at position p of a run (acts). */
static cJSON *run_top(const Activations *a, const Tokenizer *t, int p, int n) {
    int32_t ids[SAMPLER_MAX_N_PROBS];
    int V = a->cfg.vocab_size;
    n = n < V ? n : V;
    top_ids(a->logits + (size_t)p * V, V, n, ids);
    cJSON *o = cJSON_CreateObject();
    for (int j = 0; o && j < n; j++)
        cJSON_AddItemToObject(o, t->pieces[ids[j]], report_number(-slm_probe_loss(a, p, ids[j])));
    return o;
}

int completion_prompt_logprobs(const Completion *c, int pi, cJSON *lp, Error *e) {
    const Prompt *p = &c->prompts[pi];
    const LoadedModel *lm = &c->entry->ps.lm;
    const Tokenizer *t = &lm->tokenizer;
    IntVec ids = {0};
    ProbeRunner run = {0};
    int T = (int)p->ids.len + 1, rc = slm_intvec_push(&ids, t->eos_id, e);
    for (size_t i = 0; !rc && i < p->ids.len; i++) rc = slm_intvec_push(&ids, p->ids.data[i], e);
    if (!rc && p->ids.len > 0) /* eval --text's pass: [EOS] and the tokens, whole, with the request's ablation */
        rc = slm_probe_runner_init(&run, &lm->model, T, e) || slm_probe_run(&run, ids.data, T, &c->ab, e);
    size_t pl = strlen(p->text);
    for (int k = 0; !rc && k + 1 < T; k++) { /* position k predicts the prompt's token k */
        int32_t id = ids.data[k + 1];
        size_t at = decoded_len(t, p->ids.data, (size_t)k);
        cJSON *logprob = k ? report_number(-slm_probe_loss(&run.acts, k, id)) : NULL;
        cJSON *top = k ? run_top(&run.acts, t, k, c->logprobs) : NULL;
        if (add_token(lp, t->pieces[id], logprob, top, at < pl ? at : pl)) rc = FAIL(e, NULL, "out of memory");
    }
    if (p->ids.len > 0) slm_probe_runner_free(&run);
    slm_intvec_free(&ids);
    return rc ? -1 : 0;
}

/* Where new token i's text starts in the continuation (after the prompt as typed). */
static size_t continuation_offset(const ViewGenerator *vg, int i) {
    if (i == 0) return 0;
    const Tokenizer *t = &vg->lm->tokenizer;
    size_t P = (size_t)vg->prompt_tokens, head = decoded_len(t, vg->ids.data, P);
    size_t first = decoded_len(t, vg->ids.data, P + 1), at = decoded_len(t, vg->ids.data, P + (size_t)i);
    size_t pl = strlen(vg->prompt), strip = pl && isspace((unsigned char)vg->prompt[pl - 1]) && first > head;
    size_t first_len = first > head + strip ? first - head - strip : 0; /* the prompt's own space: not written again */
    return first_len + (at > first ? at - first : 0);
}

int completion_end_logprobs(ViewGenerator *vg, size_t offset, cJSON *lp, Error *e) {
    if (strcmp(vg->stop_reason, "end") != 0) return 0;
    const Tokenizer *t = &vg->lm->tokenizer;
    int32_t ids[SAMPLER_MAX_N_PROBS];
    float lps[SAMPLER_MAX_N_PROBS];
    float eos = slm_sampler_logprobs(&vg->smp, vg->logits, t->eos_id, vg->n_probs, ids, lps); /* draws nothing */
    cJSON *top = cJSON_CreateObject();
    for (int j = 0; top && j < vg->n_probs; j++) cJSON_AddNumberToObject(top, t->pieces[ids[j]], lps[j]);
    if (add_token(lp, t->pieces[t->eos_id], cJSON_CreateNumber(eos), top, offset))
        return FAIL(e, NULL, "out of memory");
    return 0;
}

int completion_token_logprobs(const Completion *c, const ViewGenerator *vg, int i, size_t base, cJSON *lp, Error *e) {
    const Tokenizer *t = &vg->lm->tokenizer;
    int32_t id = vg->ids.data[vg->prompt_tokens + i];
    cJSON *top = cJSON_CreateObject();
    const TokenAlternative *alt = vg->n_probs ? slm_view_generator_alternatives(vg, i) : NULL;
    for (int j = 0; top && j < vg->n_probs; j++) cJSON_AddNumberToObject(top, t->pieces[alt[j].id], alt[j].logprob);
    (void)c;
    cJSON *logprob = cJSON_CreateNumber(slm_view_generator_logprob(vg, i));
    if (add_token(lp, t->pieces[id], logprob, top, base + continuation_offset(vg, i)))
        return FAIL(e, NULL, "out of memory");
    return 0;
}
