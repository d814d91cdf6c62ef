/* Internals of the block kernels (engine/quant_*.c): ggml's block layouts,
 * fp16 helpers, and the per-type kernel table. Exposed so that tests can call
 * the scalar reference kernels next to the SIMD ones. */
#ifndef TOKSCOPE_QUANT_INTERNAL_H
#define TOKSCOPE_QUANT_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gguf/tensor.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

/* ---- block layouts: byte-for-byte ggml's block_* (ggml-common.h) ---- */

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32

typedef struct {
    uint16_t d; /* fp16 scale */
    uint8_t qs[QK4_0 / 2]; /* element j in low nibble of qs[j], j+16 in high */
} block_q4_0;

typedef struct {
    uint16_t d, m; /* fp16 scale and min */
    uint8_t qs[QK4_1 / 2];
} block_q4_1;

typedef struct {
    uint16_t d;
    uint8_t qh[4]; /* 5th bit of element j in bit j (little endian u32) */
    uint8_t qs[QK5_0 / 2];
} block_q5_0;

typedef struct {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
} block_q5_1;

typedef struct {
    uint16_t d;
    int8_t qs[QK8_0];
} block_q8_0;

typedef struct {
    uint16_t d; /* fp16 scale */
    uint16_t s; /* fp16 of d * sum(qs) */
    int8_t qs[QK8_1];
} block_q8_1;

typedef struct {
    uint8_t scales[QK_K / 16]; /* low 4 bits scale, high 4 bits min, per 16 */
    uint8_t qs[QK_K / 4];      /* 2-bit quants */
    uint16_t d, dmin;
} block_q2_K;

typedef struct {
    uint8_t hmask[QK_K / 8]; /* high bit, set = no -4 offset */
    uint8_t qs[QK_K / 4];    /* low 2 bits */
    uint8_t scales[12];      /* 16 6-bit signed (offset 32) scales, packed */
    uint16_t d;
} block_q3_K;

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12]; /* 8 6-bit scales + 8 6-bit mins (get_scale_min_k4) */
    uint8_t qs[QK_K / 2];
} block_q4_K;

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;

typedef struct {
    uint8_t ql[QK_K / 2];     /* low 4 bits */
    uint8_t qh[QK_K / 4];     /* high 2 bits */
    int8_t scales[QK_K / 16]; /* 8-bit signed scales per 16 */
    uint16_t d;
} block_q6_K;

typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16]; /* sum of qs per 16 */
} block_q8_K;

_Static_assert(sizeof(block_q4_0) == 18, "q4_0 size");
_Static_assert(sizeof(block_q4_1) == 20, "q4_1 size");
_Static_assert(sizeof(block_q5_0) == 22, "q5_0 size");
_Static_assert(sizeof(block_q5_1) == 24, "q5_1 size");
_Static_assert(sizeof(block_q8_0) == 34, "q8_0 size");
_Static_assert(sizeof(block_q8_1) == 36, "q8_1 size");
_Static_assert(sizeof(block_q2_K) == 84, "q2_K size");
_Static_assert(sizeof(block_q3_K) == 110, "q3_K size");
_Static_assert(sizeof(block_q4_K) == 144, "q4_K size");
_Static_assert(sizeof(block_q5_K) == 176, "q5_K size");
_Static_assert(sizeof(block_q6_K) == 210, "q6_K size");
_Static_assert(sizeof(block_q8_K) == 292, "q8_K size");

/* ---- fp16 / bf16 ---- */

/* Bit-exact software conversions (round to nearest even, NaN kept quiet). */
float quant_fp16_to_fp32_soft(uint16_t h);
uint16_t quant_fp32_to_fp16_soft(float f);

#if !defined(__F16C__)
/* Without F16C: every half's float, filled by the kernel table's one-time
 * init (quant_kernels_get), as ggml does on such machines. */
extern float quant_fp16_table[65536];
#endif

static inline float fp16_to_f32(uint16_t h)
{
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    return quant_fp16_table[h];
#endif
}

