/* Repacked-weight matmul order (see forward_repack.h). */
#include "forward_repack.h"

#include <math.h>
#include <string.h>

#include "tensor.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define RP_AVX2 1
#endif

typedef struct {
    uint16_t d;
    uint8_t qs[16];
} rp_q4_0;

typedef struct {
    uint16_t d;
    int8_t qs[32];
} rp_q8_0;

static inline float rp_h2f(uint16_t h)
{
#ifdef RP_AVX2
    return _cvtsh_ss(h);
#else
    return tensor_fp16_to_fp32(h);
#endif
}

/* Exact integer dot of one Q4_0 block (values nibble - 8) with a Q8_0 block. */
static inline int32_t isum_q4_0(const rp_q4_0 *x, const rp_q8_0 *y)
{
#ifdef RP_AVX2
    const __m128i raw = _mm_loadu_si128((const __m128i *)x->qs);
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(0x0F));
    const __m256i qx = _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
    const __m256i qy = _mm256_loadu_si256((const __m256i *)y->qs);
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(qx, qx), _mm256_sign_epi8(qy, qx));
    const __m256i p32 = _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(p32), _mm256_extracti128_si256(p32, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
#else
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += ((x->qs[j] & 15) - 8) * y->qs[j] + ((x->qs[j] >> 4) - 8) * y->qs[j + 16];
    return s;
#endif
}

bool repack_applies(const gguf_tensor *w)
{
#if defined(__AVX2__)
    return w->type == TENSOR_TYPE_Q4_0 && w->ne[1] % 8 == 0 && w->ne[0] % 32 == 0;
#else
    /* A portable build still follows what an AVX2 reference machine does. */
    return w->type == TENSOR_TYPE_Q4_0 && w->ne[1] % 8 == 0 && w->ne[0] % 32 == 0;
#endif
}

void repack_matmul(const gguf_tensor *w, int64_t n, int64_t r0, int64_t r1, const uint8_t *act, size_t act_stride,
                   int n_tok, float *out, int64_t out_stride)
{
    const int64_t nb = n / 32;
    const size_t rb = (size_t)nb * sizeof(rp_q4_0);
    for (int64_t r = r0; r < r1; r++) {
        const rp_q4_0 *x = (const rp_q4_0 *)((const uint8_t *)w->data + (size_t)r * rb);
        for (int t = 0; t < n_tok; t++) {
            const rp_q8_0 *y = (const rp_q8_0 *)(act + (size_t)t * act_stride);
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++)
                acc = fmaf((float)isum_q4_0(&x[b], &y[b]), rp_h2f(x[b].d) * rp_h2f(y[b].d), acc);
            out[(int64_t)t * out_stride + r] = acc;
        }
    }
}
