/* AVX2 dots of the 32-element block types against Q8_0 / Q8_1 activations,
 * in ggml's x86 vec_dot order, plus the multi-row / multi-activation tiles
 * tensor_matvec and tensor_matmul use (same bits per pair). */
#include "kernels/quant_internal.h"

#include <string.h>

#if defined(QUANT_HAVE_AVX2)

/* ---- legacy blocks against Q8_0 / Q8_1 ---- */

float quant_avx2_dot_q8_0(int64_t n, const void *w, const void *act)
{
    const block_q8_0 *x = w, *y = act;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK8_0; i++) {
        __m256i p = dot_s8(_mm256_loadu_si256((const __m256i *)x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc);
}

float quant_avx2_dot_q4_0(int64_t n, const void *w, const void *act)
{
    const block_q4_0 *x = w;
    const block_q8_0 *y = act;
    const __m256i off = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK4_0; i++) {
        __m256i q = _mm256_sub_epi8(nibbles32(x[i].qs), off);
        __m256i p = dot_s8(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)), _mm256_cvtepi32_ps(p), acc);
    }
    return hsum_ps(acc);
}

/* Q4_0, several rows against one activation: the activation block, its
 * scale and its partial sums are loaded once per block for 4 rows. The
 * weights enter the u8 x s8 dot as unsigned nibbles and the offset comes
 * back through the activation sums: sum (u - 8) y = sum u y - 8 sum y.
 * (Models pack Q4_0 at load time, forward_packed.c; this serves the rest.) */
#define MV_ROWS 4
/* The F16 scales at p0..p3 (each block's first field) times dy
 * (quant_f16x4_mul), in both 128-bit halves. */
static inline __m256 scales4(const void *p0, const void *p1, const void *p2, const void *p3, float dy)
{
    uint16_t h0, h1, h2, h3;
    memcpy(&h0, p0, 2);
    memcpy(&h1, p1, 2);
    memcpy(&h2, p2, 2);
    memcpy(&h3, p3, 2);
    const __m128 d = quant_f16x4_mul(h0, h1, h2, h3, dy);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(d), d, 1);
}

/* Lane k of each 128-bit half of s, in every lane. */
static inline __m256 lane_of(__m256 s, int k)
{
    return k == 0 ? _mm256_permute_ps(s, 0x00)
         : k == 1 ? _mm256_permute_ps(s, 0x55)
         : k == 2 ? _mm256_permute_ps(s, 0xAA)
                  : _mm256_permute_ps(s, 0xFF);
}


void quant_avx2_matvec_q4_0(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const block_q8_0 *y = act;
    const int64_t nb = n / QK4_0;
    int64_t r = 0;
    for (; r + MV_ROWS <= rows; r += MV_ROWS) {
        const block_q4_0 *x[MV_ROWS];
        __m256 acc[MV_ROWS];
        for (int k = 0; k < MV_ROWS; k++) {
            x[k] = (const block_q4_0 *)((const char *)w + (size_t)(r + k) * rs);
            acc[k] = _mm256_setzero_ps();
        }
        for (int64_t i = 0; i < nb; i++) {
            __m256i yv = _mm256_loadu_si256((const __m256i *)y[i].qs);
            __m256i base = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(act_sums4(yv), 3));
            const __m256 ds = scales4(&x[0][i], &x[1][i], &x[2][i], &x[3][i], fp16_to_f32(y[i].d));
            _Pragma("GCC unroll 4") for (int k = 0; k < MV_ROWS; k++) {
                __m256i p = dpbusd(base, nibbles32(x[k][i].qs), yv);
                acc[k] = _mm256_fmadd_ps(lane_of(ds, k), _mm256_cvtepi32_ps(p), acc[k]);
            }
        }
        for (int k = 0; k < MV_ROWS; k++)
            out[r + k] = hsum_ps(acc[k]);
    }
    for (; r < rows; r++)
        out[r] = quant_avx2_dot_q4_0(n, (const char *)w + (size_t)r * rs, act);
}

