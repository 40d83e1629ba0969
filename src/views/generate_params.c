/* storylm generate's parameters, declared once (views.h): the command
 * line's options, /api/generate's fields and Python's keywords are read
 * with this table, and the generator checks what it is handed by it. */
#include <stddef.h>

#include "storylm/registry.h"
#include "storylm/views.h"

#define GENERATE_STORIES_HELP                                                                                          \
    "stories for --ablate-mode mean (needed for it) and for the names (default: the model's training file if here, "   \
    "else data/stories.txt)"
#define PRECISION_HELP                                                                                                 \
    "matrix products: fp32, or bf16 (operands rounded to bfloat16, FP32 sums; avx512_bf16; docs/performance.md)"

#define STOP_PARAM                                                                                                     \
    {                                                                                                                  \
        .name = "stop", .type = PARAM_STRINGS, .offset = offsetof(GenerateParams, stops), .meta = "STRING",            \
        .help = "end the story before STRING when it is written (repeat for more)", .flags = PARAM_NONEMPTY            \
    }
static const Param stop_param = STOP_PARAM;

static const Param generate_params[] = {
    PARAM_GROUP_OF(GenerateParams, po, params_model),
    {.name = "file",
     .short_name = 'f',
     .type = PARAM_STRING,
     .offset = offsetof(GenerateParams, file),
     .meta = "FILE",
     .help = "read the prompt from FILE (its final newline dropped)",
     .flags = PARAM_CLI_ONLY},
    {.name = "tokens",
     .short_name = 'n',
     .type = PARAM_INT,
     .offset = offsetof(GenerateParams, go.max_tokens),
     .meta = "N",
     .help = "most new tokens",
     .min = 0,
     .max = 1000000,
     .def = 200,
     .key = "max_tokens",
     .served_max = GENERATE_SERVED_TOKENS},
    PARAM_GROUP_OF(GenerateParams, go.sampling, params_sampling),
    STOP_PARAM,
    {.name = "steer",
     .type = PARAM_STRINGS,
     .offset = offsetof(GenerateParams, steers),
     .meta = "DIR:LATENT:SCALE",
     .help = "add SCALE times the decoder direction of latent LATENT of the SAE in DIR at its hook point, at every "
             "position (repeat for more; a request names the SAE beside the model, MODEL.sae; docs/sae.md)",
     .flags = PARAM_NONEMPTY},
    {.name = "seed",
     .short_name = 's',
     .type = PARAM_INT,
     .offset = offsetof(GenerateParams, seed),
     .meta = "N",
     .help = "sampling seed of the first sample (-1 = from the clock; printed)",
     .min = -1,
     .max = 2147483647,
     .def = -1},
    {.name = "samples",
     .type = PARAM_INT,
     .offset = offsetof(GenerateParams, samples),
     .meta = "N",
     .help = "stories to write, computed together",
     .min = 1,
     .max = 4096,
     .def = 1,
     .flags = PARAM_NO_REQUEST},
    {.name = "json",
     .type = PARAM_BOOL,
     .offset = offsetof(GenerateParams, po.json),
     .help = "print text, tokens with log-probabilities, seed and stop reason of each sample as JSON",
     .flags = PARAM_CLI_ONLY},
    {.name = "n-probs",
     .type = PARAM_INT,
     .offset = offsetof(GenerateParams, go.n_probs),
     .meta = "K",
     .help = "with --json, each token's K likeliest alternatives",
     .min = 0,
     .max = SAMPLER_MAX_N_PROBS,
     .flags = PARAM_NO_PYTHON},
    PARAM_GROUP_OF(GenerateParams, po, params_ablation),
    /* Python and the server: a path of the caller's, the server's own stories */
    {.name = "stories",
     .type = PARAM_STRING,
     .offset = offsetof(GenerateParams, po.mean_stories),
     .meta = "FILE",
     .help = GENERATE_STORIES_HELP,
     .flags = PARAM_NO_REQUEST | PARAM_NO_PYTHON},
    {.name = "threads",
     .type = PARAM_INT,
     .offset = offsetof(GenerateParams, po.threads),
     .meta = "N",
     .help = "threads the samples of --samples are shared between, by default one per core",
     .min = 1,
     .max = 256,
     .flags = PARAM_CLI_ONLY},
    {.name = "precision",
     .type = PARAM_CHOICE,
     .offset = offsetof(GenerateParams, go.precision),
     .meta = "P",
     .help = PRECISION_HELP,
     .def_string = "fp32",
     .choices = "fp32,bf16"}, /* Precision's order (bf16.h) */
    KERNELS_PARAM(GenerateParams, go.kernels,
                  "the generator's kernels: blas (the default: storylm's fastest for this CPU; generation uses no "
                  "OpenBLAS), or portable (every sum in one order: the same tokens and log-probabilities at any "
                  "-march and in the WebAssembly build; fp32 only; docs/kernels.md)"),
    /* Python passes its prompt apart (a text with its length) */
    {.name = "PROMPT",
     .type = PARAM_STRING,
     .offset = offsetof(GenerateParams, prompt),
     .flags = PARAM_POSITIONAL | PARAM_TEXT | PARAM_NO_PYTHON},
};
const ParamTable params_generate = {"generate", generate_params, PARAMS_COUNT(generate_params)};

int slm_view_generate_check(const ViewGenerateOptions *go, Error *e) {
    GenerateParams p = {.go = *go};
    size_t from = offsetof(GenerateParams, go), to = from + sizeof p.go;
    if (slm_params_check_part(&params_generate, &p, from, to, PARAM_FROM_CLI, e)) return -1;
    for (int i = 0; i < go->n_stops; i++)
        if (!go->stops[i][0])
            return slm_param_fail(e, &stop_param, ERROR_PARAM_VALUE, "", true, NULL,
                                  "is empty: give a text of one character or more");
    return 0;
}
