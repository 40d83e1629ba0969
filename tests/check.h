/* A tiny test harness: CHECK records a failure and goes on; the test's main
 * returns check_report(), which is non-zero when anything failed. */
#ifndef STORYLM_TEST_CHECK_H
#define STORYLM_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "storylm/head_set.h"
#include "storylm/hooks.h"

int check_at(int ok, const char *expr, const char *file, int line);
int check_close_at(double got, double want, double rel, double abs_tol, const char *expr, const char *file, int line);
int check_report(void);
/* A scratch folder for this test (created): $STORYLM_TEST_TMP or /tmp. */
const char *check_tmpdir(void);
/* $STORYLM_SOURCE_DIR/rel, for fixtures and data. */
const char *check_source_path(const char *rel);

/* The reference output side in double, for the gradient checks: z (Z) ->
 * hidden tanh(W1 z + b1), W1 (Hd, Z), Hd <= 64 -> logits W2 y + b2, W2 (V, Hd),
 * V <= 64 -> the cross-entropy of token next, max-subtracted. */
double check_ref_output_loss(const double *W1, const double *b1, const double *W2, const double *b2, int Z, int Hd,
                             int V, const double *z, int next);

/* PyTorch fixtures (tests/fixtures/variants.json, transformer.json): a case's
 * "tensors" array ({"name", "value", "grad"}, in the model table's order).
 * check_fixture_tensors loads the values into m (0; -1 when the table differs);
 * check_fixture_grads checks every gradient to 1e-4 of its tensor's largest (a
 * tensor whose true gradient is 0 to 1e-6) and returns the worst ratio. */
struct cJSON;
struct Model;
int check_fixture_tensors(const struct cJSON *cas, struct Model *m);
double check_fixture_grads(const struct cJSON *cas, const struct Model *m, const float *grads, const char *what);
/* A whole fixture case on cfg's network: its tensors loaded, the loss to 1e-5
 * relative and every gradient checked, through slm_model_backward and through
 * training's fused pass; prints one line named what. */
struct ModelConfig;
struct Batch;
struct Rng;
/* Stories of 9 (longer than a tiny window), 4 and 2 tokens: [EOS], then random
 * ids below vocab_size, for the gradient checks. */
void check_tiny_batch(struct Batch *b, int vocab_size, struct Rng *rng);
/* Reads the fixture at rel (from the source tree) and its "stories" into b;
 * NULL (a failed check) when it cannot be read. The caller frees both. */
struct cJSON *check_fixture_load(const char *rel, struct Batch *b);
void check_fixture_case(const struct ModelConfig *cfg, const struct cJSON *cas, const struct Batch *b,
                        const char *what);

/* A fixture case's "hooks" ({name: [floats]}, TransformerLens's points of
 * the first story; null for a masked attention score, -inf) against m's
 * forward of b's first story: each point declared by m's configuration, of
 * PyTorch's size, within 1e-4 of its largest; prints one line named what. */
struct Ablation;
void check_fixture_hooks(const struct Model *m, const struct cJSON *cas, const struct Batch *b, const char *what);
/* b's first story through m with hook fn on the points names (n_names;
 * NULL: none) and ablation ab (NULL: none) -> its logits (T, V). */
void check_first_story(const struct Model *m, const struct Batch *b, const char *const *names, int n_names, HookFn fn,
                       void *ctx, const struct Ablation *ab, float *logits);

/* The heads of mask (bit g: head g, g < 64) as a set, for an Ablation. */
static inline HeadSet check_heads(uint64_t mask) {
    HeadSet s = {0};
    s.bits[0] = mask;
    return s;
}

#define CHECK(cond) check_at(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_CLOSE(got, want, rel, abs_tol)                                                                           \
    check_close_at((got), (want), (rel), (abs_tol), #got " ~ " #want, __FILE__, __LINE__)

#endif
