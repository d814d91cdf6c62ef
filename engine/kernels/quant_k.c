/* K-quants (256-element super-blocks) Q2_K Q3_K Q4_K Q5_K Q6_K and the Q8_K
 * activation format: dequantization, simple quantizers, and scalar dot
 * products with ggml's arithmetic (integer dots per sub-block, scale
 * products, mins folded in through the Q8_K block sums). */
#include <math.h>

#include "kernels/quant_internal.h"

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- unpacking: the integer quant of every element of a block ---- */

/* q2_K: element e = 128h + 32j + l sits in qs[32h + l] at bits 2j. */
void quant_unpack_q2_K(const void *block, int8_t q[QK_K])
{
    const block_q2_K *b = block;
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++)
                q[128 * h + 32 * j + l] = (int8_t)((b->qs[32 * h + l] >> (2 * j)) & 3);
}

/* q3_K: as q2_K, minus 4 where the hmask bit (4h + j) of hmask[l] is clear. */
void quant_unpack_q3_K(const void *block, int8_t q[QK_K])
{
    const block_q3_K *b = block;
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                int v = (b->qs[32 * h + l] >> (2 * j)) & 3;
                if (!((b->hmask[l] >> (4 * h + j)) & 1))
                    v -= 4;
                q[128 * h + 32 * j + l] = (int8_t)v;
            }
}

/* q4_K: 64-element chunks c: low nibbles of qs[32c..] then high nibbles. */
void quant_unpack_q4_K(const void *block, int8_t q[QK_K])
{
    const block_q4_K *b = block;
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            q[64 * c + l] = (int8_t)(b->qs[32 * c + l] & 0xF);
            q[64 * c + 32 + l] = (int8_t)(b->qs[32 * c + l] >> 4);
        }
}

/* q5_K: as q4_K plus bit 2c (low half) / 2c+1 (high half) of qh[l]. */
void quant_unpack_q5_K(const void *block, int8_t q[QK_K])
{
    const block_q5_K *b = block;
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int hb0 = (b->qh[l] >> (2 * c)) & 1, hb1 = (b->qh[l] >> (2 * c + 1)) & 1;
            q[64 * c + l] = (int8_t)((b->qs[32 * c + l] & 0xF) | (hb0 << 4));
            q[64 * c + 32 + l] = (int8_t)((b->qs[32 * c + l] >> 4) | (hb1 << 4));
        }
}

/* q6_K: halves h of 128: ql[64h..], qh[32h..]; value minus 32. */
void quant_unpack_q6_K(const void *block, int8_t q[QK_K])
{
    const block_q6_K *b = block;
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
        int8_t *y = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            y[l] = (int8_t)(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            y[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            y[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            y[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

/* ---- dequantize ---- */

void quant_dequantize_q2_K(const void *src, float *dst, int64_t n)
{
    const block_q2_K *x = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
        quant_unpack_q2_K(&x[i], q);
        for (int g = 0; g < 16; g++) {
            float dl = d * (float)(x[i].scales[g] & 0xF), ml = dmin * (float)(x[i].scales[g] >> 4);
            for (int l = 0; l < 16; l++)
                dst[16 * g + l] = dl * (float)q[16 * g + l] - ml;
        }
    }
}

void quant_dequantize_q3_K(const void *src, float *dst, int64_t n)
{
    const block_q3_K *x = src;
    int8_t q[QK_K], sc[16];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16_to_f32(x[i].d);
        quant_unpack_q3_K(&x[i], q);
        quant_q3k_scales(x[i].scales, sc);
        for (int g = 0; g < 16; g++) {
            float dl = d * (float)sc[g];
            for (int l = 0; l < 16; l++)
                dst[16 * g + l] = dl * (float)q[16 * g + l];
        }
    }
}

void quant_dequantize_q4_K(const void *src, float *dst, int64_t n)
{
    const block_q4_K *x = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
        quant_unpack_q4_K(&x[i], q);
        for (int s = 0; s < 8; s++) {
            uint8_t sc, m;
            quant_scale_min_k4(s, x[i].scales, &sc, &m);
            float dl = d * (float)sc, ml = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                dst[32 * s + l] = dl * (float)q[32 * s + l] - ml;
        }
    }
}

void quant_dequantize_q5_K(const void *src, float *dst, int64_t n)
{
    const block_q5_K *x = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
        quant_unpack_q5_K(&x[i], q);
        for (int s = 0; s < 8; s++) {
            uint8_t sc, m;
            quant_scale_min_k4(s, x[i].scales, &sc, &m);
            float dl = d * (float)sc, ml = dmin * (float)m;
            for (int l = 0; l < 32; l++)
                dst[32 * s + l] = dl * (float)q[32 * s + l] - ml;
        }
    }
}

void quant_dequantize_q6_K(const void *src, float *dst, int64_t n)
{
    const block_q6_K *x = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16_to_f32(x[i].d);
        quant_unpack_q6_K(&x[i], q);
        for (int g = 0; g < 16; g++) {
            float dl = d * (float)x[i].scales[g];
            for (int l = 0; l < 16; l++)
                dst[16 * g + l] = dl * (float)q[16 * g + l];
        }
    }
}

