/* The variants of --pos and --score (issue 12):
 * - gradient checks: slm_model_backward and training's slm_model_loss_and_grad
 *   against central finite differences, in double, of a plain re-statement
 *   of each variant (loops straight from position.h and score.h, nothing
 *   shared with src/ but the fixed tags' formulas), every parameter of
 *   every tensor, on tiny models and on small ones with the real heads'
 *   sizes (the unrolled kernels), with ablation and dropout on some;
 * - a long story run as pieces computes what the whole story does;
 * - generation's key cache gives slm_model_forward's logits for every variant;
 * - every variant saved and loaded back exactly;
 * - the seed's worked examples, run through the network's own passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/checkpoint.h"
#include "storylm/generate.h"
#include "storylm/model.h"
#include "storylm/rng.h"

static const ModelConfig TINY = {.arch = &slm_attention_arch,
                                 .vocab_size = 11,
                                 .row_dim = 4,
                                 .n_heads = 3,
                                 .key_dim = 4,
                                 .value_dim = 3,
                                 .window = 4,
                                 .hidden_dim = 5,
                                 .context = 3};
static const ModelConfig SMALL_REAL_HEADS = {.arch = &slm_attention_arch,
                                             .vocab_size = 11,
                                             .row_dim = 6,
                                             .n_heads = 2,
                                             .key_dim = 8,
                                             .value_dim = 16,
                                             .window = 5,
                                             .hidden_dim = 6,
                                             .context = 3};

/* ---- the reference: one variant in double, straight from the headers ------------- */

typedef struct Ref {
    const Model *m;
    const double *p;
    const Dropout *drop; /* fixed masks or NULL */
    int base;            /* packed position of the story's first token */
    int N;               /* positions of the batch (the attention mask's stride) */
} Ref;

/* The fixed attention mask's factor for key u of position t (story positions)
 * in head g (numbered over all layers). */
static double weight_keep(const Ref *r, int g, int t, int u) {
    const Dropout *d = r->drop;
    if (!d || !d->attention_mask) return 1.0;
    size_t N = (size_t)r->N, p = (size_t)(r->base + t), k = (size_t)(r->base + u);
    return d->attention_mask[((size_t)g * N + p) * N + k] ? 1.0 / (1.0 - d->attention) : 0.0;
}

static const double *tensor(const Ref *r, const char *name) {
    const ParamTensor *t = slm_model_tensor(r->m, name);
    return t ? r->p + t->offset : NULL;
}

/* Layer l's own tensor called name in the first layer ("layer2.query" for l = 1). */
static const double *layer_tensor(const Ref *r, int l, const char *name) {
    return tensor(r, l == 0 ? name : slm_model_layer_tensor_name(l, name));
}

/* The row of position t: E[x_t] plus its tag (absolute: P[min(t, W-1)]; sinusoidal: sin/cos pairs). */
static void ref_row(const Ref *r, const int32_t *ids, int t, double *row) {
    const ModelConfig *c = &r->m->cfg;
    int D = c->row_dim;
    const double *E = tensor(r, "embedding"), *P = tensor(r, "position");
    for (int i = 0; i < D; i++) row[i] = E[ids[t] * D + i];
    if (c->pos == POS_ABSOLUTE)
        for (int i = 0; i < D; i++) row[i] += P[(t < c->window ? t : c->window - 1) * D + i];
    if (c->pos == POS_SINUSOIDAL)
        for (int i = 0; i < D; i++)
            row[i] += i % 2 ? cos(t * pow(10000.0, -(i - 1.0) / D)) : sin(t * pow(10000.0, -(double)i / D));
}

/* x (n) = in (Din) @ W[h] (Din, n), then (queries and keys of rope) turned by t. */
static void ref_project(const Ref *r, const double *in, int Din, const double *W, int h, int n, int t, int turn,
                        double *x) {
    const ModelConfig *c = &r->m->cfg;
    for (int i = 0; i < n; i++) {
        x[i] = 0.0;
        for (int j = 0; j < Din; j++) x[i] += in[j] * W[(h * Din + j) * n + i];
    }
    if (!turn || c->pos != POS_ROPE) return;
    for (int i = 0; 2 * i + 1 < n; i++) {
        double a = t * pow(10000.0, -2.0 * i / n), x0 = x[2 * i], x1 = x[2 * i + 1];
        x[2 * i] = x0 * cos(a) - x1 * sin(a);
        x[2 * i + 1] = x0 * sin(a) + x1 * cos(a);
    }
}

/* The T5 bucket of distance d, written out as T5's code does. */
static int ref_bucket(int d) {
    if (d < 16) return d;
    int b = 16 + (int)(log(d / 16.0) / log(128.0 / 16.0) * 16);
    return b < 31 ? b : 31;
}

/* Head h of layer l: its score of key k (at distance d back) for query q. */
static double ref_score(const Ref *r, int l, int h, const double *q, const double *k, int d) {
    const ModelConfig *c = &r->m->cfg;
    int kd = c->key_dim;
    double s = 0.0;
    if (c->score == SCORE_ADDITIVE) {
        const double *A = layer_tensor(r, l, "score.query"), *B = layer_tensor(r, l, "score.key");
        const double *v = layer_tensor(r, l, "score.v");
        for (int j = 0; j < kd; j++) {
            double a = 0.0;
            for (int i = 0; i < kd; i++) a += A[(h * kd + j) * kd + i] * q[i] + B[(h * kd + j) * kd + i] * k[i];
            s += v[h * kd + j] * tanh(a);
        }
    } else if (c->score == SCORE_GENERAL) {
        const double *G = layer_tensor(r, l, "score.weight");
        for (int i = 0; i < kd; i++)
            for (int j = 0; j < kd; j++) s += q[i] * G[(h * kd + i) * kd + j] * k[j];
    } else {
        for (int i = 0; i < kd; i++) s += q[i] * k[i];
        if (c->score == SCORE_SCALED_DOT) s /= sqrt(kd);
    }
    if (c->pos == POS_DISTANCE) s += layer_tensor(r, l, "distance")[h * c->window + d];
    if (c->pos == POS_ALIBI) s -= pow(2.0, -8.0 * (h + 1) / c->n_heads) * d;
    if (c->pos == POS_T5) s += layer_tensor(r, l, "distance_bucket")[h * 32 + ref_bucket(d)];
    return s;
}

