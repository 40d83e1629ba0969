/* A sparse autoencoder on a model's hook point (sae_model.h): the site, the
 * hook that reads, splices or zeroes it, and the runs over stories. */
#include "storylm/sae_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/arch.h"
#include "storylm/hooks.h"

/* ---- the hook -------------------------------------------------------------- */

/* *buf (cap floats) grown to n; -1 when out of memory. */
static int grow(float **buf, size_t *cap, size_t n, Error *e) {
    if (n <= *cap) return 0;
    float *b = xrealloc(*buf, n * sizeof(float), e);
    if (!b) return -1;
    *buf = b, *cap = n;
    return 0;
}

/* The site's new numbers into data (T, row): the SAE's reconstruction of x,
 * or 0; hook_mlp_out's go back on top of resid_mid. */
static void write_site(SaeModelRun *r, float *data, size_t n) {
    const float *value = NULL;
    if (r->mode == SITE_SPLICE) {
        slm_sae_encode(r->sae, &r->pass, r->x, r->T);
        slm_sae_decode(r->sae, &r->pass, r->pass.x_hat);
        value = r->pass.x_hat;
    }
    for (size_t i = 0; i < n; i++) data[i] = (r->site->mid[0] ? r->mid[i] : 0.0f) + (value ? value[i] : 0.0f);
}

/* HookFn at the site's points: resid_mid kept, the site's numbers read into x and, by mode, replaced. */
static int site_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    SaeModelRun *r = ctx;
    size_t T = (size_t)shape[0], row = 1;
    for (int d = 1; d < ndim; d++) row *= (size_t)shape[d];
    if (r->site->mid[0] && strcmp(name, r->site->mid) == 0) {
        if (grow(&r->mid, &r->mid_cap, T * row, &r->hooks.error)) return -1;
        memcpy(r->mid, data, T * row * sizeof(float));
        return 0;
    }
    r->T = (int)T, r->row = (int)row;
    if (ndim < 2 || (r->site->d_in && (int)row != r->site->d_in) || T != (size_t)r->batch.n_tokens || !writable) {
        slm_hooks_fail(&r->hooks, "the hook point does not give a row of numbers a position",
                       "give a point such as hook_hidden or blocks.0.hook_resid_post");
        return -1;
    }
    if (grow(&r->x, &r->x_cap, T * row, &r->hooks.error)) return -1;
    for (size_t i = 0; i < T * row; i++) r->x[i] = data[i] - (r->site->mid[0] ? r->mid[i] : 0.0f);
    if (r->mode == SITE_READ) return 0;
    if (r->mode == SITE_ADD) {
        for (size_t i = 0; i < T * row; i++) data[i] += r->add_scale * r->add[i % row];
        return 1;
    }
    write_site(r, data, T * row);
    return 1;
}

int slm_sae_model_run_init(SaeModelRun *r, const Model *m, const SaeSite *site, const Sae *sae, int max_positions,
                           Error *e) {
    *r = (SaeModelRun){.model = m, .site = site, .sae = sae, .max_positions = max_positions, .max_stories = 256};
    r->names[0] = site->point, r->names[1] = site->mid;
    r->hooks = (ForwardHooks){.fn = site_hook, .ctx = r, .names = r->names, .n_names = site->mid[0] ? 2 : 1};
    if (slm_activations_init(&r->acts, &m->cfg, max_positions, e) ||
        slm_batch_init(&r->batch, max_positions, r->max_stories, e) ||
        (sae && slm_sae_pass_init(&r->pass, &sae->cfg, max_positions, e))) {
        slm_sae_model_run_free(r);
        return -1;
    }
    r->acts.hooks = &r->hooks;
    return 0;
}

void slm_sae_model_run_free(SaeModelRun *r) {
    if (r->acts.cfg.arch) slm_activations_free(&r->acts);
    slm_batch_free(&r->batch);
    if (r->pass.max_batch) slm_sae_pass_free(&r->pass);
    slm_hooks_free(&r->hooks);
    free(r->x), free(r->mid);
    *r = (SaeModelRun){0};
}

