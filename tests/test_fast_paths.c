/* The fast paths give what the plain ones give: the output layer over cached
 * chunks equals slm_output_forward + slm_output_backward; a step split over threads
 * by stories equals one pass over the whole batch, and repeats bit for bit;
 * the sampler, which sorts only the tokens above a floor, draws exactly what
 * a sampler sorting every token draws; the workers run a job once on every
 * thread, with OpenMP one thread wide inside; the exponentials 16 at a time
 * equal them one by one, and their sum keeps its lanes' order, also in the
 * sampler's one pass that keeps only those above its cut-off. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/layers.h"
#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/sample.h"
#include "storylm/shards.h"
#include "storylm/workers.h"

static double max_abs_diff(const float *x, const float *y, size_t n, double *largest) {
    double d = 0;
    *largest = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)x[i] - y[i]));
        *largest = fmax(*largest, fabs((double)y[i]));
    }
    return d;
}

static float *random_floats(Rng *r, size_t n, double scale) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = (float)(slm_rng_normal(r) * scale);
    return x;
}

/* The output layer in chunks of 1, 7 and all 40 positions, against slm_output_forward + slm_output_backward. */
static void chunked_output_layer_matches(void) {
    enum { N = 40, HD = 16, V = 300 };
    Rng r;
    slm_rng_seed(&r, 3);
    float *W = random_floats(&r, V * HD, 0.5), *bias = random_floats(&r, V, 0.5), *y = random_floats(&r, N * HD, 1);
    int32_t target[N];
    for (int p = 0; p < N; p++) target[p] = p % 9 == 8 ? -1 : (int32_t)slm_rng_below(&r, V); /* some without a target */
    float logits[N * V], lse[N], loss[N], ones[N], dW[V * HD] = {0}, d_bias[V] = {0}, d_y[N * HD];
    uint8_t correct[N];
    for (int p = 0; p < N; p++) ones[p] = 1.0f;
    slm_output_forward(KERNELS_BLAS, W, bias, y, N, HD, V, logits, target, lse, loss, correct);
    slm_output_backward(KERNELS_BLAS, W, y, logits, target, lse, 0.25f, N, HD, V, dW, d_bias, d_y, ones);
    int chunks[] = {1, 7, N};
    for (int c = 0; c < 3; c++) {
        float scratch[N * V], lse2[N], loss2[N], dW2[V * HD] = {0}, d_bias2[V] = {0}, d_y2[N * HD];
        uint8_t correct2[N];
        OutputLoss o = {.W = W,
                        .bias = bias,
                        .y = y,
                        .n = N,
                        .Hd = HD,
                        .V = V,
                        .chunk_rows = chunks[c],
                        .target = target,
                        .scale = 0.25f,
                        .scratch = scratch,
                        .lse = lse2,
                        .loss = loss2,
                        .correct = correct2};
        /* Forward only: the same numbers to rounding. Not bit for bit: OpenBLAS's
         * sgemm sums an element in an order that depends on the block it falls in
         * (on AVX2 machines a product cut in rows of 1 or 7 rounds differently
         * from one of 40), and chunks are such cuts. */
        slm_output_loss(&o);
        double big_lse, d_lse = max_abs_diff(lse2, lse, N, &big_lse);
        CHECK(d_lse <= 1e-6 * big_lse);
        CHECK(memcmp(correct, correct2, sizeof correct) == 0);
        o.dW = dW2, o.d_bias = d_bias2, o.d_y = d_y2;
        slm_output_loss(&o);
        double big, d = max_abs_diff(loss2, loss, N, &big);
        CHECK(d <= 1e-6 * big);
        CHECK(max_abs_diff(dW2, dW, V * HD, &big) <= 1e-5 * big);
        CHECK(max_abs_diff(d_bias2, d_bias, V, &big) <= 1e-5 * big);
        CHECK(max_abs_diff(d_y2, d_y, N * HD, &big) <= 1e-5 * big);
    }
    free(W), free(bias), free(y);
}

/* 7 random stories (one longer than the window) of a small model. */
typedef struct Case {
    Model m;
    int32_t ids[7][90];
    StoryRef stories[7];
    int predicted;
} Case;

