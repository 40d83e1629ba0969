/* A cased vocabulary keeps the writer's letters, and decoding puts quotes,
 * elisions and capitals where a reader expects them: each rule with a small
 * hand-made vocabulary, and a French/German/English round trip through a
 * cased vocabulary learnt from a few stories. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/text.h"
#include "storylm/tokenizer.h"
#include "storylm/vocab_train.h"

/* Both vocabularies below hold these pieces; the cased one adds [CASED]. */
static const char pieces[] = "[UNK]\n[EOS]\nshe\nsaid\nthis\nis\nfun\nwhy\nasked\ntom\nstop\nthe\ndog\nran\nyes\n"
                             "man\ndit\nl\nhistoire\ndon\nt\nschau\nmal\nder\nhund\nregarde\nthey\nwent\nqu\nil\nthe\n"
                             "dogs\ntoys\n.\n,\n!\n?\n\"\n'\n\xe2\x80\x9e\n\xe2\x80\x9c\n\xc2\xab\n\xc2\xbb\n:\n";

/* pieces, without the second "the" (a duplicate is refused) and, when cased, with [CASED]. */
static int make(Tokenizer *t, int cased) {
    char text[sizeof pieces + 16];
    const char *dup = strstr(strstr(pieces, "\nthe\n") + 1, "\nthe\n");
    size_t head = (size_t)(dup - pieces) + 1;
    memcpy(text, pieces, head);
    strcpy(text + head, dup + 5);
    if (cased) strcat(text, "[CASED]\n");
    Error e = {0};
    int rc = slm_tokenizer_from_text(t, text, strlen(text), 0, &e);
    if (rc) fprintf(stderr, "  vocabulary: %s\n", e.message);
    return rc;
}

/* Encodes text with t, decodes it (capitalising, as generate does) and compares. */
static int decodes(const Tokenizer *t, const char *text, const char *want) {
    IntVec ids = {0};
    Error e = {0};
    char *got = slm_tokenizer_encode(t, text, strlen(text), &ids, &e)
                    ? NULL
                    : slm_tokenizer_decode(t, ids.data, ids.len, 1, &e);
    int ok = got && strcmp(got, want) == 0;
    if (!ok) fprintf(stderr, "  \"%s\": got \"%s\", want \"%s\"\n", text, got ? got : e.message, want);
    /* generation streams the text of the words so far: a whole word's text never changes as more come */
    for (size_t k = 1; ok && k < ids.len; k++) {
        if (strncmp(t->pieces[ids.data[k]], "##", 2) == 0) continue;
        char *head = slm_tokenizer_decode(t, ids.data, k, 1, &e);
        ok = head && strncmp(head, got, strlen(head)) == 0;
        if (!ok)
            fprintf(stderr, "  \"%s\": its first %zu tokens give \"%s\", not a start of \"%s\"\n", text, k, head, got);
        free(head);
    }
    free(got);
    slm_intvec_free(&ids);
    return ok;
}

/* Each decoding rule on the uncased vocabulary (the chapter's). */
static void test_rules(void) {
    Tokenizer t;
    if (!CHECK(make(&t, 0) == 0)) return;
    CHECK(!t.cased);
    /* the quote opens after "said," even when an earlier quote was left open */
    CHECK(decodes(&t, "she said, \"this is fun", "She said, \"This is fun"));
    CHECK(decodes(&t, "\"stop! she said, \"this is fun.\"", "\"Stop! She said, \"This is fun.\""));
    CHECK(decodes(&t, "\"why?\" asked tom.", "\"Why?\" asked tom."));          /* a dialogue tag: lower case */
    CHECK(decodes(&t, "\"stop!\" the dog ran.", "\"Stop!\" The dog ran."));    /* no tag: a new sentence */
    CHECK(decodes(&t, "\"yes!\" she said.", "\"Yes!\" she said."));            /* a pronoun opens a tag */
    CHECK(decodes(&t, "\"stop.\" they went.", "\"Stop.\" They went."));        /* after ." always */
    CHECK(decodes(&t, "l'histoire qu'il", "L'histoire qu'il"));                /* elisions */
    CHECK(decodes(&t, "don't, the dogs' toys", "Don't, the dogs' toys"));      /* contraction, possessive */
    CHECK(decodes(&t, "der hund: \xe2\x80\x9eschau mal!\xe2\x80\x9c der hund", /* „…“ */
                  "Der hund: \xe2\x80\x9eSchau mal!\xe2\x80\x9c Der hund"));
    CHECK(decodes(&t, "\xc2\xab regarde ! \xc2\xbb dit", "\xc2\xabRegarde!\xc2\xbb dit")); /* «…» glued */
    CHECK(decodes(&t, "she said, \"", "She said, \""));                                    /* a prompt's open quote */
    slm_tokenizer_free(&t);
}

/* The cased vocabulary: no lower-casing, no accents stripped, NFC; the
 * decoder keeps the model's own capitals. */