int slm_sae_model_batch(SaeModelRun *r, const Stories *s, const int *idx, int n, int *next, Error *e) {
    slm_batch_clear(&r->batch);
    while (*next < n) {
        size_t len = story_len(s, idx[*next]);
        if ((int)len > r->max_positions && r->batch.n_stories == 0)
            return FAIL(e, "give stories of fewer tokens", "story %d has %zu tokens, more than the %d a run holds",
                        idx[*next] + 1, len, r->max_positions);
        if (r->batch.n_tokens + (int)len > r->max_positions || r->batch.n_stories == r->max_stories) break;
        int32_t buf[4096];
        int32_t *story = len <= 4096 ? buf : xmalloc(len * sizeof(int32_t), e);
        if (!story) return -1;
        story_copy_ids(s, idx[*next], story);
        int rc = slm_batch_add(&r->batch, story, (int)len, e);
        if (story != buf) free(story);
        if (rc) return -1;
        (*next)++;
    }
    return 0;
}

int slm_sae_model_forward(SaeModelRun *r, SiteMode mode, int to_logits, Error *e) {
    r->mode = mode;
    r->hooks.failed = 0;
    r->T = 0;
    int rc = to_logits ? slm_model_forward(r->model, &r->acts, &r->batch, NULL, NULL, e)
                       : slm_model_forward_heads(r->model, &r->acts, &r->batch, NULL, e);
    if (!rc && r->T != r->batch.n_tokens)
        return FAIL(e, NULL, "the pass did not reach the hook point '%s'", r->site->point);
    return rc;
}

/* ---- the site --------------------------------------------------------------- */

/* name is a line of the "\n"-separated list. */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0)) return 1;
    return 0;
}

/* hook, or blocks.L.hook_mlp_out through resid_mid and resid_post, into site's points. */
static int find_points(const char *list, const char *hook, SaeSite *site, Error *e) {
    int l, used = 0;
    snprintf(site->name, sizeof site->name, "%s", hook);
    if (strstr(hook, "hook_pattern") || strstr(hook, "hook_distance_score")) /* (H, T, T): no row a position */
        return FAIL(e, "give a point such as hook_hidden or blocks.0.hook_resid_post",
                    "'%s' does not give a row of numbers a position", hook);
    if (listed(list, hook)) {
        snprintf(site->point, sizeof site->point, "%s", hook);
        return 0;
    }
    if (sscanf(hook, "blocks.%d.hook_mlp_out%n", &l, &used) == 1 && hook[used] == 0) {
        snprintf(site->mid, sizeof site->mid, "blocks.%d.hook_resid_mid", l);
        snprintf(site->point, sizeof site->point, "blocks.%d.hook_resid_post", l);
        if (listed(list, site->mid) && listed(list, site->point)) return 0;
    }
    char hint[400];
    snprintf(hint, sizeof hint, "its points: %s", list);
    for (char *p = hint; *p; p++)
        if (*p == '\n') *p = ',';
    if (strlen(hint) == sizeof hint - 1) memcpy(hint + sizeof hint - 5, "...", 4);
    return FAIL(e, hint, "the model has no hook point '%s'", hook);
}

int slm_sae_site(const Model *m, const char *hook, SaeSite *site, Error *e) {
    *site = (SaeSite){0};
    char *list = slm_hook_names(&m->cfg, e);
    if (!list) return -1;
    int rc = find_points(list, hook, site, e);
    free(list);
    if (rc) return -1;
    site->to_logits = strcmp(site->point, "hook_logits") == 0;
    SaeModelRun r;
    if (slm_sae_model_run_init(&r, m, site, NULL, 8, e)) return -1;
    int32_t ids[3] = {0, 0, 0};
    rc = slm_batch_add(&r.batch, ids, 3, e) || slm_sae_model_forward(&r, SITE_READ, site->to_logits, e);
    site->d_in = r.row;
    slm_sae_model_run_free(&r);
    return rc ? -1 : 0;
}

