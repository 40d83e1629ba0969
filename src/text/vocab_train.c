/* Learning the WordPiece vocabulary: see include/storylm/vocab_train.h.
 *
 * Words are counted first (one hash map per thread, added up), then the
 * merges run on the distinct words with incremental pair counts: a table of
 * pairs (count, the words they occur in) and a max-heap of (count, pair) whose
 * stale entries are refreshed when they reach the top, as HuggingFace's
 * BpeTrainer does. A merge only touches the words that hold its pair. */
#include "storylm/vocab_train.h"

#include <omp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "storylm/fileio.h"
#include "storylm/hashmap.h"
#include "storylm/text.h"
#include "storylm/tokenizer.h"
#include "storylm/vec.h"

#define CONTINUATION "##"

/* ---- a map from strings to 64-bit values, keys kept in one arena ---- */

typedef struct StrMap {
    ByteVec keys;       /* every key's bytes, each followed by NUL */
    size_t *key_at;     /* entry -> offset into keys */
    uint32_t *key_len;  /* entry -> length in bytes */
    uint64_t *key_hash; /* entry -> slm_hash64 of the key */
    int64_t *value;     /* entry -> value (a count, or a piece id) */
    size_t n, cap;
    HashMap index; /* key -> entry */
} StrMap;

static void strmap_free(StrMap *m) {
    slm_bytevec_free(&m->keys);
    free(m->key_at);
    free(m->key_len);
    free(m->key_hash);
    free(m->value);
    slm_hashmap_free(&m->index);
    *m = (StrMap){0};
}

static const char *strmap_key(const StrMap *m, size_t i) { return m->keys.data + m->key_at[i]; }

/* Index of the entry for key, or -1. */
static long strmap_find(const StrMap *m, const char *key, size_t len, uint64_t h) {
    int32_t i;
    for (HashProbe p = hashmap_probe(&m->index, h); (i = hashmap_next(&m->index, &p)) >= 0;)
        if (m->key_hash[i] == h && m->key_len[i] == len && memcmp(strmap_key(m, i), key, len) == 0) return i;
    return -1;
}

static int strmap_grow_entries(StrMap *m, Error *e) {
    size_t cap = m->cap ? 2 * m->cap : 1024;
    size_t *at = xrealloc(m->key_at, cap * sizeof *at, e);
    if (!at) return -1;
    m->key_at = at;
    uint32_t *len = xrealloc(m->key_len, cap * sizeof *len, e);
    if (!len) return -1;
    m->key_len = len;
    uint64_t *hash = xrealloc(m->key_hash, cap * sizeof *hash, e);
    if (!hash) return -1;
    m->key_hash = hash;
    int64_t *value = xrealloc(m->value, cap * sizeof *value, e);
    if (!value) return -1;
    m->value = value;
    m->cap = cap;
    return 0;
}

/* Adds delta to key's value (a new key starts at 0); returns the entry or -1. */
static long strmap_add(StrMap *m, const char *key, size_t len, uint64_t h, int64_t delta, Error *e) {
    long i = strmap_find(m, key, len, h);
    if (i >= 0) {
        m->value[i] += delta;
        return i;
    }
    if (m->n >= INT32_MAX - 1) return FAIL(e, "use a smaller input", "more than %d distinct words", INT32_MAX - 1);
    if (m->n == m->cap && strmap_grow_entries(m, e)) return -1;
    size_t at = m->keys.len;
    if (slm_bytevec_append(&m->keys, key, len, e) || slm_bytevec_append(&m->keys, "", 1, e)) return -1;
    i = (long)m->n++;
    m->key_at[i] = at;
    m->key_len[i] = (uint32_t)len;
    m->key_hash[i] = h;
    m->value[i] = delta;
    return slm_hashmap_add(&m->index, h, (int32_t)i, e) ? -1 : i;
}

/* ---- the alphabet: which characters get pieces ---- */

typedef struct Char {
    int32_t code;               /* Unicode code point */
    int64_t count;              /* occurrences, word counts included */
    int inner;                  /* seen after a word's first character: needs "##c" */
    int kept;                   /* in the alphabet */
    int32_t first_id, inner_id; /* its pieces' ids, or -1 */
} Char;

