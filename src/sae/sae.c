/* A sparse autoencoder's passes (sae.h): the encoder and decoder products
 * through slm_matmul (OpenBLAS's sgemm in fixed blocks), TopK and ReLU row
 * by row, the losses summed row by row and then in row order, so that the
 * same inputs give the same bits at any thread count. */
#include "storylm/sae.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/layers.h"
#include "storylm/rng.h"

/* Rows are split over threads only when there is work enough to pay for the team. */
#define PARALLEL_MIN ((size_t)1 << 20)

static int has_threshold(SaeKind kind) { return kind == SAE_BATCHTOPK || kind == SAE_JUMPRELU; }

static size_t sizes(const SaeConfig *c, size_t *n_enc, size_t *n_dec) {
    *n_enc = (size_t)c->d_in * c->d_sae;
    *n_dec = *n_enc;
    return *n_enc + (size_t)c->d_sae + *n_dec + (size_t)c->d_in + (has_threshold(c->kind) ? (size_t)c->d_sae : 0);
}

void slm_sae_views(const Sae *s, float *buf, float **W_enc, float **b_enc, float **W_dec, float **b_dec) {
    size_t n_enc, n_dec;
    sizes(&s->cfg, &n_enc, &n_dec);
    *W_enc = buf;
    *b_enc = buf + n_enc;
    *W_dec = *b_enc + s->cfg.d_sae;
    *b_dec = *W_dec + n_dec;
}

int slm_sae_init(Sae *s, const SaeConfig *cfg, Error *e) {
    *s = (Sae){0};
    if (cfg->d_in < 1 || cfg->d_sae < 1 || (double)cfg->d_in * cfg->d_sae > 1e9)
        return FAIL(e, "give a smaller --expansion", "an SAE of %d x %d latents is out of range", cfg->d_in,
                    cfg->d_sae);
    if ((cfg->kind == SAE_TOPK || cfg->kind == SAE_BATCHTOPK) && (cfg->k < 1 || cfg->k > cfg->d_sae))
        return FAIL(e, "give --k between 1 and the SAE's width", "k %d is out of range (1 to %d)", cfg->k, cfg->d_sae);
    s->cfg = *cfg;
    size_t n_enc, n_dec;
    s->n_params = sizes(cfg, &n_enc, &n_dec);
    if (!(s->params = xcalloc(s->n_params, sizeof(float), e))) return -1;
    slm_sae_views(s, s->params, &s->W_enc, &s->b_enc, &s->W_dec, &s->b_dec);
    s->threshold = has_threshold(cfg->kind) ? s->b_dec + cfg->d_in : NULL;
    return 0;
}

void slm_sae_free(Sae *s) {
    free(s->params);
    *s = (Sae){0};
}

/* W_dec (d_sae, d_in): rows of random directions of norm 0.1; W_enc (d_in, d_sae) = W_dec^T. */
void slm_sae_randomize(Sae *s, uint64_t seed) {
    int D = s->cfg.d_in, L = s->cfg.d_sae;
    Rng r;
    slm_rng_seed(&r, seed);
    memset(s->params, 0, s->n_params * sizeof(float));
    for (int j = 0; j < L; j++) {
        float *row = s->W_dec + (size_t)j * D;
        double norm = 0;
        for (int i = 0; i < D; i++) row[i] = (float)slm_rng_normal(&r), norm += (double)row[i] * row[i];
        for (int i = 0; i < D; i++) {
            row[i] = (float)(0.1 * row[i] / sqrt(norm > 0 ? norm : 1));
            s->W_enc[(size_t)i * L + j] = row[i];
        }
    }
}

void slm_sae_fold_scale(Sae *s, float scale) {
    size_t n_enc = (size_t)s->cfg.d_in * s->cfg.d_sae;
    for (size_t i = 0; i < n_enc; i++) s->W_enc[i] *= scale, s->W_dec[i] /= scale;
    for (int i = 0; i < s->cfg.d_in; i++) s->b_dec[i] /= scale;
}

/* ---- the pass's buffers ---------------------------------------------------- */

