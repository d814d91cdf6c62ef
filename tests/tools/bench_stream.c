/* Microbenchmark of a one-token matvec streaming from memory: two threads
 * (each half of the rows) run tensor_matvec over a matrix far larger than
 * the caches, then read the same bytes plainly (512-bit or 256-bit loads
 * and adds), alternating, and print each pair's GB/s and their ratio. On a
 * host whose bandwidth swings from one second to the next (docs/speed-ik.md,
 * thirty-eighth session) the ratio of two runs seconds apart says how near
 * the kernel comes to the memory's speed where each run alone cannot. The
 * default is the Qwen3.5 width's output head (248320 x 2048 Q6_K, 417 MB),
 * which generation runs through tensor_matvec; types the engine repacks at
 * load (Q4_0, Q8_0, Q4_K, MXFP4) take other kernels there. The outputs are
 * checked against tensor_vec_dot's bits. WAY (AVX-512 builds, Q6_K) forces
 * how the matvec streams its rows (quant_kfew.h): auto (the default),
 * pairs or seq; refk runs Q4_K or Q2_K through refk_matmul instead, the
 * kernels generation takes for them (the reference's repacked order, its
 * bits not checked here); enc (AVX2 builds, Q6_K) re-encodes the rows as
 * the engine does at load (packed_q6_K.h) and runs them through
 * packed_q6_K_matmul, the kernel of the AVX2 build's Q6_K generation.
 * Not part of make test. Usage: bench_stream [type] [n] [rows] [pairs] [way] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/forward_repack.h"
#include "kernels/packed_q6_K.h"
#include "kernels/quant_kfew.h"
#include "bench_util.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

struct job {
    enum tensor_type type;
    int64_t n, rows;
    size_t rs;
    const uint8_t *w, *act;
    float *out;
    int plain, refk, enc;
    unsigned long sink;
};

#ifdef PACKED_Q6_K
#define CAN_ENC 1
#else
#define CAN_ENC 0
#endif

/* A quantized row q into the matrix at dst: as it is, or re-encoded as the
 * engine's AVX2 builds do at load (enc) */
static void put_row(int enc, const uint8_t *q, uint8_t *dst, size_t rs, int64_t n)
{
#ifdef PACKED_Q6_K
    if (enc) {
        packed_q6_K_encode(q, dst, n / 256);
        return;
    }
#else
    (void)enc;
    (void)n;
#endif
    memcpy(dst, q, rs);
}

static pthread_barrier_t start, stop;
static volatile int quit;

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* thread ith's half of the rows: the matvec, or a plain read of its bytes */
static void run_half(struct job *j, int ith)
{
    const int64_t r0 = ith ? j->rows / 2 : 0, r1 = ith ? j->rows : j->rows / 2;
    if (!j->plain && j->refk) {
        const gguf_tensor t = {.type = j->type, .data = j->w, .ne = {j->n, j->rows, 1, 1}, .n_dims = 2};
        refk_matmul(&t, j->n, r0, r1, j->act, 0, 1, j->out, 0);
        return;
    }
#ifdef PACKED_Q6_K
    if (!j->plain && j->enc) {
        packed_q6_K_matmul(j->n, j->w, j->rs, r0, r1, j->act, 0, 1, j->out, 0);
        return;
    }
#endif
    if (!j->plain) {
        tensor_matvec(j->type, j->n, j->w + (size_t)r0 * j->rs, r1 - r0, j->act, j->out + r0);
        return;
    }
    const uint8_t *p = j->w + (size_t)r0 * j->rs;
    const size_t bytes = (size_t)(r1 - r0) * j->rs;
    unsigned long s = 0;
    size_t i = 0;
#if defined(__AVX512F__)
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (; i + 256 <= bytes; i += 256) {
        a = _mm512_add_epi32(a, _mm512_loadu_si512(p + i));
        b = _mm512_add_epi32(b, _mm512_loadu_si512(p + i + 64));
        c = _mm512_add_epi32(c, _mm512_loadu_si512(p + i + 128));
        d = _mm512_add_epi32(d, _mm512_loadu_si512(p + i + 192));
    }
    s = (unsigned long)_mm512_reduce_add_epi32(
        _mm512_add_epi32(_mm512_add_epi32(a, b), _mm512_add_epi32(c, d)));
#elif defined(__AVX2__)
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (; i + 128 <= bytes; i += 128) {
        a = _mm256_add_epi32(a, _mm256_loadu_si256((const __m256i *)(p + i)));
        b = _mm256_add_epi32(b, _mm256_loadu_si256((const __m256i *)(p + i + 32)));
        c = _mm256_add_epi32(c, _mm256_loadu_si256((const __m256i *)(p + i + 64)));
        d = _mm256_add_epi32(d, _mm256_loadu_si256((const __m256i *)(p + i + 96)));
    }
    a = _mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, d));
    s = (unsigned long)(uint32_t)_mm256_extract_epi32(a, 0);
#endif
    for (; i < bytes; i++)
        s += p[i];
    j->sink += s;
}

static void *helper(void *arg)
{
    struct job *j = arg;
    for (;;) {
        pthread_barrier_wait(&start);
        if (quit)
            return NULL;
        run_half(j, 1);
        pthread_barrier_wait(&stop);
    }
}

