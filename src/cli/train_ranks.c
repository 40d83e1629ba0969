/* train under mpirun: see train_ranks.h. */
#include "train_ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "storylm/fileio.h"
#include "storylm/record.h"

/* Options that may differ between ranks: where files are (each rank may run
 * on its own machine; their contents are compared instead) and the form of
 * rank 0's summary. */
static bool may_differ(const char *name) {
    return strcmp(name, "out") == 0 || strcmp(name, "vocab") == 0 || strcmp(name, "json") == 0;
}

/* "--name<TAB>value" for one option, as parsed. */
static void put_option(FILE *f, const ParamRef *r, const void *params) {
    const void *t = (const char *)params + r->offset;
    char x[64];
    fprintf(f, "--%s\t", r->p->name);
    switch (r->p->type) {
        case PARAM_BOOL: fputs(*(const bool *)t ? "on" : "off", f); break;
        case PARAM_INT: fprintf(f, "%d", *(const int *)t); break;
        case PARAM_DOUBLE:
            cli_format_exact(*(const double *)t, x, sizeof x);
            fputs(x, f);
            break;
        case PARAM_STRING:
        case PARAM_HEADS: fputs(*(const char *const *)t ? *(const char *const *)t : "(none)", f); break;
        case PARAM_CHOICE: fputs(slm_param_choice_name(r->p, *(const int *)t, x, sizeof x), f); break;
        case PARAM_STRINGS: {
            const StringList *l = t;
            for (int i = 0; i < l->count; i++) fprintf(f, "%s%s", i ? "," : "", l->items[i]);
        } break;
        case PARAM_GROUP: break;
    }
    fputc('\n', f);
}

/* "NAME<TAB>N bytes, FNV-1a H" for the file at path. */
static int put_file(FILE *f, const char *name, const char *path, Error *e) {
    StoriesRecord r;
    if (slm_record_of_file(&r, path, e)) return -1;
    fprintf(f, "%s\t%llu bytes, FNV-1a %016llx\n", name, (unsigned long long)r.bytes, (unsigned long long)r.fnv1a64);
    return 0;
}

int cli_train_ranks_agree(Dist *d, const ParamTable *t, const void *params, const char *stories, const char *vocab_path,
                          Error *e) {
    if (dist_size(d) <= 1) return 0;
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    if (!f) return FAIL(e, "free some memory", "cannot compare the ranks' settings: out of memory");
    ParamList l;
    slm_params_list(t, &l);
    for (int i = 0; i < l.n; i++) /* the positional STORIES: compared by its bytes below */
        if (!may_differ(l.at[i].p->name) && !(l.at[i].p->flags & PARAM_POSITIONAL)) put_option(f, &l.at[i], params);
    int rc = put_file(f, "the stories file", stories, e);
    if (!rc) rc = put_file(f, "the vocabulary", vocab_path, e);
    fclose(f);
    if (!rc) rc = slm_dist_same_text(d, text, e);
    free(text);
    return rc;
}

int cli_train_ranks_fail(Dist *d, Error *e) {
    if (d->agreed) {
        int rc = d->rank == 0 ? cli_fail(e) : 1;
        slm_dist_finalize(d);
        return rc;
    }
    if (d->rank != 0) slm_error_prefix(e, "rank %d: ", d->rank);
    int rc = cli_fail(e);
    slm_dist_abort(d, rc); /* the other ranks may be waiting for this one */
    return rc;
}
