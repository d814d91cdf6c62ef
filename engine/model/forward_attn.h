/* Causal attention for one head, in the float order of the reference's CPU
 * flash-attention kernels (ggml_compute_forward_flash_attn_ext). ggml picks
 * one of three kernels, and each rounds differently:
 *  - one chunk (attn_row): batches of fewer than 64 queries, and single
 *    queries whose KV view is shorter than 512. Q is rounded to the cache
 *    type, K.Q uses ggml's dot, and the online softmax keeps the V
 *    accumulator in F16 when the cache is F16.
 *  - split KV (attn_row_split): a single query whose KV view is 512 or
 *    longer. The view is cut into one chunk per thread, each chunk runs as
 *    above, and the partial results are merged.
 *  - tiled (attn_tile): batches of 64 or more queries. Q stays F32, K.Q and
 *    P.V are FMA chains over 64-key tiles, and the accumulator is F32.
 * The KV view is the cache length llama.cpp would use: the number of used
 * positions rounded up to a multiple of 256. Attention sinks (attn_kv.sinks)
 * are applied by these three kernels, attn_rows_generic and the grouped
 * kernels: the quantized AVX-512 path below is not taken with sinks. */
#ifndef TOKSCOPE_FORWARD_ATTN_H
#define TOKSCOPE_FORWARD_ATTN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One KV head of one layer's cache. */
typedef struct attn_kv {
    const void *k, *v; /* row 0 of this head; F16 or F32 elements */
    int64_t stride;    /* elements between cache rows (F16/F32 caches of one type) */
    bool f16;
    /* generic: K and V of other types (Q8_0, Q4_0) or of two different
     * types. The reference then runs its one-chunk kernel for every query
     * (no tiles, no split), with Q converted to K's dot type and an F32
     * accumulator unless V is F16. Rows are k_row / v_row bytes apart. */
    bool generic;
    int k_type, v_type; /* enum tensor_type */
    size_t k_row, v_row;
    int hd;            /* head dimension (K and V) */
    float scale;       /* softmax(scale * K.Q) */
    int32_t window;    /* > 0: a query at pos sees keys (pos - window, pos] only (sliding window) */
    /* attention sinks (gpt-oss): NULL, or one logit per query head served
     * (sinks[g] for the call's g-th head) that joins the softmax without a
     * value row. The reference adds it after the keys, on the F32 sums:
     * VKQ and S rescaled when it beats the maximum, else S += exp(s - M);
     * in the split kernel on the first chunk only. */
    const float *sinks;
} attn_kv;

#define ATTN_TILE 64 /* queries and keys per tile (GGML_FA_TILE_Q/KV) */

/* Per-thread scratch: attn_scratch_init carves it out of a buffer of
 * attn_scratch_floats(hd, n_ctx, n_heads) floats and one of 2 * hd halves;
 * n_heads is the most query heads one attn_tile call serves. */
typedef struct attn_scratch {
    float *scores;   /* n_ctx: one chunk's K.Q */
    uint16_t *half;  /* 2 * hd: Q rounded to F16, F16 accumulator */
    float *part;     /* hd: one chunk's result when the view is split */
    float *tile;     /* the tiled kernel's K and V tiles and per-query state; the
                        generic kernel's Q in K's dot type and a V row */
} attn_scratch;

size_t attn_scratch_floats(int hd, uint32_t n_ctx, int n_heads);
void attn_scratch_init(attn_scratch *s, float *buf, uint16_t *half, int hd, uint32_t n_ctx);

/* The sink logit joined to a finished online softmax (M, S and the F32 sums
 * vkq of hd values), as ggml's flash-attention kernels do after their key
 * loops. */
void attn_apply_sink(float sink, float *M, float *S, float *vkq, int hd);

/* The KV view length for a query batch whose last position is last_pos. */
int32_t attn_kv_view(int32_t last_pos);

/* out[0..hd) = attention of query q (F32) over keys [0, n_kv) (the
 * query sits at n_kv - 1; with a window, over the last `window` of them). */
void attn_row(const attn_kv *kv, const float *q, int32_t n_kv, attn_scratch *s, float *out);

