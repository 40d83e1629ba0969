/* The views (src/views) on the shipped model: the loss on a typed text is
 * what the trainer's own evaluation gives for that story; the generator,
 * one token at a time, writes what the whole-story forward pass ranks first;
 * the attention view's weights add up to 1 for every head, and its wide
 * layout holds the same weights by position; the trace of a position of a
 * whole-text run is the trace of the text cut after it; positions out of
 * range are refused and negative ones count from the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/train.h"
#include "storylm/views.h"

static const char *const TEXT = "Once upon a time, there was a girl named Mia. Mia saw a big dog. The dog ran to Mia.";

static int open_session(ProbeSession *ps, Error *e) {
    ProbeOptions po = {.model = check_source_path("models/tinystories.safetensors"),
                       .ablate_mode = ABLATE_ZERO,
                       .n_test = STORIES_DEFAULT_TEST};
    return slm_probe_session_open(ps, &po, "test_views", NULL, PROBE_HEADS, e);
}

/* slm_view_loss over [EOS] + text equals slm_evaluate() over the same ids as a story. */
static void loss_on_text_is_the_trainers_evaluation(const ProbeSession *ps) {
    Error e;
    ViewText vt;
    CHECK(slm_view_text_run(&vt, ps, TEXT, -1, 0, &e) == 0);
    Report r;
    slm_report_init(&r, "eval");
    slm_view_loss(&r, ps, &vt, TEXT);
    CHECK(slm_report_failed(&r, &e) == 0);
    cJSON *j = slm_report_json(&r);
    size_t starts[2] = {0, vt.ids.len};
    int only[1] = {0};
    Stories s = {
        .n_stories = 1, .ids32 = vt.ids.data, .starts = starts, .n_tokens = vt.ids.len, .n_test = 1, .test = only};
    EvalResult ev;
    CHECK(slm_evaluate(&ps->lm.model, &s, only, 1, NULL, 4096, &ev, &e) == 0);
    CHECK(ev.positions == (long long)vt.ids.len - 1);
    CHECK(cJSON_GetObjectItem(j, "positions")->valuedouble == (double)ev.positions);
    CHECK_CLOSE(cJSON_GetObjectItem(j, "loss")->valuedouble, ev.loss, 1e-5, 1e-6);
    CHECK_CLOSE(cJSON_GetObjectItem(j, "accuracy")->valuedouble, ev.accuracy, 0, 1e-12);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "tokens")) == (int)ev.positions);
    cJSON_Delete(j);
    slm_report_free(&r);
    slm_view_text_free(&vt);
}

/* Greedy, token by token with cached keys and values: each new token is the
 * one the whole-story pass over everything before it ranks first. */
static void greedy_generation_follows_the_full_forward(const ProbeSession *ps) {
    Error e;
    ViewGenerator vg;
    ViewGenerateOptions go = {
        .max_tokens = 25, .sampling = {.temperature = 0, .top_p = 1, .repeat_penalty = 1}, .seed = 1};
    CHECK(slm_view_generator_init(&vg, &ps->lm, NULL, "Lily found a", &go, &e) == 0);
    int rc, prompt = (int)vg.ids.len, agree = 1;
    while ((rc = slm_view_generator_next(&vg, &e)) > 0) {}
    CHECK(rc == 0);
    CHECK(vg.tokens > 0 && vg.tokens <= 25);
    IntVec story = {0};
    CHECK(slm_intvec_push(&story, ps->lm.tokenizer.eos_id, &e) == 0);
    for (size_t i = 0; i < vg.ids.len; i++) CHECK(slm_intvec_push(&story, vg.ids.data[i], &e) == 0);
    ProbeRunner run;
    CHECK(slm_probe_runner_init(&run, &ps->lm.model, (int)story.len, &e) == 0);
    CHECK(slm_probe_run(&run, story.data, (int)story.len, NULL, &e) == 0);
    for (int k = prompt; k < (int)vg.ids.len; k++) { /* story[k] predicts story[k + 1] = vg.ids[k] */
        int rank;
        slm_probe_probability(&run.acts, k, vg.ids.data[k], &rank);
        agree &= rank == 1;
    }
    CHECK(agree);
    char *text = slm_view_generator_text(&vg, &e), *all = NULL;
    CHECK(text && strncmp(text, "Lily found a", 12) == 0); /* the prompt's capital kept */
    CHECK(slm_view_generate(&ps->lm, NULL, "Lily found a", &go, &all, &e) == 0);
    CHECK(all && text && strcmp(all, text) == 0); /* all at once: the same */
    free(all);
    free(text);
    slm_probe_runner_free(&run);
    slm_intvec_free(&story);
    slm_view_generator_free(&vg);
}