int slm_sae_pass_init(SaePass *p, const SaeConfig *c, int max_batch, Error *e) {
    *p = (SaePass){.max_batch = max_batch};
    size_t B = (size_t)max_batch, D = (size_t)c->d_in, L = (size_t)c->d_sae;
    float **big[] = {&p->pre, &p->z, &p->d_pre, &p->z_aux};
    float **small[] = {&p->x_cent, &p->x_hat, &p->e_hat, &p->d_out};
    for (size_t i = 0; i < 4; i++)
        if (!(*big[i] = xmalloc(B * L * sizeof(float), e))) goto fail;
    for (size_t i = 0; i < 4; i++)
        if (!(*small[i] = xmalloc(B * D * sizeof(float), e))) goto fail;
    if (!(p->ones = xmalloc(B * sizeof(float), e)) || !(p->sums = xmalloc(L * sizeof(float), e)) ||
        !(p->dec_norm = xcalloc(L, sizeof(float), e)) || !(p->row_loss = xmalloc(B * sizeof(double), e)) ||
        !(p->top = xmalloc(B * (size_t)(c->k > 0 ? c->k : 1) * sizeof(int), e)) ||
        !(p->top_aux = xmalloc(B * (size_t)(c->k_aux > 0 ? c->k_aux : 1) * sizeof(int), e)) ||
        !(p->n_top = xcalloc(B, sizeof(int), e)) || !(p->n_top_aux = xcalloc(B, sizeof(int), e)) ||
        !(p->start = xcalloc(B, sizeof(int), e)) || !(p->start_aux = xcalloc(B, sizeof(int), e)))
        goto fail;
    for (size_t i = 0; i < B; i++) p->ones[i] = 1.0f;
    return 0;
fail:
    slm_sae_pass_free(p);
    return -1;
}

void slm_sae_pass_free(SaePass *p) {
    float *all[] = {p->x_cent, p->pre,   p->z,    p->x_hat, p->z_aux,   p->e_hat,
                    p->d_pre,  p->d_out, p->ones, p->sums,  p->dec_norm};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    free(p->row_loss);
    free(p->top), free(p->top_aux), free(p->n_top), free(p->n_top_aux), free(p->start), free(p->start_aux);
    *p = (SaePass){0};
}

/* ---- TopK ------------------------------------------------------------------- */

/* a ranks above b: larger, or equal and of a smaller index (a fixed order for ties). */
static int above(float va, int a, float vb, int b) { return va > vb || (va == vb && a < b); }

/* The indices of row's (n) k largest values, among the latents marked in
 * only (NULL: all), into idx (sorted, largest first); returns how many (k or
 * fewer when fewer are marked). */
static int top_k(const float *row, int n, int k, const uint8_t *only, int *idx) {
    int got = 0;
    for (int j = 0; j < n; j++) {
        if (only && !only[j]) continue;
        if (got == k && !above(row[j], j, row[idx[k - 1]], idx[k - 1])) continue;
        int at = got < k ? got++ : k - 1;
        while (at > 0 && above(row[j], j, row[idx[at - 1]], idx[at - 1])) idx[at] = idx[at - 1], at--;
        idx[at] = j;
    }
    return got;
}

/* z (B, L) = ReLU of each row of pre's k largest among only (NULL: all), 0
 * elsewhere; each row's choices into top (B, k) from start[b] = b k, and how many into n_top (B). */
static void top_k_rows(const float *pre, float *z, int *top, int *n_top, int *start, int B, int L, int k,
                       const uint8_t *only) {
#pragma omp parallel for schedule(static) if ((size_t)B * L >= PARALLEL_MIN)
    for (int b = 0; b < B; b++) {
        const float *row = pre + (size_t)b * L;
        float *out = z + (size_t)b * L;
        int *idx = top + (size_t)b * k, got = top_k(row, L, k, only, idx);
        memset(out, 0, (size_t)L * sizeof(float));
        for (int i = 0; i < got; i++) out[idx[i]] = row[idx[i]] > 0 ? row[idx[i]] : 0.0f;
        n_top[b] = got, start[b] = b * k;
    }
}

