/* The stories reader: splitting and bad input, [EOS]-wrapped ids, the
 * held-out test stories, the token-id cache, thread-count independence.
 * Every story here is invented in the test; nothing is read from the data
 * folder except, when present, the development file for one size check. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "storylm/fileio.h"
#include "storylm/stories.h"
#include "storylm/vec.h"

#define SEP "<|endoftext|>"

/* ------------------------------------------------------------------ helpers */

static void tmp_path(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", check_tmpdir(), name); }

static void write_bytes(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!CHECK(f != NULL)) return;
    CHECK(fwrite(data, 1, len, f) == len);
    fclose(f);
}

static void write_text(const char *path, const char *text) { write_bytes(path, text, strlen(text)); }

/* A fresh, empty cache folder named name under the scratch folder. */
static void fresh_folder(char *out, size_t n, const char *name) {
    char cmd[4200];
    tmp_path(out, n, name);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    CHECK(system(cmd) == 0);
}

/* Number of *.ids files in folder. */
static int count_cache_files(const char *folder) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls '%s'/*.ids 2>/dev/null | wc -l", folder);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

/* Splits text; returns the story count (-1 on failure) and fills the spans. */
static int split(const char *text, size_t len, StorySpan **spans, StorySkips *skips, Error *e) {
    int n = -1;
    *skips = (StorySkips){0};
    if (slm_stories_split(text, len, "t.txt", spans, &n, skips, e) != 0) return -1;
    return n;
}

/* 1 when span i of text holds exactly want. */
static int span_is(const char *text, const StorySpan *spans, int i, const char *want) {
    return spans[i].len == strlen(want) && memcmp(text + spans[i].offset, want, spans[i].len) == 0;
}

static int same_stories(const Stories *a, const Stories *b) {
    if (a->n_stories != b->n_stories || a->n_tokens != b->n_tokens || a->n_test != b->n_test) return 0;
    if (a->skips.empty != b->skips.empty || a->skips.invalid_utf8 != b->skips.invalid_utf8 ||
        a->skips.too_long != b->skips.too_long)
        return 0;
    for (int i = 0; i < a->n_stories; i++)
        for (size_t j = 0; j < story_len(a, i); j++)
            if (story_token(a, i, j) != story_token(b, i, j)) return 0;
    return memcmp(a->starts, b->starts, ((size_t)a->n_stories + 1) * sizeof *a->starts) == 0 &&
           memcmp(a->test, b->test, (size_t)a->n_test * sizeof *a->test) == 0 &&
           memcmp(a->train, b->train, (size_t)a->n_train * sizeof *a->train) == 0;
}

/* A small vocabulary: specials, letters, "##" letters, some words, punctuation. */
static void write_vocab(const char *path, const char *extra_words) {
    ByteVec v = {0};
    const char *head = "[UNK]\n[EOS]\n";
    slm_bytevec_append(&v, head, strlen(head), NULL);
    for (char c = 'a'; c <= 'z'; c++) {
        char line[8];
        int n = snprintf(line, sizeof line, "%c\n##%c\n", c, c);
        slm_bytevec_append(&v, line, (size_t)n, NULL);
    }
    const char *words = "the\ncat\ndog\nran\nsat\nlily\ntom\nand\nshe\nhe\nwas\nhappy\nsun\n##ed\n.\n,\n!\n?\n";
    slm_bytevec_append(&v, words, strlen(words), NULL);
    slm_bytevec_append(&v, extra_words, strlen(extra_words), NULL);
    write_bytes(path, v.data, v.len);
    slm_bytevec_free(&v);
}

static int load_vocab(Tokenizer *t, const char *name, const char *extra_words) {
    char path[4096];
    Error e = {0};
    tmp_path(path, sizeof path, name);
    write_vocab(path, extra_words);
    int rc = slm_tokenizer_load(t, path, 0, &e);
    if (!CHECK(rc == 0)) fprintf(stderr, "  %s\n", e.message);
    return rc;
}

/* Invented story number i: a few sentences made of words and letter names,
 * different for every i. */
static void invent_story(ByteVec *out, int i) {
    static const char *names[] = {"Lily", "Tom", "Zarko", "Mira", "Ben"};
    static const char *verbs[] = {"ran", "sat", "jumped", "smiled", "played"};
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s %s in the sun. The cat was happy, and %s saw %c%c%c.\nThe dog ran %d times!",
                     names[i % 5], verbs[(i / 5) % 5], names[(i / 25) % 5], 'a' + i % 26, 'a' + (i / 26) % 26,
                     'a' + (i / 676) % 26, i);
    slm_bytevec_append(out, buf, (size_t)n, NULL);
}

/* Writes n invented stories to path, separated by SEP lines, in the order
 * given (order[k] = which story goes k-th; NULL: 0..n-1), with CRLF line
 * ends when crlf is set. */
static void write_stories_as(const char *path, int n, const int *order, int crlf) {
    ByteVec v = {0}, out = {0};
    for (int k = 0; k < n; k++) {
        invent_story(&v, order ? order[k] : k);
        slm_bytevec_append(&v, "\n" SEP "\n", strlen(SEP) + 2, NULL);
    }
    for (size_t i = 0; i < v.len; i++) {
        if (crlf && v.data[i] == '\n') slm_bytevec_append(&out, "\r", 1, NULL);
        slm_bytevec_append(&out, v.data + i, 1, NULL);
    }
    write_bytes(path, out.data, out.len);
    slm_bytevec_free(&v);
    slm_bytevec_free(&out);
}

static void write_stories(const char *path, int n, const int *order) { write_stories_as(path, n, order, 0); }

static StoriesOptions options(const char *cache_dir, int use_cache) {
    StoriesOptions o = slm_stories_default_options();
    o.cache_dir = cache_dir;
    o.use_cache = use_cache;
    return o;
}