/* ---- the stream of training activations ---------------------------------------- */

int slm_sae_stream_init(SaeStream *st, const Model *m, const SaeSite *site, const Stories *s, uint64_t seed, Error *e) {
    *st = (SaeStream){.stories = s, .n = s->n_train, .seed = seed, .batch_start = -1};
    if (s->n_train < 1) return FAIL(e, "give a stories file of 2 or more stories", "no training stories");
    int longest = 4096;
    for (int i = 0; i < s->n_train; i++)
        if ((int)story_len(s, s->train[i]) > longest) longest = (int)story_len(s, s->train[i]);
    slm_rng_seed(&st->rng, seed);
    if (!(st->order = xmalloc((size_t)st->n * sizeof(int), e))) return -1;
    memcpy(st->order, s->train, (size_t)st->n * sizeof(int));
    st->next = st->n; /* shuffled at the first fill */
    return slm_sae_model_run_init(&st->run, m, site, NULL, longest, e);
}

void slm_sae_stream_free(SaeStream *st) {
    slm_sae_model_run_free(&st->run);
    free(st->order);
    *st = (SaeStream){0};
}

/* The next batch of training stories through the model (the order shuffled again after the last). */
static void stream_shuffle(SaeStream *st) {
    for (int i = st->n - 1; i > 0; i--) {
        int j = (int)slm_rng_below(&st->rng, (uint64_t)i + 1), t = st->order[i];
        st->order[i] = st->order[j], st->order[j] = t;
    }
    st->next = 0;
    st->shuffles++;
}

/* The batch of the stories from order[next] through the model. */
static int stream_next(SaeStream *st, Error *e) {
    if (st->next >= st->n) stream_shuffle(st);
    st->batch_start = st->next;
    if (slm_sae_model_batch(&st->run, st->stories, st->order, st->n, &st->next, e) ||
        slm_sae_model_forward(&st->run, SITE_READ, st->run.site->to_logits, e))
        return -1;
    st->have = st->run.T, st->at = 0;
    return 0;
}

int slm_sae_stream_fill(void *ctx, float *x, int n, Error *e) {
    SaeStream *st = ctx;
    int D = st->run.site->d_in;
    for (int done = 0; done < n;) {
        if (st->at == st->have && stream_next(st, e)) return -1;
        int take = st->have - st->at < n - done ? st->have - st->at : n - done;
        memcpy(x + (size_t)done * D, st->run.x + (size_t)st->at * D, (size_t)take * D * sizeof(float));
        st->at += take, done += take;
    }
    return 0;
}

void slm_sae_stream_tell(void *ctx, SaeStreamPos *pos) {
    const SaeStream *st = ctx;
    *pos = (SaeStreamPos){.shuffles = st->shuffles, .batch_start = st->batch_start, .at = st->at};
}

int slm_sae_stream_seek(void *ctx, const SaeStreamPos *pos, Error *e) {
    SaeStream *st = ctx;
    if (pos->shuffles < 0 || pos->batch_start < -1 || pos->batch_start >= st->n || pos->at < 0 ||
        (pos->batch_start >= 0 && pos->shuffles < 1))
        return FAIL(e, "train again without --resume", "the checkpoint's place in the stories is not one of them");
    slm_rng_seed(&st->rng, st->seed);
    memcpy(st->order, st->stories->train, (size_t)st->n * sizeof(int));
    st->shuffles = 0, st->have = st->at = 0, st->next = st->n, st->batch_start = -1;
    while (st->shuffles < pos->shuffles) stream_shuffle(st);
    if (pos->batch_start < 0) return 0;
    st->next = (int)pos->batch_start;
    if (stream_next(st, e)) return -1;
    if (pos->at > st->have)
        return FAIL(e, "train again without --resume", "the checkpoint's place in the stories is past its batch");
    st->at = (int)pos->at;
    return 0;
}
