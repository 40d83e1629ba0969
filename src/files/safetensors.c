/* The safetensors format: see include/storylm/safetensors.h. Validation
 * happens on the header alone, before any tensor byte is read, so a bad
 * file is refused without reading outside it. */
#include "storylm/safetensors.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <utf8proc.h>

#include "storylm/fileio.h"
#include "storylm/hashmap.h"

#define BAD_FILE_HINT "the file is damaged or is not a safetensors file; save or train it again"
#define CHUNK_FLOATS 4096 /* floats converted to or from little-endian at a time */

static char *copy_string(const char *s, Error *e) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n, e);
    if (p) memcpy(p, s, n);
    return p;
}

/* ---- metadata ---------------------------------------------------------- */

int slm_metadata_append(Metadata *md, const char *key, const char *value, Error *e) {
    if (md->count == md->cap) {
        int cap = md->cap ? 2 * md->cap : 16;
        MetaEntry *items = xrealloc(md->items, (size_t)cap * sizeof *items, e);
        if (!items) return -1;
        md->items = items;
        md->cap = cap;
    }
    char *k = copy_string(key, e);
    char *v = k ? copy_string(value, e) : NULL;
    if (!v) {
        free(k);
        return -1;
    }
    md->items[md->count++] = (MetaEntry){k, v};
    return 0;
}

int slm_metadata_set(Metadata *md, const char *key, const char *value, Error *e) {
    for (int i = 0; i < md->count; i++) {
        if (strcmp(md->items[i].key, key) != 0) continue;
        char *v = copy_string(value, e);
        if (!v) return -1;
        free(md->items[i].value);
        md->items[i].value = v;
        return 0;
    }
    return slm_metadata_append(md, key, value, e);
}

const char *slm_metadata_get(const Metadata *md, const char *key) {
    for (int i = 0; i < md->count; i++)
        if (strcmp(md->items[i].key, key) == 0) return md->items[i].value;
    return NULL;
}

void slm_metadata_free(Metadata *md) {
    for (int i = 0; i < md->count; i++) {
        free(md->items[i].key);
        free(md->items[i].value);
    }
    free(md->items);
    *md = (Metadata){0};
}

/* ---- small helpers ----------------------------------------------------- */

static const struct {
    const char *name;
    int size;
} dtypes[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
              {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};

/* Bytes per element of a dtype safetensors defines, or 0. */
static int dtype_size(const char *name) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, name) == 0) return dtypes[i].size;
    return 0;
}

static int utf8_valid(const char *s, size_t n) {
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    size_t i = 0;
    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(p + i, (utf8proc_ssize_t)(n - i), &c);
        if (k <= 0) return 0;
        i += (size_t)k;
    }
    return 1;
}

/* A JSON number that is a whole number 0..2^53 (where doubles are exact). */
static int json_whole(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double x = j->valuedouble;
    if (!(x >= 0 && x <= 9007199254740992.0) || x != floor(x)) return 0;
    *out = (uint64_t)x;
    return 1;
}