static inline uint16_t f32_to_fp16(float f)
{
#if defined(__F16C__)
    return _cvtss_sh(f, 0); /* 0 = round to nearest even */
#else
    return quant_fp32_to_fp16_soft(f);
#endif
}

static inline float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) /* NaN: keep it NaN, make it quiet */
        return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

/* ggml's nearest_int: round half to even (|x| < 2^22). Written with rintf
 * rather than ggml's add-a-magic-number so that the compiler cannot fuse the
 * caller's multiply into the rounding add (an FMA would round differently
 * from the SIMD path's multiply-then-round). */
static inline int quant_nearest_int(float x)
{
    return (int)rintf(x);
}

/* K-quant 6-bit scale/min j (0..7) of a q4_K/q5_K block. */
static inline void quant_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* q3_K: the 16 signed 6-bit scales (already minus 32). Group g's low four
 * bits are in byte g (g < 8, low nibble) or byte g - 8 (high nibble), its top
 * two bits in byte 8 + g % 4 at bit 2 * (g / 4); done four at a time. */
static inline void quant_q3k_scales(const uint8_t *s, int8_t out[16])
{
    const uint32_t m2 = 0x03030303, m4 = 0x0f0f0f0f;
    uint32_t a[3], r[4];
    memcpy(a, s, 12);
    r[0] = (a[0] & m4) | (((a[2] >> 0) & m2) << 4);
    r[1] = (a[1] & m4) | (((a[2] >> 2) & m2) << 4);
    r[2] = ((a[0] >> 4) & m4) | (((a[2] >> 4) & m2) << 4);
    r[3] = ((a[1] >> 4) & m4) | (((a[2] >> 6) & m2) << 4);
    uint8_t u[16];
    memcpy(u, r, 16);
    for (int j = 0; j < 16; j++)
        out[j] = (int8_t)(u[j] - 32);
}

/* ---- kernel table ---- */

typedef void (*quant_dequantize_fn)(const void *src, float *dst, int64_t n);
typedef void (*quant_quantize_fn)(const float *src, void *dst, int64_t n);
typedef float (*quant_vec_dot_fn)(int64_t n, const void *w, const void *act);
/* out[r] = dot(row r, act) for r < rows; rows of row_size bytes. */
typedef void (*quant_matvec_fn)(int64_t n, const void *w, size_t row_size, int64_t rows,
                                const void *act, float *out);

/* One weight row against 4 activations: out[c] = dot(w, act[c]), each with
 * exactly vec_dot's arithmetic; the row is decoded once for all four. */
typedef void (*quant_dot4_fn)(int64_t n, const void *w, const void *const act[4], float out[4]);

/* 4 weight rows (row_size bytes apart) x 4 activations: out[c][r], each with
 * exactly vec_dot's arithmetic. */
typedef void (*quant_dot4x4_fn)(int64_t n, const void *w, size_t row_size, const void *const act[4], float out[4][4]);

struct quant_kernels {
    quant_dequantize_fn dequantize;
    quant_quantize_fn quantize;        /* fastest available */
    quant_quantize_fn quantize_scalar; /* portable reference */
    quant_vec_dot_fn vec_dot;          /* fastest available */
    quant_vec_dot_fn vec_dot_scalar;   /* portable reference */
    quant_matvec_fn matvec;            /* NULL: loop over vec_dot */
    quant_dot4_fn dot4;                /* NULL: 4 vec_dot calls */
    quant_dot4x4_fn dot4x4;            /* NULL: dot4 per row */
};

/* NULL for types without kernels. */
const struct quant_kernels *quant_kernels_get(enum tensor_type type);

/* tensor_matmul's loop over k's kernels (vec_dot, and matvec, dot4, dot4x4
 * where set) for rows rs bytes apart: tiles of rows reused from cache for
 * every activation, 4 activations a pass where dot4 is set. For rows no
 * tensor type names (packed_q6_K.h's re-encoded Q6_K) too. quant_batch.c. */
