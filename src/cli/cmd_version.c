/* storylm version: the program's version and the libraries it was built with. */
#include <cblas.h>
#include <stdio.h>

#include "args.h"
#include "common.h"
#include "storylm/probe_views.h" /* slm_view_json_begin */

static int run(int argc, char **argv);
const Command command_version = {"version", "print the version and the libraries in use", "storylm version [options]",
                                 "Prints storylm's version and the BLAS configuration.", run};

static int run(int argc, char **argv) {
    bool json = false;
    static const Param params[] = {
        {.name = "json", .type = PARAM_BOOL, .offset = 0, .help = "print JSON: version, blas {config, threads}"},
    };
    static const ParamTable table = {"version", params, PARAMS_COUNT(params)};
    int rc = args_parse(&command_version, argc, argv, &table, &json, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    if (!json) {
        printf("storylm %s\n%s, %d threads\n", STORYLM_VERSION, openblas_get_config(), openblas_get_num_threads());
        return 0;
    }
    cJSON *j = slm_view_json_begin("version");
    cJSON_AddStringToObject(j, "version", STORYLM_VERSION);
    cJSON *blas = cJSON_AddObjectToObject(j, "blas");
    cJSON_AddStringToObject(blas, "config", openblas_get_config());
    cJSON_AddNumberToObject(blas, "threads", openblas_get_num_threads());
    Error e = {0};
    return cli_json_print(j, &e) ? cli_fail(&e) : 0;
}
