/* Sparse autoencoders: every backward held to finite differences of its
 * forward (TopK with AuxK on dead latents, L1 with the decoder-norm penalty,
 * BatchTopK's choice over the whole batch), BatchTopK's choice and its
 * JumpReLU threshold, the planted directions recovered by TopK and BatchTopK,
 * one step of each equal to PyTorch's (tests/fixtures/sae.json, made by
 * scripts/sae_fixture.py), and the folded normalisation giving the same
 * reconstruction. */
#include <cjson/cJSON.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/fileio.h"
#include "storylm/model.h"
#include "storylm/rng.h"
#include "storylm/sae.h"
#include "storylm/sae_train.h"

/* The loss of x (B rows) at s's parameters with AuxK's residual held at
 * frozen (B, d_in; NULL: the pass's own), as the backward takes it, and
 * which latents TopK and AuxK chose. */
static double loss_at(const Sae *s, SaePass *p, const float *x, int B, const uint8_t *dead, float l1,
                      const float *frozen, uint8_t *chosen) {
    slm_sae_forward(s, p, x, B, dead, l1);
    size_t n = (size_t)B * s->cfg.d_sae;
    for (size_t i = 0; chosen && i < n; i++) chosen[i] = (p->z[i] > 0) | (p->k_aux ? (p->z_aux[i] > 0) << 1 : 0);
    if (!frozen || !p->k_aux) return p->loss;
    double aux = 0;
    for (int i = 0; i < B * s->cfg.d_in; i++) aux += ((double)p->e_hat[i] - frozen[i]) * (p->e_hat[i] - frozen[i]);
    return p->mse + p->l1 + SAE_AUX_COEFF * fmin((double)p->n_dead / s->cfg.k_aux, 1.0) * aux / B;
}

/* Central differences of the loss against slm_sae_backward for every
 * parameter whose nudge leaves TopK's and ReLU's choices as they were. */
static void gradcheck(SaeKind kind, const char *what) {
    SaeConfig c = {.kind = kind, .d_in = 6, .d_sae = 15, .k = 3, .k_aux = 3};
    int B = 5;
    Sae s;
    SaePass p;
    Error e;
    CHECK(slm_sae_init(&s, &c, &e) == 0 && slm_sae_pass_init(&p, &c, B, &e) == 0);
    slm_sae_randomize(&s, 7);
    Rng r;
    slm_rng_seed(&r, 11);
    for (size_t i = 0; i < s.n_params; i++) s.params[i] += (float)(0.2 * slm_rng_normal(&r));
    float x[5 * 6], residual[5 * 6];
    for (int i = 0; i < B * c.d_in; i++) x[i] = (float)slm_rng_normal(&r);
    uint8_t dead[15] = {0}, was[5 * 15], now[5 * 15];
    for (int j = 0; j < c.d_sae; j += 2) dead[j] = 1;
    float *grads = calloc(s.n_params, sizeof(float));
    loss_at(&s, &p, x, B, dead, 0.5f, NULL, was);
    for (int i = 0; i < B * c.d_in; i++) residual[i] = x[i] - p.x_hat[i]; /* AuxK's target: a constant */
    CHECK(kind == SAE_L1 || p.k_aux == 3);
    slm_sae_backward(&s, &p, x, grads);
    int checked = 0, worse = 0;
    for (size_t i = 0; i < s.n_params; i++) {
        float keep = s.params[i], h = 1e-3f;
        s.params[i] = keep + h;
        double up = loss_at(&s, &p, x, B, dead, 0.5f, residual, now);
        int same = memcmp(was, now, sizeof was) == 0;
        s.params[i] = keep - h;
        double down = loss_at(&s, &p, x, B, dead, 0.5f, residual, now);
        same &= memcmp(was, now, sizeof was) == 0;
        s.params[i] = keep;
        if (!same) continue;
        double fd = (up - down) / (2.0 * h);
        checked++;
        if (fabs(fd - grads[i]) > 2e-3 + 1e-2 * fabs(fd) && worse++ < 5)
            fprintf(stderr, "  %s param %zu: backward %.6g, differences %.6g\n", what, i, grads[i], fd);
    }
    printf("%s: %d of %zu parameters checked against finite differences\n", what, checked, s.n_params);
    CHECK(worse == 0);
    CHECK(checked > (int)s.n_params * 9 / 10);
    free(grads);
    slm_sae_pass_free(&p);
    slm_sae_free(&s);
}

