/* Stories files (SPEC section 3): see include/storylm/stories.h.
 *
 * The path of a file: read whole -> split into trimmed spans (bad ones
 * skipped and counted) -> each span encoded on its own (OpenMP over stories)
 * -> concatenated in file order as [EOS] ids [EOS] -> the held-out test
 * stories picked by each story's text hash. A cache keyed by the file's bytes
 * and the vocabulary skips the splitting and encoding on later reads. */
#include "storylm/stories.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "storylm/fileio.h"
#include "storylm/text.h"

#define STORIES_CACHE_VERSION 1u
#define STORIES_HASH_SEED 0x73746f72796c6dULL /* "storylm": the test-story choice */

StoriesOptions stories_default_options(void) {
    return (StoriesOptions){.n_test = STORIES_DEFAULT_TEST, .cache_dir = NULL, .use_cache = 1};
}

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

static int has_separator_line(const char *text, size_t b, size_t len) {
    while (b < len) {
        size_t e = line_end(text, len, b);
        if (is_separator_line(text, b, e)) return 1;
        b = e + 1;
    }
    return 0;
}

typedef struct Splitter {
    const char *text;
    StorySpan *spans;
    int n, cap;
    StorySkips skips;
    Error *e;
} Splitter;

static int push_span(Splitter *sp, size_t b, size_t e) {
    if (sp->n == INT_MAX) return FAIL(sp->e, "split the file into smaller files", "more than %d stories", INT_MAX);
    if (sp->n == sp->cap) {
        int cap = sp->cap < 1024 ? 1024 : (sp->cap > INT_MAX / 2 ? INT_MAX : sp->cap * 2);
        StorySpan *p = xrealloc(sp->spans, (size_t)cap * sizeof *p, sp->e);
        if (!p) return -1;
        sp->spans = p;
        sp->cap = cap;
    }
    sp->spans[sp->n++] = (StorySpan){b, e - b};
    return 0;
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
    if (utf8_validate(sp->text + tb, te - tb, "story", NULL) != 0) {
        sp->skips.invalid_utf8++;
        return 0;
    }
    return push_span(sp, tb, te);
}

/* Splits [b, len) at separator lines (separators = 1) or at runs of blank
 * lines (separators = 0), one pass over the lines. */
static int split_lines(Splitter *sp, size_t b, size_t len, int separators) {
    size_t story = b;
    while (b < len) {
        size_t e = line_end(sp->text, len, b);
        int cut = separators ? is_separator_line(sp->text, b, e) : is_blank_line(sp->text, b, e);
        if (cut) {
            if (add_story(sp, story, b)) return -1;
            story = e < len ? e + 1 : len;
        }
        b = e + 1;
    }
    return add_story(sp, story, len);
}

static int fail_no_stories(const char *what, size_t len, const StorySkips *k, Error *e) {
    const char *hint = "a stories file is UTF-8 text with stories separated by lines holding only " STORIES_SEPARATOR
                       " (or by blank lines)";
    if (len == 0) return FAIL(e, hint, "'%s' holds no stories: the file is empty", what);
    if (k->empty + k->invalid_utf8 + k->too_long == 0)
        return FAIL(e, hint, "'%s' holds no stories: only white space and " STORIES_SEPARATOR " lines", what);
    return FAIL(e, hint,
                "'%s' holds no stories: all were skipped (%d only white space, %d invalid UTF-8 or NUL bytes, "
                "%d longer than %u bytes)",
                what, k->empty, k->invalid_utf8, k->too_long, STORIES_MAX_STORY_BYTES);
}

int stories_split(const char *text, size_t len, const char *what, StorySpan **spans, int *n, StorySkips *skips,
                  Error *e) {
    Splitter sp = {.text = text, .e = e};
    *spans = NULL;
    *n = 0;
    size_t b = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0; /* a UTF-8 byte-order mark */
    if (split_lines(&sp, b, len, has_separator_line(text, b, len))) {
        free(sp.spans);
        return -1;
    }
    if (skips) *skips = sp.skips;
    if (sp.n == 0) {
        free(sp.spans);
        return fail_no_stories(what, len, &sp.skips, e);
    }
    *spans = sp.spans;
    *n = sp.n;
    return 0;
}

/* ----------------------------------------------------------------- encoding */

/* Each span's ids, one IntVec per story: the stories are encoded in parallel
 * and the results do not depend on which thread did which. On failure the
 * error of the lowest failing story is reported, also for determinism. */
