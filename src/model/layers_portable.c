/* layers.c compiled again as the portable kernels (portable.h): the renames
 * come first, alone in their block, so that they apply to all of layers.c. */
#define SLM_PORTABLE 1
#include "portable.h"

#include "layers.c"