/* A word's characters, decoded; fails on invalid UTF-8, white space or control characters. */
static int decode_word(const WordCount *w, size_t index, int32_t *codes, int max_codes, int *n_codes, Error *e) {
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)w->word;
    size_t at = 0;
    int n = 0;
    while (at < w->len) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(p + at, (utf8proc_ssize_t)(w->len - at), &cp);
        if (k <= 0) return FAIL(e, "give normalised, pre-tokenized words", "word %zu is not valid UTF-8", index);
        if (cp <= ' ' || cp == 0x7f)
            return FAIL(e, "give normalised, pre-tokenized words",
                        "word %zu (\"%.*s\") holds white space or a control character", index,
                        (int)(w->len > 60 ? 60 : w->len), w->word);
        if (n < max_codes) codes[n] = cp;
        n++;
        at += (size_t)k;
    }
    *n_codes = n;
    return 0;
}

/* ---- the trainer's state ---- */

typedef struct Pair {
    int32_t a, b;  /* piece ids, a before b */
    int64_t count; /* occurrences, word counts included */
    IntVec words;  /* words that hold (or held) the pair; may list stale ones */
    int stamp;     /* merge number when last raised (to push it once) */
} Pair;

typedef struct HeapEntry {
    int64_t count; /* the pair's count when pushed; refreshed if stale */
    int32_t pair;
} HeapEntry;

typedef struct Trainer {
    int size;      /* pieces wanted */
    char **pieces; /* id -> piece; n_pieces of them */
    int n_pieces;
    StrMap piece_ids; /* piece -> id */
    /* the words being merged: word w's pieces are symbols[start[w] .. start[w] + len[w]) */
    int32_t *symbols;
    size_t *start;
    int *len;
    int64_t *count;
    int n_words;
    /* the pairs of adjacent pieces */
    Pair *pairs;
    int n_pairs, cap_pairs;
    HashMap pair_index; /* (a, b) -> pair */
    HeapEntry *heap;
    size_t heap_n, heap_cap;
    IntVec raised; /* pairs whose count rose in the current merge */
    int merge_no;
    int n_special; /* [UNK], [EOS] and, in a cased vocabulary, [CASED] */
} Trainer;

static void trainer_free(Trainer *t) {
    for (int i = 0; i < t->n_pieces; i++) free(t->pieces[i]);
    free(t->pieces);
    strmap_free(&t->piece_ids);
    free(t->symbols);
    free(t->start);
    free(t->len);
    free(t->count);
    for (int i = 0; i < t->n_pairs; i++) slm_intvec_free(&t->pairs[i].words);
    free(t->pairs);
    slm_hashmap_free(&t->pair_index);
    free(t->heap);
    slm_intvec_free(&t->raised);
    *t = (Trainer){0};
}

/* Appends a piece (copied) to the vocabulary; returns its id or -1. */
static int add_piece(Trainer *t, const char *piece, size_t len, Error *e) {
    char *copy = xmalloc(len + 1, e);
    if (!copy) return -1;
    memcpy(copy, piece, len);
    copy[len] = '\0';
    int id = t->n_pieces;
    if (strmap_add(&t->piece_ids, piece, len, slm_hash64(piece, len, 0), id, e) < 0) {
        free(copy);
        return -1;
    }
    t->pieces[t->n_pieces++] = copy;
    return id;
}

/* ---- the heap of pairs: most frequent first, ties by the pieces' bytes ---- */

/* 1 when x should be merged before y. */
static int heap_before(const Trainer *t, HeapEntry x, HeapEntry y) {
    if (x.count != y.count) return x.count > y.count;
    const Pair *p = &t->pairs[x.pair], *q = &t->pairs[y.pair];
    int c = strcmp(t->pieces[p->a], t->pieces[q->a]);
    if (c == 0) c = strcmp(t->pieces[p->b], t->pieces[q->b]);
    return c < 0;
}

