/* IQ1_M prompt batches as an integer GEMM with the reference's bits: the
 * part of gemm_iq.h's GEMM for the 1.5-bit type, whose weights (grid value
 * times scale, -15..15) fit a byte and whose +-1/8 deltas need a second set
 * of lanes. Called through gemm_iq.h (gemm_iq_matmul); see gemm_iq1.c. */
#ifndef TOKSCOPE_GEMM_IQ1_H
#define TOKSCOPE_GEMM_IQ1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/tensor.h"

/* True when this build has the IQ1 GEMM for type (AVX-512 VNNI, IQ1_M). */
bool gemm_iq1_supports(enum tensor_type type);

/* gemm_iq_matmul's contract for an IQ1 type: rows [r0, r1) of the weights
 * wd (rows rs bytes apart, nbl super-blocks each) against n_tok Q8_K rows;
 * false (nothing written) when gemm_iq1_supports fails or there is no
 * scratch memory. */
bool gemm_iq1_matmul(enum tensor_type type, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1,
                     const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
