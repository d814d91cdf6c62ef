/* Packed Q8_0 weights (forward_packed.h) on AVX-512 VNNI and on AVX2: the
 * layout, the activations' side data and the kernels (packed_q8_0.c).
 *
 * The reference multiplies Q8_0 rows in ggml_vec_dot_q8_0_q8_0's order
 * (tinyBLAS_Q0_AVX's for batches is the same): per row and block, eight
 * float lanes, lane l FMA-accumulating d_w * d_a times the exact integer sum
 * of elements 4l..4l+3, then hsum_float_8 of the eight lanes,
 * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
 *
 * A group of 16 rows holds, per block, eight 64-byte vectors: vector l has
 * in dword lane r the bytes 4l..4l+3 of row r, with VNNI offset to unsigned
 * (w + 128, as VNNI takes them), on AVX2 as they are (signed). One VNNI dot
 * of the vector against a broadcast of the token's four bytes (signed)
 * gives lane l of all 16 rows, so each register is one float lane of 16
 * rows, the scales of the 16 rows multiply in one instruction and the final
 * reduction is vertical adds. The offset comes back off through the dot's
 * starting value, -128 * (sum of the token's four bytes), a broadcast load
 * from the token's side data. With the offset on the token instead, the
 * starting value depends on the row: formed once per pass of 32 blocks, it
 * took a register copy before every dot, and the passes spilled the
 * accumulators; on a Zen 4 (512-bit instructions take two of its four
 * vector pipes' slots) that form was 8 % slower at 512 tokens and 1.6
 * times slower at 3 (docs/speed-ik.md, thirty-seventh session). It loads
 * less per dot, which a Zen 5 (2 loads a cycle) may still prefer: not
 * measured there.
 *
 * AVX2 (and AVX-512 without VNNI) builds run the same layout as two halves
 * of 8 rows, bytes 0-31 and 32-63 of each vector, one float lane of 8 rows
 * a ymm. Without VNNI (a + 128 against signed weights would saturate
 * maddubs' int16 pairs) a batch's integer lanes come from two madds of int16
 * pairs (256 times the lane, exact), one token's from the reference's own
 * sign trick, maddubs(|w|, sign(a, w)) and madd by ones; the side data
 * holds the tokens' pairs and bytes for them (packed_q8_0.c). In place of
 * tensor_matmul's 4-row tiles
 * (tinyBLAS's order, a shuffle per product to hand each row its scale) a
 * scale product serves 8 rows and a weight vector two tokens. */
#ifndef TOKSCOPE_PACKED_Q8_0_H
#define TOKSCOPE_PACKED_Q8_0_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/quant_internal.h"

#define PACKED_Q8_0_QS 512 /* quant bytes per block of a group */
#define PACKED_Q8_0_SC 32  /* and 16 fp16 scales, where forward_packed.h's packed_scale_at says */

/* Bytes of one token's side data for nb blocks: with VNNI per block its 32
 * quants as they are and its 8 lanes' starting values (int32), then nb
 * float scales; on AVX2 per
 * block its int16 pairs (64 bytes), then every block's 32 quants as they
 * are, then nb float scales divided by 256 (packed_q8_0.c). */
size_t packed_q8_0_act_bytes(int64_t nb);

/* One token's side data from its Q8_0 row. */
void packed_q8_0_act(const block_q8_0 *y, int64_t nb, uint8_t *dst);

/* Row r of a group from its Q8_0 row (o: the group's start). */
void packed_q8_0_pack_row(const block_q8_0 *x, int64_t nb, int r, uint8_t *o);

/* The most tokens packed_q8_0_group takes in one call. */
#define PACKED_Q8_0_TILE 64

/* One group (pw) against n_tok <= PACKED_Q8_0_TILE tokens' side data (act_bytes
 * apart): out[t * out_stride + r] for the rows r in [lo, hi) of the group. */
void packed_q8_0_group(const uint8_t *pw, int64_t nb, const uint8_t *act, size_t act_bytes, int n_tok, float *out,
                       int64_t out_stride, int lo, int hi);

/* out[t * out_stride + r] for rows [r0, r1) of the plain Q8_0 rows at w (rs
 * bytes apart, nb blocks) and tokens [0, n_tok) of Q8_0 activations
 * (act_stride apart), each output vec_dot's bits: the rows packed 16 at a
 * time into the thread's scratch and run through packed_q8_0_group against
 * every token (a MoE expert's tokens: its weights are not packed at load).
 * False, having written nothing, without AVX2 or scratch. */
bool packed_q8_0_rows(const void *w, size_t rs, int64_t nb, int64_t r0, int64_t r1, const uint8_t *act,
                      size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
