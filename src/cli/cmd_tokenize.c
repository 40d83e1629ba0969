/* storylm tokenize: show how a text is cut into WordPiece tokens. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "common.h"
#include "storylm/views.h"
#include "storylm/fileio.h"
#include "storylm/text.h"
#include "storylm/tokenizer.h"
#include "storylm/tokenize_output.h"

static int run(int argc, char **argv);
const Command command_tokenize = {
    "tokenize", "show the tokens of a text",
    "storylm tokenize TEXT [options] | storylm tokenize --lines FILE [options]",
    "Normalises TEXT as BERT does (lower case, accents stripped, control characters\n"
    "dropped; a cased vocabulary, of vocab --cased, keeps capitals and accents), splits it into words (every "
    "punctuation character is a word) and each\n"
    "word into the longest pieces of the vocabulary; prints the pieces separated by\n"
    "spaces. The vocabulary: --vocab FILE, or the one stored in --model FILE, else in\n"
    "./" DEFAULT_MODEL_PATH ", else ./vocab.txt, else the shipped model's (said on stderr).\n"
    "TEXT '-' reads standard input. With --lines FILE, each line of FILE is a text of its\n"
    "own and gets an output line of its own.\n\n"
    "Text that is not valid UTF-8 is refused with the byte offset of the first bad\n"
    "byte; with --lossy, bad bytes are read as U+FFFD and dropped, as a BERT\n"
    "tokenizer given the text decoded by a web browser does.",
    run};

typedef struct Flags {
    const char *text, *vocab, *model, *lines;
    TokenizeFormat format;
} Flags;

static const Param tokenize_params[] = {
    {.name = "vocab",
     .short_name = 'v',
     .type = PARAM_STRING,
     .offset = offsetof(Flags, vocab),
     .meta = "FILE",
     .help = "the vocabulary (vocab.txt of storylm vocab; shipped: the shipped model's) (default: see above)"},
    {.name = "model",
     .short_name = 'm',
     .type = PARAM_STRING,
     .offset = offsetof(Flags, model),
     .meta = "FILE",
     .help = "use the vocabulary stored in this model file (default: see above)"},
    {.name = "ids",
     .type = PARAM_BOOL,
     .offset = offsetof(Flags, format.ids),
     .help = "print token ids instead of pieces"},
    {.name = "json",
     .type = PARAM_BOOL,
     .offset = offsetof(Flags, format.json),
     .help =
         "print {\"command\":\"tokenize\",\"tokens\":[{\"piece\":..,\"id\":..}]} (--words: \"words\":[..]), a line a "
         "text"},
    {.name = "words",
     .type = PARAM_BOOL,
     .offset = offsetof(Flags, format.words),
     .help = "print the normalised words before WordPiece (no vocabulary needed)"},
    {.name = "decode",
     .type = PARAM_BOOL,
     .offset = offsetof(Flags, format.decode),
     .help = "print the tokens decoded back into text, as generate writes them"},
    {.name = "lines",
     .type = PARAM_STRING,
     .offset = offsetof(Flags, lines),
     .meta = "FILE",
     .help = "tokenize every line of FILE ('-': standard input) on its own"},
    {.name = "lossy",
     .type = PARAM_BOOL,
     .offset = offsetof(Flags, format.lossy),
     .help = "drop bytes that are not UTF-8 instead of refusing the text"},
    {.name = "TEXT", .type = PARAM_STRING, .offset = offsetof(Flags, text), .flags = PARAM_POSITIONAL},
};
static const ParamTable tokenize_table = {"tokenize", tokenize_params, PARAMS_COUNT(tokenize_params)};

/* Reads a whole file, or standard input for "-". */
static int read_input(const char *path, char **data, size_t *len, Error *e) {
    if (strcmp(path, "-") != 0) return slm_file_read_all(path, 0, data, len, e);
    ByteVec v = {0};
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
        if (slm_bytevec_append(&v, buf, n, e)) {
            slm_bytevec_free(&v);
            return -1;
        }
    if (ferror(stdin)) {
        slm_bytevec_free(&v);
        return FAIL(e, NULL, "error reading standard input");
    }
    if (!v.data && slm_bytevec_append(&v, "", 0, e)) return -1;
    *data = v.data;
    *len = v.len;
    return 0;
}

