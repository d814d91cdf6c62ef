/* Packed weights: Q4_0, Q4_K and Q8_0 matrices rearranged once, when the
 * forward context is built, so that the kernels read whole registers of
 * rows straight from memory.
 *
 * Q4_0 and Q4_K (the types the reference repacks, forward_repack.h) hold
 * 16 weight rows in the 16 lanes of a 512-bit register: the kernels of
 * forward_repack.c transposed eight rows of every block on every call,
 * these do no transpose and twice the rows per instruction. Q8_0 follows
 * ggml's 8-lane vec_dot order: a register holds one of the eight float
 * lanes of 16 rows.
 *
 * Per output row the kernels take exactly the float steps of the kernels
 * they replace (each block's exact integer sum, then the same FMA chain and
 * reduction), so the logits keep their bits. Q8_0's layout and kernels:
 * packed_q8_0.h.
 *
 * A packed copy is as large as the original tensor (Q4_K: 64 bytes more per
 * 16 rows and super-block, for its decoded scales; a group whose blocks do
 * not end on a 64-byte line: up to 63 bytes more). AVX2 builds without
 * AVX-512 VNNI pack Q4_0, Q4_K and Q8_0 (2-D weights), in the same layout
 * (a 256-bit half of each vector is 8 rows, and maddubs does the dots;
 * Q4_0 and Q4_K batches of 16 tokens and more go to gemm_tlanes.h, which
 * unpacks rows from it), and AVX2 builds without AVX-512 also Q6_K, not
 * in lanes but row by row in file order, each row re-encoded
 * (packed_q6_K.h; a group is 16 rows, the last one padded); builds without
 * AVX2 pack nothing (packed_bytes returns 0). */
#ifndef TOKSCOPE_FORWARD_PACKED_H
#define TOKSCOPE_FORWARD_PACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

#define PACKED_ROWS 16

/* Q4_0 per block of a group: 256 bytes of nibbles (dword j: row r's qs
 * bytes 4j.. at 64j + 4r) and 16 fp16 d (packed_scale_at). */
#define PACKED_Q4_0_NIB 256
#define PACKED_Q4_0_SC 32

/* Q4_K per super-block of a group: 2048 bytes of nibbles (pair j, dword q:
 * row r's qs bytes 32j + 4q.. at 512j + 64q + 4r) and 320 bytes of scales
 * (16 fp16 d, 16 fp16 dmin, then per pair j at 64 + 64j: 16 scales of
 * sub-block 2j, 16 of 2j + 1, 16 (min 2j, min 2j + 1) byte pairs). */
#define PACKED_Q4_K_NIB 2048
#define PACKED_Q4_K_SC (64 + 4 * 64)

/* MXFP4 per block of a group: 256 bytes of nibbles (as Q4_0's) and 16
 * scale bytes. */
#define PACKED_MXFP4_NIB 256
#define PACKED_MXFP4_SC 16

/* Where a group keeps block b's quants (qb bytes a block) and scales (sb):
 * one stream, in units of as many blocks as fill a 64-byte line with
 * scales (Q4_0 and Q8_0 2, MXFP4 4; Q4_K 1, its 320 bytes), each unit its
 * scales then its blocks' quants, in the order the kernels read them; a
 * last, shorter unit has the full line of scales too, so every 64-byte
 * quant vector stays aligned. With the scales after all the group's quants
 * (the layout before) a group was two streams the hardware prefetcher
 * lost; one thread read that layout at 19-24 GB/s with the next group
 * prefetched, 17-21 without, and a plain linear read at 30-32 (AMD EPYC
 * Zen 4, 1 GB of groups). */
static inline int64_t packed_unit(size_t sb)
{
    return sb >= 64 ? 1 : (int64_t)(64 / sb);
}

static inline size_t packed_scale_at(int64_t b, size_t qb, size_t sb)
{
    const int64_t u = packed_unit(sb), u0 = b / u * u;
    return (size_t)u0 * (qb + sb) + (size_t)(b - u0) * sb;
}

