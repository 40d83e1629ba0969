/* patch, attribute and cache on small hand-built models: patching every
 * row, or every head output and the last row, gives back the clean run bit
 * for bit; a piece that is the same in both runs brings back exactly 0; a
 * head that carries nothing shows nothing; the logit's gradient agrees with
 * finite differences; removing a part by hand is what attribute reports;
 * the cache holds what the forward pass computed, where its layout says. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/probe_attribute.h"
#include "storylm/probe_cache.h"
#include "storylm/probe_patch.h"
#include "storylm/probes.h"

/* 12 tokens, rows of 6, 3 heads of 4 (query, key) and 5 (value), a window of 8. */
static void small_model(Model *m, uint64_t seed) {
    ModelConfig c = {.arch = &slm_attention_arch,
                     .vocab_size = 12,
                     .row_dim = 6,
                     .n_heads = 3,
                     .key_dim = 4,
                     .value_dim = 5,
                     .window = 8,
                     .hidden_dim = 7,
                     .context = 8};
    Error e;
    CHECK(slm_model_init(m, &c, &e) == 0);
    slm_model_randomize(m, seed);
    for (int i = 0; i < c.n_heads * c.window; i++) m->distance[i] = 0.4f * sinf(1.3f * (float)i); /* not flat */
    for (int i = 0; i < c.n_heads * c.row_dim * c.key_dim; i++) m->query[i] *= 3, m->key[i] *= 3; /* sharp */
}

/* 11 positions (longer than the window of 8); corrupt differs at 2, 4 and 9. */
static const int32_t clean_ids[] = {0, 3, 5, 7, 3, 9, 11, 2, 4, 3, 6};
static const int32_t corrupt_ids[] = {0, 3, 8, 7, 1, 9, 11, 2, 4, 10, 6};
#define T_IDS 11

static void run_both(const Model *m, ProbeRunner *clean, ProbeRunner *corrupt, const Ablation *ab) {
    Error e;
    CHECK(slm_probe_runner_init(clean, m, T_IDS, &e) == 0 && slm_probe_runner_init(corrupt, m, T_IDS, &e) == 0);
    CHECK(slm_probe_run(clean, clean_ids, T_IDS, ab, &e) == 0 &&
          slm_probe_run(corrupt, corrupt_ids, T_IDS, ab, &e) == 0);
}

/* Patching everything gives back the clean numbers exactly; what is the same in both runs brings back 0. */
static void patching_everything_is_the_clean_run(void) {
    Model m;
    small_model(&m, 3);
    ProbeRunner clean, corrupt;
    run_both(&m, &clean, &corrupt, NULL);
    PatchResult p;
    Error e;
    CHECK(slm_probe_patch(&m, &clean.acts, &corrupt.acts, 5, 7, &p, &e) == 0);
    CHECK(p.all_rows == 1.0);
    CHECK(p.outputs_and_row == 1.0);
    CHECK(p.hidden == 1.0);
    CHECK(memcmp(p.all_logits, p.clean_logits, 12 * sizeof(double)) == 0);
    /* the double evaluation is the float forward pass, to float rounding */
    const float *logits = clean.acts.logits + (size_t)(T_IDS - 1) * 12;
    double worst = 0;
    for (int v = 0; v < 12; v++) worst = fmax(worst, fabs(p.clean_logits[v] - logits[v]));
    CHECK(worst < 1e-5);
    CHECK_CLOSE(p.clean_diff, p.clean_diff_model, 1e-5, 1e-5);
    CHECK_CLOSE(p.corrupt_diff, p.corrupt_diff_model, 1e-5, 1e-5);
    int same_zero = 1, outside_zero = 1, differs = 0;
    for (int u = 0; u < T_IDS; u++) {
        int same = clean_ids[u] == corrupt_ids[u];
        if (same)
            same_zero &= p.rows[u] == 0.0;
        else
            differs += p.rows[u] != 0.0;
        for (int h = 0; h < 3; h++) {
            if (same) same_zero &= p.reads[h * T_IDS + u] == 0.0;
            if (u < T_IDS - 8) outside_zero &= p.reads[h * T_IDS + u] == 0.0; /* out of the last one's window */
        }
    }
    CHECK(same_zero);
    CHECK(outside_zero);
    CHECK(differs == 2 && p.rows[2] == 0.0); /* position 2 is out of the last position's window */
    /* the last token is the same in both: the queries are too */
    for (int h = 0; h < 3; h++) CHECK(p.query[h] == 0.0);
    slm_patch_result_free(&p);
    slm_probe_runner_free(&clean);
    slm_probe_runner_free(&corrupt);
    slm_model_free(&m);
}

