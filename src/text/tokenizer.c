/* The WordPiece tokenizer (see tokenizer.h): vocab.txt loading, encoding
 * (normalise, split into words, greedy longest-match-first pieces) and
 * decoding into readable text.
 *
 * Encoding allocates nothing per word: pieces are found in an open-addressing
 * hash table by hashing the candidate bytes in place (with the "##" prefix
 * hashed first for continuation pieces). A Tokenizer is read-only once
 * loaded, so any number of threads may encode with it at once. */
#include "storylm/tokenizer.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <utf8proc.h>

#include "storylm/fileio.h"

/* ---- Hash table of pieces ---- */

/* Final mixing of slm_hash64's state (fileio.h), so that similar pieces
 * spread over the table. */
static uint32_t hash_done(uint64_t h64) {
    uint32_t h = (uint32_t)(h64 ^ h64 >> 32);
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    return h ^ (h >> 15);
}

/* id of the piece prefix + s[0..n) (prefix is "" or "##"), or -1. */
static int find_piece(const Tokenizer *t, const char *prefix, size_t np, const char *s, size_t n) {
    uint32_t h = hash_done(slm_hash64_more(slm_hash64(prefix, np, 0), s, n));
    int32_t id;
    for (HashProbe probe = hashmap_probe(&t->index, h); (id = hashmap_next(&t->index, &probe)) >= 0;) {
        const char *p = t->pieces[id];
        if ((size_t)t->piece_len[id] == np + n && memcmp(p, prefix, np) == 0 && memcmp(p + np, s, n) == 0) return id;
    }
    return -1;
}

int slm_tokenizer_lookup(const Tokenizer *t, const char *piece, size_t len) { return find_piece(t, "", 0, piece, len); }

/* ---- Loading ---- */

void slm_tokenizer_free(Tokenizer *t) {
    if (t->pretokenizer.code) slm_pretokenizer_free(&t->pretokenizer);
    free(t->pieces);
    free(t->piece_len);
    free(t->storage);
    slm_hashmap_free(&t->index);
    *t = (Tokenizer){0};
}

/* Adds piece `id` (line `line` of what) to the table; refuses a duplicate. */
static int add_piece(Tokenizer *t, int id, const char *what, Error *e) {
    const char *p = t->pieces[id];
    int n = t->piece_len[id];
    int old = slm_tokenizer_lookup(t, p, (size_t)n);
    if (old >= 0)
        return FAIL(e, "every piece may appear once; make the vocabulary again with storylm vocab STORIES",
                    "%s line %d: duplicate piece '%s' (already on line %d)", what, id + 1, p, old + 1);
    if (slm_hashmap_add(&t->index, hash_done(slm_hash64(p, (size_t)n, 0)), id, e)) return -1;
    if (n > t->max_piece_len) t->max_piece_len = n;
    return 0;
}

/* Splits text into lines, checks each and fills pieces/piece_len/storage. */
static int read_lines(Tokenizer *t, const char *text, size_t len, const char *what, Error *e) {
    size_t n_lines = 0;
    for (size_t i = 0; i < len; i++) n_lines += text[i] == '\n';
    if (len > 0 && text[len - 1] != '\n') n_lines++; /* a last line without its newline */
    if (n_lines == 0) return FAIL(e, "make a vocabulary with storylm vocab STORIES", "%s is empty: no pieces", what);
    if (n_lines > INT32_MAX / 2) return FAIL(e, NULL, "%s has too many lines (%zu)", what, n_lines);
    t->pieces = xcalloc(n_lines, sizeof *t->pieces, e);
    t->piece_len = t->pieces ? xcalloc(n_lines, sizeof *t->piece_len, e) : NULL;
    t->storage = t->piece_len ? xmalloc(len + 1, e) : NULL;
    if (!t->storage) return -1;
    memcpy(t->storage, text, len);
    t->storage[len] = '\0';
    char *s = t->storage;
    for (size_t line = 0, at = 0; line < n_lines; line++) {
        char *end = memchr(s + at, '\n', len - at);
        size_t stop = end ? (size_t)(end - s) : len;
        size_t n = stop - at;
        if (n > 0 && s[at + n - 1] == '\r') n--;
        char where[64];
        snprintf(where, sizeof where, "line %zu", line + 1);
        if (n == 0)
            return FAIL(e, "a vocabulary has one piece on every line; remove the empty line", "%s line %zu is empty",
                        what, line + 1);
        if (slm_utf8_validate(s + at, n, where, e)) {
            slm_error_prefix(e, "%s ", what);
            return -1;
        }
        s[at + n] = '\0';
        t->pieces[line] = s + at;
        t->piece_len[line] = (int)n;
        t->size = (int)line + 1;
        at = stop + 1;
    }
    return 0;
}

