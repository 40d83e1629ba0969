/* storylm plot: draws the columns of a tab-separated table as line charts
 * (SVG), e.g. the train and test loss curves kept from training logs. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "common.h"
#include "storylm/outputs.h"
#include "storylm/plot.h"
#include "storylm/text.h"

static int run(int argc, char **argv);
const Command command_plot = {
    "plot", "draw a table's columns as line charts (SVG)", "storylm plot TABLE.tsv -o FILE.svg [options]",
    "Reads a tab-separated table with a header line: the first column is x (e.g. the\n"
    "step), every other column a curve (e.g. train and test loss). Empty cells, '-' and\n"
    "'nan' are gaps (so are values beyond +-1e100, and text, with a warning): each curve joins the points it has. "
    "Draws the curves on one panel\n"
    "with a legend, using storylm's own SVG writer. Columns named alike but for a last word\n"
    "'train' or 'test' (e.g. 'attention train', 'attention test') are one model's: they share\n"
    "a colour, the test curve dashed.",
    run};

/* What the reader left out of the table: said on stderr. */
static void warn_gaps(const PlotTable *t, const char *path) {
    if (t->n_text)
        fprintf(stderr,
                "storylm plot: warning: %d cells of '%s' are not numbers (the first at row %d, column %d), left out, "
                "as gaps\n",
                t->n_text, path, t->first_text_row, t->first_text_col);
    if (t->n_huge)
        fprintf(stderr, "storylm plot: %d values of '%s' beyond +-%g (or infinite) left out, as gaps\n", t->n_huge,
                path, PLOT_MAX_ABS);
}

typedef struct PlotArgs {
    const char *table, *out, *title, *y_label;
    double y_max;
    bool force;
} PlotArgs;

static const Param plot_params[] = {
    {.name = "out",
     .short_name = 'o',
     .type = PARAM_STRING,
     .offset = offsetof(PlotArgs, out),
     .meta = "FILE",
     .help = "the SVG file to write (required); a model, stories or other file already there is kept"},
    {.name = "force", .type = PARAM_BOOL, .offset = offsetof(PlotArgs, force), .help = OUTPUTS_FORCE_HELP},
    {.name = "title",
     .type = PARAM_STRING,
     .offset = offsetof(PlotArgs, title),
     .meta = "TEXT",
     .help = "the chart's title",
     .def_string = "storylm plot"},
    {.name = "y-label",
     .type = PARAM_STRING,
     .offset = offsetof(PlotArgs, y_label),
     .meta = "TEXT",
     .help = "the y axis's label"},
    {.name = "y-max",
     .type = PARAM_DOUBLE,
     .offset = offsetof(PlotArgs, y_max),
     .meta = "Y",
     .help = "clip the y axis at Y (0: the largest value)",
     .min = 0,
     .max = 1e9},
    {.name = "TABLE",
     .type = PARAM_STRING,
     .offset = offsetof(PlotArgs, table),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
};
static const ParamTable plot_table = {"plot", plot_params, PARAMS_COUNT(plot_params)};

static int run(int argc, char **argv) {
    PlotArgs a = {0};
    slm_params_init(&plot_table, &a);
    int rc = args_parse(&command_plot, argc, argv, &plot_table, &a, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    const char *out = a.out, *title = a.title, *y_label = a.y_label, *pos[1] = {a.table};
    double y_max = a.y_max;
    bool force = a.force;
    if (!out) return args_usage_error(&command_plot, "give the SVG file to write with -o FILE");
    Error e = {0};
    PlotTable t = {0};
    OutputPlan p;
    slm_outputs_init(&p, force);
    slm_outputs_read(&p, pos[0]);
    slm_outputs_write(&p, out, FILE_SVG);
    rc = slm_outputs_check(&p, &e) || slm_text_check(title, strlen(title), "--title", &e) ||
         (y_label && slm_text_check(y_label, strlen(y_label), "--y-label", &e));
    if (!rc) rc = slm_plot_table_read(&t, pos[0], &e);
    if (!rc) warn_gaps(&t, pos[0]);
    if (!rc) rc = slm_plot_draw(&t, out, title, y_label, y_max, &e);
    slm_plot_table_free(&t);
    return rc ? cli_fail(&e) : 0;
}