static inline size_t packed_quant_at(int64_t b, size_t qb, size_t sb)
{
    const int64_t u = packed_unit(sb), u0 = b / u * u;
    return (size_t)u0 * (qb + sb) + (size_t)u * sb + (size_t)(b - u0) * qb;
}

/* Per type: block b's quants (packed_T_q) and scales (packed_T_sc), as
 * offsets in a group; packed_q8_0.h's PACKED_Q8_0_QS / _SC for q8_0. */
#define PACKED_BLOCK_AT(T, QB, SB)                                                                                     \
    static inline size_t packed_##T##_q(int64_t b)                                                                     \
    {                                                                                                                  \
        return packed_quant_at(b, QB, SB);                                                                             \
    }                                                                                                                  \
    static inline size_t packed_##T##_sc(int64_t b)                                                                    \
    {                                                                                                                  \
        return packed_scale_at(b, QB, SB);                                                                             \
    }
PACKED_BLOCK_AT(q4_0, PACKED_Q4_0_NIB, PACKED_Q4_0_SC)
PACKED_BLOCK_AT(q4_K, PACKED_Q4_K_NIB, PACKED_Q4_K_SC)
PACKED_BLOCK_AT(mxfp4, PACKED_MXFP4_NIB, PACKED_MXFP4_SC)

/* a group's bytes: whole units, then the last one (64-byte multiples) */
static inline size_t packed_group_size(int64_t nb, size_t qb, size_t sb)
{
    const int64_t u = packed_unit(sb), rest = nb % u;
    return (size_t)(nb - rest) * (qb + sb) + (rest ? (size_t)u * sb + (size_t)rest * qb : 0);
}

/* Bytes of w's packed copy; 0 when this build has no packed kernel for it.
 * Experts (3-D weights, ne[2] matrices one after the other) are packed as
 * MXFP4 and Q8_0 (and Q6_K in AVX2 builds without AVX-512), where every
 * expert's rows fill whole groups; packed_groups and packed_build then run
 * over all experts' rows. */
size_t packed_bytes(const gguf_tensor *w);

/* Row groups of PACKED_ROWS (the last one padded with zero rows). */
int64_t packed_groups(const gguf_tensor *w);

/* Packs row groups [g0, g1) of w into dst (packed_bytes(w) bytes in all,
 * 64-byte aligned), so that threads can split the work. */
void packed_build(const gguf_tensor *w, uint8_t *dst, int64_t g0, int64_t g1);

/* Bytes per token of the side data packed_matmul wants next to the
 * activations (0: none). Q4_0: each Q8_0 block's integer sum (the kernel
 * feeds unsigned nibbles to VNNI and takes 8 * sum(a) back off); Q8_0: the
 * records of packed_q8_0.h. Computed once per matmul by packed_act_prepare,
 * shared by all threads and row groups. */
size_t packed_act_bytes(const gguf_tensor *w);

/* The most packed_act_bytes takes for weights n elements wide. */
size_t packed_act_bytes_max(int64_t n);

/* The side data of n_tok activation rows (Q8_0, act_stride bytes apart)
 * into dst, packed_act_bytes(w) bytes per token (64-byte aligned for Q8_0). */
void packed_act_prepare(const gguf_tensor *w, const uint8_t *act, size_t act_stride, int n_tok, uint8_t *dst);

/* out[t * out_stride + r] for rows [r0, r1) and tokens [0, n_tok), as
 * repack_matmul / refk_matmul / tensor_matmul compute them, bit for bit. Any r0, r1 work;
 * multiples of PACKED_ROWS waste nothing. act_extra: packed_act_prepare's
 * side data of act when packed_act_bytes(w) > 0, else unused (may be NULL). */
void packed_matmul(const gguf_tensor *w, const uint8_t *packed, int64_t r0, int64_t r1, const uint8_t *act,
                   size_t act_stride, const uint8_t *act_extra, int n_tok, float *out, int64_t out_stride);

/* packed_matmul for expert e of the 3-D weight w (packed: its packed copy,
 * packed_bytes(w) > 0), act without side data: it is made here. */
void packed_expert_matmul(const gguf_tensor *w, const uint8_t *packed, int32_t e, int64_t r0, int64_t r1,
                          const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride);

#endif
