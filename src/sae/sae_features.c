/* A sparse autoencoder's features (sae_model.h): each latent's density and
 * strongest contexts over stories, and the tokens its decoder direction
 * promotes and suppresses when added at the hook. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/sae_model.h"

/* Latent j's contexts (c of them at most, strongest first) with a firing of value at (story, position). */
static void keep_context(SaeFeature *f, int c, int story, int position, float value) {
    int n = f->n_contexts;
    if (n == c && value <= f->contexts[n - 1].value) return;
    int at = n < c ? n++ : c - 1;
    while (at > 0 && value > f->contexts[at - 1].value) f->contexts[at] = f->contexts[at - 1], at--;
    f->contexts[at] = (SaeContext){story, position, value};
    f->n_contexts = n;
}

/* The batch's z (T, L) into every latent's counts and contexts; first: the batch's first story in idx. */
static void add_firings(SaeModelRun *r, const Stories *s, const int *idx, int first, SaeFeature *all, long long *count,
                        int contexts) {
    int L = r->sae->cfg.d_sae, story = first, at = 0;
    for (int t = 0; t < r->T; t++, at++) {
        while (at >= (int)story_len(s, idx[story])) at -= (int)story_len(s, idx[story]), story++;
        const float *z = r->pass.z + (size_t)t * L;
        for (int j = 0; j < L; j++) {
            if (z[j] <= 0) continue;
            count[j]++;
            all[j].mean_value += z[j];
            if (z[j] > all[j].max_value) all[j].max_value = z[j];
            keep_context(&all[j], contexts, idx[story], at, z[j]);
        }
    }
}

/* The latents to show into out->features: the named ones, else the densest. */
static int choose(const SaeFeatureOptions *o, SaeFeature *all, const long long *count, int L, SaeFeatures *out,
                  Error *e) {
    int n = o->n_named ? o->n_named : (o->n_latents < L ? o->n_latents : L);
    if (!(out->features = xcalloc((size_t)n, sizeof(SaeFeature), e))) return -1;
    for (int i = 0; i < n; i++) {
        int best = -1;
        if (o->n_named) {
            best = o->latents[i];
            if (best < 0 || best >= L) return FAIL(e, "give latents from 0 to d_sae - 1", "no latent %d", best);
        } else
            for (int j = 0; j < L; j++)
                if (all[j].latent >= 0 && count[j] > 0 && (best < 0 || count[j] > count[best])) best = j;
        if (best < 0) break;
        out->features[out->n++] = all[best];
        all[best].latent = -1; /* shown */
    }
    return 0;
}

/* Mean log-probability of every token over the predicted positions of the run (V). */
static void mean_log_probs(const Activations *a, double *out) {
    int V = a->cfg.vocab_size, n = 0;
    memset(out, 0, (size_t)V * sizeof(double));
    for (int t = 0; t < a->n_positions; t++) {
        if (a->target[t] < 0) continue;
        for (int v = 0; v < V; v++) out[v] += a->logits[(size_t)t * V + v] - a->lse[t];
        n++;
    }
    for (int v = 0; n && v < V; v++) out[v] /= n;
}

/* f's promoted and suppressed tokens: the decoder row added at the hook at
 * f's largest value, the mean change of each token's log-probability. */
static int effects(SaeModelRun *r, SaeFeature *f, const double *base, double *now, int tokens, Error *e) {
    int V = r->model->cfg.vocab_size, D = r->sae->cfg.d_in;
    r->add = r->sae->W_dec + (size_t)f->latent * D;
    r->add_scale = f->max_value > 0 ? f->max_value : 1.0f;
    if (slm_sae_model_forward(r, SITE_ADD, 1, e)) return -1;
    mean_log_probs(&r->acts, now);
    for (int v = 0; v < V; v++) now[v] -= base[v];
    f->n_tokens = tokens < V ? tokens : V;
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < f->n_tokens; i++) {
            int best = -1;
            for (int v = 0; v < V; v++) {
                int taken = 0;
                for (int k = 0; k < i; k++) taken |= (side ? f->suppressed[k] : f->promoted[k]) == v;
                if (!taken && (best < 0 || (side ? now[v] < now[best] : now[v] > now[best]))) best = v;
            }
            if (side)
                f->suppressed[i] = best, f->suppressed_by[i] = (float)now[best];
            else
                f->promoted[i] = best, f->promoted_by[i] = (float)now[best];
        }
    return 0;
}