#define REF_MAX_T 32
#define REF_MAX_Z 512

/* Head h of layer l at every position of a story of T tokens whose z (T, Z)
 * holds the rows and the layers below: its output into its slot of z. Layer
 * l >= 1 reads [row, layer l-1's heads]. */
static void ref_head(const Ref *r, int l, int h, int T, const Ablation *ab, double *z) {
    const ModelConfig *c = &r->m->cfg;
    int D = c->row_dim, kd = c->key_dim, vd = c->value_dim, H = c->n_heads, HV = H * vd, g = l * H + h;
    int Z = slm_model_hidden_input_dim(c), Din = l == 0 ? D : D + HV;
    const double *Wq = layer_tensor(r, l, "query"), *Wk = layer_tensor(r, l, "key"), *Wv = layer_tensor(r, l, "value");
    static double q[REF_MAX_T][64], k[REF_MAX_T][64], v[REF_MAX_T][64];
    double in[REF_MAX_Z], s[REF_MAX_T];
    for (int t = 0; t < T; t++) {
        memcpy(in, z + t * Z, D * sizeof(double));
        if (l > 0) memcpy(in + D, z + t * Z + D + (l - 1) * HV, HV * sizeof(double));
        ref_project(r, in, Din, Wq, h, kd, t, 1, q[t]);
        ref_project(r, in, Din, Wk, h, kd, t, 1, k[t]);
        ref_project(r, in, Din, Wv, h, vd, t, 0, v[t]);
    }
    for (int t = 0; t < T; t++) {
        int lo = t - c->window + 1 > 0 ? t - c->window + 1 : 0;
        double mx = -1e300, sum = 0.0, *o = z + t * Z + D + g * vd;
        for (int u = lo; u <= t; u++) mx = fmax(mx, s[u - lo] = ref_score(r, l, h, q[t], k[u], t - u));
        for (int u = lo; u <= t; u++) sum += exp(s[u - lo] - mx);
        for (int i = 0; i < vd; i++) o[i] = 0.0;
        for (int u = lo; u <= t; u++)
            for (int i = 0; i < vd; i++) o[i] += exp(s[u - lo] - mx) / sum * weight_keep(r, g, t, u) * v[u][i];
        if (ab && slm_head_set_has(&ab->heads, g))
            for (int i = 0; i < vd; i++) o[i] = 0.0;
    }
}

/* z (T, Z) of every position of a story ids of T tokens, layer by layer. */
static void ref_story_z(const Ref *r, const int32_t *ids, int T, const Ablation *ab, double *z) {
    const ModelConfig *c = &r->m->cfg;
    int Z = slm_model_hidden_input_dim(c);
    for (int t = 0; t < T; t++) ref_row(r, ids, t, z + t * Z);
    for (int l = 0; l < slm_model_layers(c); l++)
        for (int h = 0; h < c->n_heads; h++) ref_head(r, l, h, T, ab, z);
}

static double ref_position_loss(const Ref *r, const double *z, int next) {
    const ModelConfig *c = &r->m->cfg;
    int Z = slm_model_hidden_input_dim(c), Hd = c->hidden_dim, V = c->vocab_size;
    const double *W1 = tensor(r, "hidden.weight"), *b1 = tensor(r, "hidden.bias");
    const double *W2 = tensor(r, "output.weight"), *b2 = tensor(r, "output.bias");
    return check_ref_output_loss(W1, b1, W2, b2, Z, Hd, V, z, next);
}

static double ref_loss(const Ref *ref, const Batch *b, const Ablation *ab) {
    static double zs[REF_MAX_T * REF_MAX_Z];
    double total = 0.0;
    int n = 0, Z = slm_model_hidden_input_dim(&ref->m->cfg);
    Ref story = *ref;
    for (int s = 0; s < b->n_stories; s++) {
        const int32_t *ids = b->tokens + b->starts[s];
        int T = b->starts[s + 1] - b->starts[s];
        story.base = b->starts[s];
        ref_story_z(&story, ids, T, ab, zs);
        for (int t = 0; t + 1 < T; t++, n++) {
            double *z = zs + t * Z;
            const Dropout *d = story.drop;
            for (int i = 0; d && d->hidden_mask && i < Z; i++)
                z[i] *= d->hidden_mask[(size_t)(story.base + t) * Z + i] ? 1.0 / (1.0 - d->hidden) : 0.0;
            total += ref_position_loss(&story, z, ids[t + 1]);
        }
    }
    return total / n;
}

/* ---- gradient checks ------------------------------------------------------------- */

static void random_params(Model *m, Rng *rng, double scale) {
    for (size_t i = 0; i < m->n_params; i++) m->params[i] = (float)(slm_rng_normal(rng) * scale);
}

