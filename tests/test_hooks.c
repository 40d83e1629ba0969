/* Hooks of the forward pass (hooks.h), on random models of every --pos and
 * --score and of 1 to 4 layers, and on window8:
 * - hooks that change nothing leave every logit's bits as they were;
 * - a hook that zeroes head h's slot of hook_z gives the bits of ablating h;
 * - hook_pattern and hook_q/k/v hold what the activations' accessors give;
 * - a pattern made even gives a head the mean of its values;
 * - a read-only point changed, and a hook that stops, fail the pass cleanly;
 * - the names are those of the model, in the pass's order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/hooks.h"
#include "storylm/model.h"

#define T 11

/* What the test's hook does at each point. */
typedef struct Probe {
    const char *zero_z; /* zero head `head` of this hook_z */
    int head;
    int touched, stop, change_readonly;
    const char *even; /* make this pattern's head `head` even */
    Activations *a;   /* the run, to compare the gathered numbers with */
    int pattern_ok, qkv_ok;
    char last[96];
} Probe;

static void check_pattern(Probe *p, const char *name, const float *data) {
    int l = name[7] - '0', H = p->a->cfg.n_heads;
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            int first, n;
            const float *w = slm_activations_attention(p->a, l * H + h, t, &first, &n);
            for (int u = 0; u < T; u++) {
                float want = u >= first && u < first + n ? w[u - first] : 0.0f;
                p->pattern_ok &= data[((size_t)h * T + t) * T + u] == want;
            }
        }
}

static void check_query(Probe *p, const char *name, const float *data) {
    int l = name[7] - '0', H = p->a->cfg.n_heads, kd = p->a->cfg.key_dim;
    float q[STORYLM_MAX_HEAD_DIM];
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            slm_activations_qkv(p->a, l * H + h, t, q, NULL, NULL);
            p->qkv_ok &= memcmp(q, data + ((size_t)t * H + h) * kd, (size_t)kd * sizeof(float)) == 0;
        }
}

static int probe_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    Probe *p = ctx;
    p->touched++;
    snprintf(p->last, sizeof p->last, "%s", name);
    if (p->stop) return -1;
    if (strstr(name, "hook_pattern")) check_pattern(p, name, data);
    if (strstr(name, "hook_q") && p->a->cfg.pos != POS_ROPE) check_query(p, name, data);
    if (p->change_readonly && !writable) return data[0] += 1.0f, 1;
    if (p->zero_z && strcmp(name, p->zero_z) == 0) {
        for (int t = 0; t < shape[0]; t++)
            memset(data + ((size_t)t * shape[1] + p->head) * shape[2], 0, (size_t)shape[2] * sizeof(float));
        return 1;
    }
    if (p->even && strcmp(name, p->even) == 0) {
        for (int t = 0; t < T; t++)
            for (int u = 0; u < T; u++) data[((size_t)p->head * T + t) * T + u] = u <= t ? 1.0f / (t + 1) : 0.0f;
        return 1;
    }
    return ndim > 0 ? 0 : -1;
}

typedef struct Run {
    Model m;
    Activations a;
    Batch b;
} Run;

static int run_init(Run *r, const ModelConfig *c, uint64_t seed) {
    Error e = {0};
    if (slm_model_init(&r->m, c, &e) || slm_activations_init(&r->a, c, T, &e) || slm_batch_init(&r->b, T, 1, &e)) {
        fprintf(stderr, "%s\n", e.message);
        return -1;
    }
    slm_model_randomize(&r->m, seed);
    int32_t ids[T];
    for (int t = 0; t < T; t++) ids[t] = (int32_t)((t * 7 + 3) % c->vocab_size);
    ids[8] = ids[2]; /* a token that comes again */
    return slm_batch_add(&r->b, ids, T, &e);
}

static void run_free(Run *r) {
    slm_model_free(&r->m);
    slm_activations_free(&r->a);
    slm_batch_free(&r->b);
}

/* The run's logits with hooks h (NULL: none) and ablation ab (NULL: none) into out (T, V). */
static int forward(Run *r, ForwardHooks *h, const Ablation *ab, float *out, Error *e) {
    r->a.hooks = h;
    int rc = slm_model_forward(&r->m, &r->a, &r->b, ab, NULL, e);
    r->a.hooks = NULL;
    if (!rc) memcpy(out, r->a.logits, (size_t)T * r->m.cfg.vocab_size * sizeof(float));
    return rc;
}

