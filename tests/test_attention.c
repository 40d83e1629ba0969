/* Attention's arithmetic, read like the chapter: the seed's worked examples
 * built as tiny models and run through the real forward pass, then what the
 * distance scores do, causality, the 256-token window, stories packed in
 * one batch never reading each other, and the backward's two positions at a
 * time giving the bits of one at a time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/model.h"
#include "storylm/rng.h"

/* A model of the given sizes, every weight 0: the tests set the few that matter. */
static void tiny_model(Model *m, int vocab, int row_dim, int key_dim, int value_dim) {
    ModelConfig c = {.arch = &slm_attention_arch,
                     .vocab_size = vocab,
                     .row_dim = row_dim,
                     .n_heads = 1,
                     .key_dim = key_dim,
                     .value_dim = value_dim,
                     .window = 8,
                     .hidden_dim = 2,
                     .context = 8};
    Error e;
    CHECK(slm_model_init(m, &c, &e) == 0);
    for (int i = 0; i < vocab && i < row_dim; i++) m->embedding[i * row_dim + i] = 1.0f; /* token i's row is e_i */
    m->distance[0] = -1e4f; /* the reading token never reads itself: as the seed's decoder, it reads only notes */
}

/* Row r of a head's (row_dim, dim) table, set to vals. */
static void set_row(float *table, int r, int dim, const float *vals) {
    memcpy(table + r * dim, vals, dim * sizeof(float));
}

static void run(const Model *m, Activations *a, Batch *b) {
    Error e;
    CHECK(slm_activations_init(a, &m->cfg, b->n_tokens, &e) == 0);
    CHECK(slm_model_forward(m, a, b, NULL, NULL, &e) == 0);
}

static void add_story(Batch *b, const int32_t *ids, int n) {
    Error e;
    CHECK(slm_batch_add(b, ids, n, &e) == 0);
}

/* Seed 000, section 1: notes h_I, h_drink, h_tea = e_1, e_2, e_3; the decoder's
 * state q = (0, 0.5, 2). Scores (0, 0.5, 2), shares (0.100, 0.164, 0.736), and
 * the context is the same three numbers. */
