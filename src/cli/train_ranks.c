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
static void put_option(FILE *f, const Option *o) {
    fprintf(f, "--%s\t", o->name);
    switch (o->kind) {
        case OPT_BOOL: fputs(*(bool *)o->target ? "on" : "off", f); break;
        case OPT_INT: fprintf(f, "%d", *(int *)o->target); break;
        case OPT_DOUBLE: {
            char x[40];
            cli_format_exact(*(double *)o->target, x, sizeof x);
            fputs(x, f);
        } break;
        case OPT_STRING: fputs(*(const char **)o->target ? *(const char **)o->target : "(none)", f); break;
        case OPT_STRINGS: {
            const StringList *l = o->target;
            for (int i = 0; i < l->count; i++) fprintf(f, "%s%s", i ? "," : "", l->items[i]);
        } break;
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

int cli_train_ranks_agree(Dist *d, const Option *opts, int n_opts, const char *stories, const char *vocab_path,
                          Error *e) {
    if (dist_size(d) <= 1) return 0;
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    if (!f) return FAIL(e, "free some memory", "cannot compare the ranks' settings: out of memory");
    for (int i = 0; i < n_opts; i++)
        if (!may_differ(opts[i].name)) put_option(f, &opts[i]);
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
