/* Training and evaluation split over threads by stories: see include/storylm/shards.h. */
#include "storylm/shards.h"

#include <stdlib.h>
#include <string.h>

int slm_shards_init(Shards *s, const Model *m, int n_threads, int positions, int max_stories, Error *e) {
    return slm_shards_init_dist(s, m, n_threads, NULL, KERNELS_BLAS, positions, max_stories, e);
}

int slm_shards_count(Kernels k, int n_threads, const Dist *dist) {
    if (k == KERNELS_PORTABLE) return SLM_PORTABLE_SHARDS;
    return (n_threads < 1 ? 1 : n_threads) * dist_size(dist);
}

int slm_shards_init_dist(Shards *s, const Model *m, int n_threads, Dist *dist, Kernels k, int positions,
                         int max_stories, Error *e) {
    int threads = n_threads < 1 ? 1 : n_threads, ranks = dist_size(dist), used = slm_shards_count(k, threads, dist);
    int local = (used + ranks - 1) / ranks; /* every rank the same count: the exchange gathers equal parts */
    *s = (Shards){.model = m,
                  .n = local * ranks,
                  .used = used,
                  .first = local * dist_rank(dist),
                  .local = local,
                  .dist = dist,
                  .positions = positions,
                  .max_stories = max_stories,
                  .kernels = k};
    if (positions < 1 || max_stories < 1)
        return FAIL(e, NULL, "shards need room for a position and a story (got %d, %d)", positions, max_stories);
    if (slm_workers_init(&s->workers, threads < local ? threads : local, e) ||
        !(s->shard = xcalloc((size_t)s->n, sizeof(Shard), e)) ||
        !(s->owner = xmalloc((size_t)max_stories * sizeof(int), e)) ||
        !(s->grads_all = xmalloc((size_t)s->n * m->n_params * sizeof(float), e)) ||
        !(s->results = xcalloc((size_t)s->n * 3, sizeof(double), e))) {
        slm_shards_free(s);
        return -1;
    }
    for (int i = 0; i < s->n; i++) {
        Shard *h = &s->shard[i];
        int mine = i >= s->first && i < s->first + s->local; /* only this process's shards run here */
        h->grads = s->grads_all + (size_t)i * m->n_params;
        if ((mine && (slm_activations_init(&h->acts, &m->cfg, positions, e) ||
                      slm_batch_init(&h->batch, positions, max_stories, e))) ||
            !(h->stories = xmalloc((size_t)max_stories * sizeof(int), e)) ||
            !(h->drop_keys = xmalloc((size_t)max_stories * sizeof(uint64_t), e))) {
            slm_shards_free(s);
            return -1;
        }
    }
    return 0;
}

void slm_shards_free(Shards *s) {
    for (int i = 0; s->shard && i < s->n; i++) {
        slm_activations_free(&s->shard[i].acts);
        slm_batch_free(&s->shard[i].batch);
        free(s->shard[i].stories);
        free(s->shard[i].drop_keys);
    }
    free(s->shard);
    free(s->grads_all);
    free(s->results);
    free(s->owner);
    if (s->workers.n) slm_workers_free(&s->workers);
    *s = (Shards){0};
}

/* The shard with the fewest tokens (the first of equals). */
static int lightest(const Shards *s) {
    int best = 0;
    for (int i = 1; i < s->used; i++)
        if (s->shard[i].tokens < s->shard[best].tokens) best = i;
    return best;
}

/* Deals stories[0..n) out: longest first (the first of equals), each to the
 * lightest shard; each shard then lists its stories in their given order.
 * Quadratic in n, which is a step's 8 stories or an evaluation's hundred. */
static void deal(Shards *s, const StoryRef *stories, int n) {
    int *owner = s->owner;
    for (int i = 0; i < s->n; i++) s->shard[i].n_stories = 0, s->shard[i].tokens = 0;
    for (int k = 0; k < n; k++) owner[k] = -1;
    for (int dealt = 0; dealt < n; dealt++) {
        int longest = -1;
        for (int k = 0; k < n; k++)
            if (owner[k] < 0 && (longest < 0 || stories[k].len > stories[longest].len)) longest = k;
        int to = lightest(s);
        owner[longest] = to;
        s->shard[to].tokens += stories[longest].len;
    }
    for (int k = 0; k < n; k++) {
        Shard *h = &s->shard[owner[k]];
        h->stories[h->n_stories++] = k;
    }
}

