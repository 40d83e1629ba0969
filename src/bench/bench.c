/* Timed work for storylm bench: see include/storylm/bench.h. */
#include "storylm/bench.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/adam.h"
#include "storylm/clock.h"
#include "storylm/fileio.h"
#include "storylm/generate.h"
#include "storylm/loaded_model.h"
#include "storylm/parse.h"
#include "storylm/probe_views.h"
#include "storylm/sample.h"
#include "storylm/shards.h"
#include "storylm/text.h"
#include "storylm/train.h"

/* x rounded to 1/scale (1e6: microseconds), as the line has always shown it. */
static double rounded(double x, double scale) { return round(x * scale) / scale; }

/* The line's opening keys: {"command": "bench", "work": work}. */
static cJSON *bench_json(const char *work) {
    cJSON *j = slm_view_json_begin("bench");
    cJSON_AddStringToObject(j, "work", work);
    return j;
}

/* j["seconds"], j["cpu_seconds"]: wall and CPU time since start and cpu
 * (CPU over wall: how much of the machine the run got; it may be shared). */
static void bench_times(cJSON *j, double start, double cpu) {
    cJSON_AddNumberToObject(j, "seconds", rounded(slm_clock_seconds() - start, 1e6));
    cJSON_AddNumberToObject(j, "cpu_seconds", rounded(slm_clock_cpu_seconds() - cpu, 1e6));
}

/* The story read so far ends (at a line's end): its start goes in starts. */
static int end_story(const IntVec *ids, IntVec *starts, Error *e) {
    return ids->len > (size_t)starts->data[starts->len - 1] ? slm_intvec_push(starts, (int32_t)ids->len, e) : 0;
}

/* One story a line of ids -> ids packed, starts (n + 1). Each id a whole
 * number from 0 to vocab_size - 1, read through parse.h (4294967297 is no
 * id, not 1); anything else is refused with its line. */
static int read_ids(const char *path, int vocab_size, IntVec *ids, IntVec *starts, Error *e) {
    char *text;
    size_t len;
    if (slm_file_read_all(path, 0, &text, &len, e)) return -1;
    int rc = slm_intvec_push(starts, 0, e), line = 1;
    for (const char *p = text; !rc && p < text + len;) {
        if (*p == '\n') line++, rc = end_story(ids, starts, e);
        if (strchr(" \t\r\n", *p)) {
            p++;
            continue;
        }
        const char *end;
        long long id = 0;
        int got = slm_parse_integer_prefix(p, &end, 0, vocab_size - 1, &id);
        if (got == PARSE_NOT_NUMBER || !strchr(" \t\r\n", *end))
            rc = FAIL(e, "give the output of storylm stories --ids", "'%s' line %d: '%.*s' is not a token id", path,
                      line, (int)strcspn(p, " \t\r\n") < 20 ? (int)strcspn(p, " \t\r\n") : 20, p);
        else if (got == PARSE_OUT_OF_RANGE)
            rc = FAIL(e, "give the output of storylm stories --ids",
                      "'%s' line %d: id %.*s is outside the vocabulary of %d", path, line,
                      (int)(end - p) < 24 ? (int)(end - p) : 24, p, vocab_size);
        else
            rc = slm_intvec_push(ids, (int32_t)id, e);
        p = end;
    }
    if (!rc) rc = end_story(ids, starts, e);
    free(text);
    if (!rc && starts->len < 2) rc = FAIL(e, "give the output of storylm stories --ids", "'%s' holds no ids", path);
    return rc;
}

/* Stories k*batch .. (k+1)*batch - 1 of the file (wrapping around) -> refs;
 * returns their predicted positions. */
static int step_stories(const IntVec *ids, const IntVec *starts, int k, int batch, StoryRef *refs) {
    int n = (int)starts->len - 1, predicted = 0;
    for (int i = 0; i < batch; i++) {
        int s = (int)(((long long)k * batch + i) % n), len = starts->data[s + 1] - starts->data[s];
        refs[i] = (StoryRef){ids->data + starts->data[s], len};
        predicted += len - 1;
    }
    return predicted;
}

static int longest_story(const IntVec *starts) {
    int best = 0;
    for (size_t i = 0; i + 1 < starts->len; i++)
        best = starts->data[i + 1] - starts->data[i] > best ? starts->data[i + 1] - starts->data[i] : best;
    return best;
}

