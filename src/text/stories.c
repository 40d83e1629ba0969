/* Stories files (SPEC section 3): see include/storylm/stories.h.
 *
 * The path of a file, in one streaming pass over its memory map: split into
 * trimmed spans (bad ones skipped and counted) -> a batch of spans encoded at
 * once, each on its own (OpenMP over stories) -> written in file order as
 * [EOS] ids [EOS] to the ids file (stories_cache.c), which is then mapped ->
 * the held-out test stories picked by each story's text hash. Pages of the
 * text already read are given back as the pass goes, so memory stays small
 * however large the file. A cache keyed by the file's bytes and the
 * vocabulary skips the splitting and encoding on later reads. */
#include "storylm/stories.h"

#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stories_cache.h"
#include "storylm/filemap.h"
#include "storylm/fileio.h"
#include "storylm/text.h"

#define STORIES_HASH_SEED 0x73746f72796c6dULL /* "storylm": the test-story choice */
#define BATCH_STORIES 2048                    /* stories encoded at once */
#define BATCH_BYTES (4u << 20)                /* or this much text */
#define DROP_EVERY (8u << 20)                 /* bytes of text read between giving pages back */

/* ---------------------------------------------------------------- splitting */

/* ASCII white space inside a line (the line break itself is '\n'). */
static int is_line_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
static int is_space(char c) { return c == '\n' || is_line_space(c); }

/* [*b, *e) shrunk past white space at both ends. Each byte is looked at once. */
static void trim(const char *text, size_t *b, size_t *e) {
    while (*b < *e && is_space(text[*b])) (*b)++;
    while (*e > *b && is_space(text[*e - 1])) (*e)--;
}

/* A separator line: "<|endoftext|>" alone, give or take spaces, tabs and the
 * '\r' of a CRLF file around it. */
static int is_separator_line(const char *text, size_t b, size_t e) {
    static const size_t n = sizeof STORIES_SEPARATOR - 1;
    while (b < e && is_line_space(text[b])) b++;
    if (e - b < n || memcmp(text + b, STORIES_SEPARATOR, n) != 0) return 0;
    for (b += n; b < e; b++)
        if (!is_line_space(text[b])) return 0;
    return 1;
}

static int is_blank_line(const char *text, size_t b, size_t e) {
    while (b < e && is_line_space(text[b])) b++;
    return b == e;
}

/* End of the line starting at b (the '\n' or len). memchr keeps a one-line
 * file of megabytes a single fast scan. */
static size_t line_end(const char *text, size_t len, size_t b) {
    const char *nl = memchr(text + b, '\n', len - b);
    return nl ? (size_t)(nl - text) : len;
}

/* 1 when some line of [b, len) is a separator line. With map, the pages
 * read are given back as the scan goes (a file of no separators is read
 * whole here). */
static int has_separator_line(const char *text, size_t b, size_t len, const FileMap *map) {
    size_t dropped = 0;
    while (b < len) {
        size_t e = line_end(text, len, b);
        if (is_separator_line(text, b, e)) return 1;
        b = e + 1;
        if (map && b - dropped > DROP_EVERY) slm_file_map_drop(map, dropped, b), dropped = b;
    }
    return 0;
}

/* Hands each kept story's trimmed span to take(), in file order; take()
 * returns 1 to pause the split after that story (split_lines goes on from
 * there when called again). */
typedef struct Splitter {
    const char *text;
    size_t len;
    int separators; /* split at separator lines, else at runs of blank lines */
    size_t at;      /* the next line to look at */
    size_t story;   /* where the story under way began */
    int done;       /* the last story was handed over */
    int (*take)(struct Splitter *sp, size_t b, size_t e);
    void *ctx;
    StorySkips skips;
    Error *e;
} Splitter;

static Splitter splitter(const char *text, size_t len, int separators, size_t start) {
    return (Splitter){.text = text, .len = len, .separators = separators, .at = start, .story = start};
}

/* One candidate story, the bytes [b, e) between separators. A piece holding
 * nothing but line breaks is no story at all (the separator at the start or
 * end of a file, two in a row); other white space-only pieces are counted. */
