/* The checkpoint of a stopped SAE run (sae_train_run.h): one safetensors
 * file holding the run's floats (the parameters before the scale is folded
 * in, Adam's moments, the firing counts) and, in its metadata, the counts,
 * the random generators' states, the stream's place where the store's last
 * fill began, and the options the run was given, which a resume must repeat. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sae_train_run.h"
#include "storylm/safetensors.h"

#define KEY_MAX 40
#define VALUE_MAX 160
#define SINCE_EXACT (1LL << 24) /* counts up to here are exact in a float */

/* A flag and its value, as the checkpoint records it and a resume compares it. */
typedef struct Setting {
    char key[KEY_MAX], value[VALUE_MAX];
} Setting;

/* The options that decide the run's bits, each under the flag that gives it. */
static int settings_of(const Sae *s, const SaeTrainOptions *o, Setting *out) {
    int n = 0;
#define SET(k, ...) (snprintf(out[n].key, KEY_MAX, "%s", k), snprintf(out[n].value, VALUE_MAX, __VA_ARGS__), n++)
    SET("--kind", "%d", (int)o->kind);
    SET("--expansion", "%d", o->expansion);
    SET("--k", "%d", o->k);
    SET("--l1", "%.17g", o->l1);
    SET("--lr", "%.17g", o->lr);
    SET("--tokens", "%lld", o->tokens);
    SET("--batch-tokens", "%d", o->batch_tokens);
    SET("--seed", "%" PRIu64, o->seed);
    SET("--hook", "%s", s->cfg.hook_name);
    SET("the hook's width", "%d", s->cfg.d_in);
    SET("the dead-latent window", "%lld", o->dead_window);
    SET("the store's rows", "%lld", o->store_tokens);
    for (int i = 0; i + 1 < 8 && o->origin[i] && o->origin[i + 1]; i += 2) SET(o->origin[i], "%s", o->origin[i + 1]);
#undef SET
    return n;
}

/* A generator's state as text: its four words, the spare normal's flag and bits. */
static void rng_text(const Rng *g, char *buf, size_t size) {
    uint64_t spare;
    memcpy(&spare, &g->spare, sizeof spare);
    snprintf(buf, size, "%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %d %016" PRIx64, g->s[0], g->s[1],
             g->s[2], g->s[3], g->has_spare, spare);
}

static int rng_parse(const char *t, Rng *g) {
    uint64_t spare;
    if (!t || sscanf(t, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %d %" SCNx64, &g->s[0], &g->s[1], &g->s[2],
                     &g->s[3], &g->has_spare, &spare) != 6)
        return -1;
    memcpy(&g->spare, &spare, sizeof spare);
    return 0;
}

/* The counts and states of r as metadata. */
static int state_metadata(const Run *r, const SaeTrainOptions *o, Metadata *md, Error *e) {
    Setting set[20];
    char buf[VALUE_MAX], rng[2][VALUE_MAX];
    uint32_t scale_bits;
    memcpy(&scale_bits, &r->scale, sizeof scale_bits);
    rng_text(&r->store.fill_rng, rng[0], sizeof rng[0]);
    const SaeStreamPos *p = &r->store.fill_pos;
    const Firing *f = &r->firing;
    snprintf(buf, sizeof buf, "%d %" PRId64 " %08" PRIx32 " %lld %lld %lld %lld %lld %lld", r->done, r->adam.step,
             scale_bits, r->store.at, p->shuffles, p->batch_start, p->at, f->in_now, f->in_last);
    snprintf(rng[1], sizeof rng[1], "%s", "storylm sae train checkpoint 1");
    int n = settings_of(r->s, o, set);
    int rc = slm_metadata_set(md, "format", rng[1], e) || slm_metadata_set(md, "state", buf, e) ||
             slm_metadata_set(md, "store_rng", rng[0], e);
    for (int i = 0; !rc && i < n; i++) rc = slm_metadata_set(md, set[i].key, set[i].value, e);
    return rc ? -1 : 0;
}

