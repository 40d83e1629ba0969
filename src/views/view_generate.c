/* Writing on, token by token: see views.h. Moved from storylm generate so
 * the server streams exactly the text the verb prints. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "storylm/data_files.h"
#include "storylm/text.h"
#include "storylm/fileio.h"
#include "storylm/generate.h"
#include "storylm/sample.h"
#include "storylm/views.h"

static int all_finite(const float *x, int n) {
    float poison = 0.0f; /* x * 0 is NaN exactly when x is inf or NaN: one vectorised pass */
#pragma omp simd reduction(+ : poison)
    for (int i = 0; i < n; i++) poison += x[i] * 0.0f;
    return poison == poison;
}

/* Feeds [EOS] and ids (the prompt) to sample slot of g; returns its logits. */
static const float *feed_prompt(GeneratorBatch *g, int slot, int32_t eos, const IntVec *ids) {
    slm_generator_batch_feed(g, &slot, &eos, 1);
    for (size_t i = 0; i < ids->len; i++) slm_generator_batch_feed(g, &slot, &ids->data[i], 1);
    return slm_generator_batch_logits(g, slot);
}

ViewGenerateOptions slm_view_generate_defaults(void) {
    GenerateParams p = {0};
    slm_params_init(&params_generate, &p);
    p.go.threads = 1;
    return p.go;
}

void slm_view_generate_settings_json(cJSON *j, const ViewGenerateOptions *go) {
    const SamplerSettings *st = &go->sampling;
    cJSON_AddNumberToObject(j, "max_tokens", go->max_tokens);
    cJSON_AddNumberToObject(j, "temperature", st->temperature);
    cJSON_AddNumberToObject(j, "top_k", st->top_k);
    cJSON_AddNumberToObject(j, "top_p", st->top_p);
    cJSON_AddNumberToObject(j, "min_p", st->min_p);
    cJSON_AddNumberToObject(j, "repeat_penalty", st->repeat_penalty);
    cJSON_AddNumberToObject(j, "repeat_last_n", st->repeat_last_n);
}

cJSON *slm_view_generate_defaults_json(void) {
    ViewGenerateOptions go = slm_view_generate_defaults();
    cJSON *j = cJSON_CreateObject();
    slm_view_generate_settings_json(j, &go);
    return j;
}

int slm_view_generate_n_probs(const ViewGenerateOptions *go, int vocab_size) {
    return go->n_probs < vocab_size ? go->n_probs : vocab_size; /* the sampler has no more to give */
}

/* What every story needs but its tokens: the prompt's ids (copied from
 * prompt_ids, else encoded) and its sampler, seeded with seed. */
static int story_setup(ViewGenerator *vg, const LoadedModel *lm, const char *prompt, const IntVec *prompt_ids,
                       const ViewGenerateOptions *go, uint64_t seed, Error *e) {
    *vg = (ViewGenerator){.lm = lm,
                          .prompt = prompt,
                          .names = go->names,
                          .seed = seed,
                          .max_tokens = go->max_tokens,
                          .stop_reason = "max_tokens",
                          .stops = go->stops,
                          .n_stops = go->n_stops,
                          .logprobs = go->logprobs || go->n_probs > 0,
                          .n_probs = slm_view_generate_n_probs(go, lm->model.cfg.vocab_size)};
    if (slm_view_generate_check(go, e)) return -1;
    int rc = prompt_ids ? slm_intvec_reserve(&vg->ids, prompt_ids->len + 1, e)
                        : slm_text_check(prompt, strlen(prompt), "the prompt", e) ||
                              slm_tokenizer_encode(&lm->tokenizer, prompt, strlen(prompt), &vg->ids, e);
    if (!rc && prompt_ids) {
        memcpy(vg->ids.data, prompt_ids->data, prompt_ids->len * sizeof(int32_t));
        vg->ids.len = prompt_ids->len;
    }
    if (!rc) rc = slm_sampler_init_with(&vg->smp, lm->model.cfg.vocab_size, &go->sampling, seed, e);
    vg->smp.kernels = go->kernels;
    if (rc) slm_intvec_free(&vg->ids);
    vg->prompt_tokens = (int)vg->ids.len;
    return rc;
}

