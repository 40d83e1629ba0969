/* Names and heroes: which words are names (learnt from the capitals of the
 * training text), a story's hero and its mentions in token ids, and the
 * story with the hero renamed, and the names swapped in. The rule is in
 * include/storylm/names.h. */
#include <stdlib.h>
#include <string.h>

#include "storylm/fileio.h"
#include "storylm/names.h"

#define WORD_MAX 63

/* Capitalised words that are not names, though written like them. */
static const char *const not_names[] = {
    "i",       "mom",      "dad",      "mommy",       "daddy",       "mum",       "mummy",   "mama",     "papa",
    "grandma", "grandpa",  "granny",   "grandmother", "grandfather", "mr",        "mrs",     "ms",       "miss",
    "sir",     "god",      "monday",   "tuesday",     "wednesday",   "thursday",  "friday",  "saturday", "sunday",
    "january", "february", "march",    "april",       "may",         "june",      "july",    "august",   "september",
    "october", "november", "december", "christmas",   "easter",      "halloween", "english", "ok",       "okay"};

/* On the list, or its plural ("Saturdays"). */
static int is_not_name(const char *w) {
    size_t n = strlen(w);
    for (size_t i = 0; i < sizeof not_names / sizeof not_names[0]; i++) {
        size_t m = strlen(not_names[i]);
        if (strncmp(w, not_names[i], m) == 0 && (n == m || (n == m + 1 && w[m] == 's'))) return 1;
    }
    return 0;
}

/* ---- the word table ------------------------------------------------------------ */

void slm_names_free(NameList *nl) {
    for (size_t i = 0; i < nl->count; i++) free(nl->words[i]);
    free(nl->words);
    free(nl->total);
    free(nl->cap_mid);
    free(nl->lower);
    slm_hashmap_free(&nl->index);
    *nl = (NameList){0};
}

/* The entry of word, or -1. */
static long entry_of(const NameList *nl, const char *word, uint64_t h) {
    int32_t i;
    for (HashProbe p = hashmap_probe(&nl->index, h); (i = hashmap_next(&nl->index, &p)) >= 0;)
        if (strcmp(nl->words[i], word) == 0) return i;
    return -1;
}

static int grow_counts(int **counts, size_t cap, Error *e) {
    int *grown = xrealloc(*counts, cap * sizeof *grown, e);
    if (grown) *counts = grown;
    return grown ? 0 : -1;
}

/* Room for twice the entries, keeping every word and its counts. */
static int entries_grow(NameList *nl, Error *e) {
    size_t cap = nl->cap ? nl->cap * 2 : 2048;
    char **words = xrealloc(nl->words, cap * sizeof *words, e);
    if (!words) return -1;
    nl->words = words;
    if (grow_counts(&nl->total, cap, e) || grow_counts(&nl->cap_mid, cap, e) || grow_counts(&nl->lower, cap, e))
        return -1;
    nl->cap = cap;
    return 0;
}

/* The entry of word (lower-case), added with zero counts when new; -1 on error. */
static long entry_add(NameList *nl, const char *word, Error *e) {
    uint64_t h = slm_hash64(word, strlen(word), 0);
    long i = entry_of(nl, word, h);
    if (i >= 0) return i;
    if (nl->count == nl->cap && entries_grow(nl, e)) return -1;
    i = (long)nl->count;
    if (!(nl->words[i] = strdup(word))) return FAIL(e, NULL, "out of memory counting words");
    if (slm_hashmap_add(&nl->index, h, (int32_t)i, e)) return free(nl->words[i]), -1;
    nl->total[i] = nl->cap_mid[i] = nl->lower[i] = 0;
    nl->count++;
    return i;
}

/* Counts one word as written (ASCII letters, n of them). */
static int count_word(NameList *nl, const char *w, size_t n, int sentence_start, Error *e) {
    if (n > WORD_MAX) return 0;
    char low[WORD_MAX + 1];
    int title = w[0] >= 'A' && w[0] <= 'Z', all_lower = !title;
    for (size_t i = 0; i < n; i++) {
        int upper = w[i] >= 'A' && w[i] <= 'Z';
        if (i > 0 && upper) title = all_lower = 0;
        low[i] = (char)(upper ? w[i] - 'A' + 'a' : w[i]);
    }
    low[n] = '\0';
    long i = entry_add(nl, low, e);
    if (i < 0) return -1;
    nl->total[i]++;
    nl->cap_mid[i] += title && !sentence_start;
    nl->lower[i] += all_lower;
    return 0;
}

static int is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* After these a capital says nothing: a sentence (or a quotation) may start.
 * Bytes of non-ASCII characters (curly quotes) count too, to be safe. */
static int starts_sentence(char c) {
    return c == '.' || c == '!' || c == '?' || c == '"' || c == '\n' || c == ':' || (unsigned char)c >= 0x80;
}