static int encode_spans(const Tokenizer *t, const char *text, const StorySpan *spans, int n, IntVec *ids,
                        const char *what, Error *e) {
    int failed = INT_MAX;
#pragma omp parallel for schedule(dynamic, 16)
    for (int i = 0; i < n; i++) {
        Error local = {0};
        if (tokenizer_encode(t, text + spans[i].offset, spans[i].len, &ids[i], &local) != 0) {
#pragma omp critical(stories_encode_error)
            if (i < failed) {
                failed = i;
                if (e) *e = local;
            }
        }
    }
    if (failed == INT_MAX) return 0;
    error_prefix(e, "'%s', the story at byte %zu: ", what, spans[failed].offset);
    return -1;
}

/* hash64 (STORIES_HASH_SEED) of a story's text with its '\r's left out, so
 * a file and its CRLF copy hold out the same stories. hash64 continues from
 * a state h when seeded with h ^ basis. */
static uint64_t story_hash(const char *text, size_t len) {
    const uint64_t basis = hash64(NULL, 0, 0);
    uint64_t h = hash64(NULL, 0, STORIES_HASH_SEED);
    while (len > 0) {
        const char *cr = memchr(text, '\r', len);
        size_t n = cr ? (size_t)(cr - text) : len;
        h = hash64(text, n, h ^ basis);
        n += cr != NULL;
        text += n;
        len -= n;
    }
    return h;
}

/* Fills s->tokens and s->starts from the per-story ids, [EOS] at both ends,
 * and hashes (n) with each kept story's text hash. Stories that encode to no
 * token at all (only Unicode spaces or control characters) are counted as
 * empty and left out. */
static int assemble(Stories *s, const Tokenizer *t, const char *text, const StorySpan *spans, const IntVec *ids, int n,
                    uint64_t *hashes, Error *e) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += ids[i].len ? ids[i].len + 2 : 0;
    s->tokens = xmalloc(total * sizeof *s->tokens, e);
    s->starts = s->tokens ? xmalloc(((size_t)n + 1) * sizeof *s->starts, e) : NULL;
    if (!s->starts) return -1;
    size_t at = 0;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (ids[i].len == 0) {
            s->skips.empty++;
            continue;
        }
        s->starts[kept] = at;
        hashes[kept++] = story_hash(text + spans[i].offset, spans[i].len);
        s->tokens[at++] = t->eos_id;
        memcpy(s->tokens + at, ids[i].data, ids[i].len * sizeof *s->tokens);
        at += ids[i].len;
        s->tokens[at++] = t->eos_id;
    }
    s->starts[kept] = at;
    s->n_stories = kept;
    s->n_tokens = at;
    return 0;
}

/* Reads the stories of text into s (tokens, starts, skips) and hashes. */
static int read_stories(Stories *s, const Tokenizer *t, const char *text, size_t len, const char *path,
                        uint64_t **hashes, Error *e) {
    StorySpan *spans;
    int n;
    if (stories_split(text, len, path, &spans, &n, &s->skips, e)) return -1;
    IntVec *ids = xcalloc((size_t)n, sizeof *ids, e);
    *hashes = ids ? xmalloc((size_t)n * sizeof **hashes, e) : NULL;
    int rc = *hashes ? encode_spans(t, text, spans, n, ids, path, e) : -1;
    if (rc == 0) rc = assemble(s, t, text, spans, ids, n, *hashes, e);
    for (int i = 0; ids && i < n; i++) intvec_free(&ids[i]);
    free(ids);
    free(spans);
    if (rc == 0 && s->n_stories == 0) rc = fail_no_stories(path, len, &s->skips, e);
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
        if (is_test[i]) s->test[a++] = i;
        else s->train[b++] = i;
    }
    free(order);
    free(is_test);
    return 0;
}

/* -------------------------------------------------------------------- cache */

/* Cache file layout (native byte order; a machine of the other order reads a
 * wrong version number and rewrites the file):
 *   magic "storyids", u32 version, u32 vocab size, u64 key,
 *   u64 n_stories, u64 n_tokens, u32 skips (empty, invalid_utf8, too_long), u32 0,
 *   u64 text hash (n_stories), u64 starts (n_stories + 1), i32 tokens (n_tokens),
 *   u64 checksum: hash64 of every byte before it. */
typedef struct CacheHeader {
    char magic[8];
    uint32_t version, vocab_size;
    uint64_t key, n_stories, n_tokens;
    uint32_t skips[3], zero;
} CacheHeader;

static const char CACHE_MAGIC[8] = {'s', 't', 'o', 'r', 'y', 'i', 'd', 's'};