static int heap_push(Trainer *t, int32_t pair, Error *e) {
    if (t->heap_n == t->heap_cap) {
        size_t cap = t->heap_cap ? 2 * t->heap_cap : 4096;
        HeapEntry *h = xrealloc(t->heap, cap * sizeof *h, e);
        if (!h) return -1;
        t->heap = h;
        t->heap_cap = cap;
    }
    HeapEntry x = {t->pairs[pair].count, pair};
    size_t i = t->heap_n++;
    while (i > 0 && heap_before(t, x, t->heap[(i - 1) / 2])) {
        t->heap[i] = t->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    t->heap[i] = x;
    return 0;
}

static HeapEntry heap_pop(Trainer *t) {
    HeapEntry top = t->heap[0], x = t->heap[--t->heap_n];
    size_t i = 0, n = t->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_before(t, t->heap[c + 1], t->heap[c])) c++;
        if (!heap_before(t, t->heap[c], x)) break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n) t->heap[i] = x;
    return top;
}

/* The pair to merge next (highest count, ties by bytes), or -1 when none is left.
 * Entries only ever overstate a count (a rise pushes a fresh entry), so an
 * entry that still matches its pair's count at the top is the true best. */
static int next_pair(Trainer *t, Error *e) {
    while (t->heap_n > 0) {
        HeapEntry top = heap_pop(t);
        int64_t now = t->pairs[top.pair].count;
        if (now == top.count && now > 0) return top.pair;
        if (now > 0 && heap_push(t, top.pair, e)) return -2;
    }
    return -1;
}

/* ---- the pair table ---- */

static uint64_t pair_hash(int32_t a, int32_t b) {
    uint64_t k = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) * 0x9E3779B97F4A7C15ULL;
    return k ^ (k >> 29);
}

/* Index of pair (a, b), added with count 0 when new; -1 on error. */
static int pair_index(Trainer *t, int32_t a, int32_t b, Error *e) {
    uint64_t h = pair_hash(a, b);
    int32_t i;
    for (HashProbe probe = hashmap_probe(&t->pair_index, h); (i = hashmap_next(&t->pair_index, &probe)) >= 0;)
        if (t->pairs[i].a == a && t->pairs[i].b == b) return i;
    if (t->n_pairs == t->cap_pairs) {
        int cap = t->cap_pairs ? 2 * t->cap_pairs : 4096;
        Pair *pairs = xrealloc(t->pairs, (size_t)cap * sizeof *pairs, e);
        if (!pairs) return -1;
        t->pairs = pairs;
        t->cap_pairs = cap;
    }
    if (slm_hashmap_add(&t->pair_index, h, t->n_pairs, e)) return -1;
    t->pairs[t->n_pairs] = (Pair){.a = a, .b = b, .stamp = -1};
    return t->n_pairs++;
}

/* Adds delta occurrences of (a, b) in word w. A rise records w with the pair
 * and marks the pair to be pushed on the heap after the merge. */
static int change_pair(Trainer *t, int32_t a, int32_t b, int64_t delta, int w, Error *e) {
    int i = pair_index(t, a, b, e);
    if (i < 0) return -1;
    Pair *p = &t->pairs[i];
    p->count += delta;
    if (delta <= 0) return 0;
    if ((p->words.len == 0 || p->words.data[p->words.len - 1] != w) && slm_intvec_push(&p->words, w, e)) return -1;
    if (p->stamp != t->merge_no) {
        p->stamp = t->merge_no;
        if (slm_intvec_push(&t->raised, i, e)) return -1;
    }
    return 0;
}

/* ---- merging ---- */

/* Replaces every (a, b) in word w, left to right, by merged, and moves the
 * counts: (a, b) itself goes, (prev, a) -> (prev, merged) and (b, next) ->
 * (merged, next), so the pair table stays exact. Symbols are rewritten in place. */
static int merge_word(Trainer *t, int w, int32_t a, int32_t b, int32_t merged, Error *e) {
    int32_t *s = t->symbols + t->start[w];
    int n = t->len[w], out = 0;
    int64_t c = t->count[w];
    for (int i = 0; i < n;) {
        if (i + 1 < n && s[i] == a && s[i + 1] == b) {
            if (change_pair(t, a, b, -c, w, e)) return -1;
            if (out > 0 && (change_pair(t, s[out - 1], a, -c, w, e) || change_pair(t, s[out - 1], merged, c, w, e)))
                return -1;
            if (i + 2 < n && (change_pair(t, b, s[i + 2], -c, w, e) || change_pair(t, merged, s[i + 2], c, w, e)))
                return -1;
            s[out++] = merged;
            i += 2;
        } else {
            s[out++] = s[i++];
        }
    }
    t->len[w] = out;
    return 0;
}

