/* Tool 1, a lookup by content: how one position's query meets every key it
 * reads, taken from the activations of a forward pass. */
#include <math.h>

#include "storylm/probes.h"

/* keys (window) for head h at position p of the story run last, oldest first. */
int slm_probe_attend(const ProbeRunner *r, int h, int p, AttendKey *keys) {
    const Model *m = r->model;
    const ModelConfig *c = &m->cfg;
    const Activations *a = &r->acts;
    const int32_t *tokens = r->batch.tokens;
    int first, n, D = c->row_dim;
    const float *weights = slm_activations_attention(a, h, p, &first, &n);
    float query[STORYLM_MAX_HEAD_DIM], key[STORYLM_MAX_HEAD_DIM];
    slm_activations_qkv(a, h, p, query, NULL, NULL);
    const float *row = m->embedding + (size_t)tokens[p] * D;
    for (int j = 0; j < n; j++) {
        int u = first + j, distance = p - u;
        slm_activations_qkv(a, h, u, NULL, key, NULL);
        AttendKey *k = &keys[j];
        k->position = u;
        k->token = tokens[u];
        k->distance = distance;
        k->dot = slm_score_content(m, h, query, key); /* q.k/sqrt(8), or the --score variant's */
        k->distance_score = slm_position_distance_score(m, h, distance);
        k->score = k->dot + k->distance_score;
        k->weight = weights[j];
        k->cosine = (float)slm_probe_cosine(row, m->embedding + (size_t)tokens[u] * D, D);
    }
    return n;
}

/* map (T, T): every position's weights for head h, NAN where it cannot read. */
void slm_probe_attention_map(const ProbeRunner *r, int h, double *map) {
    const Activations *a = &r->acts;
    int T = a->n_positions;
    for (int p = 0; p < T; p++) {
        int first, n;
        const float *w = slm_activations_attention(a, h, p, &first, &n);
        for (int u = 0; u < T; u++) map[(size_t)p * T + u] = u >= first && u <= p ? w[u - first] : NAN;
    }
}
