/* The safetensors file format, independent of storylm's use of it:
 *
 *   8 bytes   N, the header's length, unsigned little-endian
 *   N bytes   a JSON object: "__metadata__" (string -> string, optional) and,
 *             for every tensor, {"dtype": "F32", "shape": [...],
 *             "data_offsets": [begin, end]} with offsets into the data area;
 *             trailing spaces pad it so the data starts 8-byte aligned
 *   the rest  the data area: every tensor's bytes, little-endian, C order,
 *             covered exactly by the tensors (no holes, no overlaps)
 *
 * The reader validates all of it before a single data byte is read, and reads
 * only inside the file. The writer writes F32 tensors atomically. */
#ifndef STORYLM_SAFETENSORS_H
#define STORYLM_SAFETENSORS_H

#include <stdint.h>
#include <stdio.h>

#include "storylm/error.h"

#define SAFETENSORS_MAX_DIMS 8
#define SAFETENSORS_MAX_HEADER 100000000u /* bytes, as the reference implementation allows */
/* Far above any real file's (a storylm model has 9 tensors and about 20 keys),
 * so that what a header makes the reader allocate and do stays in proportion:
 * JSON values of the header (counted before parsing), tensors, metadata keys. */
#define SAFETENSORS_MAX_VALUES 1000000 /* cJSON's nodes: at most about 100 MB */
#define SAFETENSORS_MAX_TENSORS 100000
#define SAFETENSORS_MAX_KEYS 500000

/* A small ordered key/value list of strings ("__metadata__"). */
typedef struct MetaEntry {
    char *key;
    char *value;
} MetaEntry;

typedef struct Metadata {
    MetaEntry *items;
    int count, cap;
} Metadata;

/* Adds key/value (copies both) at the end, not looking for an earlier key:
 * for keys known to be new (copying a list without duplicates). Linear. */
int slm_metadata_append(Metadata *md, const char *key, const char *value, Error *e);
/* Sets key to value (copies both), replacing an earlier value of key. */
int slm_metadata_set(Metadata *md, const char *key, const char *value, Error *e);
/* The value of key, or NULL. */
const char *slm_metadata_get(const Metadata *md, const char *key);
void slm_metadata_free(Metadata *md);

/* One tensor as the header describes it. */
typedef struct SafeTensorInfo {
    char *name;
    char dtype[8]; /* "F32", "F16", "I64", ... */
    int ndim;
    uint64_t shape[SAFETENSORS_MAX_DIMS];
    uint64_t begin, end; /* byte offsets into the data area */
} SafeTensorInfo;

/* An open, validated file. */
typedef struct SafeTensorsFile {
    FILE *f;
    char *path;
    uint64_t file_size;
    uint64_t data_start; /* 8 + header length */
    uint64_t data_size;  /* file_size - data_start */
    SafeTensorInfo *tensors;
    int n_tensors;
    int has_metadata; /* the header held "__metadata__" */
    Metadata metadata;
} SafeTensorsFile;

/* Opens path and validates its header: lengths, JSON, metadata strings, known
 * dtypes, shapes, offsets inside the data area and matching the shape, no
 * duplicate names, tensors covering the data area exactly. */
int slm_safetensors_open(SafeTensorsFile *st, const char *path, Error *e);
void slm_safetensors_close(SafeTensorsFile *st);
/* The tensor called name, or NULL. */
const SafeTensorInfo *slm_safetensors_find(const SafeTensorsFile *st, const char *name);
/* Number of elements (product of the shape). */
uint64_t slm_safetensors_count(const SafeTensorInfo *t);
/* Reads an F32 tensor into dst (slm_safetensors_count(t) floats). */
int slm_safetensors_read_f32(SafeTensorsFile *st, const SafeTensorInfo *t, float *dst, Error *e);
/* "[128, 160]" into buf. */
void slm_safetensors_format_shape(char *buf, size_t size, const uint64_t *shape, int ndim);

/* One F32 tensor to write. */
typedef struct SafeTensorOut {
    const char *name;
    int ndim;
    int shape[SAFETENSORS_MAX_DIMS];
    const float *data; /* product of shape floats, C order */
} SafeTensorOut;

/* Writes the tensors in the given order, with metadata (NULL: no
 * "__metadata__"), to path atomically: on any error the old file stays. */
int slm_safetensors_write_f32(const char *path, const SafeTensorOut *tensors, int n, const Metadata *metadata,
                              Error *e);

#endif
