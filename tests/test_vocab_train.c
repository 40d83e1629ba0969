/* The WordPiece vocabulary trainer: merges worked by hand, ties, the alphabet
 * when it does not fit, agreement with a slow trainer that recounts every pair
 * after every merge, determinism and coverage of every character seen. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/fileio.h"
#include "storylm/stories.h"
#include "storylm/text.h"
#include "storylm/vocab_train.h"

static WordCount wc(const char *word, int64_t count) { return (WordCount){word, strlen(word), count}; }

/* 1 when v holds exactly the pieces of want, in order. */
static int vocab_is(const Vocab *v, const char *const *want, int n) {
    if (v->size != n) {
        fprintf(stderr, "  vocabulary has %d pieces, want %d\n", v->size, n);
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (strcmp(v->pieces[i], want[i]) != 0) {
            fprintf(stderr, "  piece %d is '%s', want '%s'\n", i, v->pieces[i], want[i]);
            return 0;
        }
    return 1;
}

static int has_piece(const Vocab *v, const char *piece, size_t len) {
    for (int i = 0; i < v->size; i++)
        if (strlen(v->pieces[i]) == len && memcmp(v->pieces[i], piece, len) == 0) return 1;
    return 0;
}

/* HuggingFace's own example, worked by hand. Words as pieces:
 *   h ##u ##g (10)  p ##u ##g (5)  p ##u ##n (12)  b ##u ##n (4)  h ##u ##g ##s (5)
 * pairs: (##u,##g) 20, (p,##u) 17, (##u,##n) 16, (h,##u) 15, (##g,##s) 5, (b,##u) 4.
 * 1. (##u,##g) 20 -> ##ug;  then (##u,##n) 16, (h,##ug) 15, (p,##u) 12, ...
 * 2. (##u,##n) 16 -> ##un;  then (h,##ug) 15, (p,##un) 12, (p,##ug) 5, (##ug,##s) 5, (b,##un) 4
 * 3. (h,##ug) 15 -> hug;    4. (p,##un) 12 -> pun
 * 5. a tie at 5: (hug,##s) and (p,##ug); "hug" sorts before "p" -> hugs
 * 6. (p,##ug) 5 -> pug;     7. (b,##un) 4 -> bun; then every word is one piece. */
static void test_merges_worked_by_hand(void) {
    WordCount words[] = {wc("hug", 10), wc("pug", 5), wc("pun", 12), wc("bun", 4), wc("hugs", 5)};
    const char *want[] = {"[UNK]", "[EOS]", "b",   "g",    "h",    "n",   "p",   "s",    "u",   "##g",
                          "##n",   "##s",   "##u", "##ug", "##un", "hug", "pun", "hugs", "pug", "bun"};
    Vocab v;
    VocabStats st;
    Error e = {0};
    CHECK(slm_vocab_train_from_counts(words, 5, 20, &v, &st, &e) == 0);
    CHECK(vocab_is(&v, want, 20));
    CHECK(st.n_alphabet_pieces == 11);
    CHECK(st.n_merges == 7);
    CHECK(st.last_merge_count == 4);
    CHECK(st.n_chars == 7 && st.n_chars_kept == 7);
    slm_vocab_free(&v);

    /* a smaller size stops after the first merges, in the same order */
    CHECK(slm_vocab_train_from_counts(words, 5, 17, &v, &st, &e) == 0);
    CHECK(vocab_is(&v, want, 17));
    CHECK(st.last_merge_count == 12);
    slm_vocab_free(&v);

    /* the order the words come in changes nothing */
    WordCount shuffled[] = {words[4], words[2], words[0], words[3], words[1]};
    CHECK(slm_vocab_train_from_counts(shuffled, 5, 20, &v, NULL, &e) == 0);
    CHECK(vocab_is(&v, want, 20));
    slm_vocab_free(&v);

    /* one more than the words can give: an error saying how many they can */
    CHECK(slm_vocab_train_from_counts(words, 5, 21, &v, NULL, &e) == -1);
    CHECK(strstr(e.message, "only 20 pieces") != NULL);
    CHECK(strstr(e.hint, "at most 20") != NULL);
    CHECK(v.size == 0 && v.pieces == NULL);
}

/* A merge that makes a piece already there adds no entry (as HuggingFace's
 * trainer). Only '#' can do it: "##a" as a word is # ### ##a; (#,###) -> "##",
 * then (##,##a) -> "##a", the continuation piece of 'a', already there. */
static void test_existing_piece_not_added_twice(void) {
    WordCount words[] = {wc("##a", 3), wc("ba", 1)};
    const char *want[] = {"[UNK]", "[EOS]", "#", "a", "b", "###", "##a", "##", "ba"};
    Vocab v;
    VocabStats st;
    Error e = {0};
    CHECK(slm_vocab_train_from_counts(words, 2, 9, &v, &st, &e) == 0);
    CHECK(vocab_is(&v, want, 9));
    CHECK(st.n_merges == 3 && st.n_merges_existing == 1);
    slm_vocab_free(&v);
    CHECK(slm_vocab_train_from_counts(words, 2, 10, &v, &st, &e) == -1);
    CHECK(strstr(e.message, "only 9 pieces") != NULL);
}

/* When the characters need more room than size - 2, the most frequent that
 * fit are kept; words with a character left out are left out too. */
static void test_alphabet_larger_than_size(void) {
    /* a: 5 (first only: "a"), b: 5 ("b", "##b"), c: 1 ("c"), d: 1 ("d", "##d") */
    WordCount words[] = {wc("ab", 5), wc("cd", 1)};
    Vocab v;
    VocabStats st;
    Error e = {0};
    const char *want5[] = {"[UNK]", "[EOS]", "a", "b", "##b"};
    CHECK(slm_vocab_train_from_counts(words, 2, 5, &v, &st, &e) == 0);
    CHECK(vocab_is(&v, want5, 5));
    CHECK(st.n_chars == 4 && st.n_chars_kept == 2);
    CHECK(st.n_char_tokens == 12 && st.n_char_tokens_dropped == 2);
    CHECK(st.n_words_dropped == 1 && st.n_merges == 0);
    slm_vocab_free(&v);

    /* one more place: c (1 piece) fits, d (2 pieces) still does not */
    const char *want6[] = {"[UNK]", "[EOS]", "a", "b", "c", "##b"};
    CHECK(slm_vocab_train_from_counts(words, 2, 6, &v, &st, &e) == 0);
    CHECK(vocab_is(&v, want6, 6));
    CHECK(st.n_chars_kept == 3 && st.n_words_dropped == 1);
    slm_vocab_free(&v);

    /* 7: still no room for d, so "cd" stays out and (a,##b) is the only merge */
    const char *want7[] = {"[UNK]", "[EOS]", "a", "b", "c", "##b", "ab"};
    CHECK(slm_vocab_train_from_counts(words, 2, 7, &v, &st, &e) == 0);
    CHECK(vocab_is(&v, want7, 7));
    slm_vocab_free(&v);

    /* 3: room for one piece: the most frequent character that needs one */
    const char *want3[] = {"[UNK]", "[EOS]", "a"};
    CHECK(slm_vocab_train_from_counts(words, 2, 3, &v, &st, &e) == 0);
    CHECK(vocab_is(&v, want3, 3));
    slm_vocab_free(&v);
}

/* Words over 100 characters are [UNK] in encoding, so training skips them. */
static void test_long_words_left_out(void) {
    char long_word[102], longest[101];
    memset(long_word, 'x', 101);
    long_word[101] = '\0';
    memset(longest, 'y', 100);
    longest[100] = '\0';
    WordCount words[] = {wc(long_word, 1000), wc(longest, 1), wc("ab", 2)};
    Vocab v;
    VocabStats st;
    Error e = {0};
    CHECK(slm_vocab_train_from_counts(words, 3, 7, &v, &st, &e) == 0);
    CHECK(st.n_long_words == 1);
    CHECK(!has_piece(&v, "x", 1) && !has_piece(&v, "##x", 3));
    CHECK(has_piece(&v, "y", 1) && has_piece(&v, "##y", 3));
    slm_vocab_free(&v);
}

static void test_bad_arguments(void) {
    WordCount words[] = {wc("ab", 2)};
    Vocab v;
    Error e = {0};
    CHECK(slm_vocab_train_from_counts(words, 1, 0, &v, NULL, &e) == -1);
    CHECK(strstr(e.message, "size 0") != NULL);
    CHECK(slm_vocab_train_from_counts(words, 1, VOCAB_MAX_SIZE + 1, &v, NULL, &e) == -1);
    WordCount spaced[] = {wc("a b", 2)};
    CHECK(slm_vocab_train_from_counts(spaced, 1, 5, &v, NULL, &e) == -1);
    CHECK(strstr(e.message, "white space") != NULL);
    WordCount zero[] = {wc("ab", 0)};
    CHECK(slm_vocab_train_from_counts(zero, 1, 5, &v, NULL, &e) == -1);
    CHECK(slm_vocab_train_from_counts(NULL, 0, 5, &v, NULL, &e) == -1);
    CHECK(strstr(e.message, "only 2 pieces") != NULL);
    WordCount broken[] = {{"a\xff", 2, 3}};
    CHECK(slm_vocab_train_from_counts(broken, 1, 5, &v, NULL, &e) == -1);
    CHECK(strstr(e.message, "UTF-8") != NULL);
}

/* ---- a slow trainer to compare with: every pair recounted after every merge ---- */

#define SLOW_MAX 512

typedef struct Slow {
    char *pieces[SLOW_MAX];
    int n;
    int *symbols[64]; /* each word's pieces */
    int len[64];
    int64_t count[64];
    int n_words;
    int64_t *pairs; /* SLOW_MAX x SLOW_MAX counts */
} Slow;

static int slow_id(Slow *s, const char *piece) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->pieces[i], piece) == 0) return i;
    s->pieces[s->n] = strdup(piece);
    return s->n++;
}