/* The n-th largest (0: the largest) of v (m), v reordered: a selection with
 * the middle of three as pivot, no random draws (the same bits every run). */
static float nth_largest(float *v, long long m, long long n) {
    long long lo = 0, hi = m - 1;
    while (lo < hi) {
        float a = v[lo], b = v[(lo + hi) / 2], c = v[hi];
        float pivot = a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
        long long i = lo, j = hi;
        while (i <= j) { /* larger values to the left */
            while (v[i] > pivot) i++;
            while (v[j] < pivot) j--;
            if (i <= j) {
                float t = v[i];
                v[i++] = v[j], v[j--] = t;
            }
        }
        if (n <= j)
            hi = j;
        else if (n >= i)
            lo = i;
        else
            return v[n];
    }
    return v[n];
}

/* BatchTopK: z (B, L) keeps the K = k B largest positive values of pre over
 * the whole batch (ties to the smaller row and latent), each row's in index
 * order into top from start[b]; scratch (B, L). Sets p->kept_min. */
static void batch_top_k(const Sae *s, SaePass *p, int B, float *scratch) {
    int L = s->cfg.d_sae;
    long long m = 0, K = (long long)s->cfg.k * B, n = (long long)B * L;
    for (long long i = 0; i < n; i++)
        if (p->pre[i] > 0) scratch[m++] = p->pre[i];
    float cut = m > K ? nth_largest(scratch, m, K - 1) : 0.0f;
    long long above_cut = 0, ties = 0, kept = 0;
    for (long long i = 0; m > K && i < n; i++) above_cut += p->pre[i] > cut;
    ties = m > K ? K - above_cut : 0; /* values equal to cut still to keep */
    p->kept_min = 0;
    for (int b = 0; b < B; b++) {
        const float *row = p->pre + (size_t)b * L;
        float *out = p->z + (size_t)b * L;
        p->start[b] = (int)kept, p->n_top[b] = 0;
        for (int j = 0; j < L; j++) {
            float v = row[j];
            int keep = v > 0 && (m <= K || v > cut || (v == cut && ties > 0 && ties--));
            out[j] = keep ? v : 0.0f;
            if (!keep) continue;
            p->top[kept++] = j, p->n_top[b]++;
            if (p->kept_min == 0 || v < p->kept_min) p->kept_min = v;
        }
    }
}

/* ---- encoder and decoder ---------------------------------------------------- */

/* x (B, D) -> x_cent = x - b_dec (B, D) -> pre = x_cent W_enc + b_enc (B, L) -> z (B, L). */
void slm_sae_encode(const Sae *s, SaePass *p, const float *x, int B) {
    int D = s->cfg.d_in, L = s->cfg.d_sae;
    p->B = B;
    for (size_t b = 0; b < (size_t)B; b++)
        for (int i = 0; i < D; i++) p->x_cent[b * D + i] = x[b * D + i] - s->b_dec[i];
    for (size_t b = 0; b < (size_t)B; b++) memcpy(p->pre + b * L, s->b_enc, (size_t)L * sizeof(float));
    slm_matmul(0, 0, B, L, D, p->x_cent, D, s->W_enc, L, 1.0f, p->pre, L);
    if (s->cfg.kind == SAE_TOPK) {
        top_k_rows(p->pre, p->z, p->top, p->n_top, p->start, B, L, s->cfg.k, NULL);
        return;
    }
    if (s->cfg.kind == SAE_BATCHTOPK) {
        batch_top_k(s, p, B, p->d_pre); /* d_pre is the backward's: free until then */
        return;
    }
    const float *t = s->threshold; /* JumpReLU: SAELens's ReLU(pre) where pre > threshold */
    for (size_t i = 0; i < (size_t)B * L; i++)
        p->z[i] = p->pre[i] > 0 && (!t || p->pre[i] > t[i % L]) ? p->pre[i] : 0.0f;
}

/* out (B, D) = bias (D; NULL: 0) + z W_dec, z (B, L) nonzero only at each
 * row's chosen latents (n_top[b] of them in top from start[b]): k rows of W_dec a token. */