static int add_story(Splitter *sp, size_t b, size_t e) {
    size_t tb = b, te = e;
    trim(sp->text, &tb, &te);
    if (tb == te) {
        for (size_t i = b; i < e; i++)
            if (sp->text[i] != '\n' && sp->text[i] != '\r') {
                sp->skips.empty++;
                break;
            }
        return 0;
    }
    if (te - tb > STORIES_MAX_STORY_BYTES) {
        sp->skips.too_long++;
        return 0;
    }
    if (slm_utf8_validate(sp->text + tb, te - tb, "story", NULL) != 0) {
        sp->skips.invalid_utf8++;
        sp->skips.nul += memchr(sp->text + tb, '\0', te - tb) != NULL;
        return 0;
    }
    return sp->take(sp, tb, te);
}

/* Splits the text on from sp->at, one pass over the lines. Returns 1 when
 * take() paused it, 0 at the end, -1 on failure. */
static int split_lines(Splitter *sp) {
    while (sp->at < sp->len) {
        size_t b = sp->at, e = line_end(sp->text, sp->len, b);
        int cut = sp->separators ? is_separator_line(sp->text, b, e) : is_blank_line(sp->text, b, e);
        sp->at = e + 1;
        if (cut) {
            size_t story = sp->story;
            sp->story = e < sp->len ? e + 1 : sp->len;
            int rc = add_story(sp, story, b);
            if (rc) return rc;
        }
    }
    if (sp->done) return 0;
    sp->done = 1;
    return add_story(sp, sp->story, sp->len);
}

/* Where the stories of a file start: after a UTF-8 byte-order mark. */
static size_t text_start(const char *text, size_t len) {
    return len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

/* Text in UTF-16 without a byte-order mark: in its first bytes (up to 64),
 * every pair holds one NUL and one other byte, the NUL on the same side (the
 * high byte of Latin letters). A damaged UTF-8 story is never like this. */
static int looks_utf16(const char *text, size_t len) {
    size_t pairs = (len < 64 ? len : 64) / 2;
    if (pairs < 4) return 0;
    int side = text[0] == '\0' ? 0 : 1;
    for (size_t i = 0; i < pairs; i++)
        if (text[2 * i + side] != '\0' || text[2 * i + 1 - side] == '\0') return 0;
    return 1;
}

/* Lines ended by CR alone (classic Mac OS): no LF anywhere and text after a
 * CR. Read as one line, the file's stories could not be told apart. */
static int cr_only_lines(const char *text, size_t len) {
    if (memchr(text, '\n', len)) return 0; /* found at once in a file of LF lines */
    const char *cr = memchr(text, '\r', len);
    for (size_t i = cr ? (size_t)(cr - text) : len; i < len; i++)
        if (!is_line_space(text[i])) return 1;
    return 0;
}

/* A file that is not UTF-8 text, known by its first bytes, into e: its bytes
 * would only be skipped as bad stories (or, for a document, some kept as
 * text), so it is said before any splitting; so are lines ended by CR alone.
 * 0 when none is recognised. */
static int refuse_other_format(const char *text, size_t len, const char *what, Error *e) {
    static const char convert[] = "save it as UTF-8 text in your editor, or convert it: iconv -f %s -t UTF-8 '%.300s' "
                                  "> stories-utf8.txt";
    static const char save_as_text[] = "save the stories as plain text (UTF-8, .txt) and give that file";
    static const struct {
        const char *magic;
        size_t n;
        const char *name, *encoding, *unpack; /* a text encoding to convert from, or a command that decompresses */
    } known[] = {
        {"\xFF\xFE\0\0", 4, "UTF-32 text", "UTF-32", NULL},
        {"\0\0\xFE\xFF", 4, "UTF-32 text", "UTF-32", NULL},
        {"\xFF\xFE", 2, "UTF-16 text", "UTF-16", NULL},
        {"\xFE\xFF", 2, "UTF-16 text", "UTF-16", NULL},
        {"PK\x03\x04", 4, "a zip file (a .docx, .odt or .epub document?)", NULL, NULL},
        {"\xD0\xCF\x11\xE0", 4, "a Word 97-2003 document", NULL, NULL},
        {"%PDF-", 5, "a PDF document", NULL, NULL},
        {"{\\rtf", 5, "an RTF document", NULL, NULL},
        {"\x1F\x8B", 2, "gzip-compressed", NULL, "zcat"},
        {"BZh", 3, "bzip2-compressed", NULL, "bzcat"},
        {"\xFD"
         "7zXZ\0",
         6, "xz-compressed", NULL, "xzcat"},
        {"\x28\xB5\x2F\xFD", 4, "zstd-compressed", NULL, "zstdcat"},
    };
    char hint[512];
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (len < known[i].n || memcmp(text, known[i].magic, known[i].n) != 0) continue;
        if (known[i].unpack) {
            snprintf(hint, sizeof hint, "decompress it first: %s '%.300s' > stories.txt", known[i].unpack, what);
            return FAIL(e, hint, "'%s' is %s, not text", what, known[i].name);
        }
        if (!known[i].encoding) return FAIL(e, save_as_text, "'%s' is %s, not UTF-8 text", what, known[i].name);
        snprintf(hint, sizeof hint, convert, known[i].encoding, what);
        return FAIL(e, hint, "'%s' is %s, not UTF-8 text", what, known[i].name);
    }
    if (cr_only_lines(text, len)) {
        snprintf(hint, sizeof hint, "make its line ends LF: tr '\\r' '\\n' < '%.300s' > stories.txt", what);
        return FAIL(e, hint,
                    "'%s' ends its lines with CR alone (an old Mac file): read as one line, its stories "
                    "cannot be told apart",
                    what);
    }
    if (!looks_utf16(text, len)) return 0;
    snprintf(hint, sizeof hint, convert, text[0] == '\0' ? "UTF-16BE" : "UTF-16LE", what);
    return FAIL(e, hint, "'%s' looks like UTF-16 text (a NUL byte beside each letter), not UTF-8", what);
}

