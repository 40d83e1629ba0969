/* Secret 1, the heads found jobs: where each head's weight goes, by distance
 * back and by token, over every position of the given stories. */
#include <stdlib.h>
#include <string.h>

#include "storylm/probes.h"

const char *const slm_head_bin_names[HEAD_BINS] = {"0", "1", "2", "3-7", "8-31", "32-255"};

static int distance_bin(int d) { return d <= 2 ? d : d <= 7 ? 3 : d <= 31 ? 4 : 5; }

void slm_heads_result_free(HeadsResult *h) {
    free(h->mass);
    free(h->mean_distance);
    free(h->top);
    *h = (HeadsResult){0};
}

/* Adds the story run last: mass (H, BINS), distance (H), by_token (H, V),
 * H every layer's heads. */
static void add_story(const ProbeRunner *r, double *mass, double *distance, double *by_token) {
    const Activations *a = &r->acts;
    const ModelConfig *c = &a->cfg;
    const int32_t *tokens = r->batch.tokens;
    for (int h = 0; h < slm_model_heads(c); h++)
        for (int p = 0; p < a->n_positions; p++) {
            int first, n;
            const float *w = slm_activations_attention(a, h, p, &first, &n);
            for (int j = 0; j < n; j++) {
                int d = p - first - j;
                mass[h * HEAD_BINS + distance_bin(d)] += w[j];
                distance[h] += (double)w[j] * d;
                by_token[(size_t)h * c->vocab_size + tokens[first + j]] += w[j];
            }
        }
}

/* top (k) = the k tokens with most weight in by_token (V), as shares of total. */
static void top_tokens(const double *by_token, int V, int k, double total, HeadToken *top) {
    for (int i = 0; i < k; i++) top[i] = (HeadToken){-1, 0};
    for (int v = 0; v < V; v++) {
        double x = by_token[v];
        if (x <= 0 || x <= top[k - 1].share * total) continue;
        int i = k - 1;
        for (; i > 0 && top[i - 1].share * total < x; i--) top[i] = top[i - 1];
        top[i] = (HeadToken){v, x / total};
    }
}

static int heads_alloc(HeadsResult *out, int H, int top_k, Error *e) {
    out->mass = xcalloc((size_t)H * HEAD_BINS, sizeof(double), e);
    out->mean_distance = out->mass ? xcalloc((size_t)H, sizeof(double), e) : NULL;
    out->top = out->mean_distance ? xcalloc((size_t)H * top_k, sizeof(HeadToken), e) : NULL;
    return out->top ? 0 : -1;
}

int slm_probe_heads(const Model *m, const Stories *s, const int *idx, int n, int top_k, HeadsResult *out, Error *e) {
    const ModelConfig *c = &m->cfg;
    if (slm_probe_need_heads(m, "heads", e)) return -1;
    int H = slm_model_heads(c), V = c->vocab_size; /* every layer's heads, numbered as Ablation's */
    *out = (HeadsResult){.n_heads = H, .top_k = top_k > 0 ? top_k : 1};
    double *by_token = xcalloc((size_t)H * V, sizeof(double), e);
    ProbeRunner r = {0};
    int rc = by_token && !heads_alloc(out, H, out->top_k, e) ? slm_probe_runner_init(&r, m, 1024, e) : -1;
    StoryBuf buf = {0};
    for (int i = 0; !rc && i < n; i++) {
        int len = (int)story_len(s, idx[i]);
        const int32_t *ids = slm_story_ids(s, idx[i], &buf, e);
        rc = ids ? slm_probe_run(&r, ids, len, NULL, e) : -1;
        if (!rc) add_story(&r, out->mass, out->mean_distance, by_token);
        out->positions += len;
    }
    for (int h = 0; !rc && h < H && out->positions > 0; h++) {
        double total = (double)out->positions; /* each position's weights sum to 1 */
        for (int b = 0; b < HEAD_BINS; b++) out->mass[h * HEAD_BINS + b] /= total;
        out->mean_distance[h] /= total;
        top_tokens(by_token + (size_t)h * V, V, out->top_k, total, out->top + (size_t)h * out->top_k);
    }
    slm_probe_runner_free(&r);
    slm_story_buf_free(&buf);
    free(by_token);
    if (rc) slm_heads_result_free(out);
    return rc;
}
