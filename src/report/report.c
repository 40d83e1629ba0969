/* Reports as aligned text or JSON: see include/storylm/report.h. */
#include "storylm/report.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- building ---------------------------------------------------------------- */

static char *dup_or_fail(const char *s, int *failed) {
    char *d = strdup(s ? s : "");
    if (!d) *failed = 1;
    return d;
}

/* Makes room for one more element of size bytes in *buf (count *n, capacity *cap). */
static int grow(void **buf, int n, int *cap, size_t size, int *failed) {
    if (n < *cap) return 0;
    int want = *cap ? *cap * 2 : 8;
    void *p = realloc(*buf, (size_t)want * size);
    if (!p) {
        *failed = 1;
        return -1;
    }
    *buf = p;
    *cap = want;
    return 0;
}

void slm_report_init(Report *r, const char *name) {
    *r = (Report){0};
    r->name = dup_or_fail(name, &r->failed);
}

static void cell_free(ReportCell *c) {
    free(c->text);
    free(c->vector);
}

static void table_free(ReportTable *t) {
    if (!t) return;
    for (int i = 0; i < t->n_cols; i++) {
        free(t->cols[i].key);
        free(t->cols[i].label);
    }
    for (int i = 0; i < t->n_rows * t->n_cols; i++) cell_free(&t->cells[i]);
    free(t->cols);
    free(t->cells);
    free(t->key);
    free(t->title);
    free(t);
}

void slm_report_free(Report *r) {
    for (int i = 0; i < r->n_items; i++) {
        ReportItem *it = &r->items[i];
        free(it->key);
        free(it->label);
        free(it->note);
        cell_free(&it->value);
        table_free(it->table);
        cJSON_Delete(it->json);
    }
    free(r->items);
    free(r->name);
    *r = (Report){0};
}

int slm_report_failed(const Report *r, Error *e) {
    if (!r->failed) return 0;
    return FAIL(e, "free some memory and try again", "out of memory while building the %s report", r->name);
}

static ReportItem *new_item(Report *r, ReportItemKind kind) {
    if (grow((void **)&r->items, r->n_items, &r->cap_items, sizeof(ReportItem), &r->failed)) return NULL;
    ReportItem *it = &r->items[r->n_items++];
    *it = (ReportItem){.kind = kind};
    return it;
}

static ReportItem *new_value(Report *r, const char *key, const char *label, CellKind kind, int decimals) {
    ReportItem *it = new_item(r, ITEM_VALUE);
    if (!it) return NULL;
    it->key = dup_or_fail(key, &r->failed);
    it->label = label ? dup_or_fail(label, &r->failed) : NULL; /* NULL: in JSON only */
    it->value_kind = kind;
    it->decimals = decimals;
    it->value.set = 1;
    return it;
}

void slm_report_text(Report *r, const char *key, const char *label, const char *text) {
    ReportItem *it = new_value(r, key, label, CELL_TEXT, 0);
    if (it) it->value.text = dup_or_fail(text, &r->failed);
}

void slm_report_int(Report *r, const char *key, const char *label, long long x) {
    ReportItem *it = new_value(r, key, label, CELL_INT, 0);
    if (it) it->value.number = (double)x;
}

void slm_report_number(Report *r, const char *key, const char *label, double x, int decimals) {
    ReportItem *it = new_value(r, key, label, CELL_NUMBER, decimals);
    if (it) it->value.number = x;
}

void slm_report_percent(Report *r, const char *key, const char *label, double fraction, int decimals) {
    ReportItem *it = new_value(r, key, label, CELL_PERCENT, decimals);
    if (it) it->value.number = fraction;
}

static float *copy_floats(const float *x, int n, int *failed) {
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!v)
        *failed = 1;
    else if (n > 0)
        memcpy(v, x, (size_t)n * sizeof(float));
    return v;
}

void slm_report_ints(Report *r, const char *key, const char *label, const int *x, int n) {
    ReportItem *it = new_value(r, key, label, CELL_VECTOR, 0);
    float *v = it ? malloc((size_t)(n > 0 ? n : 1) * sizeof(float)) : NULL;
    if (it && !v) r->failed = 1;
    for (int i = 0; v && i < n; i++) v[i] = (float)x[i]; /* whole numbers below 2^24: exact */
    if (it) it->value.vector = v, it->value.n = v ? n : 0;
}