/* The whole load from text in memory; what names it in messages. */
static int load_text(Tokenizer *t, const char *text, size_t len, int expected_size, const char *what, Error *e) {
    *t = (Tokenizer){.unk_id = -1, .eos_id = -1};
    if (read_lines(t, text, len, what, e)) goto fail;
    if (expected_size > 0 && t->size != expected_size) {
        FAIL(e, "make the vocabulary again with storylm vocab STORIES, or use the matching model",
             "%s has %d pieces, expected %d", what, t->size, expected_size);
        goto fail;
    }
    if (slm_hashmap_reserve(&t->index, (size_t)t->size, e)) goto fail;
    for (int id = 0; id < t->size; id++)
        if (add_piece(t, id, what, e)) goto fail;
    t->unk_id = slm_tokenizer_lookup(t, TOKEN_UNK_TEXT, strlen(TOKEN_UNK_TEXT));
    t->eos_id = slm_tokenizer_lookup(t, TOKEN_EOS_TEXT, strlen(TOKEN_EOS_TEXT));
    if (t->unk_id < 0 || t->eos_id < 0) {
        FAIL(e, "a storylm vocabulary has the pieces [UNK] and [EOS]; make it with storylm vocab STORIES",
             "%s has no %s line", what, t->unk_id < 0 ? TOKEN_UNK_TEXT : TOKEN_EOS_TEXT);
        goto fail;
    }
    t->cased = slm_tokenizer_lookup(t, TOKEN_CASED_TEXT, strlen(TOKEN_CASED_TEXT)) >= 0;
    if (slm_pretokenizer_init(&t->pretokenizer, e)) goto fail;
    return 0;
fail:
    slm_tokenizer_free(t);
    return -1;
}

int slm_tokenizer_from_text(Tokenizer *t, const char *text, size_t len, int expected_size, Error *e) {
    return load_text(t, text, len, expected_size, "the vocabulary", e);
}

int slm_tokenizer_load(Tokenizer *t, const char *path, int expected_size, Error *e) {
    char *text;
    size_t len;
    *t = (Tokenizer){0};
    if (slm_file_read_all(path, 0, &text, &len, e)) {
        if (e && access(path, F_OK) != 0)
            snprintf(e->hint, sizeof e->hint, "run storylm vocab STORIES first (it writes %s)", path);
        return -1;
    }
    char what[1100];
    snprintf(what, sizeof what, "'%s'", path);
    int rc = load_text(t, text, len, expected_size, what, e);
    free(text);
    return rc;
}

char *slm_tokenizer_to_text(const Tokenizer *t, size_t *len, Error *e) {
    size_t n = 0;
    for (int id = 0; id < t->size; id++) n += (size_t)t->piece_len[id] + 1;
    char *text = xmalloc(n + 1, e);
    if (!text) return NULL;
    char *w = text;
    for (int id = 0; id < t->size; id++) {
        memcpy(w, t->pieces[id], (size_t)t->piece_len[id]);
        w += t->piece_len[id];
        *w++ = '\n';
    }
    *w = '\0';
    *len = n;
    return text;
}

/* ---- Encoding ---- */

typedef struct EncodeCtx {
    const Tokenizer *t;
    IntVec *out;
    Error *e;
    TokenizerMemo *memo; /* NULL: none */
} EncodeCtx;

/* A remembered word: its bytes and its ids (short words of few pieces only). */
#define MEMO_SLOTS 8192
#define MEMO_WORD 22
#define MEMO_IDS 6
typedef struct MemoSlot {
    uint8_t len, n_ids; /* len 0: empty */
    char word[MEMO_WORD];
    int32_t ids[MEMO_IDS];
} MemoSlot;

int slm_tokenizer_memo_init(TokenizerMemo *m, const Tokenizer *t, Error *e) {
    m->t = t;
    m->slots = xcalloc(MEMO_SLOTS, sizeof(MemoSlot), e);
    return m->slots ? 0 : -1;
}

void slm_tokenizer_memo_free(TokenizerMemo *m) {
    free(m->slots);
    *m = (TokenizerMemo){0};
}

