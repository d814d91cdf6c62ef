/* Kernel dispatch for tensor block types (see tensor.h): one table of
 * dequantize / quantize / dot kernels per type, scalar reference kernels
 * overridden by SIMD ones where the build has them (quant_simd.c). */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels/quant_internal.h"
#include "kernels/quant_iq4.h"
#include "kernels/quant_iq2.h"
#include "kernels/quant_iq1.h"
#include "kernels/quant_iq3.h"
#include "kernels/quant_mxfp4.h"
#include "kernels/quant_tq.h"

static struct quant_kernels table[TENSOR_TYPE_COUNT];
#if !defined(__F16C__)
float quant_fp16_table[65536];
#endif
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void set(enum tensor_type t, quant_dequantize_fn dq, quant_quantize_fn q, quant_vec_dot_fn dot)
{
    table[t] = (struct quant_kernels){
        .dequantize = dq,
        .quantize = q,
        .quantize_scalar = q,
        .vec_dot = dot,
        .vec_dot_scalar = dot,
        .matvec = NULL,
        .dot4 = NULL,
        .dot4x4 = NULL,
    };
}

static void table_init(void)
{
#if !defined(__F16C__)
    for (uint32_t h = 0; h < 65536; h++)
        quant_fp16_table[h] = quant_fp16_to_fp32_soft((uint16_t)h);
#endif
    set(TENSOR_TYPE_F32, quant_dequantize_f32, quant_quantize_f32, quant_dot_f32_scalar);
    set(TENSOR_TYPE_F16, quant_dequantize_f16, quant_quantize_f16_scalar, quant_dot_f16_scalar);
    set(TENSOR_TYPE_BF16, quant_dequantize_bf16, quant_quantize_bf16_scalar, quant_dot_bf16_scalar);
    set(TENSOR_TYPE_Q4_0, quant_dequantize_q4_0, quant_quantize_q4_0, quant_dot_q4_0_scalar);
    set(TENSOR_TYPE_Q4_1, quant_dequantize_q4_1, quant_quantize_q4_1, quant_dot_q4_1_scalar);
    set(TENSOR_TYPE_Q5_0, quant_dequantize_q5_0, quant_quantize_q5_0, quant_dot_q5_0_scalar);
    set(TENSOR_TYPE_Q5_1, quant_dequantize_q5_1, quant_quantize_q5_1, quant_dot_q5_1_scalar);
    set(TENSOR_TYPE_Q8_0, quant_dequantize_q8_0, quant_quantize_q8_0_scalar, quant_dot_q8_0_scalar);
    set(TENSOR_TYPE_Q8_1, quant_dequantize_q8_1, quant_quantize_q8_1_scalar, NULL);
    set(TENSOR_TYPE_Q2_K, quant_dequantize_q2_K, quant_quantize_q2_K, quant_dot_q2_K_scalar);
    set(TENSOR_TYPE_Q3_K, quant_dequantize_q3_K, quant_quantize_q3_K, quant_dot_q3_K_scalar);
    set(TENSOR_TYPE_Q4_K, quant_dequantize_q4_K, quant_quantize_q4_K, quant_dot_q4_K_scalar);
    set(TENSOR_TYPE_Q5_K, quant_dequantize_q5_K, quant_quantize_q5_K, quant_dot_q5_K_scalar);
    set(TENSOR_TYPE_Q6_K, quant_dequantize_q6_K, quant_quantize_q6_K, quant_dot_q6_K_scalar);
    set(TENSOR_TYPE_Q8_K, quant_dequantize_q8_K, quant_quantize_q8_K_scalar, NULL);
    set(TENSOR_TYPE_MXFP4, quant_dequantize_mxfp4, quant_quantize_mxfp4, quant_dot_mxfp4_scalar);
    /* no quantizer: the files come quantized (tensor_quantize_row zeroes) */
    set(TENSOR_TYPE_IQ4_NL, quant_dequantize_iq4_nl, NULL, quant_dot_iq4_nl_scalar);
    set(TENSOR_TYPE_IQ4_XS, quant_dequantize_iq4_xs, NULL, quant_dot_iq4_xs_scalar);
    set(TENSOR_TYPE_IQ2_XXS, quant_dequantize_iq2_xxs, NULL, quant_dot_iq2_xxs_scalar);
    set(TENSOR_TYPE_IQ2_XS, quant_dequantize_iq2_xs, NULL, quant_dot_iq2_xs_scalar);
    set(TENSOR_TYPE_IQ2_S, quant_dequantize_iq2_s, NULL, quant_dot_iq2_s_scalar);
    set(TENSOR_TYPE_IQ3_XXS, quant_dequantize_iq3_xxs, NULL, quant_dot_iq3_xxs_scalar);
    set(TENSOR_TYPE_IQ3_S, quant_dequantize_iq3_s, NULL, quant_dot_iq3_s_scalar);
    set(TENSOR_TYPE_IQ1_S, quant_dequantize_iq1_s, NULL, quant_dot_iq1_s_scalar);
    set(TENSOR_TYPE_IQ1_M, quant_dequantize_iq1_m, NULL, quant_dot_iq1_m_scalar);
    set(TENSOR_TYPE_TQ1_0, quant_dequantize_tq1_0, quant_quantize_tq1_0, quant_dot_tq1_0_scalar);
    set(TENSOR_TYPE_TQ2_0, quant_dequantize_tq2_0, quant_quantize_tq2_0, quant_dot_tq2_0_scalar);
    for (int t = 0; t < TENSOR_TYPE_COUNT; t++)
        if (table[t].dequantize)
            quant_simd_install((enum tensor_type)t, &table[t]);
    quant_mxfp4_install(&table[TENSOR_TYPE_MXFP4]);
    quant_iq4_install(TENSOR_TYPE_IQ4_NL, &table[TENSOR_TYPE_IQ4_NL]);
    quant_iq4_install(TENSOR_TYPE_IQ4_XS, &table[TENSOR_TYPE_IQ4_XS]);
    quant_iq2_install(TENSOR_TYPE_IQ2_XXS, &table[TENSOR_TYPE_IQ2_XXS]);
    quant_iq2_install(TENSOR_TYPE_IQ2_XS, &table[TENSOR_TYPE_IQ2_XS]);
    quant_iq2_install(TENSOR_TYPE_IQ2_S, &table[TENSOR_TYPE_IQ2_S]);
    quant_iq3_install(&table[TENSOR_TYPE_IQ3_XXS], &table[TENSOR_TYPE_IQ3_S]);
    quant_iq1_install(&table[TENSOR_TYPE_IQ1_S], &table[TENSOR_TYPE_IQ1_M]);
    quant_tq_install(&table[TENSOR_TYPE_TQ1_0], &table[TENSOR_TYPE_TQ2_0]);
}