static void make_case(Case *c, const Architecture *arch) {
    ModelConfig cfg = slm_model_config_default(arch, 50);
    cfg.window = 16;
    Error e;
    Rng r;
    slm_rng_seed(&r, 5);
    CHECK(slm_model_init(&c->m, &cfg, &e) == 0);
    slm_model_randomize(&c->m, 9);
    for (int i = 0; i < cfg.n_heads * cfg.window && c->m.distance; i++) c->m.distance[i] = (float)slm_rng_normal(&r);
    c->predicted = 0;
    for (int s = 0; s < 7; s++) {
        int len = s == 3 ? 90 : 5 + (int)slm_rng_below(&r, 40);
        for (int t = 0; t < len; t++) c->ids[s][t] = t ? (int32_t)slm_rng_below(&r, 50) : 1;
        c->stories[s] = (StoryRef){c->ids[s], len};
        c->predicted += len - 1;
    }
}

/* The whole batch in one slm_model_forward + slm_model_backward: loss sum and gradient of the mean. */
static double one_pass(Case *c, float *grads) {
    Error e;
    Batch b;
    Activations a;
    CHECK(slm_batch_init(&b, 1000, 8, &e) == 0 && slm_activations_init(&a, &c->m.cfg, 1000, &e) == 0);
    for (int s = 0; s < 7; s++) CHECK(slm_batch_add(&b, c->stories[s].ids, c->stories[s].len, &e) == 0);
    CHECK(slm_model_forward(&c->m, &a, &b, NULL, NULL, &e) == 0);
    slm_model_backward(&c->m, &a, &b, grads);
    double sum = a.mean_loss * a.n_predicted;
    slm_batch_free(&b), slm_activations_free(&a);
    return sum;
}

/* slm_shards_run with n shards of `positions` each: loss sum; grads of the mean. */
static double sharded(Case *c, int n, int positions, float *grads) {
    Shards sh;
    Error e;
    double loss = 0;
    long long correct = 0;
    CHECK(slm_shards_init(&sh, &c->m, n, positions, 7, &e) == 0);
    CHECK(slm_shards_run(&sh, c->stories, 7, NULL, 1.0f / c->predicted, grads, &loss, &correct, &e) == 0);
    slm_shards_free(&sh);
    return loss;
}

static void shards_match_one_pass(const Architecture *arch) {
    Case c;
    make_case(&c, arch);
    size_t P = c.m.n_params;
    float *want = calloc(P, sizeof(float)), *got = calloc(P, sizeof(float)), *again = calloc(P, sizeof(float));
    double loss = one_pass(&c, want), big;
    /* 1, 2 and 3 threads; 100 positions a chunk (one story or two), 50 or 20 (the 90-token
     * story in pieces carrying the window before them), or the longest story alone */
    int threads[] = {1, 2, 3, 2, 1, 2}, positions[] = {1000, 1000, 100, 50, 20, 90};
    for (int i = 0; i < 6; i++) {
        memset(got, 0, P * sizeof(float));
        CHECK_CLOSE(sharded(&c, threads[i], positions[i], got), loss, 1e-6, 0);
        CHECK(max_abs_diff(got, want, P, &big) <= 1e-5 * big);
    }
    memset(again, 0, P * sizeof(float));
    sharded(&c, 2, 90, again); /* the same threads and chunks: the same bits */
    CHECK(memcmp(got, again, P * sizeof(float)) == 0);
    free(want), free(got), free(again);
    slm_model_free(&c.m);
}

/* --- the sampler against one that sorts every token (the plain way) ------- */

typedef struct Plain {
    float prob;
    int32_t id;
} Plain;

