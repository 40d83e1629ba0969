/* The transformer's table of operations (arch.h): its metadata keys (as
 * TransformerLens's HookedTransformerConfig names them), its hook points
 * in TransformerLens's names, and where a run's attention lies. The passes
 * are transformer.c's, the parameters transformer_params.c's. */
#include <stdio.h>
#include <string.h>

#include "../arch_shared.h"
#include "tf_parts.h"
#include "storylm/arch.h"
#include "storylm/generator_batch.h"
#include "storylm/model_params.h"
#include "storylm/position.h"
#include "storylm/score.h"
#include "transformer.h"

/* ---- configuration: its metadata keys ------------------------------------- */

int slm_tf_layers(const ModelConfig *c) { return c->n_layers > 1 ? c->n_layers : 1; }

int slm_tf_heads_per_layer(const ModelConfig *c) { return c->n_heads; }

/* n_ctx - 1 keys a block, as the attention network's layers. */
int slm_tf_context_needed(const ModelConfig *c) { return slm_tf_layers(c) * (c->window - 1); }

/* --d-model, --n-heads, --d-head, --d-mlp, --act and --tie-embeddings: the default's where a flag gives none. */
static void config_shape(ModelConfig *c, const ConfigShape *s) {
    c->tie_embeddings = s->tie != 0;
    c->row_dim = s->d_model > 0 ? s->d_model : c->row_dim;
    c->n_heads = s->heads > 0 ? s->heads : c->n_heads;
    c->key_dim = c->value_dim = s->d_head > 0 ? s->d_head : c->key_dim;
    c->hidden_dim = s->d_mlp > 0 ? s->d_mlp : c->hidden_dim;
    c->act = s->act;
}

/* TransformerLens's name of a position scheme ("rotary", "alibi",
 * "standard"; storylm's own name for the schemes it lacks). */
static const char *tl_positional(PosScheme pos) {
    return pos == POS_ROPE       ? "rotary"
           : pos == POS_ABSOLUTE ? "standard"
           : pos == POS_ALIBI    ? "alibi"
                                 : slm_pos_name(pos);
}

static const char *const config_keys[] = {"pos",     "score",   "layers",         "act_fn", "positional_embedding_type",
                                          "d_model", "n_heads", "d_head",         "d_mlp",  "n_layers",
                                          "n_ctx",   "d_vocab", "tie_embeddings", NULL};

/* pos and score, then the config as TransformerLens's HookedTransformerConfig
 * names it (docs/transformer.md; act_fn is read back; act_fn and d_mlp only
 * for blocks with an MLP), then layers, then tie_embeddings "true" where W_U
 * is W_E^T (only then: an untied file keeps its bits). */
int slm_tf_config_write(const ModelConfig *c, ConfigPut put, void *ctx, Error *e) {
    static const char *const tl_keys[] = {"d_model", "n_heads", "d_head", "d_mlp", "n_layers", "n_ctx", "d_vocab"};
    int values[] = {c->row_dim, c->n_heads, c->key_dim, c->hidden_dim, c->n_layers, c->window, c->vocab_size};
    int mlp = c->hidden_dim > 0;
    if (slm_arch_write_variant(c, put, ctx, e) || (mlp && put(ctx, "act_fn", slm_act_name((ActFn)c->act), e)) ||
        put(ctx, "positional_embedding_type", tl_positional(c->pos), e))
        return -1;
    for (int i = 0; i < 7; i++) {
        if (!mlp && i == 3) continue; /* d_mlp */
        char num[16];
        snprintf(num, sizeof num, "%d", values[i]);
        if (put(ctx, tl_keys[i], num, e)) return -1;
    }
    if (slm_arch_write_layers(c, put, ctx, e)) return -1;
    return c->tie_embeddings ? put(ctx, "tie_embeddings", "true", e) : 0;
}

/* Its blocks, act_fn (blocks with an MLP), scheme (always written), score
 * (only scaled-dot) and tie_embeddings, then its architecture's check. */
int slm_tf_config_read(ModelConfig *c, ConfigGet get, void *ctx, Error *e) {
    if (slm_arch_read_layers(c, get, ctx, STORYLM_MAX_TF_LAYERS, e)) return -1;
    const char *act = get(ctx, "act_fn"), *pos = get(ctx, "pos"), *score = get(ctx, "score");
    const char *tie = get(ctx, "tie_embeddings");
    if (tie && strcmp(tie, "true") != 0 && strcmp(tie, "false") != 0)
        return FAIL(e, SLM_BAD_MODEL_HINT, "metadata tie_embeddings '%.40s' is not true or false", tie);
    c->tie_embeddings = tie && strcmp(tie, "true") == 0;
    ActFn act_fn = ACT_GELU;
    if (c->hidden_dim > 0 && (!act || slm_act_parse(act, &act_fn, NULL)))
        return FAIL(e, SLM_BAD_MODEL_HINT, "a transformer's metadata act_fn '%.40s' is not gelu, gelu_new or relu",
                    act ? act : "(none)");
    c->act = (int)act_fn;
    if (!pos || slm_pos_parse(pos, &c->pos, NULL))
        return FAIL(e, "a newer storylm may read it", "unknown position scheme '%.40s' (storylm knows %s)",
                    pos ? pos : "(none)", slm_pos_names());
    if (score && strcmp(score, slm_score_name(SCORE_SCALED_DOT)) != 0)
        return FAIL(e, SLM_BAD_MODEL_HINT, "a transformer scores by scaled-dot, not '%.40s'", score);
    c->score = SCORE_SCALED_DOT;
    return c->arch->config_check(c, e);
}