static int learn_story(NameList *nl, const char *p, const char *end, Error *e) {
    int sentence_start = 1;
    while (p < end) {
        if (!is_letter(*p)) {
            if (starts_sentence(*p)) sentence_start = 1;
            p++;
            continue;
        }
        const char *q = p;
        while (q < end && is_letter(*q)) q++;
        if (count_word(nl, p, (size_t)(q - p), sentence_start, e)) return -1;
        sentence_start = 0;
        p = q;
    }
    return 0;
}

int slm_names_learn(NameList *nl, const char *text, const StorySpan *spans, int n_spans, const uint8_t *use, Error *e) {
    *nl = (NameList){0};
    for (int i = 0; i < n_spans; i++) {
        if (use && !use[i]) continue;
        if (learn_story(nl, text + spans[i].offset, text + spans[i].offset + spans[i].len, e)) {
            slm_names_free(nl);
            return -1;
        }
        nl->stories++;
    }
    return 0;
}

int slm_names_count(const NameList *nl, const char *word) {
    long i = entry_of(nl, word, slm_hash64(word, strlen(word), 0));
    return i >= 0 ? nl->total[i] : 0;
}

static int entry_is_name(const NameList *nl, size_t i) {
    const char *w = nl->words[i];
    return strlen(w) >= 2 && nl->cap_mid[i] >= 2 && nl->lower[i] * 10 <= nl->cap_mid[i] && !is_not_name(w);
}

int slm_names_is_name(const NameList *nl, const char *word) {
    long i = entry_of(nl, word, slm_hash64(word, strlen(word), 0));
    return i >= 0 && entry_is_name(nl, (size_t)i);
}

typedef struct NameCount {
    const char *word;
    int count;
} NameCount;

static int by_count_desc(const void *a, const void *b) {
    const NameCount *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
}

int slm_names_most_common(const NameList *nl, const char **out, int *counts, int max) {
    NameCount *all = malloc((nl->count + 1) * sizeof *all);
    if (!all) return 0;
    size_t n = 0;
    for (size_t i = 0; i < nl->count; i++)
        if (entry_is_name(nl, i)) all[n++] = (NameCount){nl->words[i], nl->total[i]};
    qsort(all, n, sizeof *all, by_count_desc);
    int k = 0;
    for (; k < max && (size_t)k < n; k++) {
        out[k] = all[k].word;
        if (counts) counts[k] = all[k].count;
    }
    free(all);
    return k;
}

/* ---- words and heroes in token ids --------------------------------------------- */

static int is_continuation(const Tokenizer *t, int32_t id) { return strncmp(t->pieces[id], "##", 2) == 0; }

int slm_word_at(const Tokenizer *t, const int32_t *ids, int len, int i, char *buf, size_t size) {
    if (i < 0 || i >= len || is_continuation(t, ids[i])) return 0;
    size_t used = 0;
    int n = 0;
    do {
        const char *piece = t->pieces[ids[i + n]] + (n ? 2 : 0);
        size_t pl = strlen(piece);
        if (used + pl + 1 > size) return 0;
        memcpy(buf + used, piece, pl);
        used += pl;
        n++;
    } while (i + n < len && is_continuation(t, ids[i + n]));
    buf[used] = '\0';
    return n;
}

int slm_find_word(const Tokenizer *t, const int32_t *ids, int len, const int32_t *pieces, int n, int *starts, int max) {
    int count = 0;
    for (int i = 0; i + n <= len; i++) {
        if (memcmp(ids + i, pieces, (size_t)n * sizeof(int32_t)) != 0) continue;
        if (i + n < len && is_continuation(t, ids[i + n])) continue; /* "lily" inside "lilypad" */
        if (count < max) starts[count] = i;
        count++;
        i += n - 1;
    }
    return count;
}

/* End of the first sentence: the first . ! or ? (or the story's end). */
static int first_sentence_end(const Tokenizer *t, const int32_t *ids, int len) {
    for (int i = 1; i < len; i++) {
        const char *p = t->pieces[ids[i]];
        if ((p[0] == '.' || p[0] == '!' || p[0] == '?') && p[1] == '\0') return i;
    }
    return len;
}

int slm_find_hero(const Tokenizer *t, const NameList *nl, const int32_t *ids, int len, Hero *hero) {
    int end = first_sentence_end(t, ids, len);
    char word[WORD_MAX + 1];
    for (int i = 0; i < end; i++) {
        int n = slm_word_at(t, ids, len, i, word, sizeof word);
        if (n == 0 || n > 16 || !slm_names_is_name(nl, word)) continue;
        int count = slm_find_word(t, ids, len, ids + i, n, hero->mentions, HERO_MAX_MENTIONS);
        if (count >= 2 && count <= HERO_MAX_MENTIONS) {
            snprintf(hero->word, sizeof hero->word, "%s", word);
            memcpy(hero->pieces, ids + i, (size_t)n * sizeof(int32_t));
            hero->n_pieces = n;
            hero->n_mentions = count;
            return 1;
        }
        i += n - 1;
    }
    return 0;
}