void quant_kernels_matmul(const struct quant_kernels *k, int64_t n, size_t rs, const void *w, int64_t rows,
                          const void *act, int64_t n_act, size_t act_stride, float *out, int64_t out_stride);

/* Scalar vec_dot for `type` (its dot type as activation); 0 if unsupported. */
float quant_vec_dot_scalar(enum tensor_type type, int64_t n, const void *w, const void *act);
/* Scalar quantizer (reference rounding). */
void quant_quantize_row_scalar(enum tensor_type type, const float *src, void *dst, int64_t n);

/* ---- per-file kernels ---- */

/* quant_fp.c */
void quant_dequantize_f32(const void *src, float *dst, int64_t n);
void quant_quantize_f32(const float *src, void *dst, int64_t n);
float quant_dot_f32_scalar(int64_t n, const void *w, const void *act);
void quant_dequantize_f16(const void *src, float *dst, int64_t n);
void quant_quantize_f16_scalar(const float *src, void *dst, int64_t n);
float quant_dot_f16_scalar(int64_t n, const void *w, const void *act);
void quant_dequantize_bf16(const void *src, float *dst, int64_t n);
void quant_quantize_bf16_scalar(const float *src, void *dst, int64_t n);
float quant_dot_bf16_scalar(int64_t n, const void *w, const void *act);

/* quant_legacy.c */
void quant_dequantize_q4_0(const void *src, float *dst, int64_t n);
void quant_dequantize_q4_1(const void *src, float *dst, int64_t n);
void quant_dequantize_q5_0(const void *src, float *dst, int64_t n);
void quant_dequantize_q5_1(const void *src, float *dst, int64_t n);
void quant_dequantize_q8_0(const void *src, float *dst, int64_t n);
void quant_dequantize_q8_1(const void *src, float *dst, int64_t n);
void quant_quantize_q4_0(const float *src, void *dst, int64_t n);
void quant_quantize_q4_1(const float *src, void *dst, int64_t n);
void quant_quantize_q5_0(const float *src, void *dst, int64_t n);
void quant_quantize_q5_1(const float *src, void *dst, int64_t n);
void quant_quantize_q8_0_scalar(const float *src, void *dst, int64_t n);
void quant_quantize_q8_1_scalar(const float *src, void *dst, int64_t n);
float quant_dot_q4_0_scalar(int64_t n, const void *w, const void *act);
float quant_dot_q4_1_scalar(int64_t n, const void *w, const void *act);
float quant_dot_q5_0_scalar(int64_t n, const void *w, const void *act);
float quant_dot_q5_1_scalar(int64_t n, const void *w, const void *act);
float quant_dot_q8_0_scalar(int64_t n, const void *w, const void *act);

/* quant_k.c */
void quant_dequantize_q2_K(const void *src, float *dst, int64_t n);
void quant_dequantize_q3_K(const void *src, float *dst, int64_t n);
void quant_dequantize_q4_K(const void *src, float *dst, int64_t n);
void quant_dequantize_q5_K(const void *src, float *dst, int64_t n);
void quant_dequantize_q6_K(const void *src, float *dst, int64_t n);
void quant_dequantize_q8_K(const void *src, float *dst, int64_t n);
void quant_quantize_q2_K(const float *src, void *dst, int64_t n);
void quant_quantize_q3_K(const float *src, void *dst, int64_t n);
void quant_quantize_q4_K(const float *src, void *dst, int64_t n);
void quant_quantize_q5_K(const float *src, void *dst, int64_t n);
void quant_quantize_q6_K(const float *src, void *dst, int64_t n);
void quant_quantize_q8_K_scalar(const float *src, void *dst, int64_t n);
/* The integer quant of each of a block's 256 elements (q3_K: signed -4..3,
 * q6_K: minus 32, others unsigned), in element order. */
