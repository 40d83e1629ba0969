/* The OpenMP runtime of the single-thread WebAssembly build: there is no
 * libomp for wasm, and without -fopenmp every `omp` pragma is left out, so
 * the library runs as with one thread. Only the calls the library makes. */
#include <omp.h>

int omp_get_max_threads(void) { return 1; }

int omp_get_num_threads(void) { return 1; }

int omp_get_thread_num(void) { return 0; }

int omp_in_parallel(void) { return 0; }

void omp_set_num_threads(int n) { (void)n; }
