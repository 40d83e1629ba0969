/* --arch attn-only: TransformerLens's attn_only=True (the attn-only-2l family
 * in which Olsson et al. found induction heads). For a story of ids x_t, D =
 * d_model, H heads of d_head, L blocks:
 *   resid_0   = W_E[x_t] (+ W_pos[min(t, n_ctx-1)] with --position-scheme absolute)
 *   block l:  resid_post = resid_pre + attn(LN1(resid_pre))      (no MLP)
 *   logits    = LN_final(resid_L) W_U + b_U
 * with the transformer's attention, LayerNorm and tensor names. The module is
 * a composition of the transformer's parts (src/arch/transformer/tf_parts.h):
 * its tensors are the embedding's, each block's attention part's and the
 * final LN's and unembedding's; its blocks are attention parts; its generator
 * steps the same parts. d_mlp (ModelConfig.hidden_dim) is 0. */
#include <stdio.h>

#include "../transformer/tf_parts.h"
#include "storylm/arch.h"
#include "storylm/generator_batch.h"
#include "storylm/hooks.h"
#include "storylm/position.h"
#include "../transformer/transformer_params.h"

extern const Architecture slm_attn_only_arch;
extern const ProbeOps slm_transformer_probe_ops; /* the transformer's: a block without an MLP reads the same */

/* ---- configuration ------------------------------------------------------- */

/* The transformer's default shape without the MLP: 2 blocks, d_model 64, 8
 * heads of 8, n_ctx 256, --position-scheme absolute: 308,048 parameters at 2,000 tokens. */
static ModelConfig config_default(int vocab_size) {
    ModelConfig c = slm_transformer_config_default(vocab_size);
    c.arch = &slm_attn_only_arch, c.hidden_dim = 0; /* no MLP */
    return c;
}

static int config_check(const ModelConfig *c, Error *e) {
    if (slm_tf_check_sizes(c, e)) return -1;
    if (c->hidden_dim != 0)
        return FAIL(e, "train --arch transformer for blocks with an MLP", "an attn-only model has no MLP (d_mlp %d)",
                    c->hidden_dim);
    return 0;
}

/* --d-model, --n-heads, --d-head (the default's where 0) and --tie-embeddings; it has no --d-mlp or --act. */
static void config_shape(ModelConfig *c, const ConfigShape *s) {
    c->tie_embeddings = s->tie != 0;
    c->row_dim = s->d_model > 0 ? s->d_model : c->row_dim;
    c->n_heads = s->heads > 0 ? s->heads : c->n_heads;
    c->key_dim = c->value_dim = s->d_head > 0 ? s->d_head : c->key_dim;
}

/* The metadata keys it writes (the family's config_write): the transformer's without act_fn and d_mlp. */
static const char *const config_keys[] = {"pos",     "score",   "layers",         "positional_embedding_type",
                                          "d_model", "n_heads", "d_head",         "n_layers",
                                          "n_ctx",   "d_vocab", "tie_embeddings", NULL};

static void describe(const ModelConfig *c, char *buf, size_t size) {
    snprintf(buf, size,
             "architecture  attn-only: %d pre-LN attention blocks (no MLP), d_model %d, %d heads of %d, n_ctx %d\n"
             "variant       --position-scheme %s%s (docs/transformer.md)\n",
             c->n_layers, c->row_dim, c->n_heads, c->key_dim, c->window, slm_pos_name(c->pos),
             c->tie_embeddings ? " --tie-embeddings (W_U = W_E^T)" : "");
}

/* ---- parameters: the embedding, each block's attention (and its scheme's
 * scores), the final LN and unembedding -------------------------------------- */

static void layout(Model *m) {
    slm_tf_layout_embed(m);
    for (int l = 0; l < m->cfg.n_layers; l++) {
        slm_tf_layout_attn(m, l);
        slm_tf_layout_scores(m, l);
    }
    slm_tf_layout_final(m);
}

/* ---- the passes: each block its attention part, straight into resid_post ---- */

static void blocks_forward(const Model *m, const TfViews *w, Activations *a) {
    for (int l = 0; l < m->cfg.n_layers; l++) {
        slm_hooks_at(m, a, HOOK_RESID_PRE, l);
        slm_tf_attn_forward(m, &w->block[l], a, l, slm_tf_resid_post(a, l));
        slm_hooks_at(m, a, HOOK_RESID_POST, l);
    }
}

