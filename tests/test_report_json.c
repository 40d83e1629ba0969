/* The numbers of slm_report_json (src/report/report.c): every float the network
 * computes is written with 9 significant digits and reads back as the same
 * float, over the whole float range; whole numbers and other doubles are
 * written as cJSON writes them (read back, within a rounding); the tree still
 * holds each value for readers, and non-finite numbers are null. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/report.h"
#include "storylm/rng.h"

/* cJSON's own text of x. */
static void cjson_text(double x, char *buf, size_t size) {
    cJSON *n = cJSON_CreateNumber(x);
    char *s = cJSON_PrintUnformatted(n);
    snprintf(buf, size, "%s", s ? s : "?");
    free(s);
    cJSON_Delete(n);
}

/* Random bit patterns: every exponent, both signs, subnormals. */
static void floats_read_back_the_same(void) {
    Rng r;
    slm_rng_seed(&r, 7);
    int wrong = 0, not_g = 0, n = 200000;
    char buf[40], g[40];
    for (int i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)slm_rng_next(&r);
        float f;
        memcpy(&f, &bits, sizeof f);
        if (!isfinite(f)) continue;
        int len = slm_report_format_number(f, buf, sizeof buf);
        if (len <= 0 || (size_t)len != strlen(buf) || strtof(buf, NULL) != f) {
            if (wrong++ < 5) fprintf(stderr, "float %.9g (bits %08x) written as '%s'\n", f, bits, buf);
        }
        snprintf(g, sizeof g, "%.9g", f);
        if (f != truncf(f) && strcmp(g, buf) != 0 && not_g++ < 5)
            fprintf(stderr, "float %.9g written as '%s' (%%.9g: '%s')\n", f, buf, g);
    }
    CHECK(wrong == 0);
    /* the same text as %.9g (a double product rounding the other way near a tie would be the rare exception) */
    CHECK(not_g < n / 10000);
}

static void known_texts(void) {
    struct {
        double x;
        const char *want;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {3, "3"},
        {-12, "-12"},
        {123456789012345.0, "123456789012345"},
        {0.5f, "0.5"},
        {0.1f, "0.100000001"},
        {-0.25f, "-0.25"},
        {1e-5f, "9.99999975e-06"},
        {0.0001f, "9.99999975e-05"},
        {0.001f, "0.00100000005"},
        {123456.789f, "123456.789"},
        {3.0e38f, "3.00000001e+38"},
        {1.5e9f, "1500000000"},
        {2.5e15f, "2.50000007e+15"},
        {16777216.5f, "16777216"},
        {0.1, "0.1"},
        {1.0 / 3, "0.33333333333333331"},
        {2.5, "2.5"},
    };
    char buf[40];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        slm_report_format_number(cases[i].x, buf, sizeof buf);
        if (strcmp(buf, cases[i].want) != 0)
            fprintf(stderr, "%.17g: '%s', want '%s'\n", cases[i].x, buf, cases[i].want);
        CHECK(strcmp(buf, cases[i].want) == 0);
    }
}

/* Whole numbers and doubles that are not floats: the same text as cJSON. */
static void doubles_as_cjson_writes_them(void) {
    Rng r;
    slm_rng_seed(&r, 11);
    char mine[40], theirs[40];
    int differ = 0;
    for (int i = 0; i < 20000; i++) {
        double x = (slm_rng_uniform(&r) - 0.5) * pow(10, (int)(slm_rng_uniform(&r) * 40) - 20);
        if (i % 2) x = floor(x * 1000);
        if ((double)(float)x == x && x != trunc(x)) continue;
        slm_report_format_number(x, mine, sizeof mine);
        cjson_text(x, theirs, sizeof theirs);
        if (strcmp(mine, theirs) != 0 && differ++ < 5) fprintf(stderr, "%.17g: '%s', cJSON '%s'\n", x, mine, theirs);
        double back = strtod(mine, NULL);
        CHECK(fabs(back - x) <= fabs(x) * 2.3e-16); /* cJSON's 15 digits may be a rounding off */
    }
    CHECK(differ == 0);
}

/* The tree: numbers print as written above and keep their value. */
static void tree_keeps_values(void) {
    Report rep;
    slm_report_init(&rep, "demo");
    slm_report_number(&rep, "loss", "loss", 0.1f, 3);
    slm_report_number(&rep, "nan", "nan", NAN, 3);
    float v[3] = {1.5f, -0.3f, INFINITY};
    ReportTable *t = slm_report_table(&rep, "v", "v");
    slm_table_column(t, "x", "x", CELL_VECTOR, 2);
    slm_table_row(t);
    slm_cell_vector(t, v, 3);
    Error e;
    CHECK(slm_report_failed(&rep, &e) == 0);
    cJSON *j = slm_report_json(&rep);
    CHECK(cJSON_GetObjectItem(j, "loss")->valuedouble == (double)0.1f);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "nan")));
    char *s = cJSON_PrintUnformatted(j);
    const char *want =
        "{\"command\":\"demo\",\"loss\":0.100000001,\"nan\":null,\"v\":[{\"x\":[1.5,-0.300000012,null]}]}";
    if (!s || strcmp(s, want) != 0) fprintf(stderr, "report_json: %s\nwant:        %s\n", s ? s : "(null)", want);
    CHECK(s && strcmp(s, want) == 0);
    cJSON *back = s ? cJSON_Parse(s) : NULL;
    CHECK(back && (float)cJSON_GetObjectItem(back, "loss")->valuedouble == 0.1f);
    cJSON_Delete(back);
    free(s);
    cJSON_Delete(j);
    slm_report_free(&rep);
}

int main(void) {
    floats_read_back_the_same();
    known_texts();
    doubles_as_cjson_writes_them();
    tree_keeps_values();
    return check_report();
}