static int plain_order(const void *a, const void *b) {
    const Plain *x = a, *y = b;
    if (x->prob != y->prob) return x->prob > y->prob ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int plain_draw(Rng *rng, const float *logits, int n, float temperature, int top_k, float top_p) {
    float probs[2000];
    Plain c[2000];
    float inv = 1.0f / temperature;
    for (int i = 0; i < n; i++) probs[i] = logits[i] * inv;
    slm_softmax_probs(probs, n, probs);
    float cutoff = top_p < 1 ? (1.0f - top_p) / (float)(n - 1) : 0.0f;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (probs[i] >= cutoff) c[m++] = (Plain){probs[i], i};
    qsort(c, (size_t)m, sizeof *c, plain_order);
    if (top_k > 0 && m > top_k) m = top_k;
    double total = 0, mass = 0, acc = 0;
    int keep = m;
    for (int i = 0; i < m; i++) {
        total += c[i].prob;
        if (total >= top_p) {
            keep = i + 1;
            break;
        }
    }
    for (int i = 0; i < keep; i++) mass += c[i].prob;
    double r = slm_rng_uniform(rng) * mass;
    for (int i = 0; i < keep; i++) {
        acc += c[i].prob;
        if (r < acc) return c[i].id;
    }
    return c[keep - 1].id;
}

/* 200 draws of every setting on peaked, flat and tied logits: the same tokens. */
static void sampler_draws_as_sorting_all(void) {
    enum { V = 2000 };
    float temperatures[] = {0.5f, 0.8f, 2.0f}, top_ps[] = {0.3f, 0.9f, 0.95f, 0.9995f, 1.0f};
    int top_ks[] = {0, 1, 5, 300};
    double scales[] = {0.0, 0.3, 3.0, 8.0}; /* 0: every logit equal, ties everywhere */
    Rng data;
    slm_rng_seed(&data, 17);
    float *logits = malloc(V * sizeof(float));
    int settings = 0, differ = 0;
    for (int sc = 0; sc < 4; sc++)
        for (int t = 0; t < 3; t++)
            for (int p = 0; p < 5; p++)
                for (int k = 0; k < 4; k++) {
                    if (top_ps[p] >= 1 && top_ks[k] == 0) continue; /* no truncation: another path */
                    for (int i = 0; i < V; i++) logits[i] = (float)(slm_rng_normal(&data) * scales[sc]);
                    logits[7] = logits[1234] = 4.0f * (float)scales[sc]; /* a tie at the top */
                    Sampler s;
                    Error e;
                    Rng plain;
                    CHECK(slm_sampler_init(&s, V, temperatures[t], top_ks[k], top_ps[p], 99, &e) == 0);
                    slm_rng_seed(&plain, 99);
                    for (int d = 0; d < 200; d++)
                        differ += slm_sampler_sample(&s, logits) !=
                                  plain_draw(&plain, logits, V, temperatures[t], top_ks[k], top_ps[p]);
                    slm_sampler_free(&s);
                    settings++;
                }
    CHECK(settings == 228 && differ == 0);
    printf("sampler: %d settings x 200 draws, %d differ from sorting every token\n", settings, differ);
    free(logits);
}

/* --- the exponentials by lanes against one by one -------------------------- */

/* The same bits, NaN for NaN. */
static int same_float(float a, float b) { return (a != a && b != b) || memcmp(&a, &b, sizeof a) == 0; }

/* Whether got is want (the same terms, n, all positive, summed in another
 * order): the same bits with AVX-512, whose path sums in 16 lanes in the
 * order below; elsewhere the compiler's vector width sets the order (only
 * the portable kernels promise one order on every target), so within the
 * bound of any order's rounding, (n - 1) epsilon of the sum. */
static int same_sum(float got, float want, int n) {
#ifdef __AVX512F__
    (void)n;
    return same_float(got, want);
#else
    return fabsf(got - want) <= (float)n * FLT_EPSILON * want;
#endif
}

/* slm_exp_inplace (16 lanes at a time, the rest in one masked vector)
 * against one element at a time in plain C (slm_exp_one), over the clamps
 * (-87, 88), infinities, NaN, -0 and a sweep; and slm_exp_sum_inplace's
 * exponentials, and their sum in the order of a 16-lane
 * `omp simd` reduction: 0 + lane 0 + ... + lane 15, the tail added to lane 0
 * (same_sum: bit for bit with AVX-512). */
static void exponentials_by_lanes_equal_one_by_one(void) {
    enum { N = 16 * 700 + 11 };
    static float x[N], one[N], all[N];
    Rng r;
    slm_rng_seed(&r, 17);
    float special[] = {-87.0f, -87.5f, -1e30f, 88.0f, 88.5f, 1e30f, INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 1e-30f};
    for (int i = 0; i < N; i++)
        x[i] = i < 12 ? special[i] : i < 6000 ? -100.0f + 200.0f * (float)i / 6000 : (float)(slm_rng_normal(&r) * 20);
    int wrong = 0;
    for (int k = 0; k < 3; k++) {
        float shift = (float[]){0.0f, 3.25f, -41.0f}[k];
        memcpy(all, x, sizeof x);
        slm_exp_inplace(all, N, shift);
        for (int i = 0; i < N; i++) {
            one[i] = slm_exp_one(x[i] - shift);
            wrong += !same_float(all[i], one[i]);
        }
    }
    if (!CHECK(wrong == 0)) fprintf(stderr, "  %d exponentials differ between lanes and one by one\n", wrong);
    wrong = 0;
    for (int trial = 0; trial < 200; trial++) { /* finite, for the sum; every tail length */
        int n = 16 * (int)slm_rng_below(&r, 130) + trial % 16;
        float lane[16] = {0}, want = 0.0f, spread = (float)(1 + trial % 7);
        for (int i = 0; i < n; i++) x[i] = all[i] = (float)(slm_rng_normal(&r) * spread);
        float got = slm_exp_sum_inplace(all, n, 1.5f);
        for (int i = 0; i < n; i++) {
            wrong += !same_float(all[i], slm_exp_one(x[i] - 1.5f));
            lane[i < n / 16 * 16 ? i % 16 : 0] += all[i];
        }
        for (int j = 0; j < 16; j++) want += lane[j];
        wrong += !same_sum(got, want, n);
    }
    if (!CHECK(wrong == 0))
        fprintf(stderr, "  %d exponentials or sums of 200 differ from one by one in order\n", wrong);
}

/* slm_exp_sum_keep (the sampler's one pass over the logits) against
 * scaling them, slm_exp_sum_inplace and keeping those at or above the
 * cut-off afterwards: the same sum, bit for bit, and the same exponentials
 * and ids kept, in order, for every tail length and scale; and
 * slm_softmax_weights against slm_softmax_inplace. */
static void exponentials_kept_in_one_pass(void) {
    enum { N = 16 * 130 + 15 };
    static float x[N], all[N], kept[N + 16], weights[N];
    static int32_t ids[N + 16];
    Rng r;
    slm_rng_seed(&r, 29);
    int wrong = 0, kept_total = 0;
    for (int trial = 0; trial < 200; trial++) {
        int n = 16 * (int)slm_rng_below(&r, 130) + trial % 16 + 1, k = -1;
        float scale = (float[]){1.25f, 1.0f, 0.5f, 3.0f}[trial % 4], keep = (float[]){2.5e-5f, 0.0f, 0.01f}[trial % 3];
        float spread = (float)(1 + trial % 9), largest = -INFINITY;
        for (int i = 0; i < n; i++) x[i] = (float)(slm_rng_normal(&r) * spread);
        for (int i = 0; i < n; i++) largest = x[i] * scale > largest ? x[i] * scale : largest;
        for (int i = 0; i < n; i++) all[i] = x[i] * scale;
        float want = slm_exp_sum_inplace(all, n, largest);
        float got = slm_exp_sum_keep(x, n, scale, largest, keep, kept, ids, &k);
        wrong += !same_float(got, want);
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (all[i] < keep) continue;
            wrong += m >= k || ids[m] != i || !same_float(kept[m], all[i]);
            m++;
        }
        wrong += m != k;
        kept_total += k;
        memcpy(weights, x, (size_t)n * sizeof(float));
        memcpy(all, x, (size_t)n * sizeof(float));
        slm_softmax_weights(weights, n);
        slm_softmax_inplace(all, n);
        for (int i = 0; i < n; i++) wrong += !same_float(weights[i], all[i]);
    }
    if (!CHECK(wrong == 0 && kept_total > 0))
        fprintf(stderr, "  %d sums, kept exponentials or weights differ (%d kept)\n", wrong, kept_total);
}

