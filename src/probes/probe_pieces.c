/* Secret 4, what one layer cannot do: heroes renamed to names of several
 * pieces. Where the name comes back, after its first piece, the right next
 * piece is the one that followed the first piece at the first mention: two
 * lookups (find the earlier first piece, read the token after it), which one
 * layer of attention cannot chain. Compared with the same measure for a name
 * of one piece, where "the token that followed it" is the word after the name. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "storylm/probes.h"

typedef struct PieceSums {
    double first_p, first_top1, next_p, next_top1;
    int *ranks; /* every "next" rank, for the median */
    long long n_ranks, cap_ranks;
} PieceSums;

static int add_rank(PieceSums *ps, int rank, Error *e) {
    if (ps->n_ranks == ps->cap_ranks) {
        long long want = ps->cap_ranks ? ps->cap_ranks * 2 : 256;
        int *r = xrealloc(ps->ranks, (size_t)want * sizeof(int), e);
        if (!r) return -1;
        ps->ranks = r;
        ps->cap_ranks = want;
    }
    ps->ranks[ps->n_ranks++] = rank;
    return 0;
}

/* The later mentions (starts[1..n)) of the story run last, ids (len). */
static int measure(const Activations *a, const int32_t *ids, int len, const int *starts, int n, PieceScore *row,
                   PieceSums *ps, Error *e) {
    int32_t first = ids[starts[0]], follower = starts[0] + 1 < len ? ids[starts[0] + 1] : -1;
    for (int k = 1; k < n; k++) {
        int s = starts[k], rank;
        if (follower < 0 || s + 1 >= len) continue;
        double p = slm_probe_probability(a, s - 1, first, &rank);
        ps->first_p += p;
        ps->first_top1 += rank == 1;
        p = slm_probe_probability(a, s, follower, &rank);
        ps->next_p += p;
        ps->next_top1 += rank == 1;
        if (add_rank(ps, rank, e)) return -1;
        row->mentions++;
    }
    row->stories++;
    return 0;
}

static int compare_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void finish(PieceScore *row, PieceSums *ps) {
    double n = (double)row->mentions;
    row->first_probability = n > 0 ? ps->first_p / n : NAN;
    row->first_top1 = n > 0 ? ps->first_top1 / n : NAN;
    row->next_probability = n > 0 ? ps->next_p / n : NAN;
    row->next_top1 = n > 0 ? ps->next_top1 / n : NAN;
    row->next_median_rank = NAN;
    if (ps->n_ranks > 0) {
        qsort(ps->ranks, (size_t)ps->n_ranks, sizeof(int), compare_int);
        long long h = ps->n_ranks / 2;
        row->next_median_rank = ps->n_ranks % 2 ? ps->ranks[h] : 0.5 * (ps->ranks[h - 1] + ps->ranks[h]);
    }
}

/* Every story of idx with a hero (and without name already) renamed to name. */
static int pieces_for_name(ProbeRunner *r, const Tokenizer *t, const NameList *nl, const Stories *s, const int *idx,
                           int n, const SwapName *name, const Ablation *ab, PieceScore *row, Error *e) {
    PieceSums ps = {0};
    IntVec ids = {0};
    int starts[HERO_MAX_MENTIONS], rc = 0, unused;
    *row = (PieceScore){0};
    StoryBuf buf = {0};
    for (int i = 0; !rc && i < n; i++) {
        const int32_t *story = slm_story_ids(s, idx[i], &buf, e);
        int len = (int)story_len(s, idx[i]);
        Hero hero;
        if (!story) rc = -1;
        else if (!slm_find_hero(t, nl, story, len, &hero)) continue;
        else if (slm_find_word(t, story, len, name->pieces, name->n_pieces, &unused, 0) > 0) continue;
        else rc = slm_swap_hero(story, len, &hero, name->pieces, name->n_pieces, &ids, starts, e);
        if (!rc) rc = slm_probe_run(r, ids.data, (int)ids.len, ab, e);
        if (!rc) rc = measure(&r->acts, ids.data, (int)ids.len, starts, hero.n_mentions, row, &ps, e);
    }
    if (!rc) finish(row, &ps);
    free(ps.ranks);
    slm_story_buf_free(&buf);
    slm_intvec_free(&ids);
    return rc;
}

int slm_probe_pieces(const Model *m, const Tokenizer *t, const NameList *nl, const Stories *s, const int *idx, int n,
                 const SwapName *names, int n_names, const Ablation *ablation, PieceScore *rows, Error *e) {
    ProbeRunner r;
    int rc = slm_probe_runner_init(&r, m, 1024, e);
    for (int k = 0; !rc && k < n_names; k++) rc = pieces_for_name(&r, t, nl, s, idx, n, &names[k], ablation, &rows[k], e);
    slm_probe_runner_free(&r);
    return rc;
}