/* The piece a pair makes: a + b without b's "##" ("th" + "##e" -> "the"). */
static int merged_piece(const Trainer *t, int32_t a, int32_t b, ByteVec *out, Error *e) {
    const char *pa = t->pieces[a], *pb = t->pieces[b];
    size_t n = strlen(CONTINUATION);
    if (strncmp(pb, CONTINUATION, n) == 0) pb += n;
    out->len = 0;
    return slm_bytevec_append(out, pa, strlen(pa), e) || slm_bytevec_append(out, pb, strlen(pb), e) ? -1 : 0;
}

/* Merges the pair everywhere; a new piece joins the vocabulary, an existing one
 * (reached before by other merges) is reused, as HuggingFace's trainer does. */
static int merge_pair(Trainer *t, int pair, ByteVec *buf, VocabStats *st, Error *e) {
    int32_t a = t->pairs[pair].a, b = t->pairs[pair].b;
    int64_t count = t->pairs[pair].count;
    if (merged_piece(t, a, b, buf, e)) return -1;
    long found = strmap_find(&t->piece_ids, buf->data, buf->len, slm_hash64(buf->data, buf->len, 0));
    int32_t merged = found >= 0 ? (int32_t)t->piece_ids.value[found] : add_piece(t, buf->data, buf->len, e);
    if (merged < 0) return -1;
    IntVec words = t->pairs[pair].words; /* taken: the pair table may move while merging */
    t->pairs[pair].words = (IntVec){0};
    t->merge_no++;
    t->raised.len = 0;
    int rc = 0;
    for (size_t i = 0; i < words.len && !rc; i++) rc = merge_word(t, words.data[i], a, b, merged, e);
    slm_intvec_free(&words);
    for (size_t i = 0; i < t->raised.len && !rc; i++)
        if (t->pairs[t->raised.data[i]].count > 0) rc = heap_push(t, t->raised.data[i], e);
    st->n_merges++;
    st->n_merges_existing += found >= 0;
    st->last_merge_count = count;
    return rc;
}

/* ---- setting up: alphabet, words as pieces, first pair counts ---- */

static int cmp_code(const void *x, const void *y) {
    const Char *a = x, *b = y;
    return (a->code > b->code) - (a->code < b->code);
}

static int cmp_frequent(const void *x, const void *y) {
    const Char *a = x, *b = y;
    if (a->count != b->count) return a->count < b->count ? 1 : -1;
    return (a->code > b->code) - (a->code < b->code);
}

static long char_find(const Char *chars, int n, int32_t code) {
    if (n == 0) return -1;
    const Char key = {.code = code};
    const Char *c = bsearch(&key, chars, (size_t)n, sizeof *chars, cmp_code);
    return c ? c - chars : -1;
}

/* Marks the characters kept: all of them when they fit in the size pieces
 * left after the special ones, else the most frequent that fit ("c", plus
 * "##c" when seen inside words). chars comes in and leaves sorted by code point. */
static int keep_characters(Char *chars, int n, int size, VocabStats *st) {
    int budget = size, need = 0;
    if (n == 0) return 0;
    for (int i = 0; i < n; i++) need += 1 + chars[i].inner;
    qsort(chars, (size_t)n, sizeof *chars, cmp_frequent);
    for (int i = 0; i < n; i++) {
        int cost = 1 + chars[i].inner;
        chars[i].kept = need <= budget || cost <= budget;
        if (need > budget && cost <= budget) budget -= cost;
        if (!chars[i].kept) st->n_char_tokens_dropped += chars[i].count;
        st->n_chars_kept += chars[i].kept;
    }
    qsort(chars, (size_t)n, sizeof *chars, cmp_code);
    return 0;
}

/* Index of code in chars (through the map code -> index), added when new. */
static long char_index(Char **chars, int *n, int *cap, StrMap *index, int32_t code, Error *e) {
    const char *key = (const char *)&code;
    uint64_t h = slm_hash64(key, sizeof code, 0);
    long i = strmap_find(index, key, sizeof code, h);
    if (i >= 0) return (long)index->value[i];
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        Char *grown = xrealloc(*chars, (size_t)*cap * sizeof *grown, e);
        if (!grown) return -1;
        *chars = grown;
    }
    if (strmap_add(index, key, sizeof code, h, *n, e) < 0) return -1;
    (*chars)[*n] = (Char){.code = code, .first_id = -1, .inner_id = -1};
    return (*n)++;
}

