/* The probes on a transformer, against sums written here in double from the
 * tensors and the forward's activations (nothing shared with src/probes):
 * attend's dot, distance score and weight of every key of block 2
 * (q.k/sqrt(d_head) of LN1's output times W_Q, W_K plus the biases; the t5
 * bucket's score; softmax); trace's MLP neuron parts: the shares of
 * resid_pre and of each head's z_h W_O[h] in LN2's output (its scale frozen),
 * which with b_O's share, LN2's b and b_in add up to the neuron's input
 * (hook_pre), and the part trace names is the one that pushes it hardest;
 * mean ablation: each head's mean hook_z over two stories, averaged here by
 * hand, and a head switched off to it gives the logits of a hook that writes
 * that mean into its hook_z, bit for bit; attribute's direct logit
 * attribution of each head and MLP (written here from TransformerLens's
 * recipe: the part centred, times the final LN's 1/scale computed here from
 * resid_post, times ln_final.w, dotted with W_U[:, token]), and the parts'
 * attributions plus ln_final.b W_U + b_U adding up to the forward's logit;
 * circuits: every entry of block 2's QK and OV circuits against the products
 * written here in double (attribute and circuits also with tied embeddings,
 * W_U read here as W_E transposed); stats: block 2's head 1's correlation of q.k with
 * the rows' cosine against Pearson's formula over the pairs by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "storylm/hooks.h"
#include "storylm/model.h"
#include "storylm/probe_attribute.h"
#include "storylm/probe_circuits.h"
#include "storylm/probes.h"
#include "storylm/rng.h"
#include "transformer/transformer.h"

enum { T = 7, D = 6, H = 2, DH = 4, F = 8, V = 11 };

/* A tiny transformer of two blocks with random weights (seed 7), ids (T) run
 * through it into r; tie: --tie-embeddings (W_U is W_E transposed). */
static void setup_tied(Model *m, PosScheme pos, int tie, const int32_t *ids, ProbeRunner *r) {
    ModelConfig c = slm_transformer_config_default(V);
    c.row_dim = D, c.n_heads = H, c.key_dim = c.value_dim = DH, c.hidden_dim = F, c.window = 5, c.n_layers = 2;
    c.pos = pos, c.tie_embeddings = tie;
    Error e = {0};
    CHECK(slm_model_init(m, &c, &e) == 0);
    Rng rng;
    slm_rng_seed(&rng, 7);
    for (size_t i = 0; i < m->n_params; i++) m->params[i] = (float)(0.6 * slm_rng_normal(&rng));
    CHECK(slm_probe_runner_init(r, m, T, &e) == 0);
    CHECK(slm_probe_run(r, ids, T, NULL, &e) == 0);
}

static void setup(Model *m, PosScheme pos, const int32_t *ids, ProbeRunner *r) { setup_tied(m, pos, 0, ids, r); }

/* W_U[i, token] read from the table by name (not the passes' views): W_E[token, i] when the model is tied. */
static double ref_W_U(const Model *m, int i, int32_t token) {
    const ParamTensor *u = slm_model_tensor(m, "unembed.W_U"), *E = slm_model_tensor(m, "embed.W_E");
    return u ? m->params[u->offset + (size_t)i * V + token] : m->params[E->offset + (size_t)token * D + i];
}

/* Head h of block l at position p reading key u: q.k / sqrt(dh), from LN1's output. */
static double ref_dot(const TfBlockViews *w, const float *ln1, int h, int p, int u) {
    double q[DH], k[DH], dot = 0;
    for (int j = 0; j < DH; j++) {
        q[j] = w->b_Q[h * DH + j], k[j] = w->b_K[h * DH + j];
        for (int i = 0; i < D; i++) {
            q[j] += (double)ln1[p * D + i] * w->W_Q[(h * D + i) * DH + j];
            k[j] += (double)ln1[u * D + i] * w->W_K[(h * D + i) * DH + j];
        }
        dot += q[j] * k[j];
    }
    return dot / sqrt(DH);
}

