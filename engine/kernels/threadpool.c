/* Persistent worker pool with chunk claiming.
 *
 * One 64-bit atomic word describes the current job: generation (24 bits),
 * chunk count (20 bits) and next unclaimed chunk (20 bits). Claiming a chunk
 * is a compare-and-swap on that word, so a thread that wakes up late can
 * never claim a chunk of a job other than the one it saw, and the job's
 * fn/arg stay valid while any of its chunks is claimed but not done (the
 * caller waits for `done` to reach the chunk count before starting the next
 * job). */
#include "kernels/threadpool.h"

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

/* Spinning between jobs bridges the serial work of one token; after that a
 * worker sleeps so an idle model costs no CPU. */
#define SPIN_ITERS 4000

#define GEN_SHIFT 40
#define NCH_SHIFT 20
#define FIELD_MASK ((UINT64_C(1) << 20) - 1)

struct worker {
    threadpool *tp;
    int ith;
    pthread_t thread;
};

struct threadpool {
    int n_threads;
    struct worker *workers; /* n_threads - 1 */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t state;  /* gen | n_chunks | next */
    _Atomic int64_t done;
    atomic_int n_sleeping;
    atomic_bool quit;
    uint64_t gen;            /* caller's copy */
    threadpool_fn fn;
    void *arg;
};

static inline uint64_t st_gen(uint64_t s) { return s >> GEN_SHIFT; }

/* Claims and runs chunks of job `gen` until none are left. */
static void work(threadpool *tp, int ith, uint64_t gen)
{
    uint64_t s = atomic_load(&tp->state);
    for (;;) {
        if (st_gen(s) != gen)
            return;
        const uint64_t n = (s >> NCH_SHIFT) & FIELD_MASK, next = s & FIELD_MASK;
        if (next >= n)
            return;
        if (!atomic_compare_exchange_weak(&tp->state, &s, s + 1))
            continue; /* s reloaded */
        tp->fn(tp->arg, ith, (int64_t)next, (int64_t)n);
        atomic_fetch_add_explicit(&tp->done, 1, memory_order_release);
        s = atomic_load(&tp->state);
    }
}

static void *worker_main(void *p)
{
    struct worker *w = p;
    threadpool *tp = w->tp;
    uint64_t seen = 0;
    for (;;) {
        uint64_t g = seen;
        for (int i = 0; i < SPIN_ITERS && g == seen; i++) {
            g = st_gen(atomic_load_explicit(&tp->state, memory_order_acquire));
            if (g == seen)
                cpu_relax();
        }
        if (g == seen) {
            pthread_mutex_lock(&tp->mu);
            atomic_fetch_add(&tp->n_sleeping, 1);
            while ((g = st_gen(atomic_load(&tp->state))) == seen && !atomic_load(&tp->quit))
                pthread_cond_wait(&tp->cv, &tp->mu);
            atomic_fetch_sub(&tp->n_sleeping, 1);
            pthread_mutex_unlock(&tp->mu);
        }
        if (atomic_load(&tp->quit))
            return NULL;
        seen = g;
        work(tp, w->ith, g);
    }
}

int threadpool_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)(n > 256 ? 256 : n);
}

threadpool *threadpool_create(int n_threads)
{
    if (n_threads < 1)
        n_threads = 1;
    threadpool *tp = calloc(1, sizeof *tp);
    if (!tp)
        return NULL;
    tp->n_threads = 1;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->cv, NULL);
    atomic_init(&tp->state, 0);
    atomic_init(&tp->done, 0);
    atomic_init(&tp->n_sleeping, 0);
    atomic_init(&tp->quit, false);
    if (n_threads > 1) {
        tp->workers = calloc((size_t)n_threads - 1, sizeof *tp->workers);
        if (!tp->workers) {
            threadpool_free(tp);
            return NULL;
        }
        for (int i = 0; i < n_threads - 1; i++) {
            tp->workers[i].tp = tp;
            tp->workers[i].ith = i + 1;
            if (pthread_create(&tp->workers[i].thread, NULL, worker_main, &tp->workers[i]) != 0)
                break; /* run with the threads we got */
            tp->n_threads = i + 2;
        }
    }
    return tp;
}

void threadpool_free(threadpool *tp)
{
    if (!tp)
        return;
    pthread_mutex_lock(&tp->mu);
    atomic_store(&tp->quit, true);
    pthread_cond_broadcast(&tp->cv);
    pthread_mutex_unlock(&tp->mu);
    for (int i = 0; i < tp->n_threads - 1; i++)
        pthread_join(tp->workers[i].thread, NULL);
    free(tp->workers);
    pthread_mutex_destroy(&tp->mu);
    pthread_cond_destroy(&tp->cv);
    free(tp);
}

int threadpool_n_threads(const threadpool *tp) { return tp->n_threads; }

void threadpool_run(threadpool *tp, int64_t n_chunks, threadpool_fn fn, void *arg)
{
    if (n_chunks <= 0)
        return;
    if (n_chunks > THREADPOOL_MAX_CHUNKS)
        n_chunks = THREADPOOL_MAX_CHUNKS;
    if (tp->n_threads <= 1 || n_chunks == 1) {
        for (int64_t c = 0; c < n_chunks; c++)
            fn(arg, 0, c, n_chunks);
        return;
    }
    tp->fn = fn;
    tp->arg = arg;
    atomic_store(&tp->done, 0);
    tp->gen = (tp->gen + 1) & ((UINT64_C(1) << 24) - 1);
    if (tp->gen == 0)
        tp->gen = 1; /* workers start having "seen" 0 */
    atomic_store(&tp->state, (tp->gen << GEN_SHIFT) | ((uint64_t)n_chunks << NCH_SHIFT));
    if (atomic_load(&tp->n_sleeping) > 0) {
        pthread_mutex_lock(&tp->mu);
        pthread_cond_broadcast(&tp->cv);
        pthread_mutex_unlock(&tp->mu);
    }
    work(tp, 0, tp->gen);
    /* Only chunks a worker has claimed and is running remain. */
    for (unsigned i = 0; atomic_load_explicit(&tp->done, memory_order_acquire) < n_chunks; i++) {
        if (i < 1u << 14)
            cpu_relax();
        else
            sched_yield();
    }
}
