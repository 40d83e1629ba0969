/* storylm circuits [--head H] [--top-k 20]: each head's QK and OV circuits
 * from the weights alone: which tokens look for which, and which tokens a
 * head's reading raises, with the copying score. */
#include "probe_common.h"
#include "storylm/probe_views.h"

static int run(int argc, char **argv);
const Command command_circuits = {
    "circuits", "QK and OV circuits of every head, from the weights", "storylm circuits [options]",
    "QK circuit: for every pair of tokens (s, t), the score E[s] query[h] . E[t] key[h] / sqrt(8)\n"
    "a query at token s gives a key at token t before the distance score is added: which tokens\n"
    "look for which. Listed: the --top-k pairs with the largest score, and 'vs mean', the score\n"
    "less the mean over all keys t (softmax ignores a constant per query).\n"
    "OV circuit: when head h puts all its weight on token s its output is E[s] value[h]; the\n"
    "change this makes to every logit, against an output of 0 (zero ablation), is read through\n"
    "the hidden layer linearised: tanh(W1 z + b1) is replaced by its tangent at the mean input\n"
    "z_mean of the hidden layer over every position of the held-out test stories, so\n"
    "  change of logit t = output.weight[t] . ((1 - tanh^2(W1 z_mean + b1)) * W1[:, head h] E[s] value[h]).\n"
    "It is the first-order effect: close when the head output moves z little from z_mean.\n"
    "Listed: the --top-k (token read, token raised) pairs with the largest change less the mean\n"
    "change over all tokens (logits matter only up to a constant). The copying score: the share\n"
    "of tokens t whose reading raises t itself the most (top 1), among the 10 most (top 10),\n"
    "or above the mean (random heads: 0.05%, 0.5%, 50%); 'looks for itself' is the same for\n"
    "the QK circuit. Both over every token of the vocabulary and over the tokens seen in the\n"
    "test stories.\n"
    "--token-list lily,tom lists, per head, the 5 tokens that reading each of them raises most.\n"
    "The stories (for z_mean) are --stories FILE (needed; 'storylm info' names the training file).\n"
    "--ablate HEADS switches heads off while z_mean is measured. --svg draws the scores per head.",
    run};

typedef struct CircuitsArgs {
    ProbeOptions po;
    int head, top;
    const char *tokens; /* --token-list lily,tom */
} CircuitsArgs;

/* *usage = 1 when the failure is a flag out of range for this model (exit code 2). */
static int circuits(const CircuitsArgs *a, Error *e, int *usage) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, &a->po, "circuits", NULL, PROBE_ATTENTION_ONLY, e)) return -1;
    *usage = a->head >= ps.lm.model.cfg.n_heads;
    CircuitsParams cp = {
        .head = a->head, .top = a->top, .tokens = a->tokens, .stories = a->po.mean_stories, .n_test = a->po.n_test};
    Report r;
    slm_report_init(&r, "circuits");
    int rc = slm_view_circuits(&r, &ps, &cp, e);
    if (!rc && a->po.svg) rc = slm_view_circuits_draw(&r, a->po.svg, e);
    if (!rc) rc = probe_emit(&r, &a->po, e);
    slm_report_free(&r);
    slm_probe_session_close(&ps);
    return rc;
}

static int run(int argc, char **argv) {
    CircuitsArgs a = {.po = PROBE_OPTIONS_DEFAULT, .head = -1, .top = 20};
    Option opts[] = {
        PROBE_COMMON_OPTIONS(a.po),
        PROBE_SVG_OPTION(a.po),
        PROBE_TEST_OPTION(a.po),
        {"stories", 0, OPT_STRING, &a.po.mean_stories, "FILE",
         "stories for the mean input and --ablate-mode mean (needed; info names the training file)", 0, 0},
        {"head", 0, OPT_INT, &a.head, "H", "only this head, 0 to 7 (-1: every head)", -1, 7},
        {"top-k", 0, OPT_INT, &a.top, "K", "the K strongest pairs listed per circuit and head", 1, 10000},
        {"token-list", 0, OPT_STRING, &a.tokens, "LIST",
         "also list what reading each of these tokens raises, e.g. lily,tom", 0, 0},
    };
    int rc = probe_parse(&command_circuits, argc, argv, opts, N_OPTIONS(opts), &a.po, NULL, 0);
    if (rc >= 0) return rc;
    Error e = {0};
    int usage = 0;
    if (circuits(&a, &e, &usage) == 0) return 0;
    cli_fail(&e);
    return usage ? 2 : 1;
}
