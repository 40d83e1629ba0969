/* storylm version: the program's version and the libraries it was built with. */
#include <cblas.h>
#include <stdio.h>

#include "args.h"

static int run(int argc, char **argv);
const Command command_version = {"version", "print the version and the libraries in use", "storylm version [options]",
                                 "Prints storylm's version and the BLAS configuration.", run};

static int run(int argc, char **argv) {
    const char *pos[1];
    int np;
    int rc = args_parse(&command_version, argc, argv, NULL, 0, pos, 0, 0, &np);
    if (rc) return rc > 0 ? 0 : 2;
    printf("storylm %s\n%s, %d threads\n", STORYLM_VERSION, openblas_get_config(), openblas_get_num_threads());
    return 0;
}