static void check_attend(void) {
    Model m;
    ProbeRunner r;
    Error e = {0};
    const int32_t ids[T] = {1, 4, 9, 4, 2, 10, 4};
    setup(&m, POS_T5, ids, &r);
    CHECK(slm_probe_runner_layer(&r, 3, &e) == -1); /* two blocks */
    CHECK(slm_probe_runner_layer(&r, 2, &e) == 0 && r.layer == 1);
    TfViews v;
    slm_transformer_views(&m, m.params, &v);
    const TfBlockViews *w = &v.block[1];
    AttendKey keys[8];
    for (int h = 0; h < H; h++)
        for (int p = 0; p < T; p++) {
            int n = slm_probe_attend(&r, h, p, keys), first = p - 4 > 0 ? p - 4 : 0; /* n_ctx 5 */
            CHECK(n == p - first + 1);
            double s[8], max = -1e30, sum = 0;
            for (int j = 0; j < n; j++) {
                int d = p - (first + j);
                s[j] =
                    ref_dot(w, r.acts.tf->layer[1].ln1, h, p, first + j) + w->bucket[h * T5_BUCKETS + slm_t5_bucket(d)];
                max = fmax(max, s[j]);
                CHECK(keys[j].position == first + j && keys[j].distance == d);
                CHECK_CLOSE(keys[j].dot + keys[j].distance_score, s[j], 1e-4, 1e-5);
                CHECK_CLOSE(keys[j].distance_score, w->bucket[h * T5_BUCKETS + slm_t5_bucket(d)], 0, 0);
            }
            for (int j = 0; j < n; j++) sum += exp(s[j] - max);
            for (int j = 0; j < n; j++) CHECK_CLOSE(keys[j].weight, exp(s[j] - max) / sum, 1e-4, 1e-6);
        }
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

/* share (D) of x in LN2's output at position p, its scale rstd frozen: w2 * rstd * (x - mean x). */
static void ref_share(const double *x, const float *w2, double rstd, double *share) {
    double mean = 0;
    for (int i = 0; i < D; i++) mean += x[i] / D;
    for (int i = 0; i < D; i++) share[i] = w2[i] * rstd * (x[i] - mean);
}

static void check_trace(void) {
    Model m;
    ProbeRunner r;
    Error e = {0};
    const int32_t ids[T] = {1, 3, 5, 7, 3, 5, 2};
    setup(&m, POS_ABSOLUTE, ids, &r);
    TfViews v;
    slm_transformer_views(&m, m.params, &v);
    for (int l = 0; l < 2; l++) {
        CHECK(slm_probe_runner_layer(&r, l + 1, &e) == 0);
        const TfBlockViews *w = &v.block[l];
        const TfLayerActs *L = &r.acts.tf->layer[l];
        for (int p = 0; p < T; p++) {
            /* the parts: resid_pre, each head's z_h W_O[h], b_O; their LN2 shares */
            double x[H + 2][D], share[H + 2][D], rstd = 0, mean = 0;
            for (int i = 0; i < D; i++) x[0][i] = L->resid_pre[p * D + i], x[H + 1][i] = w->b_O[i];
            for (int h = 0; h < H; h++)
                for (int i = 0; i < D; i++) {
                    x[1 + h][i] = 0;
                    for (int j = 0; j < DH; j++)
                        x[1 + h][i] += (double)L->z[p * H * DH + h * DH + j] * w->W_O[(h * DH + j) * D + i];
                }
            double mid[D];
            for (int i = 0; i < D; i++) {
                mid[i] = 0;
                for (int k = 0; k < H + 2; k++) mid[i] += x[k][i];
                mean += mid[i] / D;
            }
            for (int i = 0; i < D; i++) rstd += (mid[i] - mean) * (mid[i] - mean) / D;
            rstd = 1 / sqrt(rstd + 1e-5);
            for (int k = 0; k < H + 2; k++) ref_share(x[k], w->ln2_w, rstd, share[k]);
            TraceResult t;
            CHECK(slm_probe_trace(&r, p, F, 3, &t, &e) == 0);
            CHECK(t.layer == l && t.n_inputs == D + H * DH);
            for (int k = 0; k < F; k++) {
                int u = t.units[k].unit;
                double in[H + 2], pre = w->b_in[u];
                for (int part = 0; part < H + 2; part++) {
                    in[part] = 0;
                    for (int i = 0; i < D; i++) in[part] += share[part][i] * w->W_in[i * F + u];
                    pre += in[part];
                }
                for (int i = 0; i < D; i++) pre += (double)w->ln2_b[i] * w->W_in[i * F + u];
                CHECK_CLOSE(pre, L->mlp_pre[p * F + u], 1e-4, 1e-5); /* the shares add up to hook_pre */
                CHECK_CLOSE(t.units[k].value, L->mlp_post[p * F + u], 0, 0);
                int best = 0;
                for (int part = 1; part <= H; part++) best = fabs(in[part]) > fabs(in[best]) ? part : best;
                CHECK(t.units[k].part == best - 1);
                CHECK_CLOSE(t.units[k].part_input, in[best], 1e-4, 1e-5);
            }
            slm_trace_result_free(&t);
        }
    }
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

/* hook_z [T, H, dh] of block 1 (ctx: the means (layers*H, dh)): head 1 set to block 1's head 1's mean. */
static int mean_hook(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable) {
    (void)name, (void)ndim, (void)writable;
    const float *mean = ctx;
    for (int t = 0; t < shape[0]; t++) memcpy(data + (t * H + 1) * DH, mean + (H + 1) * DH, DH * sizeof(float));
    return 1;
}

static void check_mean_ablation(void) {
    static const int32_t ids[2 * T] = {1, 3, 5, 7, 3, 5, 2, 1, 4, 9, 4, 2, 10, 4};
    static size_t starts[] = {0, T, 2 * T};
    static int both[] = {0, 1};
    Stories st = {.n_stories = 2, .ids32 = ids, .starts = starts, .n_tokens = 2 * T, .n_test = 2, .test = both};
    Model m;
    ProbeRunner r;
    Error e = {0};
    setup(&m, POS_ROPE, ids, &r);
    float mean[2 * H * DH], clean[T * V];
    CHECK(slm_probe_head_means(&m, &st, st.test, 2, mean, &e) == 0);
    double sum = 0; /* block 1's head 1, component 2, over both stories by hand */
    for (int k = 0; k < 2; k++) {
        CHECK(slm_probe_run(&r, ids + k * T, T, NULL, &e) == 0);
        for (int p = 0; p < T; p++) sum += r.acts.tf->layer[1].z[p * H * DH + 1 * DH + 2];
    }
    CHECK_CLOSE(mean[(H + 1) * DH + 2], sum / (2 * T), 1e-5, 1e-6);
    const char *names[] = {"blocks.1.attn.hook_z"};
    ForwardHooks hooks = {.fn = mean_hook, .ctx = mean, .names = names, .n_names = 1};
    r.acts.hooks = &hooks;
    CHECK(slm_probe_run(&r, ids, T, NULL, &e) == 0);
    memcpy(clean, r.acts.logits, sizeof clean);
    r.acts.hooks = NULL;
    Ablation ab = {
        .heads = check_heads(1u << (H + 1)), .mode = ABLATE_MEAN, .mean = mean}; /* --ablate 2:1 --ablate-mode mean */
    CHECK(slm_probe_run(&r, ids, T, &ab, &e) == 0);
    CHECK(memcmp(clean, r.acts.logits, sizeof clean) == 0);
    slm_hooks_free(&hooks);
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

/* Block l's head h (h = H: the MLP) at position p, its direct logit attribution for token. */
static double ref_dla(const Model *m, const Activations *a, int l, int h, int p, int32_t token) {
    TfViews w;
    slm_transformer_views(m, m->params, &w);
    const TfLayerActs *L = &a->tf->layer[l];
    const float *final = a->tf->resid_final + p * D; /* the final LN's input */
    double part[D] = {0}, mean = 0, var = 0, pm = 0, dla = 0;
    for (int i = 0; i < D; i++) mean += final[i] / (double)D;
    for (int i = 0; i < D; i++) var += (final[i] - mean) * (final[i] - mean) / D;
    for (int i = 0; i < D; i++) {
        if (h < H)
            for (int j = 0; j < DH; j++)
                part[i] += (double)L->z[p * H * DH + h * DH + j] * w.block[l].W_O[(h * DH + j) * D + i];
        else
            for (int f = 0; f < F; f++) part[i] += (double)L->mlp_post[p * F + f] * w.block[l].W_out[f * D + i];
        if (h == H) part[i] += w.block[l].b_out[i];
        pm += part[i] / D;
    }
    for (int i = 0; i < D; i++) dla += (part[i] - pm) / sqrt(var + 1e-5) * w.ln_final_w[i] * ref_W_U(m, i, token);
    return dla;
}

static void check_attribute(int tie) {
    Model m;
    ProbeRunner r;
    Error e = {0};
    const int32_t ids[T] = {1, 6, 2, 8, 6, 2, 3};
    setup_tied(&m, POS_ALIBI, tie, ids, &r);
    CHECK(slm_probe_mean_z_len(&m.cfg) == (size_t)(2 + 2 * (H + 2)) * D);
    for (int p = 0; p < T; p++)
        for (int32_t token = 0; token < V; token += 3) {
            AttributeResult ar;
            CHECK(slm_probe_attribute(&m, &r.acts, p, token, NULL, &ar, &e) == 0);
            CHECK(ar.n_parts == 2 + 2 * (H + 2) && strcmp(ar.names[2 + H + 2], "head 2:0") == 0);
            CHECK_CLOSE(ar.direct_sum, r.acts.logits[p * V + token], 1e-4, 1e-4); /* the parts add up to the logit */
            for (int l = 0; l < 2; l++) {
                int at = 2 + l * (H + 2);
                for (int h = 0; h < H; h++)
                    CHECK_CLOSE(ar.grad_x_act[at + h], ref_dla(&m, &r.acts, l, h, p, token), 1e-4, 1e-5);
                CHECK_CLOSE(ar.grad_x_act[at + H + 1], ref_dla(&m, &r.acts, l, H, p, token), 1e-4, 1e-5);
                CHECK(isnan(ar.mean_effect[at]));
            }
            slm_attribute_result_free(&ar);
        }
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

static void check_circuits(int tie) {
    Model m;
    ProbeRunner r;
    const int32_t ids[T] = {1, 2, 3, 4, 5, 6, 7};
    setup_tied(&m, POS_ROPE, tie, ids, &r);
    TfViews w;
    slm_transformer_views(&m, m.params, &w);
    const TfBlockViews *b = &w.block[1];
    float *scratch = malloc(slm_circuit_scratch_size(&m.cfg) * sizeof(float)), qk[V * V], ov[V * V];
    double worst_qk = 0, worst_ov = 0;
    for (int h = 0; h < H; h++) {
        slm_circuit_qk(&m, 1, h, scratch, qk);
        slm_circuit_ov(&m, 1, h, NULL, scratch, ov);
        for (int s = 0; s < V; s++)
            for (int t = 0; t < V; t++) {
                double q[DH] = {0}, k[DH] = {0}, v[DH] = {0}, out[D] = {0}, dot = 0, logit = 0;
                for (int j = 0; j < DH; j++)
                    for (int i = 0; i < D; i++) {
                        double es = (double)w.W_E[s * D + i] * b->ln1_w[i], et = (double)w.W_E[t * D + i] * b->ln1_w[i];
                        q[j] += es * b->W_Q[(h * D + i) * DH + j];
                        k[j] += et * b->W_K[(h * D + i) * DH + j];
                        v[j] += es * b->W_V[(h * D + i) * DH + j];
                    }
                for (int j = 0; j < DH; j++) dot += q[j] * k[j] / sqrt(DH);
                for (int i = 0; i < D; i++) {
                    for (int j = 0; j < DH; j++) out[i] += v[j] * b->W_O[(h * DH + j) * D + i];
                    logit += out[i] * w.ln_final_w[i] * ref_W_U(&m, i, t);
                }
                worst_qk = fmax(worst_qk, fabs(qk[s * V + t] - dot));
                worst_ov = fmax(worst_ov, fabs(ov[s * V + t] - logit));
            }
    }
    CHECK(worst_qk < 1e-4 && worst_ov < 1e-4);
    free(scratch);
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

static void check_stats(void) {
    static const int32_t ids[T] = {1, 6, 2, 8, 6, 2, 3};
    static size_t starts[] = {0, T};
    static int one[] = {0};
    Stories st = {.n_stories = 1, .ids32 = ids, .starts = starts, .n_tokens = T, .n_test = 1, .test = one};
    Model m;
    ProbeRunner r;
    Error e = {0};
    setup(&m, POS_ALIBI, ids, &r);
    uint8_t left_out[V] = {0};
    StatsResult sr;
    CHECK(slm_probe_stats(&m, &st, one, 1, left_out, &sr, &e) == 0);
    CHECK(sr.n_heads == 2 * H);
    TfViews w;
    slm_transformer_views(&m, m.params, &w);
    double n = 0, sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (int p = 0; p < T; p++)
        for (int u = p - 4 > 0 ? p - 4 : 0; u <= p; u++) { /* n_ctx 5 */
            double x = ref_dot(&w.block[1], r.acts.tf->layer[1].ln1, 1, p, u), y, ab = 0, aa = 0, bb = 0;
            for (int i = 0; i < D; i++) {
                double a = w.W_E[ids[p] * D + i], b = w.W_E[ids[u] * D + i];
                ab += a * b, aa += a * a, bb += b * b;
            }
            y = ab / sqrt(aa * bb);
            n++, sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
        }
    double want = (sxy - sx * sy / n) / sqrt((sxx - sx * sx / n) * (syy - sy * sy / n));
    CHECK(sr.pairs == (long long)n);
    CHECK_CLOSE(sr.correlation[H + 1], want, 1e-4, 1e-5);
    slm_stats_result_free(&sr);
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

/* An architecture whose ProbeOps lack what a probe reads is refused by that probe, naming it; the
 * transformer's table with its trace, circuits and attribution operations taken out stands in. */
static void check_missing_ops_refused(void) {
    Model m;
    ProbeRunner r;
    Error e = {0};
    const int32_t ids[T] = {1, 3, 5, 7, 3, 5, 2};
    setup(&m, POS_ABSOLUTE, ids, &r);
    ProbeOps ops = *m.cfg.arch->probes;
    ops.trace_layer = NULL, ops.circuit_qk = NULL, ops.resid_parts = NULL;
    Architecture lacking = *m.cfg.arch;
    lacking.probes = &ops;
    lacking.name = "lacking";
    m.cfg.arch = r.acts.cfg.arch = &lacking;
    TraceResult t;
    CHECK(slm_probe_trace(&r, 3, 4, 4, &t, &e) == -1);
    CHECK(strstr(e.message, "the trace of a layer means nothing for a lacking model") != NULL);
    CircuitsResult cr;
    CircuitsOptions co = {.top = 3};
    CHECK(slm_probe_circuits(&m, NULL, NULL, &co, &cr, &e) == -1);
    CHECK(strstr(e.message, "circuits means nothing for a lacking model") != NULL);
    AttributeResult ar;
    CHECK(slm_probe_attribute(&m, &r.acts, 3, 2, NULL, &ar, &e) == -1);
    CHECK(strstr(e.message, "attribution means nothing for a lacking model") != NULL);
    slm_probe_runner_free(&r);
    slm_model_free(&m);
}

int main(void) {
    check_missing_ops_refused();
    check_stats();
    check_circuits(0);
    check_circuits(1); /* --tie-embeddings: OV reads W_U = W_E^T */
    check_attribute(0);
    check_attribute(1);
    check_attend();
    check_trace();
    check_mean_ablation();
    return check_report();
}
