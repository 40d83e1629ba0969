/* Tool 3, the network around it: one token of the story run last,
 * followed through what the hidden layer reads (its row and the heads'
 * outputs), the hidden layer and the next-token guesses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probes.h"

void slm_trace_result_free(TraceResult *t) {
    free(t->z);
    free(t->hidden);
    free(t->units);
    free(t->guesses);
    *t = (TraceResult){0};
}

/* The part of z (row: -1, or head h) whose inputs add the most (in size) to
 * hidden unit u's input, and that amount. z (Z), hidden_w (128, Z). */
static void strongest_part(const Model *m, const float *z, int u, int *part, float *amount) {
    const ModelConfig *c = &m->cfg;
    int Z = slm_model_hidden_input_dim(c), D = c->row_dim, vd = c->value_dim;
    const float *w = m->hidden_w + (size_t)u * Z;
    *part = -1;
    *amount = 0;
    for (int k = -1; k < c->n_heads; k++) {
        int from = k < 0 ? 0 : D + k * vd, to = k < 0 ? D : from + vd;
        float sum = 0;
        for (int i = from; i < to; i++) sum += w[i] * z[i];
        if (k < 0 || fabsf(sum) > fabsf(*amount)) {
            *part = k;
            *amount = sum;
        }
    }
}

/* The n indices of x (len) largest by key (|x| when by_size), in order. */
static void top_indices(const float *x, int len, int n, int by_size, int *out) {
    for (int k = 0; k < n; k++) {
        int best = -1;
        for (int i = 0; i < len; i++) {
            int taken = 0;
            for (int j = 0; j < k && !taken; j++) taken = out[j] == i;
            float v = by_size ? fabsf(x[i]) : x[i];
            if (!taken && (best < 0 || v > (by_size ? fabsf(x[best]) : x[best]))) best = i;
        }
        out[k] = best;
    }
}

static int trace_alloc(TraceResult *t, int Z, int Hd, int n_units, int n_guesses, Error *e) {
    t->z = xmalloc((size_t)Z * sizeof(float), e);
    t->hidden = t->z ? xmalloc((size_t)Hd * sizeof(float), e) : NULL;
    t->units = t->hidden ? xcalloc((size_t)n_units, sizeof(TraceUnit), e) : NULL;
    t->guesses = t->units ? xcalloc((size_t)n_guesses, sizeof(TraceGuess), e) : NULL;
    return t->guesses ? 0 : -1;
}

int slm_probe_trace(const ProbeRunner *r, int p, int n_units, int n_guesses, TraceResult *out, Error *e) {
    const Model *m = r->model;
    const ModelConfig *c = &m->cfg;
    const Activations *a = &r->acts;
    int Z = slm_model_hidden_input_dim(c), Hd = c->hidden_dim, V = c->vocab_size;
    if (p < 0 || p >= a->n_positions)
        return FAIL(e, NULL, "position %d of the trace is outside the %d positions run", p, a->n_positions);
    n_units = n_units < Hd ? n_units : Hd;
    n_guesses = n_guesses < V ? n_guesses : V;
    *out = (TraceResult){.position = p, .token = r->batch.tokens[p], .n_units = n_units, .n_guesses = n_guesses};
    int *order = xmalloc((size_t)(n_units > n_guesses ? n_units : n_guesses) * sizeof(int) + 1, e);
    if (!order || trace_alloc(out, Z, Hd, n_units, n_guesses, e)) {
        free(order);
        slm_trace_result_free(out);
        return -1;
    }
    memcpy(out->z, a->z + (size_t)p * Z, (size_t)Z * sizeof(float));
    memcpy(out->hidden, a->hidden + (size_t)p * Hd, (size_t)Hd * sizeof(float));
    top_indices(out->hidden, Hd, n_units, 1, order);
    for (int k = 0; k < n_units; k++) {
        TraceUnit *u = &out->units[k];
        u->unit = order[k];
        u->value = out->hidden[order[k]];
        if (c->arch == ARCH_ATTENTION) strongest_part(m, out->z, order[k], &u->part, &u->part_input);
    }
    const float *logits = a->logits + (size_t)p * V;
    top_indices(logits, V, n_guesses, 0, order);
    for (int k = 0; k < n_guesses; k++) out->guesses[k] = (TraceGuess){order[k], expf(logits[order[k]] - a->lse[p])};
    free(order);
    return 0;
}
