/* The architecture interface: one table of operations per architecture
 * (SQLite's VFS: the rest of the code never looks behind it), and the
 * registry that finds one by name.
 *
 * A model's ModelConfig.arch points at its architecture's table; pointer
 * equality is "the same architecture". Everything outside src/arch and
 * src/model asks the table a question about structure (layers, heads per
 * layer, how the output reads the heads) or calls an operation; it never
 * asks which architecture a model is. Each architecture is one module under
 * src/arch/ (attention, window8, transformer) and one line of
 * src/arch/registry.c; the kernels they share are src/model's.
 *
 * ModelConfig's size fields are the architecture's to interpret (its config
 * comment says what each means for it); N below is the positions of a batch,
 * H the heads of a layer, l a layer from 0. */
#ifndef STORYLM_ARCHITECTURE_H
#define STORYLM_ARCHITECTURE_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/hooks.h"
#include "storylm/model_types.h"

/* How the output reads what the heads made: a structural question the
 * probes and views ask (the attribution's parts, a report's labels). */
typedef enum {
    READOUT_TANH = 0, /* the chapter's: z = [row, heads...] (or window8's rows) read by one tanh layer */
    READOUT_RESIDUAL  /* a residual stream of blocks (attention, MLP) read through a final LayerNorm */
} Readout;

/* The hook points a model declares, in the order its pass reaches them: the
 * points before the layers, each layer's (named with its layer), the points
 * after them (TransformerLens's names: hooks.h). */
typedef struct HookPoints {
    HookPoint before[4], block[20], after[4];
    int n_before, n_block, n_after;
    int layers; /* how many layers have the block's points */
} HookPoints;

/* The unembedding a residual readout reads its stream through, at one position:
 * logits = LN(x) W_U + b_U, LN(x) = (x - mean x) rstd ln_w + ln_b, rstd = 1 / sqrt(var x + eps). */
typedef struct Unembed {
    const float *ln_w, *ln_b; /* (D) */
    const float *W_U, *b_U;   /* (D, V), (V); tied: W_U is W_E (V, D), read through slm_unembed_weight */
    int tied;
    double eps;
    double rstd; /* the position's, from the run */
} Unembed;

/* W_U[i, token] of u, whichever layout holds it (D = d_model, V the vocabulary). */
static inline float slm_unembed_weight(const Unembed *u, int i, int token, int D, int V) {
    return u->tied ? u->W_U[(size_t)token * D + i] : u->W_U[(size_t)i * V + token];
}

/* What the probes read of a model beyond a run's attention (src/probes; each
 * op's shapes in its comment). A model without heads has none
 * (Architecture.probes NULL: window8); an op NULL is one that means nothing
 * for the model, and its probe refuses saying so. */
typedef struct ProbeOps {
    /* Layer l as a one-layer model of the chapter's shape (distances, attend):
     * its own query, key, value and score tensors; where its scores per
     * distance back are not the chapter's tensors (a transformer block), table
     * (H, window) holds them and the view reads them as --position-scheme
     * distance (table NULL: left as they are; position_score reads them). */
    void (*layer_view)(const Model *m, int l, Model *view, float *table);
    /* The score head h of layer l adds at distance d back (0 where its scheme adds none). */
    float (*position_score)(const Model *m, int l, int h, int d);
    /* Circuits of head h of layer l over the vocabulary, from the weights
     * (probe_circuits.h): qk (V, V) and ov (V, V), ov read through the
     * tanh readout's slope gain (hidden_dim) or, with a residual readout,
     * through the unembedding (gain unused); scratch: circuit_scratch floats. */
    size_t (*circuit_scratch)(const ModelConfig *c);
    void (*circuit_qk)(const Model *m, int l, int h, float *scratch, float *qk);
    void (*circuit_ov)(const Model *m, int l, int h, const float *gain, float *scratch, float *ov);
    /* The report's note on how the circuits are read. */
    const char *(*circuit_note)(const ModelConfig *c);
    /* Layer l at position p of a run (trace): its input shown as the row (or
     * the block's resid_pre) (D) then layer l's heads (H, vd) into in, its
     * units (the tanh layer's, or the block's MLP neurons: hidden_dim) into
     * hidden, and push (1 + H, hidden_dim): what the row and each head add to
     * each unit's input (a transformer's through LN2 with its scale frozen). */
    void (*trace_layer)(const Model *m, const Activations *a, int l, int p, float *in, float *hidden, float *push);
    /* A residual readout's input at position p taken apart (attribute;
     * TransformerLens's decompose_resid, each head apart): parts (P, D)
     * summing to the final LN's input and names (P, may be NULL), P =
     * n_resid_parts. NULL for the tanh readout, whose parts are z's slots. */
    int (*n_resid_parts)(const ModelConfig *c);
    void (*resid_parts)(const Model *m, const Activations *a, int p, double *parts, char (*names)[24]);
    /* The unembedding of a residual readout, the rstd of position p of the run in a (a NULL: 0). */
    void (*unembed)(const Model *m, const Activations *a, int p, Unembed *u);
} ProbeOps;

/* Training's flags an architecture reads beyond the sizes every one has
 * (train and bench refuse the others, naming them). */
enum {
    TAKES_POSITIONS = 1, /* --position-scheme */
    TAKES_SCORES = 2,    /* --score */
    TAKES_LAYERS = 4,    /* --layers */
    TAKES_BF16 = 8,      /* --precision bf16 */
    TAKES_MLP = 16       /* --d-mlp and --act: its blocks have an MLP */
};