void slm_safetensors_format_shape(char *buf, size_t size, const uint64_t *shape, int ndim) {
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%" PRIu64, i ? ", " : "", shape[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

uint64_t slm_safetensors_count(const SafeTensorInfo *t) {
    uint64_t count = 1;
    for (int i = 0; i < t->ndim; i++) count *= t->shape[i];
    return count;
}

/* The first name that occurs again (in the order given), or NULL; *failed on out of memory. */
static const char *find_duplicate(const char **names, int n, int *failed, Error *e) {
    HashMap seen = {0};
    const char *dup = NULL;
    *failed = 0;
    if (n < 2) return NULL;
    *failed = slm_hashmap_reserve(&seen, (size_t)n, e) != 0;
    for (int k = 0; k < n && !dup && !*failed; k++) {
        uint64_t h = slm_hash64(names[k], strlen(names[k]), 0);
        int32_t i;
        for (HashProbe p = hashmap_probe(&seen, h); !dup && (i = hashmap_next(&seen, &p)) >= 0;)
            if (strcmp(names[i], names[k]) == 0) dup = names[k];
        if (!dup) *failed = slm_hashmap_add(&seen, h, k, e) != 0;
    }
    slm_hashmap_free(&seen);
    return *failed ? NULL : dup;
}

/* ---- reading the header ------------------------------------------------ */

static int parse_metadata(const cJSON *j, Metadata *md, Error *e) {
    if (!cJSON_IsObject(j)) return FAIL(e, BAD_FILE_HINT, "\"__metadata__\" is not an object of strings");
    int n = cJSON_GetArraySize(j);
    if (n > SAFETENSORS_MAX_KEYS)
        return FAIL(e, BAD_FILE_HINT, "\"__metadata__\" has %d keys, over the limit of %d", n, SAFETENSORS_MAX_KEYS);
    const cJSON *kv;
    cJSON_ArrayForEach(kv, j) {
        if (!cJSON_IsString(kv))
            return FAIL(e, BAD_FILE_HINT, "metadata '%s' is not a string (safetensors metadata holds strings only)",
                        kv->string);
        if (slm_metadata_append(md, kv->string, kv->valuestring, e)) return -1;
    }
    const char **keys = xmalloc((size_t)(md->count ? md->count : 1) * sizeof *keys, e);
    if (!keys) return -1;
    for (int i = 0; i < md->count; i++) keys[i] = md->items[i].key;
    int failed;
    const char *dup = find_duplicate(keys, md->count, &failed, e);
    int rc = failed ? -1 : dup ? FAIL(e, BAD_FILE_HINT, "metadata key '%s' occurs twice", dup) : 0;
    free(keys);
    return rc;
}

static int parse_shape(const cJSON *j, SafeTensorInfo *t, Error *e) {
    if (!cJSON_IsArray(j)) return FAIL(e, BAD_FILE_HINT, "tensor '%s': \"shape\" is missing or not a list", t->name);
    if (cJSON_GetArraySize(j) > SAFETENSORS_MAX_DIMS)
        return FAIL(e, BAD_FILE_HINT, "tensor '%s' has %d dimensions (at most %d are read)", t->name,
                    cJSON_GetArraySize(j), SAFETENSORS_MAX_DIMS);
    const cJSON *d;
    t->ndim = 0;
    cJSON_ArrayForEach(d, j) {
        if (!json_whole(d, &t->shape[t->ndim]))
            return FAIL(e, BAD_FILE_HINT, "tensor '%s': shape entry %d is not a whole number >= 0", t->name, t->ndim);
        t->ndim++;
    }
    return 0;
}

static int parse_offsets(const cJSON *j, SafeTensorInfo *t, uint64_t data_size, Error *e) {
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != 2 || !json_whole(j->child, &t->begin) ||
        !json_whole(j->child->next, &t->end))
        return FAIL(e, BAD_FILE_HINT, "tensor '%s': \"data_offsets\" is not two whole numbers [begin, end]", t->name);
    if (t->begin > t->end)
        return FAIL(e, BAD_FILE_HINT, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] begins after it ends",
                    t->name, t->begin, t->end);
    if (t->end > data_size)
        return FAIL(e, BAD_FILE_HINT,
                    "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] run past the end of the data (%" PRIu64
                    " bytes; is the file truncated?)",
                    t->name, t->begin, t->end, data_size);
    return 0;
}

/* The byte range must hold exactly shape's product of elements. */
static int check_size(const SafeTensorInfo *t, int elem_size, Error *e) {
    char shape[256];
    slm_safetensors_format_shape(shape, sizeof shape, t->shape, t->ndim);
    uint64_t count = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] && count > UINT64_MAX / t->shape[i] / (uint64_t)elem_size)
            return FAIL(e, BAD_FILE_HINT, "tensor '%s': shape %s is too large", t->name, shape);
        count *= t->shape[i];
    }
    if (t->end - t->begin != count * (uint64_t)elem_size)
        return FAIL(e, BAD_FILE_HINT, "tensor '%s' holds %" PRIu64 " bytes, but %s %s needs %" PRIu64, t->name,
                    t->end - t->begin, t->dtype, shape, count * (uint64_t)elem_size);
    return 0;
}

