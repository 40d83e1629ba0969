/* Ablation from the user's flags (--ablate HEADS, --ablate-mode zero|mean
 * parsed into an AblationMode by the parameter tables, --stories): the Ablation of model.h that the forward passes
 * honour, with the head means that mean mode needs and a sentence saying what was done. Never prints. */
#ifndef STORYLM_ABLATION_H
#define STORYLM_ABLATION_H

#include <stddef.h>

#include "storylm/error.h"
#include "storylm/loaded_model.h"
#include "storylm/model.h"
#include "storylm/stories.h"

/* The stories file a verb that reads none of its own averages over (what:
 * "--ablate-mode mean"): given (--stories), whose size and hash are checked
 * against the model's record (record.h), warning (size) then saying how it
 * differs ("" when it does not, or the record cannot tell). A model file
 * holds no path to fall back on: given NULL fails, the hint naming the file
 * the model was trained on. NULL on failure. */
const char *slm_ablation_mean_stories(const LoadedModel *lm, const char *given, const char *what, char *warning,
                                      size_t size, Error *e);

/* --ablate and --ablate-mode for a loaded model: fills ab (heads, mode) and,
 * for mean, *mean (caller frees) averaged over the held-out test stories of
 * s (read from stories_path), or when s is NULL of the file stories_path
 * (slm_ablation_mean_stories: needed, and checked against the model's record).
 * desc (size) says what was done, for reports ("" when nothing), with a
 * warning when stories_path is not the model's training file. */
int slm_ablation_setup(const LoadedModel *lm, const char *ablate, AblationMode mode, const Stories *s,
                       const char *stories_path, int n_test, Ablation *ab, float **mean, char *desc, size_t size,
                       Error *e);

/* The same with each head's mean output (H, vd) already at hand (mean NULL
 * in mean mode: checks the heads only); mean_from names its stories in desc. */
int slm_ablation_parse(const LoadedModel *lm, const char *ablate, AblationMode mode, const float *mean,
                       const char *mean_from, Ablation *ab, char *desc, size_t size, Error *e);

/* " (warning: WARNING)" after desc (size bytes), as far as it fits; nothing for an empty warning. */
void slm_ablation_add_warning(char *desc, size_t size, const char *warning);

#endif