/* Gathers the distinct characters of the words used (sorted by code point). */
static int count_characters(const WordCount *words, size_t n_words, const char *use, Char **out, int *n_out,
                            VocabStats *st, Error *e) {
    int32_t codes[TOKENIZER_MAX_WORD_CHARS];
    Char *chars = NULL;
    int n = 0, cap = 0, rc = 0;
    StrMap index = {0};
    for (size_t w = 0; w < n_words && !rc; w++) {
        int n_codes = 0;
        if (use[w]) rc = decode_word(&words[w], w, codes, TOKENIZER_MAX_WORD_CHARS, &n_codes, e);
        for (int k = 0; k < n_codes && !rc; k++) {
            long i = char_index(&chars, &n, &cap, &index, codes[k], e);
            if (i < 0)
                rc = -1;
            else {
                chars[i].count += words[w].count;
                chars[i].inner |= k > 0;
                st->n_char_tokens += words[w].count;
            }
        }
    }
    strmap_free(&index);
    if (rc) {
        free(chars);
        return -1;
    }
    if (n) qsort(chars, (size_t)n, sizeof *chars, cmp_code);
    *out = chars;
    *n_out = n;
    st->n_chars = n;
    return 0;
}

/* [UNK], [EOS] ([CASED] when cased), then "c" for each kept character, then
 * "##c" for those seen inside words. */
static int add_alphabet(Trainer *t, Char *chars, int n, VocabStats *st, Error *e) {
    if (add_piece(t, TOKEN_UNK_TEXT, strlen(TOKEN_UNK_TEXT), e) < 0) return -1;
    if (add_piece(t, TOKEN_EOS_TEXT, strlen(TOKEN_EOS_TEXT), e) < 0) return -1;
    if (t->n_special == 3 && add_piece(t, TOKEN_CASED_TEXT, strlen(TOKEN_CASED_TEXT), e) < 0) return -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            if (!chars[i].kept || (pass == 1 && !chars[i].inner)) continue;
            char piece[16] = CONTINUATION;
            size_t at = pass ? strlen(CONTINUATION) : 0;
            at += (size_t)utf8proc_encode_char(chars[i].code, (utf8proc_uint8_t *)piece + at);
            int id = add_piece(t, piece, at, e);
            if (id < 0) return -1;
            *(pass ? &chars[i].inner_id : &chars[i].first_id) = id;
        }
    }
    st->n_alphabet_pieces = t->n_pieces - t->n_special;
    return 0;
}

/* Word w as pieces: its first character's piece, then "##c" pieces; 0 when a
 * character is not in the alphabet (the word is left out). */
static int word_to_pieces(const WordCount *word, size_t index, const Char *chars, int n_chars, int32_t *out, int *n_out,
                          Error *e) {
    int32_t codes[TOKENIZER_MAX_WORD_CHARS];
    int n;
    if (decode_word(word, index, codes, TOKENIZER_MAX_WORD_CHARS, &n, e)) return -1;
    for (int k = 0; k < n; k++) {
        long i = char_find(chars, n_chars, codes[k]);
        if (i < 0 || !chars[i].kept) return 0;
        out[k] = k ? chars[i].inner_id : chars[i].first_id;
    }
    *n_out = n;
    return 1;
}

static int alloc_words(Trainer *t, size_t n_words, size_t n_symbols, Error *e) {
    t->symbols = xmalloc((n_symbols ? n_symbols : 1) * sizeof *t->symbols, e);
    t->start = t->symbols ? xmalloc(n_words * sizeof *t->start, e) : NULL;
    t->len = t->start ? xmalloc(n_words * sizeof *t->len, e) : NULL;
    t->count = t->len ? xmalloc(n_words * sizeof *t->count, e) : NULL;
    return t->count ? 0 : -1;
}