/* The shape flags of train (--d-model, --n-heads, --d-head, --d-mlp, --act,
 * --tie-embeddings): 0 where a flag gives none (the architecture's default). */
typedef struct ConfigShape {
    int d_model, heads, d_head, d_mlp, act, tie;
} ConfigShape;

/* A metadata key of a model file written (put) and read (get) by the
 * architecture's own config_write and config_read, so that src/arch needs
 * nothing of the file format; get returns NULL when the file has no key. */
typedef int (*ConfigPut)(void *ctx, const char *key, const char *value, Error *e);
typedef const char *(*ConfigGet)(void *ctx, const char *key);

typedef struct Architecture {
    const char *name;    /* "attention", "window8", "transformer", "attn-only": --arch, the file's "arch", info */
    const char *summary; /* one line for --help and the docs */
    Readout readout;

    /* ---- configuration ---- */
    /* Its default sizes for a vocabulary of vocab_size tokens (cfg.arch set). */
    ModelConfig (*config_default)(int vocab_size);
    /* 0 when the passes take c's sizes; -1 with a message naming the flag. */
    int (*config_check)(const ModelConfig *c, Error *e);
    /* Its own metadata keys (beyond format, arch and the sizes every file has). */
    int (*config_write)(const ModelConfig *c, ConfigPut put, void *ctx, Error *e);
    /* Reads them back into c (its sizes read already), validated; the message
     * says what is wrong, the caller names the file. */
    int (*config_read)(ModelConfig *c, ConfigGet get, void *ctx, Error *e);
    /* Every key config_write may put (NULL-ended): the file format reserves
     * them, so a caller's own metadata can never shadow one. */
    const char *const *config_keys;

    unsigned takes; /* TAKES_*: the training flags it reads */
    int max_layers; /* --layers up to this */
    /* The shape flags into c (its default's where 0); NULL: it takes none. */
    void (*config_shape)(ModelConfig *c, const ConfigShape *s);

    /* Its sizes as info's lines ("architecture  ...\n", then its layers and
     * variant where it has them) into buf. */
    void (*describe)(const ModelConfig *c, char *buf, size_t size);

    /* ---- structure ---- */
    int (*layers)(const ModelConfig *c);          /* layers of heads or blocks (window8: 1) */
    int (*heads_per_layer)(const ModelConfig *c); /* 0: no heads (window8) */
    /* Positions a piece of a long story carries before its first prediction:
     * what its first position reads (the window's keys through every layer,
     * or window8's rows). */
    int (*context_needed)(const ModelConfig *c);

    /* ---- parameters: one buffer, one table ---- */
    void (*layout)(Model *m);                   /* appends its tensors to m's table (n_params grows) */
    void (*bind_views)(Model *m);               /* m's named views from its table (NULL where none) */
    void (*randomize)(Model *m, uint64_t seed); /* deterministic initial values */

    /* ---- the passes (model.h's contracts: slm_model_forward, _loss_and_grad,
     * _backward, with ablation, hooks, dropout and precision) ---- */
    int (*activations_init)(Activations *a, const ModelConfig *c, int max_positions, Error *e);
    void (*activations_free)(Activations *a);
    /* tokens -> logits, loss (to_logits 0: it may stop where the heads are
     * made); attention weights kept. Checks its inputs; not the losses. */
    int (*forward)(const Model *m, Activations *a, const Batch *b, const Ablation *ab, int to_logits, Error *e);
    int (*loss_and_grad)(const Model *m, Activations *a, const Batch *b, const Ablation *ab, float scale, float *grads,
                         Error *e);
    void (*backward)(const Model *m, Activations *a, const Batch *b, float *grads);

    /* ---- hooks: the points it declares, and how a point's numbers move
     * between its activations and buf (C order, hooks.h's shapes); returns
     * 1 for a point the shared movers of hooks.c handle (q, k, v, the
     * pattern and distance scores, the hidden layer, the logits), -1 when
     * out of memory (a->hooks->error says so) ---- */
    void (*hook_points)(const ModelConfig *c, HookPoints *out);
    int (*hook_move)(const Model *m, Activations *a, HookPoint p, int l, float *buf, int to_buf);

    /* ---- a run's attention, for the probes (after a forward that kept the
     * weights): layer l's queries, keys, values (QKV, ld) and weights
     * (H, N, S) in Activations' layouts, and head h's output at position p
     * (value_dim numbers) ---- */
    float *(*layer_qkv)(const Activations *a, int l);
    float *(*layer_attention)(const Activations *a, int l);
    float *(*head_output)(const Activations *a, int l, int p, int h);

    /* ---- what the probes read beyond a run's attention (NULL: no heads) ---- */
    const ProbeOps *probes;

    /* ---- generation: one token at a time with its caches (generator_batch.h) ---- */
    const struct GeneratorOps *generator;
    /* the same on generation's portable kernels (generate --kernels portable: one order of every sum on
     * every target, src/generate/kernels_portable.h); NULL: the architecture has none */
    const struct GeneratorOps *generator_portable;
} Architecture;

/* ---- the registry (src/arch/registry.c) ---- */

/* The architecture called name, or NULL with a message listing the names. */
const Architecture *slm_arch_find(const char *name, Error *e);
int slm_arch_count(void);
const Architecture *slm_arch_at(int i);
/* The chapter's network: what a model is when nothing says otherwise. */
const Architecture *slm_arch_default(void);
/* "attention, window8 or transformer" into buf: the names for hints and help. */
void slm_arch_names(char *buf, size_t size);
/* Each name with its summary, "attention (the chapter's network...), window8 (...) or ...", into buf: --arch's help. */
void slm_arch_help(char *buf, size_t size);

#endif
