/* A persistent pool of worker threads for the forward pass.
 *
 * threadpool_run() hands one function to every thread (the caller is thread
 * 0) and returns when all of them have finished it. Workers spin briefly
 * between jobs (a decode step dispatches a few dozen small jobs back to back)
 * and then sleep on a condition variable so an idle model costs no CPU. */
#ifndef TOKSCOPE_THREADPOOL_H
#define TOKSCOPE_THREADPOOL_H

typedef struct threadpool threadpool;

/* fn(arg, ith, nth): ith in [0, nth). */
typedef void (*threadpool_fn)(void *arg, int ith, int nth);

/* n_threads counts the caller; n_threads <= 1 creates no threads. NULL on failure. */
threadpool *threadpool_create(int n_threads);
void threadpool_free(threadpool *tp);
int threadpool_n_threads(const threadpool *tp);

/* Runs fn on n threads (1 <= n <= threadpool_n_threads; others stay idle)
 * and waits for all of them. Not reentrant. */
void threadpool_run(threadpool *tp, int n, threadpool_fn fn, void *arg);

/* Online CPUs (at least 1). */
int threadpool_default_threads(void);

#endif
