/* circuits, detect and icl on hand-built models whose heads are known by
 * construction: a head whose distance score at 1 dominates is the
 * previous-token head; a head whose query and key are the identity on
 * one-hot rows reads earlier copies of its token and looks for itself; a head
 * whose value, hidden and output weights are identities copies. The scores
 * are also recomputed another way: attention maps by hand, the QK circuit by
 * dot products, the OV circuit as a finite difference of the real layers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archs.h"
#include "check.h"
#include "storylm/probe_circuits.h"
#include "storylm/probe_detect.h"
#include "storylm/probe_icl.h"
#include "storylm/probes.h"

enum { V = 12, D = 16, H = 3, KD = 16, VD = 16, W = 32, HD = 16 };

/* One-hot rows; head 0 reads the token before (distance score 20 at 1); head 1
 * reads earlier copies of its own token (query = key = 8 I, distance 0 at -30);
 * head 2 reads evenly and copies (value, its slot of the hidden layer and the
 * output layer are identities). */
static void known_model(Model *m) {
    ModelConfig c = {.arch = &slm_attention_arch,
                     .vocab_size = V,
                     .row_dim = D,
                     .n_heads = H,
                     .key_dim = KD,
                     .value_dim = VD,
                     .window = W,
                     .hidden_dim = HD,
                     .context = 8};
    Error e;
    CHECK(slm_model_init(m, &c, &e) == 0); /* zeroed */
    int Z = slm_model_hidden_input_dim(&c);
    for (int t = 0; t < V; t++) m->embedding[t * D + t] = 1;
    m->distance[0 * W + 1] = 20;
    m->distance[1 * W + 0] = -30;
    for (int i = 0; i < D; i++) {
        m->query[(1 * D + i) * KD + i] = 8;
        m->key[(1 * D + i) * KD + i] = 8;
        m->value[(2 * D + i) * VD + i] = 1;
        m->hidden_w[i * Z + D + 2 * VD + i] = 0.5f;
    }
    for (int t = 0; t < V; t++) m->output_w[t * HD + t] = 1;
}