static int parse_tensor(const cJSON *j, SafeTensorInfo *t, uint64_t data_size, Error *e) {
    t->name = copy_string(j->string, e);
    if (!t->name) return -1;
    if (!cJSON_IsObject(j)) return FAIL(e, BAD_FILE_HINT, "header entry '%s' is not an object", t->name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    if (!cJSON_IsString(dtype)) return FAIL(e, BAD_FILE_HINT, "tensor '%s' has no \"dtype\" string", t->name);
    int elem_size = dtype_size(dtype->valuestring);
    if (!elem_size)
        return FAIL(e, BAD_FILE_HINT, "tensor '%s' has dtype '%.40s', which safetensors does not define", t->name,
                    dtype->valuestring);
    snprintf(t->dtype, sizeof t->dtype, "%s", dtype->valuestring);
    if (parse_shape(cJSON_GetObjectItemCaseSensitive(j, "shape"), t, e) ||
        parse_offsets(cJSON_GetObjectItemCaseSensitive(j, "data_offsets"), t, data_size, e))
        return -1;
    return check_size(t, elem_size, e);
}

static int by_offset(const void *a, const void *b) {
    const SafeTensorInfo *x = *(const SafeTensorInfo *const *)a, *y = *(const SafeTensorInfo *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* In offset order, each tensor must start where the one before ended, and
 * the last end where the data does: no overlaps, no holes. */
static int check_coverage(const SafeTensorsFile *st, Error *e) {
    int n = st->n_tensors;
    const SafeTensorInfo **order = xmalloc((size_t)(n ? n : 1) * sizeof *order, e);
    if (!order) return -1;
    for (int i = 0; i < n; i++) order[i] = &st->tensors[i];
    qsort(order, (size_t)n, sizeof *order, by_offset);
    uint64_t pos = 0;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const SafeTensorInfo *t = order[i];
        if (t->begin < pos)
            rc = FAIL(e, BAD_FILE_HINT, "tensors '%s' and '%s' overlap (bytes %" PRIu64 "..%" PRIu64 ")",
                      order[i - 1]->name, t->name, t->begin, pos);
        else if (t->begin > pos)
            rc = FAIL(e, BAD_FILE_HINT, "bytes %" PRIu64 "..%" PRIu64 " of the data belong to no tensor (before '%s')",
                      pos, t->begin, t->name);
        pos = t->end;
    }
    if (!rc && pos != st->data_size)
        rc = FAIL(e, BAD_FILE_HINT, "bytes %" PRIu64 "..%" PRIu64 " at the end of the data belong to no tensor", pos,
                  st->data_size);
    free(order);
    return rc;
}

static int check_tensor_names(const SafeTensorsFile *st, Error *e) {
    const char **names = xmalloc((size_t)(st->n_tensors ? st->n_tensors : 1) * sizeof *names, e);
    if (!names) return -1;
    for (int i = 0; i < st->n_tensors; i++) names[i] = st->tensors[i].name;
    int failed;
    const char *dup = find_duplicate(names, st->n_tensors, &failed, e);
    int rc = failed ? -1 : dup ? FAIL(e, BAD_FILE_HINT, "tensor '%s' occurs twice in the header", dup) : 0;
    free(names);
    return rc;
}

/* Walks the header object: "__metadata__" and one entry per tensor. */
static int parse_entries(SafeTensorsFile *st, const cJSON *root, Error *e) {
    int n = cJSON_GetArraySize(root);
    if (n > SAFETENSORS_MAX_TENSORS + 1)
        return FAIL(e, BAD_FILE_HINT, "the header has %d entries, over the limit of %d tensors", n,
                    SAFETENSORS_MAX_TENSORS);
    st->tensors = xcalloc((size_t)(n ? n : 1), sizeof *st->tensors, e);
    if (!st->tensors) return -1;
    const cJSON *j;
    cJSON_ArrayForEach(j, root) {
        if (strcmp(j->string, "__metadata__") == 0) {
            if (st->has_metadata) return FAIL(e, BAD_FILE_HINT, "\"__metadata__\" occurs twice");
            st->has_metadata = 1;
            if (parse_metadata(j, &st->metadata, e)) return -1;
        } else if (parse_tensor(j, &st->tensors[st->n_tensors++], st->data_size, e)) {
            return -1;
        }
    }
    return check_tensor_names(st, e) || check_coverage(st, e) ? -1 : 0;
}

/* How many values the JSON text holds at most, counted without parsing it: one
 * per ':' or ',' outside strings, plus the outermost. cJSON spends about 100
 * bytes on each, so this caps what parsing can allocate before it starts. */
static size_t count_values(const char *text, size_t n) {
    size_t count = 1;
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else {
            in_string = c == '"';
            count += c == ':' || c == ',';
        }
    }
    return count;
}

/* Where the first \u0000 in a JSON string of text (n) starts, or n. cJSON
 * decodes it into a NUL that ends the C string: a metadata value
 * "gelu\u0000..." would load as "gelu", a key or a name cut short too. */
static size_t escaped_nul_at(const char *text, size_t n) {
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in_string)
            in_string = text[i] == '"';
        else if (text[i] == '"')
            in_string = 0;
        else if (text[i] == '\\') {
            if (i + 5 < n && memcmp(text + i + 1, "u0000", 5) == 0) return i;
            i++; /* the escaped character: an escaped quote ends no string */
        }
    }
    return n;
}

