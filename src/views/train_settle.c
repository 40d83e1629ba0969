/* train's parameters settled into its options: see slm_train_settle in
 * include/storylm/train_file.h. */
#include <stdio.h>
#include <unistd.h>

#include "storylm/act_fn.h"
#include "storylm/arch.h"
#include "storylm/data_files.h"
#include "storylm/position.h"
#include "storylm/score.h"
#include "storylm/train_file.h"
#include "storylm/train_summary.h"

void slm_train_params_init(TrainParams *p, int threads) {
    *p = (TrainParams){0};
    slm_params_init(&params_train, p);
    p->o = slm_train_default_options();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    p->o.threads = threads > 0 ? threads : cores < 1 ? 1 : cores > 256 ? 256 : (int)cores;
    for (int i = 0; i < slm_arch_count(); i++) /* the shape flags' defaults, as --help shows them */
        if (slm_arch_at(i)->config_shape) {
            ModelConfig d = slm_arch_at(i)->config_default(0);
            p->o.d_model = d.row_dim, p->o.heads = d.n_heads, p->o.d_head = d.key_dim, p->o.d_mlp = d.hidden_dim;
            break;
        }
}

/* The architecture's own scheme and layers where the flags give none (the
 * transformer's: absolute, 2 blocks). */
static void arch_defaults(const ParamList *l, const ParamsGiven *given, TrainParams *p) {
    ModelConfig d = slm_model_config_default(p->o.arch, 0);
    if (!slm_params_given(given, l, "position-scheme")) p->o.pos = d.pos;
    if (!slm_params_given(given, l, "layers")) p->layers = d.n_layers;
}

/* The TRAIN_GIVEN_* bits of the flags given: a resume refuses any the run contradicts. */
static unsigned given_bits(const ParamList *l, const ParamsGiven *given) {
    static const struct {
        const char *flag;
        unsigned bit;
    } bits[] = {
        {"arch", TRAIN_GIVEN_ARCH},     {"lr", TRAIN_GIVEN_LR},         {"batch", TRAIN_GIVEN_BATCH},
        {"seed", TRAIN_GIVEN_SEED},     {"warmup", TRAIN_GIVEN_WARMUP}, {"position-scheme", TRAIN_GIVEN_VARIANT},
        {"score", TRAIN_GIVEN_VARIANT}, {"layers", TRAIN_GIVEN_LAYERS}, {"precision", TRAIN_GIVEN_PRECISION},
        {"d-mlp", TRAIN_GIVEN_MLP},     {"act", TRAIN_GIVEN_MLP}};
    unsigned out = 0;
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (slm_params_given(given, l, bits[i].flag)) out |= bits[i].bit;
    ParamList shape; /* --d-model, --n-heads, --d-head, --d-mlp or --act */
    slm_params_list(&params_transformer_shape, &shape);
    for (int i = 0; i < shape.n; i++)
        if (slm_params_given(given, l, shape.at[i].p->name)) out |= TRAIN_GIVEN_SHAPE;
    return out;
}

/* --from: the model's architecture and vocabulary are the run's, so the flags
 * that would set others are refused (--lr stays training's 3e-3: of 3e-4, 1e-3
 * and 3e-3 it fine-tuned best, docs/guide.md). The model is found as a file or
 * a shipped one's short name, and is the run's vocabulary. */
static int settle_from(TrainParams *p, const ParamList *l, const ParamsGiven *given, char *buf, size_t size, Error *e) {
    static const char *const kept[] = {"vocab",           "vocab-size", "arch",    "layers",
                                       "position-scheme", "score",      "d-model", "n-heads",
                                       "d-head",          "d-mlp",      "act",     "tie-embeddings"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (slm_params_given(given, l, kept[i]))
            return FAIL(e, NULL,
                        "--from keeps the model's architecture and vocabulary: leave --%s out (or train from "
                        "scratch without --from)",
                        kept[i]);
    if (slm_data_model_path(p->from, buf, size, &p->from, e)) return -2;
    p->vocab = p->from;
    return 0;
}

int slm_train_settle(TrainParams *p, const ParamsGiven *given, char *from_buf, size_t size, Error *e) {
    ParamList l;
    slm_params_list(&params_train, &l);
    TrainOptions *o = &p->o;
    if (!(o->arch = slm_arch_find(p->arch, e)) || slm_pos_parse(p->position_scheme, &o->pos, e) ||
        slm_score_parse(p->score, &o->score, e) || slm_act_parse(p->act, &o->act, e))
        return -1;
    o->given |= given_bits(&l, given);
    arch_defaults(&l, given, p);
    if (slm_train_check_arch(o, p->layers, p->resume, e)) return -1;
    o->layers = p->layers;
    o->seed = (uint64_t)p->seed;
    o->resume = p->resume;
    o->ema_save = p->ema_save;
    o->keep_best = p->keep_best;
    o->keep_last = p->keep_last;
    p->steps_given = slm_params_given(given, &l, "steps");
    p->eval_every_given = slm_params_given(given, &l, "eval-every");
    o->force = p->force;
    if (!slm_params_given(given, &l, "vocab-size")) p->vocab_size = 0; /* the words' or the file's size */
    return p->from ? settle_from(p, &l, given, from_buf, size, e) : 0;
}
