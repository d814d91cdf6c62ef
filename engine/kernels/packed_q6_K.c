/* Q6_K rows re-encoded at load time and their matmuls (packed_q6_K.h). */
#include "kernels/packed_q6_K.h"

#include <stddef.h>
#include <string.h>

#include "kernels/gemm_kq6.h"
#include "kernels/quant_internal.h"

/* the chunk readers (packed_q6_K.h) take a block's bytes by offset */
_Static_assert(offsetof(block_q6_K, ql) == 0 && offsetof(block_q6_K, qh) == 128, "block_q6_K layout");

void packed_q6_K_encode(const void *src, void *dst, int64_t nb)
{
    const block_q6_K *x = src;
    block_q6_K *o = dst;
    for (int64_t i = 0; i < nb; i++) {
        int8_t q[QK_K];
        quant_unpack_q6_K(&x[i], q); /* minus 32 */
        uint8_t v[192];
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const int8_t *c = q + 128 * h + l;
                const unsigned c3 = (unsigned)(c[96] + 32);
                for (int k = 0; k < 3; k++)
                    v[96 * h + 32 * k + l] = (uint8_t)((unsigned)(c[32 * k] + 32) | ((c3 >> (2 * k)) & 3u) << 6);
            }
        block_q6_K b = x[i]; /* scales and d stay */
        memcpy(b.ql, v, sizeof b.ql);
        memcpy(b.qh, v + sizeof b.ql, sizeof b.qh);
        o[i] = b;
    }
}

void packed_q6_K_unpack(const void *block, int8_t q[256])
{
    const uint8_t *v = block; /* the 192 value bytes lead the block, as ql and qh do */
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *b = v + 96 * h + l;
            for (int k = 0; k < 3; k++)
                q[128 * h + 32 * k + l] = (int8_t)((b[32 * k] & 63) - 32);
            q[128 * h + 96 + l] = (int8_t)(((b[0] >> 6) | (b[32] >> 6) << 2 | (b[64] >> 6) << 4) - 32);
        }
}

#ifdef PACKED_Q6_K
void packed_q6_K_matmul(int64_t n, const uint8_t *w, size_t rs, int64_t r0, int64_t r1, const uint8_t *act,
                        size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return;
    if (n_tok >= GEMM_KQ6_MIN_TOK &&
        gemm_kq6_encoded_rows(n, w, rs, r0, r1, act, act_stride, n_tok, out, out_stride))
        return;
    /* one token, a few (or no GEMM scratch): tensor_matmul's loop over the
     * re-encoded rows' kernels, 4 tokens a pass. No matvec: one token is
     * vec_dot row by row, with no software prefetch. On two threads of an
     * AMD EPYC Zen 5 the Qwen3.5 width's 248320 x 2048 output head read
     * 33.8-34.9 GB/s so, 30.9-31.9 with the L2 prefetch 16 KB ahead of the
     * other Q6_K matvecs and 32.6-34.4 4 rows ahead, a plain read of its
     * bytes 33.7-35.1 (alternating); that row's tg64 went from 52.0 to 63.9
     * tok/s (medians of 6 alternations), TinyLlama Q6_K's stayed level (35.3,
     * 36.5), and on one thread both stayed level. */
    static const struct quant_kernels k = {
        .vec_dot = quant_avx2_dot_q6_Kx,
        .dot4 = quant_avx2_dot4_q6_Kx,
    };
    quant_kernels_matmul(&k, n, rs, w + (size_t)r0 * rs, r1 - r0, act, n_tok, act_stride, out + r0, out_stride);
}
#endif
