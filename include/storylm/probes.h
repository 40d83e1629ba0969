/* Probes: the chapter's tools and secrets (SPEC section 6) as library calls
 * that take a model and stories and return plain structs of numbers. They
 * never print: the command-line verbs turn the structs into reports
 * (report.h) and pictures (svg.h). Heads are numbered 0..H-1 everywhere.
 *
 * Files: probe_run.c (running stories, heads' mean outputs), probe_attend.c
 * (Tools 1 and 2), probe_trace.c (Tool 3), probe_heads.c (Secret 1),
 * probe_swap.c (Secret 2), probe_ablate.c (Secret 3), probe_pieces.c (Secret 4),
 * probe_stats.c (the statistics); names and heroes are in names.h
 * (src/text/names.c). */
#ifndef STORYLM_PROBES_H
#define STORYLM_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "storylm/error.h"
#include "storylm/hashmap.h"
#include "storylm/model.h"
#include "storylm/names.h" /* NameList, Hero, SwapName: the names the probes swap */
#include "storylm/stories.h"
#include "storylm/tokenizer.h"

/* ---------------------------------------------------------------------------
 * Running stories through the network (probe_run.c). */

/* Activations for one story at a time, grown to the longest story seen. */
typedef struct ProbeRunner {
    const Model *model;
    Activations acts;
    Batch batch;
    int heads_only; /* 1: slm_probe_run stops at the hidden layer (slm_model_forward_heads): no logits */
    int layer;      /* from 0: the layer (or transformer block) whose heads slm_probe_attend,
                     * slm_probe_attention_map and slm_probe_trace read; 0 unless slm_probe_runner_layer */
} ProbeRunner;

int slm_probe_runner_init(ProbeRunner *r, const Model *m, int max_positions, Error *e);
/* r->layer = layer - 1 (layer from 1, as --layer reads it); -1 with a message
 * when the model has fewer layers (or blocks). */
int slm_probe_runner_layer(ProbeRunner *r, int layer, Error *e);
void slm_probe_runner_free(ProbeRunner *r);
/* One story ids (len >= 1, normally [EOS] first) through the network with
 * ablation (NULL: none); r->acts then holds every activation (model.h). */
int slm_probe_run(ProbeRunner *r, const int32_t *ids, int len, const Ablation *ablation, Error *e);
/* Story i of s through the network as slm_probe_run does, its ids copied (with
 * story_copy_ids) into *ids, grown as needed (*cap entries; caller frees). */
int slm_probe_run_story(ProbeRunner *r, const Stories *s, int i, const Ablation *ablation, int32_t **ids, size_t *cap,
                        Error *e);

/* mean (layers*H, vd) = each head's output (every layer's, numbered as
 * Ablation's) averaged over every position of stories idx[0..n) (what mean
 * ablation puts in a switched-off head's place). */
int slm_probe_head_means(const Model *m, const Stories *s, const int *idx, int n, float *mean, Error *e);

/* Refuses a model without heads: "'what' needs the attention network". */
int slm_probe_need_attention(const Model *m, const char *what, Error *e);
/* 0 for a model whose heads' attention weights the probes can read (the
 * attention network, the transformer's blocks); else -1 with a message. */
int slm_probe_need_heads(const Model *m, const char *what, Error *e);
/* 0 when m's architecture has the operations what reads (has_ops: they are
 * not NULL, arch.h's ProbeOps); else -1 with a message saying it cannot mean
 * anything for that architecture. */
int slm_probe_need_ops(const Model *m, int has_ops, const char *what, Error *e);

/* After slm_probe_run: the probability the network gave token at position p
 * (predicting position p + 1), and its rank (1 = the most likely, as argmax
 * takes it: a tie with an earlier token ranks below it; may be NULL). */
double slm_probe_probability(const Activations *a, int p, int32_t token, int *rank);
/* The same as a loss, -log p in nats, from slm_output_log_prob (the pass's
 * own loss): finite where the probability underflows to 0. */
double slm_probe_loss(const Activations *a, int p, int32_t token);

/* Cosine of two rows of n numbers (0 when either is all zeros). */
double slm_probe_cosine(const float *a, const float *b, int n);

/* ---------------------------------------------------------------------------
 * Tool 1, a lookup by content (probe_attend.c): one position reading with one
 * head, after slm_probe_run. */
typedef struct AttendKey {
    int position; /* of the key in the story */
    int32_t token;
    int distance;         /* back from the reading position; 0 = itself */
    float dot;            /* q.k / sqrt(kd) */
    float distance_score; /* the head's learned score for this distance */
    float score;          /* dot + distance_score */
    float weight;         /* softmax of the scores: the keys' weights sum to 1 */
    float cosine;         /* of the two tokens' rows of the embedding */
} AttendKey;

