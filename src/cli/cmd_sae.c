/* storylm sae: sparse autoencoders on a model's hook point, in SAELens's
 * format (train, eval). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "storylm/fileio.h"
#include "storylm/sae_features_json.h"
#include "storylm/sae_io.h"
#include "storylm/sae_model.h"
#include "storylm/sae_train.h"

static int run(int argc, char **argv);
const Command command_sae = {
    "sae", "train and evaluate sparse autoencoders on a hook point (SAELens's format)",
    "storylm sae train STORIES -m MODEL --hook HOOK -o DIR [options] | storylm sae eval DIR STORIES [options] | "
    "storylm sae features DIR STORIES [options]",
    "Sparse autoencoders (SAEs) find the features a model computes at one hook point.\n"
    "  storylm sae train      trains one on the activations of the training stories\n"
    "  storylm sae eval       measures it on the held-out stories, spliced into the model\n"
    "  storylm sae features   each latent's density, contexts and the tokens it promotes\n"
    "Each one's help follows; docs/sae.md has the files, the formulas and a reader in numpy.",
    run};

static const Command command_sae_train = {
    "sae train", "train an SAE", "storylm sae train STORIES -m MODEL --hook HOOK -o DIR [options]",
    "Trains a sparse autoencoder on the activations at HOOK (any hook point the model\n"
    "declares with a row of numbers a position: hook_hidden, hook_hidden_in, a\n"
    "transformer's blocks.L.hook_resid_pre/mid/post, blocks.L.attn.hook_z,\n"
    "blocks.L.mlp.hook_post, and blocks.L.hook_mlp_out, the MLP's output) of the training\n"
    "stories of STORIES; the held-out stories (--test-stories) are kept out, as in training.\n"
    "--kind topk (OpenAI's TopK with the AuxK loss on dead latents), batchtopk (the k * B\n"
    "largest of a batch of B tokens, with AuxK; saved as SAELens saves it, a JumpReLU whose\n"
    "threshold is the running mean of the smallest value kept) or l1 (SAELens's standard\n"
    "SAE: ReLU and an L1 penalty warmed up over the first 5% of the steps).\n"
    "Activations are scaled to a mean norm of sqrt(d_in) for training and the scale is\n"
    "folded into the saved weights. Writes DIR/cfg.json, DIR/sae_weights.safetensors and\n"
    "DIR/sparsity.safetensors in SAELens's format. The same --seed and --threads give the\n"
    "same bits. Ctrl-C (or --minutes) stops after the step and saves the SAE so far,\n"
    "and the run's whole state beside it in DIR.resume: --resume with the same options\n"
    "goes on from there to the same bits as a run never stopped (DIR.resume is removed\n"
    "when the run is done).",
    NULL};

static const Command command_sae_features = {
    "sae features", "show an SAE's features", "storylm sae features DIR STORIES [options]",
    "Runs the held-out stories of STORIES (--test-stories) through the model and the SAE\n"
    "in DIR: each latent's density (the share of tokens it fires on), its strongest\n"
    "contexts (the tokens around its largest values, the token itself in [brackets]),\n"
    "and the tokens its decoder direction promotes and suppresses: the direction, at the\n"
    "latent's largest value, added at the hook at every position of the first stories\n"
    "(1,024 tokens), and each token's mean change of log-probability. Shows the --latents\n"
    "densest latents, or those --latent names. --json gives every latent's density too;\n"
    "--svg FILE draws the latents' contexts, each token shaded by the latent's value.",
    NULL};

static const Command command_sae_eval = {
    "sae eval", "evaluate an SAE", "storylm sae eval DIR STORIES [options]",
    "SAELens's metrics of the SAE in DIR on the held-out stories of STORIES (the same\n"
    "--test-stories as training): explained variance 1 - sum|x - x_hat|^2 / sum|x - mean x|^2\n"
    "(in double), MSE (per number), L0 and L1 (per token), the cosine of x and x_hat, the\n"
    "share of latents that never fire, and, with the SAE spliced into the forward pass at\n"
    "its hook, ce_loss_score = (CE zeroed - CE spliced) / (CE zeroed - CE clean) and the KL\n"
    "score (KL zeroed - KL spliced) / KL zeroed. The model: -m MODEL, else cfg.json's model_name.",
    NULL};

typedef struct TrainFlags {
    const char *stories, *model, *hook, *out, *kind;
    int expansion, k, tokens, batch_tokens, seed, threads, test_stories;
    double l1, lr, minutes;
    bool json, force, resume;
} TrainFlags;

#define MODEL_PARAM(T)                                                                                                 \
    {                                                                                                                  \
        .name = "model", .short_name = 'm', .type = PARAM_STRING, .offset = offsetof(T, model), .meta = "FILE",        \
        .help = "the model file (default: ./model.safetensors, else the shipped model)"                                \
    }
#define COMMON_PARAMS(T)                                                                                               \
    {.name = "test-stories",                                                                                           \
     .type = PARAM_INT,                                                                                                \
     .offset = offsetof(T, test_stories),                                                                              \
     .meta = "N",                                                                                                      \
     .help = "held-out stories (as in training)",                                                                      \
     .min = 0,                                                                                                         \
     .max = 100000,                                                                                                    \
     .def = STORIES_DEFAULT_TEST},                                                                                     \
        {.name = "threads",                                                                                            \
         .type = PARAM_INT,                                                                                            \
         .offset = offsetof(T, threads),                                                                               \
         .meta = "N",                                                                                                  \
         .help = "threads, by default one per core",                                                                   \
         .min = 1,                                                                                                     \
         .max = 256},                                                                                                  \
    {                                                                                                                  \
        .name = "json", .type = PARAM_BOOL, .offset = offsetof(T, json), .help = "print the result as JSON"            \
    }

static const Param sae_train_params[] = {
    {.name = "STORIES",
     .type = PARAM_STRING,
     .offset = offsetof(TrainFlags, stories),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
    MODEL_PARAM(TrainFlags),
    {.name = "hook",
     .type = PARAM_STRING,
     .offset = offsetof(TrainFlags, hook),
     .meta = "HOOK",
     .help = "the hook point to read (a name the model lacks is refused with its list)",
     .def_string = "hook_hidden"},
    {.name = "out",
     .short_name = 'o',
     .type = PARAM_STRING,
     .offset = offsetof(TrainFlags, out),
     .meta = "DIR",
     .help = "the SAE's folder (made when missing; an SAE there is kept unless --force)",
     .flags = PARAM_REQUIRED},
    {.name = "kind",
     .type = PARAM_STRING,
     .offset = offsetof(TrainFlags, kind),
     .meta = "KIND",
     .help = "topk, batchtopk or l1",
     .def_string = "topk",
     .choices = "topk,batchtopk,l1"},
    {.name = "expansion",
     .type = PARAM_INT,
     .offset = offsetof(TrainFlags, expansion),
     .meta = "N",
     .help = "latents as a multiple of the hook's width",
     .min = 1,
     .max = 256,
     .def = 16},
    {.name = "k",
     .type = PARAM_INT,
     .offset = offsetof(TrainFlags, k),
     .meta = "N",
     .help = "TopK: latents kept a token",
     .min = 1,
     .max = 100000,
     .def = 32},
    {.name = "l1",
     .type = PARAM_DOUBLE,
     .offset = offsetof(TrainFlags, l1),
     .meta = "X",
     .help = "L1: the penalty's coefficient after its warm-up",
     .min = 0,
     .max = 1e6,
     .def = 5},
    {.name = "lr",
     .type = PARAM_DOUBLE,
     .offset = offsetof(TrainFlags, lr),
     .meta = "LR",
     .help = "Adam's learning rate (down to 0 over the last 20% of the steps)",
     .min = 1e-8,
     .max = 1,
     .def = 2e-3},
    {.name = "tokens",
     .type = PARAM_INT,
     .offset = offsetof(TrainFlags, tokens),
     .meta = "N",
     .help = "how many new tokens' activations to train on (the stories are read again when they run out)",
     .min = 1,
     .max = 2e9,
     .def = 4000000},
    {.name = "batch-tokens",
     .type = PARAM_INT,
     .offset = offsetof(TrainFlags, batch_tokens),
     .meta = "N",
     .help = "tokens a step",
     .min = 1,
     .max = 65536,
     .def = 4096},
    {.name = "minutes",
     .type = PARAM_DOUBLE,
     .offset = offsetof(TrainFlags, minutes),
     .meta = "M",
     .help = "stop and save after this many minutes (0: when the tokens are done)",
     .min = 0,
     .max = 1e6,
     .def = 0},
    {.name = "seed",
     .type = PARAM_INT,
     .offset = offsetof(TrainFlags, seed),
     .meta = "N",
     .help = "random seed",
     .min = 0,
     .max = 2147483647,
     .def = 1},
    {.name = "force", .type = PARAM_BOOL, .offset = offsetof(TrainFlags, force), .help = "replace an SAE in DIR"},
    {.name = "resume",
     .type = PARAM_BOOL,
     .offset = offsetof(TrainFlags, resume),
     .help = "go on with the run stopped in DIR (its checkpoint DIR.resume), given the same options"},
    COMMON_PARAMS(TrainFlags),
};
static const ParamTable sae_train_table = {"sae train", sae_train_params, PARAMS_COUNT(sae_train_params)};

typedef struct EvalFlags {
    const char *dir, *stories, *model;
    int threads, test_stories;
    bool json;
} EvalFlags;

static const Param sae_eval_params[] = {
    {.name = "DIR",
     .type = PARAM_STRING,
     .offset = offsetof(EvalFlags, dir),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
    {.name = "STORIES",
     .type = PARAM_STRING,
     .offset = offsetof(EvalFlags, stories),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
    MODEL_PARAM(EvalFlags),
    COMMON_PARAMS(EvalFlags),
};
static const ParamTable sae_eval_table = {"sae eval", sae_eval_params, PARAMS_COUNT(sae_eval_params)};

typedef struct FeatureFlags {
    const char *dir, *stories, *model, *svg;
    SaeFeatureParams fp;
    int threads, test_stories;
    bool json;
} FeatureFlags;

static const Param sae_features_params[] = {
    {.name = "DIR",
     .type = PARAM_STRING,
     .offset = offsetof(FeatureFlags, dir),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
    {.name = "STORIES",
     .type = PARAM_STRING,
     .offset = offsetof(FeatureFlags, stories),
     .flags = PARAM_POSITIONAL | PARAM_REQUIRED},
    MODEL_PARAM(FeatureFlags),
    PARAM_GROUP_OF(FeatureFlags, fp, params_sae_features),
    {.name = "svg",
     .type = PARAM_STRING,
     .offset = offsetof(FeatureFlags, svg),
     .meta = "FILE",
     .help = "also draw the latents' contexts, their tokens shaded by its value, into FILE (SVG)"},
    COMMON_PARAMS(FeatureFlags),
};
static const ParamTable sae_features_table = {"sae features", sae_features_params, PARAMS_COUNT(sae_features_params)};

/* ---- shared -------------------------------------------------------------------- */

