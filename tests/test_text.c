/* Normalisation, UTF-8 checking and pre-tokenization (text.h), against
 * what the BERT reference (@huggingface/tokenizers 0.2.0) gives. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/text.h"

/* normalize(text[0..len)) == want (NUL-terminated) */
static int normalizes_to(const char *text, size_t len, const char *want) {
    ByteVec out = {0};
    Error e = {0};
    int ok = slm_text_normalize(text, len, &out, &e) == 0;
    const char *got = out.data ? out.data : "";
    ok = ok && out.len == strlen(want) && memcmp(got, want, out.len) == 0;
    if (!ok) fprintf(stderr, "  normalize: got \"%s\", want \"%s\"\n", got, want);
    slm_bytevec_free(&out);
    return ok;
}
#define NORM(text, want) CHECK(normalizes_to((text), sizeof(text) - 1, (want)))

static void test_ascii_and_white_space(void) {
    NORM("Hello, World!", "hello, world!");
    NORM("", "");
    NORM("tab\there\nnew\rline", "tab here new line");
    NORM("ctrl\x01\x02\x1f\x7f gone, \x0b\x0c too", "ctrl gone,  too"); /* \v \f are controls in BERT */
    NORM("a\0b", "ab");                                                 /* NUL bytes are dropped */
    NORM("nbsp\xc2\xa0 em\xe2\x80\x83 ideo\xe3\x80\x80 line\xe2\x80\xa8", "nbsp  em  ideo  line ");
    NORM("zero\xe2\x80\x8bwidth soft\xc2\xadhyphen bom\xef\xbb\xbfx nel\xc2\x85", "zerowidth softhyphen bomx nel");
    NORM("private\xee\x80\x80 use", "private use"); /* Co is a control for the reference */
    NORM("[UNK] <|endoftext|>", "[unk] <|endoftext|>");
}

static void test_accents_and_case(void) {
    NORM("Café naïve RÉSUMÉ Ångström", "cafe naive resume angstrom");
    NORM("\xc4\xb0stanbul", "istanbul");        /* U+0130: i + U+0307, the mark dropped */
    NORM("\xc4\xb1", "\xc4\xb1");               /* dotless i stays */
    NORM("Привет Йод Ёлка", "привет иод елка"); /* й is и + breve (Mn) */
    NORM("Ελληνικά ἄλφα", "ελληνικα αλφα");
    NORM("\xe1\xba\x9e", "\xc3\x9f");                                   /* capital sharp s -> ß */
    NORM("\xef\xac\x81ne \xef\xbc\xa1", "\xef\xac\x81ne \xef\xbd\x81"); /* no compatibility mapping: NFD only */
    NORM("\xe2\x84\xa6 \xe2\x84\xaa \xe2\x84\xab", "\xcf\x89 k a");     /* ohm, kelvin, angstrom signs */
    NORM("\xed\x95\x9c", "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab");       /* Hangul: NFD gives the jamo */
    NORM("\xf0\x9f\x98\x80 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd", "\xf0\x9f\x98\x80 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd");
    NORM("\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9", "\xf0\x9f\x91\xa8\xf0\x9f\x91\xa9"); /* ZWJ is Cf */
}

static void test_final_sigma(void) {
    /* As JavaScript's toLowerCase: final after a cased letter, not before one. */
    NORM("\xce\x9f\xce\x94\xce\x9f\xce\xa3", "\xce\xbf\xce\xb4\xce\xbf\xcf\x82"); /* ΟΔΟΣ -> οδος */
    CHECK(normalizes_to("\xce\x9f\xce\xa3", 4, "\xce\xbf\xcf\x82"));              /* ΟΣ -> ος */
    CHECK(normalizes_to("\xce\xa3", 2, "\xcf\x83"));                              /* Σ alone -> σ */
    CHECK(normalizes_to("\xce\x91\xce\xa3.a", 6, "\xce\xb1\xcf\x83.a"));          /* '.' is case-ignorable: a follows */
    CHECK(normalizes_to("\xce\x91\xce\xa3 a", 6, "\xce\xb1\xcf\x82 a"));          /* a space ends the word */
    CHECK(normalizes_to("\xce\x91\xce\xa3\x01\xce\x91", 7, "\xce\xb1\xcf\x83\xce\xb1")); /* dropped control: unseen */
    CHECK(normalizes_to("\xce\x91\xce\xa3\xff\xce\x91", 7, "\xce\xb1\xcf\x83\xce\xb1")); /* dropped bad byte too */
    CHECK(normalizes_to("\xca\xb0\xce\xa3", 4, "\xca\xb0\xcf\x83"));         /* ʰ is ignorable before cased */
    CHECK(normalizes_to("\xe2\x92\xb6\xce\xa3", 5, "\xe2\x93\x90\xcf\x82")); /* circled A is cased */
}