static void decode_chosen(const Sae *s, const SaePass *p, const float *z, const int *top, const int *start,
                          const int *n_top, int k, const float *bias, float *out) {
    int B = p->B, D = s->cfg.d_in, L = s->cfg.d_sae;
#pragma omp parallel for schedule(static) if ((size_t)B * k * D >= PARALLEL_MIN)
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * D;
        for (int i = 0; i < D; i++) o[i] = bias ? bias[i] : 0.0f;
        for (int c = 0; c < n_top[b]; c++) {
            int j = top[start[b] + c];
            float a = z[(size_t)b * L + j];
            const float *w = s->W_dec + (size_t)j * D;
            if (a != 0.0f)
                for (int i = 0; i < D; i++) o[i] += a * w[i];
        }
    }
}

/* z (B, L) -> out = z W_dec + b_dec (B, D): TopK's k rows a token, L1's product. */
void slm_sae_decode(const Sae *s, SaePass *p, float *out) {
    int D = s->cfg.d_in, L = s->cfg.d_sae;
    if (s->cfg.kind == SAE_TOPK || s->cfg.kind == SAE_BATCHTOPK) {
        decode_chosen(s, p, p->z, p->top, p->start, p->n_top, s->cfg.k, s->b_dec, out);
        return;
    }
    for (size_t b = 0; b < (size_t)p->B; b++) memcpy(out + b * D, s->b_dec, (size_t)D * sizeof(float));
    slm_matmul(0, 0, p->B, D, L, p->z, L, s->W_dec, D, 1.0f, out, D);
}

/* sum over rows of |a_b - c_b|^2 (B rows of D), row by row, then in order. */
static double sum_sq_diff(SaePass *p, const float *a, const float *c, int B, int D) {
#pragma omp parallel for schedule(static) if ((size_t)B * D >= PARALLEL_MIN)
    for (int b = 0; b < B; b++) {
        double sum = 0;
        for (int i = 0; i < D; i++) {
            double d = (double)a[(size_t)b * D + i] - c[(size_t)b * D + i];
            sum += d * d;
        }
        p->row_loss[b] = sum;
    }
    double total = 0;
    for (int b = 0; b < B; b++) total += p->row_loss[b];
    return total;
}

/* L1's penalty: lambda / B sum_b sum_j z_bj |W_dec_j|, with |W_dec_j| into p->dec_norm. */
static double l1_penalty(const Sae *s, SaePass *p, int B) {
    int D = s->cfg.d_in, L = s->cfg.d_sae;
    for (int j = 0; j < L; j++) {
        double n = 0;
        for (int i = 0; i < D; i++) n += (double)s->W_dec[(size_t)j * D + i] * s->W_dec[(size_t)j * D + i];
        p->dec_norm[j] = (float)sqrt(n);
    }
#pragma omp parallel for schedule(static) if ((size_t)B * L >= PARALLEL_MIN)
    for (int b = 0; b < B; b++) {
        double sum = 0;
        for (int j = 0; j < L; j++) sum += (double)p->z[(size_t)b * L + j] * p->dec_norm[j];
        p->row_loss[b] = sum;
    }
    double total = 0;
    for (int b = 0; b < B; b++) total += p->row_loss[b];
    return p->l1_coeff * total / B;
}

/* AuxK: the residual x - x_hat made again from the dead latents (p->k_aux of
 * them at most) as e_hat = z_aux W_dec (B, D); returns the loss. */
static double aux_loss(const Sae *s, SaePass *p, const float *x, int B, const uint8_t *dead) {
    int D = s->cfg.d_in, L = s->cfg.d_sae;
    top_k_rows(p->pre, p->z_aux, p->top_aux, p->n_top_aux, p->start_aux, B, L, p->k_aux, dead);
    decode_chosen(s, p, p->z_aux, p->top_aux, p->start_aux, p->n_top_aux, p->k_aux, NULL, p->e_hat);
    /* residual e into d_out for the moment: e_hat - e = e_hat - x + x_hat */
    for (size_t i = 0; i < (size_t)B * D; i++) p->d_out[i] = x[i] - p->x_hat[i];
    double scale = fmin((double)p->n_dead / s->cfg.k_aux, 1.0);
    return SAE_AUX_COEFF * scale * sum_sq_diff(p, p->e_hat, p->d_out, B, D) / B;
}

