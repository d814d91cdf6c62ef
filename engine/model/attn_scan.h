/* The online softmax's scan over 16 scores, shared by the grouped (F16
 * cache) and quantized-cache attention kernels: one AVX-512 vector of keys
 * against the running maximum, in the order of ggml's one-key-at-a-time loop
 * (each key compared with the maximum of those before it). */
#ifndef TOKSCOPE_MODEL_ATTN_SCAN_H
#define TOKSCOPE_MODEL_ATTN_SCAN_H

#ifdef __AVX512F__
#include <immintrin.h>

/* lane i gets v[i - k] (k lanes up), lanes below k get fill[16 - k + i] */
#define SHIFT_UP(v, fill, k) _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(v), _mm512_castps_si512(fill), 16 - (k)))

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
