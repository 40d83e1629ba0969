/* storylm attribute TEXT: which parts of what the hidden layer reads push
 * one guess (gradient x activation beside the exact effect of removing
 * each part), and the surprisal of every token of the text. */
#include "probe_common.h"
#include "storylm/probe_views.h"

static int run(int argc, char **argv);
const Command command_attribute = {
    "attribute", "which parts push a guess: gradient x activation, removal, surprisal",
    "storylm attribute TEXT [options]",
    "Runs [EOS] and the text through the network. At position --pos (0 is [EOS]; negative\n"
    "counts from the end; default: the last token) the hidden layer reads z = [the token's row (32), head 0 (16), ..., "
    "head 7]\n"
    "and the next token --token (default: the top guess there) gets the logit\n"
    "W2[token] tanh(W1 z + b1) + b2[token]. For the row and each head it shows:\n"
    "  grad x act   the sum over the part's numbers of d logit / d z_i times z_i: a\n"
    "               first-order estimate of what the part adds\n"
    "  zero         the exact change of the logit when the part's numbers are set to 0\n"
    "  mean         the same with the part set to its mean over the test stories (the\n"
    "               mean row, the head's mean output) of --stories FILE (the model file\n"
    "               names the file it was trained on); left empty without it\n"
    "Only the part's own slot of z is removed: the row also reaches the guess through the\n"
    "heads' queries, keys and values, which 'storylm patch' measures. A large gap between\n"
    "grad x act and the removals shows where tanh is far from linear.\n"
    "Then the surprisal of every token, -log p(token | the tokens before), in nats and bits,\n"
    "so you see where the network is surprised. --ablate switches heads off first (their\n"
    "parts then hold the replacement). --svg FILE draws both.",
    run};

static int attribute(const ProbeOptions *po, const AttributeParams *ap, Error *e) {
    ProbeSession ps;
    if (slm_probe_session_open(&ps, po, "attribute", NULL, PROBE_ATTENTION_ONLY, e)) return -1;
    Report rep;
    slm_report_init(&rep, "attribute");
    int rc = slm_view_attribute(&rep, &ps, ap, e);
    if (!rc && po->svg) rc = slm_view_attribute_draw(&rep, po->svg, e);
    if (!rc) rc = probe_emit(&rep, po, e);
    slm_report_free(&rep);
    slm_probe_session_close(&ps);
    return rc ? -1 : 0;
}

static int run(int argc, char **argv) {
    ProbeOptions po = PROBE_OPTIONS_DEFAULT;
    AttributeParams args = {.pos = -1};
    const char *pos[1];
    Option opts[] = {
        PROBE_COMMON_OPTIONS(po),
        PROBE_SVG_OPTION(po),
        PROBE_MEAN_STORIES_OPTION(po),
        PROBE_TEST_OPTION(po),
        {"pos", 0, OPT_INT, &args.pos, "N", "position to take apart, 0 = [EOS]; negative: from the end", -1e9, 1e9},
        {"token", 0, OPT_STRING, &args.token, "T", "next token whose logit is taken apart (default: the top guess)", 0,
         0},
    };
    int rc = probe_parse(&command_attribute, argc, argv, opts, N_OPTIONS(opts), &po, pos, 1);
    if (rc >= 0) return rc;
    args.text = pos[0];
    args.stories = po.mean_stories, args.n_test = po.n_test;
    Error e = {0};
    return attribute(&po, &args, &e) ? cli_fail(&e) : 0;
}