static int parse_header(SafeTensorsFile *st, const char *text, size_t n, Error *e) {
    if (memchr(text, '\0', n)) return FAIL(e, BAD_FILE_HINT, "the header holds a NUL byte");
    size_t nul = escaped_nul_at(text, n);
    if (nul < n)
        return FAIL(e, BAD_FILE_HINT, "the header holds a NUL character (\\u0000) in a string at byte %zu", nul);
    size_t values = count_values(text, n);
    if (values > SAFETENSORS_MAX_VALUES)
        return FAIL(e, BAD_FILE_HINT, "the header holds %zu keys and values, over the limit of %d", values,
                    SAFETENSORS_MAX_VALUES);
    if (!utf8_valid(text, n)) return FAIL(e, BAD_FILE_HINT, "the header is not valid UTF-8");
    if (text[0] != '{') return FAIL(e, BAD_FILE_HINT, "the header does not start with '{' (it is no JSON object)");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (!root)
        return FAIL(e, BAD_FILE_HINT, "the header is not valid JSON (error near byte %zu of %zu)",
                    end && end >= text ? (size_t)(end - text) : 0, n);
    size_t used = (size_t)(end - text);
    if (used < n && strspn(end, " \t\r\n") < n - used) {
        cJSON_Delete(root);
        return FAIL(e, BAD_FILE_HINT, "the header has text after its JSON object (at byte %zu)", used);
    }
    int rc = parse_entries(st, root, e);
    cJSON_Delete(root);
    return rc;
}

static uint64_t read_le64(const unsigned char *b) {
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = (x << 8) | b[i];
    return x;
}

/* Reads the length and the header and checks them against the file's size. */
static int read_header(SafeTensorsFile *st, Error *e) {
    struct stat sb;
    if (fstat(fileno(st->f), &sb) != 0 || !S_ISREG(sb.st_mode))
        return FAIL(e, "give the path of a model file", "not a regular file");
    st->file_size = (uint64_t)sb.st_size;
    if (st->file_size < 8)
        return FAIL(e, BAD_FILE_HINT, "the file holds %" PRIu64 " bytes, too few for a safetensors header length (8)",
                    st->file_size);
    unsigned char len_bytes[8];
    if (fread(len_bytes, 1, 8, st->f) != 8) return FAIL(e, NULL, "error reading the header length");
    uint64_t n = read_le64(len_bytes);
    if (n == 0) return FAIL(e, BAD_FILE_HINT, "the header length is 0");
    if (n > st->file_size - 8)
        return FAIL(e, BAD_FILE_HINT, "the header length %" PRIu64 " runs past the end of the file (%" PRIu64 " bytes)",
                    n, st->file_size);
    if (n > SAFETENSORS_MAX_HEADER)
        return FAIL(e, BAD_FILE_HINT, "the header length %" PRIu64 " is over the limit of %u bytes", n,
                    SAFETENSORS_MAX_HEADER);
    char *text = xmalloc((size_t)n + 1, e);
    if (!text) return -1;
    int rc = 0;
    if (fread(text, 1, (size_t)n, st->f) != (size_t)n) rc = FAIL(e, NULL, "error reading the header");
    text[n] = '\0';
    st->data_start = 8 + n;
    st->data_size = st->file_size - st->data_start;
    if (!rc) rc = parse_header(st, text, (size_t)n, e);
    free(text);
    return rc;
}

