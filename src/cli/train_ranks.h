/* train under mpirun: what the front end adds to the library's exchanges
 * (dist.h) so that ranks never train with mixed settings and never leave a
 * job hanging. */
#ifndef STORYLM_CLI_TRAIN_RANKS_H
#define STORYLM_CLI_TRAIN_RANKS_H

#include "args.h"
#include "storylm/dist.h"

/* Fails on every rank alike unless all were given the same options (every
 * one of t's, as parsed into params, but the paths of outputs and inputs
 * and --json) and read the
 * same stories and vocabulary files (their size and FNV-1a hash, as the model
 * records them). The message names the first difference and both values. */
int cli_train_ranks_agree(Dist *d, const ParamTable *t, const void *params, const char *stories, const char *vocab_path,
                          Error *e);
/* Reports e and ends this rank's part: once (by rank 0) when every rank
 * failed alike, else by every rank (named) and stopping the job, since the
 * others may be waiting for this one. Returns the exit code. */
int cli_train_ranks_fail(Dist *d, Error *e);

#endif
