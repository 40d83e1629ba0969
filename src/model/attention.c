/* Causal multi-head attention with a learned score per distance back,
 * forward and backward side by side.
 *
 * Each head's keys and values are packed in blocks of 8 positions, (blocks,
 * kd + vd, 8): one block holds component i of 8 consecutive keys at offset
 * i*8, so a position's loops run block by block over contiguous memory, 8
 * keys in one vector register (GCC/Clang vector extensions: portable, and the
 * compiler has nothing to guess), every component at a fixed offset from one
 * pointer. A position's first and last blocks may reach keys it does not
 * read: those lanes get weight 0 and only ever add 0, so there are no scalar
 * remainder loops. Work is split by head: a head's gradients are written by
 * one thread only, so sums never race and results do not depend on the
 * thread count. */
#include "portable.h"
#include "storylm/attention.h"

#include <math.h>
#include <string.h>

#include "storylm/dropout.h"
#include "storylm/layers.h"
#include "storylm/model_params.h"
#include "storylm/score.h"

/* Contract a*b+c into FMA instructions (ISO C mode leaves them apart);
 * attention_portable.c compiles this file again without (portable.h). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(SLM_PORTABLE)
#pragma GCC optimize("fp-contract=fast")
#elif defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

typedef float f8 __attribute__((vector_size(32)));
/* Without AVX (a -march-less Debug build) GCC warns that passing f8 by value
 * changes the ABI; these helpers are static and inlined, no ABI is crossed. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

static inline f8 load8(const float *x) {
    f8 v;
    memcpy(&v, x, sizeof v);
    return v;
}
static inline void store8(float *x, f8 v) { memcpy(x, &v, sizeof v); }
static inline f8 splat8(float a) { return (f8){a, a, a, a, a, a, a, a}; }
static inline float sum8(f8 v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

/* Scratch rows: a window of W keys spans at most W/8 + 2 blocks; distance
 * scores get 8 zeros on each side for the lanes outside the window. */
int slm_attention_row_stride(int window) { return (window + 7) / 8 * 8 + 16; }

/* x . y over nb floats, nb a multiple of 8 */
static float dot8(const float *x, const float *y, int nb) {
    f8 acc = splat8(0.0f);
    for (int j = 0; j < nb; j += 8) acc += load8(x + j) * load8(y + j);
    return sum8(acc);
}

/* One head's view. Queries stay in qkv's transposed rows (component i of
 * position p at q[i*ld + p]); keys and values are packed in kv blocks. */
typedef struct Head {
    const float *q;          /* (kd, ld) */
    float *dq;               /* (kd, ld), backward only */
    float *kv;               /* (ld/8, kd+vd, 8): key components 0..kd-1, then value components */
    float *d_kv;             /* the same for gradients, backward only */
    float *dist;             /* (8 + W + 8): dist[8 + W-1-d] = distance score d, zeros around */
    float *d_dist;           /* the same for gradients, backward only */
    float *lse;              /* (ld): each position's log-sum-exp of its scores */
    const DropoutMask *drop; /* training's attention dropout (p 0: none) */
    float *dw;               /* (S): a position's weights after dropout */
    const float *v;          /* (kd) --score additive: the head's v (NULL: a dot-product score) */
    float *d_v;              /* (kd) its gradient, backward only */
    int h, kd, vd, ld, W;
    int g;       /* the head's number over all layers (dropout's stream) */
    float scale; /* 1/sqrt(kd) for scaled-dot, else 1 (slm_score_scale) */
} Head;

static size_t block_size(const ModelConfig *c) { return 8 * (size_t)(c->key_dim + c->value_dim); }

static Head head_view(const ModelConfig *c, const float *qkv, float *d_qkv, const AttentionScratch *s, int ld, int h) {
    size_t S = (size_t)slm_attention_row_stride(c->window), kv = (size_t)h * (ld / 8) * block_size(c);
    size_t q = (size_t)h * c->key_dim * ld;
    const VariantScratch *v = s->variant;
    int additive = c->score == SCORE_ADDITIVE && v && v->additive_v;
    return (Head){.v = additive ? v->additive_v + (size_t)h * c->key_dim : NULL,
                  .d_v = additive && v->d_additive_v ? v->d_additive_v + (size_t)h * c->key_dim : NULL,
                  .q = qkv + q,
                  .dq = d_qkv ? d_qkv + q : NULL,
                  .kv = s->kv + kv,
                  .d_kv = s->d_kv + kv,
                  .dist = s->dist + h * S,
                  .d_dist = s->d_dist + h * S,
                  .lse = s->lse + (size_t)h * ld,
                  .drop = &s->drop,
                  .dw = s->dw + h * S,
                  .h = h,
                  .g = s->head_base + h,
                  .kd = c->key_dim,
                  .vd = c->value_dim,
                  .ld = ld,
                  .W = c->window,
                  .scale = slm_score_scale(c)};
}

