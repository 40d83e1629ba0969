/* Hooks of the forward pass (hooks.h): each hook point's numbers gathered
 * from the activations into one C-order buffer, handed to the caller's
 * function, and written back when it changed them. Runs on the calling
 * thread between the pass's parallel parts, so a hook (Python's, through
 * ctypes) never runs inside an OpenMP team. */
#include "storylm/hooks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/activations.h"
#include "storylm/arch.h"
#include "storylm/head_set.h"
#include "storylm/model_params.h"
#include "storylm/position.h"
#include "storylm/score.h"

/* One hook point: its name (%d: the layer), whether a hook may change it,
 * and its shape for a run of T positions. */
typedef struct HookSpec {
    const char *name;
    int in_block, writable;
} HookSpec;

static const HookSpec hook_specs[HOOK_COUNT] = {
    [HOOK_EMBED] = {"hook_embed", 0, 1},
    [HOOK_Q] = {"blocks.%d.attn.hook_q", 1, 1},
    [HOOK_K] = {"blocks.%d.attn.hook_k", 1, 1},
    [HOOK_V] = {"blocks.%d.attn.hook_v", 1, 1},
    [HOOK_DISTANCE_SCORE] = {"blocks.%d.attn.hook_distance_score", 1, 0},
    [HOOK_PATTERN] = {"blocks.%d.attn.hook_pattern", 1, 1},
    [HOOK_Z] = {"blocks.%d.attn.hook_z", 1, 1},
    [HOOK_HIDDEN_IN] = {"hook_hidden_in", 0, 1},
    [HOOK_HIDDEN] = {"hook_hidden", 0, 1},
    [HOOK_LOGITS] = {"hook_logits", 0, 1},
    [HOOK_POS_EMBED] = {"hook_pos_embed", 0, 1},
    [HOOK_RESID_PRE] = {"blocks.%d.hook_resid_pre", 1, 1},
    [HOOK_RESID_MID] = {"blocks.%d.hook_resid_mid", 1, 1},
    [HOOK_MLP_POST] = {"blocks.%d.mlp.hook_post", 1, 1},
    [HOOK_RESID_POST] = {"blocks.%d.hook_resid_post", 1, 1},
    [HOOK_LN_FINAL] = {"ln_final.hook_normalized", 0, 1},
    [HOOK_LN1_SCALE] = {"blocks.%d.ln1.hook_scale", 1, 1},
    [HOOK_LN1_NORMALIZED] = {"blocks.%d.ln1.hook_normalized", 1, 1},
    [HOOK_ATTN_SCORES] = {"blocks.%d.attn.hook_attn_scores", 1, 1},
    [HOOK_RESULT] = {"blocks.%d.attn.hook_result", 1, 1},
    [HOOK_ATTN_OUT] = {"blocks.%d.hook_attn_out", 1, 1},
    [HOOK_LN2_SCALE] = {"blocks.%d.ln2.hook_scale", 1, 1},
    [HOOK_LN2_NORMALIZED] = {"blocks.%d.ln2.hook_normalized", 1, 1},
    [HOOK_MLP_PRE] = {"blocks.%d.mlp.hook_pre", 1, 1},
    [HOOK_MLP_OUT] = {"blocks.%d.hook_mlp_out", 1, 1},
    [HOOK_LN_FINAL_SCALE] = {"ln_final.hook_scale", 0, 1},
};

void slm_hook_name(HookPoint p, int l, char *buf, size_t size) {
    if (hook_specs[p].in_block)
        snprintf(buf, size, hook_specs[p].name, l);
    else
        snprintf(buf, size, "%s", hook_specs[p].name);
}