static int load(Stories *s, const char *path, const Tokenizer *t, const StoriesOptions *o) {
    Error e = {0};
    int rc = slm_stories_load(s, path, t, o, &e);
    if (!CHECK(rc == 0)) fprintf(stderr, "  %s\n", e.message);
    return rc;
}

/* ---------------------------------------------------------------- splitting */

static void test_split_on_separators(void) {
    const char *text = "Tom ran.\n" SEP "\nLily sat.\n\nShe smiled.\n" SEP "\n  The end came.  \n";
    StorySpan *spans;
    StorySkips k;
    Error e = {0};
    int n = split(text, strlen(text), &spans, &k, &e);
    CHECK(n == 3);
    if (n == 3) {
        CHECK(span_is(text, spans, 0, "Tom ran."));
        CHECK(span_is(text, spans, 1, "Lily sat.\n\nShe smiled.")); /* blank lines stay inside a story */
        CHECK(span_is(text, spans, 2, "The end came."));            /* trimmed */
    }
    CHECK(k.empty == 0 && k.invalid_utf8 == 0 && k.too_long == 0);
    free(spans);
}

static void test_split_on_blank_lines(void) {
    const char *text = "\n\nTom ran.\nHe sat.\n\n\n\nLily sat.\n \t \nThe sun.\n\n";
    StorySpan *spans;
    StorySkips k;
    int n = split(text, strlen(text), &spans, &k, NULL);
    CHECK(n == 3);
    if (n == 3) {
        CHECK(span_is(text, spans, 0, "Tom ran.\nHe sat."));
        CHECK(span_is(text, spans, 1, "Lily sat."));
        CHECK(span_is(text, spans, 2, "The sun."));
    }
    CHECK(k.empty == 0);
    free(spans);
}

static void test_split_crlf(void) {
    const char *text = "Tom ran.\r\nHe sat.\r\n" SEP "\r\nLily sat.\r\n";
    StorySpan *spans;
    StorySkips k;
    int n = split(text, strlen(text), &spans, &k, NULL);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(span_is(text, spans, 0, "Tom ran.\r\nHe sat."));
        CHECK(span_is(text, spans, 1, "Lily sat."));
    }
    free(spans);
    const char *blank = "Tom ran.\r\n\r\nLily sat.\r\n\r\n\r\n";
    n = split(blank, strlen(blank), &spans, &k, NULL);
    CHECK(n == 2);
    if (n == 2) CHECK(span_is(blank, spans, 1, "Lily sat."));
    free(spans);
}

static void test_split_separator_edges(void) {
    /* at the start, at the end, twice in a row, with spaces around: no story
     * is made of the nothing between them, and none is counted as skipped */
    const char *text = SEP "\nTom ran.\n" SEP "\n" SEP "\r\n\n  " SEP " \t\nLily sat.\n" SEP;
    StorySpan *spans;
    StorySkips k;
    int n = split(text, strlen(text), &spans, &k, NULL);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(span_is(text, spans, 0, "Tom ran."));
        CHECK(span_is(text, spans, 1, "Lily sat."));
    }
    CHECK(k.empty == 0);
    free(spans);
    /* the separator inside a line is text, not a cut */
    const char *inline_sep = "Tom said " SEP " twice.\n\nLily sat.";
    n = split(inline_sep, strlen(inline_sep), &spans, &k, NULL);
    CHECK(n == 2);
    if (n == 2) CHECK(span_is(inline_sep, spans, 0, "Tom said " SEP " twice."));
    free(spans);
}

static void test_split_skips_bad_stories(void) {
    static const char text[] =
        "Tom ran.\n" SEP "\n  \t \n" SEP "\nA\0B.\n" SEP "\nbad \xff byte\n" SEP "\nover\xc0\xaflong\n" SEP
        "\ncut \xe2\x82\n" SEP "\nsurrogate \xed\xa0\x80\n" SEP "\ncaf\xc3\xa9 ok\n" SEP "\nLily sat.";
    StorySpan *spans;
    StorySkips k;
    int n = split(text, sizeof text - 1, &spans, &k, NULL);
    CHECK(n == 3);
    if (n == 3) {
        CHECK(span_is(text, spans, 0, "Tom ran."));
        CHECK(span_is(text, spans, 1, "caf\xc3\xa9 ok"));
        CHECK(span_is(text, spans, 2, "Lily sat."));
    }
    CHECK(k.empty == 1);
    CHECK(k.invalid_utf8 == 5 && k.nul == 1); /* "A\0B." of them holds a NUL */
    CHECK(k.too_long == 0);
    free(spans);
}

/* A story of STORIES_MAX_STORY_BYTES is kept, one byte more is skipped, and a
 * line of several MiB is skipped without being looked at twice. */
static void test_split_long_lines(void) {
    size_t big = 5u << 20, len = big + 64;
    char *text = malloc(len);
    if (!CHECK(text != NULL)) return;
    size_t at = 0;
    memset(text, 'a', STORIES_MAX_STORY_BYTES);
    at += STORIES_MAX_STORY_BYTES;
    at += (size_t)sprintf(text + at, "\n\n");
    memset(text + at, 'b', STORIES_MAX_STORY_BYTES + 1);
    at += STORIES_MAX_STORY_BYTES + 1;
    at += (size_t)sprintf(text + at, "\n\nTom ran.\n\n");
    StorySpan *spans;
    StorySkips k;
    int n = split(text, at, &spans, &k, NULL);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(spans[0].len == STORIES_MAX_STORY_BYTES);
        CHECK(span_is(text, spans, 1, "Tom ran."));
    }
    CHECK(k.too_long == 1);
    free(spans);
    /* one line of 5 MiB, nothing else: no story, and the message says why */
    memset(text, 'c', big);
    Error e = {0};
    CHECK(split(text, big, &spans, &k, &e) == -1);
    CHECK(k.too_long == 1);
    CHECK(strstr(e.message, "'t.txt' holds no stories") != NULL);
    CHECK(strstr(e.message, "1 longer than") != NULL);
    free(text);
}