void quant_unpack_q2_K(const void *block, int8_t q[QK_K]);
void quant_unpack_q3_K(const void *block, int8_t q[QK_K]);
void quant_unpack_q4_K(const void *block, int8_t q[QK_K]);
void quant_unpack_q5_K(const void *block, int8_t q[QK_K]);
void quant_unpack_q6_K(const void *block, int8_t q[QK_K]);
float quant_dot_q2_K_scalar(int64_t n, const void *w, const void *act);
float quant_dot_q3_K_scalar(int64_t n, const void *w, const void *act);
float quant_dot_q4_K_scalar(int64_t n, const void *w, const void *act);
float quant_dot_q5_K_scalar(int64_t n, const void *w, const void *act);
float quant_dot_q6_K_scalar(int64_t n, const void *w, const void *act);

/* quant_simd.c: fills in the fast entries of a table built from the scalar
 * kernels (leaves them alone when the build has no usable SIMD). */
void quant_simd_install(enum tensor_type type, struct quant_kernels *k);

/* ---- AVX2 helpers and kernels (quant_simd*.c) ---- */
/* vec_dot and the 4-activation tile of a kernel T_rows(n, w, act[4], nt,
 * out[4]) that runs one weight row against nt activations: both are
 * instances of the one body, so they give the same bits per pair. */
#define QUANT_ROWS_KERNELS(T)                                                                                     \
    float quant_avx2_dot_##T(int64_t n, const void *w, const void *act)                                           \
    {                                                                                                             \
        const void *const a[4] = {act, act, act, act};                                                            \
        float o[4];                                                                                               \
        T##_rows(n, w, a, 1, o);                                                                                  \
        return o[0];                                                                                              \
    }                                                                                                             \
    void quant_avx2_dot4_##T(int64_t n, const void *w, const void *const act[4], float out[4])                    \
    {                                                                                                             \
        T##_rows(n, w, act, 4, out);                                                                              \
    }

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define QUANT_HAVE_AVX2 1
#include <immintrin.h>

/* Matvecs that read several rows side by side: each row is a stream that
 * starts anew every few rows, too short for the hardware prefetcher to lock
 * on to, so out of cache they waited on memory (the Q6_K row pairs ran at a
 * third of the one-row loop's speed). Such a kernel prefetches, at each
 * block step, its share of the rows it will read next: step bytes from
 * pf + b * step. Always inlined: called out of line, GCC finds the function
 * free of side effects and drops the calls (the prefetches vanished). */
static inline __attribute__((always_inline)) void quant_prefetch_step(const char *pf, int64_t b, size_t step)
{
    for (size_t l = 0; l < step; l += 64)
        _mm_prefetch(pf + (size_t)b * step + l, _MM_HINT_T0);
}

/* quant_prefetch_step into L2 only (T1), for kernels that prefetch far
 * ahead: the packed groups prefetch the whole next group of 16 rows (18 to
 * 52 KB on TinyLlama's matrices, more than L1 holds, so into L1 those lines
 * pushed out the ones about to be read), the Q6_K row pairs 2 pairs ahead.
 * AMD EPYC with AVX-512 (Zen 4), one thread, TinyLlama shape, tg32:
 * Q4_K_M 29 -> 37 tok/s, Q4_0 33 -> 39, Q8_0 +4 %; its AVX2 build Q4_K_M
 * 24 -> 37, Q4_0 31 -> 46. Near prefetches stay in quant_prefetch_step:
 * the AVX2 IQ4_XS matvec (2 rows, ~2 KB ahead) lost 19 % with T1. */
static inline __attribute__((always_inline)) void quant_prefetch_step_l2(const char *pf, int64_t b, size_t step)
{
    for (size_t l = 0; l < step; l += 64)
        _mm_prefetch(pf + (size_t)b * step + l, _MM_HINT_T1);
}

/* Part `part` of `parts` of quant_prefetch_step's lines for block step b:
 * a kernel whose block step reads kilobytes (Q4_K's super-block of 16
 * rows: 34 lines) spreads them over its inner loop, since a burst of that
 * many prefetches fills the core's miss buffers and stalls it (the AVX2
 * Q4_K gemv spent a fifth of its time on the instruction after one).
 * Into L2, as quant_prefetch_step_l2: its users prefetch the next group. */