int slm_view_generator_init(ViewGenerator *vg, const LoadedModel *lm, const Ablation *ab, const char *prompt,
                            const ViewGenerateOptions *go, Error *e) {
    if (story_setup(vg, lm, prompt, NULL, go, go->seed, e)) return -1;
    if (slm_generator_batch_init_at(&vg->own, go->kernels, &lm->model, ab, 1, e) ||
        slm_generator_batch_set_precision(&vg->own, go->precision, e) ||
        slm_view_steer(&vg->own, &lm->model, go->steers, go->n_steers, e)) {
        slm_view_generator_free(vg);
        return -1;
    }
    vg->logits = feed_prompt(&vg->own, 0, lm->tokenizer.eos_id, &vg->ids);
    return 0;
}

int slm_view_generator_init_ids(ViewGenerator *vg, const LoadedModel *lm, const Ablation *ab, const char *prompt,
                                const IntVec *ids, const ViewGenerateOptions *go, Error *e) {
    for (size_t i = 0; i < ids->len; i++)
        if (ids->data[i] < 0 || ids->data[i] >= lm->tokenizer.size)
            return FAIL(e, "give ids from this vocabulary", "token id %d is out of range (the vocabulary has %d)",
                        ids->data[i], lm->tokenizer.size);
    if (story_setup(vg, lm, prompt, ids, go, go->seed, e)) return -1;
    if (slm_generator_batch_init_at(&vg->own, go->kernels, &lm->model, ab, 1, e) ||
        slm_generator_batch_set_precision(&vg->own, go->precision, e) ||
        slm_view_steer(&vg->own, &lm->model, go->steers, go->n_steers, e)) {
        slm_view_generator_free(vg);
        return -1;
    }
    vg->logits = feed_prompt(&vg->own, 0, lm->tokenizer.eos_id, &vg->ids);
    return 0;
}

static char *story_text(const ViewGenerator *vg, size_t n, Error *e);

/* Keeps the log-probability of token (drawn from vg->logits) and its alternatives. */
static int record_logprob(ViewGenerator *vg, int token, Error *e) {
    TokenAlternative alt[SAMPLER_MAX_N_PROBS];
    int32_t ids[SAMPLER_MAX_N_PROBS];
    float lps[SAMPLER_MAX_N_PROBS];
    float lp = slm_sampler_logprobs(&vg->smp, vg->logits, token, vg->n_probs, ids, lps);
    for (int j = 0; j < vg->n_probs; j++) alt[j] = (TokenAlternative){ids[j], lps[j]};
    return slm_bytevec_append(&vg->logprob, &lp, sizeof lp, e) ||
           (vg->n_probs && slm_bytevec_append(&vg->alternatives, alt, (size_t)vg->n_probs * sizeof alt[0], e));
}

/* Where the first stop string starts in text (len bytes), looking only at
 * what was written (from the prompt's end); SIZE_MAX if none. */
static size_t first_stop(const ViewGenerator *vg, const char *text, size_t len, const char **which) {
    size_t from = strlen(vg->prompt), best = SIZE_MAX;
    if (from > len) return SIZE_MAX;
    for (int i = 0; i < vg->n_stops; i++) {
        const char *at = strstr(text + from, vg->stops[i]);
        if (at && (size_t)(at - text) < best) best = (size_t)(at - text), *which = vg->stops[i];
    }
    return best;
}

/* Bytes of text (len) safe to show before the story ends: up to the first
 * byte from which the rest is the start of a stop string (a token to come
 * may complete it, and the text must then end before it). */
static size_t before_partial_stop(const ViewGenerator *vg, const char *text, size_t len) {
    size_t longest = 0, from = strlen(vg->prompt);
    for (int k = 0; k < vg->n_stops; k++) longest = strlen(vg->stops[k]) > longest ? strlen(vg->stops[k]) : longest;
    if (len > from + longest) from = len - longest; /* a partial stop is shorter than its string */
    for (size_t i = from; i < len; i++)
        for (int k = 0; k < vg->n_stops; k++)
            if (strncmp(text + i, vg->stops[k], len - i) == 0) return i;
    return len;
}

/* After a new token: ends the story when its text now holds a stop string
 * (which may span the new token and the ones before). 1: ended, 0: goes on. */
