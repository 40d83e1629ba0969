/* Evaluation (evaluate.h): each position's numbers are those of the plain
 * forward pass (slm_model_forward, one story at a time), a story longer than a
 * chunk (run in pieces) included; the totals add them up; and the ablation
 * probe's scores are evaluation's numbers, with a head switched off too. */
#include <math.h>
#include <stdlib.h>

#include "archs.h"
#include "check.h"
#include "storylm/evaluate.h"
#include "storylm/probes.h"
#include "storylm/rng.h"

enum { V = 50, N_STORIES = 7, LONG_STORY = 1400 };

/* Random stories between [EOS]s (id 1); story 2 is longer than four windows,
 * so a chunk of 1,024 positions runs it in pieces. */
static void random_stories(Stories *s, size_t **starts_out, int32_t **tokens_out) {
    Rng r;
    slm_rng_seed(&r, 11);
    *s = (Stories){.n_stories = N_STORIES};
    size_t *starts = calloc(N_STORIES + 1, sizeof *starts);
    int32_t *tokens = malloc((N_STORIES * 90 + LONG_STORY) * sizeof *tokens);
    for (int i = 0; i < N_STORIES; i++) {
        int len = i == 2 ? LONG_STORY : 5 + (int)slm_rng_below(&r, 80);
        size_t at = starts[i];
        tokens[at] = 1;
        for (int t = 1; t < len; t++) tokens[at + t] = 2 + (int)slm_rng_below(&r, V - 2);
        starts[i + 1] = at + len;
    }
    s->starts = starts;
    s->ids32 = tokens;
    s->n_tokens = starts[N_STORIES];
    *starts_out = starts, *tokens_out = tokens;
}

/* Each position's loss and correct from slm_model_forward, story by story, in slm_evaluate_each's layout. */
static void reference(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ab, float *loss,
                      uint8_t *correct) {
    Error e = {0};
    ProbeRunner r;
    CHECK(slm_probe_runner_init(&r, m, 64, &e) == 0);
    StoryBuf buf = {0};
    for (int i = 0, at = 0; i < n; at += (int)story_len(s, idx[i]), i++) {
        const int32_t *ids = slm_story_ids(s, idx[i], &buf, &e);
        CHECK(ids && slm_probe_run(&r, ids, (int)story_len(s, idx[i]), ab, &e) == 0);
        for (int p = 0; p < r.acts.n_positions; p++) loss[at + p] = r.acts.loss[p], correct[at + p] = r.acts.correct[p];
    }
    slm_story_buf_free(&buf);
    slm_probe_runner_free(&r);
}

static void each_position_is_the_forward_pass(const Model *m, const Stories *s, const int *idx, int n) {
    Error e = {0};
    float loss[N_STORIES * 90 + LONG_STORY], want_loss[N_STORIES * 90 + LONG_STORY];
    uint8_t correct[N_STORIES * 90 + LONG_STORY], want_correct[N_STORIES * 90 + LONG_STORY];
    EvalResult r, plain;
    CHECK(slm_evaluate_each(m, s, idx, n, NULL, 1024, &r, loss, correct, &e) == 0);
    CHECK(slm_evaluate(m, s, idx, n, NULL, 1024, &plain, &e) == 0);
    reference(m, s, idx, n, NULL, want_loss, want_correct);
    double sum = 0;
    long long right = 0, positions = 0, agree = 0;
    for (int i = 0, at = 0; i < n; at += (int)story_len(s, idx[i]), i++) {
        int len = (int)story_len(s, idx[i]);
        for (int p = 0; p < len - 1; p++) {
            CHECK_CLOSE(loss[at + p], want_loss[at + p], 1e-4, 1e-5);
            agree += correct[at + p] == want_correct[at + p];
            sum += loss[at + p], right += correct[at + p], positions++;
        }
        CHECK(loss[at + len - 1] == 0 && correct[at + len - 1] == 0); /* the last position predicts nothing */
    }
    CHECK(agree >= positions - 2); /* a near tie may go the other way in another summation order */
    CHECK(r.positions == positions && plain.positions == positions);
    CHECK_CLOSE(r.loss, sum / (double)positions, 1e-6, 0);
    CHECK_CLOSE(r.accuracy, (double)right / (double)positions, 0, 1e-12);
    CHECK(r.loss == plain.loss && r.accuracy == plain.accuracy); /* the same pass */
    CHECK_CLOSE(r.loss, log(V), 0.2, 0);                         /* untrained: near uniform */
}

/* slm_probe_score: its loss and accuracy are evaluate's, with the head off as
 * well; at the name positions, the means of those positions' numbers. */
static void ablation_scores_are_evaluations(const Model *m, const Stories *s, const int *idx, int n) {
    Error e = {0};
    Ablation off = {.heads = check_heads(1u << 3), .mode = ABLATE_ZERO};
    int story[3] = {idx[0], idx[2], idx[2]}, position[3] = {3, 700, 1300};
    NameTargets names = {.story = story, .position = position, .n = 3};
    for (int k = 0; k < 2; k++) {
        const Ablation *ab = k ? &off : NULL;
        AblateScore got;
        EvalResult want;
        CHECK(slm_probe_score(m, s, idx, n, ab, &names, &got, &e) == 0);
        CHECK(slm_evaluate(m, s, idx, n, ab, 4096, &want, &e) == 0);
        CHECK(got.loss == want.loss && got.accuracy == want.accuracy && got.positions == want.positions);
        float loss[N_STORIES * 90 + LONG_STORY];
        uint8_t correct[N_STORIES * 90 + LONG_STORY];
        reference(m, s, idx, n, ab, loss, correct);
        int at2 = (int)story_len(s, idx[0]) + (int)story_len(s, idx[1]);
        double l[3] = {loss[3], loss[at2 + 700], loss[at2 + 1300]};
        CHECK(got.name_positions == 3);
        CHECK_CLOSE(got.name_loss, (l[0] + l[1] + l[2]) / 3, 1e-4, 0);
        CHECK_CLOSE(got.name_probability, (exp(-l[0]) + exp(-l[1]) + exp(-l[2])) / 3, 1e-4, 0);
    }
    AblateScore intact, ablated;
    CHECK(slm_probe_score(m, s, idx, n, NULL, NULL, &intact, &e) == 0 && isnan(intact.name_loss));
    CHECK(slm_probe_score(m, s, idx, n, &off, NULL, &ablated, &e) == 0);
    CHECK(intact.loss != ablated.loss); /* the head mattered */
}

int main(void) {
    Error e = {0};
    Stories s;
    size_t *starts;
    int32_t *tokens;
    random_stories(&s, &starts, &tokens);
    ModelConfig cfg = slm_model_config_default(&slm_attention_arch, V);
    Model m;
    CHECK(slm_model_init(&m, &cfg, &e) == 0);
    slm_model_randomize(&m, 4);
    int idx[5] = {5, 0, 2, 6, 3};
    each_position_is_the_forward_pass(&m, &s, idx, 5);
    ablation_scores_are_evaluations(&m, &s, idx, 5);
    slm_model_free(&m);
    free(starts);
    free(tokens);
    return check_report();
}
