/* Whether a stories file fits the run about to train on it, checked before
 * the first step: a vocabulary that turns more than a small share of the
 * stories' tokens into [UNK] (one left in the folder from another corpus, say),
 * and a file of which a good part was skipped as not UTF-8 (a Windows-1252
 * export). Each refusal says what was measured and the command that mends it;
 * the caller decides whether the user accepted it on purpose. Never prints. */
#ifndef STORYLM_STORIES_FIT_H
#define STORYLM_STORIES_FIT_H

#include <stddef.h>

#include "storylm/error.h"
#include "storylm/stories.h"
#include "storylm/tokenizer.h"

/* More [UNK] than this share of all tokens ([EOS] included) is refused. */
#define STORIES_MAX_UNKNOWN_SHARE 0.01

/* The [UNK] tokens (unk_id) among all of s's tokens, train and test. */
size_t slm_stories_count_unknown(const Stories *s, int unk_id);

/* -1 with e giving the share, a word of the stories file (path) that became
 * [UNK], and how to learn a vocabulary that fits, when more than
 * STORIES_MAX_UNKNOWN_SHARE of s's tokens are tok's [UNK]; vocab_path names
 * the vocabulary. accept_flag: the flag that trains anyway, for the hint. */
int slm_stories_check_unknown(const Stories *s, const Tokenizer *tok, const char *path, const char *vocab_path,
                              const char *accept_flag, Error *e);

/* -1 with e giving the counts and the iconv command (slm_stories_encoding_hint)
 * when that many of the stories in path were skipped as not UTF-8 that the
 * run would train on a part of the file; accept_flag as above. */
int slm_stories_check_skips(const StorySkips *k, int n_kept, const char *path, const char *accept_flag, Error *e);

#endif