/* One row after the other, as ggml's vec_dot loop reads them: the matrix is
 * then one sequential stream. Four rows side by side (with the activation
 * block shared, and a software prefetch 256 bytes ahead of each, which had
 * gained 45 % over the same four rows without it on a Zen 5's AVX2 build)
 * are four short streams a row's length (2176 bytes at 2048 wide) that the
 * hardware prefetcher keeps having to find again: on the Zen 3 a 71 MB
 * matrix read at 7.4-8 GB/s that way against 10-11 GB/s one row at a time
 * (ggml's own speed here, one core), and TinyLlama-1.1B Q8_0 generated
 * 16.4 tok/s against 19.0 with 2 threads. */
void quant_avx2_matvec_q8_0(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    for (int64_t r = 0; r < rows; r++)
        out[r] = quant_avx2_dot_q8_0(n, (const char *)w + (size_t)r * rs, act);
}

/* ---- one weight row x 4 activations (prompt batches) ----
 * Per (row, activation) pair the arithmetic is exactly vec_dot's; the row's
 * blocks are decoded once and used four times. */

/* acc + vec_dot's step for one block pair: signed bytes via the sign trick. */
static inline __m256 dot4_step(__m256 acc, __m256i ax, __m256i qx, float dx, const block_q8_0 *y)
{
    __m256i p = dpbusd(_mm256_setzero_si256(), ax, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)y->qs), qx));
    return _mm256_fmadd_ps(_mm256_set1_ps(dx * fp16_to_f32(y->d)), _mm256_cvtepi32_ps(p), acc);
}

void quant_avx2_dot4_q8_0(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_q8_0 *x = w;
    const block_q8_0 *y0 = act[0], *y1 = act[1], *y2 = act[2], *y3 = act[3];
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        const __m256i qx = _mm256_loadu_si256((const __m256i *)x[i].qs);
        const __m256i ax = _mm256_sign_epi8(qx, qx);
        const float dx = fp16_to_f32(x[i].d);
        a0 = dot4_step(a0, ax, qx, dx, y0 + i);
        a1 = dot4_step(a1, ax, qx, dx, y1 + i);
        a2 = dot4_step(a2, ax, qx, dx, y2 + i);
        a3 = dot4_step(a3, ax, qx, dx, y3 + i);
    }
    out[0] = hsum_ps(a0);
    out[1] = hsum_ps(a1);
    out[2] = hsum_ps(a2);
    out[3] = hsum_ps(a3);
}

void quant_avx2_dot4_q4_0(int64_t n, const void *w, const void *const act[4], float out[4])
{
    const block_q4_0 *x = w;
    const block_q8_0 *y0 = act[0], *y1 = act[1], *y2 = act[2], *y3 = act[3];
    const __m256i off = _mm256_set1_epi8(8);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        const __m256i qx = _mm256_sub_epi8(nibbles32(x[i].qs), off);
        const __m256i ax = _mm256_sign_epi8(qx, qx);
        const float dx = fp16_to_f32(x[i].d);
        a0 = dot4_step(a0, ax, qx, dx, y0 + i);
        a1 = dot4_step(a1, ax, qx, dx, y1 + i);
        a2 = dot4_step(a2, ax, qx, dx, y2 + i);
        a3 = dot4_step(a3, ax, qx, dx, y3 + i);
    }
    out[0] = hsum_ps(a0);
    out[1] = hsum_ps(a1);
    out[2] = hsum_ps(a2);
    out[3] = hsum_ps(a3);
}

/* Q4_1, Q5_0 and Q5_1, one row against nt (1 or 4) activations in ggml's
 * vec_dot order for each: a block's values are built once and used nt
 * times; vec_dot is the nt = 1 instance. Q5_0 gives the signed values
 * (q - 16 = nibble - (bit ? 0 : 16)) to the sign trick; Q4_1 and Q5_1 give
 * the unsigned ones straight to the u8 x s8 dot, and their min terms
 * m * s are FMA-accumulated on the side (fused, as GCC builds the
 * reference). */
