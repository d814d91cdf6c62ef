/* Packed weights: the Q4_0 and Q4_K matrices the reference repacks
 * (forward_repack.h), rearranged once when the forward context is built so
 * that 16 weight rows sit in the 16 lanes of a 512-bit register.
 *
 * The kernels of forward_repack.c transpose eight rows of every block on
 * every call, once per group of eight tokens; these read the lanes straight
 * from memory and do twice the rows per instruction. Per output row they
 * take exactly the float steps of forward_repack.c (each block's exact
 * integer sum, then the same FMA chain), so the logits keep their bits.
 *
 * A packed copy is as large as the original tensor (Q4_K: 64 bytes more per
 * 16 rows and super-block, for its decoded scales). Builds without AVX-512
 * VNNI pack nothing (packed_bytes returns 0) and use forward_repack.c. */
#ifndef TOKSCOPE_FORWARD_PACKED_H
#define TOKSCOPE_FORWARD_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

#define PACKED_ROWS 16

/* Bytes of w's packed copy; 0 when this build has no packed kernel for it. */
size_t packed_bytes(const gguf_tensor *w);

/* Row groups of PACKED_ROWS (the last one padded with zero rows). */
int64_t packed_groups(const gguf_tensor *w);

/* Packs row groups [g0, g1) of w into dst (packed_bytes(w) bytes in all,
 * 64-byte aligned), so that threads can split the work. */
void packed_build(const gguf_tensor *w, uint8_t *dst, int64_t g0, int64_t g1);

/* out[t * out_stride + r] for rows [r0, r1) and tokens [0, n_tok), as
 * repack_matmul / refk_matmul compute them, bit for bit. Any r0, r1 work;
 * multiples of PACKED_ROWS waste nothing. */
void packed_matmul(const gguf_tensor *w, const uint8_t *packed, int64_t r0, int64_t r1, const uint8_t *act,
                   size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