/* The losses and correct predictions of a forward, over predicted positions. */
static void add_losses(Shard *h) {
    const Activations *a = &h->acts;
    for (int p = 0; p < a->n_positions; p++) {
        if (a->target[p] < 0) continue;
        h->loss_sum += a->loss[p];
        h->correct += a->correct[p];
    }
}

/* Batch story j, run story k, into the run's position_loss and _correct
 * when it keeps them: the story's position `at` + i is the batch's position
 * starts[j] + i (a piece's context positions predict nothing). */
static void keep_positions(const Shards *s, const Shard *h, int j, int k, int at) {
    const Activations *a = &h->acts;
    if (!s->position_loss) return;
    float *loss = s->position_loss[k] + at;
    uint8_t *correct = s->position_correct[k] + at;
    for (int p = h->batch.starts[j], i = 0; p < h->batch.starts[j + 1]; p++, i++) {
        if (a->target[p] < 0) continue;
        loss[i] = a->loss[p];
        correct[i] = a->correct[p];
    }
}

/* Positions a piece of a long story carries before its first prediction (arch.h). */
static int piece_context(const ModelConfig *c) { return c->arch->context_needed(c); }

int slm_shards_positions(const ModelConfig *c, int positions, int longest) {
    int piece = 4 * (piece_context(c) + 1); /* a piece's context is at most a quarter of its work */
    int whole = longest < piece ? longest : piece;
    return positions > whole ? positions : whole;
}

/* The chunk's dropout: training's, keyed by each story's place k in the run. */
static void chunk_dropout(const Shards *s, Shard *h, int k) {
    int training = s->run_grads && (s->dropout_hidden > 0 || s->dropout_attention > 0);
    if (training) h->drop_keys[h->batch.n_stories - 1] = slm_dropout_story_key(s->dropout_seed, s->dropout_step, k);
    h->acts.dropout =
        training ? (Dropout){.hidden = s->dropout_hidden, .attention = s->dropout_attention, .story_keys = h->drop_keys}
                 : (Dropout){0};
}

/* A story longer than the shard's positions, run as pieces of at most that
 * many positions (one forward each), each carrying the context its first
 * prediction reads, so every position predicts exactly as in the whole story
 * while the memory stays that of one piece. */
static int run_pieces(Shards *s, Shard *h, int k) {
    const StoryRef *st = &s->run_stories[k];
    int cap = h->batch.max_tokens, context = piece_context(&s->model->cfg);
    if (cap <= context)
        return FAIL(&h->error, "raise --max-positions", "a story of %d tokens needs pieces of more than %d positions",
                    st->len, context);
    for (int first = 0; first < st->len - 1;) { /* first: the piece's first predicted position */
        int begin = first > context ? first - context : 0;
        int end = begin + cap < st->len ? begin + cap : st->len;
        BatchPiece piece = {.context = first - begin, .offset = begin, .next = end < st->len ? st->ids[end] : -1};
        slm_batch_clear(&h->batch);
        if (slm_batch_add_piece(&h->batch, st->ids + begin, end - begin, piece, &h->error)) return -1;
        chunk_dropout(s, h, k); /* keyed by the story and the piece's offset: the whole story's masks */
        if (slm_model_loss_and_grad(s->model, &h->acts, &h->batch, s->run_ablation, s->run_scale,
                                    s->run_grads ? h->grads : NULL, &h->error))
            return -1;
        add_losses(h);
        keep_positions(s, h, 0, k, begin);
        first = end;
    }
    return 0;
}