static inline __attribute__((always_inline)) void quant_prefetch_part(const char *pf, int64_t b, size_t step,
                                                                      int part, int parts)
{
    const size_t lines = step / 64, l0 = lines * (size_t)part / (size_t)parts,
                 l1 = lines * (size_t)(part + 1) / (size_t)parts;
    for (size_t l = l0; l < l1; l++)
        _mm_prefetch(pf + (size_t)b * step + 64 * l, _MM_HINT_T1);
}

/* How many groups of rows ahead the multi-row matvecs prefetch (Q6_K pairs,
 * Q5_0 quads, Q2_K pairs): 1, 2 and 4 measured on Q6_K, 2 best (9 -> 26 GB/s
 * on one thread for a 5632 x 4096 matrix out of cache). */
#define QUANT_PF_AHEAD 2

/* How many steps of step_bytes (a row, or a pair of rows) ahead the
 * row-by-row kernels that prefetch into L2 run: about 16 KB, at least
 * QUANT_PF_AHEAD. Set in rows, the distance was too short for the
 * Qwen3-30B-A3B width's Q6_K output head and for IQ4_XS (2 pairs: head
 * 42.9-43.6 tok/s, IQ4_XS 132-142; 8 pairs 48.5-50.2 and 150-157, one thread
 * of an AMD EPYC Zen 4) and too long for TinyLlama Q4_K_M's 4.6 KB ffn_down
 * rows on two threads (8 pairs: 74 KB ahead, a thread's share starting that
 * far unprefetched, 4-7 % slower than 2); in bytes it fits both. */
static inline int64_t quant_prefetch_far_steps(size_t step_bytes)
{
    const size_t s = (16 * 1024) / step_bytes;
    return s > QUANT_PF_AHEAD ? (int64_t)s : QUANT_PF_AHEAD;
}

/* The step for a kernel that reads `rows` rows of rs bytes in nb block
 * steps: whole cache lines, at least the bytes it reads. */
static inline size_t quant_prefetch_step_size(size_t rs, int rows, int64_t nb)
{
    return (((size_t)rows * rs + (size_t)nb - 1) / (size_t)nb + 63) & ~(size_t)63;
}

/* All-ones in the int32 lanes i with lo <= i < hi (for maskstore: the
 * rows of an 8-row half a call owns; lo and hi may lie outside 0..8). */
static inline __m256i quant_lanes_in(int lo, int hi)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(hi), lane),
                            _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(lo - 1)));
}

/* The 4 dwords at p, each spread over a register's 8 lanes (the
 * activations of the row-interleaved tiles, where a lane is a row): one
 * 16-byte broadcast load and a vpshufd each. A vpbroadcastd from memory per
 * dword ran about 13 % slower (AVX2 packed Q4_K prompts, TinyLlama). */
static inline __attribute__((always_inline)) void quant_spread4(const void *p, __m256i o[4])
{
    const __m256i a = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)p));
    o[0] = _mm256_shuffle_epi32(a, 0x00);
    o[1] = _mm256_shuffle_epi32(a, 0x55);
    o[2] = _mm256_shuffle_epi32(a, 0xAA);
    o[3] = _mm256_shuffle_epi32(a, 0xFF);
}

/* Dword d (0-3) of each 128-bit lane of v, in all four dwords of that lane:
 * vpshufd's with an index known only at run time (one pshufb; the IQ2_XXS
 * and IQ4_XS one-token kernels pick a sub-block's multipliers with it). */
static inline __attribute__((always_inline)) __m256i quant_dword_bcast(__m256i v, int d)
{
#define QUANT_D4(d) 4 * d, 4 * d + 1, 4 * d + 2, 4 * d + 3
#define QUANT_DW(d) {QUANT_D4(d), QUANT_D4(d), QUANT_D4(d), QUANT_D4(d), QUANT_D4(d), QUANT_D4(d), QUANT_D4(d), QUANT_D4(d)}
    static const uint8_t ctl[4][32] __attribute__((aligned(32))) = {QUANT_DW(0), QUANT_DW(1), QUANT_DW(2), QUANT_DW(3)};
#undef QUANT_DW
#undef QUANT_D4
    return _mm256_shuffle_epi8(v, _mm256_load_si256((const __m256i *)ctl[d]));
}