void quant_dequantize_q8_K(const void *src, float *dst, int64_t n)
{
    const block_q8_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K)
        for (int j = 0; j < QK_K; j++)
            dst[j] = x[i].d * (float)x[i].qs[j];
}

/* ---- quantize ----
 * Straightforward quantizers (min/max or abs-max per sub-block, scales
 * quantized against the block's largest, then the elements re-quantized with
 * the stored scales). They are for tests and in-memory models; files come
 * from llama.cpp's search-based quantizers, which these need not match. */

/* Affine sub-block fit: x ~ scale * l - min, l in [0, nmax], min >= 0. */
static void fit_affine(const float *x, int n, int nmax, float *scale, float *min)
{
    float mn = x[0], mx = x[0];
    for (int i = 1; i < n; i++) {
        mn = fminf(mn, x[i]);
        mx = fmaxf(mx, x[i]);
    }
    if (mn > 0)
        mn = 0;
    *scale = (mx - mn) / (float)nmax;
    *min = -mn;
}

void quant_quantize_q2_K(const float *src, void *dst, int64_t n)
{
    block_q2_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float scales[16], mins[16], max_scale = 0, max_min = 0;
        for (int g = 0; g < 16; g++) {
            fit_affine(src + 16 * g, 16, 3, &scales[g], &mins[g]);
            max_scale = fmaxf(max_scale, scales[g]);
            max_min = fmaxf(max_min, mins[g]);
        }
        float is = max_scale > 0 ? 15.f / max_scale : 0.f;
        float im = max_min > 0 ? 15.f / max_min : 0.f;
        for (int g = 0; g < 16; g++) {
            int ls = clampi(quant_nearest_int(is * scales[g]), 0, 15);
            /* round the min up so the sub-block's lowest value stays reachable */
            int lm = clampi((int)ceilf(im * mins[g] - 1e-4f), 0, 15);
            y[i].scales[g] = (uint8_t)(ls | (lm << 4));
        }
        y[i].d = f32_to_fp16(max_scale / 15.f);
        y[i].dmin = f32_to_fp16(max_min / 15.f);
        float d = fp16_to_f32(y[i].d), dmin = fp16_to_f32(y[i].dmin);
        uint8_t L[QK_K];
        for (int g = 0; g < 16; g++) {
            float dl = d * (float)(y[i].scales[g] & 0xF), ml = dmin * (float)(y[i].scales[g] >> 4);
            for (int l = 0; l < 16; l++) {
                int q = dl != 0 ? quant_nearest_int((src[16 * g + l] + ml) / dl) : 0;
                L[16 * g + l] = (uint8_t)clampi(q, 0, 3);
            }
        }
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *p = L + 128 * h + l;
                y[i].qs[32 * h + l] = (uint8_t)(p[0] | (p[32] << 2) | (p[64] << 4) | (p[96] << 6));
            }
    }
}

