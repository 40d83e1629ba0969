/* The view repeats: the chapter's problem on one story. Every token seen
 * earlier in the story but not among the 8 tokens before it (out of chapter
 * 6's reach) is marked, the story's hero too, the most common tokens left
 * unmarked; and the same count over every test story (stats' far repeats). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probes.h"
#include "storylm/registry.h"
#include "storylm/report_header.h"

typedef struct RepeatsParams {
    ProbeOptions po;
    const char *stories, *text;
    int story, common;
} RepeatsParams;

int slm_view_common_tokens(const ProbeSession *ps, int top, uint8_t *left_out, Error *e) {
    const Stories *s = &ps->stories;
    int train = s->n_train > 0;
    return slm_common_tokens(s, train ? s->train : s->test, train ? s->n_train : s->n_test, &ps->lm.tokenizer,
                             &ps->names, top, left_out, e);
}

/* Far repeats over every test story: tokens ([EOS] left out), those not left out, the far repeats. */
static int test_repeats(const ProbeSession *ps, const uint8_t *left_out, int *last, long long count[3], Error *e) {
    const Stories *s = &ps->stories;
    int32_t eos = ps->lm.tokenizer.eos_id;
    StoryBuf buf = {0};
    uint8_t *far = NULL;
    int rc = 0;
    for (int k = 0; !rc && k < s->n_test; k++) {
        int T = (int)story_len(s, s->test[k]);
        const int32_t *ids = slm_story_ids(s, s->test[k], &buf, e);
        uint8_t *grown = ids ? xrealloc(far, (size_t)T, e) : NULL;
        if (!grown) rc = -1;
        far = grown ? grown : far;
        if (rc) break;
        count[2] += slm_far_repeat_marks(ids, T, eos, left_out, last, far);
        for (int p = 0; p < T; p++) count[0] += ids[p] != eos, count[1] += ids[p] != eos && !left_out[ids[p]];
    }
    free(far);
    slm_story_buf_free(&buf);
    return rc;
}

/* The story's tokens: position, token, and whether it is a far repeat, a piece of the hero, left out. */
static void token_rows(Report *r, const ProbeSession *ps, const IntVec *ids, const uint8_t *far, const uint8_t *hero,
                       const uint8_t *left_out, const int *back) {
    ReportTable *t = slm_report_table(r, "tokens", "The story's tokens (far: seen earlier, not among the 8 before)");
    const char *cols[][2] = {{"position", "pos"}, {"token", "token"}, {"id", "id"},        {"far", "far"},
                             {"back", "back"},    {"name", "name"},   {"common", "common"}};
    for (int c = 0; c < 7; c++) slm_table_column(t, cols[c][0], cols[c][1], c == 1 ? CELL_TEXT : CELL_INT, 0);
    for (size_t p = 0; p < ids->len; p++) {
        slm_table_row(t);
        slm_cell_int(t, (long long)p);
        slm_cell_text(t, slm_probe_session_token(ps, ids->data[p]));
        slm_cell_int(t, ids->data[p]);
        slm_cell_int(t, far[p]);
        slm_cell_int(t, back[p]);
        slm_cell_int(t, hero[p]);
        slm_cell_int(t, left_out[ids->data[p]]);
    }
}

/* back (T): how far back the token was last seen in the story (0: never). */
static void last_seen(const IntVec *ids, int *last, int *back) {
    for (size_t p = 0; p < ids->len; p++) last[ids->data[p]] = -1;
    for (size_t p = 0; p < ids->len; p++) {
        int x = ids->data[p];
        back[p] = last[x] >= 0 ? (int)p - last[x] : 0;
        last[x] = (int)p;
    }
}

/* The story asked for: the text typed (after [EOS]), else test story p->story. */
static int story_ids(const ProbeSession *ps, const RepeatsParams *p, IntVec *ids, Error *e) {
    const Stories *s = &ps->stories;
    if (p->text)
        return slm_intvec_push(ids, ps->lm.tokenizer.eos_id, e) ||
                       slm_tokenizer_encode(&ps->lm.tokenizer, p->text, strlen(p->text), ids, e)
                   ? -1
                   : 0;
    if (p->story >= s->n_test)
        return FAIL(e, "test stories are numbered from 0", "--story %d: there are %d test stories", p->story,
                    s->n_test);
    StoryBuf buf = {0};
    const int32_t *x = slm_story_ids(s, s->test[p->story], &buf, e);
    int rc = !x;
    for (size_t i = 0; !rc && i < story_len(s, s->test[p->story]); i++) rc = slm_intvec_push(ids, x[i], e);
    slm_story_buf_free(&buf);
    return rc ? -1 : 0;
}

