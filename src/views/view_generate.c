/* Writing on, token by token: see views.h. Moved from storylm generate so
 * the server streams exactly the text the verb prints. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "storylm/generate.h"
#include "storylm/sample.h"
#include "storylm/views.h"

static int all_finite(const float *x, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* The text of ids so far, as the verb prints it. */
static char *text_of(const LoadedModel *lm, const IntVec *ids, const char *prompt, Error *e) {
    char *text = tokenizer_decode(&lm->tokenizer, ids->data, ids->len, 1, e);
    if (text) view_recapitalize(text, prompt);
    return text;
}

/* Tells on_token about the newest token; 1 when it asks to stop. */
static int tell(const LoadedModel *lm, const IntVec *ids, const char *prompt, ViewTokenFn on_token, void *ctx, int *rc,
                Error *e) {
    if (!on_token) return 0;
    char *text = text_of(lm, ids, prompt, e);
    if (!text) {
        *rc = -1;
        return 1;
    }
    int32_t id = ids->data[ids->len - 1];
    int stop = on_token(id, lm->tokenizer.pieces[id], text, ctx);
    free(text);
    return stop;
}

/* Feeds [EOS] + prompt ids, samples, appends to ids. */
static int write_on(const LoadedModel *lm, const Ablation *ab, const ViewGenerateOptions *go, const char *prompt,
                    IntVec *ids, ViewTokenFn on_token, void *ctx, ViewGenerated *out, Error *e) {
    Generator g;
    Sampler smp;
    if (generator_init(&g, &lm->model, ab, e)) return -1;
    if (sampler_init(&smp, lm->model.cfg.vocab_size, (float)go->temperature, go->top_k, (float)go->top_p, go->seed, e)) {
        generator_free(&g);
        return -1;
    }
    const float *logits = generator_feed(&g, lm->tokenizer.eos_id);
    for (size_t i = 0; i < ids->len; i++) logits = generator_feed(&g, ids->data[i]);
    int rc = 0;
    out->stop_reason = "max_tokens";
    for (int i = 0; i < go->max_tokens && !rc; i++) {
        if (!all_finite(logits, lm->model.cfg.vocab_size)) { /* a damaged model: say so rather than write noise */
            rc = FAIL(e, "train or save the model again (storylm info counts NaN and infinite weights)",
                      "'%s' gives NaN or infinite logits at token %zu: its weights hold NaN, infinite or huge numbers",
                      lm->path, ids->len);
            break;
        }
        int next = sampler_sample(&smp, logits);
        if (next == lm->tokenizer.eos_id) {
            out->stop_reason = "end";
            break;
        }
        rc = intvec_push(ids, next, e);
        if (rc) break;
        out->tokens++;
        if (tell(lm, ids, prompt, on_token, ctx, &rc, e)) {
            if (!rc) out->stop_reason = "stopped";
            break;
        }
        logits = generator_feed(&g, next);
    }
    sampler_free(&smp);
    generator_free(&g);
    return rc;
}

int view_generate(const LoadedModel *lm, const Ablation *ab, const char *prompt, const ViewGenerateOptions *go,
                  ViewTokenFn on_token, void *ctx, ViewGenerated *out, Error *e) {
    *out = (ViewGenerated){0};
    IntVec ids = {0};
    int rc = tokenizer_encode(&lm->tokenizer, prompt, strlen(prompt), &ids, e);
    if (!rc) rc = write_on(lm, ab, go, prompt, &ids, on_token, ctx, out, e);
    if (!rc) out->text = text_of(lm, &ids, prompt, e);
    if (!rc && !out->text) rc = -1;
    intvec_free(&ids);
    return rc;
}

/* The tokenizer lower-cases everything; words the prompt wrote with a capital
 * (its names, usually) get their capital back wherever they come again. */
void view_recapitalize(char *text, const char *prompt) {
    for (const char *p = prompt; *p;) {
        while (*p && !isalpha((unsigned char)*p)) p++;
        const char *w = p;
        while (*p && isalnum((unsigned char)*p)) p++;
        size_t n = (size_t)(p - w);
        if (n < 2 || !isupper((unsigned char)w[0])) continue;
        for (char *t = text; *t; t++) {
            if (strncasecmp(t, w, n) != 0 || (t > text && isalnum((unsigned char)t[-1])) || isalnum((unsigned char)t[n]))
                continue;
            t[0] = (char)toupper((unsigned char)t[0]);
        }
    }
}

