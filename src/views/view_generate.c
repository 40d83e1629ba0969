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

int view_generator_init(ViewGenerator *vg, const LoadedModel *lm, const Ablation *ab, const char *prompt,
                        const ViewGenerateOptions *go, Error *e) {
    *vg = (ViewGenerator){.lm = lm, .prompt = prompt, .max_tokens = go->max_tokens};
    if (tokenizer_encode(&lm->tokenizer, prompt, strlen(prompt), &vg->ids, e)) return -1;
    if (generator_init(&vg->g, &lm->model, ab, e)) {
        intvec_free(&vg->ids);
        return -1;
    }
    if (sampler_init(&vg->smp, lm->model.cfg.vocab_size, (float)go->temperature, go->top_k, (float)go->top_p, go->seed,
                     e)) {
        generator_free(&vg->g);
        intvec_free(&vg->ids);
        return -1;
    }
    vg->logits = generator_feed(&vg->g, lm->tokenizer.eos_id);
    for (size_t i = 0; i < vg->ids.len; i++) vg->logits = generator_feed(&vg->g, vg->ids.data[i]);
    vg->stop_reason = "max_tokens";
    return 0;
}

int view_generator_next(ViewGenerator *vg, Error *e) {
    const LoadedModel *lm = vg->lm;
    if (vg->finished || vg->tokens >= vg->max_tokens) return vg->finished = 1, 0;
    if (!all_finite(vg->logits, lm->model.cfg.vocab_size)) /* a damaged model: say so rather than write noise */
        return FAIL(e, "train or save the model again (storylm info counts NaN and infinite weights)",
                    "'%s' gives NaN or infinite logits at token %zu: its weights hold NaN, infinite or huge numbers",
                    lm->path, vg->ids.len);
    int next = sampler_sample(&vg->smp, vg->logits);
    if (next == lm->tokenizer.eos_id) {
        vg->stop_reason = "end";
        return vg->finished = 1, 0;
    }
    if (intvec_push(&vg->ids, next, e)) return -1;
    vg->tokens++;
    vg->logits = generator_feed(&vg->g, next);
    return 1;
}

char *view_generator_text(const ViewGenerator *vg, Error *e) {
    char *text = tokenizer_decode(&vg->lm->tokenizer, vg->ids.data, vg->ids.len, 1, e);
    if (text) view_recapitalize(text, vg->prompt);
    return text;
}

void view_generator_free(ViewGenerator *vg) {
    sampler_free(&vg->smp);
    generator_free(&vg->g);
    intvec_free(&vg->ids);
    *vg = (ViewGenerator){0};
}

int view_generate(const LoadedModel *lm, const Ablation *ab, const char *prompt, const ViewGenerateOptions *go,
                  char **text, Error *e) {
    ViewGenerator vg;
    *text = NULL;
    if (view_generator_init(&vg, lm, ab, prompt, go, e)) return -1;
    int rc;
    while ((rc = view_generator_next(&vg, e)) > 0) {}
    if (!rc) *text = view_generator_text(&vg, e);
    view_generator_free(&vg);
    return rc || !*text ? -1 : 0;
}

/* Words that start sentences with a capital without being names ("Her mom
 * smiled" must not give "in Her pocket" later). */
static int common_sentence_word(const char *w, size_t n) {
    static const char *const words[] = {
        "the", "a", "an", "he", "she", "it", "they", "we", "i", "you", "her", "his", "him", "them", "their",
        "our", "my", "your", "its", "this", "that", "these", "those", "there", "then", "once", "one", "when",
        "but", "and", "so", "if", "as", "at", "in", "on", "to", "with", "after", "before", "while", "because",
        "what", "where", "who", "why", "how", "yes", "no", "oh", "every", "some", "all", "now", "soon", "today",
        "suddenly", "finally", "later", "mom", "dad", "mommy", "daddy", "let", "can", "do", "look", "come", "thank"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i]) == n && strncasecmp(w, words[i], n) == 0) return 1;
    return 0;
}

/* The tokenizer lower-cases everything; words the prompt wrote with a capital
 * (its names, usually) get their capital back wherever they come again. */
void view_recapitalize(char *text, const char *prompt) {
    for (const char *p = prompt; *p;) {
        while (*p && !isalpha((unsigned char)*p)) p++;
        const char *w = p;
        while (*p && isalnum((unsigned char)*p)) p++;
        size_t n = (size_t)(p - w);
        if (n < 2 || !isupper((unsigned char)w[0]) || common_sentence_word(w, n)) continue;
        for (char *t = text; *t; t++) {
            if (strncasecmp(t, w, n) != 0 || (t > text && isalnum((unsigned char)t[-1])) || isalnum((unsigned char)t[n]))
                continue;
            t[0] = (char)toupper((unsigned char)t[0]);
        }
    }
}