static void test_cjk(void) {
    NORM("中文", " 中  文 ");
    NORM("a日本b", "a 日  本 b");
    NORM("\xef\xa4\x80", " \xe8\xb1\x88 "); /* U+F900 padded, then NFD: U+8C48 */
    NORM("a\xf0\xa0\x80\x80"
         "b",
         "a\xf0\xa0\x80\x80"
         "b");                    /* U+20000: the reference pads BMP only */
    NORM("カタカナ", "カタカナ"); /* kana are no ideographs */
}

static void test_invalid_utf8(void) {
    /* Like TextDecoder: each maximal bad sequence is one U+FFFD, dropped; the next character survives. */
    NORM("a\xff"
         "b",
         "ab");
    NORM("a\xe2\x82"
         "b",
         "ab");
    NORM("\xc0\xaf"
         "x",
         "x");
    NORM("\xed\xa0\x80"
         "x",
         "x"); /* an encoded surrogate */
    NORM("\xf0\x9f\x98"
         "\xc3\xa9",
         "e"); /* cut emoji, then é */
    NORM("\xf4\x90\x80\x80 \x80 \xf8", "  ");
    NORM("\xe2\x82\xac\xef\xbf\xbd", "\xe2\x82\xac"); /* a real U+FFFD is dropped too */
    NORM("end\xe2\x82", "end");
}

static void test_mark_order(void) {
    /* NFD's canonical order of the marks that survive (Mc with a combining class). */
    NORM("x\xf0\x9d\x85\xad\xf0\x9d\x85\xa5y", "x\xf0\x9d\x85\xa5\xf0\x9d\x85\xady"); /* 226, 216 -> 216, 226 */
    NORM("e\xcc\x81\xcc\x96", "e");
    NORM("\xf0\x9d\x85\x9e", "\xf0\x9d\x85\x97\xf0\x9d\x85\xa5"); /* musical half note decomposes */
}

static void test_long_mark_runs(void) {
    /* More kept marks than the normaliser holds back at once, between controls and ASCII. */
    ByteVec in = {0}, out = {0};
    Error e = {0};
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 70; i++) /* U+1D16D (class 226), U+1D165 (216) and a control */
            slm_bytevec_append(&in, i % 2 ? "\xf0\x9d\x85\xa5\x01" : "\xf0\x9d\x85\xad", 4 + i % 2, NULL);
        slm_bytevec_append(&in, "x\xce\xa3", 3, NULL);
    }
    CHECK(slm_text_normalize(in.data, in.len, &out, &e) == 0);
    CHECK(out.len == 3 * (70 * 4 + 3) && slm_utf8_validate(out.data, out.len, "out", &e) == 0);
    /* within the first 32 marks NFD's order holds: class 216 before 226 */
    CHECK(memcmp(out.data, "\xf0\x9d\x85\xa5", 4) == 0);
    slm_bytevec_free(&in), slm_bytevec_free(&out);
}

static void test_long_ascii(void) {
    /* The ASCII fast path over a long text with a few other characters. */
    size_t n = 100000;
    char *text = malloc(n + 3), *want = malloc(n + 1);
    for (size_t i = 0; i < n; i++) text[i] = "Ab. c\t"[i % 6], want[i] = "ab. c "[i % 6];
    memcpy(text + n, "\xc3\x89", 3);
    want[n] = '\0';
    ByteVec out = {0};
    Error e = {0};
    CHECK(slm_text_normalize(text, n + 2, &out, &e) == 0);
    CHECK(out.len == n + 1 && memcmp(out.data, want, n) == 0 && out.data[n] == 'e');
    slm_bytevec_free(&out);
    free(text);
    free(want);
}