static inline __attribute__((always_inline)) void q4_1_rows(int64_t n, const void *w, const void *const act[4],
                                                          int nt, float out[4])
{
    const block_q4_1 *x = w;
    const block_q8_1 *y[4] = {act[0], act[1], act[2], act[3]};
    __m256 acc[4];
    float summs[4] = {0};
    for (int c = 0; c < nt; c++)
        acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK4_1; i++) {
        const float d0 = fp16_to_f32(x[i].d), m = fp16_to_f32(x[i].m);
        const __m256i q = nibbles32(x[i].qs);
        _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++)
        {
            const block_q8_1 *yc = y[c] + i;
            summs[c] = fmaf(m, fp16_to_f32(yc->s), summs[c]);
            const __m256i p = dpbusd(_mm256_setzero_si256(), q, _mm256_loadu_si256((const __m256i *)yc->qs));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d0 * fp16_to_f32(yc->d)), _mm256_cvtepi32_ps(p), acc[c]);
        }
    }
    for (int c = 0; c < nt; c++)
        out[c] = hsum_ps(acc[c]) + summs[c];
}

QUANT_ROWS_KERNELS(q4_1)

static inline __attribute__((always_inline)) void q5_0_rows(int64_t n, const void *w, const void *const act[4],
                                                          int nt, float out[4])
{
    const block_q5_0 *x = w;
    const block_q8_0 *y[4] = {act[0], act[1], act[2], act[3]};
    __m256 acc[4];
    for (int c = 0; c < nt; c++)
        acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK5_0; i++) {
        const __m256i hb = _mm256_andnot_si256(bits32(x[i].qh), _mm256_set1_epi8((char)0xF0));
        const __m256i q = _mm256_or_si256(nibbles32(x[i].qs), hb);
        const float dx = fp16_to_f32(x[i].d);
        _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++)
        {
            const block_q8_0 *yc = y[c] + i;
            const __m256i p = dot_s8(q, _mm256_loadu_si256((const __m256i *)yc->qs));
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * fp16_to_f32(yc->d)), _mm256_cvtepi32_ps(p), acc[c]);
        }
    }
    for (int c = 0; c < nt; c++)
        out[c] = hsum_ps(acc[c]);
}

QUANT_ROWS_KERNELS(q5_0)

static inline __attribute__((always_inline)) void q5_1_rows(int64_t n, const void *w, const void *const act[4],
                                                          int nt, float out[4])
{
    const block_q5_1 *x = w;
    const block_q8_1 *y[4] = {act[0], act[1], act[2], act[3]};
    __m256 acc[4];
    float summs[4] = {0};
    for (int c = 0; c < nt; c++)
        acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK5_1; i++) {
        const float dx = fp16_to_f32(x[i].d), m = fp16_to_f32(x[i].m);
        const __m256i hb = _mm256_and_si256(bits32(x[i].qh), _mm256_set1_epi8(0x10));
        const __m256i q = _mm256_or_si256(nibbles32(x[i].qs), hb);
        _Pragma("GCC unroll 4") for (int c = 0; c < nt; c++)
        {
            const block_q8_1 *yc = y[c] + i;
            summs[c] = fmaf(m, fp16_to_f32(yc->s), summs[c]);
            const __m256i p = dpbusd(_mm256_setzero_si256(), q, _mm256_loadu_si256((const __m256i *)yc->qs));
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * fp16_to_f32(yc->d)), acc[c]);
        }
    }
    for (int c = 0; c < nt; c++)
        out[c] = hsum_ps(acc[c]) + summs[c];
}

QUANT_ROWS_KERNELS(q5_1)

