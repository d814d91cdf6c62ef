/* 32-element block types Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1: dequantization,
 * quantization and scalar dot products against Q8_0 / Q8_1 activations. */
#include <float.h>
#include <math.h>

#include "kernels/quant_internal.h"

/* ---- dequantize ---- */

void quant_dequantize_q4_0(const void *src, float *dst, int64_t n)
{
    const block_q4_0 *x = src;
    for (int64_t i = 0; i < n / QK4_0; i++, dst += QK4_0) {
        float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            dst[j] = (float)((x[i].qs[j] & 0xF) - 8) * d;
            dst[j + 16] = (float)((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void quant_dequantize_q4_1(const void *src, float *dst, int64_t n)
{
    const block_q4_1 *x = src;
    for (int64_t i = 0; i < n / QK4_1; i++, dst += QK4_1) {
        float d = fp16_to_f32(x[i].d), m = fp16_to_f32(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            dst[j] = (float)(x[i].qs[j] & 0xF) * d + m;
            dst[j + 16] = (float)(x[i].qs[j] >> 4) * d + m;
        }
    }
}

static inline uint32_t load_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

void quant_dequantize_q5_0(const void *src, float *dst, int64_t n)
{
    const block_q5_0 *x = src;
    for (int64_t i = 0; i < n / QK5_0; i++, dst += QK5_0) {
        float d = fp16_to_f32(x[i].d);
        uint32_t qh = load_u32(x[i].qh);
        for (int j = 0; j < 16; j++) {
            int x0 = (int)((x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4)) - 16;
            int x1 = (int)((x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16;
            dst[j] = (float)x0 * d;
            dst[j + 16] = (float)x1 * d;
        }
    }
}

void quant_dequantize_q5_1(const void *src, float *dst, int64_t n)
{
    const block_q5_1 *x = src;
    for (int64_t i = 0; i < n / QK5_1; i++, dst += QK5_1) {
        float d = fp16_to_f32(x[i].d), m = fp16_to_f32(x[i].m);
        uint32_t qh = load_u32(x[i].qh);
        for (int j = 0; j < 16; j++) {
            int x0 = (int)((x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4));
            int x1 = (int)((x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
            dst[j] = (float)x0 * d + m;
            dst[j + 16] = (float)x1 * d + m;
        }
    }
}

void quant_dequantize_q8_0(const void *src, float *dst, int64_t n)
{
    const block_q8_0 *x = src;
    for (int64_t i = 0; i < n / QK8_0; i++, dst += QK8_0) {
        float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK8_0; j++)
            dst[j] = (float)x[i].qs[j] * d;
    }
}

void quant_dequantize_q8_1(const void *src, float *dst, int64_t n)
{
    const block_q8_1 *x = src;
    for (int64_t i = 0; i < n / QK8_1; i++, dst += QK8_1) {
        float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK8_1; j++)
            dst[j] = (float)x[i].qs[j] * d;
    }
}

/* ---- quantize (weights: ggml's reference quantizers) ---- */

/* The value of largest magnitude, with its sign. */
static float signed_absmax(const float *x, int n, float *amax_out)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    if (amax_out)
        *amax_out = amax;
    return max;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void quant_quantize_q4_0(const float *src, void *dst, int64_t n)
{
    block_q4_0 *y = dst;
    for (int64_t i = 0; i < n / QK4_0; i++, src += QK4_0) {
        float max = signed_absmax(src, QK4_0, NULL);
        float d = max / -8;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            int x0 = clampi((int)(src[j] * id + 8.5f), 0, 15);
            int x1 = clampi((int)(src[j + 16] * id + 8.5f), 0, 15);
            y[i].qs[j] = (uint8_t)(x0 | (x1 << 4));
        }
    }
}

static void minmax(const float *x, int n, float *mn, float *mx)
{
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo)
            lo = x[j];
        if (x[j] > hi)
            hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

void quant_quantize_q4_1(const float *src, void *dst, int64_t n)
{
    block_q4_1 *y = dst;
    for (int64_t i = 0; i < n / QK4_1; i++, src += QK4_1) {
        float mn, mx;
        minmax(src, QK4_1, &mn, &mx);
        float d = (mx - mn) / 15;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        y[i].m = f32_to_fp16(mn);
        for (int j = 0; j < 16; j++) {
            int x0 = clampi((int)((src[j] - mn) * id + 0.5f), 0, 15);
            int x1 = clampi((int)((src[j + 16] - mn) * id + 0.5f), 0, 15);
            y[i].qs[j] = (uint8_t)(x0 | (x1 << 4));
        }
    }
}

void quant_quantize_q5_0(const float *src, void *dst, int64_t n)
{
    block_q5_0 *y = dst;
    for (int64_t i = 0; i < n / QK5_0; i++, src += QK5_0) {
        float max = signed_absmax(src, QK5_0, NULL);
        float d = max / -16;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            int x0 = clampi((int)(src[j] * id + 16.5f), 0, 31);
            int x1 = clampi((int)(src[j + 16] * id + 16.5f), 0, 31);
            y[i].qs[j] = (uint8_t)((x0 & 0xF) | ((x1 & 0xF) << 4));
            qh |= (uint32_t)(x0 >> 4) << j;
            qh |= (uint32_t)(x1 >> 4) << (j + 16);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}

void quant_quantize_q5_1(const float *src, void *dst, int64_t n)
{
    block_q5_1 *y = dst;
    for (int64_t i = 0; i < n / QK5_1; i++, src += QK5_1) {
        float mn, mx;
        minmax(src, QK5_1, &mn, &mx);
        float d = (mx - mn) / 31;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        y[i].m = f32_to_fp16(mn);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            int x0 = clampi((int)((src[j] - mn) * id + 0.5f), 0, 31);
            int x1 = clampi((int)((src[j + 16] - mn) * id + 0.5f), 0, 31);
            y[i].qs[j] = (uint8_t)((x0 & 0xF) | ((x1 & 0xF) << 4));
            qh |= (uint32_t)(x0 >> 4) << j;
            qh |= (uint32_t)(x1 >> 4) << (j + 16);
        }
        memcpy(y[i].qh, &qh, 4);
    }
}

/* Activation quantizers: the same arithmetic as ggml-cpu's AVX2
 * quantize_row_q8_0 / q8_1 (scale amax/127, multiplier 127/amax, round half
 * to even), which is what the reference ran. */
void quant_quantize_q8_0_scalar(const float *src, void *dst, int64_t n)
{
    block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / QK8_0; i++, src += QK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++)
            amax = fmaxf(amax, fabsf(src[j]));
        float d = amax / 127.f;
        float id = amax != 0.0f ? 127.f / amax : 0.0f;
        y[i].d = f32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++)
            y[i].qs[j] = (int8_t)quant_nearest_int(src[j] * id);
    }
}

void quant_quantize_q8_1_scalar(const float *src, void *dst, int64_t n)
{
    block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / QK8_1; i++, src += QK8_1) {
        float amax = 0.0f;
        for (int j = 0; j < QK8_1; j++)
            amax = fmaxf(amax, fabsf(src[j]));
        float d = amax / 127.f;
        float id = amax != 0.0f ? 127.f / amax : 0.0f;
        y[i].d = f32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < QK8_1; j++) {
            int q = quant_nearest_int(src[j] * id);
            y[i].qs[j] = (int8_t)q;
            sum += q;
        }
        y[i].s = f32_to_fp16(d * (float)sum);
    }
}