static float signed_absmax(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

void quant_quantize_q3_K(const float *src, void *dst, int64_t n)
{
    block_q3_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float scales[16], max_scale = 0, amax = 0;
        for (int g = 0; g < 16; g++) {
            scales[g] = signed_absmax(src + 16 * g, 16) / -4.f; /* largest maps to -4 */
            if (fabsf(scales[g]) > amax) {
                amax = fabsf(scales[g]);
                max_scale = scales[g];
            }
        }
        memset(y[i].scales, 0, 12);
        int8_t sc[16] = {0};
        if (max_scale != 0) {
            float iscale = -32.f / max_scale;
            for (int g = 0; g < 16; g++) {
                int l = clampi(quant_nearest_int(iscale * scales[g]), -32, 31) + 32;
                if (g < 8)
                    y[i].scales[g] = (uint8_t)(l & 0xF);
                else
                    y[i].scales[g - 8] |= (uint8_t)((l & 0xF) << 4);
                y[i].scales[8 + g % 4] |= (uint8_t)((l >> 4) << (2 * (g / 4)));
            }
            y[i].d = f32_to_fp16(1.f / iscale);
            quant_q3k_scales(y[i].scales, sc);
        } else {
            y[i].d = 0;
            memset(y[i].scales, 0x00, 8);
            /* scale code 32 (= 0) everywhere */
            for (int g = 0; g < 16; g++) {
                if (g < 8)
                    y[i].scales[g] = 0;
                y[i].scales[8 + g % 4] |= (uint8_t)(2 << (2 * (g / 4)));
            }
        }
        float d = fp16_to_f32(y[i].d);
        uint8_t L[QK_K];
        for (int g = 0; g < 16; g++) {
            float dl = d * (float)sc[g];
            for (int l = 0; l < 16; l++) {
                int q = dl != 0 ? quant_nearest_int(src[16 * g + l] / dl) : 0;
                L[16 * g + l] = (uint8_t)(clampi(q, -4, 3) + 4);
            }
        }
        memset(y[i].hmask, 0, sizeof y[i].hmask);
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, j = (e % 128) / 32, l = e % 32;
            if (L[e] > 3) {
                y[i].hmask[l] |= (uint8_t)(1 << (4 * h + j));
                L[e] -= 4;
            }
        }
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *p = L + 128 * h + l;
                y[i].qs[32 * h + l] = (uint8_t)(p[0] | (p[32] << 2) | (p[64] << 4) | (p[96] << 6));
            }
    }
}

