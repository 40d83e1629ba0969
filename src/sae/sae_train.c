/* Training a sparse autoencoder (sae_train.h): a shuffled store of
 * activations, normalisation, Adam with its schedule, dead latents. */
#include "storylm/sae_train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/clock.h"
#include "storylm/rng.h"
#include "sae_train_run.h"

#define STORE_BYTES (128u << 20)

SaeTrainOptions slm_sae_train_defaults(void) {
    return (SaeTrainOptions){.kind = SAE_TOPK,
                             .expansion = 16,
                             .k = 32,
                             .batch_tokens = 4096,
                             .l1 = 5.0,
                             .lr = 2e-3,
                             .tokens = 4000000,
                             .dead_window = 1000000,
                             .seed = 1};
}

int slm_sae_train_check(const SaeTrainOptions *o, Error *e) {
    if (o->expansion < 1 || o->expansion > 256)
        return FAIL(e, "give --expansion from 1 to 256", "--expansion %d is out of range", o->expansion);
    if (o->batch_tokens < 1 || o->batch_tokens > 65536)
        return FAIL(e, "give --batch-tokens from 1 to 65536", "--batch-tokens %d is out of range", o->batch_tokens);
    if (o->tokens < 1) return FAIL(e, "give --tokens 1 or more", "--tokens %lld is out of range", o->tokens);
    if (!(o->lr > 0) || !isfinite(o->lr)) return FAIL(e, "give --lr above 0", "--lr %g is out of range", o->lr);
    if (!(o->l1 >= 0) || !isfinite(o->l1)) return FAIL(e, "give --l1 of 0 or more", "--l1 %g is out of range", o->l1);
    return 0;
}

/* The next n rows of the stream into the store, in a new shuffled order. */
static int store_fill(Store *st, SaeFill fill, void *ctx, const SaeTrainOptions *o, Error *e) {
    if (o->tell) o->tell(ctx, &st->fill_pos);
    st->fill_rng = st->rng;
    for (long long at = 0; at < st->n;) {
        int part = st->n - at > 65536 ? 65536 : (int)(st->n - at);
        if (fill(ctx, st->rows + (size_t)at * st->d, part, e)) return -1;
        at += part;
    }
    for (long long i = 0; i < st->n; i++) st->order[i] = i;
    for (long long i = st->n - 1; i > 0; i--) {
        long long j = (long long)slm_rng_below(&st->rng, (uint64_t)i + 1), t = st->order[i];
        st->order[i] = st->order[j], st->order[j] = t;
    }
    st->at = 0;
    for (size_t i = 0; i < (size_t)st->n * st->d; i++)
        if (!isfinite(st->rows[i]))
            return FAIL(e, "check the model: storylm eval STORIES --model MODEL",
                        "the activations hold a value that is not finite (NaN or infinite)");
    return 0;
}

/* SAELens's expected_average_only_in: sqrt(d) / the rows' mean norm (1 when they are all 0). */
static float norm_scale(const Store *st) {
    double sum = 0;
    for (long long i = 0; i < st->n; i++) {
        double n2 = 0;
        for (int j = 0; j < st->d; j++) n2 += (double)st->rows[i * st->d + j] * st->rows[i * st->d + j];
        sum += sqrt(n2);
    }
    double mean = sum / (st->n > 0 ? st->n : 1);
    return mean > 0 ? (float)(sqrt((double)st->d) / mean) : 1.0f;
}

/* b_dec = the mean row of the store, normalised. */
static void init_b_dec(Sae *s, const Store *st, float scale) {
    for (int j = 0; j < st->d; j++) {
        double sum = 0;
        for (long long i = 0; i < st->n; i++) sum += st->rows[i * st->d + j];
        s->b_dec[j] = (float)(sum / (st->n > 0 ? st->n : 1) * scale);
    }
}

static int firing_init(Firing *f, int L, long long window, Error *e) {
    *f = (Firing){.window = window};
    if (!(f->since = xcalloc((size_t)L, sizeof(long long), e)) || !(f->now = xcalloc((size_t)L, sizeof(float), e)) ||
        !(f->last = xcalloc((size_t)L, sizeof(float), e)) || !(f->in_batch = xcalloc((size_t)L, sizeof(int), e)) ||
        !(f->dead = xcalloc((size_t)L, 1, e)))
        return -1;
    return 0;
}

static void firing_free(Firing *f) {
    free(f->since), free(f->now), free(f->last), free(f->dead), free(f->in_batch);
    *f = (Firing){0};
}