static int story_stopped(ViewGenerator *vg, Error *e) {
    if (!vg->n_stops) return 0;
    char *text = story_text(vg, vg->ids.len, e);
    if (!text) return -1;
    const char *which = NULL;
    size_t at = first_stop(vg, text, strlen(text), &which);
    free(text);
    if (at == SIZE_MAX) return 0;
    vg->stop_reason = "stop";
    vg->stop = which;
    vg->stop_at = at;
    return vg->finished = 1;
}

/* The next token of the story, drawn but not yet fed: 1 (*next), 0
 * finished (vg->stop_reason), -1 error. */
static int story_pick(ViewGenerator *vg, int32_t *next, Error *e) {
    const LoadedModel *lm = vg->lm;
    if (vg->finished || vg->tokens >= vg->max_tokens) return vg->finished = 1, 0;
    if (!all_finite(vg->logits, lm->model.cfg.vocab_size)) /* a damaged model: say so rather than write noise */
        return FAIL(e, "train or save the model again (storylm info counts NaN and infinite weights)",
                    "'%s' gives NaN or infinite logits at token %zu: its weights hold NaN, infinite or huge numbers",
                    lm->path, vg->ids.len);
    int token = slm_sampler_sample_story(&vg->smp, vg->logits, vg->ids.data, (int)vg->ids.len);
    if (token == lm->tokenizer.eos_id) {
        vg->stop_reason = "end";
        return vg->finished = 1, 0;
    }
    if (vg->logprobs && record_logprob(vg, token, e)) return -1;
    if (slm_intvec_push(&vg->ids, token, e)) return -1;
    vg->tokens++;
    int stopped = story_stopped(vg, e);
    if (stopped) return stopped < 0 ? -1 : 0; /* the token that wrote the stop string is kept, not fed */
    *next = token;
    return 1;
}

float slm_view_generator_logprob(const ViewGenerator *vg, int i) {
    float lp;
    memcpy(&lp, vg->logprob.data + (size_t)i * sizeof lp, sizeof lp);
    return lp;
}

const TokenAlternative *slm_view_generator_alternatives(const ViewGenerator *vg, int i) {
    return (const TokenAlternative *)(const void *)vg->alternatives.data + (size_t)i * vg->n_probs;
}

int slm_view_generator_next(ViewGenerator *vg, Error *e) {
    int32_t next;
    int rc = story_pick(vg, &next, e);
    if (rc > 0) {
        GeneratorBatch *g = vg->shared ? vg->shared : &vg->own;
        slm_generator_batch_feed(g, &vg->slot, &next, 1);
        vg->logits = slm_generator_batch_logits(g, vg->slot);
    }
    return rc;
}

/* {"piece", "id"} and, when lp is not NULL, "logprob": *lp. */
static cJSON *piece_json(const Tokenizer *t, int32_t id, const float *lp) {
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "piece", t->pieces[id]) || !cJSON_AddNumberToObject(o, "id", id) ||
              (lp && !cJSON_AddNumberToObject(o, "logprob", *lp)))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *slm_view_generator_token_json(const ViewGenerator *vg, int i) {
    const Tokenizer *t = &vg->lm->tokenizer;
    float lp = vg->logprobs ? slm_view_generator_logprob(vg, i) : 0.0f;
    cJSON *o = piece_json(t, vg->ids.data[vg->prompt_tokens + i], vg->logprobs ? &lp : NULL);
    if (!o || !vg->n_probs) return o;
    cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
    const TokenAlternative *alt = slm_view_generator_alternatives(vg, i);
    for (int j = 0; top && j < vg->n_probs; j++) {
        cJSON *a = piece_json(t, alt[j].id, &alt[j].logprob);
        if (!a)
            top = NULL;
        else
            cJSON_AddItemToArray(top, a);
    }
    if (!top) cJSON_Delete(o);
    return top ? o : NULL;
}