int slm_sae_checkpoint_save(const Run *r, const SaeTrainOptions *o, Error *e) {
    const Firing *f = &r->firing;
    int L = r->s->cfg.d_sae, P = (int)r->s->n_params;
    if (f->window > SINCE_EXACT)
        return FAIL(e, "train without stopping", "a dead-latent window of %lld tokens is past what a checkpoint holds",
                    f->window);
    float *since = malloc((size_t)L * sizeof(float));
    if (!since) return FAIL(e, "free some memory", "out of memory for the checkpoint");
    for (int j = 0; j < L; j++) /* only since >= window is ever read: kept exact up to it */
        since[j] = (float)(f->since[j] < f->window ? f->since[j] : f->window);
    SafeTensorOut t[] = {{"params", 1, {P}, r->s->params}, {"adam_m", 1, {P}, r->adam.m},
                         {"adam_v", 1, {P}, r->adam.v},    {"firing_now", 1, {L}, f->now},
                         {"firing_last", 1, {L}, f->last}, {"firing_since", 1, {L}, since}};
    Metadata md = {0};
    int rc = state_metadata(r, o, &md, e) || slm_safetensors_write_f32(o->checkpoint, t, 6, &md, e);
    slm_metadata_free(&md);
    free(since);
    return rc ? -1 : 0;
}

/* The checkpoint's options against these: the first that differs refused by its flag. */
static int check_settings(const SafeTensorsFile *st, const Run *r, const SaeTrainOptions *o, Error *e) {
    Setting set[20];
    int n = settings_of(r->s, o, set);
    const char *format = slm_metadata_get(&st->metadata, "format");
    if (!format || strcmp(format, "storylm sae train checkpoint 1") != 0)
        return FAIL(e, "give --resume only to go on with a run sae train stopped",
                    "'%s' is not a checkpoint of sae train", o->checkpoint);
    for (int i = 0; i < n; i++) {
        const char *was = slm_metadata_get(&st->metadata, set[i].key);
        if (!was || strcmp(was, set[i].value) != 0)
            return FAIL(e, "give the stopped run's options again, or --force without --resume to start over",
                        "cannot resume: the run in '%s' was made with %s %s, this one gives %s", o->checkpoint,
                        set[i].key, was ? was : "(none)", set[i].value);
    }
    return 0;
}

/* The tensor name of st, n floats, into dst. */
static int read_tensor(SafeTensorsFile *st, const char *name, float *dst, size_t n, Error *e) {
    const SafeTensorInfo *t = slm_safetensors_find(st, name);
    if (!t || t->ndim != 1 || slm_safetensors_count(t) != n)
        return FAIL(e, "train again with --force", "the checkpoint '%s' lacks %s of %zu numbers", st->path, name, n);
    return slm_safetensors_read_f32(st, t, dst, e);
}

/* The metadata's counts and states into r. */
static int read_state(const SafeTensorsFile *st, Run *r, Error *e) {
    SaeStreamPos *p = &r->store.fill_pos;
    Firing *f = &r->firing;
    const char *state = slm_metadata_get(&st->metadata, "state");
    uint32_t scale_bits;
    if (!state ||
        sscanf(state, "%d %" SCNd64 " %" SCNx32 " %lld %lld %lld %lld %lld %lld", &r->done, &r->adam.step, &scale_bits,
               &r->store.at, &p->shuffles, &p->batch_start, &p->at, &f->in_now, &f->in_last) != 9 ||
        rng_parse(slm_metadata_get(&st->metadata, "store_rng"), &r->store.fill_rng) || r->done < 0 || r->store.at < 0 ||
        r->store.at > r->store.n || f->in_now < 0 || f->in_last < 0)
        return FAIL(e, "train again with --force", "the checkpoint '%s' has no whole state", st->path);
    memcpy(&r->scale, &scale_bits, sizeof r->scale);
    return 0;
}

int slm_sae_checkpoint_load(Run *r, const SaeTrainOptions *o, Error *e) {
    SafeTensorsFile st;
    int L = r->s->cfg.d_sae;
    size_t P = r->s->n_params;
    if (slm_safetensors_open(&st, o->checkpoint, e))
        return slm_error_prefix(e, "cannot resume (was a run stopped there?): "), -1;
    float *since = malloc((size_t)L * sizeof(float));
    int rc = !since ? FAIL(e, "free some memory", "out of memory for the checkpoint") : 0;
    rc = rc || check_settings(&st, r, o, e) || read_state(&st, r, e) ||
         read_tensor(&st, "params", r->s->params, P, e) || read_tensor(&st, "adam_m", r->adam.m, P, e) ||
         read_tensor(&st, "adam_v", r->adam.v, P, e) || read_tensor(&st, "firing_now", r->firing.now, L, e) ||
         read_tensor(&st, "firing_last", r->firing.last, L, e) || read_tensor(&st, "firing_since", since, L, e);
    for (int j = 0; !rc && j < L; j++) {
        r->firing.since[j] = (long long)since[j];
        r->firing.dead[j] = r->firing.since[j] >= r->firing.window;
    }
    free(since);
    slm_safetensors_close(&st);
    return rc ? -1 : 0;
}
