/* Fuzzes the tokenizer: BERT normalisation, the word splitter, WordPiece
 * encoding and decoding of any bytes, and loading any vocab.txt text.
 *
 * Byte 0 of the input picks what the rest is:
 *   even: text, encoded with the fixed vocabulary of fuzz_util.h; when no
 *         word became [UNK], decoding and encoding again must give the same
 *         ids (tokenizer.h promises it); bit 1 asks for capitals.
 *   odd:  bytes 1-2 are a length n (little-endian); the next n bytes are a
 *         vocab.txt, loaded; if it loads, the rest is text encoded with it,
 *         and ids made from the input's bytes (some out of range) decoded. */
#include "fuzz_util.h"

#include <string.h>

#include "storylm/text.h"

/* Encoding must give ids of the vocabulary only. */
static void check_ids(const Tokenizer *t, const IntVec *ids) {
    for (size_t i = 0; i < ids->len; i++) FUZZ_ASSERT(ids->data[i] >= 0 && ids->data[i] < t->size);
}

static int has_unk(const Tokenizer *t, const IntVec *ids) {
    for (size_t i = 0; i < ids->len; i++)
        if (ids->data[i] == t->unk_id) return 1;
    return 0;
}

/* decode(ids) encoded again gives ids back. */
static void check_round_trip(const Tokenizer *t, const IntVec *ids, int capitalize) {
    Error e = {0};
    char *text = slm_tokenizer_decode(t, ids->data, ids->len, capitalize, &e);
    FUZZ_ASSERT(text != NULL);
    FUZZ_ASSERT(slm_utf8_validate(text, strlen(text), "decoded text", NULL) == 0);
    IntVec again = {0};
    FUZZ_ASSERT(slm_tokenizer_encode(t, text, strlen(text), &again, &e) == 0);
    int same = again.len == ids->len && memcmp(again.data, ids->data, ids->len * sizeof *ids->data) == 0;
    if (!same) {
        fprintf(stderr, "decoded text: \"%s\"\nids:", text);
        for (size_t i = 0; i < ids->len; i++) fprintf(stderr, " %s", t->pieces[ids->data[i]]);
        fprintf(stderr, "\nagain:");
        for (size_t i = 0; i < again.len; i++) fprintf(stderr, " %s", t->pieces[again.data[i]]);
        fprintf(stderr, "\n");
    }
    FUZZ_ASSERT(same);
    slm_intvec_free(&again);
    free(text);
}

static void fixed_vocab(const uint8_t *data, size_t size, int capitalize) {
    const Tokenizer *t = fuzz_tokenizer();
    IntVec ids = {0};
    Error e = {0};
    FUZZ_ASSERT(slm_tokenizer_encode(t, (const char *)data, size, &ids, &e) == 0); /* any bytes are accepted */
    check_ids(t, &ids);
    if (!has_unk(t, &ids)) check_round_trip(t, &ids, capitalize);
    slm_intvec_free(&ids);
}

/* ids from raw bytes, a few past the vocabulary, must decode or be refused. */
static void decode_raw(const Tokenizer *t, const uint8_t *data, size_t size) {
    int32_t raw[64];
    size_t n = size < 64 ? size : 64;
    for (size_t i = 0; i < n; i++) raw[i] = (int32_t)(data[i] % (unsigned)(t->size + 2)) - (data[i] == 0xFF);
    Error e = {0};
    free(slm_tokenizer_decode(t, raw, n, 1, &e));
}

static void own_vocab(const uint8_t *data, size_t size) {
    if (size < 2) return;
    size_t n = (size_t)data[0] | (size_t)data[1] << 8;
    data += 2, size -= 2;
    if (n > size) n = size;
    Tokenizer t;
    Error e = {0};
    if (slm_tokenizer_from_text(&t, (const char *)data, n, 0, &e) != 0) {
        FUZZ_ASSERT(e.message[0] != '\0'); /* refused, with a message */
        return;
    }
    FUZZ_ASSERT(t.size >= 2 && t.unk_id >= 0 && t.eos_id >= 0);
    IntVec ids = {0};
    FUZZ_ASSERT(slm_tokenizer_encode(&t, (const char *)data + n, size - n, &ids, &e) == 0);
    check_ids(&t, &ids);
    free(slm_tokenizer_decode(&t, ids.data, ids.len, 1, &e));
    decode_raw(&t, data + n, size - n);
    size_t len;
    char *text = slm_tokenizer_to_text(&t, &len, &e);
    FUZZ_ASSERT(text != NULL);
    free(text);
    slm_intvec_free(&ids);
    slm_tokenizer_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] & 1)
        own_vocab(data + 1, size - 1);
    else
        fixed_vocab(data + 1, size - 1, data[0] & 2);
    return 0;
}
