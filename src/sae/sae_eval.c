/* SAELens's metrics of a sparse autoencoder (sae_model.h): reconstruction
 * and sparsity on the site's activations, and the model's loss with the SAE
 * spliced in through the hook against the clean pass and the zeroed site. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/sae_model.h"

/* Running sums over the stories, in double, in story order. */
typedef struct Sums {
    double sq_err, sq_x, l0, l1, cosine, ce[3], kl[2];
    double *sum_x;    /* (D) */
    long long *fired; /* (L) */
    long long tokens, predicted;
    float *x, *lp_clean; /* the clean pass's site (T, D) and log-probabilities (T, V) */
} Sums;

/* x (T, D) against the SAE's reconstruction in p->x_hat, z in p->z. */
static void add_reconstruction(Sums *s, const SaePass *p, const float *x, int T, int D, int L) {
    for (int t = 0; t < T; t++) {
        const float *a = x + (size_t)t * D, *b = p->x_hat + (size_t)t * D, *z = p->z + (size_t)t * L;
        double err = 0, xx = 0, yy = 0, xy = 0;
        for (int i = 0; i < D; i++) {
            double d = (double)a[i] - b[i];
            err += d * d, xx += (double)a[i] * a[i], yy += (double)b[i] * b[i], xy += (double)a[i] * b[i];
            s->sum_x[i] += a[i];
        }
        s->sq_err += err, s->sq_x += xx;
        s->cosine += xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == 0 && yy == 0);
        for (int j = 0; j < L; j++)
            if (z[j] > 0) s->l0 += 1, s->l1 += z[j], s->fired[j]++;
    }
    s->tokens += T;
}

/* The pass's losses into ce[which]; its KL from the clean pass into kl[which - 1] (which > 0);
 * which 0 (clean) keeps the log-probabilities. */
static void add_losses(Sums *s, const Activations *a, int which) {
    int T = a->n_positions, V = a->cfg.vocab_size;
    for (int t = 0; t < T; t++) {
        if (a->target[t] < 0) continue;
        s->ce[which] += a->loss[t];
        s->predicted += which == 0;
        const float *logits = a->logits + (size_t)t * V;
        float *clean = s->lp_clean + (size_t)t * V;
        if (which == 0) {
            for (int v = 0; v < V; v++) clean[v] = logits[v] - a->lse[t];
            continue;
        }
        double kl = 0;
        for (int v = 0; v < V; v++) kl += exp((double)clean[v]) * ((double)clean[v] - (logits[v] - a->lse[t]));
        s->kl[which - 1] += kl;
    }
}

/* One batch of stories: the clean pass, the SAE on its site, the spliced and the zeroed passes. */
static int eval_batch(SaeModelRun *r, Sums *s, Error *e) {
    const Sae *sae = r->sae;
    int D = sae->cfg.d_in, L = sae->cfg.d_sae;
    if (slm_sae_model_forward(r, SITE_READ, 1, e)) return -1;
    int T = r->T;
    memcpy(s->x, r->x, (size_t)T * D * sizeof(float));
    add_losses(s, &r->acts, 0);
    slm_sae_encode(sae, &r->pass, s->x, T);
    slm_sae_decode(sae, &r->pass, r->pass.x_hat);
    add_reconstruction(s, &r->pass, s->x, T, D, L);
    if (slm_sae_model_forward(r, SITE_SPLICE, 1, e)) return -1;
    add_losses(s, &r->acts, 1);
    if (slm_sae_model_forward(r, SITE_ZERO, 1, e)) return -1;
    add_losses(s, &r->acts, 2);
    return 0;
}

/* The sums as SAELens's metrics. */
static void finish(const Sums *s, const Sae *sae, SaeEval *out) {
    int D = sae->cfg.d_in, L = sae->cfg.d_sae;
    double N = (double)(s->tokens > 0 ? s->tokens : 1), P = (double)(s->predicted > 0 ? s->predicted : 1);
    double mean_sq = 0;
    for (int i = 0; i < D; i++) mean_sq += (s->sum_x[i] / N) * (s->sum_x[i] / N);
    double total = s->sq_x - N * mean_sq; /* sum |x - mean x|^2 */
    int dead = 0;
    for (int j = 0; j < L; j++) dead += s->fired[j] == 0;
    out->tokens = s->tokens, out->predicted = s->predicted;
    out->mse = s->sq_err / (N * D);
    out->explained_variance = total > 0 ? 1.0 - s->sq_err / total : 0.0;
    out->l0 = s->l0 / N, out->l1 = s->l1 / N, out->cosine = s->cosine / N;
    out->dead_share = (double)dead / L;
    out->ce_clean = s->ce[0] / P, out->ce_spliced = s->ce[1] / P, out->ce_zero = s->ce[2] / P;
    double gap = out->ce_zero - out->ce_clean;
    out->ce_loss_score = gap != 0 ? (out->ce_zero - out->ce_spliced) / gap : NAN;
    out->kl_spliced = s->kl[0] / P, out->kl_zero = s->kl[1] / P;
    out->kl_score = out->kl_zero != 0 ? (out->kl_zero - out->kl_spliced) / out->kl_zero : NAN;
}

int slm_sae_eval(const Model *m, const Sae *sae, const SaeSite *site, const Stories *st, const int *idx, int n,
                 SaeEval *out, Error *e) {
    *out = (SaeEval){.stories = n};
    if (n < 1)
        return FAIL(e, "give a stories file with held-out stories (--test-stories)", "no stories to evaluate on");
    if (sae->cfg.d_in != site->d_in)
        return FAIL(e, "give the model the SAE was trained on (-m MODEL)",
                    "the SAE reads %d numbers a position, but %s gives %d", sae->cfg.d_in, site->name, site->d_in);
    int longest = 2048;
    for (int i = 0; i < n; i++)
        if ((int)story_len(st, idx[i]) > longest) longest = (int)story_len(st, idx[i]);
    SaeModelRun r;
    Sums s = {0};
    if (slm_sae_model_run_init(&r, m, site, sae, longest, e)) return -1;
    size_t V = (size_t)m->cfg.vocab_size;
    int rc = !(s.sum_x = xcalloc((size_t)sae->cfg.d_in, sizeof(double), e)) ||
                     !(s.fired = xcalloc((size_t)sae->cfg.d_sae, sizeof(long long), e)) ||
                     !(s.x = xmalloc((size_t)longest * sae->cfg.d_in * sizeof(float), e)) ||
                     !(s.lp_clean = xmalloc((size_t)longest * V * sizeof(float), e))
                 ? -1
                 : 0;
    for (int next = 0; !rc && next < n;) rc = slm_sae_model_batch(&r, st, idx, n, &next, e) || eval_batch(&r, &s, e);
    if (!rc) finish(&s, sae, out);
    free(s.sum_x), free(s.fired), free(s.x), free(s.lp_clean);
    slm_sae_model_run_free(&r);
    return rc ? -1 : 0;
}