/* Alphabet of lower-case ASCII words: "c" for each letter seen, then "##c" for those seen inside. */
static void slow_init(Slow *s, const WordCount *w, int n) {
    int first[256] = {0}, inner[256] = {0};
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < w[i].len; k++) (k ? inner : first)[(unsigned char)w[i].word[k]] = 1;
    slow_id(s, "[UNK]");
    slow_id(s, "[EOS]");
    char piece[4] = "##";
    for (int c = 0; c < 256; c++)
        if (first[c] || inner[c]) slow_id(s, (char[]){(char)c, 0});
    for (int c = 0; c < 256; c++)
        if (inner[c]) piece[2] = (char)c, slow_id(s, piece);
    for (int i = 0; i < n; i++) {
        s->symbols[i] = malloc(w[i].len * sizeof(int));
        for (size_t k = 0; k < w[i].len; k++) {
            char one[4] = {'#', '#', w[i].word[k], 0};
            s->symbols[i][k] = slow_id(s, k ? one : one + 2);
        }
        s->len[i] = (int)w[i].len;
        s->count[i] = w[i].count;
    }
    s->n_words = n;
}

/* One merge; 0 when no pair is left. */
static int slow_merge(Slow *s) {
    memset(s->pairs, 0, sizeof(int64_t) * SLOW_MAX * SLOW_MAX);
    for (int i = 0; i < s->n_words; i++)
        for (int k = 0; k + 1 < s->len[i]; k++)
            s->pairs[s->symbols[i][k] * SLOW_MAX + s->symbols[i][k + 1]] += s->count[i];
    int best_a = -1, best_b = -1;
    for (int a = 0; a < s->n; a++)
        for (int b = 0; b < s->n; b++) {
            int64_t c = s->pairs[a * SLOW_MAX + b];
            if (c == 0) continue;
            int64_t best = best_a < 0 ? 0 : s->pairs[best_a * SLOW_MAX + best_b];
            int order = best_a < 0 ? -1 : strcmp(s->pieces[a], s->pieces[best_a]);
            if (order == 0) order = strcmp(s->pieces[b], s->pieces[best_b]);
            if (c > best || (c == best && order < 0)) best_a = a, best_b = b;
        }
    if (best_a < 0) return 0;
    char merged[256];
    const char *tail = s->pieces[best_b];
    snprintf(merged, sizeof merged, "%s%s", s->pieces[best_a], strncmp(tail, "##", 2) == 0 ? tail + 2 : tail);
    int id = slow_id(s, merged);
    for (int i = 0; i < s->n_words; i++) {
        int out = 0;
        for (int k = 0; k < s->len[i]; out++) {
            int pair = k + 1 < s->len[i] && s->symbols[i][k] == best_a && s->symbols[i][k + 1] == best_b;
            s->symbols[i][out] = pair ? id : s->symbols[i][k];
            k += pair ? 2 : 1;
        }
        s->len[i] = out;
    }
    return 1;
}