/* The lines of text (its '\n's, and a last line without one). */
static size_t count_lines(const char *text, size_t len) {
    size_t n = 0;
    for (const char *p = text, *end = text + len; p < end; n++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    return n;
}

bool slm_stories_encoding_hint(const StorySkips *k, int n_kept, const char *path, char *buf, size_t size) {
    long long bad = k->invalid_utf8, all = (long long)n_kept + k->empty + k->invalid_utf8 + k->too_long;
    if (bad == 0 || bad * 20 < all) return false;
    if (2LL * k->nul > bad) { /* no text encoding has NUL bytes: converting would not help */
        snprintf(buf, size,
                 "%d of %lld stories hold NUL bytes and were left out: is '%.300s' a binary file, not text? give "
                 "the stories as plain text (UTF-8)",
                 k->nul, all, path);
        return true;
    }
    snprintf(
        buf, size,
        "%lld of %lld stories are not UTF-8 and were left out: a file saved as Windows-1252 or Latin-1 (curly "
        "quotes from a word processor, say)? convert it: iconv -f WINDOWS-1252 -t UTF-8 '%.300s' > stories-utf8.txt",
        bad, all, path);
    return true;
}

/* separators: the file was split at <|endoftext|> lines (else at blank lines). */
static int fail_no_stories(const char *what, const char *text, size_t len, int separators, const StorySkips *k,
                           Error *e) {
    const char *hint = "a stories file is UTF-8 text with stories separated by lines holding only " STORIES_SEPARATOR
                       " (or by blank lines)";
    if (len == 0) return FAIL(e, hint, "'%s' holds no stories: the file is empty", what);
    if (k->empty + k->invalid_utf8 + k->too_long == 0)
        return FAIL(e, hint, "'%s' holds no stories: only white space and " STORIES_SEPARATOR " lines", what);
    size_t lines = !separators && k->too_long == 1 && k->empty + k->invalid_utf8 == 0 ? count_lines(text, len) : 0;
    if (lines > 1) { /* one story a line, most likely: say how to separate them */
        char sep[400];
        snprintf(sep, sizeof sep, "if each line is a story, put a blank line after each: sed G '%.300s' > stories.txt",
                 what);
        return FAIL(e, sep,
                    "'%s' holds no stories: with no blank line and no " STORIES_SEPARATOR
                    " line, its %zu lines are one story, longer than %u bytes",
                    what, lines, STORIES_MAX_STORY_BYTES);
    }
    char encoding[600];
    if (slm_stories_encoding_hint(k, 0, what, encoding, sizeof encoding)) hint = encoding;
    return FAIL(e, hint,
                "'%s' holds no stories: all were skipped (%d only white space, %d invalid UTF-8 or NUL bytes, "
                "%d longer than %u bytes)",
                what, k->empty, k->invalid_utf8, k->too_long, STORIES_MAX_STORY_BYTES);
}

/* slm_stories_split's collection of every span. */
typedef struct SpanList {
    StorySpan *spans;
    int n, cap;
} SpanList;

static int push_span(Splitter *sp, size_t b, size_t e) {
    SpanList *l = sp->ctx;
    if (l->n == INT_MAX) return FAIL(sp->e, "split the file into smaller files", "more than %d stories", INT_MAX);
    if (l->n == l->cap) {
        int cap = l->cap < 1024 ? 1024 : (l->cap > INT_MAX / 2 ? INT_MAX : l->cap * 2);
        StorySpan *p = xrealloc(l->spans, (size_t)cap * sizeof *p, sp->e);
        if (!p) return -1;
        l->spans = p;
        l->cap = cap;
    }
    l->spans[l->n++] = (StorySpan){b, e - b};
    return 0;
}

int slm_stories_split(const char *text, size_t len, const char *what, StorySpan **spans, int *n, StorySkips *skips,
                      Error *e) {
    SpanList l = {0};
    *spans = NULL;
    *n = 0;
    if (refuse_other_format(text, len, what, e)) return -1;
    size_t b = text_start(text, len);
    Splitter sp = splitter(text, len, has_separator_line(text, b, len, NULL), b);
    sp.take = push_span, sp.ctx = &l, sp.e = e;
    if (split_lines(&sp)) {
        free(l.spans);
        return -1;
    }
    if (skips) *skips = sp.skips;
    if (l.n == 0) {
        free(l.spans);
        return fail_no_stories(what, text, len, sp.separators, &sp.skips, e);
    }
    *spans = l.spans;
    *n = l.n;
    return 0;
}

/* ----------------------------------------------------------------- encoding */

/* slm_hash64 (STORIES_HASH_SEED) of a story's text with its '\r's left out, so
 * a file and its CRLF copy hold out the same stories. slm_hash64 continues from
 * a state h when seeded with h ^ basis. */
static uint64_t story_hash(const char *text, size_t len) {
    const uint64_t basis = slm_hash64(NULL, 0, 0);
    uint64_t h = slm_hash64(NULL, 0, STORIES_HASH_SEED);
    while (len > 0) {
        const char *cr = memchr(text, '\r', len);
        size_t n = cr ? (size_t)(cr - text) : len;
        h = slm_hash64(text, n, h ^ basis);
        n += cr != NULL;
        text += n;
        len -= n;
    }
    return h;
}

/* Stories encoded together. */
typedef struct Batch {
    StorySpan spans[BATCH_STORIES];
    IntVec ids[BATCH_STORIES]; /* kept from batch to batch: their memory is reused */
    uint64_t hashes[BATCH_STORIES];
    int n;
    size_t bytes;
    int failed; /* index of the lowest story that failed to encode, or INT_MAX */
    Error error;
} Batch;

/* The streaming pass, three batches in flight: while the threads encode one,
 * one thread first writes out the batch before it and then splits the text
 * into the batch after it (splitting and writing are sequential), and then
 * joins the encoding. */
typedef struct Reader {
    const Tokenizer *t;
    const FileMap *text;
    const char *path;
    Splitter sp;
    int split_rc;   /* of the last split_lines: 1 paused, 0 at the end, -1 failed */
    Batch batch[3]; /* [0] to write, [1] to encode, [2] to fill */
    size_t dropped; /* text before this is given back */
    IdsWriter *out;
    const volatile sig_atomic_t *stop; /* NULL, or set to give up */
    TokenizerMemo *memo;               /* (n_memo) one a thread: words already encoded */
    int n_memo;
    StorySkips skips; /* of encoding: stories that give no token */
    int write_rc;
    Error write_error;
} Reader;

/* One story's ids and text hash; a failure is kept with the lowest index, so
 * the error reported does not depend on which thread did which. */
static void encode_one(Reader *r, Batch *b, int i) {
    const char *text = r->text->data + b->spans[i].offset;
    Error local = {0};
    int thread = omp_get_thread_num();
    TokenizerMemo *memo = thread < r->n_memo ? &r->memo[thread] : NULL;
    b->ids[i].len = 0;
    b->hashes[i] = story_hash(text, b->spans[i].len);
    if (slm_tokenizer_encode_memo(r->t, memo, text, b->spans[i].len, &b->ids[i], &local) != 0) {
#pragma omp critical(stories_encode_error)
        if (i < b->failed) {
            b->failed = i;
            b->error = local;
        }
    }
}

/* Writes an encoded batch in order. Stories that encode to no token at all
 * (only Unicode spaces or control characters) are counted as empty and left out. */
static int write_batch(Reader *r, Batch *b, Error *e) {
    for (int i = 0; i < b->n; i++) {
        if (b->ids[i].len == 0)
            r->skips.empty++;
        else if (slm_ids_writer_story(r->out, b->ids[i].data, b->ids[i].len, r->t->eos_id, b->hashes[i], e))
            return -1;
    }
    b->n = 0;
    return 0;
}

static int take_span(Splitter *sp, size_t b, size_t e) {
    Batch *into = sp->ctx;
    into->spans[into->n++] = (StorySpan){b, e - b};
    into->bytes += e - b;
    return into->n == BATCH_STORIES || into->bytes > BATCH_BYTES;
}

/* Fills batch[2] from the text. */
static void fill_batch(Reader *r) {
    Batch *b = &r->batch[2];
    b->n = 0, b->bytes = 0, b->failed = INT_MAX;
    r->sp.ctx = b;
    if (r->split_rc == 1) r->split_rc = split_lines(&r->sp);
}

/* One round: batch[1] encoded while batch[0] is written and batch[2] filled. */
static void round_of_three(Reader *r) {
    Batch *enc = &r->batch[1];
#pragma omp parallel
    {
#pragma omp single nowait
        {
            if (!r->write_rc) r->write_rc = write_batch(r, &r->batch[0], &r->write_error);
            fill_batch(r);
        }
#pragma omp for schedule(dynamic, 16) nowait
        for (int i = 0; i < enc->n; i++) encode_one(r, enc, i);
    }
}

/* The batches move on: [1] to write, [2] to encode, [0] (written) to fill. */
static void rotate(Reader *r) {
    Batch t = r->batch[0];
    r->batch[0] = r->batch[1];
    r->batch[1] = r->batch[2];
    r->batch[2] = t;
}

/* Runs the rounds until the text is split, encoded and written. */
static int stream(Reader *r, Error *e) {
    r->batch[1].failed = INT_MAX;
    while (r->batch[0].n || r->batch[1].n || r->split_rc == 1) {
        if (r->stop && *r->stop) return FAIL(e, "it was asked to stop", "reading '%s': stopped", r->path);
        round_of_three(r);
        Batch *enc = &r->batch[1];
        if (r->write_rc) return *e = r->write_error, -1;
        if (r->split_rc < 0) return -1; /* sp.e is e */
        if (enc->failed != INT_MAX) {
            *e = enc->error;
            slm_error_prefix(e, "'%s', the story at byte %zu: ", r->path, enc->spans[enc->failed].offset);
            return -1;
        }
        /* batch[0] is written: the text before batch[1] is no longer needed */
        Batch *next = &r->batch[2];
        size_t upto = enc->n ? enc->spans[0].offset : next->n ? next->spans[0].offset : r->sp.story;
        if (upto - r->dropped > DROP_EVERY) slm_file_map_drop(r->text, r->dropped, upto), r->dropped = upto;
        rotate(r);
    }
    return 0;
}

/* Splits and encodes the mapped text into the ids file out; fills s from it. */
static int read_stories(Stories *s, const Tokenizer *t, const FileMap *text, const char *path, IdsWriter *out,
                        uint64_t key, const volatile sig_atomic_t *stop, const uint64_t **hashes, Error *e) {
    if (refuse_other_format(text->data, text->len, path, e)) return slm_ids_writer_abort(out), -1;
    Reader *r = xcalloc(1, sizeof *r, e);
    if (!r) return slm_ids_writer_abort(out), -1;
    size_t b = text_start(text->data, text->len);
    r->t = t, r->text = text, r->path = path, r->out = out, r->split_rc = 1, r->stop = stop;
    r->sp = splitter(text->data, text->len, has_separator_line(text->data, b, text->len, text), b);
    r->sp.take = take_span, r->sp.e = e;
    r->n_memo = omp_get_max_threads();
    r->memo = xcalloc((size_t)r->n_memo, sizeof *r->memo, e);
    int rc = r->memo ? 0 : -1;
    for (int i = 0; !rc && i < r->n_memo; i++) rc = slm_tokenizer_memo_init(&r->memo[i], t, e);
    if (!rc) rc = stream(r, e);
    for (int i = 0; r->memo && i < r->n_memo; i++) slm_tokenizer_memo_free(&r->memo[i]);
    free(r->memo);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < BATCH_STORIES; i++) slm_intvec_free(&r->batch[k].ids[i]);
    StorySkips k = r->sp.skips;
    k.empty += r->skips.empty;
    int separators = r->sp.separators;
    free(r);
    if (!rc && out->n_stories == 0) rc = fail_no_stories(path, text->data, text->len, separators, &k, e);
    if (!rc)
        rc = slm_ids_writer_finish(out, key, t, &k, s, hashes, e);
    else
        slm_ids_writer_abort(out);
    return rc;
}