static void gradcheck(const ModelConfig *base, PosScheme pos, ScoreFn score, const Ablation *ab, int dropout) {
    ModelConfig cfg = *base;
    cfg.pos = pos;
    cfg.score = score;
    char what[96];
    char layers[24] = "";
    if (slm_model_layers(&cfg) > 1) snprintf(layers, sizeof layers, " --layers %d", slm_model_layers(&cfg));
    snprintf(what, sizeof what, "--pos %s --score %s%s%s%s (kd %d)", slm_pos_name(pos), slm_score_name(score), layers,
             ab ? " ablated" : "",
             dropout == 1   ? " dropout"
             : dropout == 2 ? " attention dropout"
                            : "",
             cfg.key_dim);
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 7 + pos * 10 + score);
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    CHECK(slm_activations_init(&a, &cfg, 32, &e) == 0);
    check_tiny_batch(&b, cfg.vocab_size, &rng);
    random_params(&m, &rng, 0.6);
    int Z = slm_model_hidden_input_dim(&cfg);
    uint8_t *mask = malloc((size_t)32 * Z);
    for (int i = 0; i < 32 * Z; i++) mask[i] = slm_rng_below(&rng, 4) != 0;
    int heads = slm_model_layers(&cfg) * cfg.n_heads; /* every layer's heads draw their own mask */
    uint8_t *att_mask = malloc((size_t)heads * 32 * 32);
    for (int i = 0; i < heads * 32 * 32; i++) att_mask[i] = slm_rng_below(&rng, 5) != 0;
    Dropout drop = {.hidden = 0.25f, .hidden_mask = mask};
    if (dropout == 2) drop = (Dropout){.attention = 0.2f, .attention_mask = att_mask};
    if (dropout) a.dropout = drop;
    float *grads = malloc(m.n_params * sizeof(float)), *fused = calloc(m.n_params, sizeof(float));
    double *p = malloc(m.n_params * sizeof(double));
    for (size_t i = 0; i < m.n_params; i++) p[i] = m.params[i];
    Ref ref = {&m, p, dropout ? &drop : NULL, 0, b.n_tokens};
    float loss;
    CHECK(slm_model_forward(&m, &a, &b, ab, &loss, &e) == 0);
    if (!CHECK_CLOSE(a.mean_loss, ref_loss(&ref, &b, ab), 2e-6, 0)) fprintf(stderr, "  %s: forward differs\n", what);
    slm_model_zero_grad(&m, grads);
    slm_model_backward(&m, &a, &b, grads);
    CHECK(slm_model_loss_and_grad(&m, &a, &b, ab, 1.0f / a.n_predicted, fused, &e) == 0);
    double worst = 0.0, h = 1e-5;
    for (int t = 0; t < m.n_tensors; t++) {
        const ParamTensor *pt = &m.tensors[t];
        double max_diff = 0.0, max_grad = 0.0;
        for (size_t i = pt->offset; i < pt->offset + pt->size; i++) {
            double saved = p[i];
            p[i] = saved + h;
            double up = ref_loss(&ref, &b, ab);
            p[i] = saved - h;
            double down = ref_loss(&ref, &b, ab);
            p[i] = saved;
            double numeric = (up - down) / (2 * h);
            max_diff = fmax(max_diff, fmax(fabs(numeric - grads[i]), fabs(numeric - fused[i])));
            max_grad = fmax(max_grad, fabs(numeric));
        }
        int ok = CHECK(max_grad > 0 ? max_diff <= 2e-4 * max_grad : max_diff == 0.0);
        if (!ok) fprintf(stderr, "  %s %s: diff %.3g, max %.3g\n", what, pt->name, max_diff, max_grad);
        if (max_grad > 0) worst = fmax(worst, max_diff / max_grad);
    }
    printf("%-52s loss %.6f, worst gradient %.2e of its tensor's max\n", what, loss, worst);
    free(mask);
    free(att_mask);
    free(p);
    free(grads);
    free(fused);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

static void gradient_checks(void) {
    for (int pos = 0; pos < POS_COUNT; pos++)
        for (int score = 0; score < SCORE_COUNT; score++)
            if (pos == POS_DISTANCE || score == SCORE_SCALED_DOT || pos == POS_ROPE) /* every scheme, every score */
                gradcheck(&TINY, (PosScheme)pos, (ScoreFn)score, NULL, 0);
    for (int pos = 0; pos < POS_COUNT; pos++) gradcheck(&SMALL_REAL_HEADS, (PosScheme)pos, SCORE_ADDITIVE, NULL, 0);
    gradcheck(&SMALL_REAL_HEADS, POS_T5, SCORE_GENERAL, NULL, 0);
    Ablation ab = {.heads = check_heads(2u), .mode = ABLATE_ZERO};
    gradcheck(&TINY, POS_ABSOLUTE, SCORE_ADDITIVE, &ab, 0);
    gradcheck(&TINY, POS_ABSOLUTE, SCORE_GENERAL, NULL, 1); /* dropout reads the rows again, tags and all */
    gradcheck(&TINY, POS_SINUSOIDAL, SCORE_DOT, NULL, 1);
    gradcheck(&TINY, POS_ROPE, SCORE_ADDITIVE, NULL, 2); /* the masked weights' gradient into the additive score */
    gradcheck(&SMALL_REAL_HEADS, POS_T5, SCORE_ADDITIVE, NULL, 2);
}

static ModelConfig with_layers(const ModelConfig *base, int layers) {
    ModelConfig c = *base;
    c.n_layers = layers;
    return c;
}

/* --layers: layer l+1 reads [row, layer l's heads], the hidden layer every
 * layer's heads; its tensors' gradients (and the first layer's through it). */