void slm_sae_forward(const Sae *s, SaePass *p, const float *x, int B, const uint8_t *dead, float l1_coeff) {
    int D = s->cfg.d_in, L = s->cfg.d_sae;
    slm_sae_encode(s, p, x, B);
    slm_sae_decode(s, p, p->x_hat);
    p->l1_coeff = l1_coeff;
    p->mse = sum_sq_diff(p, p->x_hat, x, B, D) / B;
    p->aux = p->l1 = 0;
    p->n_dead = p->k_aux = 0;
    if (s->cfg.kind == SAE_L1) p->l1 = l1_penalty(s, p, B);
    for (int j = 0; dead && s->cfg.kind != SAE_L1 && j < L; j++) p->n_dead += dead[j] != 0;
    if (p->n_dead > 0) {
        p->k_aux = p->n_dead < s->cfg.k_aux ? p->n_dead : s->cfg.k_aux;
        p->aux = aux_loss(s, p, x, B, dead);
    }
    p->loss = p->mse + p->aux + p->l1;
}

/* ---- backward --------------------------------------------------------------- */

/* L1: d_pre (B, L) = d_out (B, D) W_dec^T where z > 0 (plus lambda/B |W_dec_j|),
 * else 0; gW_dec += z^T d_out. */
static void decoder_backward(const Sae *s, SaePass *p, float *gW_dec, float extra) {
    int B = p->B, D = s->cfg.d_in, L = s->cfg.d_sae;
    slm_matmul(1, 0, L, D, B, p->z, L, p->d_out, D, 1.0f, gW_dec, D);
    slm_matmul(0, 1, B, L, D, p->d_out, D, s->W_dec, D, 0.0f, p->d_pre, L);
    for (size_t i = 0; i < (size_t)B * L; i++)
        p->d_pre[i] = p->z[i] > 0 ? p->d_pre[i] + extra * p->dec_norm[i % L] : 0.0f;
}

/* TopK's (and AuxK's) decoder, at the chosen latents top (B, k) only:
 * d_pre_bj += d_out_b . W_dec_j where z_bj > 0; gW_dec_j += z_bj d_out_b,
 * summed over b in order (threads take whole latents: the same bits at any count). */
static void chosen_backward(const Sae *s, SaePass *p, const float *z, const int *top, const int *start,
                            const int *n_top, int k, float *gW_dec) {
    int B = p->B, D = s->cfg.d_in, L = s->cfg.d_sae;
#pragma omp parallel for schedule(static) if ((size_t)B * k * D >= PARALLEL_MIN)
    for (int b = 0; b < B; b++)
        for (int c = 0; c < n_top[b]; c++) {
            int j = top[start[b] + c];
            if (z[(size_t)b * L + j] <= 0) continue;
            const float *w = s->W_dec + (size_t)j * D, *d = p->d_out + (size_t)b * D;
            float dot = 0;
            for (int i = 0; i < D; i++) dot += d[i] * w[i];
            p->d_pre[(size_t)b * L + j] += dot;
        }
#pragma omp parallel
    {
        int T = omp_get_num_threads(), t = omp_get_thread_num(), lo = (int)((long)L * t / T),
            hi = (int)((long)L * (t + 1) / T);
        for (int b = 0; b < B; b++)
            for (int c = 0; c < n_top[b]; c++) {
                int j = top[start[b] + c];
                float a = z[(size_t)b * L + j];
                if (j < lo || j >= hi || a == 0.0f) continue;
                const float *d = p->d_out + (size_t)b * D;
                float *g = gW_dec + (size_t)j * D;
                for (int i = 0; i < D; i++) g[i] += a * d[i];
            }
    }
}