cJSON *slm_view_tokens_logprobs_json(const ViewGenerator *vg) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < vg->tokens; i++) {
        cJSON *o = slm_view_generator_token_json(vg, i);
        if (!o) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* ---- the text ------------------------------------------------------------------- */

static int is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
/* After these a capital says nothing (as slm_names_learn reads capitals). */
static int starts_sentence(char c) {
    return c == '.' || c == '!' || c == '?' || c == '"' || c == '\n' || c == ':' || (unsigned char)c >= 0x80;
}

/* Did the prompt write word (lower-case, n letters) as a name: with a
 * capital where no sentence starts, or at a sentence start when names never
 * saw it (an invented name: common words that start sentences are seen). */
static int prompt_names_it(const char *prompt, const char *word, size_t n, const NameList *names) {
    int sentence_start = 1;
    for (const char *p = prompt; *p;) {
        if (!is_letter(*p)) {
            sentence_start |= starts_sentence(*p++);
            continue;
        }
        const char *w = p;
        while (is_letter(*p)) p++;
        if ((size_t)(p - w) == n && isupper((unsigned char)w[0]) && strncasecmp(w, word, n) == 0 &&
            (!sentence_start || slm_names_count(names, word) == 0))
            return 1;
        sentence_start = 0;
    }
    return 0;
}

/* Gives the words of text that are names a capital (names: views.h); skip_first:
 * the first word goes on a word of the prompt, which keeps what was typed. */
static void capitalize_names(char *text, int skip_first, const char *prompt, const NameList *names) {
    for (char *p = text; *p;) {
        if (!is_letter(*p)) {
            p++;
            continue;
        }
        char *w = p, low[64];
        while (is_letter(*p)) p++;
        size_t n = (size_t)(p - w);
        if ((skip_first && w == text) || n >= sizeof low) continue;
        for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)w[i]);
        low[n] = '\0';
        if (slm_names_is_name(names, low) || prompt_names_it(prompt, low, n, names))
            w[0] = (char)toupper((unsigned char)w[0]);
    }
}

/* The decoding of all n ids past that of the prompt's: the decoder
 * capitalises sentence starts and spaces words by what comes before them. */
char *slm_view_story_text(const Tokenizer *t, const char *prompt, const int32_t *ids, size_t n_prompt, size_t n,
                          const NameList *names, Error *e) {
    char *all = slm_tokenizer_decode(t, ids, n, 1, e);
    char *head = all ? slm_tokenizer_decode(t, ids, n_prompt, 1, e) : NULL;
    char *out = NULL;
    if (head) {
        size_t hl = strlen(head), pl = strlen(prompt);
        const char *cont = strncmp(all, head, hl) == 0 ? all + hl : all;
        if (pl && isspace((unsigned char)prompt[pl - 1])) /* the prompt's own space (or newline) does */
            while (*cont == ' ') cont++;
        size_t cl = strlen(cont);
        if ((out = xmalloc(pl + cl + 1, e))) {
            memcpy(out, prompt, pl);
            memcpy(out + pl, cont, cl + 1);
            if (names)
                capitalize_names(out + pl, pl && is_letter(prompt[pl - 1]), prompt, names);
            else
                slm_view_recapitalize(out + pl, prompt);
        }
    }
    free(all);
    free(head);
    return out;
}

static char *story_text(const ViewGenerator *vg, size_t n, Error *e) {
    return slm_view_story_text(&vg->lm->tokenizer, vg->prompt, vg->ids.data, (size_t)vg->prompt_tokens, n, vg->names,
                               e);
}

/* text (len bytes) cut where slm_view_generator_text says. */
static size_t text_kept(const ViewGenerator *vg, const char *text, size_t len) {
    if (vg->stop) return vg->stop_at < len ? vg->stop_at : len;
    return vg->finished || !vg->n_stops ? len : before_partial_stop(vg, text, len);
}

char *slm_view_generator_text(const ViewGenerator *vg, Error *e) {
    char *text = story_text(vg, vg->ids.len, e);
    if (text) text[text_kept(vg, text, strlen(text))] = '\0';
    return text;
}

/* How many ids are settled: all when finished, else up to the last word,
 * which a "##" piece may still go on (never fewer than the prompt's). */
static size_t settled_ids(const ViewGenerator *vg) {
    size_t k = vg->ids.len;
    if (vg->finished) return k;
    const Tokenizer *t = &vg->lm->tokenizer;
    while (k > (size_t)vg->prompt_tokens && strncmp(t->pieces[vg->ids.data[k - 1]], "##", 2) == 0) k--;
    if (k > (size_t)vg->prompt_tokens) k--;
    return k;
}