static void layer_gradient_checks(void) {
    ModelConfig two = with_layers(&TINY, 2), three = with_layers(&TINY, 3), real2 = with_layers(&SMALL_REAL_HEADS, 2);
    for (int pos = 0; pos < POS_COUNT; pos++) gradcheck(&two, (PosScheme)pos, SCORE_SCALED_DOT, NULL, 0);
    for (int score = 1; score < SCORE_COUNT; score++) gradcheck(&two, POS_DISTANCE, (ScoreFn)score, NULL, 0);
    gradcheck(&two, POS_ROPE, SCORE_ADDITIVE, NULL, 0);
    gradcheck(&three, POS_DISTANCE, SCORE_SCALED_DOT, NULL, 0);
    gradcheck(&two, POS_T5, SCORE_GENERAL, NULL, 0);
    gradcheck(&three, POS_ALIBI, SCORE_GENERAL, NULL, 0);
    gradcheck(&real2, POS_DISTANCE, SCORE_SCALED_DOT, NULL, 0);
    gradcheck(&real2, POS_ALIBI, SCORE_ADDITIVE, NULL, 0);
    /* layer 1's head 1 (layer 2 reads its replacement) and layer 2's head 2 */
    Ablation ab = {.heads = check_heads(1u << 1 | 1u << (TINY.n_heads + 2)), .mode = ABLATE_ZERO};
    gradcheck(&two, POS_DISTANCE, SCORE_SCALED_DOT, &ab, 0);
    gradcheck(&two, POS_ABSOLUTE, SCORE_GENERAL, NULL, 1);  /* dropout on z: the upper layers read it unmasked */
    gradcheck(&three, POS_ROPE, SCORE_SCALED_DOT, NULL, 2); /* every layer's heads their own attention mask */
    gradcheck(&real2, POS_DISTANCE, SCORE_SCALED_DOT, NULL, 2);
}

/* ---- a long story as pieces ------------------------------------------------------ */

/* A random model of cfg (seeded) and a random story of T <= 16 ids, run whole
 * and as the piece from position `from` with `context` tokens of context:
 * the largest difference of their losses over the piece's predictions. */
static double piece_gap(const ModelConfig *cfg, uint64_t seed, int T, int from, int context) {
    Model m;
    Activations whole, piece;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, seed);
    CHECK(slm_model_init(&m, cfg, &e) == 0);
    random_params(&m, &rng, 0.6);
    int32_t ids[16];
    ids[0] = 1;
    for (int t = 1; t < T; t++) ids[t] = (int32_t)slm_rng_below(&rng, 11);
    CHECK(slm_activations_init(&whole, cfg, 16, &e) == 0 && slm_activations_init(&piece, cfg, 16, &e) == 0);
    CHECK(slm_batch_init(&b, 16, 2, &e) == 0);
    CHECK(slm_batch_add(&b, ids, T, &e) == 0);
    CHECK(slm_model_forward(&m, &whole, &b, NULL, NULL, &e) == 0);
    slm_batch_clear(&b);
    CHECK(slm_batch_add_piece(&b, ids + from, T - from, (BatchPiece){.context = context, .offset = from, .next = -1},
                              &e) == 0);
    CHECK(slm_model_forward(&m, &piece, &b, NULL, NULL, &e) == 0);
    double worst = 0.0;
    for (int t = from + context; t < T - 1; t++) worst = fmax(worst, fabs(whole.loss[t] - piece.loss[t - from]));
    slm_batch_free(&b);
    slm_activations_free(&whole);
    slm_activations_free(&piece);
    slm_model_free(&m);
    return worst;
}

/* A story of 12 tokens, whole and as pieces of 7 (W-1 = 3 of context): the
 * same losses at every position (the pieces count positions from the story's start). */
static void pieces_match_the_whole_story(PosScheme pos, ScoreFn score) {
    ModelConfig cfg = TINY;
    cfg.pos = pos;
    cfg.score = score;
    double worst = piece_gap(&cfg, 99, 12, 5, 3); /* positions 5..11: context 5..7, predictions from 8 on */
    if (!CHECK(worst < 1e-5)) fprintf(stderr, "  --pos %s: a piece's losses differ by %g\n", slm_pos_name(pos), worst);
}

/* Two layers: a piece needs 2(W-1) tokens of context, as layer 2's keys read
 * layer 1's heads W-1 further back. A story of 16 tokens, whole and from
 * position 4 with 6 of context: the same losses; with only W-1 = 3 of
 * context (from position 7) the first prediction differs (so the test can fail). */
static void layered_pieces_match_the_whole_story(PosScheme pos) {
    ModelConfig cfg = with_layers(&TINY, 2);
    cfg.pos = pos;
    double worst = piece_gap(&cfg, 98, 16, 4, 6);
    if (!CHECK(worst < 1e-5))
        fprintf(stderr, "  --layers 2 --pos %s: a piece's losses differ by %g\n", slm_pos_name(pos), worst);
    CHECK(piece_gap(&cfg, 98, 16, 7, 3) > 1e-4);
}

/* Training's pass on a two-layer model with real heads' sizes: the same loss
 * and gradient bits on one thread and two, and slm_model_forward's loss. */
static void layers_thread_invariant(void) {
    ModelConfig cfg = with_layers(&SMALL_REAL_HEADS, 2);
    cfg.window = 8;
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 21);
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_activations_init(&a, &cfg, 64, &e) == 0);
    random_params(&m, &rng, 0.4);
    CHECK(slm_batch_init(&b, 64, 4, &e) == 0);
    int32_t ids[20];
    for (int s = 0; s < 3; s++) {
        ids[0] = 1;
        for (int t = 1; t < 20; t++) ids[t] = (int32_t)slm_rng_below(&rng, 11);
        CHECK(slm_batch_add(&b, ids, 20 - 4 * s, &e) == 0);
    }
    float *g[2];
    double loss[2];
    for (int threads = 1; threads <= 2; threads++) {
        slm_model_threads_setup(threads);
        g[threads - 1] = calloc(m.n_params, sizeof(float));
        CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 0.1f, g[threads - 1], &e) == 0);
        loss[threads - 1] = a.mean_loss;
    }
    CHECK(loss[0] == loss[1] && memcmp(g[0], g[1], m.n_params * sizeof(float)) == 0);
    float fwd;
    CHECK(slm_model_forward(&m, &a, &b, NULL, &fwd, &e) == 0);
    CHECK_CLOSE(fwd, loss[0], 1e-6, 0);
    free(g[0]);
    free(g[1]);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