static void test_split_no_stories(void) {
    StorySpan *spans = (StorySpan *)1;
    StorySkips k;
    Error e = {0};
    CHECK(split("", 0, &spans, &k, &e) == -1);
    CHECK(spans == NULL);
    CHECK(strstr(e.message, "'t.txt' holds no stories") != NULL && strstr(e.message, "empty") != NULL);
    CHECK(e.hint[0] != '\0');
    const char *only_seps = SEP "\n" SEP "\n\n" SEP "\r\n";
    e = (Error){0};
    CHECK(split(only_seps, strlen(only_seps), &spans, &k, &e) == -1);
    CHECK(strstr(e.message, "'t.txt' holds no stories") != NULL);
    const char *all_bad = "\xff\n\n\xfe";
    CHECK(split(all_bad, strlen(all_bad), &spans, &k, &e) == -1);
    CHECK(k.invalid_utf8 == 2);
    CHECK(strstr(e.message, "2 invalid UTF-8") != NULL);
    /* one story a line, no blank line: one story too long, and how to separate them */
    ByteVec v = {0};
    for (int i = 0; i < 3000; i++) slm_bytevec_append(&v, "Tom ran to the big red barn.\n", 29, NULL);
    e = (Error){0};
    CHECK(split(v.data, v.len, &spans, &k, &e) == -1);
    CHECK(strstr(e.message, "its 3000 lines are one story") != NULL);
    CHECK(strstr(e.hint, "sed G 't.txt' > stories.txt") != NULL);
    for (size_t i = 0; i < v.len; i++) /* one line: too long, nothing about lines */
        if (v.data[i] == '\n') v.data[i] = ' ';
    e = (Error){0};
    CHECK(split(v.data, v.len, &spans, &k, &e) == -1);
    CHECK(strstr(e.message, "1 longer than") != NULL && strstr(e.hint, "sed G") == NULL);
    slm_bytevec_free(&v);
}

static void test_split_byte_order_mark(void) {
    const char *text = "\xEF\xBB\xBF" SEP "\nTom ran.\n" SEP "\nLily sat.";
    StorySpan *spans;
    StorySkips k;
    int n = split(text, strlen(text), &spans, &k, NULL);
    CHECK(n == 2);
    if (n == 2) CHECK(span_is(text, spans, 0, "Tom ran."));
    free(spans);
}

/* A file in another format is named as such, before any splitting: UTF-16
 * and UTF-32 (with a byte-order mark, or UTF-16 by its NULs), a zip, an old
 * Word file, a PDF, RTF, a compressed file (gzip, bzip2, xz, zstd), lines
 * ended by CR alone (an old Mac file, read as one line). A damaged first
 * story of NULs is still only skipped. */