/* --lines FILE: every line a text of its own (a final newline ends the last). */
static int print_lines(const Tokenizer *t, const Pretokenizer *pre, const Flags *f, Error *e) {
    char *data;
    size_t len;
    if (read_input(f->lines, &data, &len, e)) return -1;
    const char *name = strcmp(f->lines, "-") == 0 ? "standard input" : f->lines;
    int rc = slm_tokenize_write_lines(t, pre, &f->format, data, len, name, stdout, e);
    free(data);
    return rc;
}

/* The vocabulary, found as the other verbs find their model: --vocab, else
 * --model's, else ./model.safetensors's, else ./vocab.txt (what storylm
 * vocab writes), else the shipped model's; said on stderr when not given.
 * Sets *use to t or to lm's tokenizer. */
static int load_vocabulary(const Flags *f, Tokenizer *t, LoadedModel *lm, const Tokenizer **use, Error *e) {
    const char *vocab = f->vocab;
    if (vocab && !(vocab = cli_vocab_path(vocab, e))) return -1;
    if (!vocab && !f->model && !slm_data_file_exists(DEFAULT_MODEL_PATH) && slm_data_file_exists("vocab.txt")) {
        fprintf(stderr, "storylm: using vocab.txt\n");
        vocab = "vocab.txt";
    }
    *use = vocab ? t : &lm->tokenizer;
    return vocab ? slm_tokenizer_load(t, vocab, 0, e) : slm_loaded_model_load(lm, cli_model_path(f->model, false), e);
}

static int tokenize(const Flags *f, const char *arg, Error *e) {
    Tokenizer t = {0};
    Pretokenizer pre = {0};
    LoadedModel lm = {0};
    const Tokenizer *use = &t;
    /* --words needs no vocabulary, only the word pattern; a vocabulary given
     * that loads says how to normalise (cased or not). */
    int given = f->vocab || f->model;
    int rc = f->format.words ? slm_pretokenizer_init(&pre, e) : 0;
    if (rc == 0 && !f->format.words) rc = load_vocabulary(f, &t, &lm, &use, e);
    if (rc == 0 && f->format.words && given && load_vocabulary(f, &t, &lm, &use, NULL)) /* none: BERT-uncased */
        use = &t;
    if (rc == 0 && f->lines) {
        rc = print_lines(use, &pre, f, e);
    } else if (rc == 0) {
        char *data = NULL;
        size_t len = strlen(arg);
        if (strcmp(arg, "-") == 0) rc = read_input("-", &data, &len, e);
        if (rc == 0)
            rc = slm_tokenize_write(use, &pre, &f->format, data ? data : arg, len, data ? "standard input" : "the text",
                                    stdout, e);
        free(data);
    }
    if (pre.code) slm_pretokenizer_free(&pre);
    if (t.pieces) slm_tokenizer_free(&t);
    if (lm.vocab) slm_loaded_model_free(&lm);
    return rc;
}

static int run(int argc, char **argv) {
    Flags f = {0};
    int rc = args_parse(&command_tokenize, argc, argv, &tokenize_table, &f, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    int np = f.text != NULL;
    if (f.vocab && f.model) return args_usage_error(&command_tokenize, "give --vocab or --model, not both");
    if (f.format.ids && f.format.json)
        return args_usage_error(&command_tokenize, "--ids and --json do not go together");
    if (f.format.words && f.format.ids) return args_usage_error(&command_tokenize, "--words prints words, not ids");
    if (f.format.decode && (f.format.words || f.format.ids || f.format.json))
        return args_usage_error(&command_tokenize, "--decode prints text: not with --words, --ids or --json");
    if (!f.lines && np == 0) return args_usage_error(&command_tokenize, "missing TEXT (or --lines FILE)");
    if (f.lines && np > 0) return args_usage_error(&command_tokenize, "give TEXT or --lines FILE, not both");
    Error e = {0};
    if (tokenize(&f, f.text, &e)) {
        fflush(stdout);
        slm_error_print(&e, "storylm tokenize");
        return 1;
    }
    return 0;
}