/* z (B, L) of a step into the counts; returns the share of dead latents. */
static double firing_update(Firing *f, const float *z, int B, int L) {
    int dead = 0;
    memset(f->in_batch, 0, (size_t)L * sizeof(int));
    for (size_t b = 0; b < (size_t)B; b++)
        for (int j = 0; j < L; j++) f->in_batch[j] += z[b * L + j] > 0;
    for (int j = 0; j < L; j++) {
        int fired = f->in_batch[j];
        f->now[j] += (float)fired;
        f->since[j] = fired ? 0 : f->since[j] + B;
        f->dead[j] = f->since[j] >= f->window;
        dead += f->dead[j];
    }
    f->in_now += B;
    if (f->in_now >= f->window) {
        memcpy(f->last, f->now, (size_t)L * sizeof(float));
        memset(f->now, 0, (size_t)L * sizeof(float));
        f->in_last = f->in_now, f->in_now = 0;
    }
    return (double)dead / L;
}

/* Each latent's firing frequency over the last whole window (else over what there was). */
static float *firing_density(const Firing *f, int L, Error *e) {
    float *d = xmalloc((size_t)L * sizeof(float), e);
    const float *counts = f->in_last ? f->last : f->now;
    long long n = f->in_last ? f->in_last : f->in_now;
    for (int j = 0; d && j < L; j++) d[j] = n ? counts[j] / (float)n : 0.0f;
    return d;
}

/* 1 - |x - x_hat|^2 / |x - mean x|^2 over the batch x (B, D), in double. */
static double batch_explained(const float *x, const SaePass *p, int B, int D) {
    double total = 0;
    for (int j = 0; j < D; j++) {
        double mean = 0, var = 0;
        for (int b = 0; b < B; b++) mean += x[(size_t)b * D + j];
        mean /= B;
        for (int b = 0; b < B; b++) var += (x[(size_t)b * D + j] - mean) * (x[(size_t)b * D + j] - mean);
        total += var;
    }
    return total > 0 ? 1.0 - p->mse * B / total : 0.0;
}

static void run_free(Run *r) {
    slm_sae_pass_free(&r->pass);
    free(r->store.rows), free(r->store.order);
    firing_free(&r->firing);
    slm_adam_free(&r->adam);
    free(r->grads), free(r->x);
}

static int run_init(Run *r, Sae *s, int d_in, const char *hook, const SaeTrainOptions *o, Error *e) {
    *r = (Run){.s = s, .scale = 1.0f};
    SaeConfig c = {.kind = o->kind, .d_in = d_in, .d_sae = d_in * o->expansion, .k = o->k, .k_aux = d_in / 2};
    if (c.k_aux < 1) c.k_aux = 1;
    snprintf(c.hook_name, sizeof c.hook_name, "%s", hook);
    long long n = o->store_tokens ? o->store_tokens : (long long)(STORE_BYTES / ((size_t)d_in * sizeof(float)));
    if (n > 64LL * o->batch_tokens) n = 64LL * o->batch_tokens; /* 64 batches mixed: as many stories as that */
    if (n > o->tokens) n = o->tokens;
    if (n < o->batch_tokens) n = o->batch_tokens;
    r->store = (Store){.n = n, .d = d_in};
    slm_rng_seed(&r->store.rng, o->seed ^ 0x5ae5ae5aULL);
    if (slm_sae_init(s, &c, e) || slm_sae_pass_init(&r->pass, &c, o->batch_tokens, e) ||
        firing_init(&r->firing, c.d_sae, o->dead_window, e) || slm_adam_init(&r->adam, s->n_params, e) ||
        !(r->grads = xmalloc(s->n_params * sizeof(float), e)) ||
        !(r->x = xmalloc((size_t)o->batch_tokens * d_in * sizeof(float), e)) ||
        !(r->store.rows = xmalloc((size_t)n * d_in * sizeof(float), e)) ||
        !(r->store.order = xmalloc((size_t)n * sizeof(long long), e)))
        return -1;
    slm_sae_randomize(s, o->seed);
    return 0;
}

/* The learning rate of step i of n: constant, then down to 0 over the last 20%. */
static double lr_at(const SaeTrainOptions *o, int i, int n) {
    double tail = 0.2 * n, left = n - i;
    return left < tail ? o->lr * left / tail : o->lr;
}

/* One step on the next batch; fills the progress's numbers. */
static int step(Run *r, const SaeTrainOptions *o, SaeFill fill, void *ctx, float scale, int i, int n, SaeProgress *pr,
                Error *e) {
    Sae *s = r->s;
    int B = o->batch_tokens, D = s->cfg.d_in, L = s->cfg.d_sae;
    if (r->store.at + B > r->store.n && store_fill(&r->store, fill, ctx, o, e)) return -1;
    for (int b = 0; b < B; b++) {
        const float *row = r->store.rows + (size_t)r->store.order[r->store.at++] * D;
        for (int j = 0; j < D; j++) r->x[(size_t)b * D + j] = row[j] * scale;
    }
    double warm = 0.05 * n, l1 = o->l1 * (i + 1 < warm ? (i + 1) / warm : 1.0);
    slm_sae_forward(s, &r->pass, r->x, B, s->cfg.kind != SAE_L1 ? r->firing.dead : NULL, (float)l1);
    memset(r->grads, 0, s->n_params * sizeof(float));
    slm_sae_backward(s, &r->pass, r->x, r->grads);
    pr->lr = lr_at(o, i, n);
    slm_adam_update(&r->adam, s->params, r->grads, (float)pr->lr); /* the threshold has no gradient: kept */
    slm_sae_threshold_update(s, &r->pass);
    for (size_t j = 0; j < s->n_params; j++)
        if (!isfinite(s->params[j]))
            return FAIL(e, "give a smaller --lr", "training diverged at step %d: a weight is not finite", i + 1);
    pr->dead_share = firing_update(&r->firing, r->pass.z, B, L);
    long long fired = 0;
    for (size_t j = 0; j < (size_t)B * L; j++) fired += r->pass.z[j] > 0;
    pr->l0 = (double)fired / B;
    pr->mse = r->pass.mse;
    pr->explained_variance = batch_explained(r->x, &r->pass, B, D);
    pr->l1_coeff = l1;
    return 0;
}

