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

/* The part (the row or resid_pre: -1, or head k) whose push (1 + H, Hd) on unit u is the largest in size, and that
 * push. */
static void strongest_part(const float *push, int H, int Hd, int u, int *part, float *amount) {
    *part = -1;
    *amount = 0;
    for (int k = -1; k < H; k++) {
        float sum = push[(size_t)(k + 1) * Hd + u];
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
    int l = r->layer, Hd = c->hidden_dim, V = c->vocab_size, heads = slm_model_heads(c) > 0;
    int Z = heads ? c->row_dim + c->n_heads * c->value_dim : slm_model_hidden_input_dim(c);
    if (heads && slm_probe_need_ops(m, c->arch->probes && c->arch->probes->trace_layer, "the trace of a layer", e))
        return -1;
    if (p < 0 || p >= a->n_positions)
        return FAIL(e, NULL, "position %d of the trace is outside the %d positions run", p, a->n_positions);
    n_units = n_units < Hd ? n_units : Hd;
    n_guesses = n_guesses < V ? n_guesses : V;
    *out = (TraceResult){.position = p,
                         .token = r->batch.tokens[p],
                         .layer = l,
                         .n_inputs = Z,
                         .n_units = n_units,
                         .n_guesses = n_guesses};
    int *order = xmalloc((size_t)(n_units > n_guesses ? n_units : n_guesses) * sizeof(int) + 1, e);
    float *push = heads ? xmalloc((size_t)(1 + c->n_heads) * Hd * sizeof(float), e) : NULL;
    if (!order || (heads && !push) || trace_alloc(out, Z, Hd, n_units, n_guesses, e)) {
        free(order);
        free(push);
        slm_trace_result_free(out);
        return -1;
    }
    if (heads) /* layer l's inputs, units and what each part pushes */
        c->arch->probes->trace_layer(m, a, l, p, out->z, out->hidden, push);
    else { /* window8: its rows and the hidden layer */
        memcpy(out->z, a->z + (size_t)p * Z, (size_t)Z * sizeof(float));
        memcpy(out->hidden, a->hidden + (size_t)p * Hd, (size_t)Hd * sizeof(float));
    }
    top_indices(out->hidden, Hd, n_units, 1, order);
    for (int k = 0; k < n_units; k++) {
        TraceUnit *u = &out->units[k];
        u->unit = order[k];
        u->value = out->hidden[order[k]];
        if (heads) strongest_part(push, c->n_heads, Hd, order[k], &u->part, &u->part_input);
    }
    const float *logits = a->logits + (size_t)p * V;
    top_indices(logits, V, n_guesses, 0, order);
    for (int k = 0; k < n_guesses; k++) out->guesses[k] = (TraceGuess){order[k], expf(logits[order[k]] - a->lse[p])};
    free(order);
    free(push);
    return 0;
}
