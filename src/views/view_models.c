/* Views over several models (detect, icl): see probe_views.h. */
#include "storylm/probe_views.h"
#include "storylm/registry.h"

int slm_view_each_model(ViewCall *c, const StringList *models, const char *stories, int flags, ViewModelFn add,
                        Error *e) {
    if (c->ps) return add(c, c->ps, 0, e); /* the server's session: its one model */
    int n = models->count ? models->count : 1, rc = 0;
    for (int k = 0; !rc && k < n; k++) {
        ProbeOptions po = *slm_view_probe_options(c->params);
        po.model = models->count ? models->items[k] : NULL;
        ProbeSession ps;
        if ((rc = slm_probe_session_open(&ps, &po, c->view->name, stories, flags, e))) break;
        rc = add(c, &ps, k, e);
        slm_probe_session_close(&ps);
    }
    return rc;
}