/* The folder for caches: the option, $STORYLM_CACHE, $XDG_CACHE_HOME/storylm,
 * ~/.cache/storylm; NULL when none can be named. Caller frees. */
static char *cache_folder(const StoriesOptions *o) {
    const char *env[3] = {o->cache_dir, getenv("STORYLM_CACHE"), getenv("XDG_CACHE_HOME")};
    const char *suffix[3] = {"", "", "/storylm"};
    const char *home = getenv("HOME");
    const char *dir = NULL, *tail = "/.cache/storylm";
    for (int i = 0; i < 3 && !dir; i++)
        if (env[i] && env[i][0]) dir = env[i], tail = suffix[i];
    if (!dir && home && home[0]) dir = home;
    if (!dir) return NULL;
    size_t n = strlen(dir) + strlen(tail) + 1;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s", dir, tail);
    return out;
}

/* mkdir -p; 0 when path is a folder afterwards. */
static int make_folders(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST) return -1;
    }
    struct stat st;
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* The key: the stories file's bytes, the vocabulary's text, the format and
 * the longest story kept (a cache made under another limit holds other stories). */
static int cache_key(const char *text, size_t len, const Tokenizer *t, uint64_t *key, Error *e) {
    size_t vocab_len, longest = STORIES_MAX_STORY_BYTES;
    char *vocab = tokenizer_to_text(t, &vocab_len, e);
    if (!vocab) return -1;
    uint64_t h = hash64(text, len, STORIES_CACHE_VERSION);
    h = hash64(&len, sizeof len, h);
    h = hash64(&longest, sizeof longest, h);
    *key = hash64(vocab, vocab_len, h);
    free(vocab);
    return 0;
}

/* "<folder>/<16 hex digits>.ids", or NULL when the folder is unusable. */
static char *cache_path(const StoriesOptions *o, uint64_t key) {
    char *dir = cache_folder(o);
    if (!dir || make_folders(dir) != 0) {
        free(dir);
        return NULL;
    }
    size_t n = strlen(dir) + 32;
    char *path = malloc(n);
    if (path) snprintf(path, n, "%s/%016llx.ids", dir, (unsigned long long)key);
    free(dir);
    return path;
}

/* Size in bytes of a cache file for these counts (callers bound the counts). */
static size_t cache_size(uint64_t n_stories, uint64_t n_tokens) {
    return sizeof(CacheHeader) + n_stories * 8 + (n_stories + 1) * 8 + n_tokens * 4 + 8;
}

/* Every id a vocabulary id, starts rising from 0 to n_tokens, every story
 * [EOS] something [EOS]: a cache that passes cannot send a reader out of
 * bounds. */
static int cache_ids_valid(const Stories *s, const Tokenizer *t) {
    if (s->starts[0] != 0 || s->starts[s->n_stories] != s->n_tokens) return 0;
    for (int i = 0; i < s->n_stories; i++) {
        size_t b = s->starts[i], e = s->starts[i + 1];
        if (e > s->n_tokens || e < b || e - b < 3) return 0;
        if (s->tokens[b] != t->eos_id || s->tokens[e - 1] != t->eos_id) return 0;
    }
    for (size_t i = 0; i < s->n_tokens; i++)
        if (s->tokens[i] < 0 || s->tokens[i] >= t->size) return 0;
    return 1;
}

/* 1 when buf (len bytes) is a whole cache file of this key and vocabulary:
 * magic, version, counts that match the size, checksum. */
static int cache_header_valid(const char *buf, size_t len, uint64_t key, const Tokenizer *t, CacheHeader *h) {
    if (len < sizeof *h + 8) return 0;
    memcpy(h, buf, sizeof *h);
    if (memcmp(h->magic, CACHE_MAGIC, 8) || h->version != STORIES_CACHE_VERSION || h->key != key ||
        h->vocab_size != (uint32_t)t->size || h->n_stories < 1 || h->n_stories > INT_MAX || h->n_tokens > len / 4 ||
        cache_size(h->n_stories, h->n_tokens) != len)
        return 0;
    uint64_t sum;
    memcpy(&sum, buf + len - 8, 8);
    return sum == hash64(buf, len - 8, 0);
}

/* Fills s and hashes (n_stories) from a cache file's bytes; 0 only for a
 * whole, valid cache of this key and vocabulary. */
