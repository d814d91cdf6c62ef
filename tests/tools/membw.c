/* membw: the machine's memory read bandwidth with N threads, as generation
 * uses it. Each thread sums its share of a buffer much larger than the
 * caches (default 1 GiB, in 2 MiB huge pages where the kernel gives them),
 * with several independent vector streams per thread; the best of a few
 * passes is printed in GB/s (10^9 bytes/s). `make bench` divides the bytes a
 * generated token reads by the time it took by this.
 *
 *   membw [-t THREADS] [-m MIB] [-r PASSES] */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct share {
    const uint8_t *p;
    size_t n;
    pthread_barrier_t *start;
    uint64_t sink;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *reader(void *arg)
{
    struct share *s = arg;
    pthread_barrier_wait(s->start);
#if defined(__AVX512F__)
    __m512i a[4];
    for (int k = 0; k < 4; k++)
        a[k] = _mm512_setzero_si512();
    for (size_t i = 0; i + 256 <= s->n; i += 256)
        for (int k = 0; k < 4; k++)
            a[k] = _mm512_add_epi64(a[k], _mm512_load_si512((const void *)(s->p + i + 64 * k)));
    const __m512i t = _mm512_add_epi64(_mm512_add_epi64(a[0], a[1]), _mm512_add_epi64(a[2], a[3]));
    s->sink = (uint64_t)_mm512_reduce_add_epi64(t);
#elif defined(__AVX2__)
    __m256i a[4];
    for (int k = 0; k < 4; k++)
        a[k] = _mm256_setzero_si256();
    for (size_t i = 0; i + 128 <= s->n; i += 128)
        for (int k = 0; k < 4; k++)
            a[k] = _mm256_add_epi64(a[k], _mm256_load_si256((const __m256i *)(s->p + i + 32 * k)));
    uint64_t v[4];
    _mm256_storeu_si256((__m256i *)v, _mm256_add_epi64(_mm256_add_epi64(a[0], a[1]), _mm256_add_epi64(a[2], a[3])));
    s->sink = v[0] + v[1] + v[2] + v[3];
#else
    uint64_t sum = 0;
    for (size_t i = 0; i + 8 <= s->n; i += 8) {
        uint64_t x;
        memcpy(&x, s->p + i, 8);
        sum += x;
    }
    s->sink = sum;
#endif
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 2, passes = 5;
    size_t mib = 1024;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-m"))
            mib = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            passes = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: membw [-t THREADS] [-m MIB] [-r PASSES]\n");
            return 2;
        }
    }
    if (threads < 1 || threads > 256 || passes < 1 || mib < 16) {
        fprintf(stderr, "usage: membw [-t THREADS] [-m MIB] [-r PASSES]\n");
        return 2;
    }
    const size_t bytes = mib << 20;
    uint8_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("membw: mmap");
        return 1;
    }
    (void)madvise(buf, bytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < bytes; i += 64)
        buf[i] = (uint8_t)i; /* every page present and distinct */
    const size_t share = bytes / (size_t)threads / 256 * 256;
    double best = 0;
    for (int r = 0; r < passes; r++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        pthread_t *tid = calloc((size_t)threads, sizeof *tid);
        struct share *sh = calloc((size_t)threads, sizeof *sh);
        if (!tid || !sh) {
            fprintf(stderr, "membw: out of memory\n");
            return 1;
        }
        for (int t = 0; t < threads; t++) {
            sh[t] = (struct share){buf + (size_t)t * share, share, &start, 0};
            pthread_create(&tid[t], NULL, reader, &sh[t]);
        }
        pthread_barrier_wait(&start);
        const double t0 = now_s();
        for (int t = 0; t < threads; t++)
            pthread_join(tid[t], NULL);
        const double gbs = (double)share * threads / (now_s() - t0) / 1e9;
        best = gbs > best ? gbs : best;
        pthread_barrier_destroy(&start);
        free(tid);
        free(sh);
    }
    printf("%.1f\n", best);
    munmap(buf, bytes);
    return 0;
}
