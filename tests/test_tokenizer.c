/* The WordPiece tokenizer: encoding with a small hand-made vocabulary,
 * vocab.txt loading errors, decoding, the round trip, and encoding from
 * several threads at once. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "storylm/fileio.h"
#include "storylm/tokenizer.h"

static const char *const hand_vocab[] = {"[UNK]",
                                         "[EOS]",
                                         "the",
                                         "sat",
                                         "on",
                                         "mat",
                                         "z",
                                         "##ark",
                                         "##o",
                                         ".",
                                         "!",
                                         "?",
                                         ",",
                                         "'",
                                         "\"",
                                         "(",
                                         ")",
                                         "[",
                                         "]",
                                         "don",
                                         "t",
                                         "lily",
                                         "s",
                                         "4",
                                         "##2",
                                         "cafe",
                                         "\xe2\x80\x9c" /* “ */,
                                         "\xe2\x80\x9d" /* ” */,
                                         "hi",
                                         "\xf0\x9f\x98\x80" /* 😀 */,
                                         "\xce\xb3" /* γ */,
                                         "##\xce\xb1" /* ##α */,
                                         "##\xcf\x84" /* ##τ */,
                                         "\xd0\xba\xd0\xbe\xd1\x82" /* кот */,
                                         "\xe7\x8c\xab" /* 猫 */,
                                         "a",
                                         "##a",
                                         "\xd0\xb6" /* ж */,
                                         "##\xd0\xb6" /* ##ж */,
                                         "i",
                                         "think",
                                         "m",
                                         "ok",
                                         "stop",
                                         "she",
                                         "said",
                                         "once",
                                         "upon",
                                         "time",
                                         "dog",
                                         "didn"};
#define N_HAND ((int)(sizeof hand_vocab / sizeof hand_vocab[0]))

static char *vocab_text(const char *const *pieces, int n) {
    ByteVec v = {0};
    for (int i = 0; i < n; i++) {
        slm_bytevec_append(&v, pieces[i], strlen(pieces[i]), NULL);
        slm_bytevec_append(&v, "\n", 1, NULL);
    }
    return v.data;
}

/* The pieces of encode(text) joined by spaces (caller frees). */
static char *pieces_of(const Tokenizer *t, const char *text, size_t len) {
    IntVec ids = {0};
    ByteVec out = {0};
    Error e = {0};
    slm_bytevec_append(&out, "", 0, NULL);
    if (slm_tokenizer_encode(t, text, len, &ids, &e)) slm_bytevec_append(&out, "ERROR", 5, NULL);
    for (size_t i = 0; i < ids.len; i++) {
        if (i) slm_bytevec_append(&out, " ", 1, NULL);
        slm_bytevec_append(&out, t->pieces[ids.data[i]], strlen(t->pieces[ids.data[i]]), NULL);
    }
    slm_intvec_free(&ids);
    return out.data;
}

static int encodes_to(const Tokenizer *t, const char *text, size_t len, const char *want) {
    char *got = pieces_of(t, text, len);
    int ok = strcmp(got, want) == 0;
    if (!ok) fprintf(stderr, "  encode \"%.60s\": got \"%.300s\", want \"%.300s\"\n", text, got, want);
    free(got);
    return ok;
}
#define ENC(t, text, want) CHECK(encodes_to((t), (text), sizeof(text) - 1, (want)))

/* "piece piece ..." repeated: the first once, then `more` n - 1 times. */
static char *repeat(const char *first, const char *more, int n, const char *sep) {
    ByteVec v = {0};
    slm_bytevec_append(&v, first, strlen(first), NULL);
    for (int i = 1; i < n; i++) {
        slm_bytevec_append(&v, sep, strlen(sep), NULL);
        slm_bytevec_append(&v, more, strlen(more), NULL);
    }
    return v.data;
}

