/* The training record: a model trained from a stories file named by its
 * absolute path records the file's name, size and FNV-1a 64 hash and holds
 * no '/' anywhere in its metadata; an old file's path reads back as its last
 * part; a file of another size or text is told apart from the recorded one;
 * a file name that is not UTF-8 is recorded as UTF-8 (\xHH). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/checkpoint.h"
#include "storylm/fileio.h"
#include "storylm/record.h"
#include "storylm/train.h"

enum { V = 12, N = 20, LEN = 9 };

static const char TEXT[] = "Tom had a red ball.\n<|endoftext|>\nMia saw a cat.\n";

/* N stories of LEN tokens between [EOS]s (id 1): only the ids train; the
 * record is of the file whatever it holds. */
static void tiny_stories(Stories *s, size_t *starts, int32_t *ids, int *test, int *train) {
    *s = (Stories){.n_stories = N,
                   .starts = starts,
                   .ids32 = ids,
                   .n_tokens = (size_t)N * LEN,
                   .n_test = 2,
                   .n_train = N - 2,
                   .test = test,
                   .train = train};
    for (int i = 0; i <= N; i++) starts[i] = (size_t)i * LEN;
    for (int i = 0; i < N * LEN; i++) ids[i] = i % LEN == 0 || i % LEN == LEN - 1 ? 1 : 2 + (i / LEN + i) % (V - 2);
    test[0] = 3, test[1] = 11;
    for (int i = 0, k = 0; i < N; i++)
        if (i != 3 && i != 11) train[k++] = i;
}

static void write_file(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(text, 1, len, f) == len);
    if (f) fclose(f);
}

static void training_records_no_path(void) {
    char dir[PATH_MAX], data[PATH_MAX + 32], out[PATH_MAX + 32], vocab[V * 8] = "[UNK]\n[EOS]\n";
    CHECK(realpath(check_tmpdir(), dir) != NULL && dir[0] == '/');
    snprintf(data, sizeof data, "%s/record stories.txt", dir);
    snprintf(out, sizeof out, "%s/record.safetensors", dir);
    write_file(data, TEXT, sizeof TEXT - 1);
    for (int i = 2; i < V; i++) sprintf(vocab + strlen(vocab), "w%d\n", i);
    size_t starts[N + 1];
    int32_t ids[N * LEN];
    int test[2], train[N - 2];
    Stories s;
    tiny_stories(&s, starts, ids, test, train);
    TrainOptions o = slm_train_default_options();
    o.steps = 2, o.eval_every = 0, o.batch = 2, o.out = out, o.data_path = data, o.vocab_text = vocab, o.vocab_size = V;
    TrainResult r;
    Error e = {0};
    CHECK(slm_train_run(&s, &o, NULL, NULL, &r, &e) == 0);
    if (e.message[0]) fprintf(stderr, "train_run: %s\n", e.message);

    Model m;
    char *text = NULL;
    Metadata md = {0};
    CHECK(slm_checkpoint_load_model(out, &m, &text, &md, &e) == 0);
    for (int i = 0; i < md.count; i++)
        if (!CHECK(strchr(md.items[i].value, '/') == NULL))
            fprintf(stderr, "  %s: %s\n", md.items[i].key, md.items[i].value);
    StoriesRecord rec;
    slm_record_from_metadata(&rec, &md);
    CHECK(strcmp(rec.name, "record stories.txt") == 0);
    CHECK(rec.has_sums && rec.bytes == sizeof TEXT - 1);
    CHECK(rec.fnv1a64 == slm_hash64(TEXT, sizeof TEXT - 1, 0));
    char why[300];
    CHECK(slm_record_check_file(&rec, data, why, sizeof why, &e) == 1 && why[0] == '\0');
    free(text);
    slm_model_free(&m);

    /* the same size, another text; then another size */
    char other[] = "Tom had a red ball.\n<|endoftext|>\nMia saw a dog.\n";
    write_file(data, other, sizeof other - 1);
    CHECK(slm_record_check_file(&rec, data, why, sizeof why, &e) == 0 && strstr(why, "another text"));
    write_file(data, TEXT, 20);
    CHECK(slm_record_check_file(&rec, data, why, sizeof why, &e) == 0 && strstr(why, "has 20 bytes, not the"));
    CHECK(slm_record_check_file(&rec, "no-such-stories.txt", why, sizeof why, &e) == -1);
    slm_metadata_free(&md);
}

