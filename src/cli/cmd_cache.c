/* storylm cache TEXT|--stories STORIES -o FILE: every activation of the
 * forward pass written as safetensors, for analysis outside storylm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_common.h"
#include "storylm/probe_cache.h"

static int run(int argc, char **argv);
const Command command_cache = {
    "cache", "every activation of the forward pass, as a safetensors file",
    "storylm cache TEXT -o FILE [options] | storylm cache --stories STORIES -o FILE [options]",
    "Runs [EOS] and the text (or each held-out test story of STORIES) through the network\n"
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
    "ln_final.hook_normalized, hook_logits; docs/transformer.md) and loss.",
    run};

typedef struct CacheArgs {
    const char *text, *stories, *out;
} CacheArgs;

/* The text, or the test stories of the session, packed: ids and starts (n + 1). */
static int gather(const ProbeSession *ps, const CacheArgs *args, IntVec *ids, int **starts, int *n, Error *e) {
    if (args->text) {
        *n = 1;
        *starts = xmalloc(2 * sizeof(int), e);
        if (!*starts || interp_encode(ps, args->text, ids, e)) return -1;
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

static int metadata_fill(Metadata *md, const ProbeSession *ps, const CacheArgs *args, const ActivationCache *c,
                         Error *e) {
    int rc = slm_metadata_set(md, "format", "storylm-activations", e) ||
             slm_metadata_set(md, "format_version", "1", e) || slm_metadata_set(md, "model", ps->model_path, e) ||
             slm_metadata_set(md, "ablation", ps->ablation_desc[0] ? ps->ablation_desc : "none", e) ||
             slm_metadata_set(md, "tensors", slm_activation_cache_summary(c), e);
    if (!rc && args->text) rc = slm_metadata_set(md, "text", args->text, e);
    if (!rc && args->stories) rc = slm_metadata_set(md, "stories", args->stories, e);
    return rc;
}

static void build_report(Report *r, const ProbeSession *ps, const CacheArgs *args, const ActivationCache *c) {
    slm_probe_report_header(r, ps);
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

static int cache(const ProbeOptions *po, const CacheArgs *args, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, po, "cache", args->stories, PROBE_ATTENTION_ONLY | PROBE_TRANSFORMER, e)) return -1;
    IntVec ids = {0};
    int *starts = NULL, n = 0;
    ActivationCache c = {0};
    Metadata md = {0};
    Report rep;
    slm_report_init(&rep, "cache");
    int rc = gather(&ps, args, &ids, &starts, &n, e);
    if (!rc) rc = slm_probe_cache(&ps.lm.model, ids.data, starts, n, &ps.ablation, &c, e);
    if (!rc) rc = metadata_fill(&md, &ps, args, &c, e) || slm_activation_cache_write(&c, args->out, &md, e);
    if (!rc) build_report(&rep, &ps, args, &c);
    if (!rc) rc = probe_emit(&rep, po, e);
    slm_report_free(&rep);
    slm_metadata_free(&md);
    slm_activation_cache_free(&c);
    free(starts);
    slm_intvec_free(&ids);
    slm_probe_session_close(&ps);
    return rc ? -1 : 0;
}

static int run(int argc, char **argv) {
    ProbeOptions po = PROBE_OPTIONS_DEFAULT;
    CacheArgs args = {0};
    const char *pos[1] = {NULL};
    Option opts[] = {
        PROBE_COMMON_OPTIONS(po),
        PROBE_TEST_OPTION(po),
        {"stories", 0, OPT_STRING, &args.stories, "FILE", "cache the held-out test stories of FILE instead of a text",
         0, 0},
        {"out", 'o', OPT_STRING, &args.out, "FILE",
         "safetensors file to write (required); a model, stories or other file already there is kept", 0, 0},
        FORCE_OPTION(po.force),
    };
    int np, rc = args_parse(&command_cache, argc, argv, opts, N_OPTIONS(opts), pos, 0, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (probe_check_mode(&command_cache, po.ablate_mode)) return 2;
    if (!args.out) return args_usage_error(&command_cache, "give the file to write with -o FILE");
    if ((np == 1) == (args.stories != NULL))
        return args_usage_error(&command_cache, "give either a TEXT or --stories FILE (one of the two)");
    cli_set_threads(po.threads);
    args.text = np == 1 ? pos[0] : NULL;
    po.out = args.out; /* checked with the inputs (the model, default or given; the stories) before any work */
    Error e = {0};
    return cache(&po, &args, &e) ? cli_fail(&e) : 0;
}