char *slm_view_generator_settled_text(const ViewGenerator *vg, Error *e) {
    char *text = story_text(vg, settled_ids(vg), e);
    if (text) text[text_kept(vg, text, strlen(text))] = '\0';
    return text;
}

void slm_view_generator_free(ViewGenerator *vg) {
    slm_sampler_free(&vg->smp);
    slm_generator_batch_free(&vg->own);
    slm_intvec_free(&vg->ids);
    slm_bytevec_free(&vg->logprob);
    slm_bytevec_free(&vg->alternatives);
    *vg = (ViewGenerator){0};
}

int slm_view_generate(const LoadedModel *lm, const Ablation *ab, const char *prompt, const ViewGenerateOptions *go,
                      char **text, Error *e) {
    ViewGenerator vg;
    *text = NULL;
    if (slm_view_generator_init(&vg, lm, ab, prompt, go, e)) return -1;
    int rc;
    while ((rc = slm_view_generator_next(&vg, e)) > 0) {}
    if (!rc) *text = slm_view_generator_text(&vg, e);
    slm_view_generator_free(&vg);
    return rc || !*text ? -1 : 0;
}

/* Words that start sentences with a capital without being names ("Her mom
 * smiled" must not give "in Her pocket" later). */
static int common_sentence_word(const char *w, size_t n) {
    static const char *const words[] = {
        "the",   "a",       "an",    "he",    "she",   "it",    "they",     "we",      "i",     "you",
        "her",   "his",     "him",   "them",  "their", "our",   "my",       "your",    "its",   "this",
        "that",  "these",   "those", "there", "then",  "once",  "one",      "when",    "but",   "and",
        "so",    "if",      "as",    "at",    "in",    "on",    "to",       "with",    "after", "before",
        "while", "because", "what",  "where", "who",   "why",   "how",      "yes",     "no",    "oh",
        "every", "some",    "all",   "now",   "soon",  "today", "suddenly", "finally", "later", "mom",
        "dad",   "mommy",   "daddy", "let",   "can",   "do",    "look",     "come",    "thank"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i]) == n && strncasecmp(w, words[i], n) == 0) return 1;
    return 0;
}

/* The tokenizer lower-cases everything; words the prompt wrote with a capital
 * (its names, usually) get their capital back wherever they come again.
 * Without a name list only (the server's generation). */
void slm_view_recapitalize(char *text, const char *prompt) {
    for (const char *p = prompt; *p;) {
        while (*p && !isalpha((unsigned char)*p)) p++;
        const char *w = p;
        while (*p && isalnum((unsigned char)*p)) p++;
        size_t n = (size_t)(p - w);
        if (n < 2 || !isupper((unsigned char)w[0]) || common_sentence_word(w, n)) continue;
        for (char *t = text; *t; t++) {
            if (strncasecmp(t, w, n) != 0 || (t > text && isalnum((unsigned char)t[-1])) ||
                isalnum((unsigned char)t[n]))
                continue;
            t[0] = (char)toupper((unsigned char)t[0]);
        }
    }
}

/* ---- several stories at once --------------------------------------------------- */

int slm_view_batch_init(ViewBatch *vb, const LoadedModel *lm, const Ablation *ab, const char *prompt,
                        const ViewGenerateOptions *go, int n, Error *e) {
    *vb = (ViewBatch){0};
    IntVec ids = {0};
    if (n < 1) return FAIL(e, "give --samples 1 or more", "%d samples asked for", n);
    if (slm_text_check(prompt, strlen(prompt), "the prompt", e) ||
        slm_tokenizer_encode(&lm->tokenizer, prompt, strlen(prompt), &ids, e))
        return -1;
    int ok = !slm_generator_batch_init_at(&vb->gen, go->kernels, &lm->model, ab, n, e) &&
             !slm_generator_batch_set_precision(&vb->gen, go->precision, e) &&
             !slm_view_steer(&vb->gen, &lm->model, go->steers, go->n_steers, e) &&
             (vb->samples = xcalloc((size_t)n, sizeof *vb->samples, e)) &&
             (vb->which = xcalloc((size_t)n, sizeof(int), e)) && (vb->next = xcalloc((size_t)n, sizeof(int32_t), e));
    int threads = go->threads < n ? go->threads : n;
    if (ok && threads > 1 && (ok = !slm_workers_init(&vb->workers, threads, e))) {
        vb->has_workers = 1;
        slm_generator_batch_use_workers(&vb->gen, &vb->workers);
    }
    for (int i = 0; ok && i < n; i++, vb->n++) { /* the samples draw one after the other: in one scratch */
        ok = !story_setup(&vb->samples[i], lm, prompt, &ids, go, go->seed + (uint64_t)i, e);
        if (ok && i) slm_sampler_share_scratch(&vb->samples[i].smp, &vb->samples[0].smp);
    }
    if (ok) { /* the prompt fed once, for every sample */
        feed_prompt(&vb->gen, 0, lm->tokenizer.eos_id, &ids);
        for (int i = 0; i < n; i++) {
            if (i) slm_generator_batch_copy(&vb->gen, 0, i);
            vb->samples[i].shared = &vb->gen;
            vb->samples[i].slot = i;
            vb->samples[i].logits = slm_generator_batch_logits(&vb->gen, i);
        }
    }
    slm_intvec_free(&ids);
    if (!ok) slm_view_batch_free(vb);
    return ok ? 0 : -1;
}

