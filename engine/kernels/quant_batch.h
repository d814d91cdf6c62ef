/* Batched weight x activations product for prompt evaluation.
 *
 * Arithmetic guarantee (AVX2 builds): every output is bit-identical to
 * tensor_vec_dot of the same row and activation, and tensor_vec_dot follows
 * ggml's x86 AVX2 vec_dot float order for Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K
 * Q4_K Q5_K Q6_K (and vdpbf16ps order for BF16 with AVX512-BF16); see
 * test_reference_order in tests/unit/test_quant.c. */
#ifndef TOKSCOPE_QUANT_BATCH_H
#define TOKSCOPE_QUANT_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/tensor.h"

/* out[c * out_stride + r] = dot(W row r, activation c) for r < rows, c < n_act.
 * W is rows x n of `type` (contiguous rows); activation c starts at
 * (const char *)act + c * act_stride bytes and is in tensor_dot_type(type).
 * Each weight tile is reused across all activations while it is in cache.
 * Single-threaded; callers split rows. */
void tensor_matmul(enum tensor_type type, int64_t n, const void *w, int64_t rows, const void *act,
                   int64_t n_act, size_t act_stride, float *out, int64_t out_stride);

#endif