/* Position p's query (kd), times 1/sqrt(kd). */
static void scaled_query(const Head *r, int p, float *q) {
    for (int i = 0; i < r->kd; i++) q[i] = r->q[(size_t)i * r->ld + p] * r->scale;
}

/* The blocks position p reads: keys lo..p lie in blocks first.. first+count-1,
 * lane j of that span (0 .. 8*count-1) is the key at 8*first + j, and the n
 * keys read are lanes off .. off+n-1. */
typedef struct Span {
    int first, count, off, n;
} Span;

static Span span_of(int p, int lo) { return (Span){lo / 8, p / 8 - lo / 8 + 1, lo % 8, p - lo + 1}; }

/* The kernels below take the head's sizes as arguments and are inlined
 * twice: with the real sizes as constants (8, 16), so the loops over a key's
 * components unroll and their sums stay in registers, and with any sizes
 * (the tests' tiny models). */
#define KERNEL static inline __attribute__((always_inline))

/* Each kernel's three copies (8 and 16, 8 and 8, any sizes) as functions
 * kernel_8_16, kernel_8_8 and kernel_any, and BY_SIZE calling the one of a
 * head's sizes. In WebAssembly each is a function of its own: V8 compiles a
 * function with its optimising compiler only once it runs hot, off the main
 * thread, and runs it on its baseline code until then; the passes with every
 * copy inlined (64 KB of wasm for the backward pass) took it 0.3 to 1 s, and
 * compiled copies that never run. Natively they stay inlined. */
#ifdef __wasm__
#define SIZED static __attribute__((noinline))
#else
#define SIZED static inline __attribute__((always_inline))
#endif
#define SIZES(kernel, params, ...)                                                                                     \
    SIZED void kernel##_8_16 params { kernel(r, 8, 16, __VA_ARGS__); }                                                 \
    SIZED void kernel##_8_8 params { kernel(r, 8, 8, __VA_ARGS__); }                                                   \
    SIZED void kernel##_any params { kernel(r, r->kd, r->vd, __VA_ARGS__); }