static MemoSlot *memo_slot(TokenizerMemo *m, const char *word, size_t n) {
    return &m->slots[hash_done(slm_hash64(word, n, 0)) & (MEMO_SLOTS - 1)];
}

/* The ids out->data[mark..] of word, remembered when they fit a slot. */
static void memo_keep(MemoSlot *slot, const char *word, size_t n, const IntVec *out, size_t mark) {
    size_t k = out->len - mark;
    if (k > MEMO_IDS) return;
    slot->len = (uint8_t)n, slot->n_ids = (uint8_t)k;
    memcpy(slot->word, word, n);
    memcpy(slot->ids, out->data + mark, k * sizeof(int32_t));
}

static size_t count_chars(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* Greedy longest-match-first: the longest piece that starts the rest of the
 * word ("##" pieces after the first), again and again; a word that cannot be
 * covered, or of more than TOKENIZER_MAX_WORD_CHARS characters, is [UNK]. */
static int encode_pieces(const char *word, size_t n, EncodeCtx *ctx);

/* A word's ids: remembered, or found piece by piece (and remembered). */
static int encode_word(const char *word, size_t n, void *ctx_) {
    EncodeCtx *ctx = ctx_;
    if (!ctx->memo || n > MEMO_WORD) return encode_pieces(word, n, ctx);
    MemoSlot *slot = memo_slot(ctx->memo, word, n);
    if (slot->len == n && memcmp(slot->word, word, n) == 0) {
        for (int i = 0; i < slot->n_ids; i++)
            if (slm_intvec_push(ctx->out, slot->ids[i], ctx->e)) return -1;
        return 0;
    }
    size_t mark = ctx->out->len;
    if (encode_pieces(word, n, ctx)) return -1;
    memo_keep(slot, word, n, ctx->out, mark);
    return 0;
}

static int encode_pieces(const char *word, size_t n, EncodeCtx *ctx) {
    const Tokenizer *t = ctx->t;
    size_t mark = ctx->out->len;
    if (count_chars(word, n) > TOKENIZER_MAX_WORD_CHARS) return slm_intvec_push(ctx->out, t->unk_id, ctx->e);
    for (size_t start = 0; start < n;) {
        size_t end = n - start > (size_t)t->max_piece_len ? start + (size_t)t->max_piece_len : n;
        while (end < n && ((unsigned char)word[end] & 0xC0) == 0x80) end--; /* a character boundary */
        int id = -1;
        for (; end > start; end--) {
            if (end < n && ((unsigned char)word[end] & 0xC0) == 0x80) continue;
            id = start ? find_piece(t, "##", 2, word + start, end - start) : find_piece(t, "", 0, word, end);
            if (id >= 0) break;
        }
        if (id < 0) {
            ctx->out->len = mark;
            return slm_intvec_push(ctx->out, t->unk_id, ctx->e);
        }
        if (slm_intvec_push(ctx->out, id, ctx->e)) return -1;
        start = end;
    }
    return 0;
}

int slm_tokenizer_normalize(const Tokenizer *t, const char *text, size_t len, ByteVec *out, Error *e) {
    return t->cased ? slm_text_normalize_cased(text, len, out, e) : slm_text_normalize(text, len, out, e);
}

int slm_tokenizer_encode(const Tokenizer *t, const char *text, size_t len, IntVec *out, Error *e) {
    return slm_tokenizer_encode_memo(t, NULL, text, len, out, e);
}

int slm_tokenizer_encode_memo(const Tokenizer *t, TokenizerMemo *m, const char *text, size_t len, IntVec *out,
                              Error *e) {
    if (m && m->t != t) return FAIL(e, NULL, "a tokenizer memo used with another tokenizer");
    ByteVec normalized = {0};
    if (slm_tokenizer_normalize(t, text, len, &normalized, e)) return -1;
    /* About one piece per four bytes of story text: reserve to grow rarely. */
    int rc = slm_intvec_reserve(out, out->len + normalized.len / 4 + 16, e);
    EncodeCtx ctx = {t, out, e, m};
    if (rc == 0) rc = slm_pretokenize(&t->pretokenizer, normalized.data, normalized.len, encode_word, &ctx, e);
    slm_bytevec_free(&normalized);
    return rc ? -1 : 0;
}

/* ---- Decoding ---- */

/* How a piece sits among its neighbours in readable text. */
typedef enum {
    PIECE_WORD,       /* letters, digits: spaces around */
    PIECE_CLOSE,      /* . , ! ? ; : ) ] } ” » … % : glued to the word before */
    PIECE_OPEN,       /* ( [ { “ « ‘ „ ‚ ¡ ¿ : glued to the word after (“ ‘ close a „ ‚) */
    PIECE_JOIN,       /* - / : glued on both sides (ice-cream) */
    PIECE_DQUOTE,     /* " : opens or closes, by count */
    PIECE_APOSTROPHE, /* ' ’ : don't, lily's, or a quote */
    PIECE_OTHER,      /* other punctuation and symbols: spaces around */
} PieceKind;

static uint32_t first_char(const char *s) {
    utf8proc_int32_t cp = 0;
    utf8proc_iterate((const utf8proc_uint8_t *)s, -1, &cp);
    return cp < 0 ? 0 : (uint32_t)cp;
}

static PieceKind piece_kind(const char *p) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)p, -1, &c);
    if (k <= 0 || p[k] != '\0') return PIECE_WORD; /* punctuation pieces are one character */
    switch (c) {
        case '.':
        case ',':
        case '!':
        case '?':
        case ';':
        case ':':
        case ')':
        case ']':
        case '}':
        case '%':
        case 0x201D:
        case 0xBB:
        case 0x2026: return PIECE_CLOSE;
        case '(':
        case '[':
        case '{':
        case 0x201C:
        case 0xAB:
        case 0x2018:
        case 0x201E:
        case 0x201A:
        case 0xA1:
        case 0xBF: return PIECE_OPEN;
        case '-':
        case '/':
        case 0x2013:
        case 0x2014: return PIECE_JOIN;
        case '"': return PIECE_DQUOTE;
        case '\'':
        case 0x2019: return PIECE_APOSTROPHE;
        default: break;
    }
    int cat = utf8proc_category(c);
    int ascii_punct = c < 0x80 && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && !(c >= '0' && c <= '9');
    return ascii_punct || (cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO) ? PIECE_OTHER : PIECE_WORD;
}

