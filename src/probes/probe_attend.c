/* Tool 1, a lookup by content: how one position's query meets every key it
 * reads, taken from the activations of a forward pass, in the layer (or
 * transformer block) the runner reads. */
#include <math.h>

#include "storylm/probes.h"
#include "storylm/transformer.h"

/* Head h of transformer block l's score added at distance d back (the
 * scheme's: distance, alibi, t5; 0 for the others), as
 * slm_transformer_distance_table gives it. */
static float block_distance_score(const Model *m, int l, int h, int d) {
    const ModelConfig *c = &m->cfg;
    TfViews v;
    slm_transformer_views(m, m->params, &v);
    const TfBlockViews *w = &v.block[l];
    if (c->pos == POS_DISTANCE) return w->distance[(size_t)h * c->window + d];
    if (c->pos == POS_ALIBI) return -slm_alibi_slope(h, c->n_heads) * (float)d;
    if (c->pos == POS_T5) return w->bucket[h * T5_BUCKETS + slm_t5_bucket(d)];
    return 0.0f;
}

/* keys (window) for head h of layer r->layer at position p of the story run last, oldest first. */
int slm_probe_attend(const ProbeRunner *r, int h, int p, AttendKey *keys) {
    const Model *whole = r->model;
    const ModelConfig *c = &whole->cfg;
    const Activations *a = &r->acts;
    const int32_t *tokens = r->batch.tokens;
    int first, n, D = c->row_dim, l = r->layer, g = l * c->n_heads + h, tf = c->arch->readout == READOUT_RESIDUAL;
    Model view; /* the attention network's layer l: its score and distance tensors */
    if (!tf) slm_model_layer_view(whole, l, &view);
    const Model *m = tf ? whole : &view;
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
        k->dot = slm_score_content(m, h, query, key); /* q.k/sqrt(kd), or the --score variant's */
        k->distance_score = tf ? block_distance_score(m, l, h, distance) : slm_position_distance_score(m, h, distance);
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