static const cJSON *item(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static void read_floats(const cJSON *a, float *out, int n) {
    const cJSON *v;
    int i = 0;
    cJSON_ArrayForEach(v, a) if (i < n) out[i++] = (float)v->valuedouble;
    CHECK(i == n && cJSON_GetArraySize(a) == n);
}

/* One case of the fixture: the losses to 1e-5 and every gradient to 1e-4 of its tensor's largest. */
static void fixture_case(const cJSON *cas) {
    const char *kind = item(cas, "kind")->valuestring;
    SaeConfig c = {.kind = strcmp(kind, "topk") == 0 ? SAE_TOPK : SAE_L1,
                   .d_in = item(cas, "d_in")->valueint,
                   .d_sae = item(cas, "d_sae")->valueint,
                   .k = item(cas, "k")->valueint,
                   .k_aux = item(cas, "k_aux")->valueint};
    int B = item(cas, "batch")->valueint;
    Sae s;
    SaePass p;
    Error e;
    CHECK(slm_sae_init(&s, &c, &e) == 0 && slm_sae_pass_init(&p, &c, B, &e) == 0);
    float *x = malloc(sizeof(float) * B * c.d_in), *grads = calloc(s.n_params, sizeof(float));
    uint8_t *dead = calloc(c.d_sae, 1);
    read_floats(item(cas, "x"), x, B * c.d_in);
    const cJSON *v;
    int j = 0;
    cJSON_ArrayForEach(v, item(cas, "dead")) if (j < c.d_sae) dead[j++] = (uint8_t)v->valueint;
    float *views[4], *gviews[4];
    slm_sae_views(&s, s.params, &views[0], &views[1], &views[2], &views[3]);
    slm_sae_views(&s, grads, &gviews[0], &gviews[1], &gviews[2], &gviews[3]);
    int sizes[4] = {c.d_in * c.d_sae, c.d_sae, c.d_in * c.d_sae, c.d_in}, t = 0;
    const char *names[4] = {"W_enc", "b_enc", "W_dec", "b_dec"};
    cJSON_ArrayForEach(v, item(cas, "tensors")) {
        CHECK(t < 4 && strcmp(item(v, "name")->valuestring, names[t]) == 0);
        if (t < 4) read_floats(item(v, "value"), views[t], sizes[t]);
        t++;
    }
    slm_sae_forward(&s, &p, x, B, dead, (float)item(cas, "l1_coeff")->valuedouble);
    slm_sae_backward(&s, &p, x, grads);
    CHECK_CLOSE(p.mse, item(cas, "mse")->valuedouble, 1e-5, 1e-6);
    CHECK_CLOSE(p.aux, item(cas, "aux")->valuedouble, 1e-5, 1e-6);
    CHECK_CLOSE(p.l1, item(cas, "l1")->valuedouble, 1e-5, 1e-6);
    CHECK_CLOSE(p.loss, item(cas, "loss")->valuedouble, 1e-5, 1e-6);
    t = 0;
    cJSON_ArrayForEach(v, item(cas, "tensors")) {
        if (t >= 4) break;
        float *want = malloc(sizeof(float) * sizes[t]);
        read_floats(item(v, "grad"), want, sizes[t]);
        double top = 0, worst = 0;
        for (int i = 0; i < sizes[t]; i++) top = fmax(top, fabs(want[i]));
        for (int i = 0; i < sizes[t]; i++) worst = fmax(worst, fabs(want[i] - gviews[t][i]));
        printf("torch %s: %s's gradient within %.2g of its largest %.3g\n", kind, names[t], worst, top);
        CHECK(worst <= 1e-4 * (top > 1e-2 ? top : 1e-2));
        free(want);
        t++;
    }
    free(x), free(grads), free(dead);
    slm_sae_pass_free(&p);
    slm_sae_free(&s);
}

static void torch_fixture(void) {
    char *json;
    size_t len;
    Error e;
    if (!CHECK(slm_file_read_all(check_source_path("tests/fixtures/sae.json"), 0, &json, &len, &e) == 0)) return;
    cJSON *f = cJSON_Parse(json), *cas;
    free(json);
    int n = 0;
    cJSON_ArrayForEach(cas, item(f, "cases")) fixture_case(cas), n++;
    CHECK(n == 2);
    cJSON_Delete(f);
}

/* An SAE trained on activations scaled by s, its scale folded in, makes from x
 * what the unfolded one makes from x * s, divided by s. */
static void folded_scale(void) {
    SaeConfig c = {.kind = SAE_TOPK, .d_in = 4, .d_sae = 8, .k = 2, .k_aux = 2};
    Sae s;
    SaePass p;
    Error e;
    CHECK(slm_sae_init(&s, &c, &e) == 0 && slm_sae_pass_init(&p, &c, 3, &e) == 0);
    slm_sae_randomize(&s, 3);
    for (int i = 0; i < 4; i++) s.b_dec[i] = 0.1f * i;
    float x[12], xs[12], a[12], b[12], scale = 2.5f;
    for (int i = 0; i < 12; i++) x[i] = sinf(i * 1.3f), xs[i] = x[i] * scale;
    slm_sae_encode(&s, &p, xs, 3);
    slm_sae_decode(&s, &p, a);
    slm_sae_fold_scale(&s, scale);
    slm_sae_encode(&s, &p, x, 3);
    slm_sae_decode(&s, &p, b);
    for (int i = 0; i < 12; i++) CHECK_CLOSE(b[i], a[i] / scale, 1e-5, 1e-6);
    slm_sae_pass_free(&p);
    slm_sae_free(&s);
}

/* ---- the ground truth: planted features ------------------------------------ */

/* SAELens's synthetic data: F unit directions in D dimensions, each token a
 * sparse sum of them (each on with probability P, magnitude 0.5 to 1.5) and a
 * little noise. */
typedef struct Planted {
    int D, F;
    float *dirs; /* (F, D) */
    Rng rng;
} Planted;

static int planted_fill(void *ctx, float *x, int n, Error *e) {
    (void)e;
    Planted *p = ctx;
    for (int t = 0; t < n; t++) {
        float *row = x + (size_t)t * p->D;
        for (int i = 0; i < p->D; i++) row[i] = (float)(0.01 * slm_rng_normal(&p->rng));
        for (int f = 0; f < p->F; f++) {
            if (slm_rng_uniform(&p->rng) >= 0.05) continue;
            float a = (float)slm_rng_range(&p->rng, 0.5, 1.5);
            for (int i = 0; i < p->D; i++) row[i] += a * p->dirs[(size_t)f * p->D + i];
        }
    }
    return 0;
}

static void planted_init(Planted *p, int D, int F, uint64_t seed) {
    *p = (Planted){.D = D, .F = F, .dirs = malloc(sizeof(float) * D * F)};
    slm_rng_seed(&p->rng, seed);
    for (int f = 0; f < F; f++) {
        double n = 0;
        float *d = p->dirs + (size_t)f * D;
        for (int i = 0; i < D; i++) d[i] = (float)slm_rng_normal(&p->rng), n += (double)d[i] * d[i];
        for (int i = 0; i < D; i++) d[i] = (float)(d[i] / sqrt(n));
    }
}

/* Planted directions with a decoder row at cosine >= 0.9. */
static int recovered(const Sae *s, const Planted *p) {
    int found = 0, D = p->D;
    for (int f = 0; f < p->F; f++) {
        double best = 0;
        for (int j = 0; j < s->cfg.d_sae; j++) {
            const float *w = s->W_dec + (size_t)j * D;
            double dot = 0, n = 0;
            for (int i = 0; i < D; i++) dot += (double)w[i] * p->dirs[(size_t)f * D + i], n += (double)w[i] * w[i];
            if (n > 0 && dot / sqrt(n) > best) best = dot / sqrt(n);
        }
        found += best >= 0.9;
    }
    return found;
}

static SaeTrainOptions planted_options(SaeKind kind) {
    SaeTrainOptions o = slm_sae_train_defaults();
    o.kind = kind, o.expansion = 4, o.k = 8, o.batch_tokens = 1024, o.tokens = 250 * 1024, o.lr = 5e-3;
    o.l1 = 2.0, o.dead_window = 50 * 1024, o.seed = 3;
    /* BatchTopK's k is a mean the batch keeps whole: near the planted 3.2 a token it
     * recovers all 64 (at 8, 52: the spare share of the batch goes to splitting features) */
    if (kind == SAE_BATCHTOPK) o.k = 4;
    return o;
}

/* BatchTopK keeps the k * B largest of the whole batch: a row of large
 * values takes more than k of them, the others fewer, and the running
 * threshold moves from 0 toward the smallest kept value. */
static void batch_top_k(void) {
    SaeConfig c = {.kind = SAE_BATCHTOPK, .d_in = 4, .d_sae = 12, .k = 2, .k_aux = 2};
    int B = 4;
    Sae s;
    SaePass p;
    Error e;
    CHECK(slm_sae_init(&s, &c, &e) == 0 && slm_sae_pass_init(&p, &c, B, &e) == 0);
    slm_sae_randomize(&s, 3);
    for (int j = 0; j < c.d_sae; j++) s.W_enc[j] *= 10, s.W_enc[c.d_sae + j] *= 10; /* pre = x W_enc: */
    float x[16] = {5, 5, 5, 5, 1, -1, 0.5f, 0, -1, 1, 0, 0.5f, 0.2f, 0, 0, -0.2f};  /* row 0 the largest */
    slm_sae_forward(&s, &p, x, B, NULL, 0);
    int kept = 0, row0 = 0;
    float smallest = INFINITY;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < c.d_sae; j++) {
            float z = p.z[b * c.d_sae + j];
            kept += z > 0, row0 += b == 0 && z > 0;
            if (z > 0 && z < smallest) smallest = z;
            CHECK(z == 0 || z == p.pre[b * c.d_sae + j]);
        }
    int larger_dropped = 0; /* no value dropped is larger than one kept */
    for (int i = 0; i < B * c.d_sae; i++) larger_dropped += p.z[i] == 0 && p.pre[i] > smallest;
    printf("batchtopk: %d kept of a batch of %d rows, k %d; row 0 kept %d\n", kept, B, c.k, row0);
    CHECK(kept == c.k * B && row0 > c.k && larger_dropped == 0 && p.kept_min == smallest);
    float x_hat[16], dense[16];
    slm_sae_decode(&s, &p, x_hat);
    for (int b = 0; b < B; b++) /* the chosen rows' sum is the whole product */
        for (int i = 0; i < c.d_in; i++) {
            double sum = s.b_dec[i];
            for (int j = 0; j < c.d_sae; j++) sum += (double)p.z[b * c.d_sae + j] * s.W_dec[j * c.d_in + i];
            dense[b * c.d_in + i] = (float)sum;
        }
    for (int i = 0; i < 16; i++) CHECK(fabsf(x_hat[i] - dense[i]) < 1e-4f);
    slm_sae_threshold_update(&s, &p);
    CHECK(fabsf(s.threshold[0] - (float)(SAE_THRESHOLD_LR * smallest)) < 1e-7f && s.threshold[11] == s.threshold[0]);
    slm_sae_to_jumprelu(&s); /* a token alone: kept where above the threshold */
    s.threshold[0] = INFINITY;
    slm_sae_encode(&s, &p, x, 1);
    for (int j = 0; j < c.d_sae; j++)
        CHECK(p.z[j] == (j > 0 && p.pre[j] > s.threshold[j] && p.pre[j] > 0 ? p.pre[j] : 0.0f));
    slm_sae_pass_free(&p);
    slm_sae_free(&s);
}