static void test_encode(const Tokenizer *t) {
    ENC(t, "Zarko sat on the mat.", "z ##ark ##o sat on the mat .");
    ENC(t, "!!! ... ?!", "! ! ! . . . ? !");
    ENC(t, "don't Lily's", "don ' t lily ' s");
    ENC(t, "42 4 24", "4 ##2 4 [UNK]"); /* "2" starts no piece */
    ENC(t, "Caf\xc3\xa9 CAF\xc3\x89!", "cafe cafe !");
    ENC(t, "\xe2\x80\x9cHi\xe2\x80\x9d", "\xe2\x80\x9c hi \xe2\x80\x9d");
    ENC(t, "\xf0\x9f\x98\x80 \xf0\x9f\x99\x82 \xf0\x9f\x98\x80\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80 [UNK] [UNK]");
    ENC(t, "\xce\x93\xce\xac\xcf\x84\xce\xb1", "\xce\xb3 ##\xce\xb1 ##\xcf\x84 ##\xce\xb1"); /* Γάτα */
    ENC(t, "\xd0\x9a\xd0\xbe\xd1\x82", "\xd0\xba\xd0\xbe\xd1\x82");                          /* Кот */
    ENC(t, "\xe7\x8c\xab\xe7\x8c\xab\xe7\x8b\x97", "\xe7\x8c\xab \xe7\x8c\xab [UNK]");       /* 猫猫狗 */
    ENC(t, "", "");
    ENC(t, "  \n\t \r\n", "");
    ENC(t, "thez mat", "[UNK] mat");              /* no ##z: the whole word is one [UNK] */
    ENC(t, "ma\xfft m\0at", "mat mat");           /* bad bytes and NUL dropped */
    ENC(t, "[EOS] [UNK]", "[ [UNK] ] [ [UNK] ]"); /* plain text, never the special tokens */
    CHECK(slm_tokenizer_lookup(t, "[EOS]", 5) == t->eos_id && t->eos_id == 1 && t->unk_id == 0);
    CHECK(slm_tokenizer_lookup(t, "##ark", 5) == 7 && slm_tokenizer_lookup(t, "ark", 3) == -1);
}

static void test_word_length(const Tokenizer *t) {
    /* 100 characters are a word, 101 are [UNK]; characters, not bytes. */
    char *a100 = repeat("a", "a", 100, ""), *a101 = repeat("a", "a", 101, "");
    char *zh100 = repeat("\xd0\x96", "\xd0\x96", 100, ""), *zh101 = repeat("\xd0\xb6", "\xd0\xb6", 101, "");
    char *want_a = repeat("a", "##a", 100, " "), *want_zh = repeat("\xd0\xb6", "##\xd0\xb6", 100, " ");
    CHECK(encodes_to(t, a100, strlen(a100), want_a));
    CHECK(encodes_to(t, a101, strlen(a101), "[UNK]"));
    CHECK(encodes_to(t, zh100, strlen(zh100), want_zh)); /* Ж lower-cased: 200 bytes, 100 characters */
    CHECK(encodes_to(t, zh101, strlen(zh101), "[UNK]"));
    free(a100), free(a101), free(zh100), free(zh101), free(want_a), free(want_zh);
}

/* ids of the pieces named in a space-separated list. */
static size_t ids_of(const Tokenizer *t, const char *list, int32_t *ids) {
    size_t n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *p = strtok(buf, " "); p; p = strtok(NULL, " ")) ids[n++] = slm_tokenizer_lookup(t, p, strlen(p));
    return n;
}

static int decodes_to(const Tokenizer *t, const char *list, int capitalize, const char *want) {
    int32_t ids[64];
    size_t n = ids_of(t, list, ids);
    Error e = {0};
    char *got = slm_tokenizer_decode(t, ids, n, capitalize, &e);
    int ok = got && strcmp(got, want) == 0;
    if (!ok) fprintf(stderr, "  decode \"%s\": got \"%s\", want \"%s\"\n", list, got ? got : e.message, want);
    free(got);
    return ok;
}