static void slow_free(Slow *s) {
    for (int i = 0; i < s->n; i++) free(s->pieces[i]);
    for (int i = 0; i < s->n_words; i++) free(s->symbols[i]);
}

/* Invented words over a few letters (many repeats such as "aaa", so merges
 * overlap and counts tie), from a fixed seed. */
static int invented_words(uint64_t seed, char store[][9], WordCount *w, int max) {
    int n = 0;
    for (int tries = 0; n < max && tries < 1000; tries++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int len = 1 + (int)((seed >> 33) % 8);
        for (int k = 0; k < len; k++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            store[n][k] = (char)('a' + (seed >> 35) % 4);
        }
        store[n][len] = '\0';
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= strcmp(store[i], store[n]) == 0;
        if (seen) continue;
        w[n] = (WordCount){store[n], (size_t)len, 1 + (int64_t)((seed >> 40) % 6)};
        n++;
    }
    return n;
}

static void test_same_as_recounting_every_pair(void) {
    Slow *s = calloc(1, sizeof *s);
    s->pairs = malloc(sizeof(int64_t) * SLOW_MAX * SLOW_MAX);
    for (uint64_t seed = 1; seed <= 6; seed++) {
        char store[64][9];
        WordCount words[64];
        int n = invented_words(seed, store, words, 40 + 4 * (int)seed);
        slow_init(s, words, n);
        while (s->n < SLOW_MAX - 1 && slow_merge(s)) {}
        /* the fast trainer at the largest size the words allow, and one more */
        Vocab v;
        Error e = {0};
        int ok = slm_vocab_train_from_counts(words, (size_t)n, s->n, &v, NULL, &e) == 0;
        CHECK(ok);
        if (ok) {
            CHECK(vocab_is(&v, (const char *const *)s->pieces, s->n));
            slm_vocab_free(&v);
        }
        CHECK(slm_vocab_train_from_counts(words, (size_t)n, s->n + 1, &v, NULL, &e) == -1);
        slow_free(s);
        memset(s->pieces, 0, sizeof s->pieces);
        s->n = s->n_words = 0;
    }
    free(s->pairs);
    free(s);
}