#define BY_SIZE(kernel, r, ...)                                                                                        \
    ((r)->kd == 8 && (r)->vd == 16  ? kernel##_8_16(r, __VA_ARGS__)                                                    \
     : (r)->kd == 8 && (r)->vd == 8 ? kernel##_8_8(r, __VA_ARGS__)                                                     \
                                    : kernel##_any(r, __VA_ARGS__))

/* t (8*kd) = tanh(q_i + key component i) for a block's 8 keys, every
 * component at once: one call of layers.c's vectorizable tanh a block. */
static inline void additive_tanh(const float *q, int kd, const float *kv, float *t) {
    for (int i = 0; i < kd; i++) store8(t + 8 * i, splat8(q[i]) + load8(kv + 8 * i));
    slm_tanh_inplace(t, 8 * kd);
}

/* --score additive, position p: w (8*count lanes) = v . tanh(q~ + k~) +
 * distance score, q~ = A q and k~ = B k made before (slm_score_qk_forward). */
static void additive_scores_one(const Head *r, int p, Span sp, float *w) {
    const int kd = r->kd, bs = 8 * (kd + r->vd);
    float q[STORYLM_MAX_HEAD_DIM];
    const float *kv = r->kv + (size_t)sp.first * bs;
    const float *dist = r->dist + 8 + r->W - 1 - p + 8 * sp.first;
    float t[8 * STORYLM_MAX_HEAD_DIM];
    scaled_query(r, p, q);
    for (int b = 0; b < sp.count; b++) {
        f8 s = load8(dist + 8 * b);
        additive_tanh(q, kd, kv + b * bs, t);
        for (int i = 0; i < kd; i++) s += splat8(r->v[i]) * load8(t + 8 * i);
        store8(w + 8 * b, s);
    }
}

/* page: attention forward */
/* Position p: w (8*count lanes) = q.k/sqrt(kd) + distance score (or the additive score). */
KERNEL void scores_one(const Head *r, const int kd, const int vd, int p, Span sp, float *w) {
    if (r->v) {
        additive_scores_one(r, p, sp, w);
        return;
    }
    const int bs = 8 * (kd + vd);
    float q[STORYLM_MAX_HEAD_DIM];
    const float *kv = r->kv + (size_t)sp.first * bs;
    const float *dist = r->dist + 8 + r->W - 1 - p + 8 * sp.first; /* lane j's key is p - (8*first + j) back */
    scaled_query(r, p, q);
    for (int b = 0; b < sp.count; b++) {
        f8 s = load8(dist + 8 * b);
#pragma GCC unroll 16
        for (int i = 0; i < kd; i++) s += splat8(q[i]) * load8(kv + b * bs + 8 * i);
        store8(w + 8 * b, s);
    }
}

SIZES(scores_one, (const Head *r, int p, Span sp, float *w), p, sp, w)

/* w (8*count lanes): 0 outside the read lanes off .. off+n-1. */
static inline void zero_unread(Span sp, float *w) {
    for (int j = 0; j < sp.off; j++) w[j] = 0.0f; /* fewer than 8 each: loops, not memset calls */
    for (int j = sp.off + sp.n; j < 8 * sp.count; j++) w[j] = 0.0f;
}

/* Position p: w (8*count lanes) = softmax over the read lanes of q.k/sqrt(kd)
 * + distance score, 0 elsewhere; the scores' log-sum-exp kept in lse[p]. */
KERNEL void weights_one(const Head *r, const int kd, const int vd, int p, Span sp, float *w) {
    scores_one(r, kd, vd, p, sp, w);
    r->lse[p] = slm_softmax_inplace(w + sp.off, sp.n);
    zero_unread(sp, w);
}
/* page: end */

/* The hook of attention dropout: position p's weights w (8*count lanes) as
 * the blend reads them: w itself, or (training with dropout) a copy whose
 * read lanes are masked, in r->dw. The softmax's backward still takes w. */
static inline void mask_lanes(const Head *r, int p, Span sp, float *x) {
    size_t N = (size_t)r->drop->n_positions;
    slm_dropout_apply(r->drop, p, (uint64_t)r->g, ((size_t)r->g * N + p) * N + (size_t)(p - sp.n + 1), x + sp.off,
                      sp.n);
}

static inline const float *dropped_weights(const Head *r, int p, Span sp, const float *w) {
    if (!(r->drop->p > 0)) return w;
    memcpy(r->dw, w, 8 * (size_t)sp.count * sizeof(float));
    mask_lanes(r, p, sp, r->dw);
    return r->dw;
}

/* page: attention forward */
/* Position p: w as weights_one leaves it; out (vd) = sum of w * values
 * (w after dropout, when training with it). */
KERNEL void attend_one(const Head *r, const int kd, const int vd, int p, Span sp, float *w, float *out) {
    const int bs = 8 * (kd + vd);
    f8 acc[STORYLM_MAX_HEAD_DIM];
    const float *kv = r->kv + (size_t)sp.first * bs;
    weights_one(r, kd, vd, p, sp, w);
    const float *wb = dropped_weights(r, p, sp, w);
#ifdef __wasm_simd128__
    /* wasm engines keep 15 vectors in registers, and vd sums of two wasm vectors each would live in memory:
     * 4 channels at a time over the blocks instead, each channel's sum in the same order */
    for (int c0 = 0; c0 < vd; c0 += 4) {
        int cn = vd - c0 < 4 ? vd - c0 : 4;
        for (int ch = 0; ch < cn; ch++) acc[ch] = splat8(0.0f);
        for (int b = 0; b < sp.count; b++) {
            f8 a = load8(wb + 8 * b);
            for (int ch = 0; ch < cn; ch++) acc[ch] += a * load8(kv + b * bs + 8 * (kd + c0 + ch));
        }
        for (int ch = 0; ch < cn; ch++) out[c0 + ch] = sum8(acc[ch]);
    }
    return;
#endif
#pragma GCC unroll 16
    for (int ch = 0; ch < vd; ch++) acc[ch] = splat8(0.0f);
    for (int b = 0; b < sp.count; b++) {
        f8 a = load8(wb + 8 * b);
#pragma GCC unroll 16
        for (int ch = 0; ch < vd; ch++) acc[ch] += a * load8(kv + b * bs + 8 * (kd + ch));
    }
#pragma GCC unroll 16
    for (int ch = 0; ch < vd; ch++) out[ch] = sum8(acc[ch]);
}

SIZES(attend_one, (const Head *r, int p, Span sp, float *w, float *out), p, sp, w, out)

/* One head over every position: att (N, S) rows of lanes, or, att NULL, the
 * weights left in the scratch row w (S) only; out (N, out_ld). */
static void attend_head(const Head *r, const int *first_key, int N, float *att, float *w, float *out, int out_ld) {
    size_t S = (size_t)slm_attention_row_stride(r->W);
    for (int p = 0; p < N; p++) {
        Span sp = span_of(p, first_key[p]);
        float *row = att ? att + p * S : w, *o = out + (size_t)p * out_ld;
        /* the attention network's heads (8, 16), the default transformer's (8, 8): sizes known, loops unrolled */
        BY_SIZE(attend_one, r, p, sp, row, o);
    }
}

/* Head h's keys and values: qkv rows (QKV, ld) -> kv blocks (zeros past N);
 * its distance scores (W) -> dist, farthest first, 8 zeros on each side. */
static void pack_head(const ModelConfig *c, const float *qkv, int ld, int N, int h, const float *distance,
                      const Head *r) {
    int H = c->n_heads, kd = c->key_dim, vd = c->value_dim, W = c->window;
    float *kv = r->kv, *dist = r->dist;
    for (int b = 0; b < ld / 8; b++)
        for (int i = 0; i < kd + vd; i++) {
            size_t row = i < kd ? (size_t)(H + h) * kd + i : 2 * (size_t)H * kd + (size_t)h * vd + (i - kd);
            float *dst = kv + ((size_t)b * (kd + vd) + i) * 8;
            const float *src = qkv + row * ld + 8 * b;
            if (8 * b + 8 <= N) /* a whole block: one copy (the element loop was 2% of a BF16 step) */
                memcpy(dst, src, 8 * sizeof(float));
            else
                for (int l = 0; l < 8; l++) dst[l] = 8 * b + l < N ? src[l] : 0.0f;
        }
    memset(dist, 0, slm_attention_row_stride(W) * sizeof(float));
    for (int d = 0; d < W; d++) dist[8 + W - 1 - d] = distance[d];
}

/* qkv (QKV, ld), distance (H, W), first_key (N) -> att (H, N, S) (or
 * nothing, att NULL), out: head h of position p at out + p*out_ld + h*vd.
 * s: kv and dist are filled (and kept for the backward pass). */
void slm_attention_forward(Kernels k, const ModelConfig *c, const float *qkv, int ld, const float *distance,
                           const int *first_key, int N, float *att, float *out, int out_ld, const AttentionScratch *s) {
#ifndef SLM_PORTABLE
    if (k == KERNELS_PORTABLE) {
        slm_attention_forward_portable(k, c, qkv, ld, distance, first_key, N, att, out, out_ld, s);
        return;
    }
#endif
    int W = c->window, S = slm_attention_row_stride(W);
#pragma omp parallel for schedule(static)
    for (int h = 0; h < c->n_heads; h++) {
        Head r = head_view(c, qkv, NULL, s, ld, h);
        pack_head(c, qkv, ld, N, h, distance + (size_t)h * W, &r);
        attend_head(&r, first_key, N, att ? att + (size_t)h * N * S : NULL, s->w + (size_t)h * S,
                    out + (size_t)h * c->value_dim, out_ld);
    }
}
/* page: end */

/* Through the blend: da (8*count) = d_out . value of each key; d value += w * d_out. */
KERNEL void blend_backward(const Head *r, const int kd, const int vd, Span sp, const float *w, const float *d_out,
                           float *da) {
    const int bs = 8 * (kd + vd);
    const float *kv = r->kv + (size_t)sp.first * bs;
    float *d_kv = r->d_kv + (size_t)sp.first * bs, g_out[STORYLM_MAX_HEAD_DIM];
    memcpy(g_out, d_out, vd * sizeof(float));
    for (int b = 0; b < sp.count; b++) {
        f8 a = load8(w + 8 * b), g = splat8(0.0f);
#pragma GCC unroll 16
        for (int ch = 0; ch < vd; ch++) {
            size_t at = (size_t)b * bs + 8 * (kd + ch);
            g += splat8(g_out[ch]) * load8(kv + at);
            store8(d_kv + at, load8(d_kv + at) + splat8(g_out[ch]) * a);
        }
        store8(da + 8 * b, g);
    }
}

/* --score additive: score_backward's part after the softmax. g (8*count
 * lanes) = d score of each key -> d q~ of p, d k~ of each key, d v +=. */
static void additive_score_backward(const Head *r, int p, Span sp, const float *w, const float *ds, float mean) {
    const int kd = r->kd, bs = 8 * (kd + r->vd);
    float q[STORYLM_MAX_HEAD_DIM];
    f8 dq[STORYLM_MAX_HEAD_DIM], dv[STORYLM_MAX_HEAD_DIM];
    const float *kv = r->kv + (size_t)sp.first * bs;
    float *d_kv = r->d_kv + (size_t)sp.first * bs, *d_dist = r->d_dist + 8 + r->W - 1 - p + 8 * sp.first;
    float tb[8 * STORYLM_MAX_HEAD_DIM];
    scaled_query(r, p, q);
    for (int i = 0; i < kd; i++) dq[i] = dv[i] = splat8(0.0f);
    for (int b = 0; b < sp.count; b++) {
        f8 g = load8(w + 8 * b) * (load8(ds + 8 * b) - splat8(mean));
        store8(d_dist + 8 * b, load8(d_dist + 8 * b) + g);
        additive_tanh(q, kd, kv + (size_t)b * bs, tb);
        for (int i = 0; i < kd; i++) {
            size_t at = (size_t)b * bs + 8 * i;
            f8 t = load8(tb + 8 * i), gt = g * splat8(r->v[i]) * (splat8(1.0f) - t * t);
            dv[i] += g * t;
            dq[i] += gt;
            store8(d_kv + at, load8(d_kv + at) + gt);
        }
    }
    for (int i = 0; i < kd; i++) {
        r->dq[(size_t)i * r->ld + p] = sum8(dq[i]) * r->scale;
        if (r->d_v) r->d_v[i] += sum8(dv[i]);
    }
}

/* Through softmax and the scores: ds = w (da - w.da); d distance (summed
 * along the diagonal), d query of p, d keys. ds (8*count) holds da. */
KERNEL void score_backward(const Head *r, const int kd, const int vd, int p, Span sp, const float *w, const float *ds) {
    if (r->v) {
        additive_score_backward(r, p, sp, w, ds, dot8(w, ds, 8 * sp.count));
        return;
    }
    const int bs = 8 * (kd + vd);
    float q[STORYLM_MAX_HEAD_DIM], mean = dot8(w, ds, 8 * sp.count);
    f8 dq[STORYLM_MAX_HEAD_DIM];
    const float *kv = r->kv + (size_t)sp.first * bs;
    float *d_kv = r->d_kv + (size_t)sp.first * bs, *d_dist = r->d_dist + 8 + r->W - 1 - p + 8 * sp.first;
    scaled_query(r, p, q);
#pragma GCC unroll 16
    for (int i = 0; i < kd; i++) dq[i] = splat8(0.0f);
    for (int b = 0; b < sp.count; b++) {
        f8 g = load8(w + 8 * b) * (load8(ds + 8 * b) - splat8(mean));
        store8(d_dist + 8 * b, load8(d_dist + 8 * b) + g);
#pragma GCC unroll 16
        for (int i = 0; i < kd; i++) {
            size_t at = (size_t)b * bs + 8 * i;
            dq[i] += g * load8(kv + at);
            store8(d_kv + at, load8(d_kv + at) + splat8(q[i]) * g);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kd; i++) r->dq[(size_t)i * r->ld + p] = sum8(dq[i]) * r->scale;
}

/* Backward of attend_one: d_out (vd) -> d q of p, d keys, d values, d distance.
 * w (8*count): the weights, 0 outside the keys read; ds scratch. With
 * dropout the blend read w * mask / (1-P): so does its backward, and the
 * weights' gradient is masked the same way before the softmax's. */
KERNEL void attend_one_backward(const Head *r, const int kd, const int vd, int p, Span sp, const float *w,
                                const float *d_out, float *ds) {
    blend_backward(r, kd, vd, sp, dropped_weights(r, p, sp, w), d_out, ds);
    if (r->drop->p > 0) mask_lanes(r, p, sp, ds);
    score_backward(r, kd, vd, p, sp, w, ds);
}
SIZES(attend_one_backward, (const Head *r, int p, Span sp, const float *w, const float *d_out, float *ds), p, sp, w,
      d_out, ds)

/* d_kv blocks -> head h's key and value rows of d_qkv (QKV, ld). */
static void unpack_head_grads(const ModelConfig *c, const Head *r, int h, float *d_qkv) {
    int H = c->n_heads, kd = c->key_dim, vd = c->value_dim, ld = r->ld;
    for (int b = 0; b < ld / 8; b++)
        for (int i = 0; i < kd + vd; i++) {
            size_t row = i < kd ? (size_t)(H + h) * kd + i : 2 * (size_t)H * kd + (size_t)h * vd + (i - kd);
            memcpy(d_qkv + row * ld + 8 * b, r->d_kv + ((size_t)b * (kd + vd) + i) * 8, 8 * sizeof(float));
        }
}

/* Position p's weights: att's row, or computed again into w (S), from the
 * scores and the forward's log-sum-exp: one exp a key, no max or sum. */
static const float *weights_of(const Head *r, const float *att, int p, Span sp, float *w) {
    if (att) return att + p * (size_t)slm_attention_row_stride(r->W);
    BY_SIZE(scores_one, r, p, sp, w);
    slm_exp_inplace(w + sp.off, sp.n, r->lse[p]);
    zero_unread(sp, w);
    return w;
}

/* Positions p and p + 1 at once, from the same first block (sp0, sp1 their
 * spans; sp1 may have one block more, where w0 is 0): attend_one_backward of
 * p and then of p + 1, each key's values and key read once and its gradients
 * loaded and stored once for both. Every gradient entry still gets p's term
 * and then p + 1's, and p's extra block adds exact zeros (weights 0, as in
 * any block's unread lanes), so the bits are those of one position at a time.
 * da0, da1 (8*count) scratch; the plain dot-product score, no dropout. */
KERNEL void attend_two_backward(const Head *r, const int kd, const int vd, int p, Span sp0, Span sp1, const float *w0,
                                const float *w1, const float *d_out0, const float *d_out1, float *da0, float *da1) {
    const int bs = 8 * (kd + vd);
    const float *kv = r->kv + (size_t)sp1.first * bs;
    float *d_kv = r->d_kv + (size_t)sp1.first * bs, *d_dist = r->d_dist + 8 + r->W - 1 - p + 8 * sp1.first;
    float g0[STORYLM_MAX_HEAD_DIM], g1[STORYLM_MAX_HEAD_DIM], q0[STORYLM_MAX_HEAD_DIM], q1[STORYLM_MAX_HEAD_DIM];
    memcpy(g0, d_out0, vd * sizeof(float));
    memcpy(g1, d_out1, vd * sizeof(float));
    for (int b = 0; b < sp1.count; b++) { /* blend_backward of both */
        f8 a0 = load8(w0 + 8 * b), a1 = load8(w1 + 8 * b), s0 = splat8(0.0f), s1 = splat8(0.0f);
#pragma GCC unroll 16
        for (int ch = 0; ch < vd; ch++) {
            size_t at = (size_t)b * bs + 8 * (kd + ch);
            f8 v = load8(kv + at), d = load8(d_kv + at);
            s0 += splat8(g0[ch]) * v;
            s1 += splat8(g1[ch]) * v;
            d += splat8(g0[ch]) * a0;
            d += splat8(g1[ch]) * a1;
            store8(d_kv + at, d);
        }
        store8(da0 + 8 * b, s0);
        store8(da1 + 8 * b, s1);
    }
    f8 dq0[STORYLM_MAX_HEAD_DIM], dq1[STORYLM_MAX_HEAD_DIM];
    float mean0 = dot8(w0, da0, 8 * sp0.count), mean1 = dot8(w1, da1, 8 * sp1.count);
    scaled_query(r, p, q0);
    scaled_query(r, p + 1, q1);
#ifdef __wasm_simd128__
    /* as attend_one: each block's two score gradients kept in da0, da1 (stored, the same floats), then
     * one component at a time over the blocks, each sum and each d_kv entry added to in the same order */
    for (int b = 0; b < sp1.count; b++) {
        f8 e0 = load8(w0 + 8 * b) * (load8(da0 + 8 * b) - splat8(mean0));
        f8 e1 = load8(w1 + 8 * b) * (load8(da1 + 8 * b) - splat8(mean1));
        store8(d_dist + 8 * b, load8(d_dist + 8 * b) + e0);
        store8(d_dist - 1 + 8 * b, load8(d_dist - 1 + 8 * b) + e1);
        store8(da0 + 8 * b, e0), store8(da1 + 8 * b, e1);
    }
    for (int i = 0; i < kd; i++) {
        f8 s0 = splat8(0.0f), s1 = splat8(0.0f);
        for (int b = 0; b < sp1.count; b++) {
            size_t at = (size_t)b * bs + 8 * i;
            f8 e0 = load8(da0 + 8 * b), e1 = load8(da1 + 8 * b), k = load8(kv + at), d = load8(d_kv + at);
            s0 += e0 * k;
            s1 += e1 * k;
            d += splat8(q0[i]) * e0;
            d += splat8(q1[i]) * e1;
            store8(d_kv + at, d);
        }
        r->dq[(size_t)i * r->ld + p] = sum8(s0) * r->scale;
        r->dq[(size_t)i * r->ld + p + 1] = sum8(s1) * r->scale;
    }
    return;
#endif
#pragma GCC unroll 16
    for (int i = 0; i < kd; i++) dq0[i] = dq1[i] = splat8(0.0f);
    for (int b = 0; b < sp1.count; b++) { /* score_backward of both */
        f8 e0 = load8(w0 + 8 * b) * (load8(da0 + 8 * b) - splat8(mean0));
        f8 e1 = load8(w1 + 8 * b) * (load8(da1 + 8 * b) - splat8(mean1));
        store8(d_dist + 8 * b, load8(d_dist + 8 * b) + e0);
        store8(d_dist - 1 + 8 * b, load8(d_dist - 1 + 8 * b) + e1); /* p + 1 is one further from each key */
#pragma GCC unroll 16
        for (int i = 0; i < kd; i++) {
            size_t at = (size_t)b * bs + 8 * i;
            f8 k = load8(kv + at), d = load8(d_kv + at);
            dq0[i] += e0 * k;
            dq1[i] += e1 * k;
            d += splat8(q0[i]) * e0;
            d += splat8(q1[i]) * e1;
            store8(d_kv + at, d);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kd; i++) {
        r->dq[(size_t)i * r->ld + p] = sum8(dq0[i]) * r->scale;
        r->dq[(size_t)i * r->ld + p + 1] = sum8(dq1[i]) * r->scale;
    }
}
SIZES(attend_two_backward,
      (const Head *r, int p, Span sp0, Span sp1, const float *w0, const float *w1, const float *d_out0,
       const float *d_out1, float *da0, float *da1),
      p, sp0, sp1, w0, w1, d_out0, d_out1, da0, da1)

/* Position p alone: its weights (att's row, or computed into w), then attend_one_backward. */
static void position_backward(const Head *r, const float *att, int p, Span sp, const float *d_out, float *w,
                              float *ds) {
    const float *wp = weights_of(r, att, p, sp, w);
    BY_SIZE(attend_one_backward, r, p, sp, wp, d_out, ds);
}

/* Positions p and p + 1 (spans sp0, sp1 from the same first block) by
 * attend_two_backward; w (2 S) and ds (2 S) scratch. */
static void pair_backward(const Head *r, int p, Span sp0, Span sp1, const float *d_out, int out_ld, float *w,
                          float *ds) {
    size_t S = (size_t)slm_attention_row_stride(r->W);
    float *w0 = w, *w1 = w + S;
    weights_of(r, NULL, p, sp0, w0);
    weights_of(r, NULL, p + 1, sp1, w1);
    for (int j = 8 * sp0.count; j < 8 * sp1.count; j++) w0[j] = 0.0f; /* p does not read p + 1's new block */
    const float *g0 = d_out + (size_t)p * out_ld, *g1 = g0 + out_ld;
    BY_SIZE(attend_two_backward, r, p, sp0, sp1, w0, w1, g0, g1, ds, ds + S);
}

/* One head's backward over all positions into its d_kv blocks, d query rows
 * and d_dist; then d_distance (W) +=. att (N, S) rows as the forward left
 * them, or NULL: each position's weights computed again (a few multiply-adds
 * a key, against 8.7 KB a position stored and read back), and then two
 * neighbours from the same first block go together; w, ds (2 S) scratch. */
static void head_backward(const Head *r, const float *att, const int *first_key, int N, const float *d_out, int out_ld,
                          float *d_distance, float *w, float *ds) {
    size_t S = (size_t)slm_attention_row_stride(r->W);
    int pairs = !att && !r->v && !(r->drop->p > 0);
    memset(r->d_kv, 0, (size_t)(r->ld / 8) * 8 * (r->kd + r->vd) * sizeof(float));
    memset(r->d_dist, 0, S * sizeof(float));
    for (int p = 0; p < N; p++) {
        Span sp = span_of(p, first_key[p]);
        if (pairs && p + 1 < N && first_key[p + 1] / 8 == sp.first) {
            pair_backward(r, p, sp, span_of(p + 1, first_key[p + 1]), d_out, out_ld, w, ds);
            p++;
        } else
            position_backward(r, att, p, sp, d_out + (size_t)p * out_ld, w, ds);
    }
    for (int d = 0; d < r->W; d++) d_distance[d] += r->d_dist[8 + r->W - 1 - d];
}

/* d_out (head h of position p at d_out + p*out_ld + h*vd) -> d_qkv (QKV, ld) =
 * (0 for heads in skip_heads), d_distance (H, W) +=. s as slm_attention_forward
 * left it; its d_kv, d_dist, w and ds are scratch. */
void slm_attention_backward(Kernels k, const ModelConfig *c, const float *qkv, int ld, const float *att,
                            const int *first_key, int N, const float *d_out, int out_ld, uint32_t skip_heads,
                            float *d_qkv, float *d_distance, const AttentionScratch *s) {
#ifndef SLM_PORTABLE
    if (k == KERNELS_PORTABLE) {
        slm_attention_backward_portable(k, c, qkv, ld, att, first_key, N, d_out, out_ld, skip_heads, d_qkv, d_distance,
                                        s);
        return;
    }
#endif
    int W = c->window, S = slm_attention_row_stride(W);
#pragma omp parallel for schedule(static)
    for (int h = 0; h < c->n_heads; h++) {
        Head r = head_view(c, qkv, d_qkv, s, ld, h);
        memset(r.dq, 0, (size_t)r.kd * ld * sizeof(float)); /* positions past N stay 0 */
        if (!(skip_heads >> h & 1u))
            head_backward(&r, att ? att + (size_t)h * N * S : NULL, first_key, N, d_out + (size_t)h * r.vd, out_ld,
                          d_distance + (size_t)h * W, s->w + 2 * (size_t)h * S, s->ds + 2 * (size_t)h * S);
        else /* switched off: nothing flows back */
            memset(r.d_kv, 0, (size_t)(ld / 8) * block_size(c) * sizeof(float));
        unpack_head_grads(c, &r, h, d_qkv);
    }
}

/* ---- the layout of qkv ---------------------------------------------------- */

int slm_qkv_rows(const ModelConfig *c) { return c->n_heads * (2 * c->key_dim + c->value_dim); }

/* Row stride of qkv for N positions: N in whole blocks of 8 (attention packs
 * whole blocks), plus 8 floats so that rows read together never sit a
 * multiple of 4 KiB apart (they would evict each other from the same cache sets). */
int slm_qkv_stride(int N) { return (N + 7) / 8 * 8 + 8; }

void slm_pack_qkv(const float *query, const float *key, const float *value, int H, int D, int kd, int vd,
                  float *qkv_w) {
    for (int h = 0; h < H; h++)
        for (int r = 0; r < D; r++) {
            for (int i = 0; i < kd; i++) {
                qkv_w[(size_t)(h * kd + i) * D + r] = query[((size_t)h * D + r) * kd + i];
                qkv_w[(size_t)((H + h) * kd + i) * D + r] = key[((size_t)h * D + r) * kd + i];
            }
            for (int i = 0; i < vd; i++)
                qkv_w[(size_t)(2 * H * kd + h * vd + i) * D + r] = value[((size_t)h * D + r) * vd + i];
        }
}

void slm_unpack_qkv_grads(const float *d_qkv_w, int H, int D, int kd, int vd, float *d_query, float *d_key,
                          float *d_value) {
    for (int h = 0; h < H; h++)
        for (int r = 0; r < D; r++) {
            for (int i = 0; i < kd; i++) {
                d_query[((size_t)h * D + r) * kd + i] += d_qkv_w[(size_t)(h * kd + i) * D + r];
                d_key[((size_t)h * D + r) * kd + i] += d_qkv_w[(size_t)((H + h) * kd + i) * D + r];
            }
            for (int i = 0; i < vd; i++)
                d_value[((size_t)h * D + r) * vd + i] += d_qkv_w[(size_t)(2 * H * kd + h * vd + i) * D + r];
        }
}
