/* storylm train's parameters, declared once (params.h): the command line's
 * options (src/cli/cmd_train.c) and Python's keywords (storylm.train) are
 * read with this table; /api/train's fields take some of its entries with
 * the server's own bounds (src/server/train_job.c). Its defaults are the
 * trainer's (slm_train_default_options reads them from here). The sizes of
 * --arch transformer are a group of their own (params_transformer_shape),
 * the part of the table an architecture contributes. */
#ifndef STORYLM_TRAIN_PARAMS_H
#define STORYLM_TRAIN_PARAMS_H

#include <stdbool.h>

#include "storylm/params.h"
#include "storylm/train_options.h"

typedef struct TrainParams {
    TrainOptions o;      /* the trainer's: --steps, --lr, --batch, --out, --eval-every, the regularisers... */
    const char *stories; /* STORIES */
    const char *vocab;   /* --vocab FILE: read, or learnt and written; a model file: its vocabulary */
    const char *from;    /* --from MODEL: fine-tune this trained model (a file or a shipped one's short name) */
    const char *arch, *position_scheme, *score, *act; /* names, parsed into o by the architecture's parsers */
    int seed, test_stories, layers, vocab_size;
    bool resume, ema_save, keep_best, keep_last, json, force;
    bool cased;                         /* --cased: learn a cased vocabulary (and refuse an uncased one) */
    bool allow_unknown, allow_skipped;  /* train on a vocabulary, a file, that the checks before training refuse */
    double rank_timeout;                /* under mpirun: seconds to wait for the other ranks */
    bool steps_given, eval_every_given; /* else they fit the corpus (slm_train_default_steps) */
} TrainParams;

/* --vocab left out: read here, or learnt from the stories and written here. */
#define TRAIN_DEFAULT_VOCAB "vocab.txt"

extern const ParamTable params_train;
/* --d-model, --n-heads, --d-head, --d-mlp, --act over a TrainParams: the
 * transformer's sizes (0: its defaults, which the command line shows). */
extern const ParamTable params_transformer_shape;

/* /api/train's entries of params_train, for a table of the server's own
 * over a TrainParams: --lr, --seed and --from as train has them. */
#define TRAIN_PARAM_LR                                                                                                 \
    {                                                                                                                  \
        .name = "lr", .type = PARAM_DOUBLE, .offset = offsetof(TrainParams, o.lr), .meta = "LR",                       \
        .help = "peak learning rate (linear warm-up, cosine decay to lr/10)", .min = 1e-7, .max = 1, .def = 3e-3       \
    }
#define TRAIN_PARAM_FROM                                                                                               \
    {                                                                                                                  \
        .name = "from", .type = PARAM_STRING, .offset = offsetof(TrainParams, from), .meta = "MODEL",                  \
        .help = "fine-tune: start from this trained model, a file or a shipped one by its short name (tinystories, "   \
                "transformer, window8, ...), keeping its architecture and vocabulary (docs/guide.md: start here)"      \
    }
#define TRAIN_PARAM_SEED                                                                                               \
    {                                                                                                                  \
        .name = "seed", .short_name = 's', .type = PARAM_INT, .offset = offsetof(TrainParams, seed), .meta = "N",      \
        .help = "seed of the initial weights and the story order", .min = 0, .max = 2147483647, .def = 1               \
    }

#endif
