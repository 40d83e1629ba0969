/* Threads that sleep between jobs: see include/storylm/workers.h. */
#include "storylm/workers.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct WorkerStart {
    Workers *w;
    int i;
} WorkerStart;

/* Runs the job of one round on thread i, with OpenMP one thread wide. */
static void run_job(Workers *w, WorkerJob job, void *arg, int i) {
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    job(arg, i, w->n);
    omp_set_num_threads(threads);
}

static void *worker_main(void *p) {
    Workers *w = ((WorkerStart *)p)->w;
    int i = ((WorkerStart *)p)->i;
    free(p);
    unsigned long seen = 0;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->quit && w->round == seen) pthread_cond_wait(&w->wake, &w->lock);
        if (w->quit) break;
        seen = w->round;
        WorkerJob job = w->job;
        void *arg = w->arg;
        pthread_mutex_unlock(&w->lock);
        run_job(w, job, arg, i);
        pthread_mutex_lock(&w->lock);
        if (--w->busy == 0) pthread_cond_signal(&w->done);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int slm_workers_init(Workers *w, int n, Error *e) {
    *w = (Workers){.n = n < 1 ? 1 : n};
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->done, NULL);
    if (w->n == 1) return 0;
    w->threads = xcalloc((size_t)w->n - 1, sizeof(pthread_t), e);
    if (!w->threads) return -1;
    for (int i = 1; i < w->n; i++) {
        WorkerStart *s = xmalloc(sizeof *s, e);
        if (!s) return -1;
        *s = (WorkerStart){w, i};
        int rc = pthread_create(&w->threads[i - 1], NULL, worker_main, s);
        if (rc) {
            free(s);
            return FAIL(e, "run with fewer --threads", "cannot start worker thread %d of %d: %s", i, w->n,
                        strerror(rc));
        }
        w->started = i;
    }
    return 0;
}

void slm_workers_free(Workers *w) {
    pthread_mutex_lock(&w->lock);
    w->quit = 1;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->started; i++) pthread_join(w->threads[i], NULL);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->done);
    pthread_mutex_destroy(&w->lock);
    free(w->threads);
    *w = (Workers){0};
}

void slm_workers_run(Workers *w, WorkerJob job, void *arg) {
    if (w->n == 1) {
        run_job(w, job, arg, 0);
        return;
    }
    pthread_mutex_lock(&w->lock);
    w->job = job;
    w->arg = arg;
    w->busy = w->n - 1;
    w->round++;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    run_job(w, job, arg, 0);
    pthread_mutex_lock(&w->lock);
    while (w->busy > 0) pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
}