void slm_report_note(Report *r, const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ReportItem *it = new_item(r, ITEM_NOTE);
    if (it) it->note = dup_or_fail(buf, &r->failed);
}

void slm_report_json_value(Report *r, const char *key, cJSON *value) {
    ReportItem *it = value ? new_item(r, ITEM_JSON) : NULL;
    if (!it) {
        cJSON_Delete(value);
        r->failed = 1;
        return;
    }
    it->key = dup_or_fail(key, &r->failed);
    it->json = value;
}

void slm_report_raw_text(Report *r, const char *text) {
    ReportItem *it = new_item(r, ITEM_TEXT);
    if (it) it->note = dup_or_fail(text, &r->failed);
}

void slm_report_heading(Report *r, const char *heading) {
    ReportItem *it = new_item(r, ITEM_HEADING);
    if (it) it->note = dup_or_fail(heading, &r->failed);
}

ReportTable *slm_report_table(Report *r, const char *key, const char *title) {
    ReportTable *t = calloc(1, sizeof *t);
    ReportItem *it = t ? new_item(r, ITEM_TABLE) : NULL;
    if (!it) {
        free(t);
        r->failed = 1;
        return NULL;
    }
    it->table = t;
    t->failed = &r->failed;
    t->group_column = -1;
    t->key = dup_or_fail(key, &r->failed);
    t->title = dup_or_fail(title, &r->failed);
    return t;
}

void slm_table_column(ReportTable *t, const char *key, const char *label, CellKind kind, int decimals) {
    if (!t || t->n_rows > 0) return; /* columns come before rows */
    if (grow((void **)&t->cols, t->n_cols, &t->cap_cols, sizeof(ReportColumn), t->failed)) return;
    t->cols[t->n_cols++] = (ReportColumn){dup_or_fail(key, t->failed), dup_or_fail(label, t->failed), kind, decimals};
}

void slm_table_row(ReportTable *t) {
    if (!t || t->n_cols == 0) return;
    if (t->n_rows >= t->cap_rows) {
        int want = t->cap_rows ? t->cap_rows * 2 : 16;
        ReportCell *p = realloc(t->cells, (size_t)want * t->n_cols * sizeof(ReportCell));
        if (!p) {
            *t->failed = 1;
            return;
        }
        t->cells = p;
        t->cap_rows = want;
    }
    memset(t->cells + (size_t)t->n_rows * t->n_cols, 0, (size_t)t->n_cols * sizeof(ReportCell));
    t->n_rows++;
    t->next_col = 0;
}

/* The cell the next cell_* call fills, or NULL past the row's end. */
static ReportCell *next_cell(ReportTable *t) {
    if (!t || t->n_rows == 0 || t->next_col >= t->n_cols) return NULL;
    return &t->cells[(size_t)(t->n_rows - 1) * t->n_cols + t->next_col++];
}

void slm_cell_text(ReportTable *t, const char *text) {
    ReportCell *c = next_cell(t);
    if (!c) return;
    c->text = dup_or_fail(text, t->failed);
    c->set = 1;
}

void slm_cell_int(ReportTable *t, long long x) { slm_cell_number(t, (double)x); }

void slm_cell_number(ReportTable *t, double x) {
    ReportCell *c = next_cell(t);
    if (!c) return;
    c->number = x;
    c->set = 1;
}

void slm_cell_vector(ReportTable *t, const float *x, int n) {
    ReportCell *c = next_cell(t);
    if (!c) return;
    c->vector = copy_floats(x, n, t->failed);
    c->n = c->vector ? n : 0;
    c->set = 1;
}

void slm_cell_skip(ReportTable *t) { (void)next_cell(t); }

double slm_table_number(const ReportTable *t, int row, int col) {
    if (!t || row < 0 || row >= t->n_rows || col < 0 || col >= t->n_cols) return NAN;
    const ReportCell *c = &t->cells[(size_t)row * t->n_cols + col];
    CellKind k = t->cols[col].kind;
    return c->set && k != CELL_TEXT && k != CELL_FILE && k != CELL_VECTOR ? c->number : NAN;
}

/* ---- text -------------------------------------------------------------------- */

/* Numbers are right-aligned, text and vectors left-aligned. */
static int is_numeric(CellKind k) { return k == CELL_INT || k == CELL_NUMBER || k == CELL_PERCENT || k == CELL_POINTS; }

