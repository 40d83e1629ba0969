/* Text before WordPiece: BERT normalisation and pre-tokenization (see text.h).
 *
 * The reference is BertNormalizer + BertPreTokenizer of the npm package
 * @huggingface/tokenizers 0.2.0 on the text as a WHATWG TextDecoder reads it.
 * Its steps, in its order, on the whole text:
 *   1. clean: drop U+0000, U+FFFD and Cc/Cf/Co characters except \t \n \r;
 *      JavaScript white space (\s) becomes ' '
 *   2. pad CJK ideographs with spaces (BMP blocks only: the reference walks
 *      UTF-16 code units, so a supplementary-plane ideograph is never padded)
 *   3. lower-case as JavaScript's toLowerCase does (Final_Sigma included)
 *   4. NFD, then drop every Mn mark
 * Each step maps one character at a time (save the sigma's context and the
 * canonical order of marks), so we do all four per character in one pass,
 * with a fast path for ASCII, which needs no utf8proc call at all.
 *
 * utf8proc 2.8 knows Unicode 15.0 and PCRE2 10.42 Unicode 14; the reference
 * runs on Node's ICU (Unicode 17). The few characters whose handling differs
 * are listed in override tables below, produced by
 * tests/compat/unicode_sweep.mjs, which the compatibility test re-runs. */
#include "storylm/text.h"

#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- UTF-8 decoding as WHATWG TextDecoder does ---- */

/* Decodes the character at s[0..n) (n >= 1) into *cp; returns the bytes used.
 * An invalid sequence gives U+FFFD for its maximal valid prefix (at least one
 * byte), so a following valid character is never swallowed. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int need;
    unsigned lo = 0x80, hi = 0xBF;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1, v = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 2, v = c & 0x0F, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 3, v = c & 0x07, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else {
        *cp = 0xFFFD;
        return 1;
    }
    size_t i = 1;
    for (; i <= (size_t)need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *cp = 0xFFFD;
            return i;
        }
        v = (v << 6) | (s[i] & 0x3F);
        lo = 0x80, hi = 0xBF;
    }
    *cp = v;
    return i;
}

/* Length of the run of ASCII bytes other than NUL that starts text, looked
 * at 8 bytes at a time (stories are mostly such runs). */
static size_t plain_ascii_run(const unsigned char *s, size_t len) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if ((w & highs) || ((w - ones) & ~w & highs)) break; /* a byte >= 0x80, or a zero byte */
    }
    return i;
}

int slm_utf8_validate(const char *text, size_t len, const char *what, Error *e) {
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        i += plain_ascii_run(s + i, len - i);
        if (i >= len) break;
        if (s[i] == 0)
            return FAIL(e, "remove the NUL bytes (is this a text file?)", "%s: NUL byte at byte offset %zu", what, i);
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        if (cp == 0xFFFD && !(n == 3 && s[i] == 0xEF && s[i + 1] == 0xBF && s[i + 2] == 0xBD))
            return FAIL(e, "convert the text to UTF-8 (for example with iconv)",
                        "%s: invalid UTF-8 at byte offset %zu (byte 0x%02X)", what, i, s[i]);
        i += n;
    }
    return 0;
}

void slm_utf8_escape(const char *text, char *out, size_t size) {
    const unsigned char *s = (const unsigned char *)text;
    size_t len = strlen(text), at = 0;
    for (size_t i = 0; i < len && size;) {
        uint32_t cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        int valid = cp != 0xFFFD || (n == 3 && s[i] == 0xEF && s[i + 1] == 0xBF && s[i + 2] == 0xBD);
        size_t need = valid ? n : 4 * n; /* a character whole or not at all: never a cut sequence */
        if (at + need >= size) break;
        if (valid)
            memcpy(out + at, s + i, n);
        else
            for (size_t k = 0; k < n; k++) snprintf(out + at + 4 * k, 5, "\\x%02x", s[i + k]);
        at += need, i += n;
    }
    if (size) out[at] = '\0';
}

int slm_text_check(const char *text, size_t len, const char *what, Error *e) {
    if (slm_utf8_validate(text, len, what, e) == 0) return 0;
    if (e) snprintf(e->hint, sizeof e->hint, "%s", "convert the text to UTF-8 without NUL bytes");
    return -1;
}

/* ---- What the reference knows that utf8proc 2.8 does not (Unicode 16/17) ---- */

enum { OV_CASED = 1, OV_IGNORABLE = 2 };

/* A character newer than utf8proc's tables (or recategorised since): what
 * lower-case, NFD and dropping Mn give (n code points, none when it is an Mn
 * mark), its canonical combining class (as far as the order of the marks
 * that NFD keeps can tell), and its Cased and Case_Ignorable properties.
 * Sorted by cp. */
