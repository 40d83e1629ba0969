/* Evaluation: see include/storylm/evaluate.h. */
#include "storylm/evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pass.h"

static long long predicted_positions(const Stories *s, const int *idx, int n) {
    long long total = 0;
    for (int i = 0; i < n; i++) total += (long long)story_len(s, idx[i]) - 1;
    return total;
}

static void eval_result(EvalResult *r, const Stories *s, const int *idx, int n, double loss, long long correct) {
    r->positions = predicted_positions(s, idx, n);
    r->loss = r->positions ? loss / (double)r->positions : NAN;
    r->accuracy = r->positions ? (double)correct / (double)r->positions : NAN;
}

int slm_pass_evaluate(Pass *p, const Stories *s, const int *idx, int n, const Ablation *ab, EvalResult *r, Error *e) {
    double loss = 0;
    long long correct = 0;
    *r = (EvalResult){0};
    if (slm_pass_refs(p, s, idx, n, e) || slm_pass_go(p, n, ab, NULL, &loss, &correct, e)) return -1;
    eval_result(r, s, idx, n, loss, correct);
    return 0;
}

static int longest_story(const Stories *s, const int *idx, int n) {
    int longest = 0;
    for (int i = 0; i < n; i++) longest = (int)story_len(s, idx[i]) > longest ? (int)story_len(s, idx[i]) : longest;
    return longest;
}

/* Story i's slices of loss and correct (slm_evaluate_each's layout), zeroed,
 * into at_loss[i] and at_correct[i] (n each). */
static int position_outputs(const Stories *s, const int *idx, int n, float *loss, uint8_t *correct, float ***at_loss,
                            uint8_t ***at_correct, Error *e) {
    *at_loss = xmalloc((size_t)(n > 0 ? n : 1) * sizeof **at_loss, e);
    *at_correct = *at_loss ? xmalloc((size_t)(n > 0 ? n : 1) * sizeof **at_correct, e) : NULL;
    if (!*at_correct) return -1;
    for (size_t i = 0, at = 0; i < (size_t)n; at += story_len(s, idx[i]), i++) {
        (*at_loss)[i] = loss + at, (*at_correct)[i] = correct + at;
        memset(loss + at, 0, story_len(s, idx[i]) * sizeof *loss);
        memset(correct + at, 0, story_len(s, idx[i]));
    }
    return 0;
}

/* slm_evaluate_each on kernels k. */
static int evaluate_each(Kernels k, const Model *m, const Stories *s, const int *idx, int n, const Ablation *ab,
                         int max_positions, EvalResult *r, float *loss, uint8_t *correct, Error *e) {
    *r = (EvalResult){0};
    Pass p;
    float **at_loss = NULL;
    uint8_t **at_correct = NULL;
    int rc = slm_pass_init(&p, m, NULL, k, max_positions, longest_story(s, idx, n), n > 0 ? n : 1, e);
    if (!rc && loss) rc = position_outputs(s, idx, n, loss, correct, &at_loss, &at_correct, e);
    p.shards.position_loss = at_loss, p.shards.position_correct = at_correct;
    if (!rc) rc = slm_pass_evaluate(&p, s, idx, n, ab, r, e);
    slm_pass_free(&p);
    free(at_loss);
    free(at_correct);
    return rc;
}

int slm_evaluate_each(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ab, int max_positions,
                      EvalResult *r, float *loss, uint8_t *correct, Error *e) {
    return evaluate_each(m->kernels, m, s, idx, n, ab, max_positions, r, loss, correct, e);
}

int slm_evaluate(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ab, int max_positions,
                 EvalResult *r, Error *e) {
    return evaluate_each(m->kernels, m, s, idx, n, ab, max_positions, r, NULL, NULL, e);
}

int slm_evaluate_on(Kernels k, const Model *m, const Stories *s, const int *idx, int n, const Ablation *ab,
                    int max_positions, EvalResult *r, Error *e) {
    return evaluate_each(k, m, s, idx, n, ab, max_positions, r, NULL, NULL, e);
}