/* Lays the words out as pieces and counts their adjacent pairs. */
static int load_words(Trainer *t, const WordCount *words, size_t n_words, const char *use, const Char *chars,
                      int n_chars, VocabStats *st, Error *e) {
    size_t n_symbols = 0;
    for (size_t w = 0; w < n_words; w++)
        if (use[w]) n_symbols += words[w].len; /* bytes: at least the characters */
    if (alloc_words(t, n_words, n_symbols, e)) return -1;
    size_t at = 0;
    for (size_t w = 0; w < n_words; w++) {
        if (!use[w]) continue;
        int n, ok = word_to_pieces(&words[w], w, chars, n_chars, t->symbols + at, &n, e);
        if (ok < 0) return -1;
        if (!ok) {
            st->n_words_dropped++;
            continue;
        }
        int i = t->n_words++;
        t->start[i] = at;
        t->len[i] = n;
        t->count[i] = words[w].count;
        for (int k = 0; k + 1 < n; k++)
            if (change_pair(t, t->symbols[at + k], t->symbols[at + k + 1], words[w].count, i, e)) return -1;
        at += (size_t)n;
    }
    for (int p = 0; p < t->n_pairs; p++)
        if (heap_push(t, p, e)) return -1;
    return 0;
}

/* Which words take part: given properly, at most 100 characters. */
static int select_words(const WordCount *words, size_t n_words, char *use, VocabStats *st, Error *e) {
    for (size_t w = 0; w < n_words; w++) {
        if (!words[w].word || words[w].len == 0 || words[w].count <= 0)
            return FAIL(e, "give each word its text and a positive count", "word %zu is empty or has count %lld", w,
                        (long long)words[w].count);
        size_t chars = 0;
        for (size_t k = 0; k < words[w].len; k++) chars += ((unsigned char)words[w].word[k] & 0xC0) != 0x80;
        use[w] = chars <= TOKENIZER_MAX_WORD_CHARS;
        st->n_long_words += !use[w];
    }
    st->n_words = (int)n_words;
    return 0;
}

static int check_size(int size, bool cased, Error *e) {
    int least = VOCAB_MIN_SIZE + cased; /* [CASED] takes a place too */
    if (size < least || size > VOCAB_MAX_SIZE) {
        char hint[96];
        snprintf(hint, sizeof hint, "choose a size from %d to %d (storylm vocab --size N)", least, VOCAB_MAX_SIZE);
        return FAIL(e, hint, "vocabulary size %d is out of range (%d to %d)", size, least, VOCAB_MAX_SIZE);
    }
    return 0;
}

/* Sets up the alphabet and the words; the merges are left to the caller. */
static int trainer_init(Trainer *t, const WordCount *words, size_t n_words, int size, bool cased, VocabStats *st,
                        Error *e) {
    *t = (Trainer){.size = size, .merge_no = 0, .n_special = cased ? 3 : 2};
    t->pieces = xcalloc((size_t)size, sizeof *t->pieces, e);
    char *use = t->pieces ? xmalloc(n_words ? n_words : 1, e) : NULL;
    if (!use) return -1;
    Char *chars = NULL;
    int n_chars = 0;
    int rc = select_words(words, n_words, use, st, e) ||
             count_characters(words, n_words, use, &chars, &n_chars, st, e) ||
             keep_characters(chars, n_chars, size - t->n_special, st) || add_alphabet(t, chars, n_chars, st, e) ||
             load_words(t, words, n_words, use, chars, n_chars, st, e);
    free(chars);
    free(use);
    return rc ? -1 : 0;
}

static int too_few_pieces(const Trainer *t, const VocabStats *st, Error *e) {
    char hint[160];
    snprintf(hint, sizeof hint, "use a size of at most %d (storylm vocab --size %d), or give more stories", t->n_pieces,
             t->n_pieces);
    return FAIL(e, hint,
                "the words give only %d pieces (%d special, %d alphabet, %d merged), fewer than the %d wanted: "
                "every word is a single piece by then",
                t->n_pieces, t->n_special, st->n_alphabet_pieces, t->n_pieces - t->n_special - st->n_alphabet_pieces,
                t->size);
}

/* Hands the pieces over to v (the trainer keeps none of them). */
static void take_pieces(Trainer *t, Vocab *v) {
    v->size = t->n_pieces;
    v->pieces = t->pieces;
    t->pieces = NULL;
    t->n_pieces = 0;
}

