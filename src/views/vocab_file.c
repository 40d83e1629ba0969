/* Learning a vocabulary from a stories file, or exporting a model's, and
 * what storylm vocab says about it: see include/storylm/vocab_file.h. */
#include "storylm/vocab_file.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/data_files.h"
#include "storylm/fileio.h"
#include "storylm/safetensors.h"
#include "storylm/outputs.h"
#include "storylm/probe_views.h"
#include "storylm/stories.h"

void slm_vocab_summary_print(FILE *out, const char *path, const char *output, int size, const VocabStats *st,
                             double seconds) {
    const StorySkips *k = &st->skips;
    fprintf(out, "read %d %s from '%s' (skipped: %d empty, %d invalid UTF-8 or NUL, %d too long)\n", st->n_stories,
            st->n_stories == 1 ? "story" : "stories", path, k->empty, k->invalid_utf8, k->too_long);
    char hint[600];
    if (slm_stories_encoding_hint(k, st->n_stories, path, hint, sizeof hint)) fprintf(out, "warning: %s\n", hint);
    fprintf(out, "%lld words, %d distinct (%d over 100 characters left out)\n", (long long)st->n_word_tokens,
            st->n_words, st->n_long_words);
    fprintf(out, "alphabet: %d characters, %d pieces; %d merges", st->n_chars_kept, st->n_alphabet_pieces,
            st->n_merges);
    if (st->n_merges)
        fprintf(out, " (%d gave a piece already there), the last of a pair seen %lld times", st->n_merges_existing,
                (long long)st->last_merge_count);
    fprintf(out, "\n");
    if (st->n_chars_kept < st->n_chars)
        fprintf(out,
                "warning: --size %d has no room for all %d characters: %lld of %lld character occurrences (%.2f%%) "
                "have no piece, and %d distinct words with them will be [UNK]\n",
                size, st->n_chars, (long long)st->n_char_tokens_dropped, (long long)st->n_char_tokens,
                st->n_char_tokens ? 100.0 * (double)st->n_char_tokens_dropped / (double)st->n_char_tokens : 0.0,
                st->n_words_dropped);
    fprintf(out, "wrote %s: %d pieces in %.2f s\n", output, size, seconds);
}

cJSON *slm_vocab_summary_json(const char *path, const char *output, int size, const VocabStats *st, double seconds) {
    cJSON *j = slm_view_json_begin("vocab");
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
    return j;
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

/* text without the line breaks that end it: a model stores its vocab.txt as read */
static size_t trimmed_len(const char *text) {
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r')) n--;
    return n;
}

/* Whether the model file path stores the vocabulary text (len bytes). */
static bool model_holds_vocab(const char *path, const char *text, size_t len) {
    SafeTensorsFile st = {0};
    if (slm_safetensors_open(&st, path, NULL)) return false;
    const char *v = slm_metadata_get(&st.metadata, "vocab");
    bool same = v && trimmed_len(v) == len && memcmp(v, text, len) == 0;
    slm_safetensors_close(&st);
    return same;
}

/* -1 when the vocabulary file output (if there) is the one a model in its
 * folder (*.safetensors) was trained with, and replacing it (by new_text,
 * NULL: not known yet) would leave the model's run without it; even --force
 * does not replace it, since a resume reads it. */
static int check_trained_with(const char *output, const char *new_text, Error *e) {
    char *text = NULL, dir[4096], model[4600] = "";
    size_t len;
    if (!slm_data_file_exists(output) || slm_file_read_all(output, 64u << 20, &text, &len, NULL)) return 0;
    const char *slash = strrchr(output, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - output) + (slash == output) : 1, slash ? output : ".");
    len = trimmed_len(text);
    DIR *d = new_text && trimmed_len(new_text) == len && !memcmp(new_text, text, len) ? NULL : opendir(dir);
    for (struct dirent *de; d && !model[0] && (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n < 12 || strcmp(de->d_name + n - 12, ".safetensors")) continue;
        snprintf(model, sizeof model, "%s%s%s", slash ? dir : "", slash ? "/" : "", de->d_name);
        if (!model_holds_vocab(model, text, len)) model[0] = '\0';
    }
    if (d) closedir(d);
    free(text);
    if (!model[0]) return 0;
    return FAIL(e, "write the new one to another file (-o NEW.txt) and train with --vocab NEW.txt",
                "'%s' is the vocabulary the model '%s' was trained with: it is not replaced (not even with --force), "
                "so that the model's run can go on with it",
                output, model);
}

int slm_vocab_learn_file(const char *stories, const char *output, int size, bool cased, bool force, Vocab *v,
                         VocabStats *st, Error *e) {
    char *text = NULL;
    size_t len = 0;
    int rc = (output && (check_output(output, stories, force, e) || check_trained_with(output, NULL, e))) ||
             slm_file_read_all(stories, 0, &text, &len, e) ||
             slm_vocab_train_text_until(text, len, stories, size, false, cased, NULL, v, st, e) ||
             (output && slm_vocab_save(v, output, e));
    free(text);
    return rc ? -1 : 0;
}

int slm_vocab_export(const char *model_path, const char *output, bool force, LoadedModel *lm, Error *e) {
    int rc = check_output(output, model_path, force, e) || slm_loaded_model_load(lm, model_path, e) ||
             check_trained_with(output, lm->vocab, e) || slm_file_write_atomic(output, lm->vocab, strlen(lm->vocab), e);
    return rc ? -1 : 0;
}

cJSON *slm_vocab_export_json(const LoadedModel *lm, const char *model_path, const char *output) {
    cJSON *j = slm_view_json_begin("vocab");
    slm_view_json_model(j, &lm->model, model_path);
    cJSON *vocab = cJSON_AddObjectToObject(j, "vocab");
    cJSON_AddStringToObject(vocab, "file", output);
    cJSON_AddNumberToObject(vocab, "size", lm->model.cfg.vocab_size);
    return j;
}