static void i_drink_tea(void) {
    Model m;
    Activations a;
    Batch b;
    Error e;
    tiny_model(&m, 4, 4, 3, 3);
    float k_i[3] = {1, 0, 0}, k_drink[3] = {0, 1, 0}, k_tea[3] = {0, 0, 1}, q[3] = {0, 0.5f, 2};
    for (int i = 0; i < 3; i++) q[i] *= sqrtf(3.0f); /* the network divides by sqrt(3); the seed does not */
    set_row(m.key, 0, 3, k_i), set_row(m.key, 1, 3, k_drink), set_row(m.key, 2, 3, k_tea);
    set_row(m.value, 0, 3, k_i), set_row(m.value, 1, 3, k_drink), set_row(m.value, 2, 3, k_tea);
    set_row(m.query, 3, 3, q);
    CHECK(slm_batch_init(&b, 4, 1, &e) == 0);
    add_story(&b, (int32_t[]){0, 1, 2, 3}, 4); /* I drink tea, then the decoder's state */
    run(&m, &a, &b);
    int first, n;
    const float *w = slm_activations_attention(&a, 0, 3, &first, &n);
    const float *context = slm_activations_head_output(&a, 0, 3);
    double total = 1 + exp(0.5) + exp(2.0), want[3] = {1 / total, exp(0.5) / total, exp(2.0) / total};
    CHECK(first == 0 && n == 4);
    CHECK_CLOSE(w[0], 0.100, 0, 5e-4), CHECK_CLOSE(w[1], 0.164, 0, 5e-4), CHECK_CLOSE(w[2], 0.736, 0, 5e-4);
    CHECK(w[3] < 1e-6f);
    for (int i = 0; i < 3; i++) CHECK_CLOSE(w[i], want[i], 1e-5, 0), CHECK_CLOSE(context[i], want[i], 1e-5, 0);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

/* Seed 000, section 3, d = 2: keys (1,0), (0,1), (1,1); values (2,0), (0,2),
 * (1,1); queries (2,0), (0,2), (1,1), each reading in its own story of the batch.
 * Divided by sqrt(2), the attention matrix and the answers of the seed. */
static void one_word_by_hand(void) {
    Model m;
    Activations a;
    Batch b;
    Error e;
    tiny_model(&m, 6, 6, 2, 2);
    float keys[3][2] = {{1, 0}, {0, 1}, {1, 1}}, values[3][2] = {{2, 0}, {0, 2}, {1, 1}};
    float queries[3][2] = {{2, 0}, {0, 2}, {1, 1}};
    for (int i = 0; i < 3; i++) set_row(m.key, i, 2, keys[i]), set_row(m.value, i, 2, values[i]);
    for (int i = 0; i < 3; i++) set_row(m.query, 3 + i, 2, queries[i]);
    CHECK(slm_batch_init(&b, 12, 3, &e) == 0);
    for (int i = 0; i < 3; i++) add_story(&b, (int32_t[]){0, 1, 2, 3 + i}, 4);
    run(&m, &a, &b);
    double A[3][3] = {{0.446, 0.108, 0.446}, {0.108, 0.446, 0.446}, {0.248, 0.248, 0.503}};
    double answer[3][2] = {{1.337, 0.663}, {0.663, 1.337}, {1, 1}};
    for (int i = 0; i < 3; i++) {
        int p = b.starts[i] + 3, first, n;
        const float *w = slm_activations_attention(&a, 0, p, &first, &n);
        const float *o = slm_activations_head_output(&a, 0, p);
        CHECK(first == b.starts[i] && n == 4);
        for (int j = 0; j < 3; j++) CHECK_CLOSE(w[j], A[i][j], 0, 1e-3);
        CHECK_CLOSE(o[0], answer[i][0], 0, 1e-3), CHECK_CLOSE(o[1], answer[i][1], 0, 1e-3);
    }
    /* the third query's answer is exactly v_3: the other two values balance */
    const float *o = slm_activations_head_output(&a, 0, b.starts[2] + 3);
    CHECK_CLOSE(o[0], 1.0, 0, 1e-6), CHECK_CLOSE(o[1], 1.0, 0, 1e-6);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

/* The real sizes with the chapter's init (distance scores 0), run on stories. */
static void real_model(Model *m, uint64_t seed) {
    ModelConfig c = slm_model_config_default(&slm_attention_arch, 2000);
    Error e;
    CHECK(slm_model_init(m, &c, &e) == 0);
    slm_model_randomize(m, seed);
}

static void random_story(Rng *r, int32_t *ids, int n) {
    ids[0] = 1;
    for (int t = 1; t < n; t++) ids[t] = 2 + (int32_t)slm_rng_below(r, 1998);
}

/* The last position's head outputs (H * 16) of each of two stories run in one batch. */
static void last_outputs(const Model *m, const int32_t *x, const int32_t *y, int n, float *out_x, float *out_y) {
    Batch b;
    Activations a;
    Error e;
    CHECK(slm_batch_init(&b, 2 * n, 2, &e) == 0);
    add_story(&b, x, n), add_story(&b, y, n);
    run(m, &a, &b);
    int vd = m->cfg.value_dim;
    for (int h = 0; h < m->cfg.n_heads; h++) {
        memcpy(out_x + h * vd, slm_activations_head_output(&a, h, n - 1), vd * sizeof(float));
        memcpy(out_y + h * vd, slm_activations_head_output(&a, h, 2 * n - 1), vd * sizeof(float));
    }
    slm_batch_free(&b), slm_activations_free(&a);
}

static double max_abs_diff(const float *x, const float *y, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)x[i] - y[i]));
    return d;
}

/* Flat distance scores: shuffle the earlier tokens and the reading position
 * brings back the same thing. A score for distance 1 breaks that. */
static void flat_distance_reads_by_content(void) {
    Model m;
    real_model(&m, 5);
    int32_t x[6] = {1, 40, 41, 42, 43, 44}, y[6] = {1, 42, 40, 43, 41, 44};
    float ox[128], oy[128];
    last_outputs(&m, x, y, 6, ox, oy);
    CHECK(max_abs_diff(ox, oy, 128) < 1e-6);
    for (int h = 0; h < 8; h++) m.distance[h * 256 + 1] = 2.0f;
    last_outputs(&m, x, y, 6, ox, oy);
    CHECK(max_abs_diff(ox, oy, 128) > 1e-2);
    slm_model_free(&m);
}