int slm_bench_train(const char *path, const BenchOptions *o, BenchBeatFn beat, void *ctx, cJSON **line, Error *e) {
    IntVec ids = {0}, starts = {0};
    Model m = {0};
    Shards sh = {0};
    Adam opt = {0};
    float *grads = NULL;
    StoryRef *refs = NULL;
    Precision precision = PRECISION_FP32;
    Kernels kernels = KERNELS_BLAS;
    const Architecture *arch = slm_arch_find(o->arch, e);
    int rc = arch ? 0 : -1;
    ModelConfig cfg = slm_model_config_default(arch ? arch : slm_arch_default(), o->vocab_size);
    if (!rc &&
        (!arch->config_shape || o->given_variant)) { /* a shaped one (the transformer) keeps train's default shape */
        cfg.n_layers = o->layers;
        rc = slm_pos_parse(o->pos, &cfg.pos, e) || slm_score_parse(o->score, &cfg.score, e);
    }
    if (!rc && o->tie && !arch->config_shape)
        rc = FAIL(e, "leave --tie-embeddings out, or give --arch transformer or attn-only",
                  "--tie-embeddings is for the transformer family; --arch %s has no embedding to tie", arch->name);
    if (!rc && o->tie) arch->config_shape(&cfg, &(ConfigShape){.act = cfg.act, .tie = 1}); /* else its default */
    rc = rc || slm_precision_parse(o->precision, &precision, e) || slm_precision_check(precision, e) ||
         slm_kernels_parse(o->kernels ? o->kernels : SLM_KERNELS_DEFAULT, &kernels, e) ||
         slm_kernels_check(kernels, precision, e);
    if (!rc && !(arch->takes & TAKES_BF16) && precision != PRECISION_FP32) /* as storylm train */
        rc = FAIL(e, "leave --precision out (fp32)",
                  "--precision %s is for the attention network and window8; --arch %s trains in fp32", o->precision,
                  arch->name);
    int threads = omp_get_max_threads();
    rc = rc || read_ids(path, cfg.vocab_size, &ids, &starts, e);
    int shards = slm_shards_count(kernels, threads, NULL);
    int positions = rc ? 0 : (4096 + shards - 1) / shards, longest = rc ? 0 : longest_story(&starts);
    rc =
        rc || slm_model_init(&m, &cfg, e) ||
        slm_shards_init_dist(&sh, &m, threads, NULL, kernels, positions > longest ? positions : longest, o->batch, e) ||
        slm_adam_init(&opt, m.n_params, e) || !(grads = xmalloc(m.n_params * sizeof(float), e)) ||
        !(refs = xmalloc((size_t)o->batch * sizeof(StoryRef), e));
    if (!rc) slm_model_randomize(&m, 1);
    sh.precision = precision;
    TrainStep step = {.shards = &sh, .model = &m, .adam = &opt, .grads = grads};
    long long tokens = 0;
    double start = 0, cpu = 0, loss = 0;
    for (int k = -2; !rc && k < o->steps; k++) { /* two untimed steps first */
        if (beat) beat(ctx, k + 2);
        if (k == 0) start = slm_clock_seconds(), cpu = slm_clock_cpu_seconds();
        int n = step_stories(&ids, &starts, o->first_batch + k + 2, o->batch, refs);
        TrainStepResult r;
        rc = slm_train_step(&step, refs, o->batch, 3e-3f, &r, e); /* storylm train's step (train.h) */
        if (!rc && r.not_finite) rc = FAIL(e, NULL, "the %s of bench's step %d is not finite", r.not_finite, k + 3);
        loss = r.loss;
        if (k >= 0) tokens += n;
    }
    if (!rc) {
        cJSON *j = *line = bench_json("train");
        cJSON_AddNumberToObject(j, "tokens", (double)tokens);
        bench_times(j, start, cpu);
        cJSON_AddNumberToObject(j, "threads", threads);
        cJSON_AddNumberToObject(j, "parameters", (double)m.n_params);
        cJSON_AddNumberToObject(j, "loss", rounded(loss, 1e4));
        cJSON_AddStringToObject(j, "kernels", slm_kernels_name(kernels));
        cJSON_AddStringToObject(j, "precision", slm_precision_name(precision));
    }
    free(refs), free(grads), slm_adam_free(&opt), slm_shards_free(&sh), slm_model_free(&m);
    slm_intvec_free(&ids), slm_intvec_free(&starts);
    return rc;
}

