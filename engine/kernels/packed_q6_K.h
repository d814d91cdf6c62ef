/* Q6_K weights re-encoded at load time for AVX2 builds (no AVX-512): the
 * same 210-byte blocks, rows in file order, scales and d where the file
 * has them, only the 6-bit values stored otherwise, so that they cost
 * fewer instructions to unpack. The kernels keep vec_dot's integer lanes
 * and float steps, so the logits keep their bits.
 *
 * The file keeps a half block's 128 values (its four 32-value chunks) as
 * 64 bytes of nibbles and 32 of 2-bit pairs: building the chunks' bytes
 * takes 17 vector operations a half (shifts, masks, ors). Here the same
 * 96 bytes are three vectors va, vb, vc: chunk 0 is va's low 6 bits, chunk
 * 1 vb's, chunk 2 vc's, and chunk 3 is spread over their top 2 bits (bits
 * 0-1 in va, 2-3 in vb, 4-5 in vc): 3 + 8 operations, 11. The Q6_K output
 * head of the Qwen3-30B-A3B width takes 60 % of a generated token on one
 * thread, and there the one-token kernel is bound by its operations, not
 * by memory: 7.0 -> 6.2 ns per block in cache, 7.7-8.2 -> 7.2-7.8 from
 * memory (one thread of an AMD EPYC Zen 4, AVX2 build).
 *
 * AVX-512 builds keep the file's layout (their few-token kernels unpack a
 * row pair with vpternlog, quant_kfew.h). Internal to the kernels. */
#ifndef TOKSCOPE_PACKED_Q6_K_H
#define TOKSCOPE_PACKED_Q6_K_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && !defined(__AVX512F__)
#define PACKED_Q6_K 1
#endif

/* nb blocks of a file row (src) re-encoded into dst (may not overlap). */
void packed_q6_K_encode(const void *src, void *dst, int64_t nb);

/* The values of one re-encoded block, minus 32, in element order (as
 * quant_unpack_q6_K gives the file's): for tests. */
void packed_q6_K_unpack(const void *block, int8_t q[256]);

#ifdef __AVX2__
#include <immintrin.h>
/* Chunk k (0..3) of half h of the re-encoded block at b: 32 values 0..63
 * (AVX2 builds; only those with PACKED_Q6_K re-encode rows, and the row
 * kernels of the others never read such a row). */
static inline __attribute__((always_inline)) __m256i packed_q6_K_chunk(const uint8_t *b, int h, int k)
{
    const __m256i top = _mm256_set1_epi8((char)0xC0);
    const uint8_t *v = b + 96 * h;
    if (k < 3)
        return _mm256_andnot_si256(top, _mm256_loadu_si256((const __m256i *)(const void *)(v + 32 * k)));
    /* the top bits of va, vb, vc, each pair moved down by 2 as the next
     * comes in above it; the 16-bit shifts carry nothing across bytes, as
     * each byte's low bits are clear when it shifts */
    __m256i t = _mm256_srli_epi16(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)v), top), 2);
    t = _mm256_or_si256(t, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(v + 32)), top));
    t = _mm256_srli_epi16(t, 2);
    t = _mm256_or_si256(t, _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(v + 64)), top));
    return _mm256_srli_epi16(t, 2);
}

/* Chunk k of half h of the Q6_K block at b, 32 values 0..63, in the
 * file's layout (its nibbles at ql, 64 bytes a half, and 2-bit pairs at
 * qh, 32 a half) or, with enc, re-encoded (packed_q6_K_chunk). Inlined with
 * constant h, k and enc; a block's repeated loads are one each. */
static inline __attribute__((always_inline)) __m256i q6_K_chunk(const uint8_t *b, int h, int k, bool enc)
{
    if (enc)
        return packed_q6_K_chunk(b, h, k);
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    const __m256i lb = _mm256_loadu_si256((const __m256i *)(const void *)(b + 64 * h + 32 * (k & 1)));
    const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(b + 128 + 32 * h));
    const __m256i lw = k < 2 ? _mm256_and_si256(lb, m4) : _mm256_and_si256(_mm256_srli_epi16(lb, 4), m4);
    const __m256i hw = k == 0   ? _mm256_slli_epi16(qh, 4)
                       : k == 1 ? _mm256_slli_epi16(qh, 2)
                       : k == 2 ? qh
                                : _mm256_srli_epi16(qh, 2);
    return _mm256_or_si256(lw, _mm256_and_si256(hw, m2));
}
#endif

#ifdef PACKED_Q6_K

/* out[t * out_stride + r] = row r . act token t for r in [r0, r1), t <
 * n_tok, over the re-encoded rows of w (rs bytes apart, n wide): vec_dot's
 * bits. One token: the rows in turn, prefetched ahead; up to 7 tokens:
 * passes of 4 and 1; more: gemm_kq6's GEMM (its panels written from
 * these rows). */
void packed_q6_K_matmul(int64_t n, const uint8_t *w, size_t rs, int64_t r0, int64_t r1, const uint8_t *act,
                        size_t act_stride, int n_tok, float *out, int64_t out_stride);
#endif

#endif
