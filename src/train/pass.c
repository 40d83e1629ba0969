/* A pass over stories: see src/train/pass.h. */
#include "pass.h"

#include <omp.h>
#include <stdlib.h>

int slm_pass_init(Pass *p, const Model *m, Dist *dist, Kernels k, int max_positions, int longest, int max_stories,
                  Error *e) {
    *p = (Pass){0};
    int threads = omp_get_max_threads(), shards = slm_shards_count(k, threads, dist);
    int positions = (max_positions + shards - 1) / shards;
    p->refs = xmalloc((size_t)max_stories * sizeof(StoryRef), e);
    if (!p->refs) return -1;
    return slm_shards_init_dist(&p->shards, m, threads, dist, k, slm_shards_positions(&m->cfg, positions, longest),
                                max_stories, e);
}

void slm_pass_free(Pass *p) {
    slm_shards_free(&p->shards);
    free(p->refs);
    free(p->ids);
}

int slm_pass_refs(Pass *p, const Stories *s, const int *idx, int n, Error *e) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += story_len(s, idx[i]);
    if (total > p->ids_cap) {
        int32_t *ids = xrealloc(p->ids, total * sizeof *ids, e);
        if (!ids) return -1;
        p->ids = ids;
        p->ids_cap = total;
    }
    for (size_t i = 0, at = 0; i < (size_t)n; i++) {
        story_copy_ids(s, idx[i], p->ids + at);
        p->refs[i] = (StoryRef){p->ids + at, (int)story_len(s, idx[i])};
        at += story_len(s, idx[i]);
    }
    return 0;
}

/* Predicted positions of p->refs[0..n) (a rewritten story may have changed length). */
static long long slm_pass_refs_positions(const Pass *p, int n) {
    long long total = 0;
    for (int i = 0; i < n; i++) total += p->refs[i].len - 1;
    return total;
}

int slm_pass_go(Pass *p, int n, const Ablation *ab, float *grads, double *loss_sum, long long *correct, Error *e) {
    long long total = slm_pass_refs_positions(p, n);
    return slm_shards_run(&p->shards, p->refs, n, ab, total > 0 ? 1.0f / (float)total : 0.0f, grads, loss_sum, correct,
                          e);
}