/* Point p's shape for the run in a (returns ndim). */
static int hook_shape(const Activations *a, HookPoint p, int *shape) {
    const ModelConfig *c = &a->cfg;
    int T = a->n_positions, H = c->n_heads;
    switch (p) {
        case HOOK_EMBED:
        case HOOK_POS_EMBED:
        case HOOK_RESID_PRE:
        case HOOK_RESID_MID:
        case HOOK_RESID_POST:
        case HOOK_LN_FINAL:
        case HOOK_LN1_NORMALIZED:
        case HOOK_LN2_NORMALIZED:
        case HOOK_ATTN_OUT:
        case HOOK_MLP_OUT: shape[0] = T, shape[1] = c->row_dim; return 2;
        case HOOK_LN1_SCALE:
        case HOOK_LN2_SCALE:
        case HOOK_LN_FINAL_SCALE: shape[0] = T, shape[1] = 1; return 2;
        case HOOK_MLP_PRE:
        case HOOK_MLP_POST: shape[0] = T, shape[1] = c->hidden_dim; return 2;
        case HOOK_RESULT: shape[0] = T, shape[1] = H, shape[2] = c->row_dim; return 3;
        case HOOK_Q:
        case HOOK_K: shape[0] = T, shape[1] = H, shape[2] = c->key_dim; return 3;
        case HOOK_V:
        case HOOK_Z: shape[0] = T, shape[1] = H, shape[2] = c->value_dim; return 3;
        case HOOK_DISTANCE_SCORE:
        case HOOK_ATTN_SCORES:
        case HOOK_PATTERN: shape[0] = H, shape[1] = T, shape[2] = T; return 3;
        case HOOK_HIDDEN_IN: shape[0] = T, shape[1] = slm_model_hidden_input_dim(c); return 2;
        case HOOK_HIDDEN: shape[0] = T, shape[1] = c->hidden_dim; return 2;
        case HOOK_LOGITS: shape[0] = T, shape[1] = c->vocab_size; return 2;
        default: return 0;
    }
}

/* Appends "\n" (unless first) and name to *out (*size bytes, *used of them taken), growing it. */
static int append_name(char **out, size_t *size, size_t *used, const char *name, Error *e) {
    size_t need = *used + strlen(name) + 2;
    if (need > *size) {
        char *grown = xrealloc(*out, need * 2, e);
        if (!grown) return -1;
        *out = grown, *size = need * 2;
    }
    *used += (size_t)snprintf(*out + *used, *size - *used, "%s%s", *used ? "\n" : "", name);
    return 0;
}

/* The points c's architecture declares, in its pass's order: the points
 * before the layers, each layer's, the points after them. */
char *slm_hook_names(const ModelConfig *c, Error *e) {
    size_t size = 0, used = 0;
    char *out = xcalloc(1, 1, e), name[96];
    HookPoints h;
    c->arch->hook_points(c, &h);
    int rc = out ? 0 : -1;
    for (int i = 0; !rc && i < h.n_before; i++) {
        slm_hook_name(h.before[i], 0, name, sizeof name);
        rc = append_name(&out, &size, &used, name, e);
    }
    for (int l = 0; l < h.layers; l++)
        for (int i = 0; !rc && i < h.n_block; i++) {
            slm_hook_name(h.block[i], l, name, sizeof name);
            rc = append_name(&out, &size, &used, name, e);
        }
    for (int i = 0; !rc && i < h.n_after; i++) {
        slm_hook_name(h.after[i], 0, name, sizeof name);
        rc = append_name(&out, &size, &used, name, e);
    }
    if (rc) free(out);
    return rc ? NULL : out;
}

void slm_hooks_fail(ForwardHooks *h, const char *message, const char *hint) {
    h->failed = 1;
    slm_error_set(&h->error, __FILE__, __LINE__, hint && hint[0] ? hint : NULL, "%s", message);
}

void slm_hooks_free(ForwardHooks *h) {
    free(h->buf);
    free(h->attn_out);
    h->buf = h->attn_out = NULL;
    h->cap = 0;
    h->attn_out_layer = 0;
}

int slm_hooks_check(const Activations *a, Error *e) {
    if (!a->hooks || !a->hooks->failed) return 0;
    if (e) *e = a->hooks->error;
    return -1;
}

static int wanted(const ForwardHooks *h, const char *name) {
    if (!h->names) return 1;
    for (int i = 0; i < h->n_names; i++)
        if (strcmp(h->names[i], name) == 0) return 1;
    return 0;
}

/* Where head h's query (HOOK_Q), key or value component i lies in qkv's rows. */
static size_t qkv_row(const ModelConfig *c, HookPoint p, int h, int i) {
    int H = c->n_heads, kd = c->key_dim;
    return p == HOOK_Q   ? (size_t)h * kd + i
           : p == HOOK_K ? (size_t)(H + h) * kd + i
                         : (size_t)2 * H * kd + h * c->value_dim + i;
}