static int cache_parse(const char *buf, size_t len, uint64_t key, const Tokenizer *t, Stories *s,
                       uint64_t **hashes) {
    CacheHeader h;
    if (!cache_header_valid(buf, len, key, t, &h)) return -1;
    size_t n = (size_t)h.n_stories;
    *hashes = malloc(n * 8);
    s->starts = malloc((n + 1) * sizeof *s->starts);
    s->tokens = malloc((h.n_tokens ? h.n_tokens : 1) * 4);
    if (!*hashes || !s->starts || !s->tokens) return -1;
    const char *p = buf + sizeof h;
    memcpy(*hashes, p, n * 8);
    p += n * 8;
    for (size_t i = 0; i <= n; i++, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        s->starts[i] = (size_t)v;
    }
    memcpy(s->tokens, p, h.n_tokens * 4);
    s->n_stories = (int)n;
    s->n_tokens = (size_t)h.n_tokens;
    s->skips = (StorySkips){(int)h.skips[0], (int)h.skips[1], (int)h.skips[2]};
    return cache_ids_valid(s, t) ? 0 : -1;
}

/* Reads the cache at path into s and hashes; -1 (s left empty) on a miss. */
static int cache_read(const char *path, uint64_t key, const Tokenizer *t, Stories *s, uint64_t **hashes) {
    char *buf;
    size_t len;
    if (file_read_all(path, 0, &buf, &len, NULL) != 0) return -1;
    int rc = cache_parse(buf, len, key, t, s, hashes);
    free(buf);
    if (rc != 0) {
        free(*hashes);
        *hashes = NULL;
        stories_free(s);
    }
    return rc;
}

/* Writes s and hashes to path atomically. Failure is not an error for the
 * caller (a cache is only a shortcut), so it reports nothing. */
static void cache_write(const char *path, uint64_t key, const Tokenizer *t, const Stories *s,
                        const uint64_t *hashes) {
    size_t n = (size_t)s->n_stories, len = cache_size(n, s->n_tokens);
    char *buf = malloc(len);
    if (!buf) return;
    CacheHeader h = {.version = STORIES_CACHE_VERSION, .vocab_size = (uint32_t)t->size, .key = key,
                     .n_stories = n, .n_tokens = s->n_tokens,
                     .skips = {(uint32_t)s->skips.empty, (uint32_t)s->skips.invalid_utf8, (uint32_t)s->skips.too_long}};
    memcpy(h.magic, CACHE_MAGIC, 8);
    char *p = buf;
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    memcpy(p, hashes, n * 8);
    p += n * 8;
    for (size_t i = 0; i <= n; i++, p += 8) {
        uint64_t v = s->starts[i];
        memcpy(p, &v, 8);
    }
    memcpy(p, s->tokens, s->n_tokens * 4);
    uint64_t sum = hash64(buf, len - 8, 0);
    memcpy(buf + len - 8, &sum, 8);
    file_write_atomic(path, buf, len, NULL);
    free(buf);
}

/* ------------------------------------------------------------------- loading */

/* Fills s (tokens, starts, skips, from_cache) and hashes from the cache when
 * it holds this text and vocabulary, else from the text (then saving a cache). */
static int load_ids(Stories *s, const char *path, const char *text, size_t len, const Tokenizer *t,
                    const StoriesOptions *o, uint64_t **hashes, Error *e) {
    uint64_t key = 0;
    char *cache = NULL;
    if (o->use_cache) {
        if (cache_key(text, len, t, &key, e)) return -1;
        cache = cache_path(o, key);
    }
    if (cache && cache_read(cache, key, t, s, hashes) == 0) {
        s->from_cache = 1;
        free(cache);
        return 0;
    }
    int rc = read_stories(s, t, text, len, path, hashes, e);
    if (rc == 0 && cache) cache_write(cache, key, t, s, *hashes);
    free(cache);
    return rc;
}

int stories_load(Stories *s, const char *path, const Tokenizer *t, const StoriesOptions *o, Error *e) {
    StoriesOptions defaults = stories_default_options();
    if (!o) o = &defaults;
    *s = (Stories){0};
    if (o->n_test < 0) return FAIL(e, "give 0 or more test stories", "invalid number of test stories: %d", o->n_test);
    char *text;
    size_t len;
    if (file_read_all(path, 0, &text, &len, e)) return -1;
    uint64_t *hashes = NULL;
    int rc = load_ids(s, path, text, len, t, o, &hashes, e);
    free(text);
    if (rc == 0) rc = pick_test(s, hashes, o->n_test, e);
    free(hashes);
    if (rc != 0) stories_free(s);
    return rc;
}

void stories_free(Stories *s) {
    free(s->tokens);
    free(s->starts);
    free(s->test);
    free(s->train);
    *s = (Stories){0};
}