/* --- workers ------------------------------------------------------------------ */

typedef struct Seen {
    int calls[4];
    int omp_threads[4];
} Seen;

static void note(void *arg, int i, int n) {
    Seen *s = arg;
    s->calls[i]++;
    s->omp_threads[i] = omp_get_max_threads() * 10 + n;
}

static void workers_run_everywhere_once(void) {
    Workers w;
    Error e;
    omp_set_num_threads(2);
    CHECK(slm_workers_init(&w, 3, &e) == 0);
    for (int round = 0; round < 50; round++) {
        Seen s = {{0}, {0}};
        slm_workers_run(&w, note, &s);
        CHECK(s.calls[0] == 1 && s.calls[1] == 1 && s.calls[2] == 1 && s.calls[3] == 0);
        CHECK(s.omp_threads[0] == 13 && s.omp_threads[1] == 13 && s.omp_threads[2] == 13);
    }
    CHECK(omp_get_max_threads() == 2); /* the caller's setting is back */
    slm_workers_free(&w);
}

int main(void) {
    slm_model_threads_setup(2);
    chunked_output_layer_matches();
    shards_match_one_pass(&slm_attention_arch);
    shards_match_one_pass(&slm_window8_arch);
    sampler_draws_as_sorting_all();
    exponentials_by_lanes_equal_one_by_one();
    exponentials_kept_in_one_pass();
    workers_run_everywhere_once();
    return check_report();
}
