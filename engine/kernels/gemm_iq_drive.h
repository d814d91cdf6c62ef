/* The driver the AVX-512 IQ GEMMs share (gemm_iq.c for IQ4_XS, IQ3 and
 * IQ2, gemm_iq1.c for IQ1_M): tokens in passes whose prepared bytes fit the
 * scratch, panels of row pairs written once per pass, tokens in blocks
 * that stay in L2, super-blocks in slices that keep a tile's panel rows in
 * L1, 2 row pairs x tile_t tokens a tile. What a row's panel and a token's
 * prepared bytes hold, what a tile computes and how its float lanes become
 * outputs is the type's own (the callbacks); the driver only cuts rows,
 * tokens and super-blocks, and every output's float steps stay in
 * super-block order inside the tile (its float lanes wait in a 16 x 16
 * float state between slices). Internal to the kernels. */
#ifndef TOKSCOPE_GEMM_IQ_DRIVE_H
#define TOKSCOPE_GEMM_IQ_DRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/quant_internal.h"

#if defined(QUANT_HAVE_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define GEMM_IQ_DRIVE 1

/* most tokens a tile */
#define GEMM_IQ_TILE_MAX 8

/* Super-block i of a row: v[b] its sub-block b's 32 values (bytes, natural
 * order), ls[h] the integer scale of elements 16h..16h+15, *d its d_w. */
typedef void (*gemm_iq_decode_fn)(const void *row, int64_t i, int8_t v[QK_K], int ls[QK_K / 16], float *d);

/* Row h (0, 1) of a pair: the row's nbl super-blocks into the pair's panel
 * at p (pair_sb bytes a super-block), its d_w into dw[0..nbl). decode is
 * the kind's (NULL where the writer decodes by itself). */
typedef void (*gemm_iq_write_fn)(gemm_iq_decode_fn decode, const void *row, int64_t nbl, uint8_t *p, int h,
                                 float *dw);

/* A token's Q8_K row y as the tiles want it, tok_sb bytes a super-block. */
typedef void (*gemm_iq_prep_fn)(const block_q8_K *y, int64_t nbl, uint8_t *o);

/* NP (1, 2) row pairs (wp: their panels, dw: the 2 * NP rows' d_w) against
 * NT tokens (a: their prepared bytes; yq: their Q8_K rows' d, copied out
 * of the rows when the bytes were prepared, the tile's tile_t tokens side
 * by side per super-block: super-block i's at yq[tile_t * i + j], the last
 * token repeated past NT. A tile read them from a cache line of its own per
 * token and super-block, 9 % of an IQ2_XXS GEMM's time; side by side one
 * load gives a tile several tokens' d, so that one multiply forms d_w *
 * d_act for 4 of them), super-blocks [i0, i1): the float state starts at
 * zero when i0 is 0 (fs unset), else goes on from fs, and with o NULL goes
 * back to fs; else (the last slice) the outputs of the first nr rows go to
 * o, token t's row r at o[t * stride + r], times scale (the kind's) where
 * the type wants it. */
typedef void (*gemm_iq_tile_fn)(const uint8_t *const wp[2], const float *const dw[4],
                                const uint8_t *const a[GEMM_IQ_TILE_MAX], const float *yq, int64_t i0, int64_t i1,
                                float fs[16][16], float *o, int64_t stride, int nr, float scale);

struct gemm_iq_kind {
    int tile_t;       /* tokens a tile (<= GEMM_IQ_TILE_MAX) */
    size_t pair_sb;   /* panel bytes per row pair and super-block */
    size_t tok_sb;    /* prepared token bytes per super-block */
    int tok_blk;      /* tokens a block (a multiple of tile_t; 0: as many as fill 256 KB) */
    int64_t sb_slice; /* super-blocks a slice (0: all) */
    gemm_iq_decode_fn decode;
    float scale; /* the factor vec_dot applies to the sum (the tiles') */
    gemm_iq_write_fn write_row;
    gemm_iq_prep_fn prep;
    const gemm_iq_tile_fn (*tiles)[GEMM_IQ_TILE_MAX]; /* [row pairs - 1][tokens - 1] */
};

/* Bytes a token of the tokens prepared once for every thread of a matmul
 * (gemm_iq_drive_prep): k->prep's nbl * tok_sb bytes, then the token's nbl
 * d (the tiles' yq are made from them), whole cache lines. */
size_t gemm_iq_drive_tok_rec(const struct gemm_iq_kind *k, int64_t nbl);
/* Q8_K rows [0, n_tok) of act (act_stride bytes apart, nbl super-blocks)
 * into dst, gemm_iq_drive_tok_rec bytes a token. */
void gemm_iq_drive_prep(const struct gemm_iq_kind *k, const uint8_t *act, size_t act_stride, int n_tok, int64_t nbl,
                        uint8_t *dst);

/* out[t * out_stride + r] for rows [r0, r1) of the rows at wd (rs bytes
 * apart, nbl super-blocks) and tokens [0, n_tok) (Q8_K rows act_stride
 * bytes apart). tok: NULL, or those tokens prepared by gemm_iq_drive_prep,
 * as the threads of one matmul share them: the driver then prepares none.
 * False, having written nothing, when scratch could not be had. */
bool gemm_iq_drive(const struct gemm_iq_kind *k, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1,
                   const uint8_t *act, size_t act_stride, const uint8_t *tok, int n_tok, float *out,
                   int64_t out_stride);
#endif

#endif
