/* Per-thread GEMM scratch (see kernel_scratch.h). */
#include "kernels/kernel_scratch.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static __thread void *scratch_p;
static __thread size_t scratch_n;

static void scratch_init(void)
{
    (void)pthread_key_create(&scratch_key, free);
}

void *kernel_scratch_get(size_t bytes)
{
    if (bytes <= scratch_n)
        return scratch_p;
    pthread_once(&scratch_once, scratch_init);
    free(scratch_p);
    scratch_p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    scratch_n = scratch_p ? bytes : 0;
    (void)pthread_setspecific(scratch_key, scratch_p);
    return scratch_p;
}