/* A one-token matvec of QK_K-block rows, one row after the other, each row's
 * dot prefetching the row AHEAD on (QUANT_PF_AHEAD or quant_prefetch_far_steps
 * of rs: 1-2 KB rows are streams the hardware prefetcher keeps losing). DOT(n, row, act, pf, step) is an
 * always-inline body that returns the row's sum: vec_dot's own, so the bits
 * are vec_dot's. STORAGE is empty or static. */
#define QUANT_MATVEC_PF(STORAGE, NAME, DOT, AHEAD)                                                                \
    STORAGE void NAME(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)             \
    {                                                                                                             \
        const size_t step = quant_prefetch_step_size(rs, 1, n / QK_K);                                            \
        const int64_t pa = (AHEAD);                                                                               \
        for (int64_t r = 0; r < rows; r++) {                                                                      \
            const char *x = (const char *)w + (size_t)r * rs;                                                     \
            const bool ahead = r + pa < rows; /* no prefetch past the matrix */                                   \
            out[r] = DOT(n, x, act, ahead ? x + pa * rs : NULL, ahead ? step : 0);                                \
        }                                                                                                         \
    }

/* d[e] = float e of each 128-bit half of v in all 4 of its lanes: vshufps,
 * in asm, as GCC makes _mm256_shuffle_ps(v, v, .) a vpermilps, which
 * shares the multiply pipes of a Zen 5 about a fifth of the time where
 * vshufps runs beside them (bench_gemm_iq AVX2 IQ1_M 2.6 % faster so). The
 * IQ tiles spread 4 products d_w * d_act to their outputs with it. */
static inline __attribute__((always_inline)) void spread4_ps256(__m256 v, __m256 d[4])
{
    __asm__("vshufps $0x00, %4, %4, %0\n\tvshufps $0x55, %4, %4, %1\n\t"
            "vshufps $0xAA, %4, %4, %2\n\tvshufps $0xFF, %4, %4, %3"
            : "=&x"(d[0]), "=&x"(d[1]), "=&x"(d[2]), "=&x"(d[3])
            : "x"(v));
}

/* Four F16 values as floats in one conversion, times s: the products
 * scalar code forms one at a time (h2f(h) * s), the same values. Converting
 * and multiplying per row in scalar code, and broadcasting each, cost the
 * Q8_0 tiles a fifth of their time. */
static inline __m128 quant_f16x4_mul(uint16_t h0, uint16_t h1, uint16_t h2, uint16_t h3, float s)
{
    const uint64_t hw = (uint64_t)h0 | (uint64_t)h1 << 16 | (uint64_t)h2 << 32 | (uint64_t)h3 << 48;
    return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)hw)), _mm_set1_ps(s));
}

static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#ifdef __AVX512F__
/* hsum_float_8 (hsum_ps) of 16 groups of 8 float lanes at once, with its
 * adds on the same operands (lanes i + (i + 4), then (0 + 2) and (1 + 3),
 * then their sum): lane 4q + e of the result is the sum of f[2e + (q >>
 * 1)]'s lanes 0-7 (q even) or 8-15 (q odd). 14 shuffles and 7 adds where
 * 16 hsum_ps take about 100 instructions (a tenth of an IQ GEMM tile at K
 * = 2048, 5 % of a Q5_K one). */
static inline __attribute__((always_inline)) __m512 hsum16_ps(const __m512 f[8])
{
    __m512 r[4], w[2];
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) /* quarters: f[2m] lo, hi, f[2m + 1] lo, hi; lanes i + (i + 4) */
        r[m] = _mm512_add_ps(_mm512_shuffle_f32x4(f[2 * m], f[2 * m + 1], 0x88),
                             _mm512_shuffle_f32x4(f[2 * m], f[2 * m + 1], 0xDD));
