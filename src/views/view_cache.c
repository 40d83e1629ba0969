/* Every activation of the forward pass written as safetensors (cache): a
 * view of the command line only, since it writes a file (VIEW_SERVE_CLI). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probe_cache.h"
#include "storylm/probe_views.h"
#include "storylm/registry.h"
#include "storylm/report_header.h"

typedef struct CacheParams {
    ProbeOptions po;
    const char *text, *stories, *out;
} CacheParams;

/* The text, or the test stories of the session, packed: ids and starts (n + 1). */
static int gather(const ProbeSession *ps, const CacheParams *args, IntVec *ids, int **starts, int *n, Error *e) {
    if (args->text) {
        *n = 1;
        *starts = xmalloc(2 * sizeof(int), e);
        if (!*starts || slm_view_encode(ps, args->text, ids, e)) return -1;
        (*starts)[0] = 0, (*starts)[1] = (int)ids->len;
        return 0;
    }
    const Stories *s = &ps->stories;
    *n = s->n_test;
    *starts = xmalloc((size_t)(*n + 1) * sizeof(int), e);
    if (!*starts) return -1;
    (*starts)[0] = 0;
    for (int i = 0; i < *n; i++) (*starts)[i + 1] = (*starts)[i] + (int)story_len(s, s->test[i]);
    if (slm_intvec_reserve(ids, (size_t)(*starts)[*n], e)) return -1;
    for (int i = 0; i < *n; i++) story_copy_ids(s, s->test[i], ids->data + (*starts)[i]);
    ids->len = (size_t)(*starts)[*n];
    return 0;
}

static int metadata_fill(Metadata *md, const ProbeSession *ps, const CacheParams *args, const ActivationCache *c,
                         Error *e) {
    int rc = slm_metadata_set(md, "format", "storylm-activations", e) ||
             slm_metadata_set(md, "format_version", "1", e) || slm_metadata_set(md, "model", ps->model_path, e) ||
             slm_metadata_set(md, "ablation", ps->ablation_desc[0] ? ps->ablation_desc : "none", e) ||
             slm_metadata_set(md, "tensors", slm_activation_cache_summary(c), e);
    if (!rc && args->text) rc = slm_metadata_set(md, "text", args->text, e);
    if (!rc && args->stories) rc = slm_metadata_set(md, "stories", args->stories, e);
    return rc;
}

static void build_report(Report *r, const ProbeSession *ps, const CacheParams *args, const ActivationCache *c) {
    slm_report_header_session(r, ps);
    if (args->text) slm_report_text(r, "text", "text", args->text);
    slm_report_text(r, "out", "written to", args->out);
    slm_report_int(r, "stories_cached", "stories", c->n_stories);
    slm_report_int(r, "positions", "positions", c->n_positions);
    ReportTable *t = slm_report_table(r, "tensors", "Tensors");
    slm_table_column(t, "name", "name", CELL_TEXT, 0);
    slm_table_column(t, "shape", "shape", CELL_TEXT, 0);
    slm_table_column(t, "megabytes", "MB", CELL_NUMBER, 2);
    SafeTensorOut list[CACHE_MAX_TENSORS];
    int n = slm_activation_cache_tensors(c, list);
    for (int i = 0; i < n; i++) {
        uint64_t shape[SAFETENSORS_MAX_DIMS];
        double count = 1;
        for (int d = 0; d < list[i].ndim; d++) shape[d] = (uint64_t)list[i].shape[d], count *= list[i].shape[d];
        char text[64];
        slm_safetensors_format_shape(text, sizeof text, shape, list[i].ndim);
        slm_table_row(t);
        slm_cell_text(t, list[i].name);
        slm_cell_text(t, text);
        slm_cell_number(t, count * 4 / 1e6);
    }
}

static int build(ViewCall *c, Error *e) {
    const CacheParams *args = c->params;
    const ProbeSession *ps = c->ps;
    IntVec ids = {0};
    int *starts = NULL, n = 0;
    ActivationCache ac = {0};
    Metadata md = {0};
    int rc = gather(ps, args, &ids, &starts, &n, e);
    if (!rc) rc = slm_probe_cache(&ps->lm.model, ids.data, starts, n, &ps->ablation, &ac, e);
    if (!rc) rc = metadata_fill(&md, ps, args, &ac, e) || slm_activation_cache_write(&ac, args->out, &md, e);
    if (!rc) build_report(c->report, ps, args, &ac);
    slm_metadata_free(&md);
    slm_activation_cache_free(&ac);
    free(starts);
    slm_intvec_free(&ids);
    return rc ? -1 : 0;
}

