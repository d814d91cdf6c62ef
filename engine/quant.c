/* Kernel dispatch for tensor block types (see tensor.h). Temporary bodies. */
#include <string.h>

#include "tensor.h"

void tensor_dequantize_row(enum tensor_type type, const void *src, float *dst, int64_t n)
{
    (void)type;
    (void)src;
    memset(dst, 0, (size_t)n * sizeof(float));
}

void tensor_quantize_row(enum tensor_type type, const float *src, void *dst, int64_t n)
{
    (void)src;
    memset(dst, 0, tensor_row_size(type, n));
}

float tensor_vec_dot(enum tensor_type type, int64_t n, const void *w_row, const void *act_row)
{
    (void)type;
    (void)n;
    (void)w_row;
    (void)act_row;
    return 0.0f;
}

void tensor_matvec(enum tensor_type type, int64_t n, const void *w, int64_t rows,
                   const void *act, float *out)
{
    size_t rs = tensor_row_size(type, n);
    for (int64_t r = 0; r < rows; r++)
        out[r] = tensor_vec_dot(type, n, (const char *)w + (size_t)r * rs, act);
}

float tensor_fp16_to_fp32(uint16_t h)
{
    (void)h;
    return 0.0f;
}

uint16_t tensor_fp32_to_fp16(float f)
{
    (void)f;
    return 0;
}

float tensor_bf16_to_fp32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t tensor_fp32_to_bf16(float f)
{
    (void)f;
    return 0;
}
