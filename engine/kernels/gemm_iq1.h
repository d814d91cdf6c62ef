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

/* True when this build has the IQ1 GEMM for type (IQ1_M; AVX-512 VNNI on
 * gemm_iq_drive.h, AVX2 on gemm_kpanel.h). */
bool gemm_iq1_supports(enum tensor_type type);

struct gemm_iq_kind;

/* The IQ1 type's part of the shared GEMM driver (gemm_iq_drive.h): its
 * panel, token bytes, tiles and outputs; NULL when gemm_iq1_supports
 * fails. */
const struct gemm_iq_kind *gemm_iq1_kind(enum tensor_type type);

/* The AVX2 build's IQ1_M GEMM: out[t * out_stride + r] for rows [r0, r1)
 * (rs bytes apart from wd, nbl super-blocks) and tokens [0, n_tok) (Q8_K
 * rows act_stride bytes apart), each output vec_dot's bits. False, having
 * written nothing, in other builds, for other types or without scratch. */
bool gemm_iq1_matmul256(enum tensor_type type, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1,
                        const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
