/* Reading a built report back by key: what a drawing takes its numbers
 * from, so that a view's picture needs nothing but its report (report.h). */
#include <math.h>
#include <string.h>

#include "storylm/report.h"

const ReportTable *slm_report_find_table(const Report *r, const char *key) {
    for (int i = 0; i < r->n_items; i++) {
        const ReportTable *t = r->items[i].table;
        if (r->items[i].kind == ITEM_TABLE && t && t->key && strcmp(t->key, key) == 0) return t;
    }
    return NULL;
}

static const ReportItem *find_value(const Report *r, const char *key) {
    for (int i = 0; i < r->n_items; i++)
        if (r->items[i].kind == ITEM_VALUE && r->items[i].key && strcmp(r->items[i].key, key) == 0) return &r->items[i];
    return NULL;
}

double slm_report_find_number(const Report *r, const char *key) {
    const ReportItem *it = find_value(r, key);
    CellKind k = it ? it->value_kind : CELL_TEXT;
    return it && it->value.set && k != CELL_TEXT && k != CELL_FILE && k != CELL_VECTOR ? it->value.number : NAN;
}

const char *slm_report_find_text(const Report *r, const char *key) {
    const ReportItem *it = find_value(r, key);
    return it && it->value.set ? it->value.text : NULL;
}

int slm_table_find_column(const ReportTable *t, const char *key) {
    for (int c = 0; t && c < t->n_cols; c++)
        if (t->cols[c].key && strcmp(t->cols[c].key, key) == 0) return c;
    return -1;
}

const char *slm_table_text(const ReportTable *t, int row, int col) {
    if (!t || row < 0 || row >= t->n_rows || col < 0 || col >= t->n_cols) return NULL;
    const ReportCell *c = &t->cells[(size_t)row * t->n_cols + col];
    return c->set ? c->text : NULL;
}
