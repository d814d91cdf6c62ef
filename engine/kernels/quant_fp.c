/* F32 / F16 / BF16 rows: conversion and scalar dot products. F16 and BF16
 * weights are dotted against activations rounded to the same format (as the
 * reference does), with float accumulation. */
#include "kernels/quant_internal.h"

void quant_dequantize_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void quant_quantize_f32(const float *src, void *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

float quant_dot_f32_scalar(int64_t n, const void *w, const void *act)
{
    const float *x = w, *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++)
        sum += x[i] * y[i];
    return sum;
}

void quant_dequantize_f16(const void *src, float *dst, int64_t n)
{
    const uint16_t *x = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = fp16_to_f32(x[i]);
}

void quant_quantize_f16_scalar(const float *src, void *dst, int64_t n)
{
    uint16_t *y = dst;
    for (int64_t i = 0; i < n; i++)
        y[i] = quant_fp32_to_fp16_soft(src[i]);
}

float quant_dot_f16_scalar(int64_t n, const void *w, const void *act)
{
    const uint16_t *x = w, *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++)
        sum += fp16_to_f32(x[i]) * fp16_to_f32(y[i]);
    return sum;
}

void quant_dequantize_bf16(const void *src, float *dst, int64_t n)
{
    const uint16_t *x = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = bf16_to_f32(x[i]);
}

void quant_quantize_bf16_scalar(const float *src, void *dst, int64_t n)
{
    uint16_t *y = dst;
    for (int64_t i = 0; i < n; i++)
        y[i] = f32_to_bf16(src[i]);
}

float quant_dot_bf16_scalar(int64_t n, const void *w, const void *act)
{
    const uint16_t *x = w, *y = act;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++)
        sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    return sum;
}