int slm_swap_hero(const int32_t *ids, int len, const Hero *hero, const int32_t *pieces, int n, IntVec *out,
                  int *new_starts, Error *e) {
    out->len = 0;
    if (slm_intvec_reserve(out, (size_t)len + (size_t)hero->n_mentions * (size_t)n, e)) return -1;
    int k = 0;
    for (int i = 0; i < len;) {
        if (k < hero->n_mentions && i == hero->mentions[k]) {
            new_starts[k++] = (int)out->len;
            for (int j = 0; j < n; j++) out->data[out->len++] = pieces[j];
            i += hero->n_pieces;
        } else {
            out->data[out->len++] = ids[i++];
        }
    }
    return 0;
}

/* ---- the names swapped in (Secrets 2 and 4, --swap-names) ---- */

const char *const slm_name_kind_names[4] = {"original", "common", "rare", "invented"};

/* Candidates for invented names: none is an English word; those the training
 * text holds, or that come out in fewer pieces than asked, are passed over. */
static const char *const invented_candidates[] = {"zarko",   "blimto",  "quenfrey", "vodrick", "plimzy", "grunthor",
                                                  "tazmin",  "dribbet", "yolvane",  "krespin", "zubnik", "flormax",
                                                  "wuzzlet", "trobkin", "snerda",   "glimbo"};

int slm_swap_name_make(const Tokenizer *t, const NameList *nl, const char *word, SwapName *name, Error *e) {
    *name = (SwapName){0};
    size_t n = strlen(word);
    if (n == 0 || n >= sizeof name->word)
        return FAIL(e, "give names of 1 to 63 letters", "cannot use the name '%s'", word);
    for (size_t i = 0; i <= n; i++)
        name->word[i] = (char)(word[i] >= 'A' && word[i] <= 'Z' ? word[i] - 'A' + 'a' : word[i]);
    IntVec ids = {0};
    if (slm_tokenizer_encode(t, name->word, n, &ids, e)) return -1;
    char joined[64];
    int pieces = ids.len > 0 ? slm_word_at(t, ids.data, (int)ids.len, 0, joined, sizeof joined) : 0;
    int ok = pieces > 0 && (size_t)pieces == ids.len && pieces <= 16 && ids.data[0] != t->unk_id;
    if (ok) memcpy(name->pieces, ids.data, (size_t)pieces * sizeof(int32_t));
    slm_intvec_free(&ids);
    if (!ok)
        return FAIL(e, "give single words of letters, like lily or zarko",
                    "'%s' is not one word this vocabulary can spell in at most 16 pieces", word);
    name->n_pieces = pieces;
    name->train_count = slm_names_count(nl, name->word);
    name->kind = name->train_count == 0 ? NAME_INVENTED : name->train_count < NAME_RARE_BELOW ? NAME_RARE : NAME_COMMON;
    return 0;
}

int slm_invented_names(const Tokenizer *t, const NameList *nl, int min_pieces, SwapName *out, int max) {
    int k = 0;
    for (size_t i = 0; i < sizeof invented_candidates / sizeof invented_candidates[0] && k < max; i++) {
        SwapName name;
        if (slm_swap_name_make(t, nl, invented_candidates[i], &name, NULL)) continue;
        if (name.kind == NAME_INVENTED && name.n_pieces >= min_pieces) out[k++] = name;
    }
    return k;
}

typedef struct RareName {
    const char *word;
    int count;
    uint64_t order;
} RareName;

static int by_rarity(const void *a, const void *b) {
    const RareName *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Up to max names seen 2 to NAME_RARE_BELOW - 1 times, the least seen first
 * (ties in a fixed order that does not follow the alphabet). */
static int rare_names(const Tokenizer *t, const NameList *nl, SwapName *out, int max) {
    RareName *all = malloc((nl->count + 1) * sizeof *all);
    if (!all) return 0;
    int n = 0, k = 0;
    for (size_t s = 0; s < nl->count; s++)
        if (slm_names_is_name(nl, nl->words[s]) && nl->total[s] < NAME_RARE_BELOW)
            all[n++] = (RareName){nl->words[s], nl->total[s], slm_hash64(nl->words[s], strlen(nl->words[s]), 7)};
    qsort(all, (size_t)n, sizeof *all, by_rarity);
    for (int i = 0; i < n && k < max; i++)
        if (slm_swap_name_make(t, nl, all[i].word, &out[k], NULL) == 0) k++;
    free(all);
    return k;
}

int slm_swap_default_names(const Tokenizer *t, const NameList *nl, SwapName *out, int max) {
    const char *common[3];
    int k = 0, n = slm_names_most_common(nl, common, NULL, 3);
    for (int i = 0; i < n && k < max; i++)
        if (slm_swap_name_make(t, nl, common[i], &out[k], NULL) == 0) k++;
    k += rare_names(t, nl, out + k, max - k < 3 ? max - k : 3);
    k += slm_invented_names(t, nl, 3, out + k, max - k < 3 ? max - k : 3);
    return k;
}