/* A cell as text into buf (vectors may be cut short at size). */
static void format_cell(const ReportCell *c, CellKind kind, int decimals, char *buf, size_t size) {
    if (!c->set || (is_numeric(kind) && !isfinite(c->number))) {
        snprintf(buf, size, "-");
        return;
    }
    switch (kind) {
        case CELL_TEXT: snprintf(buf, size, "%s", c->text ? c->text : ""); break;
        case CELL_FILE: { /* the file's name: its folder, the same on every row, would hide what differs */
            const char *path = c->text ? c->text : "", *slash = strrchr(path, '/');
            snprintf(buf, size, "%s", slash && slash[1] ? slash + 1 : path);
            break;
        }
        case CELL_INT: snprintf(buf, size, "%.0f", c->number); break;
        case CELL_NUMBER: snprintf(buf, size, "%.*f", decimals, c->number); break;
        case CELL_PERCENT: snprintf(buf, size, "%.*f%%", decimals, 100 * c->number); break;
        case CELL_POINTS: snprintf(buf, size, "%.*f", decimals, 100 * c->number); break;
        case CELL_VECTOR: {
            size_t used = 0;
            buf[0] = '\0';
            for (int i = 0; i < c->n && used + 1 < size; i++)
                used += (size_t)snprintf(buf + used, size - used, "%s%.*f", i ? " " : "", decimals, c->vector[i]);
            break;
        }
    }
}

