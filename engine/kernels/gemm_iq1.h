/* IQ1_M prompt batches as an integer GEMM with the reference's bits: the
 * part of gemm_iq.h's GEMM for the 1.5-bit type, whose weights (grid value
 * times scale, -15..15) fit a byte and whose +-1/8 deltas need a second set
 * of lanes. Called through gemm_iq.h (gemm_iq_matmul); see gemm_iq1.c. */
#ifndef TOKSCOPE_GEMM_IQ1_H
#define TOKSCOPE_GEMM_IQ1_H

#include <stdbool.h>

#include "gguf/tensor.h"

/* True when this build has the IQ1 GEMM for type (AVX-512 VNNI, IQ1_M). */
bool gemm_iq1_supports(enum tensor_type type);

struct gemm_iq_kind;

/* The IQ1 type's part of the shared GEMM driver (gemm_iq_drive.h): its
 * panel, token bytes, tiles and outputs; NULL when gemm_iq1_supports
 * fails. */
const struct gemm_iq_kind *gemm_iq1_kind(enum tensor_type type);

#endif