/* Sample i of n: sampled with seed 1 + i, as `generate --samples` seeds them. */
static int bench_samplers(Sampler *s, int n, int vocab_size, Error *e) {
    SamplerSettings st = slm_sampler_settings_default();
    st.repeat_penalty = 1, st.repeat_last_n = 0; /* the defaults' penalty is none */
    for (int i = 0; i < n; i++) {
        if (slm_sampler_init_with(&s[i], vocab_size, &st, 1 + (uint64_t)i, e)) return -1;
        if (i) slm_sampler_share_scratch(&s[i], &s[0]); /* as generate's samples: one after the other */
    }
    return 0;
}

/* [EOS] + prompt fed once, then --samples stories of o->tokens sampled and
 * fed each, every step one pass of the batch (generate --samples' loop); the
 * time of all of it. */
int slm_bench_generate(const char *path, const BenchOptions *o, cJSON **line, Error *e) {
    LoadedModel lm;
    if (slm_loaded_model_load(&lm, path, e)) return -1;
    int n = o->samples;
    Precision precision = PRECISION_FP32;
    IntVec prompt = {0};
    GeneratorBatch g = {0};
    Sampler *s = xcalloc((size_t)n, sizeof *s, e);
    int *which = s ? xcalloc((size_t)n, sizeof *which, e) : NULL;
    int32_t *next = which ? xcalloc((size_t)n, sizeof *next, e) : NULL;
    int rc = !next || slm_text_check(o->prompt, strlen(o->prompt), "the prompt", e) ||
             slm_tokenizer_encode(&lm.tokenizer, o->prompt, strlen(o->prompt), &prompt, e) ||
             slm_generator_batch_init(&g, &lm.model, NULL, n, e) || bench_samplers(s, n, lm.model.cfg.vocab_size, e) ||
             slm_precision_parse(o->precision, &precision, e) || slm_generator_batch_set_precision(&g, precision, e);
    if (!rc) {
        double start = slm_clock_seconds(), cpu = slm_clock_cpu_seconds();
        int first = 0;
        slm_generator_batch_feed(&g, &first, &lm.tokenizer.eos_id, 1);
        for (size_t i = 0; i < prompt.len; i++) slm_generator_batch_feed(&g, &first, &prompt.data[i], 1);
        for (int i = 0; i < n; i++) {
            if (i) slm_generator_batch_copy(&g, 0, i);
            which[i] = i;
        }
        for (int t = 0; t < o->tokens; t++) {
            for (int i = 0; i < n; i++) next[i] = slm_sampler_sample(&s[i], slm_generator_batch_logits(&g, i));
            slm_generator_batch_feed(&g, which, next, n);
        }
        cJSON *j = *line = bench_json("generate");
        cJSON_AddNumberToObject(j, "samples", n);
        cJSON_AddNumberToObject(j, "tokens", (double)n * o->tokens);
        bench_times(j, start, cpu);
        cJSON_AddNumberToObject(j, "prompt_tokens", (double)prompt.len);
        cJSON_AddStringToObject(j, "precision", slm_precision_name(precision));
    }
    for (int i = 0; s && i < n; i++) slm_sampler_free(&s[i]);
    free(s), free(which), free(next), slm_generator_batch_free(&g), slm_intvec_free(&prompt),
        slm_loaded_model_free(&lm);
    return rc;
}

int slm_bench_encode(const char *vocab_path, const char *text_path, cJSON **line, Error *e) {
    Tokenizer t = {0};
    char *text = NULL;
    size_t len;
    IntVec ids = {0};
    int rc = slm_tokenizer_load(&t, vocab_path, 0, e) || slm_file_read_all(text_path, 0, &text, &len, e);
    long long n_ids = 0;
    double start = slm_clock_seconds(), cpu = slm_clock_cpu_seconds();
    for (size_t at = 0; !rc && at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        ids.len = 0;
        rc = slm_tokenizer_encode(&t, text + at, end - at, &ids, e);
        n_ids += (long long)ids.len;
        at = end + 1;
    }
    if (!rc) {
        cJSON *j = *line = bench_json("encode");
        cJSON_AddNumberToObject(j, "bytes", (double)len);
        bench_times(j, start, cpu);
        cJSON_AddNumberToObject(j, "ids", (double)n_ids);
    }
    slm_intvec_free(&ids), free(text), slm_tokenizer_free(&t);
    return rc;
}