/* Display width of UTF-8 text: code points, not bytes. */
static int text_width(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void print_padded(FILE *out, const char *s, int width, int right) {
    int pad = width - text_width(s);
    if (right)
        for (int i = 0; i < pad; i++) fputc(' ', out);
    fputs(s, out);
    if (!right)
        for (int i = 0; i < pad; i++) fputc(' ', out);
}

#define CELL_BUF 4096

static void table_widths(const ReportTable *t, int *width) {
    char buf[CELL_BUF];
    for (int c = 0; c < t->n_cols; c++) {
        width[c] = text_width(t->cols[c].label);
        for (int r = 0; r < t->n_rows; r++) {
            format_cell(&t->cells[(size_t)r * t->n_cols + c], t->cols[c].kind, t->cols[c].decimals, buf, sizeof buf);
            int w = text_width(buf);
            width[c] = w > width[c] ? w : width[c];
        }
    }
}

static int same_group(const ReportTable *t, int r) {
    if (t->group_column < 0 || r == 0) return 1;
    const ReportCell *a = &t->cells[(size_t)(r - 1) * t->n_cols + t->group_column];
    const ReportCell *b = &t->cells[(size_t)r * t->n_cols + t->group_column];
    if (a->text || b->text) return a->text && b->text && strcmp(a->text, b->text) == 0;
    return a->number == b->number;
}

static void print_table(const ReportTable *t, FILE *out) {
    int *width = calloc((size_t)t->n_cols + 1, sizeof(int));
    if (!width) return;
    table_widths(t, width);
    char buf[CELL_BUF];
    if (t->title && t->title[0]) fprintf(out, "\n%s\n", t->title);
    for (int c = 0; c < t->n_cols; c++) {
        if (c) fputs("  ", out);
        int text = !is_numeric(t->cols[c].kind);
        print_padded(out, t->cols[c].label, text && c + 1 == t->n_cols ? 0 : width[c], !text);
    }
    fputc('\n', out);
    for (int r = 0; r < t->n_rows; r++) {
        if (!same_group(t, r)) fputc('\n', out);
        for (int c = 0; c < t->n_cols; c++) {
            const ReportColumn *col = &t->cols[c];
            format_cell(&t->cells[(size_t)r * t->n_cols + c], col->kind, col->decimals, buf, sizeof buf);
            if (c) fputs("  ", out);
            /* the last column is not padded on the right: no trailing spaces */
            int numeric = is_numeric(col->kind);
            print_padded(out, buf, c + 1 < t->n_cols || numeric ? width[c] : 0, numeric);
        }
        fputc('\n', out);
    }
    free(width);
}

void slm_report_print(const Report *r, FILE *out) {
    int label_width = 0;
    for (int i = 0; i < r->n_items; i++)
        if (r->items[i].kind == ITEM_VALUE && r->items[i].label) {
            int w = text_width(r->items[i].label);
            label_width = w > label_width ? w : label_width;
        }
    char buf[CELL_BUF];
    for (int i = 0; i < r->n_items; i++) {
        const ReportItem *it = &r->items[i];
        if (it->kind == ITEM_VALUE && !it->label) {
            continue; /* JSON only */
        } else if (it->kind == ITEM_VALUE) {
            format_cell(&it->value, it->value_kind, it->decimals, buf, sizeof buf);
            print_padded(out, it->label, label_width, 0);
            fprintf(out, "  %s\n", buf);
        } else if (it->kind == ITEM_NOTE) {
            fprintf(out, "%s\n", it->note);
        } else if (it->kind == ITEM_HEADING) {
            fprintf(out, "\n%s\n", it->note);
        } else if (it->kind == ITEM_TEXT) {
            fputs(it->note, out);
        } else if (it->kind == ITEM_JSON) {
            continue; /* JSON only */
        } else if (it->table && !it->table->json_only) {
            print_table(it->table, out);
        }
    }
}

/* ---- JSON numbers ------------------------------------------------------------ */

/* Digits of u (u < 10^19) at p, most significant first; returns their count. */
static int put_digits(char *p, unsigned long long u) {
    char tmp[20];
    int n = 0;
    do tmp[n++] = (char)('0' + u % 10);
    while ((u /= 10) > 0);
    for (int i = 0; i < n; i++) p[i] = tmp[n - 1 - i];
    return n;
}

/* a * 10^k for the k a float's 9 digits need (-31 < k < 54); 10^0..10^22 are
 * exact doubles, so at most two roundings, far below the 9th digit. */
static double times_pow10(double a, int k) {
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    for (; k > 22; k -= 22) a *= p10[22];
    for (; k < -22; k += 22) a /= p10[22];
    return k >= 0 ? a * p10[k] : a / p10[-k];
}

/* A float (a > 0) to 9 significant digits, as %.9g writes it with its
 * trailing zeros dropped: 9 digits always read back as the same float (its
 * neighbours are at least 6e-8 of it away, the 9th digit 1e-8 at most), so
 * no printing to 17 digits and reading back to check, which cost a third of
 * a click's answer. Returns the length written at p. */
static int put_float(char *p, double a) {
    int e = (int)floor(log10(a));
    /* rint: ties to even, as printf rounds a float that ends in 5 exactly */
    unsigned long long d = (unsigned long long)rint(times_pow10(a, 8 - e));
    if (d < 100000000ULL) d = (unsigned long long)rint(times_pow10(a, 8 - --e));   /* log10 rounded up */
    if (d >= 1000000000ULL) d = (unsigned long long)rint(times_pow10(a, 8 - ++e)); /* or down, or 9.999999995 */
    if (d >= 1000000000ULL) d /= 10;                                               /* 10^9 exactly: 1 and zeros */
    char dig[20];
    int n = put_digits(dig, d);
    while (n > 1 && dig[n - 1] == '0') n--;
    char *q = p;
    if (e < -4 || e >= 9) { /* d.ddde-05, as %g */
        *q++ = dig[0];
        if (n > 1) *q++ = '.', memcpy(q, dig + 1, (size_t)n - 1), q += n - 1;
        *q++ = 'e';
        *q++ = e < 0 ? '-' : '+';
        if (abs(e) < 10) *q++ = '0';
        q += put_digits(q, (unsigned long long)abs(e));
    } else if (e < 0) { /* 0.000ddd */
        *q++ = '0', *q++ = '.';
        for (int i = -1; i > e; i--) *q++ = '0';
        memcpy(q, dig, (size_t)n), q += n;
    } else { /* ddd.ddd */
        for (int i = 0; i <= e; i++) *q++ = i < n ? dig[i] : '0';
        if (n > e + 1) *q++ = '.', memcpy(q, dig + e + 1, (size_t)(n - e - 1)), q += n - e - 1;
    }
    return (int)(q - p);
}

int slm_report_format_number(double x, char *buf, size_t size) {
    char tmp[40], *p = tmp;
    if (!isfinite(x)) return snprintf(buf, size, "null");
    if (x == trunc(x) && fabs(x) < 1e15) { /* whole numbers as digits, as cJSON writes them (-0 as 0) */
        if (x < 0) *p++ = '-';
        p += put_digits(p, (unsigned long long)fabs(x));
    } else if ((double)(float)x == x) { /* every float the network computes */
        if (x < 0) *p++ = '-';
        p += put_float(p, fabs(x));
    } else { /* a double: 15 digits when they read back within a rounding of it, else 17, as cJSON writes it */
        snprintf(tmp, sizeof tmp, "%1.15g", x);
        double back = strtod(tmp, NULL);
        if (fabs(back - x) > fmax(fabs(back), fabs(x)) * DBL_EPSILON) snprintf(tmp, sizeof tmp, "%1.17g", x);
        p = tmp + strlen(tmp);
    }
    int n = (int)(p - tmp);
    if (size > 0) { /* as snprintf: cut to size, terminated */
        size_t k = (size_t)n < size ? (size_t)n : size - 1;
        memcpy(buf, tmp, k);
        buf[k] = '\0';
    }
    return n;
}

/* A number printed by slm_report_format_number (a raw item, printed as is), its
 * value kept in valuedouble for readers of the tree; null when not finite. */
static cJSON *number_json(double x) {
    if (!isfinite(x)) return cJSON_CreateNull();
    char buf[40];
    slm_report_format_number(x, buf, sizeof buf);
    cJSON *n = cJSON_CreateRaw(buf);
    if (n) {
        n->valuedouble = x;
        n->valueint = x >= INT_MAX ? INT_MAX : x <= INT_MIN ? INT_MIN : (int)x;
    }
    return n;
}

/* ---- JSON -------------------------------------------------------------------- */

static cJSON *cell_json(const ReportCell *c, CellKind kind) {
    if (!c->set) return cJSON_CreateNull();
    if (kind == CELL_TEXT || kind == CELL_FILE) return cJSON_CreateString(c->text ? c->text : "");
    if (kind == CELL_VECTOR) {
        cJSON *a = cJSON_CreateArray();
        for (int i = 0; a && i < c->n; i++) cJSON_AddItemToArray(a, number_json(c->vector[i]));
        return a;
    }
    return number_json(c->number);
}

static cJSON *table_json(const ReportTable *t) {
    cJSON *rows = cJSON_CreateArray();
    for (int r = 0; rows && r < t->n_rows; r++) {
        cJSON *row = cJSON_CreateObject();
        if (!row) break;
        for (int c = 0; c < t->n_cols; c++)
            cJSON_AddItemToObject(row, t->cols[c].key,
                                  cell_json(&t->cells[(size_t)r * t->n_cols + c], t->cols[c].kind));
        cJSON_AddItemToArray(rows, row);
    }
    return rows;
}

/* key "model.file" puts the value into the object "model" (made when first
 * needed), so that every verb gives a model, its stories and its ablation
 * the same nested keys (docs/json.md); a key without a dot goes in as it is. */
static void add_value(cJSON *j, const char *key, cJSON *value) {
    const char *dot = strchr(key, '.');
    if (!dot) {
        cJSON_AddItemToObject(j, key, value);
        return;
    }
    char outer[64];
    snprintf(outer, sizeof outer, "%.*s", (int)(dot - key), key);
    cJSON *o = cJSON_GetObjectItemCaseSensitive(j, outer);
    if (!cJSON_IsObject(o)) o = cJSON_AddObjectToObject(j, outer);
    if (o)
        cJSON_AddItemToObject(o, dot + 1, value);
    else
        cJSON_Delete(value);
}

cJSON *slm_report_json(const Report *r) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "command", r->name ? r->name : "");
    cJSON *notes = NULL;
    for (int i = 0; i < r->n_items; i++) {
        const ReportItem *it = &r->items[i];
        if (it->kind == ITEM_VALUE)
            add_value(j, it->key, cell_json(&it->value, it->value_kind));
        else if (it->kind == ITEM_TABLE && it->table)
            cJSON_AddItemToObject(j, it->table->key, table_json(it->table));
        else if (it->kind == ITEM_JSON)
            add_value(j, it->key, cJSON_Duplicate(it->json, 1));
        else if (it->kind == ITEM_NOTE) {
            if (!notes) notes = cJSON_AddArrayToObject(j, "notes");
            if (notes) cJSON_AddItemToArray(notes, cJSON_CreateString(it->note));
        }
    }
    return j;
}

int slm_report_json_write(cJSON *j, FILE *out, bool one_line, Error *e) {
    char *text = j ? (one_line ? cJSON_PrintUnformatted(j) : cJSON_Print(j)) : NULL;
    cJSON_Delete(j);
    if (!text) return FAIL(e, "free some memory and try again", "out of memory printing JSON");
    fprintf(out, "%s\n", text);
    free(text);
    return 0;
}
