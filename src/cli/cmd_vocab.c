/* storylm vocab: learn the WordPiece vocabulary (vocab.txt) from a stories
 * file, or export a model's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "common.h"
#include "storylm/clock.h"
#include "storylm/fileio.h"
#include "storylm/outputs.h"
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

static void print_summary(const char *path, const char *output, int size, const VocabStats *st, double seconds) {
    const StorySkips *k = &st->skips;
    fprintf(stderr, "read %d %s from '%s' (skipped: %d empty, %d invalid UTF-8 or NUL, %d too long)\n", st->n_stories,
            st->n_stories == 1 ? "story" : "stories", path, k->empty, k->invalid_utf8, k->too_long);
    fprintf(stderr, "%lld words, %d distinct (%d over 100 characters left out)\n", (long long)st->n_word_tokens,
            st->n_words, st->n_long_words);
    fprintf(stderr, "alphabet: %d characters, %d pieces; %d merges", st->n_chars_kept, st->n_alphabet_pieces,
            st->n_merges);
    if (st->n_merges)
        fprintf(stderr, " (%d gave a piece already there), the last of a pair seen %lld times", st->n_merges_existing,
                (long long)st->last_merge_count);
    fprintf(stderr, "\n");
    if (st->n_chars_kept < st->n_chars)
        fprintf(stderr,
                "warning: --size %d has no room for all %d characters: %lld of %lld character occurrences (%.2f%%) "
                "have no piece, and %d distinct words with them will be [UNK]\n",
                size, st->n_chars, (long long)st->n_char_tokens_dropped, (long long)st->n_char_tokens,
                st->n_char_tokens ? 100.0 * (double)st->n_char_tokens_dropped / (double)st->n_char_tokens : 0.0,
                st->n_words_dropped);
    fprintf(stderr, "wrote %s: %d pieces in %.2f s\n", output, size, seconds);
}

/* The summary as JSON (docs/json.md): what was read, what was learnt, where it went. */
static int print_json(const char *path, const char *output, int size, const VocabStats *st, double seconds, Error *e) {
    cJSON *j = cli_json_begin("vocab");
    cJSON *stories = cJSON_AddObjectToObject(j, "stories");
    cJSON_AddStringToObject(stories, "file", path);
    cJSON_AddNumberToObject(stories, "stories", st->n_stories);
    cJSON *skipped = cJSON_AddObjectToObject(j, "skipped");
    cJSON_AddNumberToObject(skipped, "empty", st->skips.empty);
    cJSON_AddNumberToObject(skipped, "invalid_utf8", st->skips.invalid_utf8);
    cJSON_AddNumberToObject(skipped, "too_long", st->skips.too_long);
    cJSON *vocab = cJSON_AddObjectToObject(j, "vocab");
    cJSON_AddStringToObject(vocab, "file", output);
    cJSON_AddNumberToObject(vocab, "size", size);
    const char *keys[] = {"words",
                          "distinct_words",
                          "long_words_left_out",
                          "characters",
                          "characters_kept",
                          "character_occurrences",
                          "character_occurrences_dropped",
                          "words_dropped",
                          "alphabet_pieces",
                          "merges",
                          "merges_existing",
                          "last_merge_count"};
    double values[] = {(double)st->n_word_tokens,
                       st->n_words,
                       st->n_long_words,
                       st->n_chars,
                       st->n_chars_kept,
                       (double)st->n_char_tokens,
                       (double)st->n_char_tokens_dropped,
                       st->n_words_dropped,
                       st->n_alphabet_pieces,
                       st->n_merges,
                       st->n_merges_existing,
                       (double)st->last_merge_count};
    for (int i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++) cJSON_AddNumberToObject(j, keys[i], values[i]);
    cJSON_AddNumberToObject(j, "seconds", seconds);
    return cli_json_print(j, e);
}

/* The vocabulary to write, checked against the file it is learnt from or
 * exported from (outputs.h): never over it, nor over a model or stories. */
static int check_output(const char *output, const char *input, bool force, Error *e) {
    OutputPlan p;
    slm_outputs_init(&p, force);
    slm_outputs_read(&p, input);
    slm_outputs_write(&p, output, FILE_VOCAB);
    return slm_outputs_check(&p, e);
}

/* --model: the vocabulary a model file holds, written as vocab.txt. */
static int export_vocab(const char *model_path, const char *output, bool json, bool force) {
    Error e = {0};
    LoadedModel lm = {0};
    int rc = check_output(output, model_path, force, &e) || slm_loaded_model_load(&lm, model_path, &e) ||
             slm_file_write_atomic(output, lm.vocab, strlen(lm.vocab), &e);
    if (!rc && json) {
        cJSON *j = cli_json_begin("vocab");
        cli_json_model(j, &lm.model, model_path);
        cJSON *vocab = cJSON_AddObjectToObject(j, "vocab");
        cJSON_AddStringToObject(vocab, "file", output);
        cJSON_AddNumberToObject(vocab, "size", lm.model.cfg.vocab_size);
        rc = cli_json_print(j, &e);
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
    char *text = NULL;
    size_t len = 0;
    Vocab v = {0};
    VocabStats st = {0};
    rc = check_output(output, pos[0], force, &e) || slm_file_read_all(pos[0], 0, &text, &len, &e) ||
         slm_vocab_train_text(text, len, pos[0], size, &v, &st, &e) || slm_vocab_save(&v, output, &e);
    free(text);
    if (rc) {
        slm_error_print(&e, "storylm vocab");
        slm_vocab_free(&v);
        return 1;
    }
    if (json)
        rc = print_json(pos[0], output, v.size, &st, slm_clock_seconds() - t0, &e);
    else
        print_summary(pos[0], output, v.size, &st, slm_clock_seconds() - t0);
    slm_vocab_free(&v);
    if (rc) slm_error_print(&e, "storylm vocab");
    return rc ? 1 : 0;
}