static void test_decode(const Tokenizer *t) {
    CHECK(decodes_to(t, "once upon a time , lily ' s dog didn ' t", 1, "Once upon a time, lily's dog didn't"));
    CHECK(decodes_to(t, "\" stop ! \" she said .", 1, "\"Stop!\" she said."));
    CHECK(decodes_to(t, "she said , \" stop ! \"", 1, "She said, \"Stop!\""));
    CHECK(decodes_to(t, "\" stop . \" the mat", 1,
                     "\"Stop.\" The mat")); /* a full stop before the quote ends the sentence */
    CHECK(decodes_to(t, "i think i ' m ok", 1, "I think I'm ok"));
    CHECK(decodes_to(t, "i think i ' m ok", 0, "i think i'm ok"));
    CHECK(decodes_to(t, "z ##ark ##o sat on the mat . she sat", 1, "Zarko sat on the mat. She sat"));
    CHECK(decodes_to(t, "[EOS] the mat . [EOS] [EOS] the mat", 1, "The mat. The mat"));
    CHECK(decodes_to(t, "4 . 4 , 4", 0, "4.4, 4"));
    CHECK(decodes_to(t, "she said ( hi ) , ' hi ' [ ok ]", 0, "she said (hi), 'hi' [ok]"));
    CHECK(decodes_to(t, "\xe2\x80\x9c hi \xe2\x80\x9d she said", 0, "\xe2\x80\x9chi\xe2\x80\x9d she said"));
    CHECK(decodes_to(t, "##ark ##o", 0, "arko"));
    CHECK(decodes_to(t, "", 1, ""));
    CHECK(decodes_to(t, "the [UNK] mat", 0, "the [UNK] mat"));
    int32_t bad[] = {2, t->size};
    Error e = {0};
    CHECK(slm_tokenizer_decode(t, bad, 2, 0, &e) == NULL && strstr(e.message, "out of range"));
}

/* Writes text to a file in the scratch folder; returns its path. */
static const char *scratch_file(const char *name, const char *text, size_t len) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", check_tmpdir(), name);
    Error e = {0};
    if (slm_file_write_atomic(path, text, len, &e)) fprintf(stderr, "  cannot write %s: %s\n", path, e.message);
    return path;
}

/* Loading vocab text fails, with a message holding all of the given parts. */
static int refuses(const char *text, int expected, const char *part1, const char *part2) {
    const char *path = scratch_file("bad_vocab.txt", text, strlen(text));
    Tokenizer t;
    Error e = {0};
    int ok = slm_tokenizer_load(&t, path, expected, &e) == -1 && strstr(e.message, "bad_vocab.txt") &&
             strstr(e.message, part1) && (!part2 || strstr(e.message, part2));
    if (!ok) fprintf(stderr, "  vocab \"%s\": message \"%s\"\n", text, e.message);
    return ok;
}

static void test_vocab_errors(void) {
    CHECK(refuses("[UNK]\n[EOS]\nthe\nthe\n", 0, "line 4: duplicate piece 'the'", "line 3"));
    CHECK(refuses("[UNK]\n\n[EOS]\n", 0, "line 2 is empty", NULL));
    CHECK(refuses("[UNK]\n[EOS]\n\n", 0, "line 3 is empty", NULL));
    CHECK(refuses("[EOS]\nthe\n", 0, "no [UNK]", NULL));
    CHECK(refuses("[UNK]\nthe\n", 0, "no [EOS]", NULL));
    CHECK(refuses("[UNK]\n[EOS]\nthe\n", 5, "has 3 pieces, expected 5", NULL));
    CHECK(refuses("[UNK]\n[EOS]\nca\xfft\n", 0, "line 3", "invalid UTF-8"));
    CHECK(refuses("", 0, "empty", NULL));

    Tokenizer t;
    Error e = {0};
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/no_such_vocab.txt", check_tmpdir());
    CHECK(slm_tokenizer_load(&t, missing, 0, &e) == -1 && strstr(e.message, "no_such_vocab.txt") &&
          strstr(e.hint, "run storylm vocab STORIES first"));

    /* CRLF and a missing final newline are fine; the text comes back with LF. */
    const char *crlf = "[UNK]\r\n[EOS]\r\nthe\r\n##s";
    CHECK(slm_tokenizer_load(&t, scratch_file("crlf_vocab.txt", crlf, strlen(crlf)), 4, &e) == 0);
    CHECK(t.size == 4 && slm_tokenizer_lookup(&t, "the", 3) == 2 && slm_tokenizer_lookup(&t, "##s", 3) == 3);
    size_t len;
    char *text = slm_tokenizer_to_text(&t, &len, &e);
    CHECK(text && len == 20 && strcmp(text, "[UNK]\n[EOS]\nthe\n##s\n") == 0);
    Tokenizer again;
    CHECK(slm_tokenizer_from_text(&again, text, len, 4, &e) == 0 && again.size == 4 && again.eos_id == 1);
    slm_tokenizer_free(&again);
    CHECK(slm_tokenizer_from_text(&again, "[UNK]\n[UNK]\n", 12, 0, &e) == -1 && strstr(e.message, "line 2"));
    slm_tokenizer_free(&t);
    free(text);
}

