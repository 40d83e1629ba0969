/* The chapter's problem: a token is a far repeat when it was seen earlier in
 * the story but not among the 8 tokens before it (out of chapter 6's reach);
 * [EOS] and the most common tokens left out never are. */
#include <string.h>

#include "check.h"
#include "storylm/probes.h"

int main(void) {
    enum { V = 16, EOS = 0 };
    int last[V];
    uint8_t left_out[V] = {0}, far[32];
    /* [EOS] lily a b c d e f g h lily: 9 back from the first mention */
    int32_t nine[] = {EOS, 5, 1, 2, 3, 4, 6, 7, 8, 9, 5};
    CHECK(slm_far_repeat_marks(nine, 11, EOS, left_out, last, far) == 1);
    CHECK(far[10] == 1 && far[1] == 0);
    /* 8 back is the first of the 8 tokens before it: not marked */
    int32_t eight[] = {EOS, 5, 1, 2, 3, 4, 6, 7, 8, 5};
    CHECK(slm_far_repeat_marks(eight, 10, EOS, left_out, last, far) == 0);
    /* the last mention counts, not the first: seen 12 back, then 2 back */
    int32_t again[] = {EOS, 5, 1, 2, 3, 4, 6, 7, 8, 9, 10, 5, 11, 5};
    CHECK(slm_far_repeat_marks(again, 14, EOS, left_out, last, far) == 1);
    CHECK(far[11] == 1 && far[13] == 0);
    /* a common token left out is never marked, nor [EOS] */
    left_out[5] = 1;
    CHECK(slm_far_repeat_marks(nine, 11, EOS, left_out, last, far) == 0);
    int32_t eos[] = {EOS, 1, 2, 3, 4, 6, 7, 8, 9, 10, EOS};
    CHECK(slm_far_repeat_marks(eos, 11, EOS, left_out, last, far) == 0);
    return check_report();
}
