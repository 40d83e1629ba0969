/* What the probe verbs share: see probe_common.h. */
#include "probe_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int probe_emit(const Report *r, const ProbeOptions *o, Error *e) {
    if (slm_report_failed(r, e)) return -1;
    if (!o->json) {
        slm_report_print(r, stdout);
        return 0;
    }
    return slm_report_json_write(slm_report_json(r), stdout, false, e);
}

/* The table's parameter filling po's field at offset (po the struct's first member), or -1. */
static int field_at(const ParamList *l, size_t offset, ParamType type) {
    for (int i = 0; i < l->n; i++)
        if (l->at[i].offset == offset && l->at[i].p->type == type) return i;
    return -1;
}

int probe_after_parse(const Command *cmd, const ParamTable *t, const ParamsGiven *given, ProbeOptions *po) {
    ParamList l;
    slm_params_list(t, &l);
    /* No verb takes a flag it would ignore: --ablate-mode without heads to switch off */
    bool heads = (po->ablate && po->ablate[0]) || strcmp(cmd->name, "ablate") == 0;
    if (field_at(&l, offsetof(ProbeOptions, ablate), PARAM_HEADS) >= 0 && !heads &&
        slm_params_given(given, &l, "ablate-mode"))
        return args_usage_error(cmd, "--ablate-mode changes nothing without --ablate HEADS (the heads to switch off)");
    cli_set_threads(po->threads);
    /* the default model found (and said on stderr) here; a verb with its own
     * model list (heads) resolves its models itself */
    if (field_at(&l, offsetof(ProbeOptions, model), PARAM_STRING) >= 0) po->model = cli_model_path(po->model, po->json);
    return -1;
}