/* The piece at ids[i] (if any) goes on the word before it ("##..."). */
static int continues_word(const Tokenizer *t, const int32_t *ids, size_t n, size_t i) {
    return i < n && ids[i] >= 0 && ids[i] < t->size && strncmp(t->pieces[ids[i]], "##", 2) == 0;
}

/* ids[i] is a whole word that makes one word with an apostrophe before it:
 * don't, lily's, i'm, we're, i've, i'll, i'd. */
static int is_contraction_tail(const Tokenizer *t, const int32_t *ids, size_t n, size_t i) {
    static const char *const tails[] = {"t", "s", "m", "re", "ve", "ll", "d"};
    if (i >= n || ids[i] < 0 || ids[i] >= t->size || continues_word(t, ids, n, i + 1)) return 0;
    for (size_t k = 0; k < sizeof tails / sizeof tails[0]; k++)
        if (strcmp(t->pieces[ids[i]], tails[k]) == 0) return 1;
    return 0;
}

static int ends_in_digit(const Tokenizer *t, int id) {
    char last = t->pieces[id][t->piece_len[id] - 1];
    return last >= '0' && last <= '9';
}

typedef struct Decoder {
    ByteVec out;
    int glue_next;            /* no space before the next piece */
    int sentence_start;       /* capitalise the next word */
    int tag_may_follow;       /* ... unless it opens a dialogue tag (a quote closed on ! or ?) */
    int in_dquote;            /* a " is open */
    int low_open;             /* a German „ (1) or ‚ (2) is open: “ or ‘ closes it */
    int prev_word;            /* the piece before was part of a word */
    int prev_digit;           /* ... and ended in a digit */
    uint32_t prev_punct;      /* the piece before was this punctuation character (0: none) */
    size_t word_at, word_end; /* the last word written: out.data[word_at .. word_end) */
    Error *e;
} Decoder;

/* Is the last word written one of words (ASCII, compared ignoring case)? */
static int last_word_is(const Decoder *d, const char *const *words, size_t n_words) {
    size_t n = d->word_end - d->word_at;
    for (size_t k = 0; k < n_words; k++)
        if (strlen(words[k]) == n && strncasecmp(d->out.data + d->word_at, words[k], n) == 0) return 1;
    return 0;
}

