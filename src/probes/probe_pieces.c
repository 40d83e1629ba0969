/* Secret 4, what one layer cannot do: heroes renamed to names of several
 * pieces (and, on a model of several layers, which heads do the two steps:
 * PieceHeads). Where the name comes back, after its first piece, the right next
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

/* Head g's weight at position p on the key at position u (0 outside p's window). */
static double weight_on(const Activations *a, int g, int p, int u) {
    int first, n_keys;
    const float *w = slm_activations_attention(a, g, p, &first, &n_keys);
    return u >= first && u < first + n_keys ? w[u - first] : 0.0;
}

/* One later mention, at the later first piece `later`, of a name whose
 * first mention's first piece stands at `earlier`: the two steps, every head. */
static void add_heads(const Activations *a, int earlier, int later, PieceHeads *ph) {
    int first, n_keys;
    slm_activations_attention(a, 0, later, &first, &n_keys);
    ph->even += 1.0 / n_keys;
    for (int g = 0; g < ph->n_heads; g++) {
        ph->previous[g] += weight_on(a, g, earlier + 1, earlier);
        ph->induction[g] += weight_on(a, g, later, earlier + 1);
    }
    ph->mentions++;
}

/* The later mentions (starts[1..n)) of the story run last, ids (len);
 * heads (NULL: not measured) over them. */
static int measure(const Activations *a, const int32_t *ids, int len, const int *starts, int n, PieceScore *row,
                   PieceSums *ps, PieceHeads *heads, Error *e) {
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
        if (heads) add_heads(a, starts[0], s, heads);
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
                           int n, const SwapName *name, const Ablation *ab, PieceScore *row, PieceHeads *heads,
                           Error *e) {
    PieceSums ps = {0};
    IntVec ids = {0};
    int starts[HERO_MAX_MENTIONS], rc = 0, unused;
    *row = (PieceScore){0};
    StoryBuf buf = {0};
    for (int i = 0; !rc && i < n; i++) {
        const int32_t *story = slm_story_ids(s, idx[i], &buf, e);
        int len = (int)story_len(s, idx[i]);
        Hero hero;
        if (!story)
            rc = -1;
        else if (!slm_find_hero(t, nl, story, len, &hero))
            continue;
        else if (slm_find_word(t, story, len, name->pieces, name->n_pieces, &unused, 0) > 0)
            continue;
        else
            rc = slm_swap_hero(story, len, &hero, name->pieces, name->n_pieces, &ids, starts, e);
        if (!rc) rc = slm_probe_run(r, ids.data, (int)ids.len, ab, e);
        if (!rc)
            rc = measure(&r->acts, ids.data, (int)ids.len, starts, hero.n_mentions, row, &ps,
                         name->n_pieces > 1 ? heads : NULL, e);
    }
    if (!rc) finish(row, &ps);
    free(ps.ranks);
    slm_story_buf_free(&buf);
    slm_intvec_free(&ids);
    return rc;
}

/* Sums into means. */
static void finish_heads(PieceHeads *ph) {
    double n = ph->mentions > 0 ? (double)ph->mentions : NAN;
    ph->even /= n;
    for (int g = 0; g < ph->n_heads; g++) ph->previous[g] /= n, ph->induction[g] /= n;
}

int slm_probe_pieces(const Model *m, const Tokenizer *t, const NameList *nl, const Stories *s, const int *idx, int n,
                     const SwapName *names, int n_names, const Ablation *ablation, PieceScore *rows, PieceHeads *heads,
                     Error *e) {
    if (heads) {
        *heads = (PieceHeads){.n_heads = slm_model_heads(&m->cfg)};
        if (slm_probe_need_heads(m, "Secret 4's table of the two lookups", e)) return -1;
    }
    ProbeRunner r;
    int rc = slm_probe_runner_init(&r, m, 1024, e);
    for (int k = 0; !rc && k < n_names; k++)
        rc = pieces_for_name(&r, t, nl, s, idx, n, &names[k], ablation, &rows[k], heads, e);
    if (!rc && heads) finish_heads(heads);
    slm_probe_runner_free(&r);
    return rc;
}