/* A big score at distance 1: every position reads the token just before it. */
static void distance_one_reads_the_token_before(void) {
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng r;
    slm_rng_seed(&r, 9);
    real_model(&m, 6);
    for (int h = 0; h < 8; h++) m.distance[h * 256 + 1] = 30.0f;
    int32_t ids[50];
    random_story(&r, ids, 50);
    CHECK(slm_batch_init(&b, 50, 1, &e) == 0);
    add_story(&b, ids, 50);
    run(&m, &a, &b);
    int bad = 0;
    for (int h = 0; h < 8; h++)
        for (int p = 1; p < 50; p++) {
            int first, n;
            const float *w = slm_activations_attention(&a, h, p, &first, &n);
            float v[16];
            slm_activations_qkv(&a, h, p - 1, NULL, NULL, v);
            bad += w[n - 2] < 0.999f || max_abs_diff(slm_activations_head_output(&a, h, p), v, 16) > 1e-3;
        }
    CHECK(bad == 0);
    int first, n;
    CHECK(slm_activations_attention(&a, 0, 0, &first, &n)[0] == 1.0f && n == 1); /* the first reads only itself */
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

/* Snapshot of everything a position computed: z, hidden and logits rows. */
static int same_rows(const Activations *a, const Activations *c, int p) {
    int Z = slm_model_hidden_input_dim(&a->cfg), Hd = a->cfg.hidden_dim, V = a->cfg.vocab_size;
    return !memcmp(a->z + (size_t)p * Z, c->z + (size_t)p * Z, Z * sizeof(float)) &&
           !memcmp(a->hidden + (size_t)p * Hd, c->hidden + (size_t)p * Hd, Hd * sizeof(float)) &&
           !memcmp(a->logits + (size_t)p * V, c->logits + (size_t)p * V, V * sizeof(float));
}

/* Run one story, then the same with token `change` replaced. */
static void run_pair(const Model *m, const int32_t *ids, int n, int change, Activations *a, Activations *c) {
    Batch b;
    Error e;
    int32_t *other = malloc(n * sizeof(int32_t));
    memcpy(other, ids, n * sizeof(int32_t));
    other[change] = ids[change] == 7 ? 8 : 7;
    CHECK(slm_batch_init(&b, n, 1, &e) == 0);
    add_story(&b, ids, n);
    run(m, a, &b);
    slm_batch_clear(&b);
    add_story(&b, other, n);
    run(m, c, &b);
    slm_batch_free(&b);
    free(other);
}

/* Changing a later token never changes what an earlier position computes. */
static void causal(void) {
    Model m;
    Activations a, c;
    Rng r;
    slm_rng_seed(&r, 10);
    real_model(&m, 7);
    int32_t ids[120];
    random_story(&r, ids, 120);
    run_pair(&m, ids, 120, 60, &a, &c);
    int earlier_same = 1;
    for (int p = 0; p < 60; p++) earlier_same &= same_rows(&a, &c, p);
    CHECK(earlier_same);
    CHECK(!same_rows(&a, &c, 60) && !same_rows(&a, &c, 61) && !same_rows(&a, &c, 119));
    slm_activations_free(&a), slm_activations_free(&c), slm_model_free(&m);
}

/* Past 256 tokens, a position sees only its latest 256. */
static void window_of_256(void) {
    Model m;
    Activations a, c;
    Rng r;
    slm_rng_seed(&r, 11);
    real_model(&m, 8);
    int32_t ids[300];
    random_story(&r, ids, 300);
    run_pair(&m, ids, 300, 43, &a, &c);
    int first, n;
    slm_activations_attention(&a, 0, 299, &first, &n);
    CHECK(first == 44 && n == 256);
    slm_activations_attention(&a, 0, 255, &first, &n);
    CHECK(first == 0 && n == 256);
    slm_activations_attention(&a, 0, 256, &first, &n);
    CHECK(first == 1 && n == 256);
    float *o299 = a.z + 299 * 160, *o298 = a.z + 298 * 160;
    CHECK(memcmp(o299, c.z + 299 * 160, 160 * sizeof(float)) == 0); /* token 43 is out of its sight */
    CHECK(memcmp(o298, c.z + 298 * 160, 160 * sizeof(float)) != 0); /* but not of position 298's */
    double worst = 0;                                               /* every row of weights adds up to 1 */
    for (int h = 0; h < 8; h++)
        for (int p = 0; p < 300; p++) {
            const float *w = slm_activations_attention(&a, h, p, &first, &n);
            double sum = 0;
            for (int j = 0; j < n; j++) sum += w[j];
            worst = fmax(worst, fabs(sum - 1));
        }
    CHECK(worst < 1e-5);
    slm_activations_free(&a), slm_activations_free(&c), slm_model_free(&m);
}

/* Stories packed in one batch never read each other: a story computes the
 * same alone as after another one. */
static void stories_apart(void) {
    Model m;
    Activations a, c;
    Batch b;
    Error e;
    Rng r;
    slm_rng_seed(&r, 12);
    real_model(&m, 9);
    int32_t x[80], y[30];
    random_story(&r, x, 80), random_story(&r, y, 30);
    CHECK(slm_batch_init(&b, 110, 2, &e) == 0);
    add_story(&b, y, 30);
    run(&m, &a, &b);
    slm_batch_clear(&b);
    add_story(&b, x, 80), add_story(&b, y, 30);
    run(&m, &c, &b);
    int first, n;
    slm_activations_attention(&c, 3, 80, &first, &n);
    CHECK(first == 80 && n == 1);
    CHECK(c.target[79] == -1 && c.target[80] == y[1] && c.n_predicted == 79 + 29);
    double worst = 0;
    for (int p = 0; p < 30; p++) {
        worst = fmax(worst, max_abs_diff(a.z + p * 160, c.z + (80 + p) * 160, 160));
        worst = fmax(worst, fabs(a.loss[p] - c.loss[80 + p]));
    }
    CHECK(worst < 1e-5);
    slm_batch_free(&b), slm_activations_free(&a), slm_activations_free(&c), slm_model_free(&m);
}

/* Bad input is refused with a message naming it, never a crash. */
static void refusals(void) {
    Model m;
    Activations a;
    Batch b;
    Error e;
    real_model(&m, 1);
    CHECK(slm_batch_init(&b, 8, 2, &e) == 0 && slm_activations_init(&a, &m.cfg, 4, &e) == 0);
    CHECK(slm_batch_add(&b, (int32_t[]){1, 2, 3, 4, 5}, 5, &e) == 0);
    CHECK(slm_model_forward(&m, &a, &b, NULL, NULL, &e) == -1 && strstr(e.message, "5 tokens"));
    slm_batch_clear(&b);
    CHECK(slm_batch_add(&b, (int32_t[]){1, 2000}, 2, &e) == 0);
    CHECK(slm_model_forward(&m, &a, &b, NULL, NULL, &e) == -1 && strstr(e.message, "2000") && e.hint[0]);
    slm_batch_clear(&b);
    CHECK(slm_batch_add(&b, (int32_t[]){1, 2}, 2, &e) == 0);
    Ablation nine = {.heads = check_heads(1u << 9)},
             mean_without_means = {.heads = check_heads(1), .mode = ABLATE_MEAN};
    CHECK(slm_model_forward(&m, &a, &b, &nine, NULL, &e) == -1 && strstr(e.message, "0 to 7"));
    CHECK(slm_model_forward(&m, &a, &b, &mean_without_means, NULL, &e) == -1);
    CHECK(slm_batch_add(&b, (int32_t[]){1, 2, 3, 4, 5, 6, 7}, 7, &e) == -1 && strstr(e.message, "does not fit"));
    CHECK(slm_batch_add(&b, (int32_t[]){1}, 0, &e) == -1);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

/* Training's gradients of stories of 300 (past the window), 37 and 10
 * tokens, with c's sizes: the backward takes two positions at a time where
 * they start from the same block, but one at a time under attention dropout,
 * so dropout of P 1e-9 with nothing dropped (its scale 1 / (1 - P) is 1 in
 * float) must give the same bits. */
static void backward_pairs_as_one_at_a_time(ModelConfig c, const char *what) {
    enum { N = 347 };
    static uint8_t keep_all[8 * N * N];
    memset(keep_all, 1, sizeof keep_all);
    Model m;
    Activations a;
    Batch b;
    Error e;
    Rng r;
    slm_rng_seed(&r, 5);
    CHECK(slm_model_init(&m, &c, &e) == 0 && slm_activations_init(&a, &c, N, &e) == 0 &&
          slm_batch_init(&b, N, 3, &e) == 0);
    slm_model_randomize(&m, 21);
    for (size_t i = 0; i < (size_t)c.n_heads * c.window; i++) m.distance[i] = (float)slm_rng_normal(&r);
    int32_t ids[300];
    int lens[] = {300, 37, 10};
    for (int s = 0; s < 3; s++) {
        random_story(&r, ids, lens[s]);
        for (int t = 0; t < lens[s]; t++) ids[t] %= c.vocab_size;
        add_story(&b, ids, lens[s]);
    }
    float *pairs = calloc(m.n_params, sizeof(float)), *singles = calloc(m.n_params, sizeof(float));
    CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f, pairs, &e) == 0);
    CHECK(1.0f / (1.0f - 1e-9f) == 1.0f);
    a.dropout = (Dropout){.attention = 1e-9f, .attention_mask = keep_all};
    CHECK(slm_model_loss_and_grad(&m, &a, &b, NULL, 1.0f, singles, &e) == 0);
    size_t differ = 0;
    for (size_t i = 0; i < m.n_params; i++) differ += memcmp(&pairs[i], &singles[i], sizeof(float)) != 0;
    if (!CHECK(differ == 0))
        fprintf(stderr, "  %s: %zu gradients differ between pairs and one at a time\n", what, differ);
    free(pairs), free(singles);
    slm_batch_free(&b), slm_activations_free(&a), slm_model_free(&m);
}

int main(void) {
    i_drink_tea();
    one_word_by_hand();
    flat_distance_reads_by_content();
    distance_one_reads_the_token_before();
    causal();
    window_of_256();
    stories_apart();
    refusals();
    backward_pairs_as_one_at_a_time(slm_model_config_default(&slm_attention_arch, 2000), "heads of 8 and 16");
    ModelConfig odd = slm_model_config_default(&slm_attention_arch, 300);
    odd.key_dim = 5, odd.value_dim = 3, odd.window = 40;
    backward_pairs_as_one_at_a_time(odd, "heads of 5 and 3, window 40");
    return check_report();
}