/* ---- The round trip, on real text: hard hand-written lines and stories ---- */

typedef struct Texts {
    char *data;
    size_t *start, *len;
    int n;
} Texts;

/* Splits data into texts at every line equal to sep (or every line when sep is NULL). */
static void split_texts(Texts *s, char *data, size_t size, const char *sep) {
    s->data = data;
    s->start = malloc((size + 2) * sizeof *s->start);
    s->len = malloc((size + 2) * sizeof *s->len);
    s->n = 0;
    size_t from = 0, at = 0;
    while (at <= size) {
        char *nl = memchr(data + at, '\n', size - at);
        size_t end = nl ? (size_t)(nl - data) : size;
        int cut = !sep || (end - at == strlen(sep) && memcmp(data + at, sep, end - at) == 0) || !nl;
        if (cut) {
            size_t stop = sep && nl ? at : end;
            if (stop > from || !sep) s->start[s->n] = from, s->len[s->n++] = stop - from;
            from = end + 1;
        }
        if (!nl) break;
        at = end + 1;
    }
}

typedef struct Collect {
    char **items;
    size_t n, cap;
} Collect;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void add_item(Collect *c, const char *s, size_t n) {
    if (c->n == c->cap) c->cap = c->cap ? 2 * c->cap : 1024, c->items = realloc(c->items, c->cap * sizeof *c->items);
    c->items[c->n] = malloc(n + 1);
    memcpy(c->items[c->n], s, n);
    c->items[c->n++][n] = '\0';
}

typedef struct Seen {
    Collect words, chars;
} Seen;

/* Every word, and each of its characters both plain and as a "##" piece. */
static int collect_word(const char *w, size_t n, void *ctx) {
    Seen *seen = ctx;
    add_item(&seen->words, w, n);
    for (size_t i = 0, k; i < n; i += k) {
        for (k = 1; i + k < n && ((unsigned char)w[i + k] & 0xC0) == 0x80;) k++;
        if (k == 1 && w[i] > ' ' && w[i] < 0x7F) continue; /* printable ASCII: always in */
        char piece[8] = "##";
        memcpy(piece + 2, w + i, k);
        add_item(&seen->chars, piece + 2, k);
        add_item(&seen->chars, piece, k + 2);
    }
    return 0;
}

/* Moves the items seen at least min_count times, once each, into out. */
static void keep_frequent(Collect *c, size_t min_count, Collect *out) {
    qsort(c->items, c->n, sizeof *c->items, cmp_str);
    for (size_t i = 0, j; i < c->n; i = j) {
        for (j = i; j < c->n && strcmp(c->items[j], c->items[i]) == 0;) j++;
        if (j - i >= min_count) add_item(out, c->items[i], strlen(c->items[i]));
    }
    for (size_t i = 0; i < c->n; i++) free(c->items[i]);
    free(c->items);
}

/* A vocabulary that covers every character of the texts: [UNK], [EOS],
 * every character (plain and "##"), and the words seen at least twice (the
 * others are cut into characters, so "##" pieces get glued in decoding). */
