/* Tool 1, a lookup by content: how one position's query meets every key it
 * reads, taken from the activations of a forward pass, in the layer (or
 * transformer block) the runner reads. */
#include <math.h>

#include "storylm/probes.h"

/* keys (window) for head h of layer r->layer at position p of the story run last, oldest first. */
int slm_probe_attend(const ProbeRunner *r, int h, int p, AttendKey *keys) {
    const Model *whole = r->model;
    const ModelConfig *c = &whole->cfg;
    const Activations *a = &r->acts;
    const int32_t *tokens = r->batch.tokens;
    int first, n, D = c->row_dim, l = r->layer, g = l * c->n_heads + h;
    const ProbeOps *ops = c->arch->probes;
    Model view; /* layer l as one layer: its score tensors */
    ops->layer_view(whole, l, &view, NULL);
    const float *weights = slm_activations_attention(a, g, p, &first, &n);
    float query[STORYLM_MAX_HEAD_DIM], key[STORYLM_MAX_HEAD_DIM];
    slm_activations_qkv(a, g, p, query, NULL, NULL);
    const float *row = whole->embedding + (size_t)tokens[p] * D; /* W_E on a transformer */
    for (int j = 0; j < n; j++) {
        int u = first + j, distance = p - u;
        slm_activations_qkv(a, g, u, NULL, key, NULL);
        AttendKey *k = &keys[j];
        k->position = u;
        k->token = tokens[u];
        k->distance = distance;
        k->dot = slm_score_content(&view, h, query, key); /* q.k/sqrt(kd), or the --score variant's */
        k->distance_score = ops->position_score(whole, l, h, distance);
        k->score = k->dot + k->distance_score;
        k->weight = weights[j];
        k->cosine = (float)slm_probe_cosine(row, whole->embedding + (size_t)tokens[u] * D, D);
    }
    return n;
}

/* map (T, T): every position's weights for head h of layer r->layer, NAN where it cannot read. */
void slm_probe_attention_map(const ProbeRunner *r, int h, double *map) {
    const Activations *a = &r->acts;
    int T = a->n_positions, g = r->layer * a->cfg.n_heads + h;
    for (int p = 0; p < T; p++) {
        int first, n;
        const float *w = slm_activations_attention(a, g, p, &first, &n);
        for (int u = 0; u < T; u++) map[(size_t)p * T + u] = u >= first && u <= p ? w[u - first] : NAN;
    }
}