typedef struct Override {
    uint32_t cp;
    uint8_t flags, n, ccc;
    uint32_t to[3];
} Override;

/* A data table, kept dense: */
/* clang-format off */
static const Override overrides[] = {
    {0x295, 0, 1, 0, {0x295}}, {0x897, OV_IGNORABLE, 0, 230, {}}, {0x1ACF, OV_IGNORABLE, 0, 230, {}},
    {0x1AD0, OV_IGNORABLE, 0, 230, {}}, {0x1AD1, OV_IGNORABLE, 0, 230, {}}, {0x1AD2, OV_IGNORABLE, 0, 230, {}},
    {0x1AD3, OV_IGNORABLE, 0, 230, {}}, {0x1AD4, OV_IGNORABLE, 0, 230, {}}, {0x1AD5, OV_IGNORABLE, 0, 230, {}},
    {0x1AD6, OV_IGNORABLE, 0, 230, {}}, {0x1AD7, OV_IGNORABLE, 0, 230, {}}, {0x1AD8, OV_IGNORABLE, 0, 230, {}},
    {0x1AD9, OV_IGNORABLE, 0, 230, {}}, {0x1ADA, OV_IGNORABLE, 0, 230, {}}, {0x1ADB, OV_IGNORABLE, 0, 230, {}},
    {0x1ADC, OV_IGNORABLE, 0, 230, {}}, {0x1ADD, OV_IGNORABLE, 0, 220, {}}, {0x1AE0, OV_IGNORABLE, 0, 230, {}},
    {0x1AE1, OV_IGNORABLE, 0, 230, {}}, {0x1AE2, OV_IGNORABLE, 0, 230, {}}, {0x1AE3, OV_IGNORABLE, 0, 230, {}},
    {0x1AE4, OV_IGNORABLE, 0, 230, {}}, {0x1AE5, OV_IGNORABLE, 0, 230, {}}, {0x1AE6, OV_IGNORABLE, 0, 220, {}},
    {0x1AE7, OV_IGNORABLE, 0, 230, {}}, {0x1AE8, OV_IGNORABLE, 0, 230, {}}, {0x1AE9, OV_IGNORABLE, 0, 230, {}},
    {0x1AEA, OV_IGNORABLE, 0, 230, {}}, {0x1AEB, OV_IGNORABLE, 0, 234, {}}, {0x1C89, OV_CASED, 1, 0, {0x1C8A}},
    {0x1C8A, OV_CASED, 1, 0, {0x1C8A}}, {0xA7CB, OV_CASED, 1, 0, {0x264}}, {0xA7CC, OV_CASED, 1, 0, {0xA7CD}},
    {0xA7CD, OV_CASED, 1, 0, {0xA7CD}}, {0xA7CE, OV_CASED, 1, 0, {0xA7CF}}, {0xA7CF, OV_CASED, 1, 0, {0xA7CF}},
    {0xA7D2, OV_CASED, 1, 0, {0xA7D3}}, {0xA7D4, OV_CASED, 1, 0, {0xA7D5}}, {0xA7DA, OV_CASED, 1, 0, {0xA7DB}},
    {0xA7DB, OV_CASED, 1, 0, {0xA7DB}}, {0xA7DC, OV_CASED, 1, 0, {0x19B}},
    {0xA7F1, OV_CASED | OV_IGNORABLE, 1, 0, {0xA7F1}}, {0x105C9, 0, 1, 0, {0x105D2}}, {0x105E4, 0, 1, 0, {0x105DA}},
    {0x10D4E, OV_IGNORABLE, 1, 0, {0x10D4E}}, {0x10D50, OV_CASED, 1, 0, {0x10D70}},
    {0x10D51, OV_CASED, 1, 0, {0x10D71}}, {0x10D52, OV_CASED, 1, 0, {0x10D72}}, {0x10D53, OV_CASED, 1, 0, {0x10D73}},
    {0x10D54, OV_CASED, 1, 0, {0x10D74}}, {0x10D55, OV_CASED, 1, 0, {0x10D75}}, {0x10D56, OV_CASED, 1, 0, {0x10D76}},
    {0x10D57, OV_CASED, 1, 0, {0x10D77}}, {0x10D58, OV_CASED, 1, 0, {0x10D78}}, {0x10D59, OV_CASED, 1, 0, {0x10D79}},
    {0x10D5A, OV_CASED, 1, 0, {0x10D7A}}, {0x10D5B, OV_CASED, 1, 0, {0x10D7B}}, {0x10D5C, OV_CASED, 1, 0, {0x10D7C}},
    {0x10D5D, OV_CASED, 1, 0, {0x10D7D}}, {0x10D5E, OV_CASED, 1, 0, {0x10D7E}}, {0x10D5F, OV_CASED, 1, 0, {0x10D7F}},
    {0x10D60, OV_CASED, 1, 0, {0x10D80}}, {0x10D61, OV_CASED, 1, 0, {0x10D81}}, {0x10D62, OV_CASED, 1, 0, {0x10D82}},
    {0x10D63, OV_CASED, 1, 0, {0x10D83}}, {0x10D64, OV_CASED, 1, 0, {0x10D84}}, {0x10D65, OV_CASED, 1, 0, {0x10D85}},
    {0x10D69, OV_IGNORABLE, 0, 230, {}}, {0x10D6A, OV_IGNORABLE, 0, 230, {}}, {0x10D6B, OV_IGNORABLE, 0, 230, {}},
    {0x10D6C, OV_IGNORABLE, 0, 230, {}}, {0x10D6D, OV_IGNORABLE, 0, 230, {}}, {0x10D6F, OV_IGNORABLE, 1, 0, {0x10D6F}},
    {0x10D70, OV_CASED, 1, 0, {0x10D70}}, {0x10D71, OV_CASED, 1, 0, {0x10D71}}, {0x10D72, OV_CASED, 1, 0, {0x10D72}},
    {0x10D73, OV_CASED, 1, 0, {0x10D73}}, {0x10D74, OV_CASED, 1, 0, {0x10D74}}, {0x10D75, OV_CASED, 1, 0, {0x10D75}},
    {0x10D76, OV_CASED, 1, 0, {0x10D76}}, {0x10D77, OV_CASED, 1, 0, {0x10D77}}, {0x10D78, OV_CASED, 1, 0, {0x10D78}},
    {0x10D79, OV_CASED, 1, 0, {0x10D79}}, {0x10D7A, OV_CASED, 1, 0, {0x10D7A}}, {0x10D7B, OV_CASED, 1, 0, {0x10D7B}},
    {0x10D7C, OV_CASED, 1, 0, {0x10D7C}}, {0x10D7D, OV_CASED, 1, 0, {0x10D7D}}, {0x10D7E, OV_CASED, 1, 0, {0x10D7E}},
    {0x10D7F, OV_CASED, 1, 0, {0x10D7F}}, {0x10D80, OV_CASED, 1, 0, {0x10D80}}, {0x10D81, OV_CASED, 1, 0, {0x10D81}},
    {0x10D82, OV_CASED, 1, 0, {0x10D82}}, {0x10D83, OV_CASED, 1, 0, {0x10D83}}, {0x10D84, OV_CASED, 1, 0, {0x10D84}},
    {0x10D85, OV_CASED, 1, 0, {0x10D85}}, {0x10EC5, OV_IGNORABLE, 1, 0, {0x10EC5}},
    {0x10EFA, OV_IGNORABLE, 0, 220, {}}, {0x10EFB, OV_IGNORABLE, 0, 220, {}}, {0x10EFC, OV_IGNORABLE, 0, 0, {}},
    {0x11383, 0, 2, 0, {0x11382, 0x113C9}}, {0x11385, 0, 1, 0, {0x11384}}, {0x1138E, 0, 2, 0, {0x1138B, 0x113C2}},
    {0x11391, 0, 2, 0, {0x11390, 0x113C9}}, {0x113BB, OV_IGNORABLE, 0, 0, {}}, {0x113BC, OV_IGNORABLE, 0, 0, {}},
    {0x113BD, OV_IGNORABLE, 0, 0, {}}, {0x113BE, OV_IGNORABLE, 0, 0, {}}, {0x113BF, OV_IGNORABLE, 0, 0, {}},
    {0x113C0, OV_IGNORABLE, 0, 0, {}}, {0x113C5, 0, 2, 0, {0x113C2, 0x113C2}}, {0x113C7, 0, 2, 0, {0x113C2, 0x113B8}},
    {0x113C8, 0, 2, 0, {0x113C2, 0x113C9}}, {0x113CE, OV_IGNORABLE, 0, 9, {}}, {0x113CF, 0, 1, 9, {0x113CF}},
    {0x113D0, OV_IGNORABLE, 0, 9, {}}, {0x113D2, OV_IGNORABLE, 0, 0, {}}, {0x113E1, OV_IGNORABLE, 0, 0, {}},
    {0x113E2, OV_IGNORABLE, 0, 0, {}}, {0x1171E, 0, 1, 0, {0x1171E}}, {0x11B60, OV_IGNORABLE, 0, 0, {}},
    {0x11B62, OV_IGNORABLE, 0, 0, {}}, {0x11B63, OV_IGNORABLE, 0, 0, {}}, {0x11B64, OV_IGNORABLE, 0, 0, {}},
    {0x11B66, OV_IGNORABLE, 0, 0, {}}, {0x11DD9, OV_IGNORABLE, 1, 0, {0x11DD9}}, {0x11F5A, OV_IGNORABLE, 0, 0, {}},
    {0x1611E, OV_IGNORABLE, 0, 0, {}}, {0x1611F, OV_IGNORABLE, 0, 0, {}}, {0x16120, OV_IGNORABLE, 0, 0, {}},
    {0x16121, OV_IGNORABLE, 0, 0, {}}, {0x16122, OV_IGNORABLE, 0, 0, {}}, {0x16123, OV_IGNORABLE, 0, 0, {}},
    {0x16124, OV_IGNORABLE, 0, 0, {}}, {0x16125, OV_IGNORABLE, 0, 0, {}}, {0x16126, OV_IGNORABLE, 0, 0, {}},
    {0x16127, OV_IGNORABLE, 0, 0, {}}, {0x16128, OV_IGNORABLE, 0, 0, {}}, {0x16129, OV_IGNORABLE, 0, 0, {}},
    {0x1612D, OV_IGNORABLE, 0, 0, {}}, {0x1612E, OV_IGNORABLE, 0, 0, {}}, {0x1612F, OV_IGNORABLE, 0, 9, {}},
    {0x16D40, OV_IGNORABLE, 1, 0, {0x16D40}}, {0x16D41, OV_IGNORABLE, 1, 0, {0x16D41}},
    {0x16D42, OV_IGNORABLE, 1, 0, {0x16D42}}, {0x16D68, 0, 2, 0, {0x16D67, 0x16D67}},
    {0x16D69, 0, 2, 0, {0x16D63, 0x16D67}}, {0x16D6A, 0, 3, 0, {0x16D63, 0x16D67, 0x16D67}},
    {0x16D6B, OV_IGNORABLE, 1, 0, {0x16D6B}}, {0x16D6C, OV_IGNORABLE, 1, 0, {0x16D6C}},
    {0x16EA0, OV_CASED, 1, 0, {0x16EBB}}, {0x16EA1, OV_CASED, 1, 0, {0x16EBC}}, {0x16EA2, OV_CASED, 1, 0, {0x16EBD}},
    {0x16EA3, OV_CASED, 1, 0, {0x16EBE}}, {0x16EA4, OV_CASED, 1, 0, {0x16EBF}}, {0x16EA5, OV_CASED, 1, 0, {0x16EC0}},
    {0x16EA6, OV_CASED, 1, 0, {0x16EC1}}, {0x16EA7, OV_CASED, 1, 0, {0x16EC2}}, {0x16EA8, OV_CASED, 1, 0, {0x16EC3}},
    {0x16EA9, OV_CASED, 1, 0, {0x16EC4}}, {0x16EAA, OV_CASED, 1, 0, {0x16EC5}}, {0x16EAB, OV_CASED, 1, 0, {0x16EC6}},
    {0x16EAC, OV_CASED, 1, 0, {0x16EC7}}, {0x16EAD, OV_CASED, 1, 0, {0x16EC8}}, {0x16EAE, OV_CASED, 1, 0, {0x16EC9}},
    {0x16EAF, OV_CASED, 1, 0, {0x16ECA}}, {0x16EB0, OV_CASED, 1, 0, {0x16ECB}}, {0x16EB1, OV_CASED, 1, 0, {0x16ECC}},
    {0x16EB2, OV_CASED, 1, 0, {0x16ECD}}, {0x16EB3, OV_CASED, 1, 0, {0x16ECE}}, {0x16EB4, OV_CASED, 1, 0, {0x16ECF}},
    {0x16EB5, OV_CASED, 1, 0, {0x16ED0}}, {0x16EB6, OV_CASED, 1, 0, {0x16ED1}}, {0x16EB7, OV_CASED, 1, 0, {0x16ED2}},
    {0x16EB8, OV_CASED, 1, 0, {0x16ED3}}, {0x16EBB, OV_CASED, 1, 0, {0x16EBB}}, {0x16EBC, OV_CASED, 1, 0, {0x16EBC}},
    {0x16EBD, OV_CASED, 1, 0, {0x16EBD}}, {0x16EBE, OV_CASED, 1, 0, {0x16EBE}}, {0x16EBF, OV_CASED, 1, 0, {0x16EBF}},
    {0x16EC0, OV_CASED, 1, 0, {0x16EC0}}, {0x16EC1, OV_CASED, 1, 0, {0x16EC1}}, {0x16EC2, OV_CASED, 1, 0, {0x16EC2}},
    {0x16EC3, OV_CASED, 1, 0, {0x16EC3}}, {0x16EC4, OV_CASED, 1, 0, {0x16EC4}}, {0x16EC5, OV_CASED, 1, 0, {0x16EC5}},
    {0x16EC6, OV_CASED, 1, 0, {0x16EC6}}, {0x16EC7, OV_CASED, 1, 0, {0x16EC7}}, {0x16EC8, OV_CASED, 1, 0, {0x16EC8}},
    {0x16EC9, OV_CASED, 1, 0, {0x16EC9}}, {0x16ECA, OV_CASED, 1, 0, {0x16ECA}}, {0x16ECB, OV_CASED, 1, 0, {0x16ECB}},
    {0x16ECC, OV_CASED, 1, 0, {0x16ECC}}, {0x16ECD, OV_CASED, 1, 0, {0x16ECD}}, {0x16ECE, OV_CASED, 1, 0, {0x16ECE}},
    {0x16ECF, OV_CASED, 1, 0, {0x16ECF}}, {0x16ED0, OV_CASED, 1, 0, {0x16ED0}}, {0x16ED1, OV_CASED, 1, 0, {0x16ED1}},
    {0x16ED2, OV_CASED, 1, 0, {0x16ED2}}, {0x16ED3, OV_CASED, 1, 0, {0x16ED3}},
    {0x16FF2, OV_IGNORABLE, 1, 0, {0x16FF2}}, {0x16FF3, OV_IGNORABLE, 1, 0, {0x16FF3}},
    {0x1E5EE, OV_IGNORABLE, 0, 230, {}}, {0x1E5EF, OV_IGNORABLE, 0, 220, {}}, {0x1E6E3, OV_IGNORABLE, 0, 230, {}},
    {0x1E6E6, OV_IGNORABLE, 0, 230, {}}, {0x1E6EE, OV_IGNORABLE, 0, 230, {}}, {0x1E6EF, OV_IGNORABLE, 0, 230, {}},
    {0x1E6F5, OV_IGNORABLE, 0, 230, {}}, {0x1E6FF, OV_IGNORABLE, 1, 0, {0x1E6FF}},
};
/* clang-format on */
#define PUNCT_NEWER                                                                                                    \
    "\\x{1B4E}-\\x{1B4F}\\x{1B7F}\\x{10D6E}\\x{10ED0}\\x{113D4}-\\x{113D5}\\x{113D7}-\\x{113D8}"                       \
    "\\x{11B00}-\\x{11B09}\\x{11BE1}\\x{11F43}-\\x{11F4F}\\x{16D6D}-\\x{16D6F}\\x{1E5FF}"