static void test_split_other_formats(void) {
    static const struct {
        const char *bytes;
        size_t n;
        const char *says;
    } cases[] = {
        {"\xFF\xFEL\0i\0l\0y\0", 10, "is UTF-16 text"},
        {"\xFE\xFF\0L\0i\0l\0y", 10, "is UTF-16 text"},
        {"\xFF\xFE\0\0L\0\0\0", 8, "is UTF-32 text"},
        {"\0\0\xFE\xFF\0\0\0L", 8, "is UTF-32 text"},
        {"L\0i\0l\0y\0 \0s\0a\0t\0", 16, "looks like UTF-16"},
        {"\0L\0i\0l\0y\0 \0s\0a\0t", 16, "looks like UTF-16"},
        {"PK\x03\x04\n\nLily sat.", 15, "zip file"},
        {"\xD0\xCF\x11\xE0\n\nLily sat.", 15, "Word 97-2003"},
        {"%PDF-1.4\n\nLily sat.", 19, "PDF document"},
        {"{\\rtf1\\ansi\n\nLily sat.", 22, "RTF document"},
        {"\x1F\x8B\x08\0\0\0\0\0", 8, "gzip-compressed"},
        {"BZh91AY&SY", 10, "bzip2-compressed"},
        {"\xFD"
         "7zXZ\0\0\x04",
         8, "xz-compressed"},
        {"\x28\xB5\x2F\xFD\0\x58", 6, "zstd-compressed"},
        {"Tom ran.\rHe sat.\r\rLily sat.\r", 28, "ends its lines with CR alone"},
        {"Tom ran.\r" SEP "\rLily sat.", 32, "ends its lines with CR alone"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        StorySpan *spans = (StorySpan *)1;
        StorySkips k;
        Error e = {0};
        CHECK(split(cases[i].bytes, cases[i].n, &spans, &k, &e) == -1);
        CHECK(spans == NULL);
        CHECK(strstr(e.message, "'t.txt'") != NULL && strstr(e.message, cases[i].says) != NULL);
        CHECK(e.hint[0] != '\0');
        if (strstr(cases[i].says, "UTF-")) CHECK(strstr(e.hint, "iconv -f UTF-") != NULL);
        /* a compressed file is decompressed, lines of CR made LF: never "Windows-1252" nor "sed G" */
        if (strstr(cases[i].says, "compressed")) CHECK(strstr(e.hint, "cat 't.txt' > stories.txt") != NULL);
        if (strstr(cases[i].says, "CR")) CHECK(strstr(e.hint, "tr '\\r' '\\n' < 't.txt' > stories.txt") != NULL);
        CHECK(strstr(e.hint, "WINDOWS-1252") == NULL && strstr(e.hint, "sed G") == NULL);
    }
    /* a lone story ended by a CR, and CRLF, are no Mac file */
    static const char *const not_cr[] = {"Tom ran.\r", "Tom ran.\r \r\t", "Tom ran.\r\nHe sat.\r\n"};
    for (size_t i = 0; i < sizeof not_cr / sizeof *not_cr; i++) {
        StorySpan *spans;
        StorySkips k;
        CHECK(split(not_cr[i], strlen(not_cr[i]), &spans, &k, NULL) == 1);
        free(spans);
    }
    static const char damaged[] = "\0\0\0\0\0\0\0\0\0\0\n\nTom ran.\n\nLily sat.\n\n\0x\0y\0z\0w\0";
    StorySpan *spans;
    StorySkips k;
    CHECK(split(damaged, sizeof damaged - 1, &spans, &k, NULL) == 2);
    CHECK(k.invalid_utf8 == 2 && k.nul == 2);
    free(spans);
    static const char zeros[64] = {0}; /* NULs alone are no letters: a bad story, not UTF-16 */
    Error e = {0};
    CHECK(split(zeros, sizeof zeros, &spans, &k, &e) == -1);
    CHECK(strstr(e.message, "holds no stories") != NULL && k.invalid_utf8 == 1);
    static const char short_nul[] = "L\0i\0l\0"; /* 3 pairs: too few to tell */
    CHECK(split(short_nul, sizeof short_nul - 1, &spans, &k, NULL) == -1);
    CHECK(k.invalid_utf8 == 1);
}

/* The warning for stories left out as not UTF-8: from a twentieth of them. */
static void test_encoding_hint(void) {
    char buf[600];
    StorySkips k = {.invalid_utf8 = 5};
    CHECK(slm_stories_encoding_hint(&k, 95, "w.txt", buf, sizeof buf)); /* 5 of 100 */
    CHECK(strstr(buf, "5 of 100 stories are not UTF-8") != NULL);
    CHECK(strstr(buf, "iconv -f WINDOWS-1252 -t UTF-8 'w.txt'") != NULL);
    CHECK(!slm_stories_encoding_hint(&k, 96, "w.txt", buf, sizeof buf)); /* 5 of 101 */
    k = (StorySkips){.invalid_utf8 = 1, .empty = 1, .too_long = 1};
    CHECK(slm_stories_encoding_hint(&k, 0, "w.txt", buf, sizeof buf) && strstr(buf, "1 of 3") != NULL);
    k = (StorySkips){.empty = 9, .too_long = 9};
    CHECK(!slm_stories_encoding_hint(&k, 0, "w.txt", buf, sizeof buf));
    /* stories left out for their NUL bytes: a file that is no text, not one to convert from Windows-1252 */
    k = (StorySkips){.invalid_utf8 = 30, .nul = 20};
    CHECK(slm_stories_encoding_hint(&k, 70, "w.txt", buf, sizeof buf));
    CHECK(strstr(buf, "20 of 100 stories hold NUL bytes") != NULL && strstr(buf, "WINDOWS-1252") == NULL);
    k = (StorySkips){.invalid_utf8 = 30, .nul = 10};
    CHECK(slm_stories_encoding_hint(&k, 70, "w.txt", buf, sizeof buf) && strstr(buf, "WINDOWS-1252") != NULL);
}

/* Splitting is one pass: 400,000 tiny stories split quickly (a quadratic
 * scan would take minutes). */
static void test_split_is_linear(void) {
    int n_want = 400000;
    ByteVec v = {0};
    for (int i = 0; i < n_want; i++) slm_bytevec_append(&v, "Tom ran.\n\n", 10, NULL);
    StorySpan *spans;
    StorySkips k;
    double t0 = omp_get_wtime();
    int n = split(v.data, v.len, &spans, &k, NULL);
    double secs = omp_get_wtime() - t0;
    CHECK(n == n_want);
    CHECK(secs < 2.0);
    free(spans);
    slm_bytevec_free(&v);
}

/* ------------------------------------------------------------------ loading */

/* Each story is [EOS] + slm_tokenizer_encode(its text) + [EOS], in file order. */
static void test_load_wraps_ids_in_eos(const Tokenizer *t) {
    char path[4096];
    tmp_path(path, sizeof path, "wrap.txt");
    const char *text = "Tom ran.\n" SEP "\n\nLily sat in the sun!\n" SEP "\nzarko";
    write_text(path, text);
    StoriesOptions o = options(NULL, 0);
    Stories s;
    if (load(&s, path, t, &o)) return;
    CHECK(s.n_stories == 3);
    CHECK(s.from_cache == 0);
    CHECK(s.n_tokens == s.starts[s.n_stories]);
    const char *want[3] = {"Tom ran.", "Lily sat in the sun!", "zarko"};
    for (int i = 0; i < 3 && i < s.n_stories; i++) {
        IntVec ids = {0};
        CHECK(slm_tokenizer_encode(t, want[i], strlen(want[i]), &ids, NULL) == 0);
        CHECK(story_len(&s, i) == ids.len + 2);
        StoryBuf buf = {0};
        const int32_t *row = slm_story_ids(&s, i, &buf, NULL);
        CHECK(row[0] == t->eos_id && row[ids.len + 1] == t->eos_id);
        CHECK(memcmp(row + 1, ids.data, ids.len * sizeof *row) == 0);
        slm_story_buf_free(&buf);
        slm_intvec_free(&ids);
    }
    /* three stories: a tenth is 0, but one is held out all the same */
    CHECK(s.n_test == 1 && s.n_train == 2);
    slm_stories_free(&s);
}

static void test_load_counts_skips(const Tokenizer *t) {
    char path[4096], cache[4096];
    tmp_path(path, sizeof path, "skips.txt");
    /* a story of no-break spaces holds no token: counted as empty too */
    static const char text[] =
        "Tom ran.\n" SEP "\n \n" SEP "\nA\0B\n" SEP "\n\xc2\xa0\xc2\xa0\n" SEP "\nbad \xff\n" SEP "\nLily sat.";
    write_bytes(path, text, sizeof text - 1);
    fresh_folder(cache, sizeof cache, "cache_skips");
    StoriesOptions o = options(NULL, 0), cached = options(cache, 1);
    Stories s;
    if (load(&s, path, t, &o)) return;
    CHECK(s.n_stories == 2);
    CHECK(s.skips.empty == 2);
    CHECK(s.skips.invalid_utf8 == 2 && s.skips.nul == 1);
    slm_stories_free(&s);
    for (int round = 0; round < 2; round++) { /* the cache keeps the NUL count (its hint): read back the same */
        if (load(&s, path, t, &cached)) return;
        CHECK(s.from_cache == round && s.skips.empty == 2 && s.skips.invalid_utf8 == 2 && s.skips.nul == 1);
        slm_stories_free(&s);
    }
}

/* Loss per character's divisor: each story's bytes as the file has them
 * (trimmed, before normalising: "\xc3\xa9" is 2 bytes though the tokenizer
 * reads it as "e"), plus its closing [EOS]; a story of no-break spaces,
 * left out as empty, is passed over (the next one's bytes are its own). */
static void test_text_bytes(const Tokenizer *t) {
    char path[4096];
    tmp_path(path, sizeof path, "bytes.txt");
    static const char text[] = "  Tom ran.  \n" SEP "\n\xc2\xa0\xc2\xa0\n" SEP "\nLily sat, h\xc3\xa9llo.\n" SEP "\n";
    write_bytes(path, text, sizeof text - 1);
    StoriesOptions o = options(NULL, 0);
    Stories s;
    if (load(&s, path, t, &o)) return;
    CHECK(s.n_stories == 2 && s.skips.empty == 1);
    Error e = {0};
    long long bytes = -1;
    int both[] = {0, 1}, second[] = {1};
    CHECK(slm_stories_text_bytes(&s, path, t, both, 2, &bytes, &e) == 0 && bytes == (8 + 1) + (17 + 1));
    CHECK(slm_stories_text_bytes(&s, path, t, second, 1, &bytes, &e) == 0 && bytes == 17 + 1);
    write_text(path, "Tom ran."); /* the file changed under the stories: refused */
    CHECK(slm_stories_text_bytes(&s, path, t, second, 1, &bytes, &e) == -1 && strstr(e.message, "holds 1 stories"));
    slm_stories_free(&s);
}

static void test_load_one_story(const Tokenizer *t) {
    char path[4096];
    tmp_path(path, sizeof path, "one.txt");
    write_text(path, "Tom ran.\n");
    StoriesOptions o = options(NULL, 0);
    Stories s;
    if (load(&s, path, t, &o)) return;
    CHECK(s.n_stories == 1 && s.n_test == 0 && s.n_train == 1 && s.train[0] == 0);
    slm_stories_free(&s);
}

static void test_load_failures(const Tokenizer *t) {
    char path[4096];
    StoriesOptions o = options(NULL, 0);
    Stories s;
    Error e = {0};
    tmp_path(path, sizeof path, "empty.txt");
    write_text(path, "");
    CHECK(slm_stories_load(&s, path, t, &o, &e) == -1);
    CHECK(strstr(e.message, "empty.txt' holds no stories") != NULL);
    CHECK(s.ids16 == NULL && s.ids32 == NULL && s.map == NULL && s.n_stories == 0);
    tmp_path(path, sizeof path, "only_sep.txt");
    write_text(path, SEP "\n" SEP "\n");
    CHECK(slm_stories_load(&s, path, t, &o, &e) == -1);
    CHECK(strstr(e.message, "only_sep.txt' holds no stories") != NULL);
    tmp_path(path, sizeof path, "no_such_file.txt");
    unlink(path);
    CHECK(slm_stories_load(&s, path, t, &o, &e) == -1);
    CHECK(strstr(e.message, "no_such_file.txt") != NULL);
}

/* ---------------------------------------------------------- held-out stories */

static int is_ascending(const int *a, int n) {
    for (int i = 1; i < n; i++)
        if (a[i] <= a[i - 1]) return 0;
    return 1;
}

/* Every story is in exactly one of test and train. */
static int is_partition(const Stories *s) {
    char *seen = calloc((size_t)s->n_stories, 1);
    int ok = seen && s->n_test + s->n_train == s->n_stories;
    for (int i = 0; ok && i < s->n_test; i++) ok = s->test[i] >= 0 && s->test[i] < s->n_stories && !seen[s->test[i]]++;
    for (int i = 0; ok && i < s->n_train; i++)
        ok = s->train[i] >= 0 && s->train[i] < s->n_stories && !seen[s->train[i]]++;
    free(seen);
    return ok;
}

static void test_held_out(const Tokenizer *t) {
    char path[4096];
    int n = 1500;
    tmp_path(path, sizeof path, "held_out.txt");
    write_stories(path, n, NULL);
    StoriesOptions o = options(NULL, 0);
    Stories a, b;
    if (load(&a, path, t, &o)) return;
    if (load(&b, path, t, &o)) return;
    CHECK(a.n_stories == n);
    CHECK(a.n_test == STORIES_DEFAULT_TEST && a.n_train == n - STORIES_DEFAULT_TEST);
    CHECK(same_stories(&a, &b)); /* deterministic */
    CHECK(is_ascending(a.test, a.n_test) && is_ascending(a.train, a.n_train));
    CHECK(is_partition(&a));
    /* not the first or last 100, and spread over the file */
    CHECK(a.test[a.n_test - 1] >= 100 && a.test[0] < n - 100);
    int early = 0, late = 0;
    for (int i = 0; i < a.n_test; i++) early += a.test[i] < n / 3, late += a.test[i] >= 2 * n / 3;
    CHECK(early >= 10 && late >= 10);
    /* asking for fewer; asking for more than a tenth; asking for none */
    slm_stories_free(&b);
    o.n_test = 7;
    if (load(&b, path, t, &o) == 0) CHECK(b.n_test == 7 && is_partition(&b));
    slm_stories_free(&b);
    o.n_test = 1000;
    if (load(&b, path, t, &o) == 0) CHECK(b.n_test == n / 10);
    slm_stories_free(&b);
    o.n_test = 0;
    if (load(&b, path, t, &o) == 0) CHECK(b.n_test == 0 && b.n_train == n);
    slm_stories_free(&b);
    o.n_test = -1;
    Error e = {0};
    CHECK(slm_stories_load(&b, path, t, &o, &e) == -1);
    slm_stories_free(&a);
}

/* 1 when b holds out the same stories as a, story order[i] of a being
 * story i of b (order NULL: the same order). */
static int same_test_stories(const Stories *a, const Stories *b, const int *order) {
    if (a->n_test != b->n_test) return 0;
    char *in_a = calloc((size_t)a->n_stories, 1);
    int same = 0;
    for (int i = 0; i < a->n_test; i++) in_a[a->test[i]] = 1;
    for (int i = 0; i < b->n_test; i++) same += in_a[order ? order[b->test[i]] : b->test[i]];
    free(in_a);
    return same == a->n_test;
}

/* The choice goes by a story's text, not its place: the same stories in
 * another order, or with CRLF line ends, give the same test stories. */
static void test_held_out_follows_text(const Tokenizer *t) {
    int n = 400, *order = malloc((size_t)n * sizeof *order);
    char plain_path[4096], shuffled_path[4096], crlf_path[4096];
    for (int i = 0; i < n; i++) order[i] = (i * 7919) % n; /* 7919 is prime: a permutation */
    tmp_path(plain_path, sizeof plain_path, "plain.txt");
    tmp_path(shuffled_path, sizeof shuffled_path, "shuffled.txt");
    tmp_path(crlf_path, sizeof crlf_path, "crlf.txt");
    write_stories(plain_path, n, NULL);
    write_stories(shuffled_path, n, order);
    write_stories_as(crlf_path, n, NULL, 1);
    StoriesOptions o = options(NULL, 0);
    Stories plain, shuffled, crlf;
    if (load(&plain, plain_path, t, &o) || load(&shuffled, shuffled_path, t, &o) || load(&crlf, crlf_path, t, &o))
        return;
    CHECK(plain.n_test == n / 10);
    CHECK(same_test_stories(&plain, &shuffled, order));
    CHECK(same_test_stories(&plain, &crlf, NULL));
    CHECK(same_stories(&plain, &crlf)); /* '\r' is white space to the tokenizer too */
    free(order);
    slm_stories_free(&plain);
    slm_stories_free(&shuffled);
    slm_stories_free(&crlf);
}

/* -------------------------------------------------------------------- cache */

static void test_cache_hit(const Tokenizer *t) {
    char path[4096], cache[4096];
    tmp_path(path, sizeof path, "cached.txt");
    write_stories(path, 300, NULL);
    fresh_folder(cache, sizeof cache, "cache_hit");
    strcat(cache, "/one/two"); /* made with its parents */
    StoriesOptions o = options(cache, 1), none = options(NULL, 0);
    Stories first, second, plain;
    if (load(&first, path, t, &o) || load(&second, path, t, &o) || load(&plain, path, t, &none)) return;
    CHECK(first.from_cache == 0 && second.from_cache == 1);
    CHECK(count_cache_files(cache) == 1);
    CHECK(same_stories(&first, &second));
    CHECK(same_stories(&first, &plain));
    /* n_test is applied after the cache, so it may differ between reads */
    slm_stories_free(&second);
    o.n_test = 5;
    if (load(&second, path, t, &o) == 0) CHECK(second.from_cache == 1 && second.n_test == 5);
    slm_stories_free(&first);
    slm_stories_free(&second);
    slm_stories_free(&plain);
}

/* A stop flag already set: the reading gives up with "stopped", leaves s
 * empty and writes no cache (with a cache, while hashing the text for its
 * key; without, while tokenizing). */
static void test_stop_flag(const Tokenizer *t) {
    char path[4096], cache[4096];
    tmp_path(path, sizeof path, "stopped.txt");
    write_stories(path, 300, NULL);
    fresh_folder(cache, sizeof cache, "cache_stop");
    volatile sig_atomic_t stop = 1;
    for (int use_cache = 0; use_cache < 2; use_cache++) {
        StoriesOptions o = options(cache, use_cache);
        o.stop = &stop;
        Stories s;
        Error e = {0};
        CHECK(slm_stories_load(&s, path, t, &o, &e) == -1);
        CHECK(strstr(e.message, "stopped") != NULL);
        CHECK(s.n_stories == 0 && s.map == NULL);
    }
    CHECK(count_cache_files(cache) == 0);
    stop = 0; /* a flag never set changes nothing */
    StoriesOptions o = options(cache, 1);
    o.stop = &stop;
    Stories s;
    if (load(&s, path, t, &o) == 0) CHECK(s.n_stories == 300 && count_cache_files(cache) == 1);
    slm_stories_free(&s);
}

static void test_cache_invalidation(const Tokenizer *t) {
    char path[4096], cache[4096];
    tmp_path(path, sizeof path, "changing.txt");
    write_text(path, "Tom ran.\n" SEP "\nLily sat zarko.\n");
    fresh_folder(cache, sizeof cache, "cache_change");
    StoriesOptions o = options(cache, 1);
    Stories s;
    if (load(&s, path, t, &o)) return;
    CHECK(s.from_cache == 0);
    slm_stories_free(&s);
    /* the text changes by one character */
    write_text(path, "Tom ran.\n" SEP "\nLily sat zarko!\n");
    int bang = slm_tokenizer_lookup(t, "!", 1);
    if (load(&s, path, t, &o) == 0) CHECK(s.from_cache == 0 && story_token(&s, 1, story_len(&s, 1) - 2) == bang);
    slm_stories_free(&s);
    if (load(&s, path, t, &o) == 0) CHECK(s.from_cache == 1 && story_token(&s, 1, story_len(&s, 1) - 2) == bang);
    slm_stories_free(&s);
    /* the vocabulary changes: "zarko" becomes one piece */
    Tokenizer bigger;
    if (load_vocab(&bigger, "vocab_bigger.txt", "zarko\n")) return;
    if (load(&s, path, &bigger, &o) == 0) {
        CHECK(s.from_cache == 0);
        CHECK(story_len(&s, 1) == 6); /* [EOS] lily sat zarko ! [EOS] */
        CHECK(story_token(&s, 1, 3) == slm_tokenizer_lookup(&bigger, "zarko", 5));
    }
    slm_stories_free(&s);
    slm_tokenizer_free(&bigger);
    CHECK(count_cache_files(cache) == 3);
}

/* The only cache file in folder, read whole (caller frees). */
static char *read_cache(const char *folder, char *path, size_t path_size, size_t *len) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls '%s'/*.ids", folder);
    FILE *p = popen(cmd, "r");
    char *data = NULL;
    if (p && fgets(path, (int)path_size, p)) {
        path[strcspn(path, "\n")] = '\0';
        if (slm_file_read_all(path, 0, &data, len, NULL) != 0) data = NULL;
    }
    if (p) pclose(p);
    CHECK(data != NULL);
    return data;
}

/* A cache file's checksum (src/text/stories_cache.c): slm_hash64 of the bytes
 * after the 64-byte header up to the checksum, continued over the header. */
static void set_checksum(char *cache, size_t len) {
    uint64_t sum = slm_hash64(cache + 64, len - 72, 0);
    sum = slm_hash64(cache, 64, sum ^ slm_hash64(NULL, 0, 0));
    memcpy(cache + len - 8, &sum, 8);
}

/* A damaged cache is never trusted: it is read from the text and rewritten. */
static void check_damaged_cache(const Tokenizer *t, const char *path, const StoriesOptions *o, const Stories *good,
                                const char *cache_file, const char *bytes, size_t len) {
    write_bytes(cache_file, bytes, len);
    Stories s;
    if (load(&s, path, t, o)) return;
    CHECK(s.from_cache == 0);
    CHECK(same_stories(&s, good));
    slm_stories_free(&s);
    if (load(&s, path, t, o) == 0) CHECK(s.from_cache == 1); /* rewritten whole */
    slm_stories_free(&s);
}

static void test_cache_damaged(const Tokenizer *t) {
    char path[4096], cache[4096], cache_file[4096];
    tmp_path(path, sizeof path, "damaged.txt");
    write_stories(path, 50, NULL);
    fresh_folder(cache, sizeof cache, "cache_damaged");
    StoriesOptions o = options(cache, 1), none = options(NULL, 0);
    Stories good, first;
    /* the damage is written into the cache file in place, under first's map:
     * the stories compared against come from no cache */
    if (load(&first, path, t, &o)) return;
    slm_stories_free(&first);
    if (load(&good, path, t, &none)) return;
    size_t len;
    char *bytes = read_cache(cache, cache_file, sizeof cache_file, &len);
    if (!bytes) return;
    char *copy = malloc(len);
    /* short */
    check_damaged_cache(t, path, &o, &good, cache_file, bytes, len / 2);
    check_damaged_cache(t, path, &o, &good, cache_file, bytes, 3);
    check_damaged_cache(t, path, &o, &good, cache_file, "", 0);
    /* one bit flipped in the middle */
    memcpy(copy, bytes, len);
    copy[len / 2] ^= 4;
    check_damaged_cache(t, path, &o, &good, cache_file, copy, len);
    /* another version (bytes 8..11), checksum made to match */
    memcpy(copy, bytes, len);
    copy[8] ^= 0x7f;
    set_checksum(copy, len);
    check_damaged_cache(t, path, &o, &good, cache_file, copy, len);
    /* an id beyond the vocabulary behind a valid checksum */
    memcpy(copy, bytes, len);
    uint16_t bad = (uint16_t)(t->size + 5); /* the second id: 16 bits an id at this vocabulary */
    memcpy(copy + 64 + 2, &bad, 2);
    set_checksum(copy, len);
    check_damaged_cache(t, path, &o, &good, cache_file, copy, len);
    /* a story boundary moved behind a valid checksum */
    memcpy(copy, bytes, len);
    uint64_t n_stories, start;
    memcpy(&n_stories, copy + 24, 8);
    size_t starts_at = len - 8 - 8 * (2 * (size_t)n_stories + 1);
    memcpy(&start, copy + starts_at + 8, 8);
    start += 1;
    memcpy(copy + starts_at + 8, &start, 8);
    set_checksum(copy, len);
    check_damaged_cache(t, path, &o, &good, cache_file, copy, len);
    free(copy);
    free(bytes);
    slm_stories_free(&good);
}

static void test_cache_unwritable_or_off(const Tokenizer *t) {
    char path[4096], blocker[4096], cache[4096];
    tmp_path(path, sizeof path, "unwritable.txt");
    write_text(path, "Tom ran.\n" SEP "\nLily sat.\n");
    /* a folder under a regular file cannot be made, even by root */
    tmp_path(blocker, sizeof blocker, "a_file");
    write_text(blocker, "x");
    tmp_path(cache, sizeof cache, "a_file/cache");
    StoriesOptions o = options(cache, 1);
    Stories s;
    if (load(&s, path, t, &o) == 0) CHECK(s.n_stories == 2 && s.from_cache == 0);
    slm_stories_free(&s);
    /* use_cache = 0 neither reads nor writes */
    fresh_folder(cache, sizeof cache, "cache_off");
    o = options(cache, 0);
    if (load(&s, path, t, &o) == 0) CHECK(s.from_cache == 0);
    slm_stories_free(&s);
    struct stat st;
    CHECK(stat(cache, &st) != 0);
}

/* ------------------------------------------------------------------ threads */

static void test_threads_agree(const Tokenizer *t) {
    char path[4096];
    tmp_path(path, sizeof path, "threads.txt");
    write_stories(path, 2000, NULL);
    StoriesOptions o = options(NULL, 0);
    Stories one, two;
    omp_set_num_threads(1);
    int rc = load(&one, path, t, &o);
    omp_set_num_threads(2);
    if (rc || load(&two, path, t, &o)) return;
    CHECK(same_stories(&one, &two));
    slm_stories_free(&one);
    slm_stories_free(&two);
}

/* The development file, when present: every story read, none skipped. */
static void test_development_data(const Tokenizer *t) {
    char path[4096];
    snprintf(path, sizeof path, "%s", check_source_path("../shared/data/tinystories-train.txt"));
    if (access(path, R_OK) != 0) /* from a worktree, the project's root is one folder further up */
        snprintf(path, sizeof path, "%s", check_source_path("../../shared/data/tinystories-train.txt"));
    if (access(path, R_OK) != 0) {
        printf("skipping the development-data check: %s is absent\n", path);
        return;
    }
    StoriesOptions o = options(NULL, 0);
    Stories s;
    if (load(&s, path, t, &o)) return;
    CHECK(s.n_stories == 5627);
    CHECK(s.skips.empty == 0 && s.skips.invalid_utf8 == 0 && s.skips.too_long == 0);
    CHECK(s.n_test == 100 && is_partition(&s));
    slm_stories_free(&s);
}

/* ------------------------------------------------------------ streaming */

/* The streaming reader encodes thousands of stories a batch, several batches
 * in flight: over many batches it gives what the plain path gives (split the
 * whole text, encode each story on its own), from the text, the cache and no
 * cache; and the ids hash as the 4-byte ids of the reader before it did. */
static void test_stream_matches_plain_path(const Tokenizer *t) {
    char path[4096], cache[4096];
    tmp_path(path, sizeof path, "many.txt");
    write_stories(path, 7000, NULL); /* over three batches of 2048 */
    fresh_folder(cache, sizeof cache, "cache_many");
    char *text;
    size_t len;
    StorySpan *spans;
    int n;
    if (!CHECK(slm_file_read_all(path, 0, &text, &len, NULL) == 0)) return;
    if (!CHECK(slm_stories_split(text, len, path, &spans, &n, NULL, NULL) == 0)) return;
    IntVec plain = {0}; /* every story's [EOS] ids [EOS], one after another */
    for (int i = 0; i < n; i++) {
        slm_intvec_push(&plain, t->eos_id, NULL);
        CHECK(slm_tokenizer_encode(t, text + spans[i].offset, spans[i].len, &plain, NULL) == 0);
        slm_intvec_push(&plain, t->eos_id, NULL);
    }
    StoriesOptions with = options(cache, 1), without = options(NULL, 0);
    const StoriesOptions *opts[3] = {&with, &with, &without};
    for (int k = 0; k < 3; k++) {
        Stories s;
        if (load(&s, path, t, opts[k])) break;
        CHECK(s.from_cache == (k == 1) && s.ids16 != NULL && s.n_stories == n && s.n_tokens == plain.len);
        size_t at = 0, differ = 0;
        for (int i = 0; i < s.n_stories && at <= plain.len; i++)
            for (size_t j = 0; j < story_len(&s, i) && at < plain.len; j++)
                differ += story_token(&s, i, j) != plain.data[at++];
        CHECK(differ == 0 && at == plain.len);
        CHECK(slm_stories_hash_ids(&s, 7) == slm_hash64(plain.data, plain.len * sizeof(int32_t), 7));
        slm_stories_free(&s);
    }
    slm_intvec_free(&plain);
    free(spans);
    free(text);
}

int main(void) {
    test_split_on_separators();
    test_split_on_blank_lines();
    test_split_crlf();
    test_split_separator_edges();
    test_split_skips_bad_stories();
    test_split_long_lines();
    test_split_no_stories();
    test_split_byte_order_mark();
    test_split_other_formats();
    test_encoding_hint();
    test_split_is_linear();
    Tokenizer t;
    if (load_vocab(&t, "vocab.txt", "") == 0) {
        test_load_wraps_ids_in_eos(&t);
        test_load_counts_skips(&t);
        test_load_one_story(&t);
        test_text_bytes(&t);
        test_load_failures(&t);
        test_held_out(&t);
        test_held_out_follows_text(&t);
        test_cache_hit(&t);
        test_stop_flag(&t);
        test_cache_invalidation(&t);
        test_cache_damaged(&t);
        test_cache_unwritable_or_off(&t);
        test_threads_agree(&t);
        test_stream_matches_plain_path(&t);
        test_development_data(&t);
        slm_tokenizer_free(&t);
    }
    return check_report();
}
