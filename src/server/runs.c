/* Kept runs: a text run once through a model (whole, with the logits) serves
 * the attention view and the trace of every position of it, and the loss on
 * it. A click on a story the page shows asks for the views of one position
 * of a text the server has just run, so the run is kept with its model for
 * the next click, bounded in memory (RUNS_BUDGET a model, least recently
 * used dropped); what a request reads of a kept run it only reads. */
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "storylm/attention.h"

struct KeptRun {
    KeptRun *next;
    char *text;
    Ablation ablation; /* heads and mode; the mean is the entry's own */
    ViewText vt;       /* run whole: pos is each request's copy's */
    size_t bytes;
    int refs; /* requests reading it now */
    int kept; /* in the entry's list; 0: too large to keep, freed at the last release */
    unsigned long used;
};

/* About what slm_activations_init allocates for n positions (forward and
 * backward buffers alike), in bytes: what a kept run weighs. */
static size_t run_bytes(const ModelConfig *c, int n) {
    size_t Z = (size_t)slm_model_hidden_input_dim(c), QKV = (size_t)c->n_heads * (2 * c->key_dim + c->value_dim);
    size_t S = (size_t)slm_attention_row_stride(c->window);
    size_t per = 2 * Z + 2 * QKV + c->n_heads * S + 2 * (size_t)c->hidden_dim + (size_t)c->vocab_size + 16;
    return ((size_t)n + 16) * per * sizeof(float) + 4 * QKV * 32 * sizeof(float) + 4096;
}

static void run_free(KeptRun *k) {
    slm_view_text_free(&k->vt);
    free(k->text);
    free(k);
}

static int same_ablation(const Ablation *a, const Ablation *b) {
    return slm_head_set_equal(&a->heads, &b->heads) && (slm_head_set_empty(&a->heads) || a->mode == b->mode);
}

/* The run of text with ps's ablation and kernels, held (refs + 1), or NULL. Under m->runs_lock. */
static KeptRun *find_run(ModelEntry *m, const char *text, const ProbeSession *ps) {
    for (KeptRun *k = m->runs; k; k = k->next)
        if (same_ablation(&k->ablation, &ps->ablation) && k->vt.runner.acts.kernels == ps->lm.model.kernels &&
            strcmp(k->text, text) == 0) {
            k->refs++;
            k->used = ++m->runs_clock;
            return k;
        }
    return NULL;
}

/* Drops the least recently used runs no request reads until the kept ones
 * weigh at most RUNS_BUDGET. Under m->runs_lock. */
static void trim_runs(ModelEntry *m) {
    while (m->runs_bytes > RUNS_BUDGET) {
        KeptRun **oldest = NULL;
        for (KeptRun **k = &m->runs; *k; k = &(*k)->next)
            if ((*k)->refs == 0 && (!oldest || (*k)->used < (*oldest)->used)) oldest = k;
        if (!oldest) return; /* all in use: trimmed at a later insert */
        KeptRun *k = *oldest;
        *oldest = k->next;
        m->runs_bytes -= k->bytes;
        run_free(k);
    }
}

/* A new run, kept when it fits the budget. */
static KeptRun *new_run(ModelEntry *m, const ProbeSession *ps, const char *text, Error *e) {
    KeptRun *k = calloc(1, sizeof *k);
    if (k) k->text = strdup(text);
    if (!k || !k->text) {
        free(k);
        return FAIL(e, NULL, "out of memory running the text"), NULL;
    }
    if (slm_view_text_run(&k->vt, ps, text, 0, 0, e)) {
        free(k->text);
        free(k);
        return NULL;
    }
    k->vt.runner.model = &m->ps.lm.model; /* the entry's, not the request's copy of it: it outlives the request */
    k->ablation = ps->ablation;
    k->bytes = run_bytes(&ps->lm.model.cfg, (int)k->vt.ids.len);
    k->refs = 1;
    pthread_mutex_lock(&m->runs_lock);
    KeptRun *old = find_run(m, text, ps); /* another request ran it meanwhile */
    if (old) {
        pthread_mutex_unlock(&m->runs_lock);
        run_free(k);
        return old;
    }
    k->used = ++m->runs_clock;
    k->kept = k->bytes <= RUNS_BUDGET;
    if (k->kept) {
        k->next = m->runs;
        m->runs = k;
        m->runs_bytes += k->bytes;
        trim_runs(m);
    }
    pthread_mutex_unlock(&m->runs_lock);
    return k;
}

int entry_run(ModelEntry *m, const ProbeSession *ps, const char *text, int pos, ViewText *vt, KeptRun **held,
              Error *e) {
    *held = NULL;
    pthread_mutex_lock(&m->runs_lock);
    KeptRun *k = find_run(m, text, ps);
    pthread_mutex_unlock(&m->runs_lock);
    if (!k) k = new_run(m, ps, text, e);
    if (!k) return -1;
    *held = k;
    *vt = k->vt; /* shares the run's numbers, read only; never freed by the request */
    if (slm_view_text_at(vt, pos, e) == 0) return 0;
    entry_run_release(m, k);
    *held = NULL;
    return -1;
}

void entry_run_release(ModelEntry *m, KeptRun *k) {
    if (!k) return;
    pthread_mutex_lock(&m->runs_lock);
    int last = --k->refs == 0 && !k->kept;
    if (k->kept && k->refs == 0) trim_runs(m);
    pthread_mutex_unlock(&m->runs_lock);
    if (last) run_free(k);
}

void entry_runs_free(ModelEntry *m) {
    while (m->runs) {
        KeptRun *k = m->runs;
        m->runs = k->next;
        run_free(k);
    }
    m->runs_bytes = 0;
}
