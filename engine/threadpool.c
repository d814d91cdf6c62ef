/* Persistent worker pool: a generation counter announces a job, workers spin
 * on it for a short while before falling back to a condition variable. */
#include "threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* ~tens of microseconds of spinning: long enough to bridge the serial work
 * between the jobs of one token, short enough not to burn an idle core. */
#define SPIN_ITERS 20000

struct worker {
    threadpool *tp;
    int ith;
    pthread_t thread;
};

struct threadpool {
    int n_threads;
    struct worker *workers; /* n_threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t cv_job;  /* workers wait for a new generation */
    pthread_cond_t cv_done; /* caller waits for pending == 0 */
    atomic_uint gen;
    atomic_int pending;
    atomic_bool sleeping_caller;
    bool quit;
    /* current job */
    threadpool_fn fn;
    void *arg;
    int n_active;
};

static void *worker_main(void *p)
{
    struct worker *w = p;
    threadpool *tp = w->tp;
    unsigned seen = 0;
    for (;;) {
        unsigned g = 0;
        for (int i = 0; i < SPIN_ITERS; i++) {
            g = atomic_load_explicit(&tp->gen, memory_order_acquire);
            if (g != seen)
                break;
            cpu_relax();
        }
        if (g == seen) {
            pthread_mutex_lock(&tp->mu);
            while ((g = atomic_load(&tp->gen)) == seen && !tp->quit)
                pthread_cond_wait(&tp->cv_job, &tp->mu);
            bool quit = tp->quit;
            pthread_mutex_unlock(&tp->mu);
            if (quit)
                return NULL;
        }
        seen = g;
        if (tp->quit)
            return NULL;
        if (w->ith < tp->n_active)
            tp->fn(tp->arg, w->ith, tp->n_active);
        if (atomic_fetch_sub_explicit(&tp->pending, 1, memory_order_acq_rel) == 1 &&
            atomic_load(&tp->sleeping_caller)) {
            pthread_mutex_lock(&tp->mu);
            pthread_cond_signal(&tp->cv_done);
            pthread_mutex_unlock(&tp->mu);
        }
    }
}

int threadpool_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)(n > 512 ? 512 : n);
}

threadpool *threadpool_create(int n_threads)
{
    if (n_threads < 1)
        n_threads = 1;
    threadpool *tp = calloc(1, sizeof *tp);
    if (!tp)
        return NULL;
    tp->n_threads = n_threads;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->cv_job, NULL);
    pthread_cond_init(&tp->cv_done, NULL);
    atomic_init(&tp->gen, 0);
    atomic_init(&tp->pending, 0);
    atomic_init(&tp->sleeping_caller, false);
    if (n_threads > 1) {
        tp->workers = calloc((size_t)n_threads - 1, sizeof *tp->workers);
        if (!tp->workers) {
            free(tp);
            return NULL;
        }
        for (int i = 0; i < n_threads - 1; i++) {
            tp->workers[i].tp = tp;
            tp->workers[i].ith = i + 1;
            if (pthread_create(&tp->workers[i].thread, NULL, worker_main, &tp->workers[i]) != 0) {
                tp->n_threads = i + 1; /* run with what we got */
                break;
            }
        }
    }
    return tp;
}

void threadpool_free(threadpool *tp)
{
    if (!tp)
        return;
    pthread_mutex_lock(&tp->mu);
    tp->quit = true;
    atomic_fetch_add(&tp->gen, 1);
    pthread_cond_broadcast(&tp->cv_job);
    pthread_mutex_unlock(&tp->mu);
    for (int i = 0; i < tp->n_threads - 1; i++)
        pthread_join(tp->workers[i].thread, NULL);
    free(tp->workers);
    pthread_mutex_destroy(&tp->mu);
    pthread_cond_destroy(&tp->cv_job);
    pthread_cond_destroy(&tp->cv_done);
    free(tp);
}

int threadpool_n_threads(const threadpool *tp) { return tp->n_threads; }

void threadpool_run(threadpool *tp, int n, threadpool_fn fn, void *arg)
{
    if (n > tp->n_threads)
        n = tp->n_threads;
    if (n <= 1) {
        fn(arg, 0, 1);
        return;
    }
    tp->fn = fn;
    tp->arg = arg;
    tp->n_active = n;
    /* Every worker acknowledges every generation, active or not. */
    atomic_store(&tp->pending, tp->n_threads - 1);
    pthread_mutex_lock(&tp->mu);
    atomic_fetch_add_explicit(&tp->gen, 1, memory_order_release);
    pthread_cond_broadcast(&tp->cv_job);
    pthread_mutex_unlock(&tp->mu);
    fn(arg, 0, n);
    for (int i = 0; i < SPIN_ITERS; i++) {
        if (atomic_load_explicit(&tp->pending, memory_order_acquire) == 0)
            return;
        cpu_relax();
    }
    pthread_mutex_lock(&tp->mu);
    atomic_store(&tp->sleeping_caller, true);
    while (atomic_load(&tp->pending) != 0)
        pthread_cond_wait(&tp->cv_done, &tp->mu);
    atomic_store(&tp->sleeping_caller, false);
    pthread_mutex_unlock(&tp->mu);
}