int slm_safetensors_open(SafeTensorsFile *st, const char *path, Error *e) {
    *st = (SafeTensorsFile){0};
    st->f = xfopen(path, "rb", e);
    if (!st->f) return -1;
    st->path = copy_string(path, e);
    if (!st->path) {
        slm_safetensors_close(st);
        return -1;
    }
    if (read_header(st, e)) {
        slm_error_prefix(e, "'%s': ", path);
        slm_safetensors_close(st);
        return -1;
    }
    return 0;
}

void slm_safetensors_close(SafeTensorsFile *st) {
    if (st->f) fclose(st->f);
    for (int i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    free(st->tensors);
    free(st->path);
    slm_metadata_free(&st->metadata);
    *st = (SafeTensorsFile){0};
}

const SafeTensorInfo *slm_safetensors_find(const SafeTensorsFile *st, const char *name) {
    for (int i = 0; i < st->n_tensors; i++)
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    return NULL;
}

/* ---- tensor data ------------------------------------------------------- */

int slm_safetensors_read_f32(SafeTensorsFile *st, const SafeTensorInfo *t, float *dst, Error *e) {
    if (strcmp(t->dtype, "F32") != 0)
        return FAIL(e, NULL, "'%s': tensor '%s' has dtype %s, not F32", st->path, t->name, t->dtype);
    if (fseeko(st->f, (off_t)(st->data_start + t->begin), SEEK_SET) != 0)
        return FAIL(e, NULL, "'%s': cannot seek to tensor '%s'", st->path, t->name);
    uint64_t n = (t->end - t->begin) / 4;
    unsigned char buf[4 * CHUNK_FLOATS];
    for (uint64_t i = 0; i < n; i += CHUNK_FLOATS) {
        size_t k = n - i < CHUNK_FLOATS ? (size_t)(n - i) : CHUNK_FLOATS;
        if (fread(buf, 4, k, st->f) != k)
            return FAIL(e, "make sure nothing writes the file while it is read",
                        "'%s': the file ended inside tensor '%s'", st->path, t->name);
        for (size_t j = 0; j < k; j++) {
            const unsigned char *b = buf + 4 * j;
            uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            memcpy(&dst[i + j], &u, 4);
        }
    }
    return 0;
}

/* ---- writing ----------------------------------------------------------- */

static uint64_t out_count(const SafeTensorOut *t) {
    uint64_t count = 1;
    for (int i = 0; i < t->ndim; i++) count *= (uint64_t)t->shape[i];
    return count;
}

/* Names and strings must be valid UTF-8 and the tensors well formed, so
 * that what we write is a file every reader accepts. */
static int check_outputs(const SafeTensorOut *tensors, int n, const Metadata *md, Error *e) {
    for (int i = 0; md && i < md->count; i++)
        if (!utf8_valid(md->items[i].key, strlen(md->items[i].key)) ||
            !utf8_valid(md->items[i].value, strlen(md->items[i].value)))
            return FAIL(e, "give metadata as UTF-8 text", "metadata '%.60s' is not valid UTF-8", md->items[i].key);
    const char **names = xmalloc((size_t)(n ? n : 1) * sizeof *names, e);
    if (!names) return -1;
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const SafeTensorOut *t = &tensors[i];
        names[i] = t->name;
        if (!utf8_valid(t->name, strlen(t->name)) || strcmp(t->name, "__metadata__") == 0)
            rc = FAIL(e, NULL, "cannot write a tensor called '%.60s'", t->name);
        else if (t->ndim < 0 || t->ndim > SAFETENSORS_MAX_DIMS)
            rc = FAIL(e, NULL, "tensor '%s' has %d dimensions", t->name, t->ndim);
        for (int d = 0; d < t->ndim && !rc; d++)
            if (t->shape[d] < 0) rc = FAIL(e, NULL, "tensor '%s' has a negative size", t->name);
    }
    int failed = 0;
    const char *dup = rc ? NULL : find_duplicate(names, n, &failed, e);
    if (!rc && (failed || dup)) rc = failed ? -1 : FAIL(e, NULL, "tensor '%s' given twice", dup);
    free(names);
    return rc;
}

