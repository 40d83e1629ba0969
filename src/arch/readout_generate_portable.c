/* readout_generate.c compiled again on generation's portable kernels
 * (src/generate/kernels_portable.h, whose renames come first, alone in
 * their block, so that they apply to all of it): the attention network's and
 * window8's generator for generate --kernels portable, the same code with
 * every kernel a twin whose sums have one order on every target. */
#include "../generate/kernels_portable.h"
#define slm_readout_generator slm_readout_generator_portable

#include "readout_generate.c"
