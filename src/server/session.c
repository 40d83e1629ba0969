/* A request's session on a cached model: the model it names, its ablation
 * and the stories a view reads, held until released. api.c's views and
 * stream.c's generation both open one. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "server_internal.h"
#include "storylm/registry.h"

void session_release(Server *s, Session *ss) {
    for (int i = 0; i < ss->n_other; i++) cache_release(&s->cache, ss->other[i]);
    ss->n_other = 0;
    if (ss->run) entry_run_release(ss->entry, ss->run);
    if (ss->entry) cache_release(&s->cache, ss->entry);
    ss->entry = NULL;
    ss->run = NULL;
}

/* The session's fields of a request: "model", "ablate", "ablate_mode" and
 * "kernels" (mean ablation's means are made on them; registry.h's groups). */
static const Param session_params[] = {
    PARAM_GROUP_AT(0, params_model),
    PARAM_GROUP_AT(0, params_ablation),
    PARAM_GROUP_AT(0, params_kernels),
};
static const ParamTable session_table = {"session", session_params, PARAMS_COUNT(session_params)};

/* The model path given (else the server's default): one of /api/models, or 404. */
static int resolve_model(Server *s, const char *given, char *path, size_t size, Reply *r) {
    if (!given) given = s->dirs.default_model;
    if (model_resolve(&s->dirs, given, path, size) == 0) return 0;
    char msg[PATH_MAX + 64];
    snprintf(msg, sizeof msg, "unknown model '%s'", given);
    reply_error(r, 404, msg, "name one of the models GET /api/models lists");
    return -1;
}

int request_model(Server *s, const cJSON *body, char *path, size_t size, Reply *r) {
    ProbeOptions po = {0};
    if (request_read_some(&params_model, body, &po, NULL, 0, r)) return -1;
    return resolve_model(s, po.model, path, size, r);
}

int session_open(Server *s, const cJSON *body, int need, Session *ss, Reply *r) {
    *ss = (Session){0};
    char path[PATH_MAX], heads[SERVER_HEADS_TEXT];
    ProbeOptions po = {0}; /* the ablation's mode: zero unless "ablate_mode" says */
    Error e = {0};
    if (request_read_some(&session_table, body, &po, heads, sizeof heads, r) ||
        resolve_model(s, po.model, path, sizeof path, r))
        return -1;
    const char *ablate = po.ablate && po.ablate[0] ? po.ablate : NULL;
    AblationMode mode = po.ablate_mode;
    if (cache_acquire(&s->cache, path, &ss->entry, &e)) return reply_failure(r, 400, &e), -1;
    ModelEntry *m = ss->entry;
    int mean = ablate && mode == ABLATE_MEAN;
    int rc = slm_ablation_parse(&m->ps.lm, ablate, mode, NULL, NULL, &ss->ps.ablation, ss->ps.ablation_desc,
                                sizeof ss->ps.ablation_desc, &e); /* the heads checked before anything is averaged */
    if (!rc && ((need & NEED_STORIES) || mean)) rc = entry_stories(&s->cache, m, s->o.stories, &e);
    Kernels k = (Kernels)po.kernels;
    if (!rc && mean) rc = slm_kernels_check(k, PRECISION_FP32, &e) || entry_mean(m, k, s->o.stories, &e);
    pthread_mutex_lock(&m->lock); /* not while another request loads the stories into it */
    ss->ps = m->ps;               /* shared model, tokenizer, stories and names; never closed here */
    pthread_mutex_unlock(&m->lock);
    ss->ps.stories_path = need & NEED_STORIES ? m->teach : NULL; /* the model's teaching stories (teach.c) */
    ss->ps.mean = NULL;
    if (!rc)
        rc = slm_ablation_parse(&m->ps.lm, ablate, mode, m->mean[k], m->teach, &ss->ps.ablation, ss->ps.ablation_desc,
                                sizeof ss->ps.ablation_desc, &e);
    if (!rc && mean) slm_ablation_add_warning(ss->ps.ablation_desc, sizeof ss->ps.ablation_desc, m->mean_warning);
    if (rc) {
        reply_failure(r, 400, &e);
        session_release(s, ss);
        return -1;
    }
    return 0;
}

int session_model_ablation(Server *s, const cJSON *body, ModelEntry **entry, Ablation *ab, Reply *r) {
    Session ss;
    if (session_open(s, body, 0, &ss, r)) return -1;
    *entry = ss.entry; /* handed over, still held */
    *ab = ss.ps.ablation;
    return 0;
}
