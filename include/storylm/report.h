/* Reports: what every probe prints, in one place. A report is an ordered
 * list of named values, notes and tables of named, typed columns; it prints
 * as aligned plain text or becomes one cJSON object with the same numbers.
 *
 *   Report r; slm_report_init(&r, "ablate");
 *   slm_report_text(&r, "model", "Model", path);
 *   slm_report_number(&r, "loss", "Loss", 2.13, 4);
 *   ReportTable *t = slm_report_table(&r, "heads", "One head switched off");
 *   slm_table_column(t, "head", "head", CELL_INT, 0);
 *   slm_table_column(t, "loss", "loss", CELL_NUMBER, 4);
 *   slm_table_row(t); slm_cell_int(t, 3); slm_cell_number(t, 2.31);
 *   if (slm_report_failed(&r, e)) ...; slm_report_print(&r, stdout); cJSON *j = slm_report_json(&r);
 *
 * Building never fails loudly: an allocation failure is remembered and
 * slm_report_failed() reports it once, so builders need no check per cell.
 * In JSON, numbers that are not finite become null, percentages stay
 * fractions (0.25, printed "25.0%"), vectors become arrays. */
#ifndef STORYLM_REPORT_H
#define STORYLM_REPORT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "storylm/error.h"

typedef enum {
    CELL_TEXT,    /* a string */
    CELL_INT,     /* a whole number */
    CELL_NUMBER,  /* printed with the column's decimals */
    CELL_PERCENT, /* a fraction, printed as a percentage with the column's decimals */
    CELL_VECTOR,  /* several numbers, printed with the column's decimals, separated by spaces */
    CELL_POINTS,  /* a difference of two fractions: in the text percentage points (100x, no %), in JSON the fraction */
    CELL_FILE     /* a file's path, in table columns: in JSON whole, in the text only its name (no
                   * folder repeated on every row) */
} CellKind;

typedef struct ReportColumn {
    char *key;   /* JSON key: "d_loss" */
    char *label; /* text header: "change" */
    CellKind kind;
    int decimals;
} ReportColumn;

typedef struct ReportCell {
    double number;
    char *text;    /* CELL_TEXT */
    float *vector; /* CELL_VECTOR */
    int n;         /* vector length */
    int set;
} ReportCell;

typedef struct ReportTable {
    char *key, *title;
    ReportColumn *cols;
    int n_cols, cap_cols;
    ReportCell *cells; /* (n_rows, n_cols) */
    int n_rows, cap_rows;
    int next_col;     /* the column the next cell_* call fills */
    int group_column; /* text only: a blank line where this column's value changes; -1: none */
    int json_only;    /* 1: left out of the text (its numbers are shown another way there) */
    int *failed;      /* the report's flag */
} ReportTable;

typedef enum { ITEM_VALUE, ITEM_NOTE, ITEM_HEADING, ITEM_TABLE, ITEM_JSON, ITEM_TEXT } ReportItemKind;

typedef struct ReportItem {
    ReportItemKind kind;
    char *key, *label;   /* ITEM_VALUE */
    ReportCell value;    /* ITEM_VALUE */
    CellKind value_kind; /* ITEM_VALUE */
    int decimals;        /* ITEM_VALUE */
    char *note;          /* ITEM_NOTE, ITEM_HEADING */
    ReportTable *table;  /* ITEM_TABLE */
    cJSON *json;         /* ITEM_JSON */
} ReportItem;

typedef struct Report {
    char *name; /* the command: "ablate" */
    ReportItem *items;
    int n_items, cap_items;
    int failed;
} Report;

void slm_report_init(Report *r, const char *name);
void slm_report_free(Report *r);
/* -1 with e filled when any allocation while building failed. */
int slm_report_failed(const Report *r, Error *e);

/* Named values (shown as "label   value" lines; keys of the JSON object). A
 * key with a dot, "model.file", goes into the object "model" of the JSON
 * (docs/json.md); a NULL label leaves the value out of the text. */
void slm_report_text(Report *r, const char *key, const char *label, const char *text);
void slm_report_int(Report *r, const char *key, const char *label, long long x);
void slm_report_number(Report *r, const char *key, const char *label, double x, int decimals);
void slm_report_percent(Report *r, const char *key, const char *label, double fraction, int decimals);
/* Whole numbers x (n, below 2^24), a JSON array: the heads switched off. */
void slm_report_ints(Report *r, const char *key, const char *label, const int *x, int n);
/* A heading over the values that follow, as a table has its title: in the
 * text only (after a blank line), JSON has its keys. */
void slm_report_heading(Report *r, const char *heading);
/* A line of explanation (printf-style); in JSON, the array "notes". */
void slm_report_note(Report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For a verb whose JSON and text were laid out before reports (info,
 * stories), kept byte for byte: value (owned by the report from here on)
 * under key in the JSON as it is, left out of the text; and text printed as
 * it is, left out of the JSON. */
void slm_report_json_value(Report *r, const char *key, cJSON *value);
void slm_report_raw_text(Report *r, const char *text);

/* A new table (owned by the report), or NULL when out of memory (the
 * table_* and cell_* functions accept NULL and do nothing). */
ReportTable *slm_report_table(Report *r, const char *key, const char *title);
void slm_table_column(ReportTable *t, const char *key, const char *label, CellKind kind, int decimals);
/* Starts a row; the cell_* calls then fill its columns left to right. */
void slm_table_row(ReportTable *t);
void slm_cell_text(ReportTable *t, const char *text);
void slm_cell_int(ReportTable *t, long long x);
void slm_cell_number(ReportTable *t, double x); /* CELL_NUMBER or CELL_PERCENT columns */
void slm_cell_vector(ReportTable *t, const float *x, int n);
/* Leaves the cell empty ("-" in text, null in JSON). */
void slm_cell_skip(ReportTable *t);
/* The number in row, col (NAN when empty or not a number). */
double slm_table_number(const ReportTable *t, int row, int col);
/* The text in row, col (NULL when empty or not text). */
const char *slm_table_text(const ReportTable *t, int row, int col);

/* A built report read back by key, for drawing its picture from it
 * (report_read.c): the table (NULL when none), a column's index (-1), a
 * value's number (NAN when none or not a number) or text (NULL). */
const ReportTable *slm_report_find_table(const Report *r, const char *key);
int slm_table_find_column(const ReportTable *t, const char *key);
double slm_report_find_number(const Report *r, const char *key);
const char *slm_report_find_text(const Report *r, const char *key);

/* Plain text: values as aligned "label  value" lines, notes, and each table
 * with its title, a header and columns padded to their widest cell
 * (numbers right-aligned, text left-aligned). */
void slm_report_print(const Report *r, FILE *out);
/* {"command": name, key: value..., "notes": [...], table key: [{col: cell, ...}, ...]}
 * (caller cJSON_Deletes); NULL when out of memory. */
cJSON *slm_report_json(const Report *r);
/* x as slm_report_json writes it: whole numbers as digits, floats to 9
 * significant digits (%.9g without trailing zeros: read back as a float they
 * are the same float), other doubles to 15 or 17 (read back, the same
 * double), null when not finite. Numbers in slm_report_json's tree are raw
 * items of this text with the value also in valuedouble. Returns the
 * length (as snprintf). */
int slm_report_format_number(double x, char *buf, size_t size);
/* Writes j to out as JSON and deletes it: indented (a verb's answer) or on
 * one line (JSON lines: one answer of several, a stream); a newline after.
 * The one place the CLI prints JSON. -1 with e set when out of memory. */
int slm_report_json_write(cJSON *j, FILE *out, bool one_line, Error *e);

#endif
