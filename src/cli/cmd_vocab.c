/* storylm vocab: learn the WordPiece vocabulary (vocab.txt) from a stories
 * file, or export a model's own. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "common.h"
#include "storylm/clock.h"
#include "storylm/fileio.h"
#include "storylm/outputs.h"
#include "storylm/vocab_file.h"
#include "storylm/vocab_train.h"

static int run(int argc, char **argv);
const Command command_vocab = {
    "vocab", "learn the WordPiece vocabulary (vocab.txt) from stories",
    "storylm vocab STORIES [options] | storylm vocab [--model M] [options]",
    "Learns a WordPiece vocabulary of --size pieces from the stories (left out, 2,000 or as many as a\n"
    "small corpus's words give, as train does), the way HuggingFace's\n"
    "WordPieceTrainer does: every word is split into characters (\"c\", then \"##c\" inside the word)\n"
    "and the most frequent adjacent pair of pieces is merged, again and again. vocab.txt holds\n"
    "[UNK] and [EOS], the characters, then the merged pieces in merge order, one a line (line\n"
    "number = id). The same stories always give the same file, byte for byte.\n"
    "The words are normalised as BERT-uncased does (lower case, accents stripped); with --cased\n"
    "as BERT-cased (capitals and accents kept, NFC), and the piece [CASED] after [EOS] tells\n"
    "every verb that reads the vocabulary, or a model trained with it, to keep them too.\n"
    "Without STORIES, writes the vocabulary stored in a model file (--model M, else\n"
    "./" DEFAULT_MODEL_PATH ", else the shipped model; said on stderr): a standard BERT\n"
    "vocab.txt that any WordPiece tokenizer loads.",
    run};

/* --model: the vocabulary a model file holds, written as vocab.txt (output
 * NULL: to standard output). */