/* ---- generation's cache ------------------------------------------------------------ */

/* Token by token through the generator against one forward pass over a story
 * longer than the window: the same logits at every position. */
static void generator_matches_forward(const ModelConfig *base, PosScheme pos, ScoreFn score, const Ablation *ab) {
    ModelConfig cfg = *base;
    cfg.pos = pos;
    cfg.score = score;
    Model m;
    Activations a;
    Batch b;
    Generator g;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 5);
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    random_params(&m, &rng, 0.5);
    int32_t ids[13];
    ids[0] = 1;
    for (int t = 1; t < 13; t++) ids[t] = (int32_t)slm_rng_below(&rng, (uint64_t)cfg.vocab_size);
    CHECK(slm_activations_init(&a, &cfg, 16, &e) == 0 && slm_batch_init(&b, 16, 1, &e) == 0);
    CHECK(slm_batch_add(&b, ids, 13, &e) == 0);
    CHECK(slm_model_forward(&m, &a, &b, ab, NULL, &e) == 0);
    CHECK(slm_generator_init(&g, &m, ab, &e) == 0);
    double worst = 0.0;
    for (int t = 0; t < 13; t++) {
        const float *logits = slm_generator_feed(&g, ids[t]);
        for (int v = 0; v < cfg.vocab_size; v++)
            worst = fmax(worst, fabs(logits[v] - a.logits[(size_t)t * cfg.vocab_size + v]));
    }
    if (!CHECK(worst < 2e-5))
        fprintf(stderr, "  generator, --pos %s --score %s, %d layers: logits differ by %g\n", slm_pos_name(pos),
                slm_score_name(score), slm_model_layers(&cfg), worst);
    slm_generator_free(&g);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

/* ---- saved and loaded back --------------------------------------------------------- */

static void saved_and_loaded_exactly(PosScheme pos, ScoreFn score, int layers) {
    ModelConfig cfg = with_layers(&TINY, layers);
    cfg.pos = pos;
    cfg.score = score;
    Model m, back;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 3);
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    random_params(&m, &rng, 1.0);
    char path[512], vocab[256] = "";
    for (int i = 0; i < cfg.vocab_size; i++) {
        char line[16];
        snprintf(line, sizeof line, i == 0 ? "[UNK]\n" : i == 1 ? "[EOS]\n" : "w%c\n", 'a' + i);
        strcat(vocab, line);
    }
    snprintf(path, sizeof path, "%s/variant_%s_%s_%d.safetensors", check_tmpdir(), slm_pos_name(pos),
             slm_score_name(score), layers);
    char *got_vocab = NULL;
    int saved = slm_checkpoint_save_model(path, &m, vocab, NULL, &e) == 0;
    if (!CHECK(saved)) fprintf(stderr, "  save: %s\n", e.message);
    int loaded = saved && slm_checkpoint_load_model(path, &back, &got_vocab, NULL, &e) == 0;
    if (!CHECK(loaded)) fprintf(stderr, "  load: %s\n", e.message);
    if (loaded) {
        CHECK(back.cfg.pos == pos && back.cfg.score == score && slm_model_layers(&back.cfg) == layers);
        CHECK(back.n_params == m.n_params && back.n_tensors == m.n_tensors);
        CHECK(memcmp(back.params, m.params, m.n_params * sizeof(float)) == 0);
        slm_model_free(&back);
    }
    free(got_vocab);
    /* "layers" in the header only when there is more than one: a one-layer file is as it was */
    FILE *f = fopen(path, "rb");
    char head[4096] = {0};
    if (f) {
        CHECK(fread(head, 1, sizeof head - 1, f) > 0);
        fclose(f);
    }
    CHECK((strstr(head + 8, "\"layers\"") != NULL) == (layers > 1));
    slm_model_free(&m);
}

/* A file from before --pos and --score (no such keys) loads as today's
 * network; an unknown scheme is refused with a message. The keys are renamed
 * in place, bytes of the same length, so the header stays valid. */
static void files_without_the_keys(void) {
    ModelConfig cfg = TINY;
    Model m, back;
    Error e;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    char path[512], vocab[256] = "";
    for (int i = 0; i < cfg.vocab_size; i++) {
        char line[16];
        snprintf(line, sizeof line, i == 0 ? "[UNK]\n" : i == 1 ? "[EOS]\n" : "w%c\n", 'a' + i);
        strcat(vocab, line);
    }
    snprintf(path, sizeof path, "%s/variant_old.safetensors", check_tmpdir());
    CHECK(slm_checkpoint_save_model(path, &m, vocab, NULL, &e) == 0);
    const char *edits[2][2] = {{"\"pos\":\"distance\"", "\"poz\":\"distance\""},
                               {"\"poz\":\"distance\"", "\"pos\":\"distanc3\""}};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(path, "r+b");
        char head[4096] = {0};
        size_t n = f ? fread(head, 1, sizeof head - 1, f) : 0;
        char *at = NULL;
        for (size_t i = 0; i + strlen(edits[k][0]) <= n && !at; i++)
            if (memcmp(head + i, edits[k][0], strlen(edits[k][0])) == 0) at = head + i;
        if (!CHECK(at != NULL)) {
            if (f) fclose(f);
            break;
        }
        memcpy(at, edits[k][1], strlen(edits[k][1]));
        fseek(f, 0, SEEK_SET);
        fwrite(head, 1, n, f);
        fclose(f);
        char *got_vocab = NULL;
        int rc = slm_checkpoint_load_model(path, &back, &got_vocab, NULL, &e);
        if (k == 0) {
            CHECK(rc == 0 && back.cfg.pos == POS_DISTANCE && back.cfg.score == SCORE_SCALED_DOT);
            if (rc == 0) slm_model_free(&back);
        } else {
            CHECK(rc != 0 && strstr(e.message, "unknown position scheme 'distanc3'"));
        }
        free(got_vocab);
    }
    slm_model_free(&m);
}