static void ground_truth(SaeKind kind, const char *what) {
    Planted p;
    planted_init(&p, 32, 64, 99);
    SaeTrainOptions o = planted_options(kind);
    Sae s = {0};
    SaeTrainResult r;
    Error e;
    if (!CHECK(slm_sae_train(&s, p.D, "synthetic", planted_fill, &p, &o, &r, &e) == 0))
        fprintf(stderr, "%s\n", e.message);
    int found = recovered(&s, &p);
    printf("%s: %d of %d planted features recovered (cosine >= 0.9) in %.1f s, dead %.1f%%\n", what, found, p.F,
           r.seconds, 100 * r.dead_share);
    CHECK(found >= p.F * 9 / 10);
    if (kind == SAE_BATCHTOPK) { /* saved as a JumpReLU, whose threshold gives about k latents a token */
        SaePass pass;
        float x[256 * 32];
        planted_fill(&p, x, 256, &e);
        CHECK(s.cfg.kind == SAE_JUMPRELU && s.threshold[0] > 0 && slm_sae_pass_init(&pass, &s.cfg, 256, &e) == 0);
        slm_sae_encode(&s, &pass, x, 256);
        long long fired = 0;
        for (int i = 0; i < 256 * s.cfg.d_sae; i++) fired += pass.z[i] > 0;
        printf("%s: as a JumpReLU, L0 %.2f (k %d)\n", what, fired / 256.0, o.k);
        CHECK(fired >= 256 * o.k / 2 && fired <= 256 * o.k * 2);
        slm_sae_pass_free(&pass);
    }
    free(r.density);
    slm_sae_free(&s);
    free(p.dirs);
}