/* Shared by q4_K / q5_K: 8 sub-blocks of 32, 6-bit scales and mins. */
static void quantize_k4_scales(const float *x, int nmax, uint8_t scales_out[12], uint16_t *d_out,
                               uint16_t *dmin_out, uint8_t L[QK_K])
{
    float scales[8], mins[8], max_scale = 0, max_min = 0;
    for (int s = 0; s < 8; s++) {
        fit_affine(x + 32 * s, 32, nmax, &scales[s], &mins[s]);
        max_scale = fmaxf(max_scale, scales[s]);
        max_min = fmaxf(max_min, mins[s]);
    }
    float is = max_scale > 0 ? 63.f / max_scale : 0.f;
    float im = max_min > 0 ? 63.f / max_min : 0.f;
    memset(scales_out, 0, 12);
    for (int s = 0; s < 8; s++) {
        int ls = clampi(quant_nearest_int(is * scales[s]), 0, 63);
        int lm = clampi((int)ceilf(im * mins[s] - 1e-4f), 0, 63);
        if (s < 4) {
            scales_out[s] = (uint8_t)ls;
            scales_out[s + 4] = (uint8_t)lm;
        } else {
            scales_out[s + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            scales_out[s - 4] |= (uint8_t)((ls >> 4) << 6);
            scales_out[s] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d_out = f32_to_fp16(max_scale / 63.f);
    *dmin_out = f32_to_fp16(max_min / 63.f);
    float d = fp16_to_f32(*d_out), dmin = fp16_to_f32(*dmin_out);
    for (int s = 0; s < 8; s++) {
        uint8_t sc, m;
        quant_scale_min_k4(s, scales_out, &sc, &m);
        float dl = d * (float)sc, ml = dmin * (float)m;
        for (int l = 0; l < 32; l++) {
            int q = dl != 0 ? quant_nearest_int((x[32 * s + l] + ml) / dl) : 0;
            L[32 * s + l] = (uint8_t)clampi(q, 0, nmax);
        }
    }
}

void quant_quantize_q4_K(const float *src, void *dst, int64_t n)
{
    block_q4_K *y = dst;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        quantize_k4_scales(src, 15, y[i].scales, &y[i].d, &y[i].dmin, L);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                y[i].qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
}

void quant_quantize_q5_K(const float *src, void *dst, int64_t n)
{
    block_q5_K *y = dst;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        quantize_k4_scales(src, 31, y[i].scales, &y[i].d, &y[i].dmin, L);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                int l0 = L[64 * c + l], l1 = L[64 * c + 32 + l];
                y[i].qh[l] |= (uint8_t)(((l0 >> 4) << (2 * c)) | ((l1 >> 4) << (2 * c + 1)));
                y[i].qs[32 * c + l] = (uint8_t)((l0 & 0xF) | ((l1 & 0xF) << 4));
            }
    }
}

void quant_quantize_q6_K(const float *src, void *dst, int64_t n)
{
    block_q6_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float scales[16], max_scale = 0, amax = 0;
        for (int g = 0; g < 16; g++) {
            scales[g] = signed_absmax(src + 16 * g, 16) / -32.f;
            if (fabsf(scales[g]) > amax) {
                amax = fabsf(scales[g]);
                max_scale = scales[g];
            }
        }
        if (amax == 0) {
            memset(&y[i], 0, sizeof y[i]);
            for (int j = 0; j < QK_K / 2; j++) /* quants 32 = value 0 */
                y[i].ql[j] = 0;
            for (int j = 0; j < QK_K / 4; j++)
                y[i].qh[j] = 0xAA;
            continue;
        }
        float iscale = -128.f / max_scale;
        y[i].d = f32_to_fp16(1.f / iscale);
        for (int g = 0; g < 16; g++)
            y[i].scales[g] = (int8_t)clampi(quant_nearest_int(iscale * scales[g]), -128, 127);
        float d = fp16_to_f32(y[i].d);
        uint8_t L[QK_K];
        for (int g = 0; g < 16; g++) {
            float dl = d * (float)y[i].scales[g];
            for (int l = 0; l < 16; l++) {
                int q = dl != 0 ? quant_nearest_int(src[16 * g + l] / dl) : 0;
                L[16 * g + l] = (uint8_t)(clampi(q, -32, 31) + 32);
            }
        }
        for (int h = 0; h < 2; h++) {
            uint8_t *ql = y[i].ql + 64 * h, *qh = y[i].qh + 32 * h;
            const uint8_t *p = L + 128 * h;
            for (int l = 0; l < 32; l++) {
                ql[l] = (uint8_t)((p[l] & 0xF) | ((p[l + 64] & 0xF) << 4));
                ql[l + 32] = (uint8_t)((p[l + 32] & 0xF) | ((p[l + 96] & 0xF) << 4));
                qh[l] = (uint8_t)((p[l] >> 4) | ((p[l + 32] >> 4) << 2) | ((p[l + 64] >> 4) << 4) |
                                  ((p[l + 96] >> 4) << 6));
            }
        }
    }
}