static volatile sig_atomic_t stop_requested; /* the one thing a signal handler may set */

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void install_handlers(void) {
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The model, its hook site and the stories read with its vocabulary. */
static int load_all(const char *model, const char *hook, const char *stories, int n_test, LoadedModel *lm,
                    SaeSite *site, Stories *s, Error *e) {
    StoriesOptions so = slm_stories_default_options();
    so.n_test = n_test;
    so.stop = &stop_requested;
    if (slm_loaded_model_load(lm, model, e)) return -1;
    if (slm_sae_site(&lm->model, hook, site, e)) return slm_error_prefix(e, "%s: ", model), -1;
    return slm_stories_load(s, stories, &lm->tokenizer, &so, e);
}

/* ---- train ---------------------------------------------------------------------- */

typedef struct Printer {
    bool tty;
    double last_s;
} Printer;

static void print_progress(const SaeProgress *p, void *ctx) {
    Printer *pp = ctx;
    bool last = p->step == p->steps;
    if (!last && p->elapsed_s - pp->last_s < (pp->tty ? 0.5 : 10)) return;
    pp->last_s = p->elapsed_s;
    char elapsed[32], eta[32];
    cli_format_duration(p->elapsed_s, elapsed, sizeof elapsed);
    cli_format_duration(p->tokens_per_s > 0 ? (double)(p->steps - p->step) * (p->tokens / p->step) / p->tokens_per_s
                                            : 0,
                        eta, sizeof eta);
    fprintf(stderr,
            "%sstep %d/%d | mse %.4f | explained %.3f | L0 %.1f | dead %.1f%% | lr %.2e | %.0f tok/s | %s elapsed, "
            "ETA %s%s",
            pp->tty ? "\r\033[K" : "", p->step, p->steps, p->mse, p->explained_variance, p->l0, 100 * p->dead_share,
            p->lr, p->tokens_per_s, elapsed, eta, pp->tty && !last ? "" : "\n");
}

static int print_trained(const TrainFlags *f, const Sae *sae, const SaeTrainResult *r, Error *e) {
    char took[32];
    cli_format_duration(r->seconds, took, sizeof took);
    fprintf(stderr, "%s after %d steps, %lld tokens (%s); dead latents %.1f%% of the last window\n",
            r->interrupted ? "stopped" : "done", r->steps, r->tokens, took, 100 * r->dead_share);
    if (r->interrupted) fprintf(stderr, "go on with the same command and --resume\n");
    if (!f->json) {
        printf("SAE saved to %s (%d latents on %s)\nevaluate it:  storylm sae eval %s %s -m %s\n", f->out,
               sae->cfg.d_sae, sae->cfg.hook_name, f->out, f->stories, f->model);
        return 0;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "command", "sae");
    cJSON_AddStringToObject(j, "work", "train");
    cJSON_AddStringToObject(j, "out", f->out);
    cJSON_AddStringToObject(j, "hook_name", sae->cfg.hook_name);
    cJSON_AddStringToObject(j, "kind", f->kind);
    cJSON_AddNumberToObject(j, "d_in", sae->cfg.d_in);
    cJSON_AddNumberToObject(j, "d_sae", sae->cfg.d_sae);
    cJSON_AddNumberToObject(j, "steps", r->steps);
    cJSON_AddNumberToObject(j, "tokens", (double)r->tokens);
    cJSON_AddNumberToObject(j, "seconds", r->seconds);
    cJSON_AddBoolToObject(j, "interrupted", r->interrupted);
    cJSON_AddNumberToObject(j, "resumed_at_step", r->resumed_at);
    cJSON_AddNumberToObject(j, "activation_scale", r->scale);
    cJSON_AddNumberToObject(j, "dead_share", r->dead_share);
    return cli_json_print(j, e);
}

/* The checkpoint beside DIR (DIR.resume) and what a resume must repeat. */
static void resume_options(const TrainFlags *f, SaeTrainOptions *o, char *checkpoint, size_t size, char *held_out,
                           size_t held_size) {
    size_t len = strlen(f->out);
    while (len > 1 && f->out[len - 1] == '/') len--; /* "DIR/" and "DIR" have one checkpoint */
    snprintf(checkpoint, size, "%.*s.resume", (int)len, f->out);
    snprintf(held_out, held_size, "%d", f->test_stories);
    o->checkpoint = checkpoint, o->resume = f->resume;
    o->tell = slm_sae_stream_tell, o->seek = slm_sae_stream_seek;
    const char *origin[] = {"-m", f->model, "STORIES", f->stories, "--test-stories", held_out, NULL};
    memcpy(o->origin, origin, sizeof origin);
}

/* The claim of DIR: its weights' lock, and no SAE there unless --force. */
static int claim_dir(const TrainFlags *f, FileLock *lock, Error *e) {
    char path[4096];
    snprintf(path, sizeof path, "%s/sae_weights.safetensors", f->out);
    if (!f->force && !f->resume && access(path, F_OK) == 0)
        return FAIL(e, "give another -o DIR, or --force to replace it", "'%s' holds an SAE already", f->out);
    if (mkdir(f->out, 0755) != 0 && errno != EEXIST)
        return FAIL(e, "give -o a folder whose parent exists", "cannot make the folder '%s': %s", f->out,
                    strerror(errno));
    int rc = slm_file_lock(lock, path, e);
    if (rc == 1)
        return FAIL(e, "wait for it, or give another -o DIR", "another run is writing the SAE in '%s'", f->out);
    return rc;
}

static int train(TrainFlags *f, int *signalled, Error *e) {
    LoadedModel lm = {0};
    SaeSite site;
    Stories s = {0};
    SaeStream stream = {0};
    Sae sae = {0};
    SaeTrainResult r = {0};
    FileLock lock = {0};
    Printer pp = {.tty = isatty(2)};
    SaeTrainOptions o = slm_sae_train_defaults();
    o.kind = strcmp(f->kind, "l1") == 0 ? SAE_L1 : strcmp(f->kind, "batchtopk") == 0 ? SAE_BATCHTOPK : SAE_TOPK;
    o.expansion = f->expansion, o.k = f->k, o.l1 = f->l1, o.lr = f->lr, o.tokens = f->tokens;
    o.batch_tokens = f->batch_tokens, o.minutes = f->minutes, o.seed = (uint64_t)f->seed;
    o.stop = &stop_requested, o.progress = print_progress, o.progress_ctx = &pp;
    char checkpoint[4096], held_out[32];
    resume_options(f, &o, checkpoint, sizeof checkpoint, held_out, sizeof held_out);
    int rc = claim_dir(f, &lock, e) || load_all(f->model, f->hook, f->stories, f->test_stories, &lm, &site, &s, e) ||
             slm_sae_stream_init(&stream, &lm.model, &site, &s, o.seed, e);
    if (!rc) {
        fprintf(stderr, "storylm: %s: %d training stories (%d held out); %s is %d wide: %d latents\n", f->stories,
                s.n_train, s.n_test, site.name, site.d_in, site.d_in * f->expansion);
        rc = slm_sae_train(&sae, site.d_in, site.name, slm_sae_stream_fill, &stream, &o, &r, e);
    }
    if (!rc) {
        SaeRecord rec = {.model = f->model,
                         .context_size = lm.model.cfg.window,
                         .l1 = o.l1,
                         .lr = o.lr,
                         .scale = r.scale,
                         .seconds = r.seconds,
                         .tokens = r.tokens,
                         .batch_tokens = o.batch_tokens,
                         .steps = r.steps,
                         .expansion = o.expansion,
                         .seed = o.seed,
                         .stories = f->stories};
        rc = slm_sae_save(&sae, f->out, &rec, r.density, e) || print_trained(f, &sae, &r, e);
        *signalled = r.interrupted && stop_requested;
    }
    free(r.density);
    slm_sae_free(&sae);
    slm_sae_stream_free(&stream);
    slm_stories_free(&s);
    if (lm.vocab) slm_loaded_model_free(&lm);
    if (lock.path) slm_file_unlock(&lock);
    return rc ? -1 : 0;
}

static int run_train(int argc, char **argv) {
    TrainFlags f = {0};
    slm_params_init(&sae_train_table, &f);
    f.threads = cli_default_threads();
    int rc = args_parse(&command_sae_train, argc, argv, &sae_train_table, &f, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    cli_set_threads(f.threads);
    f.model = cli_model_path(f.model, false);
    install_handlers();
    Error e = {0};
    int signalled = 0;
    if (train(&f, &signalled, &e)) return cli_fail(&e);
    return signalled ? 130 : 0;
}

/* ---- eval ------------------------------------------------------------------------ */

static int print_eval(const EvalFlags *f, const Sae *sae, const SaeEval *v, Error *e) {
    if (!f->json) {
        printf("SAE %s: %d latents on %s, %lld tokens of %d held-out stories\n", f->dir, sae->cfg.d_sae,
               sae->cfg.hook_name, v->tokens, v->stories);
        printf("  explained variance  %.4f\n  mse                 %.6g\n  L0                  %.2f\n"
               "  L1                  %.4g\n  cosine similarity   %.4f\n  dead latents        %.2f%%\n",
               v->explained_variance, v->mse, v->l0, v->l1, v->cosine, 100 * v->dead_share);
        printf("  CE clean            %.4f\n  CE with the SAE     %.4f\n  CE zero-ablated     %.4f\n"
               "  ce_loss_score       %.4f\n  KL with the SAE     %.4f\n  KL zero-ablated     %.4f\n"
               "  kl_div_score        %.4f\n",
               v->ce_clean, v->ce_spliced, v->ce_zero, v->ce_loss_score, v->kl_spliced, v->kl_zero, v->kl_score);
        return 0;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "command", "sae");
    cJSON_AddStringToObject(j, "work", "eval");
    cJSON_AddStringToObject(j, "sae", f->dir);
    cJSON_AddStringToObject(j, "hook_name", sae->cfg.hook_name);
    cJSON_AddNumberToObject(j, "d_sae", sae->cfg.d_sae);
    cJSON_AddNumberToObject(j, "stories_evaluated", v->stories);
    cJSON_AddNumberToObject(j, "tokens", (double)v->tokens);
    const struct {
        const char *name;
        double value;
    } m[] = {{"explained_variance", v->explained_variance},
             {"mse", v->mse},
             {"l0", v->l0},
             {"l1", v->l1},
             {"cossim", v->cosine},
             {"dead_share", v->dead_share},
             {"ce_loss_without_sae", v->ce_clean},
             {"ce_loss_with_sae", v->ce_spliced},
             {"ce_loss_with_ablation", v->ce_zero},
             {"ce_loss_score", v->ce_loss_score},
             {"kl_div_with_sae", v->kl_spliced},
             {"kl_div_with_ablation", v->kl_zero},
             {"kl_div_score", v->kl_score}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (isfinite(m[i].value))
            cJSON_AddNumberToObject(j, m[i].name, m[i].value);
        else
            cJSON_AddNullToObject(j, m[i].name);
    return cli_json_print(j, e);
}

static int eval(EvalFlags *f, Error *e) {
    LoadedModel lm = {0};
    SaeSite site;
    Stories s = {0};
    Sae sae = {0};
    SaeEval v;
    char *model = NULL;
    int rc = slm_sae_load(&sae, f->dir, &model, e);
    if (!rc && !f->model && !model) rc = FAIL(e, "give -m MODEL", "'%s/cfg.json' names no model_name", f->dir);
    if (!rc)
        rc = load_all(f->model ? f->model : model, sae.cfg.hook_name, f->stories, f->test_stories, &lm, &site, &s, e);
    if (!rc) rc = slm_sae_eval(&lm.model, &sae, &site, &s, s.test, s.n_test, &v, e) || print_eval(f, &sae, &v, e);
    free(model);
    slm_sae_free(&sae);
    slm_stories_free(&s);
    if (lm.vocab) slm_loaded_model_free(&lm);
    return rc ? -1 : 0;
}

static int run_eval(int argc, char **argv) {
    EvalFlags f = {0};
    slm_params_init(&sae_eval_table, &f);
    f.threads = cli_default_threads();
    int rc = args_parse(&command_sae_eval, argc, argv, &sae_eval_table, &f, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    cli_set_threads(f.threads);
    Error e = {0};
    return eval(&f, &e) ? cli_fail(&e) : 0;
}

/* ---- features ----------------------------------------------------------------------- */

static void print_feature_table(const FeatureFlags *f, const Sae *sae, const SaeFeatures *ft, const Tokenizer *t,
                                const Stories *s) {
    printf("SAE %s: %d latents on %s; %lld tokens of %d held-out stories; %d latents never fire\n", f->dir,
           sae->cfg.d_sae, sae->cfg.hook_name, ft->tokens, s->n_test, ft->n_dead);
    for (int i = 0; i < ft->n; i++) {
        const SaeFeature *x = &ft->features[i];
        char ctx[1024];
        printf("\nlatent %d  density %.3f%%  max %.3g  mean %.3g\n", x->latent, 100 * x->density, x->max_value,
               x->mean_value);
        for (int c = 0; c < x->n_contexts; c++) {
            slm_sae_context_text(t, s, &x->contexts[c], f->fp.width, ctx, sizeof ctx);
            printf("  %7.3f  %s\n", x->contexts[c].value, ctx);
        }
        printf("  promotes:  ");
        for (int k = 0; k < x->n_tokens; k++) printf(" %s (%+.2f)", t->pieces[x->promoted[k]], x->promoted_by[k]);
        printf("\n  suppresses:");
        for (int k = 0; k < x->n_tokens; k++) printf(" %s (%+.2f)", t->pieces[x->suppressed[k]], x->suppressed_by[k]);
        printf("\n");
    }
}

/* --json and --svg: the report's JSON printed, drawn, or both. */
static int print_feature_json(const FeatureFlags *f, const LoadedModel *lm, const Sae *sae, const SaeSite *site,
                              const SaeFeatures *ft, const Stories *s, Error *e) {
    cJSON *j = slm_sae_features_json(&lm->model, sae, site, &lm->tokenizer, s, ft, f->dir, f->fp.width, e);
    if (!j) return -1;
    if (f->svg && slm_sae_features_svg(j, f->svg, e)) return cJSON_Delete(j), -1;
    if (f->json) return cli_json_print(j, e);
    cJSON_Delete(j);
    return 0;
}

static int features(FeatureFlags *f, const SaeFeatureOptions *o, Error *e) {
    LoadedModel lm = {0};
    SaeSite site;
    Stories s = {0};
    Sae sae = {0};
    SaeFeatures ft = {0};
    char *model = NULL;
    const char *inputs[] = {f->dir, f->stories, f->model};
    int rc = f->svg ? slm_output_check(f->svg, inputs, 3, e) : 0; /* before the work */
    if (!rc) rc = slm_sae_load(&sae, f->dir, &model, e);
    if (!rc && !f->model && !model) rc = FAIL(e, "give -m MODEL", "'%s/cfg.json' names no model_name", f->dir);
    if (!rc)
        rc = load_all(f->model ? f->model : model, sae.cfg.hook_name, f->stories, f->test_stories, &lm, &site, &s, e);
    if (!rc) rc = slm_sae_features(&lm.model, &sae, &site, &s, s.test, s.n_test, o, &ft, e);
    if (!rc && (f->json || f->svg)) rc = print_feature_json(f, &lm, &sae, &site, &ft, &s, e);
    if (!rc && !f->json) print_feature_table(f, &sae, &ft, &lm.tokenizer, &s);
    slm_sae_features_free(&ft);
    free(model);
    slm_sae_free(&sae);
    slm_stories_free(&s);
    if (lm.vocab) slm_loaded_model_free(&lm);
    return rc ? -1 : 0;
}

static int run_features(int argc, char **argv) {
    FeatureFlags f = {0};
    slm_params_init(&sae_features_table, &f);
    f.threads = cli_default_threads();
    int rc = args_parse(&command_sae_features, argc, argv, &sae_features_table, &f, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    SaeFeatureOptions o;
    Error e = {0};
    char text[1200];
    if (slm_sae_feature_options(&f.fp, &o, &e))
        return args_usage_error(&command_sae_features, "%s", slm_error_text(&e, ERROR_STYLE_CLI, text, sizeof text));
    cli_set_threads(f.threads);
    return features(&f, &o, &e) ? cli_fail(&e) : 0;
}

static int run(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "features") == 0) return run_features(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "train") == 0) return run_train(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "eval") == 0) return run_eval(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: %s\n\n%s\n", command_sae.usage, command_sae.description);
        int (*const subs[])(int, char **) = {run_train, run_eval, run_features};
        const char *names[] = {"train", "eval", "features"};
        for (int i = 0; i < 3; i++) { /* each sub-verb's own help, so one page says every option */
            char *args[] = {(char *)names[i], "--help", NULL};
            printf("\n");
            subs[i](2, args);
        }
        return 0;
    }
    if (argc < 2) return args_usage_error(&command_sae, "give train, eval or features");
    return args_usage_error(&command_sae, "unknown sae verb '%s'; give train, eval or features", argv[1]);
}