/* The verbs of a dialogue tag: "Why?" asked Tom; she said, "this. */
static const char *const speech_verbs[] = {"said",     "asked",  "shouted",   "cried",    "replied", "whispered",
                                           "yelled",   "called", "exclaimed", "answered", "added",   "laughed",
                                           "screamed", "told",   "says",      "asks",     "sagte",   "fragte",
                                           "rief",     "dit",    "demanda",   "cria",     "répondit"};
#define N_SPEECH_VERBS (sizeof speech_verbs / sizeof speech_verbs[0])

/* Does the word at ids[i] open a dialogue tag ("Why?" asked Tom, "Stop!"
 * she said)? A speech verb or a pronoun, as a whole word. Only the word
 * itself is read, never later ones: the text of a story's first tokens must
 * not change as more come (generation streams it). */
static int opens_tag(const Tokenizer *t, const int32_t *ids, size_t n, size_t i) {
    static const char *const pronouns[] = {"she", "he", "they", "we", "you", "i", "it"};
    const char *p = t->pieces[ids[i]];
    if (continues_word(t, ids, n, i + 1)) return 0;
    for (size_t k = 0; k < N_SPEECH_VERBS; k++)
        if (strcasecmp(p, speech_verbs[k]) == 0) return 1;
    for (size_t k = 0; k < sizeof pronouns / sizeof pronouns[0]; k++)
        if (strcasecmp(p, pronouns[k]) == 0) return 1;
    return 0;
}

/* French and Italian elisions: l'histoire, qu'il, jusqu'à, dell'acqua. */
static int elides(const Decoder *d) {
    static const char *const words[] = {"l",   "d",     "j",      "m",      "n",      "s",       "t",      "c",
                                        "qu",  "jusqu", "lorsqu", "puisqu", "quelqu", "aujourd", "presqu", "dell",
                                        "all", "dall",  "nell",   "sull",   "quest",  "quell",   "un",     "po"};
    return last_word_is(d, words, sizeof words / sizeof words[0]);
}

/* A " opens or closes: by turns, save where the text says which. */
static PieceKind dquote_kind(Decoder *d) {
    int open = !d->in_dquote; /* decided by what came before only, as opens_tag */
    if ((d->prev_punct == ',' || d->prev_punct == ':') && last_word_is(d, speech_verbs, N_SPEECH_VERBS))
        open = 1; /* she said, "this */
    else if (d->out.len == 0)
        open = 1;
    d->in_dquote = open;
    return open ? PIECE_OPEN : PIECE_CLOSE;
}

/* Appends piece text, capitalising its first letter when asked. */
static int put_piece(Decoder *d, const char *p, int space, int upper) {
    if (space && d->out.len > 0 && slm_bytevec_append(&d->out, " ", 1, d->e)) return -1;
    if (upper) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)p, -1, &c);
        if (k > 0) {
            /* Only where lower-casing gives the letter back (not ı -> I -> i), so the text encodes as before. */
            utf8proc_int32_t title = utf8proc_totitle(c);
            if (utf8proc_tolower(title) != c) title = c;
            utf8proc_uint8_t buf[4];
            utf8proc_ssize_t m = utf8proc_encode_char(title, buf);
            if (slm_bytevec_append(&d->out, buf, (size_t)m, d->e)) return -1;
            p += k;
        }
    }
    return slm_bytevec_append(&d->out, p, strlen(p), d->e);
}