static double timed(struct job *j, int plain)
{
    j->plain = plain;
    const double t0 = wall();
    pthread_barrier_wait(&start);
    run_half(j, 0);
    pthread_barrier_wait(&stop);
    return (double)j->rs * (double)j->rows / (wall() - t0) / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *tname = argc > 1 ? argv[1] : "q6_k";
    const int64_t n = argc > 2 ? atoll(argv[2]) : 2048, rows = argc > 3 ? atoll(argv[3]) : 248320;
    const int pairs = argc > 4 ? atoi(argv[4]) : 10;
    enum tensor_type type = TENSOR_TYPE_COUNT;
    for (int t = 0; t < TENSOR_TYPE_COUNT; t++)
        if (tensor_type_name((enum tensor_type)t) &&
            !strcasecmp(tensor_type_name((enum tensor_type)t), tname))
            type = (enum tensor_type)t;
    if (type == TENSOR_TYPE_COUNT || n <= 0 || rows < 2 || pairs < 1 || n % 256) {
        fprintf(stderr, "usage: bench_stream [type] [n, a multiple of 256] [rows >= 2] [pairs >= 1]\n");
        return 1;
    }
    const char *way = argc > 5 ? argv[5] : "auto";
    const int refk = !strcmp(way, "refk"), enc = !strcmp(way, "enc");
    if (refk || enc)
        way = "auto";
#ifdef QUANT_HAVE_KFEW
    quant_kfew_stream = !strcmp(way, "seq")     ? QUANT_KFEW_STREAM_SEQ
                       : !strcmp(way, "pairs") ? QUANT_KFEW_STREAM_PAIRS
                                               : QUANT_KFEW_STREAM_AUTO;
#endif
    if ((strcmp(way, "auto") && strcmp(way, "seq") && strcmp(way, "pairs")) ||
        (refk && type != TENSOR_TYPE_Q4_K && type != TENSOR_TYPE_Q2_K) ||
        (enc && (type != TENSOR_TYPE_Q6_K || !CAN_ENC))) {
        fprintf(stderr, "bench_stream: way: auto, pairs, seq, refk (Q4_K, Q2_K) or enc (Q6_K, AVX2 builds)\n");
        return 1;
    }
    const enum tensor_type dot = tensor_dot_type(type);
    const size_t rs = tensor_row_size(type, n), bytes = rs * (size_t)rows, huge = (size_t)2 << 20;
    /* 2 MB aligned, huge pages advised: as the engine's resident weights */
    uint8_t *map = mmap(NULL, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *act = malloc(tensor_row_size(dot, n));
    float *x = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)rows);
    if (map == MAP_FAILED || !act || !x || !out) {
        fprintf(stderr, "bench_stream: out of memory (%zu bytes)\n", bytes);
        return 1;
    }
    uint8_t *w = (uint8_t *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
#ifdef MADV_HUGEPAGE
    madvise(w, bytes, MADV_HUGEPAGE);
#endif
    /* 64 random rows repeated: real blocks without quantizing 400 MB; the
     * distinct rows also as quantized (file), for the check below */
    enum { DISTINCT = 64 };
    const int64_t nd = rows < DISTINCT ? rows : DISTINCT;
    uint8_t *file = malloc(rs * (size_t)nd);
    if (!file) {
        fprintf(stderr, "bench_stream: out of memory\n");
        return 1;
    }
    for (int64_t r = 0; r < rows; r++) {
        if (r < DISTINCT) {
            for (int64_t i = 0; i < n; i++)
                x[i] = rndf();
            tensor_quantize_row(type, x, file + rs * (size_t)r, n);
            put_row(enc, file + rs * (size_t)r, w + rs * (size_t)r, rs, n);
        } else {
            memcpy(w + rs * (size_t)r, w + rs * (size_t)(r % DISTINCT), rs);
        }
    }
    for (int64_t i = 0; i < n; i++)
        x[i] = rndf();
    tensor_quantize_row(dot, x, act, n);
    struct job j = {type, n, rows, rs, w, act, out, 0, refk, enc, 0};
    pthread_barrier_init(&start, NULL, 2);
    pthread_barrier_init(&stop, NULL, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, helper, &j) != 0) {
        fprintf(stderr, "bench_stream: no second thread\n");
        return 1;
    }
    printf("%s %lld x %lld (%.0f MB), two threads, %s (%s) then plain read:\n", tensor_type_name(type),
           (long long)rows, (long long)n, (double)bytes / 1e6, refk ? "refk_matmul" : enc ? "packed_q6_K_matmul" : "matvec", way);
    double *ratio = malloc(sizeof(double) * (size_t)pairs);
    for (int p = 0; p < pairs; p++) {
        const double k = timed(&j, 0), r = timed(&j, 1);
        ratio[p] = k / r;
        printf("  matvec %5.1f GB/s  read %5.1f GB/s  ratio %.3f\n", k, r, ratio[p]);
        fflush(stdout);
    }
    quit = 1;
    pthread_barrier_wait(&start);
    pthread_join(t, NULL);
    int bad = 0;
    for (int64_t r = 0; r < rows && !refk; r += rows / 97 + 1) {
        const float v = tensor_vec_dot(type, n, file + rs * (size_t)(r % DISTINCT), act);
        bad += memcmp(&v, &out[r], sizeof v) != 0;
    }
    qsort(ratio, (size_t)pairs, sizeof *ratio, cmp_d);
    printf("median ratio %.3f%s (sink %lu)\n", ratio[pairs / 2], bad ? " (BITS DIFFER)" : "", j.sink & 1);
    return bad != 0;
}
