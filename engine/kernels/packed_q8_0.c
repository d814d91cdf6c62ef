/* Packed Q8_0 kernels (packed_q8_0.h): AVX-512 VNNI builds only. */
#include "kernels/packed_q8_0.h"

#include <string.h>

#include "kernels/forward_math.h"
#include "kernels/kernel_scratch.h"

size_t packed_q8_0_act_bytes(int64_t nb)
{
    return ((size_t)nb * 36 + 63) & ~(size_t)63;
}

void packed_q8_0_act(const block_q8_0 *y, int64_t nb, uint8_t *dst)
{
    float *d = (float *)(void *)(dst + (size_t)nb * 32);
    for (int64_t b = 0; b < nb; b++) {
        for (int i = 0; i < 32; i++)
            dst[(size_t)b * 32 + i] = (uint8_t)y[b].qs[i] ^ 0x80;
        d[b] = h2f(y[b].d);
    }
}

void packed_q8_0_pack_row(const block_q8_0 *x, int64_t nb, int r, uint8_t *o)
{
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *q = o + (size_t)b * PACKED_Q8_0_QS + 4 * r;
        for (int l = 0; l < 8; l++)
            memcpy(q + 64 * l, x[b].qs + 4 * l, 4);
        memcpy(o + (size_t)nb * PACKED_Q8_0_QS + (size_t)b * 32 + 2 * r, &x[b].d, 2);
    }
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#include <immintrin.h>

static inline int32_t ld32(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* How a tile gets each weight vector's starting value -128 * (sum of its
 * row's four bytes): from one VNNI dot of 128s against it (DOT), the same
 * and kept in starts for the next tokens of the pass (STORE), or from
 * starts (LOAD). */
enum q8_0_start { Q8_0_DOT, Q8_0_STORE, Q8_0_LOAD };

/* Blocks [b0, b1) of one group against nt <= 3 tokens (a constant after
 * inlining: the 8 * nt accumulators stay in registers), each weight vector
 * and starting value loaded once for the nt tokens (kept in registers: GCC
 * would otherwise fold them into each dot as memory operands, one more load
 * per dot; the loads bound this loop, not the arithmetic). The accumulators start at zero (b0 == 0)
 * or from spill (8 vectors per token), and end in spill or, at the row's
 * last block, reduced into out. pf: the next group, prefetched pf_step bytes
 * per block (0: not this pass). starts: 8 vectors per block of the pass. */
static inline __attribute__((always_inline)) void
q8_0_tile(const uint8_t *pw, int64_t nb, int64_t b0, int64_t b1, const uint8_t *act, size_t act_bytes, int nt,
          __m512 *spill, float *out, int64_t out_stride, __mmask16 keep, const uint8_t *pf, size_t pf_step,
          __m512i *starts, enum q8_0_start mode)
{
    const uint8_t *scales = pw + (size_t)nb * PACKED_Q8_0_QS;
    __m512 acc[3][8];
    for (int k = 0; k < nt; k++)
        for (int l = 0; l < 8; l++)
            acc[k][l] = b0 == 0 ? _mm512_setzero_ps() : spill[8 * k + l];
    for (int64_t b = b0; b < b1; b++) {
        quant_prefetch_step((const char *)pf, b, pf_step);
        const uint8_t *q = pw + (size_t)b * PACKED_Q8_0_QS;
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(scales + (size_t)b * 32)));
        __m512 sc[3];
        _Pragma("GCC unroll 3") for (int k = 0; k < nt; k++)
        {
            const float *da = (const float *)(const void *)(act + (size_t)k * act_bytes + (size_t)nb * 32);
            sc[k] = _mm512_mul_ps(dw, _mm512_set1_ps(da[b]));
        }
        __m512i *st = mode == Q8_0_DOT ? NULL : starts + 8 * (b - b0);
        _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++)
        {
            __m512i w = _mm512_loadu_si512(q + 64 * l), s0;
            /* w in a register before the starting value's dot: GCC folded
             * the load into that dot and loaded w again for the token's, 8
             * of the one-token loop's 35 loads per block (the loads, 2 a
             * cycle, bound that loop in the caches) */
            __asm__("" : "+v"(w));
            if (mode == Q8_0_LOAD)
                s0 = _mm512_load_si512(st + l);
            else {
                s0 = _mm512_sub_epi32(_mm512_setzero_si512(),
                                      _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(-128), w));
                if (mode == Q8_0_STORE)
                    _mm512_store_si512(st + l, s0);
            }
            __asm__("" : "+v"(w), "+v"(s0));
            _Pragma("GCC unroll 3") for (int k = 0; k < nt; k++)
            {
                const uint8_t *a = act + (size_t)k * act_bytes + (size_t)b * 32;
                const __m512i s = _mm512_dpbusd_epi32(s0, _mm512_set1_epi32(ld32(a + 4 * l)), w);
                acc[k][l] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc[k], acc[k][l]);
            }
        }
    }
    if (b1 < nb) {
        for (int k = 0; k < nt; k++)
            for (int l = 0; l < 8; l++)
                spill[8 * k + l] = acc[k][l];
        return;
    }
    /* hsum_float_8's order per row: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) */
    for (int k = 0; k < nt; k++) {
        const __m512 a = _mm512_add_ps(_mm512_add_ps(acc[k][0], acc[k][4]), _mm512_add_ps(acc[k][2], acc[k][6]));
        const __m512 c = _mm512_add_ps(_mm512_add_ps(acc[k][1], acc[k][5]), _mm512_add_ps(acc[k][3], acc[k][7]));
        _mm512_mask_storeu_ps(out + (int64_t)k * out_stride, keep, _mm512_add_ps(a, c));
    }
}