static void test_utf8_validate(void) {
    Error e = {0};
    CHECK(slm_utf8_validate("plain", 5, "x", &e) == 0);
    CHECK(slm_utf8_validate("caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbd", 14, "x", &e) == 0);
    CHECK(slm_utf8_validate("ab\xff"
                            "cd",
                            5, "the text", &e) == -1);
    CHECK(strstr(e.message, "the text") && strstr(e.message, "byte offset 2"));
    CHECK(slm_utf8_validate("abc\xe2\x82", 5, "x", &e) == -1 && strstr(e.message, "byte offset 3"));
    CHECK(slm_utf8_validate("a\xed\xa0\x80", 4, "x", &e) == -1 && strstr(e.message, "byte offset 1"));
    CHECK(slm_utf8_validate("a\xc0\xaf", 3, "x", &e) == -1 && strstr(e.message, "byte offset 1"));
    CHECK(slm_utf8_validate("ab\0", 3, "stdin", &e) == -1 && strstr(e.message, "NUL") && strstr(e.message, "offset 2"));
    CHECK(slm_utf8_validate("", 0, "x", &e) == 0);
}

/* Words of text joined by '|'. */
typedef struct Joined {
    char buf[512];
    size_t len;
    int count;
} Joined;

static int join_word(const char *w, size_t n, void *ctx) {
    Joined *j = ctx;
    if (j->len + n + 2 >= sizeof j->buf) return 1;
    if (j->count++) j->buf[j->len++] = '|';
    memcpy(j->buf + j->len, w, n);
    j->len += n;
    j->buf[j->len] = '\0';
    return 0;
}

static int splits_to(const Pretokenizer *p, const char *text, const char *want) {
    Joined j = {{0}, 0, 0};
    Error e = {0};
    int ok = slm_pretokenize(p, text, strlen(text), join_word, &j, &e) == 0 && strcmp(j.buf, want) == 0;
    if (!ok) fprintf(stderr, "  pretokenize \"%s\": got \"%s\", want \"%s\"\n", text, j.buf, want);
    return ok;
}

static int stop_at_second(const char *w, size_t n, void *ctx) {
    (void)w, (void)n;
    return ++*(int *)ctx == 2 ? 7 : 0;
}

static void test_pretokenize(void) {
    Pretokenizer p;
    Error e = {0};
    CHECK(slm_pretokenizer_init(&p, &e) == 0);
    CHECK(p.ascii_class['a'] == ASCII_WORD && p.ascii_class['7'] == ASCII_WORD && p.ascii_class[','] == ASCII_PUNCT);
    CHECK(p.ascii_class[' '] == ASCII_SPACE && p.ascii_class['\t'] == ASCII_SPACE && p.ascii_class['$'] == ASCII_PUNCT);
    CHECK(splits_to(&p, "zarko sat on the mat.", "zarko|sat|on|the|mat|."));
    CHECK(splits_to(&p, "wow!!! so... what?!", "wow|!|!|!|so|.|.|.|what|?|!"));
    CHECK(splits_to(&p, "don't lily's", "don|'|t|lily|'|s"));
    CHECK(splits_to(&p, "3.14 $5 a+b=c x_y", "3|.|14|$|5|a|+|b|=|c|x|_|y"));
    CHECK(splits_to(&p, "\xe2\x80\x9chi\xe2\x80\x9d \xe2\x80\x94 \xc2\xbfque?", /* “hi” — ¿que? */
                    "\xe2\x80\x9c|hi|\xe2\x80\x9d|\xe2\x80\x94|\xc2\xbf|que|?"));
    CHECK(splits_to(&p,
                    "\xc3\xbc"
                    "ber-cool caf\xc3\xa9!",
                    "\xc3\xbc"
                    "ber|-|cool|caf\xc3\xa9|!"));
    CHECK(splits_to(&p, "\xf0\x9f\x98\x80x \xce\xb1\xce\xb2", "\xf0\x9f\x98\x80x|\xce\xb1\xce\xb2")); /* So is no P */
    CHECK(splits_to(&p,
                    "a\xe1\xad\x8e"
                    "b",
                    "a|\xe1\xad\x8e|b")); /* U+1B4E, punctuation since Unicode 16 */
    CHECK(splits_to(&p, "", ""));
    CHECK(splits_to(&p, "    ", ""));
    int seen = 0;
    CHECK(slm_pretokenize(&p, "a b c", 5, stop_at_second, &seen, &e) == 7 && seen == 2);
    CHECK(slm_pretokenize(&p, "a\xff", 2, join_word, &(Joined){{0}, 0, 0}, &e) == -1 && strstr(e.message, "offset 1"));
    slm_pretokenizer_free(&p);
}

int main(void) {
    test_ascii_and_white_space();
    test_accents_and_case();
    test_final_sigma();
    test_cjk();
    test_invalid_utf8();
    test_mark_order();
    test_long_ascii();
    test_long_mark_runs();
    test_utf8_validate();
    test_pretokenize();
    return check_report();
}