/* Shard h's stories in forward chunks that fit, gradients into its own buffer. */
static void run_shard(Shards *s, Shard *h) {
    const Model *m = s->model;
    h->loss_sum = 0, h->correct = 0, h->failed = 0;
    h->acts.precision = s->precision;
    h->acts.kernels = s->kernels;
    if (s->run_grads) memset(h->grads, 0, m->n_params * sizeof(float));
    for (int k = 0; k < h->n_stories;) {
        int first = k;
        slm_batch_clear(&h->batch);
        while (k < h->n_stories && h->batch.n_stories < h->batch.max_stories &&
               s->run_stories[h->stories[k]].len <= h->batch.max_tokens - h->batch.n_tokens) {
            const StoryRef *st = &s->run_stories[h->stories[k]];
            if (slm_batch_add(&h->batch, st->ids, st->len, &h->error)) return (void)(h->failed = 1);
            chunk_dropout(s, h, h->stories[k++]);
        }
        if (h->batch.n_stories == 0) { /* a story longer than a chunk */
            if (run_pieces(s, h, h->stories[k++])) return (void)(h->failed = 1);
            continue;
        }
        if (slm_model_loss_and_grad(m, &h->acts, &h->batch, s->run_ablation, s->run_scale,
                                    s->run_grads ? h->grads : NULL, &h->error))
            return (void)(h->failed = 1);
        add_losses(h);
        for (int j = 0; j < h->batch.n_stories; j++) keep_positions(s, h, j, h->stories[first + j], 0);
    }
}

/* Thread i of n: this process's shards i, i + n, ... (which thread runs a
 * shard changes none of its bits). */
static void shard_job(void *arg, int i, int n_threads) {
    Shards *s = arg;
    for (int j = i; j < s->local; j += n_threads) run_shard(s, &s->shard[s->first + j]);
}

/* Thread i: its slice of the parameters, grads += every shard's, in shard
 * order, a few thousand parameters at a time so that they stay in cache over
 * the shards (the portable kernels' 8 shards passed over all of grads 8 times). */
static void reduce_job(void *arg, int i, int n_threads) {
    Shards *s = arg;
    size_t n = s->model->n_params, blocks = (n + 15) / 16;
    size_t start = blocks * i / n_threads * 16, end = blocks * (i + 1) / n_threads * 16;
    if (end > n) end = n;
    float *grads = s->run_grads;
    for (size_t j0 = start; j0 < end; j0 += 4096) {
        size_t j1 = j0 + 4096 < end ? j0 + 4096 : end;
        for (int k = 0; k < s->used; k++) {
            const float *g = s->shard[k].grads;
#pragma omp simd
            for (size_t j = j0; j < j1; j++) grads[j] += g[j];
        }
    }
}

/* Across ranks: every shard's losses and failure, then (when all ran and
 * gradients are wanted) every shard's gradient, gathered in rank order. */
static int exchange(Shards *s, Error *e) {
    if (dist_size(s->dist) <= 1) return 0;
    for (int i = s->first; i < s->first + s->local; i++) {
        const Shard *h = &s->shard[i];
        double *r = s->results + (size_t)i * 3;
        r[0] = h->loss_sum, r[1] = (double)h->correct, r[2] = h->failed; /* counts below 2^53 are exact */
    }
    if (slm_dist_allgather(s->dist, s->results, (size_t)s->local * 3 * sizeof(double), e)) return -1;
    int failed = 0;
    for (int i = 0; i < s->n; i++) {
        Shard *h = &s->shard[i];
        const double *r = s->results + (size_t)i * 3;
        h->loss_sum = r[0], h->correct = (long long)r[1], h->failed = r[2] != 0;
        failed |= h->failed;
    }
    if (failed || !s->run_grads) return 0;
    size_t n = s->model->n_params * (size_t)s->local;
    return slm_dist_allgather(s->dist, s->grads_all, n * sizeof(float), e);
}

int slm_shards_run(Shards *s, const StoryRef *stories, int n, const Ablation *ablation, float scale, float *grads,
                   double *loss_sum, long long *correct, Error *e) {
    if (n > s->max_stories)
        return FAIL(e, NULL, "%d stories are more than the %d these shards were made for", n, s->max_stories);
    deal(s, stories, n);
    s->run_stories = stories, s->run_ablation = ablation, s->run_scale = scale, s->run_grads = grads;
    slm_workers_run(&s->workers, shard_job, s);
    if (exchange(s, e)) return -1;
    for (int i = 0; i < s->n; i++)
        if (s->shard[i].failed) {
            if (i >= s->first && i < s->first + s->local) {
                if (e) *e = s->shard[i].error;
                return -1;
            }
            return FAIL(e, "see the message of that rank", "shard %d, on rank %d, failed", i, i / s->local);
        }
    for (int i = 0; i < s->used; i++) {
        *loss_sum += s->shard[i].loss_sum;
        *correct += s->shard[i].correct;
    }
    if (grads) slm_workers_run(&s->workers, reduce_job, s);
    return 0;
}