/* ggml's quantize_row_q8_K_ref: the signed largest value maps to -127. */
void quant_quantize_q8_K_scalar(const float *src, void *dst, int64_t n)
{
    block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; j++)
            if (fabsf(src[j]) > amax) {
                amax = fabsf(src[j]);
                max = src[j];
            }
        if (amax == 0) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; j++) {
            int v = quant_nearest_int(iscale * src[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < QK_K / 16; g++) {
            int sum = 0;
            for (int l = 0; l < 16; l++)
                sum += y[i].qs[16 * g + l];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

/* ---- dot products against Q8_K ---- */

static int dot16(const int8_t *a, const int8_t *b)
{
    int s = 0;
    for (int l = 0; l < 16; l++)
        s += a[l] * b[l];
    return s;
}

float quant_dot_q2_K_scalar(int64_t n, const void *w, const void *act)
{
    const block_q2_K *x = w;
    const block_q8_K *y = act;
    int8_t q[QK_K];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_unpack_q2_K(&x[i], q);
        int isum = 0, summs = 0;
        for (int g = 0; g < 16; g++) {
            isum += (x[i].scales[g] & 0xF) * dot16(q + 16 * g, y[i].qs + 16 * g);
            summs += (x[i].scales[g] >> 4) * y[i].bsums[g];
        }
        float dall = y[i].d * fp16_to_f32(x[i].d);
        float dmin = y[i].d * fp16_to_f32(x[i].dmin);
        sum += dall * (float)isum - dmin * (float)summs;
    }
    return sum;
}

float quant_dot_q3_K_scalar(int64_t n, const void *w, const void *act)
{
    const block_q3_K *x = w;
    const block_q8_K *y = act;
    int8_t q[QK_K], sc[16];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_unpack_q3_K(&x[i], q);
        quant_q3k_scales(x[i].scales, sc);
        int isum = 0;
        for (int g = 0; g < 16; g++)
            isum += sc[g] * dot16(q + 16 * g, y[i].qs + 16 * g);
        sum += fp16_to_f32(x[i].d) * y[i].d * (float)isum;
    }
    return sum;
}

static float dot_k4_block(const int8_t *q, const uint8_t *scales, float d, float dmin, const block_q8_K *y)
{
    int isum = 0, summs = 0;
    for (int s = 0; s < 8; s++) {
        uint8_t sc, m;
        quant_scale_min_k4(s, scales, &sc, &m);
        isum += sc * (dot16(q + 32 * s, y->qs + 32 * s) + dot16(q + 32 * s + 16, y->qs + 32 * s + 16));
        summs += m * (y->bsums[2 * s] + y->bsums[2 * s + 1]);
    }
    return y->d * d * (float)isum - y->d * dmin * (float)summs;
}

float quant_dot_q4_K_scalar(int64_t n, const void *w, const void *act)
{
    const block_q4_K *x = w;
    const block_q8_K *y = act;
    int8_t q[QK_K];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_unpack_q4_K(&x[i], q);
        sum += dot_k4_block(q, x[i].scales, fp16_to_f32(x[i].d), fp16_to_f32(x[i].dmin), &y[i]);
    }
    return sum;
}

float quant_dot_q5_K_scalar(int64_t n, const void *w, const void *act)
{
    const block_q5_K *x = w;
    const block_q8_K *y = act;
    int8_t q[QK_K];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_unpack_q5_K(&x[i], q);
        sum += dot_k4_block(q, x[i].scales, fp16_to_f32(x[i].d), fp16_to_f32(x[i].dmin), &y[i]);
    }
    return sum;
}

float quant_dot_q6_K_scalar(int64_t n, const void *w, const void *act)
{
    const block_q6_K *x = w;
    const block_q8_K *y = act;
    int8_t q[QK_K];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        quant_unpack_q6_K(&x[i], q);
        int isum = 0;
        for (int g = 0; g < 16; g++)
            isum += x[i].scales[g] * dot16(q + 16 * g, y[i].qs + 16 * g);
        sum += fp16_to_f32(x[i].d) * y[i].d * (float)isum;
    }
    return sum;
}