/* The first stories of idx (up to 1024 tokens) run clean, then with each chosen latent's direction added. */
static int all_effects(SaeModelRun *r, const Stories *s, const int *idx, int n, SaeFeatures *out, int tokens,
                       Error *e) {
    int V = r->model->cfg.vocab_size, next = 0, keep = r->max_positions;
    r->max_positions = 1024 > keep ? keep : 1024;
    int rc = slm_sae_model_batch(r, s, idx, n, &next, e);
    r->max_positions = keep;
    double *base = rc ? NULL : xmalloc((size_t)V * sizeof(double), e),
           *now = base ? xmalloc((size_t)V * sizeof(double), e) : NULL;
    rc = !now || slm_sae_model_forward(r, SITE_READ, 1, e) ? -1 : 0;
    if (!rc) mean_log_probs(&r->acts, base);
    for (int i = 0; !rc && i < out->n; i++) rc = effects(r, &out->features[i], base, now, tokens, e);
    free(base), free(now);
    return rc;
}

int slm_sae_features(const Model *m, const Sae *sae, const SaeSite *site, const Stories *s, const int *idx, int n,
                     const SaeFeatureOptions *o, SaeFeatures *out, Error *e) {
    *out = (SaeFeatures){.d_sae = sae->cfg.d_sae};
    if (n < 1) return FAIL(e, "give a stories file with held-out stories (--test-stories)", "no stories to read");
    if (sae->cfg.d_in != site->d_in)
        return FAIL(e, "give the model the SAE was trained on (-m MODEL)",
                    "the SAE reads %d numbers a position, but %s gives %d", sae->cfg.d_in, site->name, site->d_in);
    int L = sae->cfg.d_sae, longest = 2048,
        contexts = o->contexts < 1                  ? 1
                   : o->contexts > SAE_CONTEXTS_MAX ? SAE_CONTEXTS_MAX
                                                    : o->contexts;
    for (int i = 0; i < n; i++)
        if ((int)story_len(s, idx[i]) > longest) longest = (int)story_len(s, idx[i]);
    SaeModelRun r;
    if (slm_sae_model_run_init(&r, m, site, sae, longest, e)) return -1;
    SaeFeature *all = xcalloc((size_t)L, sizeof(SaeFeature), e);
    long long *count = all ? xcalloc((size_t)L, sizeof(long long), e) : NULL;
    int rc = count && (out->density = xmalloc((size_t)L * sizeof(float), e)) ? 0 : -1;
    for (int j = 0; !rc && j < L; j++) all[j].latent = j;
    for (int next = 0; !rc && next < n;) {
        int first = next;
        rc = slm_sae_model_batch(&r, s, idx, n, &next, e) || slm_sae_model_forward(&r, SITE_READ, site->to_logits, e);
        if (rc) break;
        slm_sae_encode(sae, &r.pass, r.x, r.T);
        add_firings(&r, s, idx, first, all, count, contexts);
        out->tokens += r.T;
    }
    for (int j = 0; !rc && j < L; j++) {
        out->density[j] = out->tokens ? (float)((double)count[j] / out->tokens) : 0.0f;
        all[j].density = out->density[j];
        all[j].mean_value = count[j] ? all[j].mean_value / count[j] : 0.0;
        out->n_dead += count[j] == 0;
    }
    if (!rc) rc = choose(o, all, count, L, out, e) || all_effects(&r, s, idx, n, out, o->tokens, e);
    free(all), free(count);
    slm_sae_model_run_free(&r);
    if (rc) slm_sae_features_free(out);
    return rc ? -1 : 0;
}

void slm_sae_features_free(SaeFeatures *f) {
    free(f->density), free(f->features);
    *f = (SaeFeatures){0};
}
