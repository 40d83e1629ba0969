/* What the interpretability views (patch, attribute, cache) share: see probe_views.h. */
#include <stdio.h>
#include <string.h>

#include "storylm/probe_views.h"
#include "storylm/text.h"

int slm_view_encode(const ProbeSession *ps, const char *text, IntVec *ids, Error *e) {
    ids->len = 0;
    if (slm_intvec_push(ids, ps->lm.tokenizer.eos_id, e)) return -1;
    return slm_text_check(text, strlen(text), "the text", e) ||
                   slm_tokenizer_encode(&ps->lm.tokenizer, text, strlen(text), ids, e)
               ? -1
               : 0;
}

void slm_view_ids_text(const ProbeSession *ps, const int32_t *ids, int n, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *piece = slm_probe_session_token(ps, ids[i]);
        if (used + strlen(piece) + 6 >= size) {
            snprintf(buf + used, size - used, " ...");
            return;
        }
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? " " : "", piece);
    }
}

int slm_view_token_id(const ProbeSession *ps, const char *text, const char *flag, int32_t *id, Error *e) {
    int found = slm_tokenizer_lookup(&ps->lm.tokenizer, text, strlen(text));
    IntVec ids = {0};
    /* a word that is one piece once normalised ("Max" -> max) counts too */
    if (found < 0 && slm_tokenizer_encode(&ps->lm.tokenizer, text, strlen(text), &ids, NULL) == 0 && ids.len == 1)
        found = ids.data[0];
    slm_intvec_free(&ids);
    if (found >= 0) {
        *id = found;
        return 0;
    }
    return FAIL(e, "give one piece of the vocabulary, as 'storylm tokenize' prints them (e.g. max, ##ark)",
                "%s '%s' is not one token of the model's vocabulary", flag, text);
}

int32_t slm_view_top_guess(const Activations *a, int p, int32_t skip) {
    int V = a->cfg.vocab_size;
    const float *l = a->logits + (size_t)p * V;
    int32_t best = -1;
    for (int v = 0; v < V; v++)
        if (v != skip && (best < 0 || l[v] > l[best])) best = v;
    return best;
}
