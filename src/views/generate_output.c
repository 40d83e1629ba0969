/* What generate gives besides the model's tokens: the prompt read from a
 * file, the stories printed in order as they grow, and the run as JSON; see
 * include/storylm/generate_output.h. */
#include "storylm/generate_output.h"

#include <stdlib.h>
#include <string.h>

#include "storylm/probe_views.h"
#include "storylm/vec.h"

char *slm_generate_read_prompt(FILE *in, const char *name, Error *e) {
    ByteVec b = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (slm_bytevec_append(&b, buf, n, e)) return slm_bytevec_free(&b), NULL;
    if (ferror(in)) return slm_bytevec_free(&b), FAIL(e, NULL, "cannot read the prompt from %s", name), NULL;
    if (b.len && memchr(b.data, '\0', b.len)) /* an empty prompt has no buffer: memchr(NULL) is undefined */
        return slm_bytevec_free(&b), FAIL(e, "give a text file", "the prompt in %s holds a NUL byte", name), NULL;
    if (b.len && b.data[b.len - 1] == '\n') b.len--;
    if (b.len && b.data[b.len - 1] == '\r') b.len--;
    if (slm_bytevec_append(&b, "", 1, e)) return slm_bytevec_free(&b), NULL;
    return (char *)b.data;
}

/* ---- printing as the stories grow ------------------------------------------------ */

/* Sample `current` is printed as it grows; later ones wait in their buffers
 * and are printed, in order, once the ones before are done. */
typedef struct Printer {
    const ViewBatch *vb;
    int current, flush;
    ByteVec *waiting; /* (n) */
    char *done;       /* (n) */
    FILE *out;
    Error *e;
} Printer;

static void print_header(const Printer *p, int s) {
    if (p->vb->n > 1)
        fprintf(p->out, "%s--- sample %d of %d (seed %llu) ---\n", s ? "\n" : "", s + 1, p->vb->n,
                (unsigned long long)p->vb->samples[s].seed);
}

static int print_text(void *ctx, int sample, const char *text, size_t len, int done) {
    Printer *p = ctx;
    if (sample != p->current) {
        p->done[sample] = (char)done;
        return slm_bytevec_append(&p->waiting[sample], text, len, p->e);
    }
    fwrite(text, 1, len, p->out);
    while (done) { /* this one is done: print the ones that waited for it */
        fputc('\n', p->out);
        if (++p->current == p->vb->n) break;
        print_header(p, p->current);
        ByteVec *w = &p->waiting[p->current];
        fwrite(w->data, 1, w->len, p->out);
        done = p->done[p->current];
    }
    if (p->flush) fflush(p->out);
    return 0;
}

int slm_generate_print_batch(ViewBatch *vb, FILE *out, bool flush, Error *e) {
    Printer p = {.vb = vb, .flush = flush, .out = out, .e = e};
    p.waiting = xcalloc((size_t)vb->n, sizeof *p.waiting, e);
    p.done = p.waiting ? xcalloc((size_t)vb->n, 1, e) : NULL;
    int rc = p.done ? 0 : -1;
    if (!rc) print_header(&p, 0);
    if (!rc) rc = slm_view_batch_run(vb, print_text, &p, e);
    for (int i = 0; p.waiting && i < vb->n; i++) slm_bytevec_free(&p.waiting[i]);
    free(p.waiting);
    free(p.done);
    fflush(out);
    return rc ? -1 : 0;
}

static cJSON *sample_json(const ViewGenerator *vg, int i, Error *e) {
    char *text = slm_view_generator_text(vg, e);
    cJSON *j = text ? cJSON_CreateObject() : NULL;
    if (j) {
        cJSON_AddNumberToObject(j, "sample", i + 1);
        cJSON_AddNumberToObject(j, "seed", (double)vg->seed);
        cJSON_AddStringToObject(j, "text", text);
        cJSON_AddNumberToObject(j, "new_tokens", vg->tokens);
        cJSON_AddItemToObject(j, "tokens", slm_view_tokens_logprobs_json(vg));
        cJSON_AddStringToObject(j, "stop_reason", vg->stop_reason);
        if (vg->stop)
            cJSON_AddStringToObject(j, "stop", vg->stop);
        else
            cJSON_AddNullToObject(j, "stop");
    }
    free(text);
    return j;
}

cJSON *slm_generate_json(const ViewBatch *vb, const LoadedModel *lm, const ViewGenerateOptions *go,
                         const GenerateRun *run, Error *e) {
    cJSON *j = slm_view_json_begin("generate");
    const ViewGenerator *first = &vb->samples[0];
    slm_view_json_model(j, &lm->model, lm->path);
    cJSON_AddStringToObject(j, "prompt", run->prompt);
    cJSON_AddItemToObject(j, "prompt_tokens",
                          slm_view_tokens_json(&lm->tokenizer, first->ids.data, (size_t)first->prompt_tokens));
    cJSON_AddNumberToObject(j, "unk_tokens", run->pu.unk);
    cJSON_AddNumberToObject(j, "seed", (double)go->seed);
    slm_view_generate_settings_json(j, go);
    cJSON_AddItemToObject(j, "stop", cJSON_CreateStringArray(go->stops, go->n_stops));
    cJSON_AddNumberToObject(j, "n_probs", slm_view_generate_n_probs(go, lm->model.cfg.vocab_size));
    cJSON_AddStringToObject(j, "precision", slm_precision_name(go->precision));
    if (run->names_from)
        cJSON_AddStringToObject(j, "names_from", run->names_from);
    else
        cJSON_AddNullToObject(j, "names_from");
    cJSON *samples = cJSON_AddArrayToObject(j, "samples");
    long long total = 0;
    for (int i = 0; i < vb->n; i++) {
        total += vb->samples[i].tokens;
        cJSON *s = sample_json(&vb->samples[i], i, e);
        if (!s) return cJSON_Delete(j), NULL;
        cJSON_AddItemToArray(samples, s);
    }
    cJSON_AddNumberToObject(j, "new_tokens", (double)total);
    cJSON_AddNumberToObject(j, "seconds", run->seconds); /* writing only, not loading */
    cJSON_AddNumberToObject(j, "cpu_seconds", run->cpu_seconds);
    cJSON_AddNumberToObject(j, "tokens_per_second", run->seconds > 0 ? (double)total / run->seconds : 0);
    return j;
}