static void test_config(const ModelConfig *c, const char *what) {
    Run r = {0};
    if (!CHECK(run_init(&r, c, 7) == 0)) return;
    size_t n = (size_t)T * c->vocab_size;
    float *plain = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    Error e = {0};
    CHECK(forward(&r, NULL, NULL, plain, &e) == 0);
    /* every point, nothing changed: the same bits, and what the points hold is the activations' */
    Probe p = {.a = &r.a, .pattern_ok = 1, .qkv_ok = 1};
    ForwardHooks h = {.fn = probe_hook, .ctx = &p};
    CHECK(forward(&r, &h, NULL, got, &e) == 0);
    if (!CHECK(memcmp(plain, got, n * sizeof(float)) == 0))
        fprintf(stderr, "  %s: hooks changed nothing, logits differ\n", what);
    CHECK(p.pattern_ok && p.qkv_ok);
    char *names = slm_hook_names(c, &e);
    int count = 1;
    for (char *s = names; s && *s; s++) count += *s == '\n';
    CHECK(names && p.touched == count && strcmp(p.last, "hook_logits") == 0);
    if (c->arch == &slm_attention_arch) {
        int L = slm_model_layers(c), head = 1;
        /* zeroing the top layer's head 1 by hook = ablating it */
        char name[64];
        slm_hook_name(HOOK_Z, L - 1, name, sizeof name);
        Probe z = {.a = &r.a, .zero_z = name, .head = head, .pattern_ok = 1, .qkv_ok = 1};
        ForwardHooks hz = {.fn = probe_hook, .ctx = &z, .names = (const char *const[]){name}, .n_names = 1};
        Ablation ab = {.heads = check_heads(1u << ((L - 1) * c->n_heads + head)), .mode = ABLATE_ZERO};
        CHECK(forward(&r, NULL, &ab, plain, &e) == 0);
        CHECK(forward(&r, &hz, NULL, got, &e) == 0);
        if (!CHECK(z.touched == 1 && memcmp(plain, got, n * sizeof(float)) == 0))
            fprintf(stderr, "  %s: hook_z zeroed is not --ablate\n", what);
        /* an even pattern: the head's output is the mean of its values so far */
        slm_hook_name(HOOK_PATTERN, 0, name, sizeof name);
        Probe ev = {.a = &r.a, .even = name, .head = head, .pattern_ok = 1, .qkv_ok = 1};
        ForwardHooks he = {.fn = probe_hook, .ctx = &ev, .names = (const char *const[]){name}, .n_names = 1};
        CHECK(forward(&r, &he, NULL, got, &e) == 0);
        float v[STORYLM_MAX_HEAD_DIM];
        double mean[STORYLM_MAX_HEAD_DIM] = {0};
        int vd = c->value_dim, ok = 1;
        for (int t = 0; t < T; t++) {
            slm_activations_qkv(&r.a, head, t, NULL, NULL, v);
            for (int i = 0; i < vd; i++) mean[i] += v[i];
            const float *o = slm_activations_head_output(&r.a, head, t);
            for (int i = 0; i < vd; i++) ok &= fabs(o[i] - mean[i] / (t + 1)) < 1e-5;
        }
        if (!CHECK(ok)) fprintf(stderr, "  %s: an even pattern does not give the values' mean\n", what);
        /* a read-only point changed fails the pass, naming it */
        Probe ro = {.a = &r.a, .change_readonly = 1, .pattern_ok = 1, .qkv_ok = 1};
        ForwardHooks hr = {.fn = probe_hook, .ctx = &ro};
        e = (Error){0};
        CHECK(forward(&r, &hr, NULL, got, &e) != 0 && strstr(e.message, "hook_distance_score") &&
              strstr(e.message, "read-only"));
        slm_hooks_free(&hr);
        slm_hooks_free(&he);
        slm_hooks_free(&hz);
    }
    /* a hook that stops: the pass fails, the later points are not called */
    Probe st = {.a = &r.a, .stop = 1};
    ForwardHooks hs = {.fn = probe_hook, .ctx = &st};
    e = (Error){0};
    CHECK(forward(&r, &hs, NULL, got, &e) != 0 && st.touched == 1 && strstr(e.message, "hook"));
    slm_hooks_free(&hs);
    slm_hooks_free(&h);
    free(names);
    free(plain);
    free(got);
    run_free(&r);
}

int main(void) {
    ModelConfig base = {.arch = &slm_attention_arch,
                        .vocab_size = 23,
                        .row_dim = 8,
                        .n_heads = 3,
                        .key_dim = 8,
                        .value_dim = 16,
                        .window = 6,
                        .hidden_dim = 10,
                        .context = 8,
                        .n_layers = 1};
    char what[96];
    for (int pos = 0; pos < POS_COUNT; pos++)
        for (int score = 0; score < SCORE_COUNT; score++) {
            ModelConfig c = base;
            c.pos = (PosScheme)pos, c.score = (ScoreFn)score;
            snprintf(what, sizeof what, "--pos %s --score %s", slm_pos_name(c.pos), slm_score_name(c.score));
            test_config(&c, what);
        }
    for (int layers = 2; layers <= STORYLM_MAX_LAYERS; layers++) {
        ModelConfig c = base;
        c.n_layers = layers;
        snprintf(what, sizeof what, "--layers %d", layers);
        test_config(&c, what);
    }
    ModelConfig w8 = slm_model_config_default(&slm_window8_arch, 23);
    test_config(&w8, "window8");
    char *names = slm_hook_names(&w8, NULL);
    CHECK(names && strcmp(names, "hook_hidden_in\nhook_hidden\nhook_logits") == 0);
    free(names);
    ModelConfig two = base;
    two.n_layers = 2;
    names = slm_hook_names(&two, NULL);
    CHECK(names && strncmp(names, "hook_embed\nblocks.0.attn.hook_q\n", 32) == 0 &&
          strstr(names, "blocks.0.attn.hook_z\nblocks.1.attn.hook_q\n"));
    free(names);
    return check_report();
}
