/* storylm info: what a model file holds. */
#include <stdbool.h>
#include <stdio.h>

#include "args.h"
#include "common.h"
#include "storylm/probe_views.h"

static int run(int argc, char **argv);
const Command command_info = {
    "info", "show what a model file holds", "storylm info [options]",
    "Loads a model file, validating it fully, and prints its architecture and sizes, every tensor's name,\n"
    "shape and number count, the total parameter count, the vocabulary size, the file size and the\n"
    "training metadata. If the optimizer state MODEL.adam.safetensors lies beside the model, its step and\n"
    "whether it pairs with the model are shown too. With --json, one JSON object, where each tensor also\n"
    "has the sum of its numbers and the FNV-1a 64 checksum of its little-endian bytes, for scripts.",
    run};

static int run(int argc, char **argv) {
    const char *model_path = NULL;
    bool json = false;
    Option opts[] = {
        {"model", 'm', OPT_STRING, &model_path, "FILE",
         "model file (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)", 0, 0},
        {"json", 0, OPT_BOOL, &json, NULL, "print one JSON object instead of a table", 0, 0},
    };
    const char *pos[1];
    int np;
    int rc = args_parse(&command_info, argc, argv, opts, N_OPTIONS(opts), pos, 0, 0, &np);
    if (rc) return rc > 0 ? 0 : 2;
    model_path = cli_model_path(model_path, json);
    Error e = {0};
    ViewInfo vi;
    if (slm_view_info_open(&vi, model_path, &e)) {
        slm_error_print(&e, "storylm info");
        return 1;
    }
    if (json)
        rc = cli_json_print(slm_view_info_json(&vi), &e) ? (slm_error_print(&e, "storylm info"), 1) : 0;
    else
        slm_view_info_print(&vi, stdout);
    slm_view_info_close(&vi);
    return rc;
}