/* qkv rows (QKV, ld) <-> buf (T, H, d); to_buf: gather, else scatter. */
static void move_qkv(Activations *a, HookPoint p, int l, float *buf, int to_buf) {
    const ModelConfig *c = &a->cfg;
    int T = a->n_positions, H = c->n_heads, d = p == HOOK_V ? c->value_dim : c->key_dim;
    float *qkv = c->arch->layer_qkv(a, l);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < d; i++) {
                float *x = qkv + qkv_row(c, p, h, i) * a->qkv_ld + t, *y = buf + ((size_t)t * H + h) * d + i;
                if (to_buf)
                    *y = *x;
                else
                    *x = *y;
            }
}

/* buf (H, T, T): layer l's distance scores (lm its view) or attention weights, 0 where unread. */
static void gather_square(const Model *lm, const Activations *a, HookPoint p, int l, float *buf) {
    int T = a->n_positions, H = a->cfg.n_heads;
    memset(buf, 0, (size_t)H * T * T * sizeof(float));
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            int first, n;
            const float *w = slm_activations_attention(a, l * H + h, t, &first, &n);
            float *row = buf + ((size_t)h * T + t) * T;
            for (int j = 0; j < n; j++)
                row[first + j] = p == HOOK_PATTERN ? w[j] : slm_position_distance_score(lm, h, t - first - j);
        }
}

/* A changed pattern buf (H, T, T): the outputs in z of layer l's heads whose
 * pattern differs from was (H, T, T) become pattern @ values (the others
 * keep the kernel's bits; switched-off heads keep their replacement). */
void slm_hooks_outputs_from_pattern(Activations *a, int l, const float *buf, const float *was) {
    const ModelConfig *c = &a->cfg;
    int T = a->n_positions, H = c->n_heads, vd = c->value_dim;
    size_t TT = (size_t)T * T;
    const float *qkv = c->arch->layer_qkv(a, l);
    for (int h = 0; h < H; h++) {
        if (slm_head_set_has(&a->ablation.heads, l * H + h) ||
            memcmp(buf + h * TT, was + h * TT, TT * sizeof(float)) == 0)
            continue;
        const float *v = qkv + qkv_row(c, HOOK_V, h, 0) * a->qkv_ld;
        for (int t = 0; t < T; t++) {
            const float *w = buf + ((size_t)h * T + t) * T;
            float *out = c->arch->head_output(a, l, t, h);
            for (int i = 0; i < vd; i++) {
                double sum = 0;
                for (int u = 0; u < T; u++) sum += (double)w[u] * v[(size_t)i * a->qkv_ld + u];
                out[i] = (float)sum;
            }
        }
    }
}

/* buf (H, T, T): layer l's scores (lm its view), each read key's content score
 * (q and k as the kernel read them) plus its distance score, -inf elsewhere. */
static void gather_scores(const Model *lm, const Activations *a, int l, float *buf) {
    int T = a->n_positions, H = a->cfg.n_heads;
    float q[STORYLM_MAX_HEAD_DIM], k[STORYLM_MAX_HEAD_DIM];
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            float *row = buf + ((size_t)h * T + t) * T;
            for (int u = 0; u < T; u++) row[u] = -INFINITY;
            slm_activations_qkv(a, l * H + h, t, q, NULL, NULL);
            for (int u = a->first_key[t]; u <= t; u++) {
                slm_activations_qkv(a, l * H + h, u, NULL, k, NULL);
                row[u] = slm_score_content(lm, h, q, k) + slm_position_distance_score(lm, h, t - u);
            }
        }
}

int slm_hooks_scores_back(Activations *a, int l, const float *buf) {
    int T = a->n_positions, H = a->cfg.n_heads;
    size_t n = (size_t)H * T * T;
    float *was = xmalloc(2 * n * sizeof(float), &a->hooks->error), *pattern = was + n;
    if (!was) return -1;
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            int first, keys;
            float *w = (float *)slm_activations_attention(a, l * H + h, t, &first, &keys);
            const float *s = buf + ((size_t)h * T + t) * T;
            float *p = pattern + ((size_t)h * T + t) * T, *old = was + ((size_t)h * T + t) * T;
            double top = -INFINITY, sum = 0;
            memset(p, 0, T * sizeof(float)), memset(old, 0, T * sizeof(float));
            for (int j = 0; j < keys; j++) top = fmax(top, s[first + j]);
            for (int j = 0; j < keys; j++) sum += exp(s[first + j] - top);
            for (int j = 0; j < keys; j++) {
                old[first + j] = w[j];
                w[j] = p[first + j] = (float)(exp(s[first + j] - top) / sum);
            }
        }
    slm_hooks_outputs_from_pattern(a, l, pattern, was);
    free(was);
    return 0;
}