/* L1: gW_dec_j += lambda / B (sum_b z_bj) W_dec_j / |W_dec_j|. */
static void l1_backward(const Sae *s, SaePass *p, float *gW_dec) {
    int D = s->cfg.d_in, L = s->cfg.d_sae;
    memset(p->sums, 0, (size_t)L * sizeof(float));
    slm_column_sums(p->z, p->B, L, L, p->ones, p->sums);
    for (int j = 0; j < L; j++) {
        if (p->dec_norm[j] == 0) continue;
        float c = p->l1_coeff / p->B * p->sums[j] / p->dec_norm[j];
        for (int i = 0; i < D; i++) gW_dec[(size_t)j * D + i] += c * s->W_dec[(size_t)j * D + i];
    }
}

/* d_pre (B, L) -> W_enc, b_enc and, through x_cent = x - b_dec, b_dec. */
static void encoder_backward(const Sae *s, SaePass *p, float *gW_enc, float *gb_enc, float *gb_dec) {
    int B = p->B, D = s->cfg.d_in, L = s->cfg.d_sae;
    slm_matmul(1, 0, D, L, B, p->x_cent, D, p->d_pre, L, 1.0f, gW_enc, L);
    memset(p->sums, 0, (size_t)L * sizeof(float));
    slm_column_sums(p->d_pre, B, L, L, p->ones, p->sums);
    for (int j = 0; j < L; j++) gb_enc[j] += p->sums[j];
    for (int i = 0; i < D; i++) {
        double g = 0;
        for (int j = 0; j < L; j++) g += (double)s->W_enc[(size_t)i * L + j] * p->sums[j];
        gb_dec[i] -= (float)g;
    }
}

void slm_sae_backward(const Sae *s, SaePass *p, const float *x, float *grads) {
    int B = p->B, D = s->cfg.d_in;
    float *gW_enc, *gb_enc, *gW_dec, *gb_dec;
    slm_sae_views(s, grads, &gW_enc, &gb_enc, &gW_dec, &gb_dec);
    size_t n = (size_t)B * D;
    for (size_t i = 0; i < n; i++) p->d_out[i] = 2.0f / B * (p->x_hat[i] - x[i]);
    memset(p->sums, 0, (size_t)s->cfg.d_sae * sizeof(float));
    float *col = p->sums; /* b_dec's share of the output: the column sums of d_out */
    for (int i = 0; i < D; i++) {
        double g = 0;
        for (int b = 0; b < B; b++) g += p->d_out[(size_t)b * D + i];
        col[i] = (float)g;
    }
    for (int i = 0; i < D; i++) gb_dec[i] += col[i];
    if (s->cfg.kind == SAE_L1) {
        decoder_backward(s, p, gW_dec, p->l1_coeff / B);
        l1_backward(s, p, gW_dec);
    } else {
        memset(p->d_pre, 0, (size_t)B * s->cfg.d_sae * sizeof(float));
        chosen_backward(s, p, p->z, p->top, p->start, p->n_top, s->cfg.k, gW_dec);
    }
    if (p->k_aux > 0) {
        float c = (float)(SAE_AUX_COEFF * fmin((double)p->n_dead / s->cfg.k_aux, 1.0) * 2.0 / B);
        for (size_t i = 0; i < n; i++) p->d_out[i] = c * (p->e_hat[i] - (x[i] - p->x_hat[i]));
        chosen_backward(s, p, p->z_aux, p->top_aux, p->start_aux, p->n_top_aux, p->k_aux, gW_dec);
    }
    encoder_backward(s, p, gW_enc, gb_enc, gb_dec);
}

void slm_sae_threshold_update(Sae *s, const SaePass *p) {
    if (s->cfg.kind != SAE_BATCHTOPK || p->kept_min <= 0) return;
    float t = (float)((1 - SAE_THRESHOLD_LR) * s->threshold[0] + SAE_THRESHOLD_LR * p->kept_min);
    for (int j = 0; j < s->cfg.d_sae; j++) s->threshold[j] = t;
}

void slm_sae_to_jumprelu(Sae *s) {
    if (s->cfg.kind == SAE_BATCHTOPK) s->cfg.kind = SAE_JUMPRELU;
}
