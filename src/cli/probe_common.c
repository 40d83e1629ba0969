/* What the probe verbs share: see probe_common.h. */
#include "probe_common.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/fileio.h"

int probe_check_mode(const Command *cmd, const char *mode) {
    if (strcmp(mode, "zero") == 0 || strcmp(mode, "mean") == 0) return 0;
    return args_usage_error(cmd, "--ablate-mode is zero or mean, not '%s'", mode);
}

int probe_emit(const Report *r, const ProbeOptions *o, Error *e) {
    if (slm_report_failed(r, e)) return -1;
    if (!o->json) {
        slm_report_print(r, stdout);
        return 0;
    }
    return slm_report_json_write(slm_report_json(r), stdout, false, e);
}

int probe_refuse_ablation(const Command *cmd, int argc, char **argv, const char *why) {
    const char *flag = args_given(argc, argv, "ablate", 0)        ? "--ablate"
                       : args_given(argc, argv, "ablate-mode", 0) ? "--ablate-mode"
                                                                  : NULL;
    if (!flag) return 0;
    return args_usage_error(cmd,
                            "%s changes nothing %s shows (%s); switch heads off in ablate, eval, generate, attend, "
                            "trace or swap",
                            flag, cmd->name, why);
}

/* No verb takes a flag it would ignore: --ablate-mode without heads to switch
 * off (ablate's own --heads aside). */
static int refuse_idle_ablation_flags(const Command *cmd, int argc, char **argv, const Option *opts, int n_opts,
                                      const ProbeOptions *po) {
    bool has_ablate = false;
    for (int i = 0; i < n_opts; i++) has_ablate |= opts[i].target == &po->ablate;
    bool heads = (po->ablate && po->ablate[0]) || strcmp(cmd->name, "ablate") == 0;
    if (has_ablate && !heads && args_given(argc, argv, "ablate-mode", 0))
        return args_usage_error(cmd, "--ablate-mode changes nothing without --ablate HEADS (the heads to switch off)");
    return 0;
}

int probe_parse(const Command *cmd, int argc, char **argv, const Option *opts, int n_opts, ProbeOptions *po,
                const char **positional, int n_positional) {
    int np, rc = args_parse(cmd, argc, argv, opts, n_opts, positional, n_positional, n_positional, &np);
    if (rc) return rc > 0 ? 0 : 2;
    return probe_after_parse(cmd, argc, argv, opts, n_opts, po);
}

int probe_after_parse(const Command *cmd, int argc, char **argv, const Option *opts, int n_opts, ProbeOptions *po) {
    if (probe_check_mode(cmd, po->ablate_mode) || refuse_idle_ablation_flags(cmd, argc, argv, opts, n_opts, po))
        return 2;
    cli_set_threads(po->threads);
    /* the default model found (and said on stderr) here; a verb with its own
     * model list (heads) resolves its models itself */
    for (int i = 0; i < n_opts; i++)
        if (opts[i].target == &po->model) po->model = cli_model_path(po->model, po->json);
    return -1;
}