/* ---- the seed's worked examples ------------------------------------------------------ */

/* A one-head model of rows of 2 whose weights the examples set by hand. */
static void hand_model(Model *m, int kd, PosScheme pos, ScoreFn score) {
    ModelConfig cfg = {.arch = &slm_attention_arch,
                       .vocab_size = 4,
                       .row_dim = 2,
                       .n_heads = 1,
                       .key_dim = kd,
                       .value_dim = 2,
                       .window = 8,
                       .hidden_dim = 2,
                       .context = 3,
                       .pos = pos,
                       .score = score};
    Error e;
    CHECK(slm_model_init(m, &cfg, &e) == 0); /* zeros everywhere */
}

/* The head's weights at the story's last position, after one forward pass. */
static const float *last_weights(const Model *m, Activations *a, const int32_t *ids, int n) {
    Batch b;
    Error e;
    CHECK(slm_activations_init(a, &m->cfg, 8, &e) == 0 && slm_batch_init(&b, 8, 1, &e) == 0);
    CHECK(slm_batch_add(&b, ids, n, &e) == 0);
    CHECK(slm_model_forward(m, a, &b, NULL, NULL, &e) == 0);
    slm_batch_free(&b);
    int first, count;
    return slm_activations_attention(a, 0, n - 1, &first, &count);
}

/* "An additive score by hand": W1 = W2 = I, v = (1, 1), state (0.5, -0.5),
 * notes (1,0), (0,1), (1,1) -> weights (0.195, 0.315, 0.490). The notes are
 * three tokens' keys (key = row), the last one's query is the state. */
static void additive_score_by_hand(void) {
    Model m;
    Activations a;
    hand_model(&m, 2, POS_NONE, SCORE_ADDITIVE);
    float rows[3][2] = {{1, 0}, {0, 1}, {1, 1}};
    for (int t = 0; t < 3; t++) memcpy(m.embedding + (t + 1) * 2, rows[t], sizeof rows[t]);
    float *A = (float *)slm_model_param(&m, "score.query"), *B = (float *)slm_model_param(&m, "score.key");
    float *v = (float *)slm_model_param(&m, "score.v");
    A[0] = A[3] = B[0] = B[3] = 1.0f;
    v[0] = v[1] = 1.0f;
    m.key[0] = m.key[3] = 1.0f;            /* key = row */
    m.query[0] = 0.5f, m.query[1] = -0.5f; /* query of (1, 1): (0.5, -0.5) */
    int32_t ids[3] = {1, 2, 3};
    const float *w = last_weights(&m, &a, ids, 3);
    CHECK_CLOSE(w[0], 0.195, 0, 5e-4);
    CHECK_CLOSE(w[1], 0.315, 0, 5e-4);
    CHECK_CLOSE(w[2], 0.490, 0, 5e-4);
    float q[2] = {0.5f, -0.5f}, k[2] = {1, 1};
    CHECK_CLOSE(slm_additive_score(v, 2, q, k), 1.367, 0, 5e-4); /* tanh(1.5) + tanh(0.5) */
    slm_activations_free(&a);
    slm_model_free(&m);
}

/* sqrt(d): scores 8 and 0 with d = 64 freeze softmax at (0.99966, 0.00034);
 * divided by sqrt(64) = 8 they become 1 and 0, weights (0.731, 0.269). */
static void dividing_by_sqrt_d(void) {
    for (int scaled = 0; scaled < 2; scaled++) {
        Model m;
        Activations a;
        hand_model(&m, 64, POS_NONE, scaled ? SCORE_SCALED_DOT : SCORE_DOT);
        m.embedding[1 * 2 + 0] = 1.0f; /* token 1: row (1, 0), key 0 */
        m.embedding[2 * 2 + 1] = 1.0f; /* token 2: row (0, 1) */
        m.key[1 * 64 + 0] = 1.0f;      /* key of (0, 1): e0 */
        m.query[1 * 64 + 0] = 8.0f;    /* query of (0, 1): 8 e0, so q.k = 8 and 0 */
        int32_t ids[2] = {1, 2};
        const float *w = last_weights(&m, &a, ids, 2);
        CHECK_CLOSE(w[1], scaled ? 0.731 : 0.99966, 0, scaled ? 5e-4 : 5e-6);
        CHECK_CLOSE(w[0], scaled ? 0.269 : 0.00034, 0, scaled ? 5e-4 : 5e-6);
        slm_activations_free(&a);
        slm_model_free(&m);
    }
}

/* The clock tags: PE(1), PE(2), PE(3) for d = 4, and their neighbours' dot
 * product 1.5403 wherever the pair sits; the network's rows carry them. */