/* keys (at least window entries) for head h (0..H-1) of layer r->layer at
 * position p; returns how many keys p reads (p - first key + 1), oldest
 * first. On a transformer dot is q.k/sqrt(d_head) of the block's q and k as
 * the forward made them (hook_q, hook_k: after the bias, and turned by rope),
 * distance_score the scheme's (distance, alibi, t5; else 0) and cosine that
 * of the two tokens' rows of W_E. */
int slm_probe_attend(const ProbeRunner *r, int h, int p, AttendKey *keys);
/* map (T, T) for head h of layer r->layer: map[p*T + u] = weight of key u at position p, NAN
 * where p cannot read u (u > p or out of the window). T = positions run. */
void slm_probe_attention_map(const ProbeRunner *r, int h, double *map);

/* ---------------------------------------------------------------------------
 * Tool 3, the network around it (probe_trace.c): one position of the
 * story run last, and layer r->layer's heads.
 *
 * The attention network: z is what the hidden layer reads of that layer (the
 * row, then the layer's heads' outputs), hidden the hidden layer (128), each
 * unit's part the one of those that pushes it most (W1 times that part).
 * The transformer's block L: z is its resid_pre (d_model), then each head's
 * z (hook_z, d_head each); hidden its MLP's neurons (hook_post, d_mlp), each
 * neuron's part the one of resid_pre and the heads' outputs (z_h W_O[h])
 * whose share of LN2's input, with LN2's scale at that position frozen (as
 * direct logit attribution freezes ln_final's), adds the most to the
 * neuron's input: W_in[:, n] . (w2 * rstd2 * centred(part)). The biases
 * (b_O, LN2's b, b_in) belong to no part. */
typedef struct TraceUnit {
    int unit;         /* hidden unit 0..127 */
    float value;      /* after tanh */
    int part;         /* the input part that pushes it most: -1 the row, h a head */
    float part_input; /* that part's share of the unit's input, W1[unit, part] . z[part] */
} TraceUnit;

typedef struct TraceGuess {
    int32_t token;
    float probability;
} TraceGuess;

typedef struct TraceResult {
    int position;
    int32_t token;
    int layer;        /* from 0 */
    int n_inputs;     /* Z: row_dim + n_heads * value_dim */
    float *z;         /* (Z) what the hidden layer read: row (D), then head 0..H-1 (vd each) */
    float *hidden;    /* (hidden_dim) */
    TraceUnit *units; /* (n_units) most active, by |value| */
    int n_units;
    TraceGuess *guesses; /* (n_guesses) most likely next tokens */
    int n_guesses;
} TraceResult;

/* Position p (0..positions run - 1): a causal network's position p reads nothing
 * after p, so one run of a whole text serves the trace of any of its positions. */
int slm_probe_trace(const ProbeRunner *r, int p, int n_units, int n_guesses, TraceResult *out, Error *e);
void slm_trace_result_free(TraceResult *t);

/* ---------------------------------------------------------------------------
 * Secret 1, the heads found jobs (probe_heads.c). */
#define HEAD_BINS 6 /* distance back 0, 1, 2, 3-7, 8-31, 32-255 */
extern const char *const slm_head_bin_names[HEAD_BINS];

typedef struct HeadToken {
    int32_t token;
    double share; /* of the head's weight, over all positions */
} HeadToken;

typedef struct HeadsResult {
    int n_heads, top_k; /* n_heads: every layer's (layer l's head h is l*H + h) */
    long long positions;
    double *mass;          /* (H, HEAD_BINS): share of each head's weight by distance back */
    double *mean_distance; /* (H) weighted mean distance back */
    HeadToken *top;        /* (H, top_k) the tokens each head reads most */
} HeadsResult;

int slm_probe_heads(const Model *m, const Stories *s, const int *idx, int n, int top_k, HeadsResult *out, Error *e);
void slm_heads_result_free(HeadsResult *h);

/* ---------------------------------------------------------------------------
 * Secret 2, it copies the names it knows (probe_swap.c). */
typedef struct NameScore {
    int stories;
    long long mentions;     /* later mentions measured */
    double probability;     /* mean probability of the name's first piece there */
    double top1;            /* share of them where it is the most likely token */
    long long far_mentions; /* those whose previous mention is more than 8 tokens back */
    double far_probability, far_top1;
} NameScore;

typedef struct SwapRow {
    SwapName name; /* NAME_ORIGINAL: each story's own hero */
    NameScore model, baseline;
} SwapRow;

/* For each of names (and first, the heroes' own names), in stories idx[0..n)
 * with a hero that do not already hold the new name: the hero replaced by
 * the name everywhere, measured at the later mentions with m and baseline
 * (may be NULL; no ablation). rows: n_names + 1. */
int slm_probe_swap(const Model *m, const Model *baseline, const Tokenizer *t, const NameList *nl, const Stories *s,
                   const int *idx, int n, const SwapName *names, int n_names, const Ablation *ablation, SwapRow *rows,
                   Error *e);