#pragma GCC unroll 2
    for (int n = 0; n < 2; n++) /* per quarter: r[2n]'s (0 + 2), (1 + 3), then r[2n + 1]'s */
        w[n] = _mm512_add_ps(_mm512_shuffle_ps(r[2 * n], r[2 * n + 1], 0x44),
                             _mm512_shuffle_ps(r[2 * n], r[2 * n + 1], 0xEE));
    /* per quarter q: the sums of r[0], r[1], r[2], r[3]'s quarter q */
    return _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
}

/* Lane 4a + b to lane 4b + a (a 4 x 4 transpose). */
static inline __m512 transpose4x4_ps(__m512 v)
{
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v);
}

/* Quarter t of v (lanes 4t..4t+3) to o + t * os. */
static inline void store4x4_ps(__m512 v, float *o, int64_t os)
{
    _mm_storeu_ps(o, _mm512_castps512_ps128(v));
    _mm_storeu_ps(o + os, _mm512_extractf32x4_ps(v, 1));
    _mm_storeu_ps(o + 2 * os, _mm512_extractf32x4_ps(v, 2));
    _mm_storeu_ps(o + 3 * os, _mm512_extractf32x4_ps(v, 3));
}
#endif

/* 16 floats (lo: 0-7, hi: 8-15) reduced the way GCC's _mm512_reduce_add_ps
 * does: halves of 8, then 4, then (0+2) + (1+3). */
static inline float red16_ps(__m256 lo, __m256 hi)
{
    const __m256 t8 = _mm256_add_ps(hi, lo);
    const __m128 t4 = _mm_add_ps(_mm256_extractf128_ps(t8, 1), _mm256_castps256_ps128(t8));
    const __m128 t2 = _mm_add_ps(t4, _mm_movehl_ps(t4, t4));
    return _mm_cvtss_f32(_mm_add_ss(t2, _mm_movehdup_ps(t2)));
}

static inline int hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* acc + sums of 4 adjacent u8*s8 products. The maddubs fallback saturates at
 * 16 bits; every caller keeps pair sums below 2^15 (|u| <= 128, |s| <= 127). */
static inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s)
{
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#elif defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* 8 partial sums of x*y for signed bytes x, y (|x| <= 128, |y| <= 127). */
static inline __m256i dot_s8(__m256i x, __m256i y)
{
    return dpbusd(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* Lane sums of x*y for Q8_0 weight bytes x and activation bytes y. With
 * VNNI, x enters unsigned as x + 128 and base (-128 * the lane sums of y,
 * shared by every weight row) takes the offset back. Without VNNI that
 * would go through maddubs, whose int16 pair sums saturate at 255 * 127 * 2,
 * so the sign trick is used and base is ignored. Same lane integers. */
#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
#define Q8W_OFFSET 1
#endif
static inline __m256i q8w_dot(__m256i base, __m256i x, __m256i y)
{
#ifdef Q8W_OFFSET
    return dpbusd(base, _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80)), y);
#else
    (void)base;
    return dot_s8(x, y);
#endif
}

/* 32 nibbles of 16 bytes: low nibbles to bytes 0-15, high nibbles to 16-31. */
static inline __m256i nibbles32(const uint8_t *p)
{
    __m128i t = _mm_loadu_si128((const __m128i *)p);
    __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4), 1);
    return _mm256_and_si256(b, _mm256_set1_epi8(0x0F));
}

/* 32 sign bits to 32 bytes, 0xFF where the bit is set: byte k tests bit
 * k % 8 of the byte of src that ctl's byte k names (in its 128-bit lane;
 * ctl names one source byte for each 8 consecutive bytes). */