/* attn_row for the nh (<= ATTN_GROUP_MAX) query heads that share the KV
 * head kv (queries q + h * hd, outputs out + h * hd), on a generic cache:
 * each key's rows are read once for all of them. s->tile must hold
 * attn_generic_tile_floats(hd, nh). */
void attn_rows_generic(const attn_kv *kv, const float *q, int nh, int32_t n_kv, attn_scratch *s, float *out);
size_t attn_generic_tile_floats(int hd, int nh);

/* Same for a single query with the view [0, n_view) cut into n_split chunks;
 * keys at n_kv and beyond are masked. */
void attn_row_split(const attn_kv *kv, const float *q, int32_t n_kv, int32_t n_view, int n_split, attn_scratch *s,
                    float *out);

/* n_rows (<= ATTN_TILE) queries at positions pos0, pos0+1, ... for each of
 * n_heads query heads that share this KV head (so each K/V tile is
 * converted once for all of them); query r sees keys [0, pos0 + r]. Row r of
 * head g is at q + r * q_stride + g * hd, and likewise in out. */
void attn_tile(const attn_kv *kv, const float *q, int64_t q_stride, int n_heads, int n_rows, int32_t pos0,
               attn_scratch *s, float *out, int64_t out_stride);

/* ---- the query heads of one KV head together (forward_attn_group.c) ----
 * Single queries (and batches below ATTN_TILE) on an F16 cache, heads 64,
 * 128, 256 or 512 wide, AVX-512 builds, when expf_libm_exact(): the same
 * numbers as attn_row / attn_row_split for each of the nh (<= ATTN_GROUP_MAX)
 * query heads that share the KV head kv, whose queries are q + h * hd (and
 * outputs out + h * hd). scratch holds attn_group_scratch_floats(hd). */
#define ATTN_GROUP_MAX 16

bool attn_group_ok(const attn_kv *kv);
size_t attn_group_scratch_floats(int hd);
/* one chunk [k0, k1): vkq + h * hd the undivided sum, M[h], S[h] */
void attn_group_chunk(const attn_kv *kv, const float *q, int nh, int32_t k0, int32_t k1, float *scratch, float *vkq,
                      float *M, float *S);
void attn_group_row(const attn_kv *kv, const float *q, int nh, int32_t n_kv, float *scratch, float *out);
void attn_group_split(const attn_kv *kv, const float *q, int nh, int32_t n_kv, int32_t n_view, int n_split,
                      float *scratch, float *out);
/* attn_group_split in two steps, so that its chunks can run on different
 * threads: chunk c's unnormalised outputs, maxima and sums (the sink on
 * chunk 0) into pc, attn_group_part_floats(nh, hd) floats (nh x hd
 * outputs, nh maxima, nh sums; false: the chunk sees no key and carries no
 * sink, its sums 0); then head h of the n_split parts (consecutive) merged
 * in chunk order and divided, into out (hd floats): the same numbers. */
size_t attn_group_part_floats(int nh, int hd);
bool attn_group_part(const attn_kv *kv, const float *q, int nh, int32_t n_kv, int32_t n_view, int n_split, int c,
                     float *scratch, float *pc);
void attn_group_merge(int nh, int hd, int n_split, const float *parts, int h, float *out);

/* ---- a quantized cache, many queries at once (forward_attn_quant.c) ----
 * ggml's one-chunk kernel, which llama.cpp runs for every query when K or V
 * is quantized (or they differ): K Q8_0 or Q4_0, V Q8_0, Q4_0 or F16, heads
 * 64, 128 or 256 wide, AVX-512 VNNI builds, when expf_libm_exact(). Up to
 * ATTN_GROUP_MAX queries sharing the KV head kv; query i attends to keys
 * [lo, hi) (its causal and window bounds) and gets out = attn_row_generic's
 * result. scratch holds attn_quant_scratch_floats(hd), 64-byte aligned. */
typedef struct attn_query {
    const float *q;
    float *out;
    int32_t lo, hi;
} attn_query;

bool attn_quant_ok(const attn_kv *kv);
size_t attn_quant_scratch_floats(int hd);
void attn_quant_queries(const attn_kv *kv, const attn_query *qs, int nq, float *scratch);

/* True when ggml would run a batch of n_tok queries through the tiled kernel
 * (F16 or F32 caches of one type only). */
bool attn_use_tiled(int n_tok, int hd);

#endif
