/* What the interpretability verbs (patch, attribute, cache) share: a text
 * as the network reads it, and a token named on the command line. */
#ifndef STORYLM_CLI_INTERP_COMMON_H
#define STORYLM_CLI_INTERP_COMMON_H

#include "probe_common.h"

/* [EOS] and the pieces of text into ids (cleared first). */
int interp_encode(const ProbeSession *ps, const char *text, IntVec *ids, Error *e);
/* ids as "[EOS] lily went ##s" into buf (size), cut with "..." when long. */
void interp_pieces(const ProbeSession *ps, const int32_t *ids, int n, char *buf, size_t size);
/* The id of the vocabulary piece text ("max", "##ark", "[EOS]"); flag names
 * the option for the message when it is not one. */
int interp_token(const ProbeSession *ps, const char *text, const char *flag, int32_t *id, Error *e);
/* The most likely token at position p after a run, leaving out skip (-1: none). */
int32_t interp_top_guess(const Activations *a, int p, int32_t skip);

#endif