/* ---- from stories text (the real normaliser and pre-tokenizer) ---- */

static const char *invented_stories =
    "Pip the otter found a shiny shell by the river. \"Look!\" said Pip. His friend Zoë the heron\n"
    "looked down and smiled. \"It is pretty,\" she said. They played until the sun went down.\n"
    "<|endoftext|>\n"
    "Once upon a time, a small robot named Bolt lived in a café on a hill. Bolt liked to count:\n"
    "1, 2, 3... up to 42! Every day Bolt swept the floor and hummed a happy song.\n"
    "One day a girl called Mira came in. \"Can you count to 100?\" she asked. Bolt tried and tried.\n"
    "<|endoftext|>\n"
    "Tom had a red kite. The wind took the kite up, up, up into the sky. Tom ran and ran.\n"
    "Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaah "
    "went the wind, and the kite came down in a tree. Tom was sad, but his dad got it back.\n"
    "<|endoftext|>\n";

typedef struct Coverage {
    char **sorted; /* the vocabulary's pieces, sorted, to look up fast */
    int size;
    int words, missing, long_words;
} Coverage;

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static int covered(const Coverage *c, const char *piece) {
    return bsearch(&piece, c->sorted, (size_t)c->size, sizeof(char *), cmp_str) != NULL;
}

/* Each word's first character must be a piece, and every other one a "##" piece. */
static int check_word_covered(const char *word, size_t len, void *ctx) {
    Coverage *c = ctx;
    size_t chars = 0;
    for (size_t k = 0; k < len; k++) chars += ((unsigned char)word[k] & 0xC0) != 0x80;
    c->words++;
    if (chars > 100) {
        c->long_words++;
        return 0;
    }
    for (size_t k = 0; k < len;) {
        size_t n = 1;
        while (k + n < len && ((unsigned char)word[k + n] & 0xC0) == 0x80) n++;
        char piece[16] = "##";
        memcpy(piece + 2, word + k, n);
        piece[n + 2] = '\0';
        int ok = covered(c, k == 0 ? piece + 2 : piece);
        if (!ok) fprintf(stderr, "  no piece for '%.*s' in '%.*s'\n", (int)n, word + k, (int)len, word);
        c->missing += !ok;
        k += n;
    }
    return 0;
}

