/* Secret 2 on one typed story (swap --text): see views.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/text.h"
#include "storylm/report_header.h"
#include "storylm/views.h"

typedef struct SwapText {
    IntVec ids, swapped;
    Hero hero;
    SwapName name;
    int starts[HERO_MAX_MENTIONS];
    ProbeRunner model, baseline;
} SwapText;

static void swap_text_free(SwapText *w) {
    slm_intvec_free(&w->ids);
    slm_intvec_free(&w->swapped);
    slm_probe_runner_free(&w->model);
    slm_probe_runner_free(&w->baseline);
}

/* The typed story's hero, renamed, run through the model (and the baseline, no ablation). */
static int swap_text_run(SwapText *w, const ProbeSession *ps, const LoadedModel *baseline, const char *text,
                         const char *name, Error *e) {
    const Tokenizer *t = &ps->lm.tokenizer;
    if (slm_text_check(text, strlen(text), "the text", e) || slm_text_check(name, strlen(name), "the name", e) ||
        slm_intvec_push(&w->ids, t->eos_id, e) || slm_tokenizer_encode(t, text, strlen(text), &w->ids, e))
        return -1;
    int len = (int)w->ids.len;
    if (!slm_find_hero(t, &ps->names, w->ids.data, len, &w->hero))
        return FAIL(e, "name the hero in the first sentence and again later, like 'Lily found a shell. Lily smiled.'",
                    "the text has no hero: no name of its first sentence comes back later");
    if (slm_swap_name_make(t, &ps->names, name, &w->name, e)) return -1;
    if (slm_swap_hero(w->ids.data, len, &w->hero, w->name.pieces, w->name.n_pieces, &w->swapped, w->starts, e))
        return -1;
    int n = (int)w->swapped.len;
    if (slm_probe_runner_init(&w->model, &ps->lm.model, n, e) ||
        slm_probe_run(&w->model, w->swapped.data, n, &ps->ablation, e))
        return -1;
    if (!baseline) return 0;
    return slm_probe_runner_init(&w->baseline, &baseline->model, n, e) ||
                   slm_probe_run(&w->baseline, w->swapped.data, n, NULL, e)
               ? -1
               : 0;
}

static void mention_rows(Report *r, const SwapText *w, int baseline) {
    ReportTable *t = slm_report_table(r, "mentions", "At every later mention: the new name's first piece");
    slm_table_column(t, "mention", "mention", CELL_INT, 0);
    slm_table_column(t, "position", "pos", CELL_INT, 0);
    slm_table_column(t, "far", "> 8 back", CELL_INT, 0);
    slm_table_column(t, "model_probability", "model p", CELL_NUMBER, 4);
    slm_table_column(t, "model_rank", "model rank", CELL_INT, 0);
    if (baseline) {
        slm_table_column(t, "baseline_probability", "window8 p", CELL_NUMBER, 4);
        slm_table_column(t, "baseline_rank", "window8 rank", CELL_INT, 0);
    }
    double sum[2] = {0, 0}, top1[2] = {0, 0};
    int n = w->hero.n_mentions - 1;
    for (int k = 1; k <= n; k++) {
        int p = w->starts[k] - 1, rank;
        slm_table_row(t);
        slm_cell_int(t, k);
        slm_cell_int(t, w->starts[k]);
        slm_cell_int(t, w->starts[k - 1] < p - 7); /* out of window8's reach: it sees positions p-7..p */
        for (int b = 0; b <= baseline; b++) {
            double prob = slm_probe_probability(b ? &w->baseline.acts : &w->model.acts, p, w->name.pieces[0], &rank);
            sum[b] += prob;
            top1[b] += rank == 1;
            slm_cell_number(t, prob);
            slm_cell_int(t, rank);
        }
    }
    slm_report_int(r, "later_mentions", "later mentions", n);
    slm_report_number(r, "model_probability", "model: mean probability", n ? sum[0] / n : NAN, 4);
    slm_report_percent(r, "model_top1", "model: top guess", n ? top1[0] / n : NAN, 1);
    if (baseline) {
        slm_report_number(r, "baseline_probability", "window8: mean probability", n ? sum[1] / n : NAN, 4);
        slm_report_percent(r, "baseline_top1", "window8: top guess", n ? top1[1] / n : NAN, 1);
    }
}

int slm_view_swap_text(Report *r, const ProbeSession *ps, const LoadedModel *baseline, const char *baseline_path,
                       const char *text, const char *name, Error *e) {
    SwapText w = {0};
    int rc = swap_text_run(&w, ps, baseline, text, name, e);
    char *swapped = rc ? NULL : slm_tokenizer_decode(&ps->lm.tokenizer, w.swapped.data + 1, w.swapped.len - 1, 1, e);
    if (!rc && !swapped) rc = -1;
    if (!rc) {
        slm_report_header_session(r, ps);
        slm_report_text(r, "baseline", "baseline", baseline_path ? baseline_path : "none");
        slm_report_text(r, "text", "text", text);
        slm_report_text(r, "hero", "hero", w.hero.word);
        slm_report_text(r, "name", "new name", w.name.word);
        slm_report_text(r, "kind", "kind", slm_name_kind_names[w.name.kind]);
        slm_report_int(r, "train_count", "seen in training", w.name.train_count);
        slm_report_text(r, "swapped_text", "renamed story", swapped);
        mention_rows(r, &w, baseline != NULL);
    }
    free(swapped);
    swap_text_free(&w);
    return rc;
}
