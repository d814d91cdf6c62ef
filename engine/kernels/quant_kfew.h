/* K-quant weight rows against a few Q8_K activations (1-4 tokens a pass) on
 * AVX-512: each block of a row pair is unpacked once per pass and used for
 * every token; each (row, token) output keeps the reference's vec_dot lanes
 * and float order (llama.cpp 34af94cd's AVX2 bodies of
 * ggml_vec_dot_q6_K_q8_K and ggml_vec_dot_q5_K_q8_K, which its AVX-512 build
 * runs), so it equals tensor_vec_dot bit for bit. */
#ifndef TOKSCOPE_QUANT_KFEW_H
#define TOKSCOPE_QUANT_KFEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX2__) && defined(__FMA__) &&                \
    defined(__F16C__)
#define QUANT_HAVE_KFEW 1

#include <x86intrin.h>

/* Tokens one pass takes: the integer lanes of 2 rows x 4 tokens, the float
 * lanes of 4 tokens and an unpacked chunk pair fill the 32 registers. */
#define QUANT_KFEW_MAX 4

/* out[t * out_stride + r] = W row r . act token t for r < rows, t < nt
 * (1 <= nt <= QUANT_KFEW_MAX); W rows rs bytes apart, n a multiple of 256;
 * token t's Q8_K row at act + t * act_stride. With pf set, each block step
 * prefetches the rows two pairs ahead (a matvec streaming from memory).
 * quant_q6k_few.c and quant_q5k_few.c. */
void quant_q6_K_few(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, size_t act_stride,
                    int nt, float *out, int64_t out_stride, int pf);
void quant_q5_K_few(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, size_t act_stride,
                    int nt, float *out, int64_t out_stride, int pf);

/* How quant_q6_K_few's and quant_q5_K_few's one-token rows (and those of
 * matvec_iq.c's IQ4_XS matvec) stream from memory: in row pairs side by
 * side with a software prefetch, or one row after the other without one
 * (the same bits either way). AUTO (the
 * default) measures both on the calls of QUANT_KFEW_STREAM_MIN bytes or
 * more that prefetch and keeps the cheaper, as the host's memory allows
 * (quant_kfew_stream.c); the tests force each. */
enum { QUANT_KFEW_STREAM_AUTO = -1, QUANT_KFEW_STREAM_PAIRS = 0, QUANT_KFEW_STREAM_SEQ = 1 };
extern int quant_kfew_stream;
#define QUANT_KFEW_STREAM_MIN ((size_t)1 << 17) /* a call's bytes, from memory (a matvec's chunk) */

/* AUTO's choice, one per thread, kernel and row length: KFEW_PROBE calls
 * split between the ways at random, then the way with the lower median cost
 * for KFEW_KEEP calls. */
#define KFEW_PROBE 32
#define KFEW_KEEP 480
typedef struct {
    float cost[2][KFEW_PROBE]; /* cycles per byte of the probe's calls, per way */
    int n[2];
    int way; /* kept while keep > 0 */
    int keep;
    uint32_t rng;
} quant_kfew_tuner;
/* The way for the next call, and what it cost (quant_kfew_tuner_seen). */
int quant_kfew_tuner_next(quant_kfew_tuner *t);
void quant_kfew_tuner_seen(quant_kfew_tuner *t, int way, float cost);

/* A thread's tuners for one kernel, one per row length (nb blocks): the
 * calls of one row length come from one kind of matrix, whose ways cost
 * differently from another's (quant_kfew_stream.c says where that was
 * measured). The first KFEW_TUNERS - 1 row lengths AUTO times get their
 * own, the last tuner takes the rest. */
#define KFEW_TUNERS 4
typedef struct {
    int64_t nb[KFEW_TUNERS]; /* 0: free */
    quant_kfew_tuner t[KFEW_TUNERS];
} quant_kfew_tuners;
quant_kfew_tuner *quant_kfew_tuner_of(quant_kfew_tuners *s, int64_t nb);

/* The way one call of nt tokens against `bytes` of rows nb blocks long
 * takes, and the tuner of set that AUTO times it for (*timed; NULL when
 * untimed, so that only the row lengths AUTO times take a tuner) */
static inline int quant_kfew_way(quant_kfew_tuners *set, int64_t nb, int nt, int pf, size_t bytes,
                                 quant_kfew_tuner **timed)
{
    const bool auto_way = quant_kfew_stream == QUANT_KFEW_STREAM_AUTO;
    *timed = auto_way && nt == 1 && pf && bytes >= QUANT_KFEW_STREAM_MIN ? quant_kfew_tuner_of(set, nb) : NULL;
    if (nt != 1)
        return QUANT_KFEW_STREAM_PAIRS;
    if (!auto_way)
        return quant_kfew_stream;
    return *timed ? quant_kfew_tuner_next(*timed) : QUANT_KFEW_STREAM_PAIRS;
}

/* One call of a kernel that streams its rows either way: the way it
 * takes and, when AUTO times it, the tuner, the TSC at its start and its
 * bytes (quant_kfew_start, quant_kfew_end) */
typedef struct {
    int way;
    quant_kfew_tuner *timed; /* NULL: untimed */
    uint64_t t0;
    size_t bytes;
} quant_kfew_call;

static inline quant_kfew_call quant_kfew_start(quant_kfew_tuners *set, int64_t nb, int nt, int pf, size_t bytes)
{
    quant_kfew_call c = {.bytes = bytes};
    c.way = quant_kfew_way(set, nb, nt, pf, bytes, &c.timed);
    c.t0 = c.timed ? __rdtsc() : 0;
    return c;
}

/* A call's end: when timed, its TSC ticks per byte of its rows to its tuner */
static inline void quant_kfew_end(const quant_kfew_call *c)
{
    if (c->timed)
        quant_kfew_tuner_seen(c->timed, c->way, (float)((double)(__rdtsc() - c->t0) / (double)c->bytes));
}

#endif

#endif