/* The error of a run given up because *stop was set. */
static int stopped(Error *e) { return FAIL(e, "it was asked to stop", "stopped"); }

/* up_to: size is a ceiling; the words may give fewer pieces. stop may be NULL. */
static int train_from_counts(const WordCount *words, size_t n_words, int size, bool up_to, bool cased,
                             const volatile sig_atomic_t *stop, Vocab *v, VocabStats *st, Error *e) {
    *v = (Vocab){0};
    VocabStats local;
    if (!st) st = &local;
    *st = (VocabStats){0};
    if (check_size(size, cased, e)) return -1;
    Trainer t;
    int rc = trainer_init(&t, words, n_words, size, cased, st, e);
    ByteVec buf = {0};
    while (!rc && t.n_pieces < size) {
        if (stop && *stop) {
            rc = stopped(e);
            break;
        }
        int p = next_pair(&t, e);
        if (p == -1 && up_to) break;
        if (p == -1)
            rc = too_few_pieces(&t, st, e);
        else
            rc = p < 0 ? -1 : merge_pair(&t, p, &buf, st, e);
    }
    slm_bytevec_free(&buf);
    if (!rc) take_pieces(&t, v);
    trainer_free(&t);
    return rc;
}

int slm_vocab_train_from_counts(const WordCount *words, size_t n_words, int size, Vocab *v, VocabStats *st, Error *e) {
    return train_from_counts(words, n_words, size, false, false, NULL, v, st, e);
}

/* ---- counting the words of a stories file ---- */

typedef struct Counter {
    StrMap words;
    int64_t n_tokens;
    Error *e;
    const volatile sig_atomic_t *stop;
    bool cased; /* normalise as a cased vocabulary does */
} Counter;

static int count_word(const char *word, size_t len, void *ctx) {
    Counter *c = ctx;
    c->n_tokens++;
    return strmap_add(&c->words, word, len, slm_hash64(word, len, 0), 1, c->e) < 0 ? -1 : 0;
}

/* Normalises one story and counts its words into c. */
static int count_story(const char *story, size_t len, const Pretokenizer *pt, ByteVec *norm, Counter *c, Error *e) {
    norm->len = 0;
    if (c->cased ? slm_text_normalize_cased(story, len, norm, e) : slm_text_normalize(story, len, norm, e)) return -1;
    if (norm->len == 0) return 0;
    int rc = slm_pretokenize(pt, norm->data, norm->len, count_word, c, e);
    return rc ? -1 : 0;
}

/* One thread's share of the stories, counted into c (its own map and pretokenizer). */
static int count_share(const char *text, const StorySpan *spans, int n, Counter *c, Error *e) {
    Pretokenizer pt = {0};
    ByteVec norm = {0};
    int rc = slm_pretokenizer_init(&pt, e);
#pragma omp for schedule(dynamic, 32)
    for (int i = 0; i < n; i++)
        if (!rc)
            rc = c->stop && *c->stop ? stopped(e) : count_story(text + spans[i].offset, spans[i].len, &pt, &norm, c, e);
    slm_bytevec_free(&norm);
    if (pt.code) slm_pretokenizer_free(&pt);
    return rc;
}

/* Adds the counts of from into into. */
static int add_counts(StrMap *into, const StrMap *from, Error *e) {
    for (size_t i = 0; i < from->n; i++) {
        long at = strmap_add(into, strmap_key(from, i), from->key_len[i], from->key_hash[i], from->value[i], e);
        if (at < 0) return -1;
    }
    return 0;
}