/* A new run: the first fill, the scale from it, b_dec at its mean. */
static int run_start(Run *r, SaeFill fill, void *ctx, const SaeTrainOptions *o, Error *e) {
    if (store_fill(&r->store, fill, ctx, o, e)) return -1;
    r->scale = norm_scale(&r->store);
    init_b_dec(r->s, &r->store, r->scale);
    return 0;
}

/* A resumed run: the checkpoint's state, and the store filled again from
 * where its last fill began, so that the rows still to come are the same. */
static int run_resume(Run *r, SaeFill fill, void *ctx, const SaeTrainOptions *o, Error *e) {
    if (!o->tell || !o->seek || !o->checkpoint)
        return FAIL(e, "train again without --resume", "this stream of activations cannot be resumed");
    if (slm_sae_checkpoint_load(r, o, e)) return -1;
    long long at = r->store.at;
    r->store.rng = r->store.fill_rng;
    if (o->seek(ctx, &r->store.fill_pos, e) || store_fill(&r->store, fill, ctx, o, e)) return -1;
    r->store.at = at;
    return 0;
}

/* The steps from r->done to n, until o->stop or --minutes; the result's counts. */
static int run_steps(Run *r, SaeFill fill, void *ctx, const SaeTrainOptions *o, int n, SaeTrainResult *res, Error *e) {
    double start = slm_clock_seconds();
    SaeProgress pr = {.steps = n};
    int rc = 0;
    for (; !rc && r->done < n; r->done++) {
        double elapsed = slm_clock_seconds() - start;
        if ((o->stop && *o->stop) || (o->minutes > 0 && elapsed >= o->minutes * 60)) {
            res->interrupted = 1;
            break;
        }
        int i = r->done;
        rc = step(r, o, fill, ctx, r->scale, i, n, &pr, e);
        res->steps = pr.step = i + 1;
        res->tokens = pr.tokens = (long long)(i + 1) * o->batch_tokens;
        res->dead_share = pr.dead_share;
        pr.elapsed_s = slm_clock_seconds() - start;
        pr.tokens_per_s =
            (pr.tokens - (long long)res->resumed_at * o->batch_tokens) / (pr.elapsed_s > 1e-9 ? pr.elapsed_s : 1e-9);
        if (!rc && o->progress) o->progress(&pr, o->progress_ctx);
    }
    res->seconds = slm_clock_seconds() - start;
    return rc;
}

int slm_sae_train(Sae *s, int d_in, const char *hook, SaeFill fill, void *ctx, const SaeTrainOptions *o,
                  SaeTrainResult *res, Error *e) {
    *res = (SaeTrainResult){.scale = 1.0f};
    Run r;
    if (slm_sae_train_check(o, e)) return -1;
    int rc = run_init(&r, s, d_in, hook, o, e) ? -1 : 0;
    if (!rc) rc = o->resume ? run_resume(&r, fill, ctx, o, e) : run_start(&r, fill, ctx, o, e);
    long long n_steps = o->tokens / o->batch_tokens;
    int n = n_steps < 1 ? 1 : n_steps > 1000000000 ? 1000000000 : (int)n_steps;
    res->resumed_at = res->steps = r.done;
    res->tokens = (long long)r.done * o->batch_tokens;
    if (!rc) rc = run_steps(&r, fill, ctx, o, n, res, e);
    res->scale = r.scale;
    if (!rc && o->checkpoint && o->tell && res->interrupted) rc = slm_sae_checkpoint_save(&r, o, e);
    if (!rc && o->checkpoint && !res->interrupted && remove(o->checkpoint) != 0 && errno != ENOENT)
        rc = FAIL(e, "remove it by hand", "cannot remove the finished run's checkpoint '%s': %s", o->checkpoint,
                  strerror(errno));
    if (!rc) slm_sae_fold_scale(s, r.scale); /* pre, so the threshold, is the same at either scale */
    if (!rc) slm_sae_to_jumprelu(s);
    if (!rc && !(res->density = firing_density(&r.firing, s->cfg.d_sae, e))) rc = -1;
    run_free(&r);
    return rc;
}