/* Checks every word of every story of text; returns the words seen and how many were over-long. */
static void check_coverage(const Vocab *v, const char *text, size_t len, int *n_words, int *n_long) {
    Error e = {0};
    ByteVec norm = {0};
    Pretokenizer p = {0};
    Coverage c = {malloc((size_t)v->size * sizeof(char *)), v->size, 0, 0, 0};
    memcpy(c.sorted, v->pieces, (size_t)v->size * sizeof(char *));
    qsort(c.sorted, (size_t)v->size, sizeof(char *), cmp_str);
    StorySpan *spans = NULL;
    int n = 0;
    StorySkips skips;
    CHECK(slm_stories_split(text, len, "stories", &spans, &n, &skips, &e) == 0);
    CHECK(slm_pretokenizer_init(&p, &e) == 0);
    for (int i = 0; i < n; i++) {
        norm.len = 0;
        CHECK(slm_text_normalize(text + spans[i].offset, spans[i].len, &norm, &e) == 0);
        CHECK(slm_pretokenize(&p, norm.data, norm.len, check_word_covered, &c, &e) == 0);
    }
    CHECK(c.words > 0);
    CHECK(c.missing == 0);
    *n_words = c.words;
    *n_long = c.long_words;
    free(c.sorted);
    free(spans);
    slm_pretokenizer_free(&p);
    slm_bytevec_free(&norm);
}

static int count_lines(const char *text, size_t len) {
    int n = 0;
    for (size_t i = 0; i < len; i++) n += text[i] == '\n';
    return n;
}

