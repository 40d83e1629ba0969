/* The files of web/, compiled into the binary by cmake/embed_web.cmake. */
#ifndef STORYLM_SERVER_WEB_ASSETS_H
#define STORYLM_SERVER_WEB_ASSETS_H

#include <stddef.h>

typedef struct WebAsset {
    const char *path; /* "/index.html" */
    const char *mime;
    const unsigned char *data;
    size_t size;
} WebAsset;

extern const WebAsset web_assets[]; /* ends with a {0} entry */
extern const int web_assets_count;

#endif