static void report_story(Report *r, const ProbeSession *ps, const RepeatsParams *p, const Hero *hero, int found,
                         int marked) {
    slm_report_header_session(r, ps);
    if (p->text)
        slm_report_text(r, "text", "text", p->text);
    else
        slm_report_int(r, "story", "test story", p->story);
    slm_report_text(r, "hero", "the story's name", found ? hero->word : "");
    slm_report_int(r, "common_left_out", "most common tokens left out", p->common);
    slm_report_int(r, "far_repeats", "marked: seen earlier, not among the 8 before", marked);
}

static int build(ViewCall *c, Error *e) {
    const RepeatsParams *p = c->params;
    const ProbeSession *ps = c->ps;
    int V = ps->lm.tokenizer.size;
    IntVec ids = {0};
    Hero hero = {0};
    long long count[3] = {0, 0, 0};
    uint8_t *left_out = xmalloc((size_t)V, e);
    int *last = left_out ? xmalloc((size_t)V * sizeof(int), e) : NULL;
    int rc = !last || slm_view_common_tokens(ps, p->common, left_out, e) || story_ids(ps, p, &ids, e) ? -1 : 0;
    int T = (int)ids.len;
    uint8_t *marks = rc ? NULL : xcalloc((size_t)T * 2 + 1, 1, e);
    int *back = marks ? xmalloc(((size_t)T + 1) * sizeof(int), e) : NULL;
    if (!rc && !back) rc = -1;
    if (!rc) {
        int marked = slm_far_repeat_marks(ids.data, T, ps->lm.tokenizer.eos_id, left_out, last, marks);
        int found = slm_find_hero(&ps->lm.tokenizer, &ps->names, ids.data, T, &hero);
        for (int k = 0; found && k < hero.n_mentions; k++)
            for (int i = 0; i < hero.n_pieces && hero.mentions[k] + i < T; i++) marks[T + hero.mentions[k] + i] = 1;
        last_seen(&ids, last, back);
        report_story(c->report, ps, p, &hero, found, marked);
        token_rows(c->report, ps, &ids, marks, marks + T, left_out, back);
        rc = test_repeats(ps, left_out, last, count, e);
    }
    if (!rc) {
        slm_report_heading(c->report, "Over every test story");
        slm_report_int(c->report, "test.tokens", "tokens ([EOS] left out)", count[0]);
        slm_report_int(c->report, "test.counted_tokens", "tokens not left out", count[1]);
        slm_report_int(c->report, "test.far_repeats", "seen earlier, not among the 8 before", count[2]);
        slm_report_percent(c->report, "test.far_repeat_share", "share of all tokens",
                           count[0] ? (double)count[2] / (double)count[0] : 0, 1);
    }
    free(marks), free(back), free(last), free(left_out);
    slm_intvec_free(&ids);
    return rc;
}

static int check(void *params, Error *e) {
    const RepeatsParams *p = params;
    if (p->text && p->story > 0)
        return FAIL(e, "give --text or --story, not both", "--text and --story %d do not go together", p->story);
    return 0;
}

static const Param params[] = {
    VIEW_ARG(RepeatsParams, stories, "STORIES", PARAM_REQUIRED | PARAM_STORIES),
    VIEW_PARAM_MODEL(RepeatsParams),
    VIEW_PARAMS_OUTPUT(RepeatsParams),
    VIEW_PARAM_TEST_STORIES(RepeatsParams),
    {.name = "text",
     .type = PARAM_STRING,
     .offset = offsetof(RepeatsParams, text),
     .meta = "TEXT",
     .help = "mark a typed story instead of a test story",
     .flags = PARAM_TEXT},
    VIEW_INT_PARAM(RepeatsParams, story, "story", "N", "the test story to mark (from 0)", 0, 1000000, 0),
    VIEW_INT_PARAM(RepeatsParams, common, "common", "N", "most common tokens left unmarked (names are marked)", 0,
                   100000, 100),
};

const View view_repeats = {
    .name = "repeats",
    .summary = "the words of a story out of chapter 6's reach (the problem)",
    .usage = "storylm repeats STORIES [--story N | --text TEXT] [options]",
    .description = "Marks every token of test story N of STORIES (or of --text) that appeared earlier in\n"
                   "the story but not among the 8 tokens before it, out of chapter 6's reach (\"far\"; \"back\"\n"
                   "is how many tokens back it was last seen), and the pieces of the story's hero\n"
                   "(\"name\"). The --common most common tokens of the training stories (of the test stories\n"
                   "when the file holds no other) are left unmarked, except names. Then the same count over\n"
                   "every test story: the far repeats of storylm stats.",
    .params = params,
    .n_params = VIEW_N_PARAMS(params),
    .params_size = sizeof(RepeatsParams),
    .session = VIEW_SESSION_PROBE,
    .probe_flags = PROBE_NAMES,
    .no_ablation = "the tokens of the story, which no head changes",
    .check = check,
    .build = build,
};