/* "A stories file whose name is not UTF-8 trained until its first save, then
 * failed (metadata must be UTF-8)": the record holds a UTF-8 rendering of the
 * name, each stray byte as \xHH, and the run saves its model. */
static void a_name_not_utf8_is_recorded_escaped(void) {
    char dir[PATH_MAX], data[PATH_MAX + 32], out[PATH_MAX + 32], vocab[V * 8] = "[UNK]\n[EOS]\n";
    CHECK(realpath(check_tmpdir(), dir) != NULL);
    snprintf(data, sizeof data, "%s/st\xe9ries \xc3\xa9t\xc3.txt", dir); /* Latin-1 e-acute, UTF-8's, a cut one */
    snprintf(out, sizeof out, "%s/latin1.safetensors", dir);
    write_file(data, TEXT, sizeof TEXT - 1);
    for (int i = 2; i < V; i++) sprintf(vocab + strlen(vocab), "w%d\n", i);
    size_t starts[N + 1];
    int32_t ids[N * LEN];
    int test[2], train[N - 2];
    Stories s;
    tiny_stories(&s, starts, ids, test, train);
    TrainOptions o = slm_train_default_options();
    o.steps = 2, o.eval_every = 0, o.batch = 2, o.out = out, o.data_path = data, o.vocab_text = vocab, o.vocab_size = V;
    TrainResult r;
    Error e = {0};
    CHECK(slm_train_run(&s, &o, NULL, NULL, &r, &e) == 0);
    if (e.message[0]) fprintf(stderr, "train_run: %s\n", e.message);
    Model m;
    char *text = NULL;
    Metadata md = {0};
    if (CHECK(slm_checkpoint_load_model(out, &m, &text, &md, &e) == 0)) {
        CHECK(strcmp(slm_metadata_get(&md, "data"), "st\\xe9ries \xc3\xa9t\\xc3.txt") == 0);
        StoriesRecord rec;
        slm_record_from_metadata(&rec, &md);
        CHECK(rec.has_sums && rec.bytes == sizeof TEXT - 1);
        free(text);
        slm_model_free(&m);
        slm_metadata_free(&md);
    }
    /* cut short: at a whole character, never inside one */
    StoriesRecord cut;
    char name[300];
    memset(name, 'a', 254);
    snprintf(name + 254, sizeof name - 254, "\xc3\xa9");
    slm_record_set_name(&cut, name);
    CHECK(strlen(cut.name) == 254);
}

/* A model file from before the record: "data" holds the trainer's path. */
static void old_path_reads_as_its_name(void) {
    Metadata md = {0};
    Error e = {0};
    CHECK(slm_metadata_set(&md, "data", "/home/someone/data/tinystories-train.txt", &e) == 0);
    StoriesRecord rec;
    slm_record_from_metadata(&rec, &md);
    CHECK(strcmp(rec.name, "tinystories-train.txt") == 0 && !rec.has_sums);
    char why[64];
    CHECK(slm_record_check_file(&rec, "anything.txt", why, sizeof why, &e) == 1); /* nothing to tell it by */
    Metadata out = {0};
    CHECK(slm_record_to_metadata(&rec, &out, &e) == 0 && out.count == 1 &&
          !strcmp(slm_metadata_get(&out, "data"), rec.name));
    slm_metadata_free(&out);
    slm_metadata_free(&md);
}

int main(void) {
    training_records_no_path();
    old_path_reads_as_its_name();
    a_name_not_utf8_is_recorded_escaped();
    return check_report();
}
