/* What training needs of the ranks beyond the shards' exchange (internal to
 * src/train): the same data on every rank, the rank count in the model file
 * and a resume that keeps it. */
#ifndef STORYLM_TRAIN_DIST_H
#define STORYLM_TRAIN_DIST_H

#include "storylm/checkpoint.h"
#include "storylm/dist.h"
#include "storylm/model.h"

/* Fails unless every rank read the same ids and held-out split. */
int slm_train_dist_same_data(Dist *d, uint64_t data_hash, const char *data_path, Error *e);
/* Fails unless every rank starts from the same weights at the same step (a
 * resume reads --out on every rank); then training begins: the exchanges get
 * the deadline (dist.h). */
int slm_train_dist_same_start(Dist *d, const Model *m, int step, const char *out, Error *e);
/* "ranks" in a model file trained on more than one (a single process's
 * file stays as it was). */
int slm_train_dist_set_meta(const Dist *d, Metadata *md, Error *e);
/* Refuses to resume a file of another rank count: the shards, and so the
 * numbers, would change under the run. */
int slm_train_dist_check_resume(const Dist *d, const Metadata *md, const char *path, Error *e);

#endif