static int export_vocab(const char *model_path, const char *output, bool json, bool force) {
    Error e = {0};
    LoadedModel lm = {0};
    int rc = output ? slm_vocab_export(model_path, output, force, &lm, &e) : slm_loaded_model_load(&lm, model_path, &e);
    if (!rc && !output) {
        fputs(lm.vocab, stdout);
        output = "standard output";
    }
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

typedef struct VocabArgs {
    const char *stories, *output, *model;
    int size;
    bool json, force, cased;
} VocabArgs;

static const Param vocab_params[] = {
    {.name = "out",
     .short_name = 'o',
     .type = PARAM_STRING,
     .offset = offsetof(VocabArgs, output),
     .meta = "FILE",
     .help = "where to write the vocabulary ('-': standard output); a model, stories or other file already there is "
             "kept, and a vocabulary that a model in its folder was trained with even with --force",
     .def_string = "vocab.txt"},
    {.name = "force", .type = PARAM_BOOL, .offset = offsetof(VocabArgs, force), .help = OUTPUTS_FORCE_HELP},
    {.name = "size",
     .type = PARAM_INT,
     .offset = offsetof(VocabArgs, size),
     .meta = "N",
     .help = "pieces in the vocabulary, [UNK] and [EOS] included",
     .min = VOCAB_MIN_SIZE,
     .max = VOCAB_MAX_SIZE,
     .def = VOCAB_DEFAULT_SIZE},
    {.name = "cased",
     .type = PARAM_BOOL,
     .offset = offsetof(VocabArgs, cased),
     .help = "keep capitals and accents (BERT-cased; default: BERT-uncased)"},
    {.name = "model",
     .short_name = 'm',
     .type = PARAM_STRING,
     .offset = offsetof(VocabArgs, model),
     .meta = "FILE",
     .help = "export this model's vocabulary instead of learning one (default without STORIES: ./" DEFAULT_MODEL_PATH
             ", else the shipped model)"},
    {.name = "json",
     .type = PARAM_BOOL,
     .offset = offsetof(VocabArgs, json),
     .help = "print the summary as JSON on stdout (else it goes to stderr)"},
    {.name = "STORIES", .type = PARAM_STRING, .offset = offsetof(VocabArgs, stories), .flags = PARAM_POSITIONAL},
};
static const ParamTable vocab_table = {"vocab", vocab_params, PARAMS_COUNT(vocab_params)};

/* A small corpus's words give fewer pieces than the 2,000 asked for without
 * --size, as train takes them: then *size is as many as they give (said on
 * stderr), and true. False, e as it was, for any other failure. */
static bool words_give(const char *stories, int *size, bool cased, Error *e) {
    if (!strstr(e->message, "fewer than the")) return false;
    char *text = NULL;
    size_t len = 0;
    Vocab v = {0};
    VocabStats st = {0};
    Error e2 = {0};
    bool ok = !slm_file_read_all(stories, 0, &text, &len, &e2) &&
              !slm_vocab_train_text_until(text, len, stories, *size, true, cased, NULL, &v, &st, &e2);
    free(text);
    if (ok) {
        fprintf(stderr,
                "storylm vocab: the words of %s give only %d pieces, so the vocabulary has %d, as train takes "
                "them (--size N asks for exactly N)\n",
                stories, v.size, v.size);
        *size = v.size;
    }
    slm_vocab_free(&v);
    return ok;
}

static int run(int argc, char **argv) {
    VocabArgs a = {0};
    slm_params_init(&vocab_table, &a);
    ParamsGiven given;
    int rc = args_parse(&command_vocab, argc, argv, &vocab_table, &a, &given);
    if (rc) return rc > 0 ? 0 : 2;
    const char *output = a.output, *model = a.model;
    bool json = a.json, force = a.force;
    int size = a.size, np = a.stories != NULL;
    const char *pos[1] = {a.stories};
    if (model && np)
        return args_usage_error(&command_vocab,
                                "give STORIES to learn a vocabulary or --model to export one, not both");
    /* a bare `storylm vocab` beside a learnt vocab.txt must not replace it with another model's */
    if (!model && !np && !force && slm_data_file_exists(output))
        return args_usage_error(&command_vocab,
                                "give STORIES to learn a vocabulary, or --model M to export one; "
                                "without them the default model's would replace '%s' (--force replaces it)",
                                output);
    if (a.cased && (model || !np))
        return args_usage_error(&command_vocab, "--cased learns a vocabulary from STORIES; a model's is as it was");
    bool to_stdout = strcmp(output, "-") == 0; /* the vocabulary on stdout, the summary on stderr */
    if (to_stdout && json)
        return args_usage_error(&command_vocab, "-o - writes the vocabulary on stdout: not with --json");
    if (model || !np) return export_vocab(cli_model_path(model, false), to_stdout ? NULL : output, json, force);

    double t0 = slm_clock_seconds();
    Error e = {0};
    Vocab v = {0};
    VocabStats st = {0};
    ParamList l;
    slm_params_list(&vocab_table, &l);
    bool exact = slm_params_given(&given, &l, "size");
    const char *save = to_stdout ? NULL : output;
    if (slm_vocab_learn_file(pos[0], save, size, a.cased, force, &v, &st, &e) &&
        (exact || !words_give(pos[0], &size, a.cased, &e) ||
         slm_vocab_learn_file(pos[0], save, size, a.cased, force, &v, &st, &e))) {
        slm_error_print(&e, "storylm vocab");
        slm_vocab_free(&v);
        return 1;
    }
    for (int i = 0; to_stdout && i < v.size; i++) printf("%s\n", v.pieces[i]);
    if (to_stdout) output = "standard output";
    if (json)
        rc = cli_json_print(slm_vocab_summary_json(pos[0], output, v.size, &st, slm_clock_seconds() - t0), &e);
    else
        slm_vocab_summary_print(stderr, pos[0], output, v.size, &st, slm_clock_seconds() - t0);
    slm_vocab_free(&v);
    if (rc) slm_error_print(&e, "storylm vocab");
    return rc ? 1 : 0;
}
