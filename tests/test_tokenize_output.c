/* The lines storylm tokenize prints (tokenize_output.h): words as text and
 * as JSON (escaped by cJSON as the verb always escaped them), every line of a
 * file a text of its own, a bad line named; and parse.h's shortest decimal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/parse.h"
#include "storylm/tokenize_output.h"

/* What slm_tokenize_write_lines writes for data with format f; rc the return. */
static char *lines_of(const char *data, const TokenizeFormat *f, int *rc, Error *e) {
    Pretokenizer pre = {0};
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    *rc =
        slm_pretokenizer_init(&pre, e) || slm_tokenize_write_lines(NULL, &pre, f, data, strlen(data), "t.txt", out, e);
    fclose(out);
    slm_pretokenizer_free(&pre);
    return text;
}

static void test_words(void) {
    Error e = {0};
    int rc;
    TokenizeFormat text = {.words = true}, json = {.words = true, .json = true};
    char *got = lines_of("Lily's \"big\" dog\\x\n\nCafé", &text, &rc, &e);
    CHECK(rc == 0 && strcmp(got, "lily ' s \" big \" dog \\ x\n\ncafe\n") == 0);
    free(got);
    got = lines_of("Lily's \"big\" dog\\x\n\nCafé", &json, &rc, &e);
    CHECK(rc == 0 && strcmp(got, "{\"command\":\"tokenize\",\"words\":[\"lily\",\"'\",\"s\",\"\\\"\",\"big\",\"\\\"\","
                                 "\"dog\",\"\\\\\",\"x\"]}\n{\"command\":\"tokenize\",\"words\":[]}\n"
                                 "{\"command\":\"tokenize\",\"words\":[\"cafe\"]}\n") == 0);
    free(got);
}

static void test_bad_line(void) {
    Error e = {0};
    int rc;
    TokenizeFormat text = {.words = true}, lossy = {.words = true, .lossy = true};
    char *got = lines_of("good\nba\xff"
                         "d\nnever",
                         &text, &rc, &e);
    CHECK(rc != 0 && strcmp(got, "good\n") == 0 && strstr(e.message, "'t.txt' line 2") != NULL);
    free(got);
    Error e2 = {0};
    got = lines_of("good\nba\xff"
                   "d\n",
                   &lossy, &rc, &e2);
    CHECK(rc == 0 && strcmp(got, "good\nbad\n") == 0);
    free(got);
}

static void test_format_exact(void) {
    char buf[40];
    slm_format_exact(0.1, buf, sizeof buf);
    CHECK(strcmp(buf, "0.1") == 0);
    slm_format_exact(1.0 / 3, buf, sizeof buf);
    CHECK(strtod(buf, NULL) == 1.0 / 3 && strlen(buf) == 18);
}

int main(void) {
    test_words();
    test_bad_line();
    test_format_exact();
    return check_report();
}
