/* What a model file records of the stories it was trained on, instead of
 * their path on the machine that trained it: the file's name without its
 * folders, its size in bytes and the FNV-1a 64 hash of its bytes (slm_hash64 with
 * seed 0, the checksum info shows for tensors), in the metadata keys "data",
 * "data_bytes" and "data_fnv1a64" (16 hex digits). The hash tells one text
 * from another, not a forged one (it is no cryptographic hash). */
#ifndef STORYLM_RECORD_H
#define STORYLM_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/safetensors.h"

typedef struct StoriesRecord {
    char name[256]; /* "" when the model does not say */
    uint64_t bytes, fnv1a64;
    bool has_sums; /* bytes and fnv1a64 are known (files from before this record hold a path in "data" only) */
} StoriesRecord;

/* r->name = path's last part ("/home/x/stories.txt" -> "stories.txt") as
 * valid UTF-8, the bytes of a name that is not written \xHH ("st\xe9.txt"). */
void slm_record_set_name(StoriesRecord *r, const char *path);
/* The record of the regular file at path (read once, in one streaming pass). */
int slm_record_of_file(StoriesRecord *r, const char *path, Error *e);
/* Sets the three keys in md ("data" alone when the sums are unknown). */
int slm_record_to_metadata(const StoriesRecord *r, Metadata *md, Error *e);
/* The record a model's metadata holds; of an old file's path, its last part. */
void slm_record_from_metadata(StoriesRecord *r, const Metadata *md);
/* Whether the file at path is the one recorded: 1 it is (or the record has no
 * sums to tell), 0 it is not (why, size, says what differs), -1 it cannot be
 * read. */
int slm_record_check_file(const StoriesRecord *r, const char *path, char *why, size_t size, Error *e);

#endif
