/* The online softmax's scan over 16 scores, shared by the grouped (F16
 * cache) and quantized-cache attention kernels: one AVX-512 vector of keys
 * against the running maximum, in the order of ggml's one-key-at-a-time loop
 * (each key compared with the maximum of those before it); and 16 horizontal
 * sums at once in _mm512_reduce_add_ps's order (those kernels' K.Q, the tiled
 * kernel's softmax sums). */
#ifndef TOKSCOPE_MODEL_ATTN_SCAN_H
#define TOKSCOPE_MODEL_ATTN_SCAN_H

#ifdef __AVX512F__
#include <immintrin.h>

/* lane i gets v[i - k] (k lanes up), lanes below k get fill[16 - k + i] */
#define SHIFT_UP(v, fill, k) _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v), _mm512_castps_si512(fill), 16 - (k)))

/* The horizontal sums of 16 keys whose 8-lane halves are summed already, two
 * keys per register (key 2m in w[m]'s lanes 0-7, key 2m + 1 in 8-15): lane
 * l of the result is key l's, halves of 4 then (0+2) + (1+3), as
 * _mm512_reduce_add_ps and hsum_float_8 finish (the quantized-cache
 * kernel's K.Q sums start here). */
static inline __attribute__((always_inline)) __m512 attn_reduce8x2(const __m512 w[8])
{
    __m512 x[4], y[2];
    _Pragma("GCC unroll 4") for (int m = 0; m < 4; m++) /* 128-bit lane q: key 4m + q's 4 sums */
        x[m] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * m], w[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(w[2 * m], w[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    _Pragma("GCC unroll 2") for (int m = 0; m < 2; m++) /* lane q: (0+2), (1+3) of keys 8m + q, 8m + 4 + q */
        y[m] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * m], x[2 * m + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(x[2 * m], x[2 * m + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* element 4q + e: key 4e + q */
    const __m512 z = _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(order, z);
}

/* The horizontal sums of 16 vectors, lane l of the result being v[l]'s
 * _mm512_reduce_add_ps: halves of 8, then attn_reduce8x2, the same
 * additions for all 16 at once. */
static inline __attribute__((always_inline)) __m512 attn_reduce16(const __m512 v[16])
{
    __m512 w[8];
    _Pragma("GCC unroll 8") for (int m = 0; m < 8; m++) /* lanes 0-7: v[2m]'s 8 sums, 8-15: v[2m+1]'s */
        w[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44),
                             _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xEE));
    return attn_reduce8x2(w);
}

/* Scores s (keys to skip are -inf: never a new maximum) against the running
 * maximum *Mv (every lane): writes each key's exp argument to arg (s - M for
 * a key below the maximum before it, Mold - s for a new maximum, whose
 * accumulator is rescaled), sets *Mv to the maximum after the 16 keys and
 * returns the new-maximum bits. */
static inline __attribute__((always_inline)) __mmask16 attn_scan16(__m512 s, __m512 ninf, __m512 *Mv, float *arg)
{
    /* inclusive prefix maximum, then the maximum before each key */
    __m512 p = _mm512_max_ps(s, SHIFT_UP(s, ninf, 1));
    p = _mm512_max_ps(p, SHIFT_UP(p, ninf, 2));
    p = _mm512_max_ps(p, SHIFT_UP(p, ninf, 4));
    p = _mm512_max_ps(p, SHIFT_UP(p, ninf, 8));
    p = _mm512_max_ps(p, *Mv);
    const __m512 before = SHIFT_UP(p, *Mv, 1);
    const __mmask16 nw = _mm512_cmp_ps_mask(s, before, _CMP_GT_OQ);
    _mm512_storeu_ps(arg, _mm512_mask_sub_ps(_mm512_sub_ps(s, before), nw, before, s));
    *Mv = _mm512_permutexvar_ps(_mm512_set1_epi32(15), p);
    return nw;
}
#endif

#endif