/* ---- dot products: integer dot per block times the two scales ---- */

float quant_dot_q4_0_scalar(int64_t n, const void *w, const void *act)
{
    const block_q4_0 *x = w;
    const block_q8_0 *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            sumi += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        }
        sum += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    return sum;
}

float quant_dot_q4_1_scalar(int64_t n, const void *w, const void *act)
{
    const block_q4_1 *x = w;
    const block_q8_1 *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_1; i++) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            sumi += (x[i].qs[j] & 0xF) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        }
        sum += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)) +
               fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
    }
    return sum;
}

float quant_dot_q5_0_scalar(int64_t n, const void *w, const void *act)
{
    const block_q5_0 *x = w;
    const block_q8_0 *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK5_0; i++) {
        uint32_t qh = load_u32(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            int x0 = (int)((x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4)) - 16;
            int x1 = (int)((x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16;
            sumi += x0 * y[i].qs[j] + x1 * y[i].qs[j + 16];
        }
        sum += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    return sum;
}

float quant_dot_q5_1_scalar(int64_t n, const void *w, const void *act)
{
    const block_q5_1 *x = w;
    const block_q8_1 *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK5_1; i++) {
        uint32_t qh = load_u32(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < 16; j++) {
            int x0 = (int)((x[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4));
            int x1 = (int)((x[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
            sumi += x0 * y[i].qs[j] + x1 * y[i].qs[j + 16];
        }
        sum += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d)) +
               fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
    }
    return sum;
}

float quant_dot_q8_0_scalar(int64_t n, const void *w, const void *act)
{
    const block_q8_0 *x = w;
    const block_q8_0 *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_0; j++)
            sumi += x[i].qs[j] * y[i].qs[j];
        sum += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    return sum;
}