/* Changed logits: each position's log-sum-exp, loss and whether the target is the top guess again. */
static void losses_from_logits(Activations *a) {
    int V = a->cfg.vocab_size;
    for (int t = 0; t < a->n_positions; t++) {
        const float *row = a->logits + (size_t)t * V;
        double top = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++) top = fmax(top, row[v]);
        for (int v = 0; v < V; v++) sum += exp(row[v] - top);
        a->lse[t] = (float)(top + log(sum));
        int target = a->target[t], above = 0;
        for (int v = 0; target >= 0 && v < V; v++)
            above += row[v] > row[target] || (row[v] == row[target] && v < target);
        a->loss[t] = target >= 0 ? a->lse[t] - row[target] : 0.0f;
        a->correct[t] = target >= 0 && above == 0;
    }
}

/* Point p's numbers into buf; 0, or -1 when out of memory (a->hooks->error). */
static int gather(const Model *m, Activations *a, HookPoint p, int l, float *buf) {
    const ModelConfig *c = &a->cfg;
    size_t T = (size_t)a->n_positions;
    int own = c->arch->hook_move(m, a, p, l, buf, 1);
    if (own <= 0) return own; /* one of the architecture's own */
    switch (p) {
        case HOOK_Q:
        case HOOK_K:
        case HOOK_V: move_qkv(a, p, l, buf, 1); break;
        case HOOK_DISTANCE_SCORE:
        case HOOK_PATTERN: gather_square(m, a, p, l, buf); break;
        case HOOK_ATTN_SCORES: gather_scores(m, a, l, buf); break;
        case HOOK_HIDDEN: memcpy(buf, a->hidden, T * c->hidden_dim * sizeof(float)); break;
        case HOOK_LOGITS: memcpy(buf, a->logits, T * c->vocab_size * sizeof(float)); break;
        default: break;
    }
    return 0;
}

/* buf (changed by a hook) back into a; -1 when out of memory. */
static int scatter(const Model *m, Activations *a, HookPoint p, int l, const float *buf, Error *e) {
    const ModelConfig *c = &a->cfg;
    size_t T = (size_t)a->n_positions;
    float *was = NULL;
    int own = c->arch->hook_move(m, a, p, l, (float *)buf, 0);
    if (own <= 0) return own;
    switch (p) {
        case HOOK_Q:
        case HOOK_K:
        case HOOK_V: move_qkv(a, p, l, (float *)buf, 0); break;
        case HOOK_PATTERN:
            if (!(was = xmalloc((size_t)c->n_heads * T * T * sizeof(float), e))) return -1;
            gather_square(m, a, p, l, was);
            slm_hooks_outputs_from_pattern(a, l, buf, was);
            free(was);
            break;
        case HOOK_ATTN_SCORES: return slm_hooks_scores_back(a, l, buf);
        case HOOK_HIDDEN: memcpy(a->hidden, buf, T * c->hidden_dim * sizeof(float)); break;
        case HOOK_LOGITS: memcpy(a->logits, buf, T * c->vocab_size * sizeof(float)), losses_from_logits(a); break;
        default: break;
    }
    return 0;
}

void slm_hooks_at(const Model *m, Activations *a, HookPoint p, int l) {
    ForwardHooks *h = a->hooks;
    if (!h || h->failed) return;
    if (p == HOOK_RESULT) h->attn_out_layer = 0; /* a block's attention begins: nothing held */
    char name[96];
    slm_hook_name(p, l, name, sizeof name);
    if (!wanted(h, name)) return;
    int shape[4], ndim = hook_shape(a, p, shape);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    if (n > h->cap) {
        float *grown = xrealloc(h->buf, n * sizeof(float), &h->error);
        if (!grown) {
            h->failed = 1;
            return;
        }
        h->buf = grown, h->cap = n;
    }
    if (gather(m, a, p, l, h->buf)) {
        h->failed = 1;
        return;
    }
    int rc = h->fn(h->ctx, name, h->buf, ndim, shape, hook_specs[p].writable);
    if (rc == 1 && hook_specs[p].writable)
        h->failed = scatter(m, a, p, l, h->buf, &h->error) != 0;
    else if (rc == 1) {
        h->failed = 1;
        FAIL(&h->error, "return None (or the array unchanged) from a hook on it",
             "hook '%s' is read-only: the pass does not read it back", name);
    } else if (rc != 0 && !h->failed)
        slm_hooks_fail(h, "a hook stopped the forward pass", NULL);
}