/* A head whose values are all 0 carries nothing: patching it brings back
 * nothing, and with it switched off in both runs, neither does any head. */
static void a_head_that_carries_nothing_shows_nothing(void) {
    Model m;
    small_model(&m, 4);
    memset(m.value + 2 * 6 * 5, 0, 6 * 5 * sizeof(float)); /* head 2 */
    ProbeRunner clean, corrupt;
    run_both(&m, &clean, &corrupt, NULL);
    PatchResult p;
    Error e;
    CHECK(slm_probe_patch(&m, &clean.acts, &corrupt.acts, 2, 9, &p, &e) == 0);
    int nothing = p.output[2] == 0.0 && p.query[2] == 0.0;
    for (int u = 0; u < T_IDS; u++) nothing &= p.reads[2 * T_IDS + u] == 0.0;
    CHECK(nothing);
    CHECK(p.output[0] != 0.0 || p.output[1] != 0.0);
    slm_patch_result_free(&p);
    slm_probe_runner_free(&clean);
    slm_probe_runner_free(&corrupt);
    Ablation ab = {.heads = check_heads(1u << 0)};
    run_both(&m, &clean, &corrupt, &ab);
    CHECK(slm_probe_patch(&m, &clean.acts, &corrupt.acts, 2, 9, &p, &e) == 0);
    nothing = p.output[0] == 0.0 && p.query[0] == 0.0;
    for (int u = 0; u < T_IDS; u++) nothing &= p.reads[u] == 0.0;
    CHECK(nothing);
    CHECK(p.all_rows == 1.0 && p.outputs_and_row == 1.0);
    slm_patch_result_free(&p);
    slm_probe_runner_free(&clean);
    slm_probe_runner_free(&corrupt);
    slm_model_free(&m);
}

/* Runs of different lengths, equal tokens, and window8 models are refused. */
static void patch_refuses_what_it_cannot_compare(void) {
    Model m;
    small_model(&m, 5);
    ProbeRunner clean, corrupt;
    run_both(&m, &clean, &corrupt, NULL);
    Error e;
    PatchResult p;
    CHECK(slm_probe_patch(&m, &clean.acts, &corrupt.acts, 4, 4, &p, &e) != 0);
    CHECK(slm_probe_patch(&m, &clean.acts, &corrupt.acts, 4, 12, &p, &e) != 0);
    CHECK(slm_probe_run(&corrupt, corrupt_ids, T_IDS - 1, NULL, &e) == 0);
    CHECK(slm_probe_patch(&m, &clean.acts, &corrupt.acts, 4, 5, &p, &e) != 0);
    CHECK(strstr(e.message, "positions") != NULL);
    CHECK(slm_probe_run(&corrupt, clean_ids, T_IDS, NULL, &e) == 0); /* the same text: nothing to bring back */
    CHECK(slm_probe_patch(&m, &clean.acts, &corrupt.acts, 4, 5, &p, &e) != 0);
    slm_probe_runner_free(&clean);
    slm_probe_runner_free(&corrupt);
    slm_model_free(&m);
    ModelConfig c = slm_model_config_default(&slm_window8_arch, 12);
    CHECK(slm_model_init(&m, &c, &e) == 0);
    ProbeRunner w;
    CHECK(slm_probe_runner_init(&w, &m, T_IDS, &e) == 0 && slm_probe_run(&w, clean_ids, T_IDS, NULL, &e) == 0);
    CHECK(slm_probe_patch(&m, &w.acts, &w.acts, 1, 2, &p, &e) != 0);
    AttributeResult a;
    CHECK(slm_probe_attribute(&m, &w.acts, 3, 1, NULL, &a, &e) != 0);
    ActivationCache cache;
    int starts[] = {0, T_IDS};
    CHECK(slm_probe_cache(&m, clean_ids, starts, 1, NULL, &cache, &e) != 0);
    CHECK(strstr(e.message, "attention") != NULL);
    slm_probe_runner_free(&w);
    slm_model_free(&m);
}