static void small_random_model(Model *m, uint64_t seed) {
    ModelConfig c = {.arch = &slm_attention_arch,
                     .vocab_size = V,
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
    for (int i = 0; i < c.n_heads * c.window; i++) m->distance[i] = 0.5f * sinf((float)i);
}

static const int32_t hand_ids[] = {0, 3, 5, 7, 3, 9, 11, 2, 4, 3, 6, 8, 0, 0, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 11, 0};
static size_t story_starts[] = {0, 13, 26};
static int both[] = {0, 1};
static Stories two_stories(void) {
    return (Stories){
        .n_stories = 2, .ids32 = hand_ids, .starts = story_starts, .n_tokens = 26, .n_test = 2, .test = both};
}

/* "a head whose distance score at 1 dominates scores highest as a previous-token head" */
static void heads_known_by_construction_score_as_built(void) {
    Model m;
    known_model(&m);
    Stories s = two_stories();
    DetectOptions o = {.n_random = 4, .length = 10, .seed = 7};
    DetectResult d;
    Error e;
    CHECK(slm_probe_detect(&m, &s, s.test, 2, &o, NULL, &d, &e) == 0);
    CHECK(d.stories[0].previous > 0.99);
    CHECK(d.stories[0].previous > d.stories[1].previous && d.stories[0].previous > d.stories[2].previous);
    CHECK(d.random[0].previous > 0.99);
    CHECK(d.stories[1].duplicate > 0.99); /* every counted position has an earlier copy; head 1 reads only those */
    CHECK(d.random[1].duplicate > 0.99);
    CHECK(d.stories[1].duplicate > d.stories[0].duplicate && d.stories[1].duplicate > d.stories[2].duplicate);
    /* no head of one layer reads the token after an earlier copy by construction */
    for (int h = 0; h < H; h++) CHECK(d.random[h].induction < 0.5);
    CHECK(d.duplicate_positions > 0 && d.induction_positions > 0);
    CHECK(isfinite(d.loss_first) && isfinite(d.loss_second));
    slm_detect_result_free(&d);
    slm_model_free(&m);
}

/* The three scores from attention maps (slm_probe_attention_map), by hand, equal the tally's. */
static void detect_scores_are_the_attention_maps_read_by_hand(void) {
    Model m;
    small_random_model(&m, 5);
    Error e;
    ProbeRunner r;
    DetectTally t;
    CHECK(slm_probe_runner_init(&r, &m, 32, &e) == 0 && slm_detect_tally_init(&t, 3, &e) == 0);
    double prev[3] = {0}, dup[3] = {0}, ind[3] = {0}, map[26 * 26];
    long long n_prev = 0, n_dup = 0, n_ind = 0;
    for (int k = 0; k < 2; k++) {
        const int32_t *ids = hand_ids + story_starts[k];
        int T = 13;
        CHECK(slm_probe_run(&r, ids, T, NULL, &e) == 0);
        CHECK(slm_detect_tally_add(&t, &r, ids, &e) == 0);
        for (int h = 0; h < 3; h++) {
            slm_probe_attention_map(&r, h, map);
            for (int p = 0; p < T; p++) {
                int any_dup = 0, any_ind = 0;
                double wd = 0, wi = 0;
                for (int u = 0; u < p; u++) {
                    if (isnan(map[p * T + u])) continue; /* out of the window of 8 */
                    if (ids[u] == ids[p]) wd += map[p * T + u], any_dup = 1;
                    if (u >= 1 && ids[u - 1] == ids[p]) wi += map[p * T + u], any_ind = 1;
                }
                if (p >= 1) prev[h] += map[p * T + p - 1];
                dup[h] += wd, ind[h] += wi;
                if (h == 0) n_prev += p >= 1, n_dup += any_dup, n_ind += any_ind;
            }
        }
    }
    CHECK(t.n_previous == n_prev && t.n_duplicate == n_dup && t.n_induction == n_ind);
    for (int h = 0; h < 3; h++) {
        DetectScores sc = slm_detect_tally_scores(&t, h);
        CHECK_CLOSE(sc.previous, prev[h] / n_prev, 1e-6, 1e-9);
        CHECK_CLOSE(sc.duplicate, dup[h] / n_dup, 1e-6, 1e-9);
        CHECK_CLOSE(sc.induction, ind[h] / n_ind, 1e-6, 1e-9);
    }
    slm_detect_tally_free(&t);
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

/* logits (V) of the hidden and output layers at input z (Z), in double. */
static void head_layers(const Model *m, const double *z, double *logits) {
    const ModelConfig *c = &m->cfg;
    int Z = slm_model_hidden_input_dim(c);
    double y[64];
    for (int j = 0; j < c->hidden_dim; j++) {
        double pre = m->hidden_b[j];
        for (int i = 0; i < Z; i++) pre += (double)m->hidden_w[j * Z + i] * z[i];
        y[j] = tanh(pre);
    }
    for (int t = 0; t < c->vocab_size; t++) {
        logits[t] = m->output_b[t];
        for (int j = 0; j < c->hidden_dim; j++) logits[t] += (double)m->output_w[t * c->hidden_dim + j] * y[j];
    }
}

/* QK entries are the dot products; OV entries the derivative of the real
 * layers along the head's value at the mean input (central difference). */
static void circuits_are_the_products_and_the_tangent(void) {
    Model m;
    small_random_model(&m, 11);
    const ModelConfig *c = &m.cfg;
    Stories s = two_stories();
    Error e;
    int Z = slm_model_hidden_input_dim(c);
    float z_mean[64], gain[16];
    uint8_t seen[V];
    long long positions;
    CHECK(slm_circuits_mean_input(&m, &s, s.test, 2, NULL, z_mean, seen, &positions, &e) == 0);
    CHECK(positions == 26 && seen[10] == 0 && seen[11] == 1); /* token 10 never occurs */
    double row0 = 0; /* the row part of z is the token's row: its mean is the rows' mean */
    for (int i = 0; i < 26; i++) row0 += m.embedding[hand_ids[i] * c->row_dim + 0];
    CHECK_CLOSE(z_mean[0], row0 / 26, 1e-5, 1e-6);
    slm_circuits_gain(&m, z_mean, gain);
    float *scratch = malloc(slm_circuit_scratch_size(c) * sizeof(float)), qk[V * V], ov[V * V];
    for (int h = 0; h < c->n_heads; h++) {
        slm_circuit_qk(&m, 0, h, scratch, qk);
        slm_circuit_ov(&m, 0, h, gain, scratch, ov);
        double worst_qk = 0, worst_ov = 0;
        for (int a = 0; a < V; a++) {
            double q[4] = {0}, v[5] = {0}, zp[64], zm[64], lp[V], lm[V];
            for (int i = 0; i < c->row_dim; i++)
                for (int j = 0; j < 4; j++) q[j] += m.embedding[a * 6 + i] * m.query[(h * 6 + i) * 4 + j];
            for (int i = 0; i < c->row_dim; i++)
                for (int j = 0; j < 5; j++) v[j] += m.embedding[a * 6 + i] * m.value[(h * 6 + i) * 5 + j];
            for (int b = 0; b < V; b++) {
                double k = 0;
                for (int j = 0; j < 4; j++) {
                    double kj = 0;
                    for (int i = 0; i < 6; i++) kj += m.embedding[b * 6 + i] * m.key[(h * 6 + i) * 4 + j];
                    k += q[j] * kj;
                }
                worst_qk = fmax(worst_qk, fabs(k / 2 - qk[a * V + b]));
            }
            const double eps = 1e-4;
            for (int i = 0; i < Z; i++) zp[i] = zm[i] = z_mean[i];
            for (int j = 0; j < 5; j++) zp[6 + h * 5 + j] += eps * v[j], zm[6 + h * 5 + j] -= eps * v[j];
            head_layers(&m, zp, lp);
            head_layers(&m, zm, lm);
            for (int b = 0; b < V; b++) worst_ov = fmax(worst_ov, fabs((lp[b] - lm[b]) / (2 * eps) - ov[a * V + b]));
        }
        CHECK(worst_qk < 1e-4);
        CHECK(worst_ov < 1e-3);
    }
    free(scratch);
    slm_model_free(&m);
}

/* Looking for itself and copying, by construction; the top pairs are the diagonal. */
static void self_scores_by_construction(void) {
    Model m;
    known_model(&m);
    Stories s = two_stories();
    Error e;
    float z_mean[64];
    uint8_t seen[V];
    long long positions;
    CircuitsResult cr;
    CHECK(slm_circuits_mean_input(&m, &s, s.test, 2, NULL, z_mean, seen, &positions, &e) == 0);
    int32_t reads[2] = {3, 7};
    CircuitsOptions co = {.top = 5, .reads = reads, .n_reads = 2, .read_top = 2};
    CHECK(slm_probe_circuits(&m, z_mean, seen, &co, &cr, &e) == 0);
    CHECK(cr.n_heads == 3);
    CHECK(cr.heads[1].qk_self[0].top1 == 1.0 && cr.heads[1].qk_self[0].tokens == V);
    CHECK(cr.heads[1].qk[0].from == cr.heads[1].qk[0].to && fabsf(cr.heads[1].qk[0].value - 16) < 1e-4);
    CHECK(cr.heads[0].qk_self[0].top1 == 0 && cr.heads[0].qk_self[0].above_mean == 0); /* all scores equal: no win */
    CHECK(cr.heads[2].copy[0].top1 == 1.0 && cr.heads[2].copy[1].top1 == 1.0);
    CHECK(cr.heads[2].ov[0].from == cr.heads[2].ov[0].to && cr.heads[2].ov[0].centred > 0);
    CHECK(cr.heads[0].copy[0].top1 == 0);    /* head 0 has no value weights: it changes nothing */
    CHECK(cr.heads[1].copy[1].tokens == 11); /* the tokens seen: all but 10 */
    /* reading token 3 or 7 with the copying head raises that token most */
    CHECK(cr.heads[2].reads[0].from == 3 && cr.heads[2].reads[0].to == 3 && cr.heads[2].reads[2].to == 7);
    CHECK(cr.heads[2].reads[1].value <= cr.heads[2].reads[0].value);
    slm_circuits_result_free(&cr);
    co = (CircuitsOptions){.top = 3, .heads = check_heads(1u << 2)};
    CHECK(slm_probe_circuits(&m, z_mean, seen, &co, &cr, &e) == 0);
    CHECK(cr.n_heads == 1 && cr.heads[0].head == 2);
    slm_circuits_result_free(&cr);
    slm_model_free(&m);
}

static void icl_is_the_loss_by_position(void) {
    Model m;
    small_random_model(&m, 3);
    Stories s = two_stories();
    Error e;
    ProbeRunner r;
    CHECK(slm_probe_runner_init(&r, &m, 16, &e) == 0);
    double by_hand[12] = {0};
    for (int k = 0; k < 2; k++) {
        CHECK(slm_probe_run(&r, hand_ids + story_starts[k], 13, NULL, &e) == 0);
        for (int p = 0; p < 12; p++) by_hand[p] += r.acts.loss[p] / 2;
    }
    IclOptions o = {.early = 3, .late = 500, .band = 1, .min_stories = 2};
    IclResult res;
    CHECK(slm_probe_icl(&m, &s, s.test, 2, &o, NULL, &res, &e) == 0);
    CHECK(res.n_positions == 12 && res.last == 11 && res.late == 11 && res.late_clipped && !res.early_clipped);
    for (int p = 0; p < 12; p++) CHECK_CLOSE(res.loss[p], by_hand[p], 1e-6, 1e-9);
    double early = (by_hand[2] + by_hand[3] + by_hand[4]) / 3, late = (by_hand[10] + by_hand[11]) / 2;
    CHECK_CLOSE(res.early_loss, early, 1e-6, 1e-9);
    CHECK_CLOSE(res.score, late - early, 1e-6, 1e-9);
    CHECK_CLOSE(res.paired_score, late - early, 1e-6, 1e-9); /* both stories reach the end */
    slm_icl_result_free(&res);
    o.early = 20; /* the stories are too short */
    CHECK(slm_probe_icl(&m, &s, s.test, 2, &o, NULL, &res, &e) != 0 && strstr(e.message, "too short"));
    Ablation ab = {.heads = check_heads(1u << 1)};
    o.early = 3;
    CHECK(slm_probe_icl(&m, &s, s.test, 2, &o, &ab, &res, &e) == 0 && fabs(res.loss[5] - by_hand[5]) > 1e-6);
    slm_icl_result_free(&res);
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

static void window8_is_refused_where_it_has_no_heads(void) {
    Model m;
    ModelConfig c = slm_model_config_default(&slm_window8_arch, V);
    Error e;
    CHECK(slm_model_init(&m, &c, &e) == 0);
    slm_model_randomize(&m, 1);
    Stories s = two_stories();
    DetectOptions o = {.n_random = 1, .length = 10, .seed = 1};
    DetectResult d;
    CircuitsResult cr;
    float z[256] = {0};
    CHECK(slm_probe_detect(&m, &s, s.test, 2, &o, NULL, &d, &e) != 0 && strstr(e.message, "attention network"));
    CircuitsOptions co = {.top = 3};
    CHECK(slm_probe_circuits(&m, z, NULL, &co, &cr, &e) != 0 && strstr(e.message, "attention network"));
    IclOptions io = {.early = 2, .late = 8, .band = 0, .min_stories = 1};
    IclResult res;
    CHECK(slm_probe_icl(&m, &s, s.test, 2, &io, NULL, &res, &e) == 0 &&
          isfinite(res.score)); /* icl works for window8 */
    slm_icl_result_free(&res);
    slm_model_free(&m);
    Model a;
    known_model(&a);
    o.length = 16; /* 2 * 16 + 1 = 33 keys do not fit a window of 32 */
    CHECK(slm_probe_detect(&a, &s, s.test, 2, &o, NULL, &d, &e) != 0 && strstr(e.message, "window"));
    slm_model_free(&a);
}

int main(void) {
    heads_known_by_construction_score_as_built();
    detect_scores_are_the_attention_maps_read_by_hand();
    circuits_are_the_products_and_the_tangent();
    self_scores_by_construction();
    icl_is_the_loss_by_position();
    window8_is_refused_where_it_has_no_heads();
    return check_report();
}