static void test_stories_text(void) {
    size_t len = strlen(invented_stories);
    Vocab a, b;
    VocabStats st;
    Error e = {0};
    CHECK(slm_vocab_train_text(invented_stories, len, "invented", 160, &a, &st, &e) == 0);
    CHECK(slm_vocab_train_text(invented_stories, len, "invented", 160, &b, NULL, &e) == 0);
    CHECK(st.n_stories == 3);
    CHECK(st.n_long_words == 1);
    size_t la, lb;
    char *ta = slm_vocab_to_text(&a, &la, &e), *tb = slm_vocab_to_text(&b, &lb, &e);
    CHECK(la == lb && memcmp(ta, tb, la) == 0); /* deterministic, byte for byte */
    CHECK(count_lines(ta, la) == 160 && ta[la - 1] == '\n');
    CHECK(strcmp(a.pieces[0], "[UNK]") == 0 && strcmp(a.pieces[1], "[EOS]") == 0);
    for (int i = 2; i < a.size; i++) CHECK(strpbrk(a.pieces[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == NULL);
    CHECK(has_piece(&a, "o", 1) && has_piece(&a, "##e", 3)); /* ë lost its accent, é too */
    CHECK(!has_piece(&a, "##ë", strlen("##ë")));
    CHECK(!has_piece(&a, "<", 1)); /* the separator lines are not text */
    int n_words, n_long;
    check_coverage(&a, invented_stories, len, &n_words, &n_long);
    CHECK(n_long == 1);
    CHECK(st.n_word_tokens == n_words); /* the separators are not words */

    /* written to disk atomically, exactly as slm_vocab_to_text */
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab_train_test.txt", check_tmpdir());
    CHECK(slm_vocab_save(&a, path, &e) == 0);
    char *saved;
    size_t ls;
    CHECK(slm_file_read_all(path, 0, &saved, &ls, &e) == 0);
    CHECK(ls == la && memcmp(saved, ta, la) == 0);
    free(saved);
    free(ta);
    free(tb);
    slm_vocab_free(&a);
    slm_vocab_free(&b);

    /* too many pieces for three stories: an error naming the stories and the count */
    CHECK(slm_vocab_train_text(invented_stories, len, "invented", 2000, &a, NULL, &e) == -1);
    CHECK(strstr(e.message, "invented") != NULL && strstr(e.message, "only") != NULL);
    CHECK(slm_vocab_train_text("", 0, "empty.txt", 2000, &a, NULL, &e) == -1);
    CHECK(strstr(e.message, "empty.txt") != NULL);
}

/* A stop flag set: no vocabulary, the error says it stopped; never set: the
 * same vocabulary as without one. */
static void test_stop_flag(void) {
    size_t len = strlen(invented_stories);
    volatile sig_atomic_t stop = 1;
    Vocab v, plain;
    Error e = {0};
    CHECK(slm_vocab_train_text_until(invented_stories, len, "invented", 160, false, false, &stop, &v, NULL, &e) == -1);
    CHECK(strstr(e.message, "stopped") != NULL && v.size == 0 && v.pieces == NULL);
    stop = 0;
    CHECK(slm_vocab_train_text_until(invented_stories, len, "invented", 160, false, false, &stop, &v, NULL, &e) == 0);
    CHECK(slm_vocab_train_text(invented_stories, len, "invented", 160, &plain, NULL, &e) == 0);
    CHECK(v.size == plain.size);
    for (int i = 0; i < v.size && i < plain.size; i++) CHECK(strcmp(v.pieces[i], plain.pieces[i]) == 0);
    slm_vocab_free(&v);
    slm_vocab_free(&plain);
}

/* The real stories, when they are there: 2,000 pieces, every character covered. */
static void test_tinystories(void) {
    char *text = NULL;
    size_t len;
    Error e = {0};
    /* shared/ sits beside the project's root (or beside a folder of work trees) */
    char path[4096];
    snprintf(path, sizeof path, "%s", check_source_path("../shared/data/tinystories-train.txt"));
    if (slm_file_read_all(path, 0, &text, &len, &e) != 0) {
        snprintf(path, sizeof path, "%s", check_source_path("../../shared/data/tinystories-train.txt"));
    }
    if (!text && slm_file_read_all(path, 0, &text, &len, &e) != 0) {
        printf("SKIPPED the TinyStories check: %s\n", e.message);
        return;
    }
    Vocab v;
    VocabStats st;
    CHECK(slm_vocab_train_text(text, len, path, VOCAB_DEFAULT_SIZE, &v, &st, &e) == 0);
    CHECK(v.size == VOCAB_DEFAULT_SIZE);
    CHECK(st.n_stories > 5000 && st.n_chars_kept == st.n_chars);
    CHECK(has_piece(&v, "the", 3) && has_piece(&v, "lily", 4) && has_piece(&v, "said", 4));
    int n_words, n_long;
    check_coverage(&v, text, len, &n_words, &n_long);
    CHECK(st.n_word_tokens == n_words);
    printf("TinyStories: %d stories, %lld words, %d distinct, %d characters, %d merges\n", st.n_stories,
           (long long)st.n_word_tokens, st.n_words, st.n_chars, st.n_merges);
    slm_vocab_free(&v);
    free(text);
}

int main(void) {
    test_merges_worked_by_hand();
    test_existing_piece_not_added_twice();
    test_alphabet_larger_than_size();
    test_long_words_left_out();
    test_bad_arguments();
    test_same_as_recounting_every_pair();
    test_stories_text();
    test_stop_flag();
    test_tinystories();
    return check_report();
}