void slm_view_batch_free(ViewBatch *vb) {
    for (int i = 0; i < vb->n; i++) slm_view_generator_free(&vb->samples[i]);
    free(vb->samples);
    free(vb->which);
    free(vb->next);
    slm_generator_batch_free(&vb->gen);
    if (vb->has_workers) slm_workers_free(&vb->workers);
    *vb = (ViewBatch){0};
}

/* Tells fn what sample s's settled text has gained since last time. */
static int stream_text(ViewBatch *vb, int s, ViewTextFn fn, void *ctx, Error *e) {
    ViewGenerator *vg = &vb->samples[s];
    size_t settled = settled_ids(vg);
    if (!vg->finished && vg->shown && settled == vg->settled) return 0; /* a "##" piece: the word goes on */
    vg->settled = settled;
    char *text = story_text(vg, settled, e);
    if (!text) return -1;
    size_t len = text_kept(vg, text, strlen(text));
    int rc = 0;
    if (len > vg->shown || vg->finished)
        rc =
            fn(ctx, s, text + (len > vg->shown ? vg->shown : len), len > vg->shown ? len - vg->shown : 0, vg->finished);
    if (len > vg->shown) vg->shown = len;
    free(text);
    return rc;
}

int slm_view_batch_run(ViewBatch *vb, ViewTextFn fn, void *ctx, Error *e) {
    int rc = 0;
    for (int s = 0; fn && s < vb->n && !rc; s++) rc = stream_text(vb, s, fn, ctx, e);
    for (int k = 1; k > 0 && !rc;) {
        k = 0;
        for (int s = 0; s < vb->n && !rc; s++) {
            if (vb->samples[s].finished) continue;
            int picked = story_pick(&vb->samples[s], &vb->next[k], e);
            if (picked > 0)
                vb->which[k++] = s;
            else
                rc = picked < 0 ? -1 : fn ? stream_text(vb, s, fn, ctx, e) : 0;
        }
        if (rc || k == 0) break;
        slm_generator_batch_feed(&vb->gen, vb->which, vb->next, k); /* every sample's token in one pass */
        for (int j = 0; j < k; j++)
            vb->samples[vb->which[j]].logits = slm_generator_batch_logits(&vb->gen, vb->which[j]);
        for (int j = 0; fn && j < k && !rc; j++) rc = stream_text(vb, vb->which[j], fn, ctx, e);
    }
    return rc;
}

/* ---- the prompt against the vocabulary ------------------------------------------ */

/* Bytes of the UTF-8 character at p (1 for a stray byte). */
static size_t char_bytes(const char *p) {
    unsigned char c = (unsigned char)*p;
    size_t n = c < 0x80 ? 1 : c >> 5 == 6 ? 2 : c >> 4 == 14 ? 3 : c >> 3 == 30 ? 4 : 1;
    for (size_t i = 1; i < n; i++)
        if (((unsigned char)p[i] & 0xc0) != 0x80) return 1;
    return n;
}

/* 1 when the character (n bytes at c) is read as [UNK] on its own. */
static int char_unknown(const Tokenizer *t, const char *c, size_t n, IntVec *scratch, Error *e) {
    scratch->len = 0;
    if (slm_tokenizer_encode(t, c, n, scratch, e)) return -1;
    for (size_t i = 0; i < scratch->len; i++)
        if (scratch->data[i] == t->unk_id) return 1;
    return 0;
}