/* One punctuation piece: where spaces go, and what it does to quotes and sentences. */
static int put_punct(Decoder *d, const Tokenizer *t, const int32_t *ids, size_t n, size_t i, PieceKind kind) {
    const char *p = t->pieces[ids[i]];
    const char *next = i + 1 < n && ids[i + 1] >= 0 && ids[i + 1] < t->size ? t->pieces[ids[i + 1]] : "";
    uint32_t c = first_char(p);
    if (kind == PIECE_DQUOTE) kind = dquote_kind(d);
    if (kind == PIECE_APOSTROPHE) { /* after a word: don't, l'histoire, or a closing quote; else an opening ' */
        int word_next = next[0] && piece_kind(next) == PIECE_WORD && strncmp(next, "##", 2) != 0;
        if (d->prev_word)
            kind = is_contraction_tail(t, ids, n, i + 1) || (word_next && elides(d)) ? PIECE_JOIN : PIECE_CLOSE;
        else
            kind = p[0] == '\'' ? PIECE_OPEN : PIECE_CLOSE;
    }
    if ((c == 0x201C && d->low_open == 1) || (c == 0x2018 && d->low_open == 2))
        kind = PIECE_CLOSE, d->low_open = 0; /* „…“ and ‚…‘ */
    else if (c == 0x201E || c == 0x201A)
        d->low_open = c == 0x201E ? 1 : 2;
    if ((p[0] == '.' || p[0] == ':') && !p[1] && d->prev_digit && next[0] >= '0' && next[0] <= '9')
        kind = PIECE_JOIN; /* 3.5, 10:30 */
    int space_before = !d->glue_next && kind != PIECE_CLOSE && kind != PIECE_JOIN;
    /* a quote closed after a full stop ends the sentence: "Thank you." They went. */
    int after_stop = d->out.len > 0 && d->out.data[d->out.len - 1] == '.';
    int ends = d->out.len > 0 && strchr(".!?", d->out.data[d->out.len - 1]);
    if (put_piece(d, p, space_before, 0)) return -1;
    int quote = p[0] == '"' || c == 0x201C || c == 0x201D || c == 0x201E || c == 0xAB || c == 0xBB;
    if (kind == PIECE_OPEN && quote) d->sentence_start = 1; /* quoted speech starts a sentence */
    if (kind == PIECE_CLOSE && (p[0] == '.' || p[0] == '!' || p[0] == '?' || c == 0x2026))
        d->sentence_start = 1;
    else if (kind == PIECE_CLOSE && quote && ends) /* "Why?" Tom went, but "Why?" asked Tom */
        d->sentence_start = 1, d->tag_may_follow = !after_stop;
    else if (kind == PIECE_CLOSE && p[0] != ',' && p[0] != ';' && p[0] != ':' && !after_stop)
        d->sentence_start = 0;
    d->glue_next = kind == PIECE_OPEN || kind == PIECE_JOIN;
    d->prev_word = d->prev_digit = 0;
    d->prev_punct = c;
    if (!(kind == PIECE_CLOSE && quote && ends)) d->tag_may_follow = 0;
    return 0;
}

/* A piece of a word: "##" pieces glued on, a new word after a space. */
static int put_word(Decoder *d, const Tokenizer *t, const int32_t *ids, size_t n, size_t i, int capitalize) {
    const char *p = t->pieces[ids[i]];
    d->prev_punct = 0;
    if (p[0] == '#' && p[1] == '#' && p[2] != '\0') { /* the word goes on */
        d->prev_digit = d->prev_word && ends_in_digit(t, ids[i]);
        int rc = put_piece(d, p + 2, 0, 0);
        d->word_end = d->out.len;
        return rc;
    }
    int lone_i = strcmp(p, "i") == 0 && !continues_word(t, ids, n, i + 1);
    if (d->tag_may_follow && opens_tag(t, ids, n, i)) d->sentence_start = 0;
    d->tag_may_follow = 0;
    int space = !d->glue_next && d->out.len > 0;
    size_t at = d->out.len + (size_t)space;
    int rc = put_piece(d, p, space, capitalize && (d->sentence_start || lone_i));
    d->word_at = at, d->word_end = d->out.len;
    d->sentence_start = 0, d->glue_next = 0, d->prev_word = 1;
    d->prev_digit = ends_in_digit(t, ids[i]);
    return rc;
}

char *slm_tokenizer_decode(const Tokenizer *t, const int32_t *ids, size_t n, int capitalize, Error *e) {
    Decoder d = {.sentence_start = 1, .glue_next = 1, .e = e};
    if (slm_bytevec_reserve(&d.out, n * 5 + 1, e)) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->size) {
            FAIL(e, "give ids from this vocabulary", "token id %d is out of range (the vocabulary has %d)", ids[i],
                 t->size);
            slm_bytevec_free(&d.out);
            return NULL;
        }
        if (ids[i] == t->eos_id) { /* a story boundary: the next story starts afresh */
            d.sentence_start = 1, d.in_dquote = d.low_open = 0, d.prev_word = d.prev_digit = 0, d.prev_punct = 0;
            continue;
        }
        PieceKind kind = piece_kind(t->pieces[ids[i]]);
        /* a cased vocabulary's letters are the text's own: nothing to capitalise */
        int upper = capitalize && !t->cased;
        int rc = kind == PIECE_WORD ? put_word(&d, t, ids, n, i, upper) : put_punct(&d, t, ids, n, i, kind);
        if (rc) {
            slm_bytevec_free(&d.out);
            return NULL;
        }
    }
    d.out.data[d.out.len] = '\0';
    return d.out.data;
}