static void add_tensor_entry(cJSON *root, const SafeTensorOut *t, uint64_t begin, uint64_t end) {
    cJSON *entry = cJSON_AddObjectToObject(root, t->name);
    cJSON_AddStringToObject(entry, "dtype", "F32");
    cJSON *shape = cJSON_AddArrayToObject(entry, "shape");
    for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber(t->shape[d]));
    cJSON *offsets = cJSON_AddArrayToObject(entry, "data_offsets");
    cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)begin));
    cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)end));
}

/* The header text, padded with spaces so 8 + *len is a multiple of 8. */
static char *header_text(const SafeTensorOut *tensors, int n, const Metadata *md, size_t *len, Error *e) {
    cJSON *root = cJSON_CreateObject();
    cJSON *meta = md && root ? cJSON_AddObjectToObject(root, "__metadata__") : NULL;
    for (int i = 0; md && i < md->count; i++) cJSON_AddStringToObject(meta, md->items[i].key, md->items[i].value);
    uint64_t pos = 0;
    for (int i = 0; i < n && root; i++) {
        uint64_t bytes = 4 * out_count(&tensors[i]);
        add_tensor_entry(root, &tensors[i], pos, pos + bytes);
        pos += bytes;
    }
    /* cJSON's add functions do nothing on a NULL parent, so one check on the
     * printed size (entries x at least 2 bytes) catches an allocation failure. */
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    int expect = cJSON_GetArraySize(root) == n + (md ? 1 : 0) && (!md || cJSON_GetArraySize(meta) == md->count);
    cJSON_Delete(root);
    if (!text || !expect) {
        free(text);
        FAIL(e, "free some memory", "out of memory building the safetensors header");
        return NULL;
    }
    size_t used = strlen(text), padded = (used + 7) / 8 * 8;
    char *out = xrealloc(text, padded + 1, e);
    if (!out) {
        free(text);
        return NULL;
    }
    memset(out + used, ' ', padded - used);
    out[padded] = '\0';
    *len = padded;
    return out;
}

static int write_f32_le(AtomicFile *a, const float *x, uint64_t n, Error *e) {
    unsigned char buf[4 * CHUNK_FLOATS];
    for (uint64_t i = 0; i < n; i += CHUNK_FLOATS) {
        size_t k = n - i < CHUNK_FLOATS ? (size_t)(n - i) : CHUNK_FLOATS;
        for (size_t j = 0; j < k; j++) {
            uint32_t u;
            memcpy(&u, &x[i + j], 4);
            for (int b = 0; b < 4; b++) buf[4 * j + (size_t)b] = (unsigned char)(u >> (8 * b));
        }
        if (slm_atomic_write(a, buf, 4 * k, e)) return -1;
    }
    return 0;
}

int slm_safetensors_write_f32(const char *path, const SafeTensorOut *tensors, int n, const Metadata *md, Error *e) {
    size_t len;
    char *header = check_outputs(tensors, n, md, e) ? NULL : header_text(tensors, n, md, &len, e);
    if (!header) return -1;
    unsigned char len_bytes[8];
    for (int b = 0; b < 8; b++) len_bytes[b] = (unsigned char)((uint64_t)len >> (8 * b));
    AtomicFile a;
    int rc = slm_atomic_open(&a, path, e);
    if (!rc) rc = slm_atomic_write(&a, len_bytes, 8, e) || slm_atomic_write(&a, header, len, e) ? -1 : 0;
    for (int i = 0; i < n && !rc; i++) rc = write_f32_le(&a, tensors[i].data, out_count(&tensors[i]), e);
    free(header);
    if (rc) {
        if (a.f) slm_atomic_abort(&a);
        return -1;
    }
    return slm_atomic_commit(&a, e);
}