static const Override *find_override(uint32_t cp) {
    size_t lo = 0, hi = sizeof overrides / sizeof overrides[0];
    if (cp < overrides[0].cp) return NULL;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (overrides[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sizeof overrides / sizeof overrides[0] && overrides[lo].cp == cp ? &overrides[lo] : NULL;
}

/* ---- Character classes as the reference sees them ---- */

/* JavaScript's \s less the controls that cleaning drops first (\v \f U+0085
 * U+FEFF): \t \n \r, the Zs spaces and the line/paragraph separators. */
static int is_space(uint32_t cp) {
    if (cp < 0x80) return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r';
    return cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static int is_control_category(int cat) {
    return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CO ||
           cat == UTF8PROC_CATEGORY_CS;
}

/* The reference's is_chinese_char, applied to UTF-16 code units. */
static int is_cjk_bmp(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0xF900 && cp <= 0xFAFF);
}

/* Case_Ignorable: Mn Me Cf Lm Sk and the Word_Break MidLetter, MidNumLet and
 * Single_Quote characters. */
static int is_case_ignorable(uint32_t cp, int cat) {
    static const uint16_t mid[] = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x55F,  0x5F4,  0x2018, 0x2019,
                                   0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
    if (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_ME || cat == UTF8PROC_CATEGORY_CF ||
        cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_SK)
        return 1;
    for (size_t i = 0; i < sizeof mid / sizeof mid[0]; i++)
        if (cp == mid[i]) return 1;
    return 0;
}

/* Cased, for characters that are not case-ignorable (those are looked at
 * first): Lu Ll Lt, and the Other_Lowercase/Other_Uppercase letters and
 * symbols (ª º, Roman numerals, circled and squared Latin letters). */
static int is_cased(uint32_t cp, int cat) {
    if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) return 1;
    return cp == 0xAA || cp == 0xBA || (cp >= 0x2160 && cp <= 0x217F) || (cp >= 0x24B6 && cp <= 0x24E9) ||
           (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189);
}

/* For the Final_Sigma context: 1 cased, 0 case-ignorable (look further),
 * -1 neither. */
static int sigma_context(uint32_t cp) {
    const Override *o = find_override(cp);
    if (o) return (o->flags & OV_IGNORABLE) ? 0 : (o->flags & OV_CASED) ? 1 : -1;
    int cat = utf8proc_category((utf8proc_int32_t)cp);
    if (is_case_ignorable(cp, cat)) return 0;
    return is_cased(cp, cat) ? 1 : -1;
}

/* ---- Normalisation ---- */

/* ASCII after cleaning and lower-casing; 0 = dropped. */
static const unsigned char ascii_map[128] = {
    0,   0,   0,   0,   0,    0,   0,   0,   0,   ' ', ' ', 0,   0,   ' ', 0,   0,   0,   0,    0,   0,   0,   0,
    0,   0,   0,   0,   0,    0,   0,   0,   0,   0,   ' ', '!', '"', '#', '$', '%', '&', '\'', '(', ')', '*', '+',
    ',', '-', '.', '/', '0',  '1', '2', '3', '4', '5', '6', '7', '8', '9', ':', ';', '<', '=',  '>', '?', '@', 'a',
    'b', 'c', 'd', 'e', 'f',  'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 's',  't', 'u', 'v', 'w',
    'x', 'y', 'z', '[', '\\', ']', '^', '_', '`', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i',  'j', 'k', 'l', 'm',
    'n', 'o', 'p', 'q', 'r',  's', 't', 'u', 'v', 'w', 'x', 'y', 'z', '{', '|', '}', '~', 0};

#define MAX_PENDING 32

/* One normalisation in progress. Marks that NFD's canonical ordering could
 * move (combining class > 0) and that are not Mn wait in pending until the
 * next starter (class 0) ends their run. */
typedef struct Normalizer {
    const unsigned char *in;
    size_t len;
    ByteVec *out;
    uint32_t pending[MAX_PENDING];
    int pending_class[MAX_PENDING];
    int n_pending;
} Normalizer;

static void put_char(Normalizer *z, uint32_t cp) {
    unsigned char buf[4];
    utf8proc_ssize_t n = utf8proc_encode_char((utf8proc_int32_t)cp, buf);
    memcpy(z->out->data + z->out->len, buf, (size_t)n);
    z->out->len += (size_t)n;
}

/* Writes the pending marks in canonical order (a stable sort by class). */
static void flush_pending(Normalizer *z) {
    for (int i = 1; i < z->n_pending; i++)
        for (int j = i; j > 0 && z->pending_class[j - 1] > z->pending_class[j]; j--) {
            uint32_t c = z->pending[j];
            int k = z->pending_class[j];
            z->pending[j] = z->pending[j - 1], z->pending_class[j] = z->pending_class[j - 1];
            z->pending[j - 1] = c, z->pending_class[j - 1] = k;
        }
    for (int i = 0; i < z->n_pending; i++) put_char(z, z->pending[i]);
    z->n_pending = 0;
}

static void add_pending(Normalizer *z, uint32_t cp, int ccc) {
    if (z->n_pending == MAX_PENDING) flush_pending(z); /* a run this long is not text */
    z->pending[z->n_pending] = cp;
    z->pending_class[z->n_pending++] = ccc;
}

/* Emits one code point of an NFD decomposition: Mn marks are dropped. */
static void emit_decomposed(Normalizer *z, uint32_t cp) {
    const utf8proc_property_t *p = utf8proc_get_property((utf8proc_int32_t)cp);
    if (p->combining_class == 0) {
        flush_pending(z);
        if (p->category != UTF8PROC_CATEGORY_MN) put_char(z, cp);
        return;
    }
    if (p->category != UTF8PROC_CATEGORY_MN) add_pending(z, cp, p->combining_class);
}

/* Is a capital sigma at in[at] (2 bytes) final? Before it (in what was
 * already written, where marks were dropped as ignorable anyway) a cased
 * letter after only case-ignorable ones; after it, no cased letter after only
 * case-ignorable ones (characters that cleaning drops do not count). */
static int sigma_is_final(Normalizer *z, size_t at) {
    flush_pending(z);
    int before = -1;
    for (size_t i = z->out->len; i > 0;) {
        size_t start = i - 1;
        while (start > 0 && ((unsigned char)z->out->data[start] & 0xC0) == 0x80) start--;
        uint32_t cp;
        utf8_decode((const unsigned char *)z->out->data + start, i - start, &cp);
        if ((before = sigma_context(cp)) != 0) break;
        i = start;
    }
    if (before != 1) return 0;
    for (size_t i = at + 2; i < z->len;) {
        uint32_t cp;
        i += utf8_decode(z->in + i, z->len - i, &cp);
        if (cp == 0 || cp == 0xFFFD) continue;
        if (cp >= 0x80 && is_control_category(utf8proc_category((utf8proc_int32_t)cp))) continue;
        if (cp < 0x80 && ascii_map[cp] == 0) continue;
        int c = sigma_context(cp);
        if (c != 0) return c != 1;
    }
    return 1;
}

/* One non-ASCII character cp, read from in[at]. */
static void normalize_char(Normalizer *z, uint32_t cp, size_t at) {
    if (cp == 0xFFFD) return;
    const Override *o = find_override(cp);
    if (o) {
        if (o->ccc == 0) flush_pending(z);
        for (int i = 0; i < o->n; i++) {
            if (o->ccc == 0)
                put_char(z, o->to[i]);
            else
                add_pending(z, o->to[i], o->ccc);
        }
        return;
    }
    int cat = utf8proc_category((utf8proc_int32_t)cp);
    if (is_control_category(cat)) return;
    if (is_space(cp)) {
        flush_pending(z);
        z->out->data[z->out->len++] = ' ';
        return;
    }
    if (cp == 0x3A3) {
        flush_pending(z);
        put_char(z, sigma_is_final(z, at) ? 0x3C2 : 0x3C3);
        return;
    }
    int cjk = is_cjk_bmp(cp); /* padded before NFD, which maps U+F900.. onto U+4E00.. */
    if (cjk) {
        flush_pending(z);
        z->out->data[z->out->len++] = ' ';
    }
    utf8proc_int32_t d[8];
    int boundclass = 0;
    utf8proc_ssize_t n =
        utf8proc_decompose_char(utf8proc_tolower((utf8proc_int32_t)cp), d, 8, UTF8PROC_DECOMPOSE, &boundclass);
    for (utf8proc_ssize_t i = 0; i < n && n <= 8; i++) emit_decomposed(z, (uint32_t)d[i]);
    if (cjk) z->out->data[z->out->len++] = ' ';
}

/* Room enough before a non-ASCII character at in[i]: the rest of the input
 * (ASCII never grows), two flushes of pending marks, one decomposition and
 * the spaces around an ideograph. */
#define ROOM(i) (len - (i) + 2 * MAX_PENDING * 4 + 8 * 4 + 3)

int slm_text_normalize(const char *text, size_t len, ByteVec *out, Error *e) {
    if (slm_bytevec_reserve(out, out->len + len + 1, e)) return -1;
    Normalizer z = {.in = (const unsigned char *)text, .len = len, .out = out};
    size_t i = 0;
    while (i < len) {
        if (z.in[i] < 0x80) {
            if (z.n_pending) { /* dropped controls are not there for NFD: marks may go on */
                while (i < len && z.in[i] < 0x80 && ascii_map[z.in[i]] == 0) i++;
                if (i < len && z.in[i] >= 0x80) continue;
                flush_pending(&z);
            }
            char *w = out->data + out->len;
            while (i < len && z.in[i] < 0x80) {
                unsigned char c = ascii_map[z.in[i++]];
                *w = (char)c;
                w += c != 0;
            }
            out->len = (size_t)(w - out->data);
            continue;
        }
        if (slm_bytevec_reserve(out, out->len + ROOM(i), e)) return -1;
        uint32_t cp;
        size_t n = utf8_decode(z.in + i, len - i, &cp);
        normalize_char(&z, cp, i);
        i += n;
    }
    flush_pending(&z);
    out->data[out->len] = '\0';
    return 0;
}

/* One character of cased cleaning: dropped (controls, U+FFFD), ' ' for white
 * space, padded when a CJK ideograph, else kept as it is. */
static void clean_cased_char(ByteVec *out, uint32_t cp) {
    if (cp < 0x80) {
        unsigned char c = cp >= 'A' && cp <= 'Z' ? (unsigned char)cp : ascii_map[cp];
        if (c) out->data[out->len++] = (char)c;
        return;
    }
    if (cp == 0xFFFD || is_control_category(utf8proc_category((utf8proc_int32_t)cp))) return;
    if (is_space(cp)) {
        out->data[out->len++] = ' ';
        return;
    }
    int cjk = is_cjk_bmp(cp);
    if (cjk) out->data[out->len++] = ' ';
    unsigned char buf[4];
    utf8proc_ssize_t n = utf8proc_encode_char((utf8proc_int32_t)cp, buf);
    memcpy(out->data + out->len, buf, (size_t)n);
    out->len += (size_t)n;
    if (cjk) out->data[out->len++] = ' ';
}

int slm_text_normalize_cased(const char *text, size_t len, ByteVec *out, Error *e) {
    ByteVec clean = {0};
    /* A character grows by at most the two spaces around an ideograph. */
    if (slm_bytevec_reserve(&clean, 2 * len + 1, e)) return -1;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += utf8_decode(s + i, len - i, &cp);
        clean_cased_char(&clean, cp);
    }
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t n = clean.len ? utf8proc_map((const utf8proc_uint8_t *)clean.data, (utf8proc_ssize_t)clean.len,
                                                  &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE)
                                   : 0;
    slm_bytevec_free(&clean);
    if (n < 0) return FAIL(e, "free some memory", "cannot compose the text (NFC): %s", utf8proc_errmsg(n));
    int rc = slm_bytevec_reserve(out, out->len + (size_t)n + 1, e);
    if (rc == 0) {
        if (n) memcpy(out->data + out->len, nfc, (size_t)n);
        out->len += (size_t)n;
        out->data[out->len] = '\0';
    }
    free(nfc);
    return rc;
}