/* The table called key in r, or NULL. */
static const ReportTable *find_table(const Report *r, const char *key) {
    for (int i = 0; i < r->n_items; i++)
        if (r->items[i].kind == ITEM_TABLE && r->items[i].table && strcmp(r->items[i].table->key, key) == 0)
            return r->items[i].table;
    return NULL;
}

static void attention_weights_add_up_to_one(const ProbeSession *ps) {
    Error e;
    ViewText vt;
    CHECK(slm_view_text_run(&vt, ps, TEXT, -4, 0, &e) == 0);
    CHECK(vt.pos == (int)vt.ids.len - 4);
    Report r;
    slm_report_init(&r, "attend");
    slm_view_attend(&r, ps, &vt, -1);
    const ReportTable *t = find_table(&r, "keys");
    double sum[8] = {0};
    int rows[8] = {0};
    for (int i = 0; t && i < t->n_rows; i++) {
        int h = (int)slm_table_number(t, i, 0);
        sum[h] += slm_table_number(t, i, 8);
        rows[h]++;
    }
    CHECK(t != NULL);
    for (int h = 0; h < 8; h++) {
        CHECK(rows[h] == vt.pos + 1); /* [EOS] to itself */
        CHECK_CLOSE(sum[h], 1.0, 0, 1e-5);
    }
    slm_report_free(&r);
    slm_view_text_free(&vt);
}

/* The number under key in row i of a JSON table. */
static double cell(const cJSON *table, int i, const char *key) {
    return cJSON_GetObjectItem(cJSON_GetArrayItem(table, i), key)->valuedouble;
}

/* attend --wide: a row a position read, nearest first, each head's weight as the
 * long layout gives it (the same floats), the position's token, distance and cosine. */
static void wide_layout_holds_every_heads_weights(const ProbeSession *ps) {
    Error e;
    ViewText vt;
    CHECK(slm_view_text_run(&vt, ps, TEXT, 9, 0, &e) == 0);
    Report long_r, wide_r;
    slm_report_init(&long_r, "attend");
    slm_report_init(&wide_r, "attend");
    slm_view_attend(&long_r, ps, &vt, -1);
    slm_view_attend_wide(&wide_r, ps, &vt);
    CHECK(slm_report_failed(&wide_r, &e) == 0);
    cJSON *lj = slm_report_json(&long_r), *wj = slm_report_json(&wide_r);
    const cJSON *lk = cJSON_GetObjectItem(lj, "keys"), *wk = cJSON_GetObjectItem(wj, "keys");
    int n = cJSON_GetArraySize(wk), same = 1;
    CHECK(n == 10 && cJSON_GetArraySize(lk) == 8 * n); /* position 9 reads 0..9 */
    for (int i = 0; i < cJSON_GetArraySize(lk); i++) {
        int h = (int)cell(lk, i, "head"), j = i % n; /* the long layout: head by head, nearest first */
        char key[16];
        snprintf(key, sizeof key, "weight_%d", h);
        same &= cell(wk, j, key) == cell(lk, i, "weight") && cell(wk, j, "position") == cell(lk, i, "position") &&
                cell(wk, j, "distance") == cell(lk, i, "distance") && cell(wk, j, "cosine") == cell(lk, i, "cosine");
    }
    CHECK(same);
    CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(wk, 0), "dot") == NULL); /* what the wide layout leaves out */
    CHECK(cJSON_GetObjectItem(wj, "position")->valuedouble == 9);
    cJSON_Delete(lj);
    cJSON_Delete(wj);
    slm_report_free(&long_r);
    slm_report_free(&wide_r);
    slm_view_text_free(&vt);
}

/* The trace of position 12 read from a run of the whole text gives what the
 * run of the text cut after position 12 gives (a causal network: up to the
 * bits BLAS's sums may round differently in), and slm_view_text_at moves the
 * position of a run. */
