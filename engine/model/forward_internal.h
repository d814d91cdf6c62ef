/* What the parts of the forward pass share: the context (buffers, KV
 * cache, thread pool) and how work is cut into chunks for the pool.
 * Internal to forward*.c. */
#ifndef TOKSCOPE_FORWARD_INTERNAL_H
#define TOKSCOPE_FORWARD_INTERNAL_H

#include <stdint.h>

#include "model/forward.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "kernels/threadpool.h"

/* Below this many multiply-adds a job runs on the calling thread: waking the
 * pool would cost more than the work. */
#define MT_MIN_WORK (1 << 15)
/* Work units (multiply-add equivalents) of one element of the per-token
 * steps: quantizing, norms, RoPE. A guess at their cost relative to a
 * SIMD multiply-add, so that n_chunks splits them only when worth it. */
#define PREP_COST 2

/* The matmul weights of a layer, in the order of forward_ctx.packed. */
enum layer_mm { MM_WQ, MM_WK, MM_WV, MM_WO, MM_GATE, MM_UP, MM_DOWN, N_LAYER_MM };

struct forward_ctx {
    const model *m;
    model_hparams hp;
    const model_weights *w;
    forward_params p;
    int64_t kv_dim;
    int n_group;       /* query heads per KV head (the model loader checked that it divides) */
    size_t kv_elt;     /* bytes per cached element */
    void **k_cache; /* [n_layer] -> n_ctx rows of kv_dim, F16 or F32 */
    void **v_cache;
    /* activations, n_batch rows each */
    float *x, *xb, *xb2, *q, *k, *v, *hb, *hb2;
    uint8_t *act[3];     /* quantized activation rows, one buffer per distinct dot type in a job */
    size_t act_cap;      /* bytes per act buffer */
    int32_t *act_sum[3]; /* their Q8_0 block sums (packed_act_sums), when a packed Q4_0 weight needs them */
    float *rope;     /* per token of the batch, rope_stride floats: n_rot cos, sin pairs */
    size_t rope_stride;
    /* per-thread attention scratch, attn_scratch_floats each */
    float *attn_buf;
    size_t attn_floats;  /* per thread, a multiple of a cache line */
    uint16_t *attn_half; /* n_threads * attn_halfs */
    size_t attn_halfs;   /* 2 * head_dim, rounded up to a cache line */
    /* packed weight copies (forward_packed.h), NULL where a weight has none */
    const uint8_t *(*packed)[N_LAYER_MM]; /* [n_layer][N_LAYER_MM], in layer_mm order */
    const uint8_t *packed_output;
    uint8_t *packed_buf;
    size_t packed_len; /* bytes mapped at packed_buf (for munmap) */
    threadpool *tp;
    int n_threads;
    forward_progress_fn progress;
    void *progress_user;
};

/* How many chunks to cut `items` units of work into: one (inline) when the
 * job is too small to be worth waking the pool, else several per thread,
 * sized by forward_chunk_start, so a thread that starts late still finds work. */
static inline int64_t forward_n_chunks(const forward_ctx *f, int64_t items, int64_t work)
{
    if (f->n_threads <= 1 || work < MT_MIN_WORK || items <= 1)
        return 1;
    /* up to 8 per thread, none below 4 * MT_MIN_WORK: claiming a chunk
     * moves a cache line between cores */
    int64_t n = work / (4 * MT_MIN_WORK);
    if (n > (int64_t)f->n_threads * 8)
        n = (int64_t)f->n_threads * 8;
    if (n < f->n_threads)
        n = f->n_threads;
    return n < items ? n : items;
}

/* First item of chunk c of n over `total` items. Chunk sizes fall linearly
 * (the first takes about 2/n of the work, the last about 1/n^2), so the
 * threads run out of work nearly together instead of one waiting for the
 * other's last big chunk. */
static inline int64_t forward_chunk_start(int64_t total, int64_t c, int64_t n)
{
    return c >= n ? total : total * c * (2 * n - c) / (n * n);
}

/* Runs up to 3 matmuls sharing the input x (n_tok rows of n_in): outs[s]
 * gets n_tok rows of ws[s]->ne[1] outputs, out_strides[s] floats apart.
 * packed[s]: forward_packed.h copy of ws[s], or NULL (forward_matmul.c). */
void forward_matmul(forward_ctx *f, const float *x, int n_tok, int64_t n_in, int n_seg, const gguf_tensor *const *ws,
                    const uint8_t *const *packed, float *const *outs, const int64_t *out_strides);

#endif
