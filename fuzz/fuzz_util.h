/* What the fuzz targets share: a vocabulary small enough to read at once, a
 * way to hand the loaders the input as a file, and a loud failure for a
 * broken promise (libFuzzer keeps the input that aborted). */
#ifndef STORYLM_FUZZ_UTIL_H
#define STORYLM_FUZZ_UTIL_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "storylm/tokenizer.h"

/* [UNK] and [EOS], letters and digits alone and as "##" pieces, ASCII
 * punctuation, a few words and some letters outside ASCII. */
static const char FUZZ_VOCAB[] =
    "[UNK]\n[EOS]\n"
    "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\nq\nr\ns\nt\nu\nv\nw\nx\ny\nz\n"
    "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n"
    "##a\n##b\n##c\n##d\n##e\n##f\n##g\n##h\n##i\n##j\n##k\n##l\n##m\n##n\n##o\n##p\n##q\n##r\n##s\n##t\n"
    "##u\n##v\n##w\n##x\n##y\n##z\n##0\n##1\n##2\n##3\n##4\n##5\n##6\n##7\n##8\n##9\n"
    ".\n,\n!\n?\n'\n\"\n-\n:\n;\n(\n)\n[\n]\n{\n}\n/\n%\n#\n&\n*\n+\n<\n=\n>\n@\n\\\n^\n_\n`\n|\n~\n$\n"
    "the\nand\nlily\nfound\n##ing\n##ed\nsaid\nsaw\ndon\n"
    "\xc3\x9f\n\xc3\xb8\n\xc5\x82\n\xcf\x83\n\xcf\x82\n\xe4\xb8\xad\n##\xc3\x9f\n\xe2\x80\x9c\n\xe2\x80\x9d\n"
    "\xe2\x80\x99\n\xe2\x80\xa6\n";

/* The fixed vocabulary, loaded once (a fuzz target is one process). */
static inline const Tokenizer *fuzz_tokenizer(void) {
    static Tokenizer t;
    static int loaded;
    if (!loaded) {
        Error e = {0};
        if (slm_tokenizer_from_text(&t, FUZZ_VOCAB, sizeof FUZZ_VOCAB - 1, 0, &e)) {
            fprintf(stderr, "fuzz vocabulary: %s\n", e.message);
            abort();
        }
        loaded = 1;
    }
    return &t;
}

/* The input as a file the loaders open by path: an in-memory file, rewritten
 * for every input, named by /proc/self/fd. */
static inline const char *fuzz_file(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-input", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) abort();
    for (size_t at = 0; at < size;) {
        ssize_t n = pwrite(fd, data + at, size - at, (off_t)at);
        if (n <= 0) abort();
        at += (size_t)n;
    }
    return path;
}

/* A promise broken: say which, and abort so libFuzzer saves the input. */
#define FUZZ_ASSERT(cond)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond);                                 \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

#endif
