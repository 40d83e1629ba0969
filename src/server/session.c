/* A request's session on a cached model: the model it names, its ablation
 * and the stories a view reads, held until released. api.c's views and
 * stream.c's generation both open one. */
#include <stdio.h>
#include <string.h>

#include "server_internal.h"

void session_release(Server *s, Session *ss) {
    for (int i = 0; i < ss->n_other; i++) cache_release(&s->cache, ss->other[i]);
    ss->n_other = 0;
    if (ss->run) entry_run_release(ss->entry, ss->run);
    if (ss->entry) cache_release(&s->cache, ss->entry);
    ss->entry = NULL;
    ss->run = NULL;
}

/* The model a request names ("model", else the server's default): one of
 * /api/models, or 404. */
int request_model(Server *s, const cJSON *body, const char *key, char *path, size_t size, Reply *r) {
    const char *given = s->dirs.default_model;
    if (field_string(body, key, &given, 0, PATH_MAX - 1, r)) return -1;
    if (model_resolve(&s->dirs, given, path, size) == 0) return 0;
    char msg[PATH_MAX + 64];
    snprintf(msg, sizeof msg, "unknown model '%s'", given);
    reply_error(r, 404, msg, "name one of the models GET /api/models lists");
    return -1;
}

int session_open(Server *s, const cJSON *body, int need, Session *ss, Reply *r) {
    *ss = (Session){0};
    char path[PATH_MAX], ablate_buf[256];
    const char *ablate, *mode;
    Error e = {0};
    if (request_model(s, body, "model", path, sizeof path, r) ||
        field_ablation(body, ablate_buf, sizeof ablate_buf, &ablate, &mode, r))
        return -1;
    if (cache_acquire(&s->cache, path, &ss->entry, &e)) return reply_failure(r, 400, &e), -1;
    ModelEntry *m = ss->entry;
    int mean = ablate && strcmp(mode, "mean") == 0;
    int rc =
        slm_ablation_parse(&m->ps.lm, ablate, "\"ablate\": ", mode, NULL, NULL, &ss->ps.ablation, ss->ps.ablation_desc,
                           sizeof ss->ps.ablation_desc, &e); /* the heads checked before anything is averaged */
    if (!rc && ((need & NEED_STORIES) || mean)) rc = entry_stories(&s->cache, m, s->o.stories, &e);
    if (!rc && mean) rc = entry_mean(m, s->o.stories, &e);
    pthread_mutex_lock(&m->lock); /* not while another request loads the stories into it */
    ss->ps = m->ps;               /* shared model, tokenizer, stories and names; never closed here */
    pthread_mutex_unlock(&m->lock);
    ss->ps.stories_path = need & NEED_STORIES ? m->teach : NULL; /* the model's teaching stories (teach.c) */
    ss->ps.mean = NULL;
    if (!rc)
        rc = slm_ablation_parse(&m->ps.lm, ablate, "\"ablate\": ", mode, m->mean, m->teach, &ss->ps.ablation,
                                ss->ps.ablation_desc, sizeof ss->ps.ablation_desc, &e);
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