/* 4 rows x 4 activations for Q8_0-activation blocks: weights enter the u8 x s8
 * dot as unsigned bytes (q8: x ^ 0x80 = x + 128, q4: the raw nibble) and the
 * offset returns through per-lane activation sums computed once per block,
 * so each of the 16 pairs costs one dot, one convert, one multiply, one FMA.
 * Lane integers and float steps are those of vec_dot. */
/* The tile runs as two 4 x 2 halves, each over the whole row: 8
 * accumulators and the operands fit AVX2's 16 registers, where 16
 * accumulators spilled (Q8_0 prompts 11 % faster on AMD Zen 3). As in the
 * reference's tinyBLAS_Q0_AVX::gemm4xN, the four rows' scales convert in one
 * instruction and one multiply per token gives the four products, which a
 * shuffle hands to each row: the per-pair scalar conversions and multiplies
 * (and the spills they caused) cost a fifth of the tile. Same products and
 * FMAs, so the same bits. */
static inline __attribute__((always_inline)) void mm4x2_q8act(int64_t nb, const void *w, size_t rs,
                                                             const block_q8_0 *const y[2], __m256 acc[4][2], int q4)
{
    const int off_shift = q4 ? 3 : 7; /* offset 8 or 128 */
    const size_t bs = q4 ? sizeof(block_q4_0) : sizeof(block_q8_0);
    const uint8_t *wr[4];
    for (int r = 0; r < 4; r++) {
        wr[r] = (const uint8_t *)w + (size_t)r * rs;
        for (int c = 0; c < 2; c++)
            acc[r][c] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const size_t o = (size_t)i * bs; /* both block types start with the F16 scale */
        __m256i yv[2], base[2];
        __m256 ds[2];
        _Pragma("GCC unroll 2") for (int c = 0; c < 2; c++)
        {
            yv[c] = _mm256_loadu_si256((const __m256i *)y[c][i].qs);
            /* Q4_0's offset 8, and with VNNI Q8_0's 128 (q8w_dot); without
             * VNNI q8w_dot ignores it and the sums are never computed */
            base[c] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(act_sums4(yv[c]), off_shift));
            ds[c] = scales4(wr[0] + o, wr[1] + o, wr[2] + o, wr[3] + o, fp16_to_f32(y[c][i].d));
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        {
            const __m256i raw = q4 ? nibbles32(((const block_q4_0 *)(const void *)(wr[r] + o))->qs)
                                   : _mm256_loadu_si256((const __m256i *)(const void *)(wr[r] + o + 2));
            _Pragma("GCC unroll 2") for (int c = 0; c < 2; c++)
            {
                /* Q4_0 nibbles (0..15) are safe in maddubs; Q8_0 bytes need q8w_dot */
                const __m256i p = q4 ? dpbusd(base[c], raw, yv[c]) : q8w_dot(base[c], raw, yv[c]);
                acc[r][c] = _mm256_fmadd_ps(lane_of(ds[c], r), _mm256_cvtepi32_ps(p), acc[r][c]);
            }
        }
    }
}

static inline __attribute__((always_inline)) void mm4x4_q8act(int64_t nb, const void *w, size_t rs, const void *const act[4], float out[4][4],
                               int q4)
{
    for (int h = 0; h < 4; h += 2) {
        const block_q8_0 *y[2] = {act[h], act[h + 1]};
        __m256 acc[4][2];
        mm4x2_q8act(nb, w, rs, y, acc, q4);
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 2; c++)
                out[h + c][r] = hsum_ps(acc[r][c]);
    }
}

/* Dequantization: each value is one product, int times the block's scale,
 * so the lanes give the scalar loop's bits. Quantized KV caches (V rows,
 * converted per key) spent a fifth of a prompt's time in the scalar loop. */
static inline void dequant8(const __m128i q8, float d, float *dst)
{
    const __m256 dv = _mm256_set1_ps(d);
    _mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), dv));
    _mm256_storeu_ps(dst + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q8, 8))), dv));
}