const struct quant_kernels *quant_kernels_get(enum tensor_type type)
{
    pthread_once(&table_once, table_init);
    if ((unsigned)type >= TENSOR_TYPE_COUNT || !table[type].dequantize)
        return NULL;
    return &table[type];
}

void tensor_dequantize_row(enum tensor_type type, const void *src, float *dst, int64_t n)
{
    const struct quant_kernels *k = quant_kernels_get(type);
    if (k)
        k->dequantize(src, dst, n);
    else
        memset(dst, 0, (size_t)n * sizeof(float));
}

void tensor_quantize_row(enum tensor_type type, const float *src, void *dst, int64_t n)
{
    const struct quant_kernels *k = quant_kernels_get(type);
    if (k && k->quantize)
        k->quantize(src, dst, n);
    else
        memset(dst, 0, tensor_row_size(type, n));
}

void quant_quantize_row_scalar(enum tensor_type type, const float *src, void *dst, int64_t n)
{
    const struct quant_kernels *k = quant_kernels_get(type);
    if (k && k->quantize_scalar)
        k->quantize_scalar(src, dst, n);
    else
        memset(dst, 0, tensor_row_size(type, n));
}

float tensor_vec_dot(enum tensor_type type, int64_t n, const void *w_row, const void *act_row)
{
    const struct quant_kernels *k = quant_kernels_get(type);
    return k && k->vec_dot ? k->vec_dot(n, w_row, act_row) : 0.0f;
}

float quant_vec_dot_scalar(enum tensor_type type, int64_t n, const void *w, const void *act)
{
    const struct quant_kernels *k = quant_kernels_get(type);
    return k && k->vec_dot_scalar ? k->vec_dot_scalar(n, w, act) : 0.0f;
}

void tensor_matvec(enum tensor_type type, int64_t n, const void *w, int64_t rows,
                   const void *act, float *out)
{
    const struct quant_kernels *k = quant_kernels_get(type);
    size_t rs = tensor_row_size(type, n);
    if (!k || !k->vec_dot) {
        memset(out, 0, (size_t)rows * sizeof(float));
        return;
    }
    if (k->matvec) {
        k->matvec(n, w, rs, rows, act, out);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        out[r] = k->vec_dot(n, (const char *)w + (size_t)r * rs, act);
}

/* ---- fp16 / bf16 ---- */

float quant_fp16_to_fp32_soft(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t u;
    if (exp == 0) {
        float f = (float)mant * 5.9604644775390625e-8f; /* mant * 2^-24, exact */
        return sign ? -f : f;
    }
    if (exp == 31)
        u = sign | 0x7f800000 | (mant << 13);
    else
        u = sign | ((exp + 112) << 23) | (mant << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t quant_fp32_to_fp16_soft(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7fffffff;
    if (x >= 0x7f800000) /* inf stays inf; NaN stays NaN (quiet bit set) */
        return sign | 0x7c00 | (x > 0x7f800000 ? (uint16_t)(0x200 | ((x >> 13) & 0x3ff)) : 0);
    if (x >= 0x477ff000) /* >= 65520 rounds to infinity */
        return sign | 0x7c00;
    if (x < 0x38800000) { /* below 2^-14: fp16 subnormal (or zero) */
        /* Adding 0.5 aligns the value to units of 2^-24 with the FPU's
         * round-to-nearest-even; the low bits are then the fp16 mantissa. */
        float a, t;
        memcpy(&a, &x, 4);
        t = a + 0.5f;
        uint32_t tb;
        memcpy(&tb, &t, 4);
        return sign | (uint16_t)(tb - 0x3f000000);
    }
    uint32_t odd = (x >> 13) & 1;
    x += 0xc8000fffu + odd; /* rebias exponent by -112, round to nearest even */
    return sign | (uint16_t)(x >> 13);
}

float tensor_fp16_to_fp32(uint16_t h)
{
#if !defined(__F16C__)
    quant_kernels_get(TENSOR_TYPE_F16); /* fills the table once */
#endif
    return fp16_to_f32(h);
}
uint16_t tensor_fp32_to_fp16(float f) { return f32_to_fp16(f); }
float tensor_bf16_to_fp32(uint16_t h) { return bf16_to_f32(h); }
uint16_t tensor_fp32_to_bf16(float f) { return f32_to_bf16(f); }