/* -o is needed, and one of TEXT and --stories; the output is checked with
 * the inputs (the model, the stories) before any work. */
static int check(void *params, Error *e) {
    CacheParams *p = params;
    if (!p->out) return FAIL(e, NULL, "give the file to write with -o FILE");
    if ((p->text != NULL) == (p->stories != NULL))
        return FAIL(e, NULL, "give either a TEXT or --stories FILE (one of the two)");
    p->po.out = p->out;
    return 0;
}

static const Param params[] = {
    VIEW_ARG(CacheParams, text, "TEXT", PARAM_TEXT),
    VIEW_PARAMS_COMMON(CacheParams),
    VIEW_PARAM_KERNELS(CacheParams),
    VIEW_PARAM_TEST_STORIES(CacheParams),
    {.name = "stories",
     .type = PARAM_STRING,
     .offset = offsetof(CacheParams, stories),
     .meta = "FILE",
     .help = "cache the held-out test stories of FILE instead of a text",
     .flags = PARAM_STORIES},
    {.name = "out",
     .short_name = 'o',
     .type = PARAM_STRING,
     .offset = offsetof(CacheParams, out),
     .meta = "FILE",
     .help = "safetensors file to write (required); a model, stories or other file already there is kept",
     .flags = PARAM_CLI_ONLY},
    {.name = "force",
     .type = PARAM_BOOL,
     .offset = offsetof(CacheParams, po.force),
     .help = "replace an output file that holds a model, stories or other data (kept otherwise)",
     .flags = PARAM_CLI_ONLY},
};
const View view_cache = {
    .name = "cache",
    .summary = "every activation of the forward pass, as a safetensors file",
    .usage = "storylm cache TEXT -o FILE [options] | storylm cache --stories STORIES -o FILE [options]",
    .description = "Runs [EOS] and the text (or each held-out test story of STORIES) through the network\n"
                   "and writes every activation to FILE as safetensors (F32, C order), which numpy or PyTorch\n"
                   "read directly (e.g. scripts/read_safetensors.py). N = positions of all stories packed one\n"
                   "after another, S = stories, H = 8 heads, K = min(256, the longest story); ids and offsets\n"
                   "are stored as F32 (exact):\n"
                   "  tokens        [N]          token ids\n"
                   "  story_starts  [S+1]        story i is positions story_starts[i] .. story_starts[i+1]-1\n"
                   "  rows          [N, 32]      the token's row of the embedding\n"
                   "  queries       [N, H, 8]    row @ query[h]\n"
                   "  keys          [N, H, 8]    row @ key[h]\n"
                   "  values        [N, H, 16]   row @ value[h]\n"
                   "  attention     [H, N, K]    the weight position t gives the token d back in its story\n"
                   "                             (d = 0: itself), 0 where there is none\n"
                   "  head_outputs  [N, H, 16]   each head's output as the hidden layer read it\n"
                   "  hidden        [N, 128]     the hidden layer after tanh\n"
                   "  logits        [N, V]       the next-token logits (V: the vocabulary's size, 2,000 by default)\n"
                   "  loss          [N]          -log p(next token) in nats, 0 at a story's last position\n"
                   "The metadata holds the model, the ablation and, for a text, the text. --ablate switches\n"
                   "heads off (head_outputs then hold the replacement). Logits take 4 bytes a token of the\n"
                   "vocabulary a position (8 kB at 2,000): the 100 test stories of TinyStories make a file\n"
                   "of about 400 MB; --test-stories N takes fewer.\n"
                   "A transformer's file holds tokens, story_starts, every hook point under TransformerLens's\n"
                   "hook name (hook_embed, blocks.0.hook_resid_pre, blocks.0.attn.hook_pattern, ...,\n"
                   "ln_final.hook_normalized, hook_logits; docs/transformer.md) and loss; so does a model of\n"
                   "several layers (--layers): hook_embed, each layer's blocks.L.attn.hook_q, _k, _v,\n"
                   "_distance_score, _pattern and _z, hook_hidden_in, hook_hidden, hook_logits.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(CacheParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_HEADS,
    .serve = VIEW_SERVE_CLI,
    .check = check,
    .build = build,
};