/* Counts every story's words, one map per thread, added up in thread order. */
static int count_words(const char *text, const StorySpan *spans, int n, bool cased, const volatile sig_atomic_t *stop,
                       StrMap *words, int64_t *n_tokens, Error *e) {
    int n_threads = omp_get_max_threads();
    Counter *c = xcalloc((size_t)n_threads, sizeof *c, e);
    Error *errors = c ? xcalloc((size_t)n_threads, sizeof *errors, e) : NULL;
    int *failed = errors ? xcalloc((size_t)n_threads, sizeof *failed, e) : NULL;
    if (!failed) {
        free(c);
        free(errors);
        return -1;
    }
#pragma omp parallel num_threads(n_threads)
    {
        int id = omp_get_thread_num();
        c[id].e = &errors[id];
        c[id].stop = stop;
        c[id].cased = cased;
        failed[id] = count_share(text, spans, n, &c[id], &errors[id]);
    }
    int rc = 0;
    for (int i = 0; i < n_threads && !rc; i++)
        if (failed[i]) {
            if (e) *e = errors[i];
            rc = -1;
        }
    *n_tokens = 0;
    for (int i = 0; i < n_threads; i++) {
        if (!rc && (i == 0 ? 0 : add_counts(&c[0].words, &c[i].words, e))) rc = -1;
        *n_tokens += c[i].n_tokens;
        if (i > 0) strmap_free(&c[i].words);
    }
    *words = c[0].words;
    free(c);
    free(errors);
    free(failed);
    return rc;
}

static int cmp_word(const void *x, const void *y) {
    const WordCount *a = x, *b = y;
    int c = memcmp(a->word, b->word, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* The map's words as (word, count), sorted bytewise (views into the map). */
static WordCount *word_list(const StrMap *m, Error *e) {
    WordCount *list = xmalloc((m->n ? m->n : 1) * sizeof *list, e);
    if (!list) return NULL;
    for (size_t i = 0; i < m->n; i++) list[i] = (WordCount){strmap_key(m, i), m->key_len[i], m->value[i]};
    if (m->n) qsort(list, m->n, sizeof *list, cmp_word);
    return list;
}

int slm_vocab_train_text_until(const char *text, size_t len, const char *what, int size, bool up_to, bool cased,
                               const volatile sig_atomic_t *stop, Vocab *v, VocabStats *st, Error *e) {
    *v = (Vocab){0};
    VocabStats local;
    if (!st) st = &local;
    *st = (VocabStats){0};
    if (check_size(size, cased, e)) return -1;
    StorySpan *spans = NULL;
    int n = 0;
    if (slm_stories_split(text, len, what, &spans, &n, &st->skips, e)) return -1;
    st->n_stories = n;
    StrMap words = {0};
    int rc = count_words(text, spans, n, cased, stop, &words, &st->n_word_tokens, e);
    free(spans);
    WordCount *list = rc ? NULL : word_list(&words, e);
    VocabStats reading = *st;
    if (list)
        rc = train_from_counts(list, words.n, size, up_to, cased, stop, v, st, e);
    else
        rc = -1;
    st->n_stories = reading.n_stories;
    st->skips = reading.skips;
    st->n_word_tokens = reading.n_word_tokens;
    if (rc) slm_error_prefix(e, "learning a vocabulary from '%s': ", what);
    free(list);
    strmap_free(&words);
    return rc;
}

int slm_vocab_train_text(const char *text, size_t len, const char *what, int size, Vocab *v, VocabStats *st, Error *e) {
    return slm_vocab_train_text_until(text, len, what, size, false, false, NULL, v, st, e);
}

int slm_vocab_train_text_up_to(const char *text, size_t len, const char *what, int max_size, Vocab *v, VocabStats *st,
                               Error *e) {
    return slm_vocab_train_text_until(text, len, what, max_size, true, false, NULL, v, st, e);
}

/* ---- vocab.txt ---- */

char *slm_vocab_to_text(const Vocab *v, size_t *len, Error *e) {
    ByteVec out = {0};
    for (int i = 0; i < v->size; i++)
        if (slm_bytevec_append(&out, v->pieces[i], strlen(v->pieces[i]), e) || slm_bytevec_append(&out, "\n", 1, e)) {
            slm_bytevec_free(&out);
            return NULL;
        }
    *len = out.len;
    return out.data ? out.data : xcalloc(1, 1, e);
}

int slm_vocab_save(const Vocab *v, const char *path, Error *e) {
    size_t len;
    char *text = slm_vocab_to_text(v, &len, e);
    if (!text) return -1;
    int rc = slm_file_write_atomic(path, text, len, e);
    free(text);
    return rc;
}

void slm_vocab_free(Vocab *v) {
    for (int i = 0; i < v->size; i++) free(v->pieces[i]);
    free(v->pieces);
    *v = (Vocab){0};
}