static void trace_of_a_position_of_the_whole_run(const ProbeSession *ps) {
    Error e;
    ViewText whole, cut;
    CHECK(slm_view_text_run(&whole, ps, TEXT, -1, 0, &e) == 0);
    CHECK(slm_view_text_at(&whole, 12, &e) == 0 && whole.pos == 12);
    CHECK(slm_view_text_run(&cut, ps, TEXT, 12, VIEW_RUN_PREFIX, &e) == 0 && cut.runner.acts.n_positions == 13);
    TraceResult a, b;
    Report ra, rb;
    slm_report_init(&ra, "trace");
    slm_report_init(&rb, "trace");
    CHECK(slm_view_trace(&ra, ps, &whole, TEXT, 10, 10, &a, &e) == 0);
    CHECK(slm_view_trace(&rb, ps, &cut, TEXT, 10, 10, &b, &e) == 0);
    CHECK(a.position == 12 && b.position == 12 && a.token == b.token);
    int Z = slm_model_hidden_input_dim(&ps->lm.model.cfg);
    for (int i = 0; i < Z; i++) CHECK_CLOSE(a.z[i], b.z[i], 1e-5, 1e-5);
    for (int k = 0; k < 10; k++) {
        CHECK(a.guesses[k].token == b.guesses[k].token);
        CHECK_CLOSE(a.guesses[k].probability, b.guesses[k].probability, 1e-5, 1e-6);
    }
    CHECK(slm_view_text_at(&whole, (int)whole.ids.len, &e) == -1 && strstr(e.message, "outside") != NULL);
    CHECK(slm_view_text_at(&whole, -1, &e) == 0 && whole.pos == (int)whole.ids.len - 1);
    slm_trace_result_free(&a);
    slm_trace_result_free(&b);
    slm_report_free(&ra);
    slm_report_free(&rb);
    slm_view_text_free(&whole);
    slm_view_text_free(&cut);
}

static void positions_out_of_range_are_refused(const ProbeSession *ps) {
    Error e;
    ViewText vt;
    CHECK(slm_view_text_run(&vt, ps, "Lily ran.", 4, 0, &e) == -1); /* [EOS] lily ran . : 0..3 */
    CHECK(strstr(e.message, "outside") != NULL);
    CHECK(slm_view_text_run(&vt, ps, "Lily ran.", -5, 0, &e) == -1);
    CHECK(slm_view_text_run(&vt, ps, "Lily ran.", -4, 1, &e) == 0 && vt.pos == 0 && vt.runner.acts.n_positions == 1);
    slm_view_text_free(&vt);
    const ModelConfig *c = &ps->lm.model.cfg;
    int l, h;
    CHECK(slm_view_head(c, "8", 1, 1, &l, &h, &e) == -1 && slm_view_head(c, "-2", 1, 1, &l, &h, &e) == -1);
    char said[256];
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_CLI, said, sizeof said),
                 "--head -2 is out of range: this model has heads 0 to 7") == 0);
    CHECK(slm_view_head(c, "-1", 1, 1, &l, &h, &e) == 0 && l == 1 && h == -1);
    CHECK(slm_view_head(c, "7", 1, 1, &l, &h, &e) == 0 && l == 1 && h == 7);
    CHECK(slm_view_head(c, NULL, 1, 1, &l, &h, &e) == 0 && l == 1 && h == -1);
    CHECK(slm_view_head(c, "-1", 1, 0, &l, &h, &e) == -1 && slm_view_head(c, NULL, 1, 0, &l, &h, &e) == -1);
    CHECK(strcmp(slm_error_text(&e, ERROR_STYLE_JSON, said, sizeof said), "missing \"head\"") == 0);
}

int main(void) {
    ProbeSession ps;
    Error e;
    if (open_session(&ps, &e)) {
        printf("SKIPPED: no shipped model (%s)\n", e.message);
        return 77;
    }
    loss_on_text_is_the_trainers_evaluation(&ps);
    greedy_generation_follows_the_full_forward(&ps);
    attention_weights_add_up_to_one(&ps);
    wide_layout_holds_every_heads_weights(&ps);
    trace_of_a_position_of_the_whole_run(&ps);
    positions_out_of_range_are_refused(&ps);
    slm_probe_session_close(&ps);
    return check_report();
}
