/* The training stories' record in a model file: see include/storylm/record.h. */
#include "storylm/record.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "storylm/checkpoint.h"
#include "storylm/fileio.h"
#include "storylm/filemap.h"
#include "storylm/text.h"

/* Bytes hashed between giving the pages read back: a file of gigabytes stays small in memory. */
#define RECORD_CHUNK ((size_t)16 << 20)

void slm_record_set_name(StoriesRecord *r, const char *path) {
    const char *slash = strrchr(path, '/');
    slm_utf8_escape(slash ? slash + 1 : path, r->name, sizeof r->name); /* metadata is UTF-8: never a failed save */
}

int slm_record_of_file(StoriesRecord *r, const char *path, Error *e) {
    *r = (StoriesRecord){0};
    FileMap m;
    if (slm_file_map(&m, path, e)) return -1;
    uint64_t h = SLM_HASH64_BASIS;
    for (size_t at = 0; at < m.len; at += RECORD_CHUNK) {
        size_t n = m.len - at < RECORD_CHUNK ? m.len - at : RECORD_CHUNK;
        h = slm_hash64_more(h, m.data + at, n);
        slm_file_map_drop(&m, at, at + n);
    }
    *r = (StoriesRecord){.bytes = m.len, .fnv1a64 = h, .has_sums = true};
    slm_record_set_name(r, path);
    slm_file_unmap(&m);
    return 0;
}

int slm_record_to_metadata(const StoriesRecord *r, Metadata *md, Error *e) {
    if (slm_metadata_set(md, "data", r->name, e)) return -1;
    if (!r->has_sums) return 0;
    char bytes[24], hash[24];
    snprintf(bytes, sizeof bytes, "%" PRIu64, r->bytes);
    snprintf(hash, sizeof hash, "%016" PRIx64, r->fnv1a64);
    return slm_metadata_set(md, "data_bytes", bytes, e) || slm_metadata_set(md, "data_fnv1a64", hash, e) ? -1 : 0;
}

void slm_record_from_metadata(StoriesRecord *r, const Metadata *md) {
    *r = (StoriesRecord){0};
    const char *data = slm_metadata_get(md, "data");
    if (data) slm_record_set_name(r, data);
    r->has_sums = slm_checkpoint_parse_u64(slm_metadata_get(md, "data_bytes"), 10, &r->bytes) &&
                  slm_checkpoint_parse_u64(slm_metadata_get(md, "data_fnv1a64"), 16, &r->fnv1a64);
}

int slm_record_check_file(const StoriesRecord *r, const char *path, char *why, size_t size, Error *e) {
    if (size) why[0] = '\0';
    if (!r->has_sums) return 1;
    StoriesRecord got;
    if (slm_record_of_file(&got, path, e)) return -1;
    if (got.bytes == r->bytes && got.fnv1a64 == r->fnv1a64) return 1;
    if (got.bytes != r->bytes)
        snprintf(why, size, "'%s' has %" PRIu64 " bytes, not the %" PRIu64 " of '%s' the model was trained on", path,
                 got.bytes, r->bytes, r->name);
    else
        snprintf(why, size,
                 "'%s' has the size of '%s' the model was trained on, but another text (FNV-1a 64 %016" PRIx64
                 ", recorded %016" PRIx64 ")",
                 path, r->name, got.fnv1a64, r->fnv1a64);
    return 0;
}
