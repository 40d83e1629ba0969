/* storylm vocab: learn the WordPiece vocabulary (vocab.txt) from a stories
 * file, or export a model's own. */
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "common.h"
#include "storylm/clock.h"
#include "storylm/vocab_file.h"
#include "storylm/vocab_train.h"

static int run(int argc, char **argv);
const Command command_vocab = {
    "vocab", "learn the WordPiece vocabulary (vocab.txt) from stories",
    "storylm vocab STORIES [options] | storylm vocab [--model M] [options]",
    "Learns a WordPiece vocabulary of exactly --size pieces from the stories, the way HuggingFace's\n"
    "WordPieceTrainer does: every word is split into characters (\"c\", then \"##c\" inside the word)\n"
    "and the most frequent adjacent pair of pieces is merged, again and again. vocab.txt holds\n"
    "[UNK] and [EOS], the characters, then the merged pieces in merge order, one a line (line\n"
    "number = id). The same stories always give the same file, byte for byte.\n"
    "Without STORIES, writes the vocabulary stored in a model file (--model M, else\n"
    "./" DEFAULT_MODEL_PATH ", else the shipped model; said on stderr): a standard BERT\n"
    "vocab.txt that any WordPiece tokenizer loads.",
    run};

/* --model: the vocabulary a model file holds, written as vocab.txt. */
static int export_vocab(const char *model_path, const char *output, bool json, bool force) {
    Error e = {0};
    LoadedModel lm = {0};
    int rc = slm_vocab_export(model_path, output, force, &lm, &e);
    if (!rc && json) {
        rc = cli_json_print(slm_vocab_export_json(&lm, model_path, output), &e);
    } else if (!rc) {
        fprintf(stderr, "wrote %s: the %d pieces of %s\n", output, lm.model.cfg.vocab_size, model_path);
    }
    slm_loaded_model_free(&lm);
    if (rc) {
        slm_error_print(&e, "storylm vocab");
        return 1;
    }
    return 0;
}

static int run(int argc, char **argv) {
    const char *output = "vocab.txt", *model = NULL;
    int size = VOCAB_DEFAULT_SIZE;
    bool json = false, force = false;
    const Option opts[] = {
        {"out", 'o', OPT_STRING, &output, "FILE",
         "where to write the vocabulary; a model, stories or other file already there is kept", 0, 0},
        FORCE_OPTION(force),
        {"size", 0, OPT_INT, &size, "N", "pieces in the vocabulary, [UNK] and [EOS] included", VOCAB_MIN_SIZE,
         VOCAB_MAX_SIZE},
        {"model", 'm', OPT_STRING, &model, "FILE",
         "export this model's vocabulary instead of learning one (default without STORIES: ./" DEFAULT_MODEL_PATH
         ", else the shipped model)",
         0, 0},
        {"json", 0, OPT_BOOL, &json, NULL, "print the summary as JSON on stdout (else it goes to stderr)", 0, 0},
    };
    const char *pos[1];
    int np;
    int rc = args_parse(&command_vocab, argc, argv, opts, N_OPTIONS(opts), pos, 0, 1, &np);
    if (rc) return rc > 0 ? 0 : 2;
    if (model && np)
        return args_usage_error(&command_vocab,
                                "give STORIES to learn a vocabulary or --model to export one, not both");
    /* a bare `storylm vocab` beside a learnt vocab.txt must not replace it with another model's */
    if (!model && !np && !force && slm_data_file_exists(output))
        return args_usage_error(&command_vocab,
                                "give STORIES to learn a vocabulary, or --model M to export one; "
                                "without them the default model's would replace '%s' (--force replaces it)",
                                output);
    if (model || !np) return export_vocab(cli_model_path(model, false), output, json, force);

    double t0 = slm_clock_seconds();
    Error e = {0};
    Vocab v = {0};
    VocabStats st = {0};
    if (slm_vocab_learn_file(pos[0], output, size, force, &v, &st, &e)) {
        slm_error_print(&e, "storylm vocab");
        slm_vocab_free(&v);
        return 1;
    }
    if (json)
        rc = cli_json_print(slm_vocab_summary_json(pos[0], output, v.size, &st, slm_clock_seconds() - t0), &e);
    else
        slm_vocab_summary_print(stderr, pos[0], output, v.size, &st, slm_clock_seconds() - t0);
    slm_vocab_free(&v);
    if (rc) slm_error_print(&e, "storylm vocab");
    return rc ? 1 : 0;
}
