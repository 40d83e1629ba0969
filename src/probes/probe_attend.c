/* Tool 1, a lookup by content: how one position's query meets every key it
 * reads, taken from the activations of a forward pass. */
#include <math.h>

#include "storylm/probes.h"

/* keys (window) for head h at position p of the story run last, oldest first. */
int probe_attend(const ProbeRunner *r, int h, int p, AttendKey *keys) {
    const Model *m = r->model;
    const ModelConfig *c = &m->cfg;
    const Activations *a = &r->acts;
    const int32_t *tokens = r->batch.tokens;
    int first, n, D = c->row_dim, kd = c->key_dim;
    const float *weights = activations_attention(a, h, p, &first, &n);
    float query[STORYLM_MAX_HEAD_DIM], key[STORYLM_MAX_HEAD_DIM];
    activations_qkv(a, h, p, query, NULL, NULL);
    const float *row = m->embedding + (size_t)tokens[p] * D;
    float scale = 1.0f / sqrtf((float)kd);
    for (int j = 0; j < n; j++) {
        int u = first + j, distance = p - u;
        activations_qkv(a, h, u, NULL, key, NULL);
        float dot = 0;
        for (int i = 0; i < kd; i++) dot += query[i] * key[i];
        AttendKey *k = &keys[j];
        k->position = u;
        k->token = tokens[u];
        k->distance = distance;
        k->dot = dot * scale;
        k->distance_score = m->distance[(size_t)h * c->window + distance];
        k->score = k->dot + k->distance_score;
        k->weight = weights[j];
        k->cosine = (float)probe_cosine(row, m->embedding + (size_t)tokens[u] * D, D);
    }
    return n;
}

/* map (T, T): every position's weights for head h, NAN where it cannot read. */
void probe_attention_map(const ProbeRunner *r, int h, double *map) {
    const Activations *a = &r->acts;
    int T = a->n_positions;
    for (int p = 0; p < T; p++) {
        int first, n;
        const float *w = activations_attention(a, h, p, &first, &n);
        for (int u = 0; u < T; u++) map[(size_t)p * T + u] = u >= first && u <= p ? w[u - first] : NAN;
    }
}