static int vocab_covering(Tokenizer *t, const Texts *s) {
    Pretokenizer p;
    Error e = {0};
    Seen seen = {{0}, {0}};
    for (char c = '!'; c < 0x7F; c++) {
        char piece[4] = {'#', '#', c, 0};
        add_item(&seen.chars, piece + 2, 1);
        add_item(&seen.chars, piece, 3);
    }
    slm_pretokenizer_init(&p, &e);
    for (int i = 0; i < s->n; i++) {
        ByteVec norm = {0};
        slm_text_normalize(s->data + s->start[i], s->len[i], &norm, &e);
        slm_pretokenize(&p, norm.data ? norm.data : "", norm.len, collect_word, &seen, &e);
        slm_bytevec_free(&norm);
    }
    slm_pretokenizer_free(&p);
    Collect both = {0}, pieces = {0};
    keep_frequent(&seen.words, 2, &both);
    keep_frequent(&seen.chars, 1, &both);
    keep_frequent(&both, 1, &pieces);
    ByteVec v = {0};
    slm_bytevec_append(&v, "[UNK]\n[EOS]\n", 12, NULL);
    for (size_t i = 0; i < pieces.n; i++) {
        if (strcmp(pieces.items[i], "[UNK]") && strcmp(pieces.items[i], "[EOS]")) {
            slm_bytevec_append(&v, pieces.items[i], strlen(pieces.items[i]), NULL);
            slm_bytevec_append(&v, "\n", 1, NULL);
        }
        free(pieces.items[i]);
    }
    free(pieces.items);
    int rc = slm_tokenizer_from_text(t, v.data, v.len, 0, &e);
    if (rc) fprintf(stderr, "  covering vocab: %s\n", e.message);
    slm_bytevec_free(&v);
    return rc;
}

static void drop_spaces(char *s) {
    char *w = s;
    for (; *s; s++)
        if (*s != ' ') *w++ = *s;
    *w = '\0';
}

/* decode(encode(text)) is the normalised text up to spaces (all spaces
 * removed from both), and encoding the decoded, capitalised text gives the
 * same ids again. Texts with an [UNK] (a word over 100 characters) are left
 * out and counted. */
static void round_trip(const Tokenizer *t, const Texts *s, const char *what) {
    int bad_text = 0, bad_ids = 0, with_unk = 0;
    for (int i = 0; i < s->n; i++) {
        const char *text = s->data + s->start[i];
        IntVec ids = {0}, again = {0};
        ByteVec norm = {0};
        Error e = {0};
        slm_tokenizer_encode(t, text, s->len[i], &ids, &e);
        int unk = 0;
        for (size_t k = 0; k < ids.len; k++) unk |= ids.data[k] == t->unk_id;
        if (unk) {
            with_unk++;
            slm_intvec_free(&ids);
            continue;
        }
        char *plain = slm_tokenizer_decode(t, ids.data, ids.len, 0, &e);
        char *pretty = slm_tokenizer_decode(t, ids.data, ids.len, 1, &e);
        slm_text_normalize(text, s->len[i], &norm, &e);
        slm_tokenizer_encode(t, pretty, strlen(pretty), &again, &e);
        drop_spaces(plain);
        if (norm.data) drop_spaces(norm.data);
        if (strcmp(plain, norm.data ? norm.data : "") != 0 && bad_text++ < 3)
            fprintf(stderr, "  %s text %d: decoded \"%.80s\" vs normalised \"%.80s\"\n", what, i, plain, norm.data);
        if ((again.len != ids.len || memcmp(again.data, ids.data, ids.len * sizeof *ids.data) != 0) && bad_ids++ < 3)
            fprintf(stderr, "  %s text %d: ids differ after decode: \"%.200s\"\n", what, i, pretty);
        free(plain), free(pretty);
        slm_bytevec_free(&norm), slm_intvec_free(&ids), slm_intvec_free(&again);
    }
    printf("round trip, %s: %d texts, %d with [UNK] left out\n", what, s->n, with_unk);
    CHECK(bad_text == 0);
    CHECK(bad_ids == 0);
    CHECK(with_unk < s->n);
}