void quant_avx2_dequantize_q8_0(const void *src, float *dst, int64_t n)
{
    const block_q8_0 *x = src;
    for (int64_t i = 0; i < n / QK8_0; i++, dst += QK8_0) {
        const float d = fp16_to_f32(x[i].d);
        dequant8(_mm_loadu_si128((const __m128i *)x[i].qs), d, dst);
        dequant8(_mm_loadu_si128((const __m128i *)(x[i].qs + 16)), d, dst + 16);
    }
}

void quant_avx2_dequantize_q4_0(const void *src, float *dst, int64_t n)
{
    const block_q4_0 *x = src;
    for (int64_t i = 0; i < n / QK4_0; i++, dst += QK4_0) {
        const float d = fp16_to_f32(x[i].d);
        /* elements 0-15: low nibbles, 16-31: high nibbles, minus 8 */
        const __m256i v = _mm256_sub_epi8(nibbles32(x[i].qs), _mm256_set1_epi8(8));
        dequant8(_mm256_castsi256_si128(v), d, dst);
        dequant8(_mm256_extracti128_si256(v, 1), d, dst + 16);
    }
}

void quant_avx2_dot4x4_q8_0(int64_t n, const void *w, size_t rs, const void *const act[4], float out[4][4])
{
    mm4x4_q8act(n / QK8_0, w, rs, act, out, 0);
}

void quant_avx2_dot4x4_q4_0(int64_t n, const void *w, size_t rs, const void *const act[4], float out[4][4])
{
    mm4x4_q8act(n / QK4_0, w, rs, act, out, 1);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
/* Q5_0 rows in pairs, one per 256-bit half of a register, against nt <= 4
 * activations. Each half does quant_avx2_dot_q5_0's steps for its row: the
 * same 8 lane integers (the values enter unsigned, q + 16, and 16 times the
 * activation's lane sums come off), the same scale product and FMA per
 * block, the same final sum. So vec_dot, these tiles and the reference's
 * tinyBLAS tiles agree bit for bit, and VNNI does the integer work of two
 * rows per instruction. */
/* Two rows' values plus 16, one row per 256-bit half: element j of a half
 * is nibble j (low nibbles, then high ones) with 16 added where bit j of
 * the row's qh is set. */
static inline __m512i q5_0_unsigned2(const block_q5_0 *x0, const block_q5_0 *x1)
{
    const __m256i qs = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)x0->qs)),
                                               _mm_loadu_si128((const __m128i *)x1->qs), 1);
    /* [qs0, qs1, qs0 >> 4, qs1 >> 4] -> [qs0, qs0 >> 4, qs1, qs1 >> 4] */
    const __m512i t = _mm512_inserti64x4(_mm512_castsi256_si512(qs), _mm256_srli_epi16(qs, 4), 1);
    const __m512i nib = _mm512_and_si512(_mm512_shuffle_i64x2(t, t, _MM_SHUFFLE(3, 1, 2, 0)), _mm512_set1_epi8(0x0F));
    uint32_t h0, h1;
    memcpy(&h0, x0->qh, 4);
    memcpy(&h1, x1->qh, 4);
    const __mmask64 hi = _cvtu64_mask64((uint64_t)h0 | (uint64_t)h1 << 32);
    return _mm512_mask_add_epi8(nib, hi, nib, _mm512_set1_epi8(16));
}

/* One activation block against both row pairs: lane integers sum (u - 16) a
 * (16 times the lane sums of a come off through dpbusd's accumulator), then
 * vec_dot's scale product and FMA per lane. */
