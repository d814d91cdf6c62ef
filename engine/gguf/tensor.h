/* Tensor block types: the ggml type ids as stored in GGUF, their byte layout
 * traits, and the kernels that turn blocks into numbers.
 *
 * Layouts follow ggml exactly (a GGUF file is ggml's memory image). Each
 * weight type has a "dot type": the format the activation vector is converted
 * to before the dot product. These match the reference (llama.cpp CPU backend)
 * so that our logits land where its logits land:
 *   F32 -> F32, F16 -> F16, BF16 -> BF16,
 *   Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 -> Q8_0 (Q4_1/Q5_1 use Q8_1 in ggml; Q8_1 here),
 *   Q2_K..Q6_K -> Q8_K, MXFP4 -> Q8_0, IQ4_NL -> Q8_0, IQ4_XS IQ2_XXS IQ2_XS IQ2_S IQ3_XXS
 *   IQ3_S IQ1_S IQ1_M TQ1_0 TQ2_0 -> Q8_K.
 */
#ifndef TOKSCOPE_TENSOR_H
#define TOKSCOPE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tensor_type {
    TENSOR_TYPE_F32 = 0,
    TENSOR_TYPE_F16 = 1,
    TENSOR_TYPE_Q4_0 = 2,
    TENSOR_TYPE_Q4_1 = 3,
    TENSOR_TYPE_Q5_0 = 6,
    TENSOR_TYPE_Q5_1 = 7,
    TENSOR_TYPE_Q8_0 = 8,
    TENSOR_TYPE_Q8_1 = 9,
    TENSOR_TYPE_Q2_K = 10,
    TENSOR_TYPE_Q3_K = 11,
    TENSOR_TYPE_Q4_K = 12,
    TENSOR_TYPE_Q5_K = 13,
    TENSOR_TYPE_Q6_K = 14,
    TENSOR_TYPE_Q8_K = 15,
    TENSOR_TYPE_IQ4_NL = 20,
    TENSOR_TYPE_IQ4_XS = 23,
    TENSOR_TYPE_IQ2_XXS = 16,
    TENSOR_TYPE_IQ2_XS = 17,
    TENSOR_TYPE_IQ2_S = 22,
    TENSOR_TYPE_IQ3_XXS = 18,
    TENSOR_TYPE_IQ1_S = 19,
    TENSOR_TYPE_IQ3_S = 21,
    TENSOR_TYPE_I8 = 24,
    TENSOR_TYPE_I16 = 25,
    TENSOR_TYPE_I32 = 26,
    TENSOR_TYPE_I64 = 27,
    TENSOR_TYPE_F64 = 28,
    TENSOR_TYPE_IQ1_M = 29,
    TENSOR_TYPE_BF16 = 30,
    TENSOR_TYPE_TQ1_0 = 34,
    TENSOR_TYPE_TQ2_0 = 35,
    TENSOR_TYPE_MXFP4 = 39,
    TENSOR_TYPE_COUNT = 40, /* upper bound of ids we know by number */
};

#define QK_K 256

/* Name of a ggml type id ("Q4_K"); for ids ggml has but we cannot compute with
 * (IQ*, TQ*) the name is still given so errors can say what the file
 * holds. Unknown ids give NULL. */
const char *tensor_type_name(uint32_t type);

/* True when the id has a known byte layout (size per block). */
bool tensor_type_is_known(uint32_t type);

/* True when we have dequantize + dot kernels for it (the 14 model types). */
bool tensor_type_is_supported(uint32_t type);

/* Elements per block and bytes per block; 0 for unknown types. */
int64_t tensor_type_block_size(uint32_t type);
size_t tensor_type_size(uint32_t type);

/* Bytes of a row of n elements; 0 if n is not a multiple of the block size. */
size_t tensor_row_size(uint32_t type, int64_t n);

/* The activation format a weight of this type is dotted against. */
enum tensor_type tensor_dot_type(enum tensor_type type);

/* ---- kernels (engine/quant_*.c) ---------------------------------------- */

/* src: a row of n elements of `type`; dst: n floats. n multiple of block size. */
void tensor_dequantize_row(enum tensor_type type, const void *src, float *dst, int64_t n);

/* Quantize n floats to `type`. Supported for every type in tensor_type_is_supported
 * plus Q8_1 and Q8_K (activation formats). Reference-compatible rounding for the
 * activation formats (Q8_0, Q8_1, Q8_K, F16, BF16). */
void tensor_quantize_row(enum tensor_type type, const float *src, void *dst, int64_t n);

/* Dot product of one weight row (type) with an activation row already in
 * tensor_dot_type(type). n elements. */
float tensor_vec_dot(enum tensor_type type, int64_t n, const void *w_row, const void *act_row);

/* out[r] = dot(W row r, act) for r in [0, rows); W is rows x n of `type`,
 * act is in tensor_dot_type(type). Single-threaded; callers split rows. */
void tensor_matvec(enum tensor_type type, int64_t n, const void *w, int64_t rows,
                   const void *act, float *out);

/* fp16 / bf16 scalar conversion (round to nearest even, like ggml). */
float tensor_fp16_to_fp32(uint16_t h);
uint16_t tensor_fp32_to_fp16(float f);
float tensor_bf16_to_fp32(uint16_t h);
uint16_t tensor_fp32_to_bf16(float f);

#endif
