/* A main for the fuzz targets where libFuzzer is not linked (gcc, the
 * ordinary build): each file named, or each file of each folder named, is
 * handed to LLVMFuzzerTestOneInput once. Replaying the committed seeds keeps
 * the targets compiling and their promises true in every build, not only in
 * the clang fuzz build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The whole file as bytes (one extra byte so an empty file is not malloc(0)). */
static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, 2 * cap + 1);
            if (!bigger) break;
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int replay(const char *path, int *count) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or folder %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) return (*count)++, replay_file(path);
    DIR *d = opendir(path);
    if (!d) return 1;
    int bad = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.') continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, ent->d_name);
        bad |= replay(sub, count);
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|FOLDER...   (each input once through the fuzz target)\n", argv[0]);
        return 2;
    }
    int bad = 0, count = 0;
    for (int i = 1; i < argc; i++) bad |= replay(argv[i], &count);
    printf("replayed %d inputs\n", count);
    return bad || count == 0;
}
