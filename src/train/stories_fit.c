/* Whether stories fit the run: see stories_fit.h. */
#include "storylm/stories_fit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/text.h"

#define EXAMPLE_SCAN_BYTES (64u << 20) /* enough to meet a word that is [UNK] when over 1% of tokens are */

size_t slm_stories_count_unknown(const Stories *s, int unk_id) {
    size_t n = 0;
    for (int i = 0; i < s->n_stories; i++)
        for (size_t j = 0; j < story_len(s, i); j++) n += story_token(s, i, j) == unk_id;
    return n;
}

/* The first of line's white-space separated words that tok encodes with an
 * [UNK], into word (size); false when none does. */
static bool unknown_in_line(const Tokenizer *tok, char *line, IntVec *ids, char *word, size_t size) {
    for (char *w = strtok(line, " \t\r\n"); w; w = strtok(NULL, " \t\r\n")) {
        size_t len = strlen(w);
        ids->len = 0;
        if (slm_utf8_validate(w, len, "word", NULL) || slm_tokenizer_encode(tok, w, len, ids, NULL)) continue;
        for (size_t i = 0; i < ids->len; i++)
            if (ids->data[i] == tok->unk_id) {
                snprintf(word, size, "%.*s", len > 60 ? 60 : (int)len, w);
                return true;
            }
    }
    return false;
}

/* A word of the file at path that tok turns into [UNK] (a part of it, at
 * least), into word (size); "" when none is found in its first 64 MiB. */
static void find_unknown_word(const Tokenizer *tok, const char *path, char *word, size_t size) {
    word[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0, read = 0;
    ssize_t n;
    IntVec ids = {0};
    while (read < EXAMPLE_SCAN_BYTES && (n = getline(&line, &cap, f)) > 0) {
        read += (size_t)n;
        if (unknown_in_line(tok, line, &ids, word, size)) break;
    }
    free(ids.data);
    free(line);
    fclose(f);
}

int slm_stories_check_unknown(const Stories *s, const Tokenizer *tok, const char *path, const char *vocab_path,
                              const char *accept_flag, Error *e) {
    size_t unk = slm_stories_count_unknown(s, tok->unk_id);
    if (s->n_tokens == 0 || (double)unk <= STORIES_MAX_UNKNOWN_SHARE * (double)s->n_tokens) return 0;
    char word[64], example[96] = "";
    find_unknown_word(tok, path, word, sizeof word);
    if (word[0]) snprintf(example, sizeof example, " (\"%s\", for one)", word);
    char hint[512];
    snprintf(hint, sizeof hint,
             "learn one from these stories: storylm train '%.100s' --vocab stories-vocab.txt (a vocabulary file not "
             "there yet is learnt and written), or move '%.100s' away; %s trains with it anyway",
             path, vocab_path, accept_flag);
    return FAIL(e, hint,
                "the vocabulary '%s' does not fit '%s': %.1f%% of its tokens are [UNK] (%zu of %zu; more than %g%% "
                "is refused), words it cannot spell%s",
                vocab_path, path, 100.0 * (double)unk / (double)s->n_tokens, unk, s->n_tokens,
                100 * STORIES_MAX_UNKNOWN_SHARE, example);
}

int slm_stories_check_skips(const StorySkips *k, int n_kept, const char *path, const char *accept_flag, Error *e) {
    char encoding[600], hint[256];
    if (!slm_stories_encoding_hint(k, n_kept, path, encoding, sizeof encoding)) return 0;
    snprintf(hint, sizeof hint, "train on the converted file; %s trains on the %d stories that are UTF-8", accept_flag,
             n_kept);
    return FAIL(e, hint, "%s", encoding);
}