/* ---- Pre-tokenization ---- */

/* Every punctuation character is a word of its own: \p{P}, ASCII punctuation
 * (as BERT, so $ + < = > ^ ` | ~ too) and the punctuation PCRE2's tables do
 * not know yet (PUNCT_NEWER, with the overrides above). */
#define PUNCT "\\p{P}\\x{21}-\\x{2F}\\x{3A}-\\x{40}\\x{5B}-\\x{60}\\x{7B}-\\x{7E}" PUNCT_NEWER
static const char word_pattern[] = "[^\\s" PUNCT "]+|[" PUNCT "]";

static int next_word(const Pretokenizer *p, pcre2_match_data *md, const char *text, size_t len, size_t at,
                     size_t *start, size_t *end, Error *e);

/* Asks the pattern what each ASCII character is: no match in "c" is space, a
 * match of one character in "cc" punctuation, of two a word character. The
 * fast path of pretokenize splits ASCII text with this table alone, so PCRE2
 * stays the one definition of a word. */
static int learn_ascii(Pretokenizer *p, Error *e) {
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) return FAIL(e, "free some memory", "out of memory for the word matcher");
    int rc = 0;
    for (int c = 0; c < 128 && rc >= 0; c++) {
        char cc[2] = {(char)c, (char)c};
        size_t start, end;
        rc = next_word(p, md, cc, 2, 0, &start, &end, e);
        p->ascii_class[c] = rc == 0 ? ASCII_SPACE : end - start == 1 ? ASCII_PUNCT : ASCII_WORD;
    }
    pcre2_match_data_free(md);
    return rc < 0 ? -1 : 0;
}