/* Blocks per pass when several tiles of tokens share a group: the pass's
 * weights (32 x 544 bytes) and starting values (32 x 512) stay in the L1
 * cache from one tile to the next, where a whole group (34-95 KB on
 * TinyLlama's shapes) came from L2 for every pair. The accumulators wait in
 * spill between passes. */
#define Q8_0_PASS 32

void packed_q8_0_group(const uint8_t *pw, int64_t nb, size_t gb, const uint8_t *act, size_t act_bytes, int n_tok,
                       float *out, int64_t out_stride, int lo, int hi)
{
    const __mmask16 keep = (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
    const size_t step = quant_prefetch_step_size(gb, 1, nb);
    __m512 spill[PACKED_Q8_0_TILE * 8];
    if (n_tok <= 2) { /* one tile: the starts from the dots, kept nowhere */
        if (n_tok == 2)
            q8_0_tile(pw, nb, 0, nb, act, act_bytes, 2, spill, out, out_stride, keep, pw + gb, step, NULL, Q8_0_DOT);
        else
            q8_0_tile(pw, nb, 0, nb, act, act_bytes, 1, spill, out, out_stride, keep, pw + gb, step, NULL, Q8_0_DOT);
        return;
    }
    __m512i starts[Q8_0_PASS * 8];
    for (int64_t b0 = 0; b0 < nb; b0 += Q8_0_PASS) {
        const int64_t b1 = nb - b0 < Q8_0_PASS ? nb : b0 + Q8_0_PASS;
        /* the mode a constant in each call: one loop per mode */
        q8_0_tile(pw, nb, b0, b1, act, act_bytes, 2, spill, out, out_stride, keep, pw + gb, step, starts, Q8_0_STORE);
        int t = 2;
        for (; t + 3 <= n_tok; t += 3)
            q8_0_tile(pw, nb, b0, b1, act + (size_t)t * act_bytes, act_bytes, 3, spill + 8 * t,
                      out + (int64_t)t * out_stride, out_stride, keep, pw + gb, 0, starts, Q8_0_LOAD);
        for (; t + 2 <= n_tok; t += 2)
            q8_0_tile(pw, nb, b0, b1, act + (size_t)t * act_bytes, act_bytes, 2, spill + 8 * t,
                      out + (int64_t)t * out_stride, out_stride, keep, pw + gb, 0, starts, Q8_0_LOAD);
        if (t < n_tok)
            q8_0_tile(pw, nb, b0, b1, act + (size_t)t * act_bytes, act_bytes, 1, spill + 8 * t,
                      out + (int64_t)t * out_stride, out_stride, keep, pw + gb, 0, starts, Q8_0_LOAD);
    }
}

bool packed_q8_0_rows(const void *w, size_t rs, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return true;
    const size_t gb = (size_t)nb * PACKED_Q8_0_PB, ab = packed_q8_0_act_bytes(nb);
    /* one group and every token's side data; the group's next one is
     * packed only after the tokens ran against it */
    uint8_t *scr = kernel_scratch_get(((gb + 63) & ~(size_t)63) + (size_t)n_tok * ab);
    if (!scr)
        return false;
    uint8_t *side = scr + ((gb + 63) & ~(size_t)63);
    for (int t = 0; t < n_tok; t++)
        packed_q8_0_act((const block_q8_0 *)(const void *)(act + (size_t)t * act_stride), nb, side + (size_t)t * ab);
    for (int64_t base = r0; base < r1; base += 16) {
        const int rows = r1 - base < 16 ? (int)(r1 - base) : 16;
        for (int r = 0; r < 16; r++) /* past r1: the last row again, its outputs masked off */
            packed_q8_0_pack_row((const block_q8_0 *)(const void *)((const uint8_t *)w +
                                                                     (size_t)(base + (r < rows ? r : rows - 1)) * rs),
                                 nb, r, scr);
        for (int t0 = 0; t0 < n_tok; t0 += PACKED_Q8_0_TILE)
            packed_q8_0_group(scr, nb, gb, side + (size_t)t0 * ab, ab,
                              n_tok - t0 < PACKED_Q8_0_TILE ? n_tok - t0 : PACKED_Q8_0_TILE,
                              out + (int64_t)t0 * out_stride + base, out_stride, 0, rows);
    }
    return true;
}
#else
bool packed_q8_0_rows(const void *w, size_t rs, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    (void)w;
    (void)rs;
    (void)nb;
    (void)r0;
    (void)r1;
    (void)act;
    (void)act_stride;
    (void)n_tok;
    (void)out;
    (void)out_stride;
    return false;
}
#endif