/* Two runs of one seed give the same bits, at 1 thread and at 2. */
static void same_bits(void) {
    Sae s[2];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 2; i++) {
        Planted p;
        planted_init(&p, 16, 16, 5);
        SaeTrainOptions o = planted_options(SAE_TOPK);
        o.tokens = 40 * 256, o.batch_tokens = 256, o.dead_window = 1024;
        SaeTrainResult r;
        Error e;
        omp_set_num_threads(i + 1);
        if (!CHECK(slm_sae_train(&s[i], p.D, "synthetic", planted_fill, &p, &o, &r, &e) == 0))
            fprintf(stderr, "%s\n", e.message);
        free(r.density);
        free(p.dirs);
    }
    CHECK(s[0].n_params == s[1].n_params && memcmp(s[0].params, s[1].params, s[0].n_params * sizeof(float)) == 0);
    slm_sae_free(&s[0]);
    slm_sae_free(&s[1]);
}

int main(void) {
    slm_model_threads_setup(2);
    gradcheck(SAE_TOPK, "topk");
    gradcheck(SAE_L1, "l1");
    gradcheck(SAE_BATCHTOPK, "batchtopk");
    batch_top_k();
    torch_fixture();
    folded_scale();
    ground_truth(SAE_TOPK, "topk");
    ground_truth(SAE_BATCHTOPK, "batchtopk");
    same_bits();
    return check_report();
}
