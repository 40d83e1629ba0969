/* The MLP activations' names (include/storylm/act_fn.h). */
#include "storylm/act_fn.h"

#include <string.h>

static const char *const act_names[ACT_COUNT] = {"gelu", "gelu_new", "relu"};

const char *slm_act_name(ActFn act) { return act >= 0 && act < ACT_COUNT ? act_names[act] : "?"; }

int slm_act_parse(const char *name, ActFn *act, Error *e) {
    for (int i = 0; i < ACT_COUNT; i++)
        if (strcmp(name, act_names[i]) == 0) {
            *act = (ActFn)i;
            return 0;
        }
    return FAIL(e, "use gelu, gelu_new or relu", "unknown activation '%s'", name);
}