static void describe(const ModelConfig *c, char *buf, size_t size) {
    snprintf(buf, size,
             "architecture  transformer: %d pre-LN blocks, d_model %d, %d heads of %d, d_mlp %d (%s), n_ctx %d\n"
             "variant       --position-scheme %s%s (docs/transformer.md)\n",
             c->n_layers, c->row_dim, c->n_heads, c->key_dim, c->hidden_dim, slm_act_name((ActFn)c->act), c->window,
             slm_pos_name(c->pos), c->tie_embeddings ? " --tie-embeddings (W_U = W_E^T)" : "");
}

/* ---- hook points ----------------------------------------------------------- */

/* TransformerLens's points in the pass's order: before the blocks, in each
 * block, after them (hook_pos_embed only where W_pos is). */
static void hook_points(const ModelConfig *c, HookPoints *out) {
    *out = (HookPoints){.before = {HOOK_EMBED, HOOK_POS_EMBED},
                        .n_before = c->pos == POS_ABSOLUTE ? 2 : 1,
                        .block = {HOOK_RESID_PRE, HOOK_LN1_SCALE, HOOK_LN1_NORMALIZED, HOOK_Q, HOOK_K, HOOK_V,
                                  HOOK_ATTN_SCORES, HOOK_PATTERN, HOOK_Z, HOOK_RESULT, HOOK_ATTN_OUT, HOOK_RESID_MID,
                                  HOOK_LN2_SCALE, HOOK_LN2_NORMALIZED, HOOK_MLP_PRE, HOOK_MLP_POST, HOOK_MLP_OUT,
                                  HOOK_RESID_POST},
                        .n_block = 18,
                        .after = {HOOK_LN_FINAL_SCALE, HOOK_LN_FINAL, HOOK_LOGITS},
                        .n_after = 3,
                        .layers = c->n_layers};
}

extern const GeneratorOps slm_transformer_generator;          /* transformer_generate.c */
extern const GeneratorOps slm_transformer_generator_portable; /* transformer_generate_portable.c */

/* ---- a run's attention --------------------------------------------------- */

float *slm_tf_layer_qkv(const Activations *a, int l) { return a->tf->layer[l].qkv; }
float *slm_tf_layer_attention(const Activations *a, int l) { return a->tf->layer[l].att; }
float *slm_tf_head_output(const Activations *a, int l, int p, int h) { /* hook_z, before W_O */
    const ModelConfig *c = &a->cfg;
    return a->tf->layer[l].z + (size_t)p * c->n_heads * c->value_dim + (size_t)h * c->value_dim;
}

static int forward(const Model *m, Activations *a, const Batch *b, const Ablation *ab, int to_logits, Error *e) {
    (void)to_logits; /* its logits come with the final LN's output, cheaply enough */
    return slm_transformer_forward(m, a, b, ab, e);
}

extern const ProbeOps slm_transformer_probe_ops; /* transformer_probes.c */

const Architecture slm_transformer_arch = {
    .name = "transformer",
    .summary = "pre-LN blocks of attention and an MLP in TransformerLens's names, docs/transformer.md",
    .readout = READOUT_RESIDUAL,
    .takes = TAKES_POSITIONS | TAKES_LAYERS | TAKES_BF16 | TAKES_MLP,
    .max_layers = STORYLM_MAX_TF_LAYERS,
    .config_shape = config_shape,
    .config_default = slm_transformer_config_default,
    .config_check = slm_transformer_check_config,
    .config_write = slm_tf_config_write,
    .config_read = slm_tf_config_read,
    .config_keys = config_keys,
    .layers = slm_tf_layers,
    .describe = describe,
    .heads_per_layer = slm_tf_heads_per_layer,
    .context_needed = slm_tf_context_needed,
    .layout = slm_transformer_layout,
    .bind_views = slm_transformer_bind_views,
    .randomize = slm_transformer_randomize,
    .activations_init = slm_transformer_activations_init,
    .activations_free = slm_transformer_activations_free,
    .forward = forward,
    .loss_and_grad = slm_transformer_loss_and_grad,
    .backward = slm_transformer_backward,
    .hook_points = hook_points,
    .generator = &slm_transformer_generator,
    .generator_portable = &slm_transformer_generator_portable,
    .hook_move = slm_tf_hook_move,
    .layer_qkv = slm_tf_layer_qkv,
    .layer_attention = slm_tf_layer_attention,
    .head_output = slm_tf_head_output,
    .probes = &slm_transformer_probe_ops,
};