/* Appends 'c' (n bytes) to the list chars (size; *at bytes used) unless it is there. */
static int add_char(char *chars, size_t size, size_t *at, const char *c, size_t n) {
    char quoted[8];
    snprintf(quoted, sizeof quoted, "'%.*s'", (int)n, c);
    if (strstr(chars, quoted) || *at + strlen(quoted) + 3 > size) return 0;
    *at += (size_t)snprintf(chars + *at, size - *at, "%s%s", *at ? ", " : "", quoted);
    return 1;
}

int slm_view_prompt_unknown(const Tokenizer *t, const char *prompt, PromptUnknown *pu, char *chars, size_t size,
                            Error *e) {
    *pu = (PromptUnknown){0};
    if (size) chars[0] = '\0';
    IntVec ids = {0};
    int rc = slm_tokenizer_encode(t, prompt, strlen(prompt), &ids, e);
    for (size_t i = 0; !rc && i < ids.len; i++) pu->unk += ids.data[i] == t->unk_id;
    pu->tokens = (int)ids.len;
    size_t at = 0;
    for (const char *p = prompt; !rc && pu->unk && *p;) {
        size_t n = char_bytes(p);
        int unknown = isspace((unsigned char)*p) ? 0 : char_unknown(t, p, n, &ids, e);
        if (unknown < 0) rc = -1;
        if (unknown > 0 && size) pu->n_chars += add_char(chars, size, &at, p, n);
        p += n;
    }
    slm_intvec_free(&ids);
    return rc;
}

int slm_view_prompt_mostly_unknown(const PromptUnknown *pu) { return pu->unk > 0 && 2 * pu->unk > pu->tokens; }

/* ---- names ---------------------------------------------------------------------- */

/* The model's training file by its name (the "data" key), or NULL: only the
 * name is taken from the file, never a path (a model file may come from
 * anyone and say "/etc/passwd"); it is looked for beside the model, here and
 * in data/ (here, then where the shipped data lives). */
static const char *data_beside(const LoadedModel *lm, char *buf, size_t size) {
    const char *data = slm_metadata_get(&lm->meta, "data");
    const char *slash = data ? strrchr(data, '/') : NULL, *name = slash ? slash + 1 : data;
    if (!name || !name[0] || !strcmp(name, ".") || !strcmp(name, "..")) return NULL;
    const char *model_slash = lm->path ? strrchr(lm->path, '/') : NULL;
    int folder = model_slash ? (int)(model_slash - lm->path) + 1 : 0;
    char rel[300];
    snprintf(rel, sizeof rel, "data/%.255s", name);
    if (snprintf(buf, size, "%.*s%s", folder, lm->path ? lm->path : "", name) < (int)size && slm_data_file_exists(buf))
        return buf;
    if (snprintf(buf, size, "%s", name) < (int)size && slm_data_file_exists(buf)) return buf;
    if (snprintf(buf, size, "%s", rel) < (int)size && slm_data_file_exists(buf)) return buf;
    return slm_data_file_find(rel, buf, size) ? buf : NULL;
}

/* The stories file of slm_view_generate_names, or NULL. */
static const char *names_source(const LoadedModel *lm, const char *given, char *buf, size_t size) {
    if (given) return given;
    if (data_beside(lm, buf, size)) return buf;
    if (slm_data_file_exists("data/stories.txt")) return "data/stories.txt";
    return slm_data_file_find("data/stories.txt", buf, size) ? buf : NULL;
}

int slm_view_generate_names(NameList *nl, const LoadedModel *lm, const char *stories, char *from, size_t size,
                            Error *e) {
    char buf[4096], *text;
    size_t len;
    *nl = (NameList){0};
    const char *path = names_source(lm, stories, buf, sizeof buf);
    snprintf(from, size, "%s", path ? path : "");
    if (!path) return 0;
    if (slm_file_read_all(path, (size_t)1 << 30, &text, &len, e)) return -1;
    StorySpan all = {0, len};
    int rc = slm_names_learn(nl, text, &all, 1, NULL, e);
    free(text);
    return rc;
}