static void test_cased_text(void) {
    ByteVec out = {0};
    Error e = {0};
    /* Théo, "e" + U+0301 composed to é, a tab to a space, U+0007 dropped, 猫 padded */
    const char text[] = "Th\xc3\xa9o e\xcc\x81t\xc3\xa9\tK\xc3\xa4the\x07 \xe7\x8c\xab!";
    CHECK(slm_text_normalize_cased(text, sizeof text - 1, &out, &e) == 0);
    CHECK(out.data && strcmp(out.data, "Th\xc3\xa9o \xc3\xa9t\xc3\xa9 K\xc3\xa4the  \xe7\x8c\xab !") == 0);
    slm_bytevec_free(&out);
    CHECK(slm_text_normalize(text, sizeof text - 1, &out, &e) == 0); /* the default is as it was */
    CHECK(out.data && strcmp(out.data, "theo ete kathe  \xe7\x8c\xab !") == 0);
    slm_bytevec_free(&out);
    Tokenizer t;
    if (!CHECK(make(&t, 1) == 0)) return;
    CHECK(t.cased);
    CHECK(decodes(&t, "she said, \"this is fun.\"", "she said, \"this is fun.\"")); /* not capitalised */
    IntVec ids = {0};
    CHECK(slm_tokenizer_encode(&t, "She", 3, &ids, &e) == 0 && ids.len == 1 && ids.data[0] == t.unk_id);
    slm_intvec_free(&ids);
    slm_tokenizer_free(&t);
}

static const char stories[] =
    "Th\xc3\xa9o et K\xc3\xa4the jouaient. \xc2\xab Regarde ! \xc2\xbb dit Th\xc3\xa9o. C'\xc3\xa9tait "
    "l'histoire d'un chat tr\xc3\xa8s content.\n<|endoftext|>\n"
    "K\xc3\xa4the rief: \xe2\x80\x9eSchau mal!\xe2\x80\x9c Der Hund war m\xc3\xbc"
    "de. Sie sagte, \"das ist "
    "sch\xc3\xb6n.\" Danach gingen sie nach Hause.\n<|endoftext|>\n"
    "She said, \"this is fun.\" Lily's mom didn't know. \"Why?\" asked Tom. \"Stop!\" The dog ran.\n";

/* Spaces taken out, to compare texts whitespace aside. */
static void squeeze(const char *s, char *out) {
    for (; *s; s++)
        if (*s != ' ' && *s != '\n') *out++ = *s;
    *out = '\0';
}

/* A cased vocabulary learnt from French, German and English stories: [CASED]
 * at id 2, and every story decodes back to its text, capitals and accents. */
static void test_round_trip(void) {
    Vocab v = {0};
    Error e = {0};
    if (!CHECK(slm_vocab_train_text_until(stories, sizeof stories - 1, "stories", 400, true, true, NULL, &v, NULL,
                                          &e) == 0)) {
        fprintf(stderr, "  %s\n", e.message);
        return;
    }
    CHECK(v.size > 3 && strcmp(v.pieces[2], TOKEN_CASED_TEXT) == 0);
    size_t len;
    char *text = slm_vocab_to_text(&v, &len, &e);
    Tokenizer t;
    CHECK(text && slm_tokenizer_from_text(&t, text, len, 0, &e) == 0 && t.cased);
    for (const char *s = stories; *s;) {
        const char *end = strstr(s, "<|endoftext|>");
        size_t n = end ? (size_t)(end - s) : strlen(s);
        IntVec ids = {0};
        CHECK(slm_tokenizer_encode(&t, s, n, &ids, &e) == 0);
        for (size_t i = 0; i < ids.len; i++) CHECK(ids.data[i] != t.unk_id);
        char *back = slm_tokenizer_decode(&t, ids.data, ids.len, 1, &e);
        char *want = calloc(n + 1, 1), *got = calloc(back ? strlen(back) + 1 : 1, 1), *orig = calloc(n + 1, 1);
        memcpy(orig, s, n);
        squeeze(orig, want);
        if (back) squeeze(back, got);
        if (!CHECK(back && strcmp(got, want) == 0)) fprintf(stderr, "  got \"%s\"\n  want \"%s\"\n", back, orig);
        free(back), free(want), free(got), free(orig);
        slm_intvec_free(&ids);
        s = end ? end + strlen("<|endoftext|>\n") : s + n;
    }
    slm_tokenizer_free(&t);
    free(text);
    slm_vocab_free(&v);
    /* the same stories uncased: the vocabulary has no [CASED] and the letters are gone */
    CHECK(slm_vocab_train_text_up_to(stories, sizeof stories - 1, "stories", 400, &v, NULL, &e) == 0);
    for (int i = 0; i < v.size; i++) CHECK(strcmp(v.pieces[i], TOKEN_CASED_TEXT) != 0 && !strchr(v.pieces[i], 'T'));
    slm_vocab_free(&v);
}

int main(void) {
    test_rules();
    test_cased_text();
    test_round_trip();
    return check_report();
}