/* ---------------------------------------------------------- held-out stories */

typedef struct HashIndex {
    uint64_t hash;
    int index;
} HashIndex;

static int by_hash_then_index(const void *a, const void *b) {
    const HashIndex *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* How many test stories: none when asked for none or for a lone story, else
 * the request capped at a tenth of the stories, but at least one. */
static int test_count(int requested, int n_stories) {
    if (requested <= 0 || n_stories < 2) return 0;
    int n = requested < n_stories / 10 ? requested : n_stories / 10;
    return n < 1 ? 1 : n;
}

/* The test stories are those with the smallest text hashes (ties by index):
 * spread over the file, the same on every machine, and a story keeps its
 * role when other stories are added or removed. hashes (n_stories). */
static int pick_test(Stories *s, const uint64_t *hashes, int requested, Error *e) {
    int n = s->n_stories;
    HashIndex *order = xmalloc((size_t)n * sizeof *order, e);
    char *is_test = order ? xcalloc((size_t)n, 1, e) : NULL;
    s->n_test = test_count(requested, n);
    s->n_train = n - s->n_test;
    s->test = is_test ? xmalloc((size_t)(s->n_test ? s->n_test : 1) * sizeof *s->test, e) : NULL;
    s->train = s->test ? xmalloc((size_t)(s->n_train ? s->n_train : 1) * sizeof *s->train, e) : NULL;
    if (!s->train) {
        free(order);
        free(is_test);
        return -1;
    }
    for (int i = 0; i < n; i++) order[i] = (HashIndex){hashes[i], i};
    qsort(order, (size_t)n, sizeof *order, by_hash_then_index);
    for (int i = 0; i < s->n_test; i++) is_test[order[i].index] = 1;
    for (int i = 0, a = 0, b = 0; i < n; i++) {
        if (is_test[i])
            s->test[a++] = i;
        else
            s->train[b++] = i;
    }
    free(order);
    free(is_test);
    return 0;
}

/* ------------------------------------------------------------------- loading */

/* Fills s (ids, starts, skips, from_cache) and hashes from the cache when it
 * holds this text and vocabulary, else from the text (writing the cache, or
 * without one an unlinked temporary file). */
static int load_ids(Stories *s, const char *path, const FileMap *text, const Tokenizer *t, const StoriesOptions *o,
                    const uint64_t **hashes, Error *e) {
    uint64_t key = 0;
    char *cache = NULL;
    if (o->use_cache) {
        if (slm_ids_cache_key(text, t, o->stop, &key, e)) return -1;
        cache = slm_ids_cache_path(o, key);
    }
    if (cache && slm_ids_cache_read(cache, key, t, s, hashes) == 0) {
        s->from_cache = 1;
        free(cache);
        return 0;
    }
    IdsWriter out;
    int rc = slm_ids_writer_open(&out, cache, t, e);
    if (rc && cache) rc = slm_ids_writer_open(&out, NULL, t, e); /* an unwritable cache folder is no error */
    free(cache);
    return rc ? rc : read_stories(s, t, text, path, &out, key, o->stop, hashes, e);
}

int slm_stories_load(Stories *s, const char *path, const Tokenizer *t, const StoriesOptions *o, Error *e) {
    StoriesOptions defaults = slm_stories_default_options();
    if (!o) o = &defaults;
    *s = (Stories){0};
    if (o->n_test < 0) return FAIL(e, "give 0 or more test stories", "invalid number of test stories: %d", o->n_test);
    FileMap text;
    if (slm_file_map(&text, path, e)) return -1;
    const uint64_t *hashes = NULL;
    int rc = load_ids(s, path, &text, t, o, &hashes, e);
    slm_file_unmap(&text);
    if (rc == 0) rc = pick_test(s, hashes, o->n_test, e);
    if (rc != 0) slm_stories_free(s);
    return rc;
}