static void sinusoidal_tags_depend_on_distance(void) {
    float pe[4][4];
    for (int t = 0; t < 4; t++) slm_sinusoid_tag(t, 4, pe[t]);
    const float want[3][4] = {{0.8415f, 0.5403f, 0.0100f, 1.0000f},
                              {0.9093f, -0.4161f, 0.0200f, 0.9998f},
                              {0.1411f, -0.9900f, 0.0300f, 0.9996f}};
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 4; i++) CHECK_CLOSE(pe[t + 1][i], want[t][i], 0, 6e-5); /* the seed rounds to 4 places */
    double d12 = 0, d23 = 0;
    for (int i = 0; i < 4; i++) d12 += pe[1][i] * pe[2][i], d23 += pe[2][i] * pe[3][i];
    CHECK_CLOSE(d12, 1.5403, 0, 5e-4);
    CHECK_CLOSE(d23, 1.5403, 0, 5e-4);
    CHECK_CLOSE(d12, cos(1.0) + cos(0.01), 1e-5, 0);
    /* in the network: z's row slot of position t is E[x_t] + PE(t) */
    ModelConfig cfg = TINY;
    cfg.pos = POS_SINUSOIDAL;
    Model m;
    Activations a;
    Batch b;
    Error e;
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_activations_init(&a, &cfg, 8, &e) == 0 &&
          slm_batch_init(&b, 8, 1, &e) == 0);
    int32_t ids[4] = {1, 1, 1, 1};
    CHECK(slm_batch_add(&b, ids, 4, &e) == 0 && slm_model_forward(&m, &a, &b, NULL, NULL, &e) == 0);
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 4; i++)
            CHECK_CLOSE(a.z[(size_t)t * slm_model_hidden_input_dim(&cfg) + i], pe[t][i], 0, 1e-6);
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

/* "Turn the arrows": theta = 30 degrees, q = k = (1, 0); query at 3, key at
 * 1 -> cos 60 = 0.5; at 5 and 3, and at 2 and 0, still 0.5. Then a rope
 * model's own queries and keys: one token repeated, so q.k of two
 * positions depends only on their distance. */
static void rotary_score_survives_a_shift(void) {
    const double theta = 3.14159265358979323846 / 6;
    const int pairs[3][2] = {{3, 1}, {5, 3}, {2, 0}};
    for (int i = 0; i < 3; i++) {
        double aq = pairs[i][0] * theta, ak = pairs[i][1] * theta;
        double score = cos(aq) * cos(ak) + sin(aq) * sin(ak); /* (cos aq, sin aq) . (cos ak, sin ak) */
        CHECK_CLOSE(score, 0.5, 0, 1e-12);
    }
    ModelConfig cfg = SMALL_REAL_HEADS;
    cfg.pos = POS_ROPE;
    cfg.window = 8;
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng rng;
    slm_rng_seed(&rng, 11);
    CHECK(slm_model_init(&m, &cfg, &e) == 0 && slm_activations_init(&a, &cfg, 8, &e) == 0 &&
          slm_batch_init(&b, 8, 1, &e) == 0);
    random_params(&m, &rng, 1.0);
    int32_t ids[7] = {3, 3, 3, 3, 3, 3, 3};
    CHECK(slm_batch_add(&b, ids, 7, &e) == 0 && slm_model_forward(&m, &a, &b, NULL, NULL, &e) == 0);
    float q[8], k[8], unturned[8];
    double dots[3];
    for (int i = 0; i < 3; i++) {
        slm_activations_qkv(&a, 0, pairs[i][0], q, NULL, NULL);
        slm_activations_qkv(&a, 0, pairs[i][1], NULL, k, NULL);
        dots[i] = 0;
        for (int j = 0; j < 8; j++) dots[i] += q[j] * k[j];
    }
    CHECK_CLOSE(dots[1], dots[0], 1e-5, 1e-6);
    CHECK_CLOSE(dots[2], dots[0], 1e-5, 1e-6);
    slm_activations_qkv(&a, 0, 0, unturned, NULL, NULL); /* position 0 is not turned */
    slm_activations_qkv(&a, 0, 3, q, NULL, NULL);
    CHECK(fabs(q[0] - unturned[0]) > 1e-3); /* but position 3 is */
    slm_batch_free(&b);
    slm_activations_free(&a);
    slm_model_free(&m);
}

/* ---- the table of tensors ----------------------------------------------------------- */

/* --layers N: each layer past the first adds query and key (8, 160, 8),
 * value (8, 160, 16), distance (8, 256), and 128 columns of hidden.weight:
 * 10,240 + 10,240 + 20,480 + 2,048 + 16,384 = 59,392. */
static void layer_parameter_counts(void) {
    ModelConfig c = slm_model_config_default(&slm_attention_arch, 2000);
    const size_t want[4] = {352848, 412240, 471632, 531024};
    for (int l = 1; l <= 4; l++) {
        c.n_layers = l;
        if (!CHECK(slm_model_param_count(&c) == want[l - 1]))
            fprintf(stderr, "  --layers %d: %zu parameters\n", l, slm_model_param_count(&c));
    }
    c.n_layers = 0; /* a config that leaves it out is one layer */
    CHECK(slm_model_param_count(&c) == 352848 && slm_model_layers(&c) == 1);
    c.n_layers = 2;
    c.pos = POS_T5;
    c.score = SCORE_ADDITIVE;
    CHECK(slm_model_param_count(&c) ==
          412240 - 2 * 2048 + 2 * 256 + 2 * 1088); /* each layer its own buckets and score */
    c = slm_model_config_default(&slm_attention_arch, 2000);
    c.n_layers = 2;
    Model m;
    Error e;
    CHECK(slm_model_init(&m, &c, &e) == 0);
    const ParamTensor *q2 = slm_model_tensor(&m, "layer2.query"), *d2 = slm_model_tensor(&m, "layer2.distance");
    const ParamTensor *v2 = slm_model_tensor(&m, "layer2.value"), *hw = slm_model_tensor(&m, "hidden.weight");
    CHECK(q2 && q2->shape[0] == 8 && q2->shape[1] == 160 && q2->shape[2] == 8 && q2->decay == 1);
    CHECK(v2 && v2->shape[1] == 160 && v2->shape[2] == 16 && v2->decay == 1);
    CHECK(d2 && d2->shape[0] == 8 && d2->shape[1] == 256 && d2->decay == 0);
    CHECK(hw && hw->shape[1] == 32 + 2 * 128);
    Model view;
    slm_model_layer_view(&m, 1, &view);
    CHECK(view.query == m.params + q2->offset && view.distance == m.params + d2->offset && view.cfg.row_dim == 160);
    CHECK(slm_model_tensor(&view, "layer2.query") == NULL && slm_model_tensor(&view, "embedding") != NULL);
    slm_model_free(&m);
    c.n_layers = 5;
    CHECK(slm_model_init(&m, &c, &e) != 0);
    c = slm_model_config_default(&slm_window8_arch, 2000);
    c.n_layers = 2;
    CHECK(slm_model_init(&m, &c, &e) != 0);
}

