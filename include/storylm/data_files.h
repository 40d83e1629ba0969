/* Data files: the files of the source tree (the shipped models, the sample
 * stories) found from wherever the executable runs, built or installed.
 * Never prints. */
#ifndef STORYLM_DATA_FILES_H
#define STORYLM_DATA_FILES_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