static inline __attribute__((always_inline)) void q5_0_step(const block_q8_0 *y, __m512i u0, __m512i u1, __m512 xd0,
                                                             __m512 xd1, __m512 *acc0, __m512 *acc1)
{
    const __m512i a = quant_dup256(y->qs);
    const __m512i base =
        _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(16), a));
    const __m512 dy = _mm512_set1_ps(fp16_to_f32(y->d));
    *acc0 = _mm512_fmadd_ps(_mm512_mul_ps(xd0, dy), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(base, u0, a)), *acc0);
    *acc1 = _mm512_fmadd_ps(_mm512_mul_ps(xd1, dy), _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(base, u1, a)), *acc1);
}

static inline __attribute__((always_inline)) void q5_0_rows4(int64_t nb, const char *w, size_t rs,
                                                              const void *const act[4], int nt, float out[4][4],
                                                              const char *pf, size_t pf_step)
{
    const block_q5_0 *x0 = (const block_q5_0 *)w, *x1 = (const block_q5_0 *)(w + rs);
    const block_q5_0 *x2 = (const block_q5_0 *)(w + 2 * rs), *x3 = (const block_q5_0 *)(w + 3 * rs);
    const block_q8_0 *y0 = act[0], *y1 = act[1], *y2 = act[2], *y3 = act[3];
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00; /* pair 0 (rows 0, 1), tokens 0-3 */
    __m512 a10 = a00, a11 = a00, a12 = a00, a13 = a00;                 /* pair 1 (rows 2, 3) */
    for (int64_t i = 0; i < nb; i++) {
        quant_prefetch_step(pf, i, pf_step);
        const __m512i u0 = q5_0_unsigned2(&x0[i], &x1[i]), u1 = q5_0_unsigned2(&x2[i], &x3[i]);
        const __m512 xd0 = _mm512_insertf32x8(_mm512_set1_ps(fp16_to_f32(x0[i].d)), _mm256_set1_ps(fp16_to_f32(x1[i].d)), 1);
        const __m512 xd1 = _mm512_insertf32x8(_mm512_set1_ps(fp16_to_f32(x2[i].d)), _mm256_set1_ps(fp16_to_f32(x3[i].d)), 1);
        q5_0_step(&y0[i], u0, u1, xd0, xd1, &a00, &a10);
        if (nt > 1) {
            q5_0_step(&y1[i], u0, u1, xd0, xd1, &a01, &a11);
            q5_0_step(&y2[i], u0, u1, xd0, xd1, &a02, &a12);
            q5_0_step(&y3[i], u0, u1, xd0, xd1, &a03, &a13);
        }
    }
    const __m512 acc[2][4] = {{a00, a01, a02, a03}, {a10, a11, a12, a13}};
    for (int p = 0; p < 2; p++)
        for (int c = 0; c < nt; c++) {
            out[c][2 * p] = hsum_ps(_mm512_castps512_ps256(acc[p][c]));
            out[c][2 * p + 1] = hsum_ps(_mm512_extractf32x8_ps(acc[p][c], 1));
        }
}

void quant_avx512_dot4x4_q5_0(int64_t n, const void *w, size_t rs, const void *const act[4], float out[4][4])
{
    q5_0_rows4(n / QK5_0, w, rs, act, 4, out, w, 0); /* step 0: no prefetch */
}

/* Out of cache: 14 -> 22 GB/s on one thread with the prefetch. */
void quant_avx512_matvec_q5_0(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out)
{
    const void *const a[4] = {act, act, act, act};
    const int64_t nb = n / QK5_0;
    const size_t step = quant_prefetch_step_size(rs, 4, nb);
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        float o[4][4];
        const char *x = (const char *)w + (size_t)r * rs;
        q5_0_rows4(nb, x, rs, a, 1, o, x + QUANT_PF_AHEAD * 4 * rs, step);
        memcpy(out + r, o[0], sizeof o[0]);
    }
    for (; r < rows; r++)
        out[r] = quant_avx2_dot_q5_0(n, (const char *)w + (size_t)r * rs, act);
}
#endif

#endif /* QUANT_HAVE_AVX2 */