/* Several threads encoding with one Tokenizer give the same ids as one thread. */
static void threads_agree(const Tokenizer *t, const Texts *s) {
    IntVec *one = calloc((size_t)s->n, sizeof *one), *many = calloc((size_t)s->n, sizeof *many);
    for (int i = 0; i < s->n; i++) slm_tokenizer_encode(t, s->data + s->start[i], s->len[i], &one[i], NULL);
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 8) num_threads(4) reduction(+ : failed)
    for (int i = 0; i < s->n; i++)
        failed += slm_tokenizer_encode(t, s->data + s->start[i], s->len[i], &many[i], NULL) != 0;
    int same = failed == 0;
    for (int i = 0; i < s->n; i++) {
        same &= one[i].len == many[i].len && memcmp(one[i].data, many[i].data, one[i].len * sizeof(int32_t)) == 0;
        slm_intvec_free(&one[i]), slm_intvec_free(&many[i]);
    }
    CHECK(same);
    free(one), free(many);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_real_text(const char *path, const char *sep, const char *what) {
    char *data;
    size_t size;
    Error e = {0};
    if (slm_file_read_all(path, 0, &data, &size, &e)) {
        printf("SKIPPED round trip on %s: %s not found\n", what, path);
        return;
    }
    Texts s;
    split_texts(&s, data, size, sep);
    Tokenizer t;
    if (CHECK(vocab_covering(&t, &s) == 0)) {
        round_trip(&t, &s, what);
        threads_agree(&t, &s);
        double mbps[5];
        size_t n_ids = 0;
        for (int r = 0; r < 5; r++) {
            IntVec ids = {0};
            double t0 = cpu_seconds();
            slm_tokenizer_encode(&t, data, size, &ids, &e);
            double dt = cpu_seconds() - t0;
            mbps[r] = size / (dt > 0 ? dt : 1e-9) / 1e6, n_ids = ids.len;
            slm_intvec_free(&ids);
        }
        qsort(mbps, 5, sizeof *mbps, cmp_double);
        printf("encoded %s: %zu bytes, %zu tokens, median of 5: %.1f MB/s (CPU time, for information)\n", what, size,
               n_ids, mbps[2]);
        slm_tokenizer_free(&t);
    }
    free(s.start), free(s.len), free(data);
}

/* The memo of words gives what plain encoding gives, word for word, also for
 * words of many pieces, [UNK] words, words too long to remember, and a memo
 * far fuller than its slots (slots taken over by other words). */
static void test_memo_changes_nothing(const Tokenizer *t) {
    TokenizerMemo m;
    if (!CHECK(slm_tokenizer_memo_init(&m, t, NULL) == 0)) return;
    ByteVec text = {0};
    const char *words[] = {"the", "dog",        "played", "zarkoqq", "a",
                           "cat", "xyzzyplugh", "!",      "Ünïcödé", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                           "ran", "lily",       "tom",    ","};
    for (int i = 0; i < 20000; i++) {
        char w[64];
        int n = snprintf(w, sizeof w, "%s%s%d ", words[(i * 7) % 14], i % 3 ? "" : "s", i % 50);
        slm_bytevec_append(&text, w, (size_t)n, NULL);
        if (i % 97 == 0) slm_bytevec_append(&text, words[i % 14], strlen(words[i % 14]), NULL);
    }
    IntVec plain = {0}, memo = {0};
    for (int pass = 0; pass < 2; pass++) { /* the second pass reads the memo the first filled */
        plain.len = memo.len = 0;
        CHECK(slm_tokenizer_encode(t, text.data, text.len, &plain, NULL) == 0);
        CHECK(slm_tokenizer_encode_memo(t, &m, text.data, text.len, &memo, NULL) == 0);
        CHECK(plain.len == memo.len && plain.len > 0 && memcmp(plain.data, memo.data, plain.len * 4) == 0);
    }
    Tokenizer other = {0};
    CHECK(slm_tokenizer_encode_memo(&other, &m, "a", 1, &memo, NULL) != 0); /* a memo is of one tokenizer */
    slm_intvec_free(&plain);
    slm_intvec_free(&memo);
    slm_bytevec_free(&text);
    slm_tokenizer_memo_free(&m);
}

int main(void) {
    Tokenizer t;
    Error e = {0};
    char *text = vocab_text(hand_vocab, N_HAND);
    if (!CHECK(slm_tokenizer_from_text(&t, text, strlen(text), N_HAND, &e) == 0)) {
        fprintf(stderr, "%s\n", e.message);
        return check_report();
    }
    test_encode(&t);
    test_word_length(&t);
    test_decode(&t);
    test_memo_changes_nothing(&t);
    slm_tokenizer_free(&t);
    free(text);
    test_vocab_errors();
    test_real_text(check_source_path("tests/fixtures/tokenizer_hard.txt"), NULL, "tests/fixtures/tokenizer_hard.txt");
    char tiny[4096];
    snprintf(tiny, sizeof tiny, "%s", check_source_path("../shared/data/tinystories-train.txt"));
    test_real_text(tiny, "<|endoftext|>", "TinyStories");
    return check_report();
}