static void parameter_counts(void) {
    ModelConfig c = slm_model_config_default(&slm_attention_arch, 2000);
    CHECK(slm_model_param_count(&c) == 352848); /* the default, the chapter's network */
    const size_t want_pos[POS_COUNT] = {352848, 350800, 350800 + 256 * 32, 350800, 350800, 350800, 350800 + 8 * 32};
    for (int p = 0; p < POS_COUNT; p++) {
        c.pos = (PosScheme)p;
        if (!CHECK(slm_model_param_count(&c) == want_pos[p]))
            fprintf(stderr, "  --pos %s: %zu parameters\n", slm_pos_name(c.pos), slm_model_param_count(&c));
    }
    c.pos = POS_DISTANCE;
    const size_t want_score[SCORE_COUNT] = {352848, 352848, 352848 + 8 * 64, 352848 + 2 * 8 * 64 + 8 * 8};
    for (int s = 0; s < SCORE_COUNT; s++) {
        c.score = (ScoreFn)s;
        CHECK(slm_model_param_count(&c) == want_score[s]);
    }
    for (int d = 0; d < 300; d++)
        CHECK(slm_t5_bucket(d) >= 0 && slm_t5_bucket(d) < T5_BUCKETS && slm_t5_bucket(d) == ref_bucket(d));
    CHECK(slm_t5_bucket(15) == 15 && slm_t5_bucket(16) == 16 && slm_t5_bucket(32) == 21 && slm_t5_bucket(64) == 26 &&
          slm_t5_bucket(127) == 31);
    CHECK(slm_t5_bucket(200) == 31);
    CHECK_CLOSE(slm_alibi_slope(0, 8), 0.5, 0, 0);
    CHECK_CLOSE(slm_alibi_slope(7, 8), 1.0 / 256, 0, 0);
    PosScheme pos;
    ScoreFn score;
    Error e;
    CHECK(slm_pos_parse("rope", &pos, &e) == 0 && pos == POS_ROPE);
    CHECK(slm_pos_parse("learned", &pos, &e) != 0 && strstr(e.message, "learned"));
    CHECK(slm_score_parse("additive", &score, &e) == 0 && score == SCORE_ADDITIVE);
    CHECK(slm_variant_check(&c, "the distances", VARIANT_NEEDS_DISTANCE, &e) == 0);
    c.pos = POS_ROPE;
    CHECK(slm_variant_check(&c, "the distances", VARIANT_NEEDS_DISTANCE, &e) != 0 && strstr(e.message, "rope"));
    layer_parameter_counts();
}

int main(void) {
    parameter_counts();
    additive_score_by_hand();
    dividing_by_sqrt_d();
    sinusoidal_tags_depend_on_distance();
    rotary_score_survives_a_shift();
    for (int pos = 0; pos < POS_COUNT; pos++) {
        pieces_match_the_whole_story((PosScheme)pos, SCORE_SCALED_DOT);
        saved_and_loaded_exactly((PosScheme)pos, pos == POS_ROPE ? SCORE_GENERAL : SCORE_ADDITIVE, 1);
        saved_and_loaded_exactly((PosScheme)pos, pos == POS_ROPE ? SCORE_ADDITIVE : SCORE_GENERAL, 2);
        layered_pieces_match_the_whole_story((PosScheme)pos);
        for (int score = 0; score < SCORE_COUNT; score++) {
            generator_matches_forward(&TINY, (PosScheme)pos, (ScoreFn)score, NULL);
            generator_matches_forward(&SMALL_REAL_HEADS, (PosScheme)pos, (ScoreFn)score, NULL);
            ModelConfig two = with_layers(&TINY, 2), real2 = with_layers(&SMALL_REAL_HEADS, 2);
            generator_matches_forward(&two, (PosScheme)pos, (ScoreFn)score, NULL); /* each layer's keys cached */
            generator_matches_forward(&real2, (PosScheme)pos, (ScoreFn)score, NULL);
        }
    }
    pieces_match_the_whole_story(POS_ROPE, SCORE_ADDITIVE);
    ModelConfig three = with_layers(&TINY, 3);
    Ablation ab = {.heads = check_heads(1u << 1 | 1u << (TINY.n_heads + 2)), .mode = ABLATE_ZERO};
    generator_matches_forward(&three, POS_DISTANCE, SCORE_SCALED_DOT, NULL);
    generator_matches_forward(&three, POS_ROPE, SCORE_ADDITIVE, &ab);
    files_without_the_keys();
    gradient_checks();
    layer_gradient_checks();
    layers_thread_invariant();
    return check_report();
}