static void blocks_backward(const ModelConfig *c, const TfViews *w, const TfViews *g, Activations *a) {
    for (int l = c->n_layers - 1; l >= 0; l--) slm_tf_attn_backward(c, &w->block[l], &g->block[l], a, l);
}

static const TfBlocks blocks = {blocks_forward, blocks_backward};

static int forward(const Model *m, Activations *a, const Batch *b, const Ablation *ab, int to_logits, Error *e) {
    (void)to_logits; /* its logits come with the final LN's output, cheaply enough */
    return slm_tf_forward(&blocks, m, a, b, ab, e);
}

static int loss_and_grad(const Model *m, Activations *a, const Batch *b, const Ablation *ab, float scale, float *grads,
                         Error *e) {
    return slm_tf_loss_and_grad(&blocks, m, a, b, ab, scale, grads, e);
}

static void backward(const Model *m, Activations *a, const Batch *b, float *grads) {
    slm_tf_backward(&blocks, m, a, b, grads);
}

/* TransformerLens's points of an attn_only model, in the pass's order (no
 * hook_resid_mid, no mlp; hook_pos_embed only where W_pos is). */
static void hook_points(const ModelConfig *c, HookPoints *out) {
    *out = (HookPoints){.before = {HOOK_EMBED, HOOK_POS_EMBED},
                        .n_before = c->pos == POS_ABSOLUTE ? 2 : 1,
                        .block = {HOOK_RESID_PRE, HOOK_LN1_SCALE, HOOK_LN1_NORMALIZED, HOOK_Q, HOOK_K, HOOK_V,
                                  HOOK_ATTN_SCORES, HOOK_PATTERN, HOOK_Z, HOOK_RESULT, HOOK_ATTN_OUT, HOOK_RESID_POST},
                        .n_block = 12,
                        .after = {HOOK_LN_FINAL_SCALE, HOOK_LN_FINAL, HOOK_LOGITS},
                        .n_after = 3,
                        .layers = c->n_layers};
}

/* ---- generation: the same parts, one token at a time ---------------------- */

static void generator_feed(GeneratorBatch *g, const int *which, const int32_t *tokens, int k, int first) {
    (void)first; /* each sample's scratch is its own row */
    slm_tf_gen_embed(g, which, tokens, k);
    for (int l = 0; l < g->model->cfg.n_layers; l++) {
        slm_tf_gen_steer_resid(g, HOOK_RESID_PRE, l, which, k);
        slm_tf_gen_attn(g, l, which, k);
        slm_tf_gen_steer_resid(g, HOOK_RESID_POST, l, which, k);
    }
    slm_tf_gen_final(g, which, k);
}

static const GeneratorOps generator = {
    .init = slm_tf_generator_init,
    .free = slm_tf_generator_free,
    .copy = slm_tf_generator_copy,
    .feed = generator_feed,
    .set_precision = slm_tf_generator_set_precision,
    .steer_points = SLM_TF_STEER_POINTS,
};

const Architecture slm_attn_only_arch = {
    .name = "attn-only",
    .summary = "pre-LN blocks of attention alone, no MLP: TransformerLens's attn_only, docs/transformer.md",
    .readout = READOUT_RESIDUAL,
    .takes = TAKES_POSITIONS | TAKES_LAYERS | TAKES_BF16,
    .max_layers = STORYLM_MAX_TF_LAYERS,
    .config_shape = config_shape,
    .config_default = config_default,
    .config_check = config_check,
    .config_write = slm_tf_config_write,
    .config_read = slm_tf_config_read,
    .config_keys = config_keys,
    .layers = slm_tf_layers,
    .describe = describe,
    .heads_per_layer = slm_tf_heads_per_layer,
    .context_needed = slm_tf_context_needed,
    .layout = layout,
    .bind_views = slm_transformer_bind_views,
    .randomize = slm_transformer_randomize,
    .activations_init = slm_transformer_activations_init,
    .activations_free = slm_transformer_activations_free,
    .forward = forward,
    .loss_and_grad = loss_and_grad,
    .backward = backward,
    .hook_points = hook_points,
    .hook_move = slm_tf_hook_move,
    .layer_qkv = slm_tf_layer_qkv,
    .layer_attention = slm_tf_layer_attention,
    .head_output = slm_tf_head_output,
    .probes = &slm_transformer_probe_ops,
    .generator = &generator,
};