int slm_pretokenizer_init(Pretokenizer *p, Error *e) {
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)word_pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &offset, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return FAIL(e, "this is a bug in storylm", "cannot compile the word pattern at offset %zu: %s", (size_t)offset,
                    (const char *)msg);
    }
    /* Without JIT (some platforms) pcre2_match is slower but gives the same words. */
    p->jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    p->code = re;
    return learn_ascii(p, e);
}

void slm_pretokenizer_free(Pretokenizer *p) {
    pcre2_code_free((pcre2_code *)p->code);
    p->code = NULL;
}

/* Finds the next word at or after `at`: 1 and its bounds, 0 when none is left. */
static int next_word(const Pretokenizer *p, pcre2_match_data *md, const char *text, size_t len, size_t at,
                     size_t *start, size_t *end, Error *e) {
    /* The text was checked once, so no match needs to check its UTF-8 again. */
    int m = p->jit ? pcre2_jit_match(p->code, (PCRE2_SPTR)text, len, at, 0, md, NULL)
                   : pcre2_match(p->code, (PCRE2_SPTR)text, len, at, PCRE2_NO_UTF_CHECK, md, NULL);
    if (m == PCRE2_ERROR_NOMATCH) return 0;
    if (m < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(m, msg, sizeof msg);
        return FAIL(e, "this is a bug in storylm", "cannot split text into words: %s", (const char *)msg);
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *start = ov[0], *end = ov[1];
    return 1;
}

int slm_pretokenize(const Pretokenizer *p, const char *normalized, size_t len, WordFn fn, void *ctx, Error *e) {
    if (slm_utf8_validate(normalized, len, "text to split into words", e)) return -1;
    /* Match data per call: the compiled pattern is shared by threads, this is not. */
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) return FAIL(e, "free some memory", "out of memory for the word matcher");
    const unsigned char *s = (const unsigned char *)normalized;
    int rc = 0;
    size_t start, end;
    for (size_t at = 0; at < len && rc == 0; at = end) {
        /* ASCII fast path: spaces, punctuation and ASCII-only words need no match call. */
        int c = s[at] < 0x80 ? p->ascii_class[s[at]] : ASCII_WORD;
        if (c == ASCII_SPACE) {
            end = at + 1;
            continue;
        }
        start = at, end = at + 1;
        if (c == ASCII_WORD) {
            while (end < len && s[end] < 0x80 && p->ascii_class[s[end]] == ASCII_WORD) end++;
            if ((s[at] >= 0x80 || (end < len && s[end] >= 0x80))) {
                int found = next_word(p, md, normalized, len, at, &start, &end, e);
                if (found <= 0) {
                    rc = found;
                    break;
                }
            }
        }
        rc = fn(normalized + start, end - start, ctx);
    }
    pcre2_match_data_free(md);
    return rc;
}
