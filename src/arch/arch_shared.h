/* What the modules of src/arch share (private to src/arch): reading and
 * writing their metadata keys (arch_shared.c), and the chapter's readout's
 * generator, which the attention network and window8 both step
 * (readout_generate.c). */
#ifndef STORYLM_SRC_ARCHITECTURE_SHARED_H
#define STORYLM_SRC_ARCHITECTURE_SHARED_H

#include "storylm/arch.h"

/* The hint of a model file whose keys are wrong (checkpoint.c's too). */
#define SLM_BAD_MODEL_HINT "the file is damaged or was not written by storylm; train or save the model again"

/* "layers" (absent: 1) into c->n_layers, a whole number from 1 to max. */
int slm_arch_read_layers(ModelConfig *c, ConfigGet get, void *ctx, int max, Error *e);
/* "pos" and "score" (each absent: the chapter's) into c; a name storylm
 * does not know is refused. */
int slm_arch_read_variant(ModelConfig *c, ConfigGet get, void *ctx, Error *e);
/* "pos" and "score" as c has them; "layers" when more than one. */
int slm_arch_write_variant(const ModelConfig *c, ConfigPut put, void *ctx, Error *e);
int slm_arch_write_layers(const ModelConfig *c, ConfigPut put, void *ctx, Error *e);

/* The generator of the attention network and window8 (generate.h's batch
 * functions run it): key/value caches of every layer's heads, or window8's
 * last rows, then the readout. */
extern const struct GeneratorOps slm_readout_generator;
extern const struct GeneratorOps slm_readout_generator_portable; /* readout_generate_portable.c */

#endif
