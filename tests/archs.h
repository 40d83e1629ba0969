/* The registered architectures by their modules' names, for the tests'
 * configurations (constant expressions, as a static ModelConfig needs);
 * code outside the tests finds them by name (arch.h's registry). */
#ifndef STORYLM_TESTS_ARCHS_H
#define STORYLM_TESTS_ARCHS_H

#include "storylm/arch.h"

extern const Architecture slm_attention_arch, slm_window8_arch, slm_transformer_arch;

#endif