/* ---------------------------------------------------------------------------
 * Secret 3, switch a head off (probe_ablate.c). */
typedef struct AblateScore {
    double loss, accuracy; /* over every predicted position */
    long long positions;
    double name_loss, name_accuracy, name_probability; /* at the heroes' later mentions */
    long long name_positions;
} AblateScore;

/* Positions predicting a later mention of a story's hero. */
typedef struct NameTargets {
    int *story;    /* index into the stories */
    int *position; /* predicting position (the token before the mention) */
    int n;
} NameTargets;

int slm_name_targets_find(const Tokenizer *t, const NameList *nl, const Stories *s, const int *idx, int n,
                          NameTargets *out, Error *e);
void slm_name_targets_free(NameTargets *nt);

/* Loss and accuracy of m over stories idx[0..n) with ablation (NULL: none),
 * and at names (may be NULL; found by slm_name_targets_find over the same idx). */
int slm_probe_score(const Model *m, const Stories *s, const int *idx, int n, const Ablation *ablation,
                    const NameTargets *names, AblateScore *out, Error *e);

/* ---------------------------------------------------------------------------
 * Secret 4, what one layer cannot do (probe_pieces.c). */
typedef struct PieceScore {
    int stories;
    long long mentions;
    double first_probability, first_top1; /* the first piece, where the name comes back */
    double next_probability, next_top1;   /* after the first piece: the token that followed it at the first mention */
    double next_median_rank;              /* 1 = the most likely */
} PieceScore;

/* Secret 4's two lookups head by head, over the later mentions of the names
 * of 2 or more pieces (those counted in next_probability): an induction
 * circuit's first step is a head that, at the token after the earlier first
 * piece (the token to copy), reads the token before it (the earlier first
 * piece); its second, a head of a later layer that, at the later first piece
 * (the position predicting the second piece), reads the token to copy. */
typedef struct PieceHeads {
    int n_heads;        /* every layer's heads, numbered as Ablation's (layer l's head h: l*H + h) */
    long long mentions; /* later mentions measured */
    double previous[STORYLM_MAX_ALL_HEADS];  /* mean weight, at the token to copy, on the earlier first piece
                                              * (distance 1) */
    double induction[STORYLM_MAX_ALL_HEADS]; /* mean weight, at the later first piece, on the token to copy (0
                                              * past the window) */
    double even;                             /* mean 1 / (keys read) at the later first piece: a head reading evenly */
} PieceHeads;

/* For each name, heroes of stories idx[0..n) renamed to it; rows: n_names.
 * heads (may be NULL): filled as PieceHeads says, over every name of 2+ pieces. */
int slm_probe_pieces(const Model *m, const Tokenizer *t, const NameList *nl, const Stories *s, const int *idx, int n,
                     const SwapName *names, int n_names, const Ablation *ablation, PieceScore *rows, PieceHeads *heads,
                     Error *e);

/* ---------------------------------------------------------------------------
 * The chapter's statistics (probe_stats.c). */
typedef struct StatsResult {
    int n_heads;                 /* a transformer's: every block's, head g = l*H + h (--ablate's numbering) */
    long long pairs;             /* (position, key it reads) pairs, itself included */
    double *correlation;         /* (H) Pearson correlation of q.k with the rows' cosine over the pairs */
    double *correlation_others;  /* (H) the same without the pairs of a position with itself (cosine 1) */
    long long positions;         /* positions reading 2 or more keys */
    double *closest_not_largest; /* (H) share of them whose key closest in direction is not the largest q.k */
    long long tokens;            /* tokens of the stories, [EOS] left out */
    long long far_repeats;       /* of them: seen earlier in the story, not among the 8 before, not left out */
    long long counted_tokens;    /* tokens not left out */
} StatsResult;

/* left_out (V): 1 for the top most common tokens of stories idx[0..n)
 * (count by occurrences), except whole-word names of nl. */
int slm_common_tokens(const Stories *s, const int *idx, int n, const Tokenizer *t, const NameList *nl, int top,
                      uint8_t *left_out, Error *e);
/* far (T): 1 for each token of the story ids (T) seen earlier in it but not
 * among the 8 tokens before it, out of chapter 6's reach ([EOS] and the
 * left_out (V) tokens never); last (V) scratch. Returns how many. The rule
 * of stats' far repeats, and of the marks of `storylm repeats`. */
int slm_far_repeat_marks(const int32_t *ids, int T, int32_t eos, const uint8_t *left_out, int *last, uint8_t *far);
int slm_probe_stats(const Model *m, const Stories *s, const int *idx, int n, const uint8_t *left_out, StatsResult *out,
                    Error *e);
void slm_stats_result_free(StatsResult *r);

#endif
