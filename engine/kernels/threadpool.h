/* A persistent pool of worker threads for the forward pass.
 *
 * A job is split into chunks; the caller and the workers claim chunks from
 * one atomic counter until none are left. The caller never waits for a
 * worker that has not started: on a busy machine (a worker not scheduled) it
 * simply does all the chunks itself, so a late worker costs nothing. Workers
 * spin briefly between jobs (a decode step dispatches a few dozen small jobs
 * back to back) and then sleep on a condition variable. */
#ifndef TOKSCOPE_THREADPOOL_H
#define TOKSCOPE_THREADPOOL_H

#include <stdint.h>

typedef struct threadpool threadpool;

/* Processes chunk `chunk` of n_chunks. ith in [0, n_threads) identifies the
 * running thread (for per-thread scratch); the caller is 0. */
typedef void (*threadpool_fn)(void *arg, int ith, int64_t chunk, int64_t n_chunks);

/* n_threads counts the caller; n_threads <= 1 creates no threads. NULL on failure. */
threadpool *threadpool_create(int n_threads);
void threadpool_free(threadpool *tp);
int threadpool_n_threads(const threadpool *tp);

#define THREADPOOL_MAX_CHUNKS ((1 << 20) - 1)

/* Runs fn over chunks [0, n_chunks) (1 <= n_chunks <= THREADPOOL_MAX_CHUNKS)
 * and returns when all are done. n_chunks == 1 runs inline. Not reentrant. */
void threadpool_run(threadpool *tp, int64_t n_chunks, threadpool_fn fn, void *arg);

/* Online CPUs (at least 1). */
int threadpool_default_threads(void);

#endif
