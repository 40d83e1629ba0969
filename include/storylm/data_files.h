/* Data files: the files of the source tree (the shipped models, the sample
 * stories) found from wherever the executable runs, built or installed.
 * Never prints. */
#ifndef STORYLM_DATA_FILES_H
#define STORYLM_DATA_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "storylm/error.h"

/* The model shipped in the source tree's models/ directory. */
#define SHIPPED_MODEL_NAME "tinystories.safetensors"
#define SHIPPED_MODEL_REL "models/" SHIPPED_MODEL_NAME

/* true when path is a regular file. */
bool slm_data_file_exists(const char *path);
/* A file of the source tree, rel ("data/stories.txt"), looked for in order:
 * beside the executable as in the source tree, <exe dir>/../rel
 * (build/storylm) or <exe dir>/rel; in the installed data folder seen from
 * the executable, <exe dir>/../share/storylm/rel (an install moved to another
 * prefix); in the source tree named by <exe dir>/storylm-source.txt (a build
 * folder outside the source tree); in the data folder compiled in
 * (<prefix>/share/storylm/rel).
 * Writes the path into buf; false when none exists. */
bool slm_data_file_find(const char *rel, char *buf, size_t size);
/* Those places for rel, ", "-separated into buf (size), for error messages. */
void slm_data_file_places(const char *rel, char *buf, size_t size);
/* The shipped model, models/tinystories.safetensors, found that way. */
bool slm_data_file_shipped_model(char *buf, size_t size);

/* The shipped vocabulary (the shipped model's, learnt from TinyStories). */
#define SHIPPED_VOCAB_REL "models/vocab.txt"
/* The word a --vocab value gives for the shipped vocabulary. */
#define SHIPPED_VOCAB_NAME "shipped"
/* The vocabulary file a --vocab value names, into *path: SHIPPED_VOCAB_NAME,
 * or a relative path that is not there and whose folder is not either (the
 * guide's models/vocab.txt from another folder) naming a file that
 * slm_data_file_find finds, is that file (in buf, size; *found set); any other
 * value is itself. -1 with e listing the places looked in when "shipped" is
 * not found. */
int slm_data_vocab_path(const char *given, char *buf, size_t size, const char **path, bool *found, Error *e);

/* The model a --from value names, into *path: a file that exists is itself;
 * else a shipped model by its short name (tinystories, transformer,
 * window8: models/NAME.safetensors or models/tinystories-NAME.safetensors)
 * found by slm_data_file_find, into buf (size). -1 with e listing where it
 * looked and the short names when neither is found. */
int slm_data_model_path(const char *given, char *buf, size_t size, const char **path, Error *e);

#endif
