/* What training needs of the ranks: see src/train/train_dist.h. */
#include "train_dist.h"

#include <stdio.h>
#include <stdlib.h>

#include "storylm/fileio.h" /* slm_hash64 */

int slm_train_dist_same_data(Dist *d, uint64_t data_hash, const char *data_path, Error *e) {
    int same;
    if (slm_dist_same(d, data_hash, &same, e)) return -1;
    if (same) return 0;
    d->agreed = 1; /* every rank found it: each fails alike */
    return FAIL(e, "give every rank the same stories file and vocabulary (each rank reads them itself)",
                "the ranks read different token ids or held-out stories from '%s'", data_path ? data_path : "");
}

int slm_train_dist_set_meta(const Dist *d, Metadata *md, Error *e) {
    if (dist_size(d) <= 1) return 0;
    char buf[32];
    snprintf(buf, sizeof buf, "%d", dist_size(d));
    return slm_metadata_set(md, "ranks", buf, e);
}

int slm_train_dist_check_resume(const Dist *d, const Metadata *md, const char *path, Error *e) {
    const char *v = slm_metadata_get(md, "ranks");
    int ranks = v ? atoi(v) : 1;
    if (ranks == dist_size(d)) return 0;
    if (ranks == 1)
        return FAIL(e, "resume it without mpirun", "cannot resume '%s' on %d ranks: it was trained by one process",
                    path, dist_size(d));
    return FAIL(e, "resume with mpirun -np N, N the ranks it was trained on",
                "cannot resume '%s' on %d rank(s): it was trained on %d (the shards, and so the numbers, would change)",
                path, dist_size(d), ranks);
}

int slm_train_dist_same_start(Dist *d, const Model *m, int step, const char *out, Error *e) {
    if (dist_size(d) <= 1) return 0;
    int same;
    uint64_t h = slm_hash64(m->params, m->n_params * sizeof(float), (uint64_t)step);
    if (slm_dist_same(d, h, &same, e)) return -1;
    if (!same) {
        d->agreed = 1;
        return FAIL(e, "resume every rank from the same file (each rank reads --out itself), or train afresh",
                    "the ranks start from different weights or steps (resuming '%s')", out ? out : "");
    }
    d->started = 1; /* from here on every exchange has the deadline, not the start-up's */
    return 0;
}