static inline __m256i bits_masks(__m256i src, __m256i ctl)
{
    __m256i b = _mm256_shuffle_epi8(src, ctl);
    b = _mm256_or_si256(b, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(b, _mm256_set1_epi64x(-1));
}

/* 32 bits to 32 bytes: 0xFF where the bit is set. */
static inline __m256i bits32(const uint8_t *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return bits_masks(_mm256_set1_epi32((int)x),
                      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
}

/* 8 lanes: sums of 4 activation bytes each (for unsigned-weight dots). */
static inline __m256i act_sums4(__m256i y)
{
    return dpbusd(_mm256_setzero_si256(), _mm256_set1_epi8(1), y);
}

float quant_avx2_dot_q8_0(int64_t n, const void *w, const void *act);
float quant_avx2_dot_q4_0(int64_t n, const void *w, const void *act);
float quant_avx2_dot_q4_1(int64_t n, const void *w, const void *act);
float quant_avx2_dot_q5_0(int64_t n, const void *w, const void *act);
float quant_avx2_dot_q5_1(int64_t n, const void *w, const void *act);
void quant_avx2_matvec_q4_0(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
void quant_avx2_matvec_q8_0(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
void quant_avx2_matvec_q6_K(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
void quant_avx2_matvec_q5_K(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
void quant_avx2_dequantize_q8_0(const void *src, float *dst, int64_t n);
void quant_avx2_dequantize_q4_0(const void *src, float *dst, int64_t n);
void quant_avx2_dot4_q8_0(int64_t n, const void *w, const void *const act[4], float out[4]);
void quant_avx2_dot4_q4_0(int64_t n, const void *w, const void *const act[4], float out[4]);
void quant_avx2_dot4x4_q8_0(int64_t n, const void *w, size_t rs, const void *const act[4], float out[4][4]);
void quant_avx2_dot4x4_q4_0(int64_t n, const void *w, size_t rs, const void *const act[4], float out[4][4]);
float quant_avx2_dot_q2_K(int64_t n, const void *w, const void *act);
float quant_avx2_dot_q3_K(int64_t n, const void *w, const void *act);
float quant_avx2_dot_q4_K(int64_t n, const void *w, const void *act);
float quant_avx2_dot_q5_K(int64_t n, const void *w, const void *act);
float quant_avx2_dot_q6_K(int64_t n, const void *w, const void *act);
void quant_avx2_dot4_q4_K(int64_t n, const void *w, const void *const act[4], float out[4]);
void quant_avx2_dot4_q5_K(int64_t n, const void *w, const void *const act[4], float out[4]);
void quant_avx2_dot4_q4_1(int64_t n, const void *w, const void *const act[4], float out[4]);
void quant_avx2_dot4_q5_0(int64_t n, const void *w, const void *const act[4], float out[4]);
void quant_avx2_dot4_q5_1(int64_t n, const void *w, const void *const act[4], float out[4]);
void quant_avx2_dot4_q3_K(int64_t n, const void *w, const void *const act[4], float out[4]);
void quant_avx2_dot4_q6_K(int64_t n, const void *w, const void *const act[4], float out[4]);
/* The Q6_K kernels over packed_q6_K.h's re-encoded rows (AVX2 builds
 * without AVX-512): the same bits */
float quant_avx2_dot_q6_Kx(int64_t n, const void *w, const void *act);
void quant_avx2_dot4_q6_Kx(int64_t n, const void *w, const void *const act[4], float out[4]);
#if defined(__AVX512F__) && defined(__AVX512BW__)
/* Two rows' 32 bytes, one per 256-bit half: the kernels that put a pair of
 * weight rows in one register (Q6_K, Q5_0, Q2_K). */
static inline __m512i quant_pair256(const void *lo, const void *hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lo)),
                              _mm256_loadu_si256((const __m256i *)hi), 1);
}

/* 32 activation bytes in both halves, against such a pair. */
static inline __m512i quant_dup256(const void *p)
{
    return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
}

/* Q6_K and Q5_K rows in pairs against one token (quant_kfew.h through quant_simd_k.c). */
void quant_avx512_matvec_q6_K(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
void quant_avx512_matvec_q5_K(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
#if defined(__AVX512VNNI__)
void quant_avx512_dot4x4_q5_0(int64_t n, const void *w, size_t rs, const void *const act[4], float out[4][4]);
void quant_avx512_matvec_q5_0(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
#endif
#endif
#endif

#endif