/* d logit / d z against central differences of the logit itself. */
static void logit_gradient_matches_finite_differences(void) {
    Model m;
    small_model(&m, 6);
    ProbeRunner r;
    Error e;
    CHECK(slm_probe_runner_init(&r, &m, T_IDS, &e) == 0 && slm_probe_run(&r, clean_ids, T_IDS, NULL, &e) == 0);
    int Z = slm_model_hidden_input_dim(&m.cfg);
    double z[64], grad[64];
    for (int p = 2; p < T_IDS; p += 4)
        for (int32_t token = 0; token < 12; token += 5) {
            for (int i = 0; i < Z; i++) z[i] = r.acts.z[(size_t)p * Z + i];
            slm_probe_logit_and_grad(&m, z, token, grad);
            double worst = 0, h = 1e-4;
            for (int i = 0; i < Z; i++) {
                double keep = z[i];
                z[i] = keep + h;
                double up = slm_probe_logit_and_grad(&m, z, token, NULL);
                z[i] = keep - h;
                double down = slm_probe_logit_and_grad(&m, z, token, NULL);
                z[i] = keep;
                worst = fmax(worst, fabs((up - down) / (2 * h) - grad[i]) / fmax(1.0, fabs(grad[i])));
            }
            CHECK(worst < 1e-7);
        }
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

/* attribute's numbers are the definitions done by hand. */
static void attribute_is_the_definition(void) {
    Model m;
    small_model(&m, 7);
    ProbeRunner r;
    Error e;
    CHECK(slm_probe_runner_init(&r, &m, T_IDS, &e) == 0 && slm_probe_run(&r, clean_ids, T_IDS, NULL, &e) == 0);
    int Z = slm_model_hidden_input_dim(&m.cfg), p = 6;
    double z[64], grad[64], hidden[16], logits[12];
    for (int i = 0; i < Z; i++) z[i] = r.acts.z[(size_t)p * Z + i];
    AttributeResult a;
    CHECK(slm_probe_attribute(&m, &r.acts, p, 4, z, &a, &e) == 0); /* the mean is z itself: removing changes nothing */
    slm_probe_logits_from_z(&m, z, hidden, logits);
    CHECK(a.logit == logits[4]);
    CHECK_CLOSE(a.logit, r.acts.logits[p * 12 + 4], 1e-5, 1e-5);
    slm_probe_logit_and_grad(&m, z, 4, grad);
    double head1 = 0;
    for (int i = 6 + 5; i < 6 + 10; i++) head1 += grad[i] * z[i];
    CHECK_CLOSE(a.grad_x_act[2], head1, 1e-12, 1e-12);
    for (int i = 0; i < 6; i++) z[i] = 0; /* the row removed by hand */
    slm_probe_logits_from_z(&m, z, hidden, logits);
    CHECK_CLOSE(a.zero_effect[0], a.logit - logits[4], 1e-12, 1e-12);
    int none = 1;
    for (int k = 0; k < a.n_parts; k++) none &= a.mean_effect[k] == 0.0;
    CHECK(none);
    CHECK(isnan(a.surprisal[T_IDS - 1]));
    CHECK_CLOSE(a.surprisal[3], -log(slm_probe_probability(&r.acts, 3, clean_ids[4], NULL)), 1e-5, 1e-6);
    slm_attribute_result_free(&a); /* a failing call empties its result first */
    CHECK(slm_probe_attribute(&m, &r.acts, T_IDS, 4, NULL, &a, &e) != 0);
    CHECK(slm_probe_attribute(&m, &r.acts, -1, 4, NULL, &a, &e) != 0);
    CHECK(slm_probe_attribute(&m, &r.acts, 2, 12, NULL, &a, &e) != 0);
    /* a switched-off head adds nothing */
    Ablation ab = {.heads = check_heads(1u << 2)};
    CHECK(slm_probe_run(&r, clean_ids, T_IDS, &ab, &e) == 0);
    CHECK(slm_probe_attribute(&m, &r.acts, p, 4, NULL, &a, &e) == 0);
    CHECK(a.grad_x_act[3] == 0.0 && a.zero_effect[3] == 0.0 && isnan(a.mean_effect[3]));
    slm_attribute_result_free(&a);
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

/* Two stories packed: every tensor holds the story's own run, where the layout says. */
static void the_cache_holds_the_forward_pass(void) {
    Model m;
    small_model(&m, 8);
    int32_t ids[T_IDS + 5];
    memcpy(ids, clean_ids, sizeof clean_ids);
    memcpy(ids + T_IDS, corrupt_ids, 5 * sizeof(int32_t));
    int starts[] = {0, T_IDS, T_IDS + 5};
    ActivationCache c;
    Error e;
    CHECK(slm_probe_cache(&m, ids, starts, 2, NULL, &c, &e) == 0);
    CHECK(c.n_positions == T_IDS + 5 && c.max_distance == 8 && c.story_starts[2] == T_IDS + 5);
    ProbeRunner r;
    CHECK(slm_probe_runner_init(&r, &m, T_IDS, &e) == 0 && slm_probe_run(&r, corrupt_ids, 5, NULL, &e) == 0);
    int same = 1, N = c.n_positions;
    for (int p = 0; p < 5; p++) {
        int g = T_IDS + p;
        same &= c.tokens[g] == corrupt_ids[p];
        same &= memcmp(c.logits + g * 12, r.acts.logits + p * 12, 12 * sizeof(float)) == 0;
        same &= memcmp(c.hidden + g * 7, r.acts.hidden + p * 7, 7 * sizeof(float)) == 0;
        for (int h = 0; h < 3; h++) {
            float k[4];
            slm_activations_qkv(&r.acts, h, p, NULL, k, NULL);
            same &= memcmp(c.keys + (g * 3 + h) * 4, k, sizeof k) == 0;
            same &= memcmp(c.head_outputs + (g * 3 + h) * 5, slm_activations_head_output(&r.acts, h, p),
                           5 * sizeof(float)) == 0;
            int first, n;
            const float *w = slm_activations_attention(&r.acts, h, p, &first, &n);
            same &= c.attention[((size_t)h * N + g) * 8 + 0] == w[n - 1]; /* distance 0: itself */
            same &= c.attention[((size_t)h * N + g) * 8 + p] == w[0];     /* back to the story's [EOS] */
            for (int d = p + 1; d < 8; d++) same &= c.attention[((size_t)h * N + g) * 8 + d] == 0.0f;
        }
    }
    CHECK(same);
    CHECK(c.loss[T_IDS - 1] == 0.0f && c.loss[T_IDS] > 0.0f);
    /* the first story's last position reads only 8 back (the window) */
    double sum = 0;
    for (int d = 0; d < 8; d++) sum += c.attention[(size_t)(T_IDS - 1) * 8 + d];
    CHECK_CLOSE(sum, 1.0, 1e-5, 1e-5);
    slm_probe_runner_free(&r);
    slm_activation_cache_free(&c);
    slm_model_free(&m);
}

int main(void) {
    patching_everything_is_the_clean_run();
    a_head_that_carries_nothing_shows_nothing();
    patch_refuses_what_it_cannot_compare();
    logit_gradient_matches_finite_differences();
    attribute_is_the_definition();
    the_cache_holds_the_forward_pass();
    return check_report();
}
