/* Forward pass of the llama architecture, numerically aligned with the
 * reference CPU backend (llama.cpp/ggml):
 *  - activations are converted to the weight's dot type before every matmul
 *    (Q8_0 / Q8_1 / Q8_K / F16 / BF16 / F32, see tensor_dot_type), and each
 *    matmul takes the reference's kernel order (forward_matmul.c);
 *  - RMS norm sums squares in double, scales by 1/sqrtf(mean + eps), then
 *    multiplies by the weight;
 *  - RoPE "NORM" mode rotates adjacent pairs; theta is built by repeated
 *    multiplication with base^(-2/n_rot) like ggml's rope cache;
 *  - K and V are stored in the cache in F16 (default), and attention runs
 *    whichever of ggml's three flash-attention kernels the reference would
 *    pick for the batch (forward_attn.h).
 *
 * Layout per batch of n tokens: every activation buffer holds n rows. The
 * weights stay in the GGUF mapping. All buffers are allocated once in
 * forward_build; forward_eval allocates nothing. */
#include "model/forward.h"
#include "model/forward_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/forward_attn.h"
#include "kernels/forward_math.h"
#include "kernels/forward_packed.h"
#include "kernels/threadpool.h"

static const gguf_tensor *layer_mm_weight(const model_layer *L, int i)
{
    const gguf_tensor *const ws[N_LAYER_MM] = {L->wq, L->wk, L->wv, L->wo, L->ffn_gate, L->ffn_up, L->ffn_down};
    return ws[i];
}

struct attn_job {
    forward_ctx *f;
    uint32_t layer;
    int n_tok;
    int32_t start_pos;
};

forward_params forward_default_params(void)
{
    forward_params p;
    memset(&p, 0, sizeof p);
    p.n_ctx = 0;
    p.n_batch = 0;
    p.n_threads = 0;
    p.kv_type = TENSOR_TYPE_F16;
    return p;
}

void forward_free(forward_ctx *f)
{
    if (!f)
        return;
    if (f->tp)
        threadpool_free(f->tp);
    for (uint32_t l = 0; l < f->hp.n_layer; l++) {
        if (f->k_cache)
            free(f->k_cache[l]);
        if (f->v_cache)
            free(f->v_cache[l]);
    }
    free(f->k_cache);
    free(f->v_cache);
    free(f->x);
    free(f->xb);
    free(f->xb2);
    free(f->q);
    free(f->k);
    free(f->v);
    free(f->hb);
    free(f->hb2);
    for (int i = 0; i < 3; i++) {
        free(f->act[i]);
        free(f->act_sum[i]);
    }
    free(f->rope);
    free(f->attn_buf);
    free(f->attn_half);
    free(f->packed);
    if (f->packed_buf)
        munmap(f->packed_buf, f->packed_len);
    free(f);
}

/* ---- packed weights -------------------------------------------------------- */

struct pack_item {
    const gguf_tensor *w;
    int slot;     /* layer * N_LAYER_MM + layer_mm, or n_layer * N_LAYER_MM for the output */
    size_t off;   /* into packed_buf */
    int64_t first; /* index of its first row group among all items' groups */
};

struct pack_job {
    const struct pack_item *items;
    int n;
    int64_t total; /* row groups */
    uint8_t *buf;
};

static void pack_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct pack_job *job = arg;
    const int64_t g0 = job->total * chunk / n_chunks, g1 = job->total * (chunk + 1) / n_chunks;
    for (int i = 0; i < job->n; i++) {
        const struct pack_item *it = &job->items[i];
        const int64_t n = packed_groups(it->w);
        const int64_t lo = g0 > it->first ? g0 - it->first : 0;
        const int64_t hi = g1 - it->first < n ? g1 - it->first : n;
        if (lo < hi)
            packed_build(it->w, job->buf + it->off, lo, hi);
    }
}

/* The packed weights are read end to end for every token. In 2 MB pages
 * (transparent huge pages, where the kernel grants them) that takes far
 * fewer TLB misses than in 4 KB pages, and packing takes far fewer page
 * faults. The mapping starts on a 2 MB boundary; *len is what to munmap. */
static uint8_t *packed_alloc(size_t n, size_t *len)
{
    const size_t huge = (size_t)2 << 20;
    const size_t want = (n + huge - 1) & ~(huge - 1);
    uint8_t *p = mmap(NULL, want + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    const size_t head = (huge - (uintptr_t)p % huge) % huge;
    if (head)
        munmap(p, head);
    munmap(p + head + want, huge - head); /* head < huge: a tail is always left */
    p += head;
#ifdef MADV_HUGEPAGE
    madvise(p, want, MADV_HUGEPAGE); /* advice only: 4 KB pages still work */
#endif
    *len = want;
    return p;
}

/* Once packed, a weight's original bytes in the file mapping are not read
 * again (the kernels use the packed copy). Their pages leave this process
 * (its RSS had counted the model twice) and stay in the page cache, from
 * which the kernel can reclaim them. Should anything read them after all,
 * they fault back in from the file: the mapping is private and never
 * written. */
static void release_original(const gguf_tensor *w)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)w->data + page - 1) & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)w->data + w->nbytes) & ~(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Packs every weight that has a packed kernel into one buffer, on all
 * threads. False when out of memory. */
static bool build_packed(forward_ctx *f)
{
    const int n_layer = (int)f->hp.n_layer, n_w = n_layer * N_LAYER_MM + 1;
    struct pack_item *items = calloc((size_t)n_w, sizeof *items);
    f->packed = calloc((size_t)n_layer, sizeof *f->packed);
    if (!items || !f->packed) {
        free(items);
        return false;
    }
    struct pack_job job = {items, 0, 0, NULL};
    size_t total = 0;
    for (int i = 0; i < n_w; i++) {
        const gguf_tensor *w =
            i < n_layer * N_LAYER_MM ? layer_mm_weight(&f->w->layers[i / N_LAYER_MM], i % N_LAYER_MM) : f->w->output;
        const size_t bytes = packed_bytes(w);
        if (bytes == 0)
            continue;
        items[job.n++] = (struct pack_item){w, i, total, job.total};
        total += (bytes + 63) & ~(size_t)63;
        job.total += packed_groups(w);
    }
    bool ok = true;
    if (job.n > 0) {
        f->packed_buf = packed_alloc(total, &f->packed_len);
        ok = f->packed_buf != NULL;
    }
    if (ok && job.n > 0) {
        job.buf = f->packed_buf;
        threadpool_run(f->tp, job.total < f->n_threads * 8 ? job.total : f->n_threads * 8, pack_worker, &job);
        for (int i = 0; i < job.n; i++) {
            release_original(items[i].w);
            const uint8_t *p = f->packed_buf + items[i].off;
            if (items[i].slot == n_layer * N_LAYER_MM)
                f->packed_output = p;
            else
                f->packed[items[i].slot / N_LAYER_MM][items[i].slot % N_LAYER_MM] = p;
        }
    }
    free(items);
    return ok;
}

forward_ctx *forward_build(const model *m, const forward_params *pp, char *err, size_t errlen)
{
    forward_params p = pp ? *pp : forward_default_params();
    const model_hparams *hp = model_get_hparams(m);
    if (p.n_ctx == 0)
        p.n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (p.n_ctx > (1u << 20)) {
        snprintf(err, errlen, "context size %u is too large (at most %u)", p.n_ctx, 1u << 20);
        return NULL;
    }
    if (p.n_batch == 0)
        p.n_batch = 512;
    if (p.n_batch > p.n_ctx)
        p.n_batch = p.n_ctx;
    if (p.n_batch > 4096)
        p.n_batch = 4096;
    if (p.n_threads <= 0)
        p.n_threads = threadpool_default_threads();
    if (p.n_threads > 256)
        p.n_threads = 256;
    if (p.kv_type != TENSOR_TYPE_F16 && p.kv_type != TENSOR_TYPE_F32) {
        snprintf(err, errlen, "KV cache type must be F16 or F32");
        return NULL;
    }
    if (hp->n_head_kv == 0 || hp->n_head % hp->n_head_kv != 0 || hp->head_dim == 0) {
        snprintf(err, errlen, "attention heads (%u) are not a multiple of KV heads (%u)", hp->n_head, hp->n_head_kv);
        return NULL;
    }
    forward_ctx *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    f->m = m;
    f->hp = *hp;
    f->w = model_get_weights(m);
    f->p = p;
    f->kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    f->n_group = (int)(hp->n_head / hp->n_head_kv);
    f->kv_elt = p.kv_type == TENSOR_TYPE_F16 ? 2 : 4;
    f->n_threads = p.n_threads;

    const size_t B = p.n_batch, E = hp->n_embd, KV = (size_t)f->kv_dim, F = hp->n_ff;
    const size_t maxin = E > F ? E : F;
    bool ok = true;
    f->k_cache = calloc(hp->n_layer, sizeof *f->k_cache);
    f->v_cache = calloc(hp->n_layer, sizeof *f->v_cache);
    ok = f->k_cache && f->v_cache;
    for (uint32_t l = 0; ok && l < hp->n_layer; l++) {
        /* calloc: rows never written read as zeros, never as garbage */
        f->k_cache[l] = calloc((size_t)p.n_ctx * KV, f->kv_elt);
        f->v_cache[l] = calloc((size_t)p.n_ctx * KV, f->kv_elt);
        ok = f->k_cache[l] && f->v_cache[l];
    }
    if (ok) {
        f->x = malloc(B * E * sizeof(float));
        f->xb = malloc(B * E * sizeof(float));
        f->xb2 = malloc(B * E * sizeof(float));
        f->q = malloc(B * E * sizeof(float));
        f->k = malloc(B * KV * sizeof(float));
        f->v = malloc(B * KV * sizeof(float));
        f->hb = malloc(B * F * sizeof(float));
        f->hb2 = malloc(B * F * sizeof(float));
        f->act_cap = B * maxin * sizeof(float); /* F32 is the widest dot type */
        for (int i = 0; i < 3; i++) {
            f->act[i] = aligned_alloc(64, (f->act_cap + 63) & ~(size_t)63); /* whole-line vector loads */
            f->act_sum[i] = malloc(B * (maxin / 32 + 1) * sizeof(int32_t));
        }
        f->rope_stride = ((size_t)hp->n_rot + 15) & ~(size_t)15; /* whole cache lines per token: no false sharing */
        f->rope = aligned_alloc(64, B * f->rope_stride * sizeof(float));
        /* each thread's scratch on cache lines of its own: two threads
         * writing one line (16 bytes apart for stories260K's 8-wide heads)
         * made the attention a third slower */
        f->attn_floats = (attn_scratch_floats((int)hp->head_dim, p.n_ctx, f->n_group) + 15) & ~(size_t)15;
        f->attn_halfs = (2 * (size_t)hp->head_dim + 31) & ~(size_t)31;
        f->attn_buf = aligned_alloc(64, (size_t)p.n_threads * f->attn_floats * sizeof(float));
        f->attn_half = aligned_alloc(64, (size_t)p.n_threads * f->attn_halfs * sizeof(uint16_t));
        ok = f->x && f->xb && f->xb2 && f->q && f->k && f->v && f->hb && f->hb2 && f->act[0] && f->act[1] &&
             f->act[2] && f->act_sum[0] && f->act_sum[1] && f->act_sum[2] && f->rope && f->attn_buf && f->attn_half;
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory allocating the KV cache and buffers (n_ctx %u, n_batch %u)", p.n_ctx,
                 p.n_batch);
        forward_free(f);
        return NULL;
    }
    f->tp = threadpool_create(p.n_threads);
    if (!f->tp) {
        snprintf(err, errlen, "cannot create the thread pool");
        forward_free(f);
        return NULL;
    }
    f->n_threads = threadpool_n_threads(f->tp);
    if (!build_packed(f)) {
        snprintf(err, errlen, "out of memory packing the weights");
        forward_free(f);
        return NULL;
    }
    return f;
}

uint32_t forward_n_ctx(const forward_ctx *f) { return f->p.n_ctx; }

void forward_set_progress(forward_ctx *f, forward_progress_fn fn, void *user)
{
    f->progress = fn;
    f->progress_user = user;
}

/* ---- small row ops --------------------------------------------------------- */

static void rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++)
        out[i] = (x[i] * scale) * w[i];
}

/* ggml_vec_swiglu_f32: 16-lane groups use the vector silu, the tail libm expf. */
static void swiglu_row(float *g, const float *up, int64_t n)
{
    const int64_t nv = n & ~(int64_t)15;
    int64_t i = 0;
#ifdef FWD_F16C
    for (; i < nv; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 e = v_expf8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)),
                                              _mm256_loadu_ps(up + i)));
    }
#endif
    for (; i < nv; i++)
        g[i] = (g[i] / (1.0f + v_expf(0.0f - g[i]))) * up[i];
    for (i = nv; i < n; i++)
        g[i] = (g[i] / (1.0f + expf(-g[i]))) * up[i];
}

/* cos/sin pairs for position pos, like ggml_rope_cache_init (mode NORM). */
static void rope_table(float *cs, int32_t pos, uint32_t n_rot, float base, float freq_scale)
{
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (uint32_t i = 0; i < n_rot; i += 2) {
        const float t = freq_scale * theta;
        cs[i] = cosf(t);
        cs[i + 1] = sinf(t);
        theta *= theta_scale;
    }
}

static void rope_apply(float *x, const float *cs, uint32_t n_rot)
{
    for (uint32_t i = 0; i < n_rot; i += 2) {
        const float x0 = x[i], x1 = x[i + 1];
        x[i] = x0 * cs[i] - x1 * cs[i + 1];
        x[i + 1] = x0 * cs[i + 1] + x1 * cs[i];
    }
}

/* ---- attention ------------------------------------------------------------- */

/* Work items of attention: for the tiled kernel, a block of ATTN_TILE
 * tokens times one KV head with all the query heads that share it (so its
 * K/V tiles are converted once); otherwise one token times one head. See
 * forward_attn.h for which kernel the reference runs when. */
static void attn_items(const forward_ctx *f, int n_tok, int *rows, int *heads, int64_t *n_items)
{
    const bool tiled = attn_use_tiled(n_tok, (int)f->hp.head_dim);
    *rows = tiled ? ATTN_TILE : 1;
    *heads = tiled ? f->n_group : 1;
    *n_items = (int64_t)((n_tok + *rows - 1) / *rows) * (int64_t)f->hp.n_head_kv * (f->n_group / *heads);
}

static void attn_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    const struct attn_job *job = arg;
    forward_ctx *f = job->f;
    const int hd = (int)f->hp.head_dim;
    const int group = f->n_group;
    const int64_t E = f->hp.n_embd;
    int rows_per_item, heads_per_item;
    int64_t total;
    attn_items(f, job->n_tok, &rows_per_item, &heads_per_item, &total);
    const int items_per_block = (int)f->hp.n_head / heads_per_item;
    const int64_t i0 = forward_chunk_start(total, chunk, n_chunks), i1 = forward_chunk_start(total, chunk + 1, n_chunks);
    attn_scratch s;
    attn_scratch_init(&s, f->attn_buf + (size_t)ith * f->attn_floats, f->attn_half + (size_t)ith * f->attn_halfs, hd,
                      f->p.n_ctx);
    const size_t elt = f->kv_elt;
    for (int64_t i = i0; i < i1; i++) {
        const int t0 = (int)(i / items_per_block) * rows_per_item;
        const int h = (int)(i % items_per_block) * heads_per_item;
        const int kvh = h / group;
        const attn_kv kv = {
            .k = (const uint8_t *)f->k_cache[job->layer] + (size_t)kvh * hd * elt,
            .v = (const uint8_t *)f->v_cache[job->layer] + (size_t)kvh * hd * elt,
            .stride = f->kv_dim,
            .f16 = f->p.kv_type == TENSOR_TYPE_F16,
            .hd = hd,
            .scale = 1.0f / sqrtf((float)hd),
        };
        const float *q = f->q + (size_t)t0 * E + (size_t)h * hd;
        float *out = f->xb2 + (size_t)t0 * E + (size_t)h * hd;
        const int32_t pos = job->start_pos + t0;
        if (rows_per_item > 1) { /* tiled */
            const int rows = job->n_tok - t0 < rows_per_item ? job->n_tok - t0 : rows_per_item;
            attn_tile(&kv, q, E, heads_per_item, rows, pos, &s, out, E);
        } else if (job->n_tok == 1 && attn_kv_view(pos) >= 512) {
            attn_row_split(&kv, q, pos + 1, attn_kv_view(pos), f->n_threads, &s, out);
        } else {
            attn_row(&kv, q, pos + 1, &s, out); /* causal: this token and all before it */
        }
    }
}

/* ---- per-token steps ------------------------------------------------------- */

static void store_kv(forward_ctx *f, uint32_t l, int32_t pos, const float *k, const float *v)
{
    const int64_t KV = f->kv_dim;
    if (f->p.kv_type == TENSOR_TYPE_F16) {
        fp16_t *kd = (fp16_t *)f->k_cache[l] + (size_t)pos * KV;
        fp16_t *vd = (fp16_t *)f->v_cache[l] + (size_t)pos * KV;
        for (int64_t i = 0; i < KV; i++) {
            kd[i] = f2h(k[i]);
            vd[i] = f2h(v[i]);
        }
    } else {
        memcpy((float *)f->k_cache[l] + (size_t)pos * KV, k, (size_t)KV * sizeof(float));
        memcpy((float *)f->v_cache[l] + (size_t)pos * KV, v, (size_t)KV * sizeof(float));
    }
}

/* The steps between the matmuls work on one token row at a time and run on
 * the pool like the matmuls (the arithmetic of a row is the same on any
 * thread). Each residual add is done by the step that next reads x. */
enum rows_op {
    ROWS_ATTN_IN, /* layer 0: x = embedding, RoPE table; else x += xb; then xb = attn_norm(x) */
    ROWS_ROPE_KV, /* RoPE of the row's q and k, then k and v into the cache */
    ROWS_FFN_IN,  /* x += xb (attention out); xb = ffn_norm(x) */
    ROWS_SWIGLU,  /* hb = silu(hb) * hb2 */
    ROWS_OUT_IN,  /* x += xb (FFN out); xb = output_norm(x) */
};

struct rows_job {
    forward_ctx *f;
    enum rows_op op;
    uint32_t layer;
    const int32_t *tokens;
    int32_t start_pos;
    int n;
};

static void add_row(float *x, const float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] += y[i];
}

static void rows_row(const struct rows_job *j, int t)
{
    forward_ctx *f = j->f;
    const model_hparams *hp = &f->hp;
    const model_weights *w = f->w;
    const model_layer *L = &w->layers[j->layer];
    const int64_t E = hp->n_embd, KV = f->kv_dim, F = hp->n_ff;
    const uint32_t hd = hp->head_dim;
    float *x = f->x + (size_t)t * E, *xb = f->xb + (size_t)t * E;
    switch (j->op) {
    case ROWS_ATTN_IN:
        if (j->layer == 0) {
            const gguf_tensor *emb = w->tok_embd;
            const size_t erb = tensor_row_size((enum tensor_type)emb->type, E);
            tensor_dequantize_row((enum tensor_type)emb->type, (const uint8_t *)emb->data + (size_t)j->tokens[t] * erb,
                                  x, E);
            /* the token's RoPE table, used by every layer */
            rope_table(f->rope + (size_t)t * f->rope_stride, j->start_pos + t, hp->n_rot, hp->rope_freq_base,
                       hp->rope_freq_scale);
        } else {
            add_row(x, xb, E);
        }
        rmsnorm(xb, x, L->attn_norm->data, E, hp->rms_eps);
        break;
    case ROWS_ROPE_KV: {
        const float *cs = f->rope + (size_t)t * f->rope_stride;
        for (uint32_t h = 0; h < hp->n_head; h++)
            rope_apply(f->q + (size_t)t * E + h * hd, cs, hp->n_rot);
        for (uint32_t h = 0; h < hp->n_head_kv; h++)
            rope_apply(f->k + (size_t)t * KV + h * hd, cs, hp->n_rot);
        store_kv(f, j->layer, j->start_pos + t, f->k + (size_t)t * KV, f->v + (size_t)t * KV);
        break;
    }
    case ROWS_FFN_IN:
        add_row(x, xb, E);
        rmsnorm(xb, x, L->ffn_norm->data, E, hp->rms_eps);
        break;
    case ROWS_SWIGLU: swiglu_row(f->hb + (size_t)t * F, f->hb2 + (size_t)t * F, F); break;
    case ROWS_OUT_IN:
        add_row(x, xb, E);
        rmsnorm(xb, x, w->output_norm->data, E, hp->rms_eps);
        break;
    }
}

static void rows_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct rows_job *j = arg;
    const int t1 = (int)forward_chunk_start(j->n, chunk + 1, n_chunks);
    for (int t = (int)forward_chunk_start(j->n, chunk, n_chunks); t < t1; t++)
        rows_row(j, t);
}

static void run_rows(forward_ctx *f, enum rows_op op, uint32_t layer, const int32_t *tokens, int32_t start_pos, int n)
{
    struct rows_job j = {f, op, layer, tokens, start_pos, n};
    const int64_t width = op == ROWS_SWIGLU ? f->hp.n_ff : f->hp.n_embd;
    threadpool_run(f->tp, forward_n_chunks(f, n, (int64_t)n * width * PREP_COST), rows_worker, &j);
}

/* ---- one batch ------------------------------------------------------------- */

/* Evaluates n <= n_batch tokens at start_pos. Writes logits for rows
 * [out_first, n) into out (n_vocab floats each). */
static void eval_batch(forward_ctx *f, const int32_t *tokens, int n, int32_t start_pos, float *out, int out_first)
{
    const model_hparams *hp = &f->hp;
    const model_weights *w = f->w;
    const int64_t E = hp->n_embd, KV = f->kv_dim, F = hp->n_ff;
    const uint32_t hd = hp->head_dim;

    for (uint32_t l = 0; l < hp->n_layer; l++) {
        const model_layer *L = &w->layers[l];
        const uint8_t *const *P = f->packed[l];
        run_rows(f, ROWS_ATTN_IN, l, tokens, start_pos, n);
        {
            const gguf_tensor *ws[3] = {L->wq, L->wk, L->wv};
            const uint8_t *pk[3] = {P[MM_WQ], P[MM_WK], P[MM_WV]};
            float *outs[3] = {f->q, f->k, f->v};
            const int64_t strides[3] = {E, KV, KV};
            forward_matmul(f, f->xb, n, E, 3, ws, pk, outs, strides);
        }
        run_rows(f, ROWS_ROPE_KV, l, tokens, start_pos, n);
        {
            struct attn_job job = {f, l, n, start_pos};
            int rows, heads;
            int64_t items;
            attn_items(f, n, &rows, &heads, &items);
            threadpool_run(f->tp, forward_n_chunks(f, items, (int64_t)n * hp->n_head * (start_pos + n) * hd), attn_worker,
                           &job);
        }
        {
            const gguf_tensor *ws[1] = {L->wo};
            const uint8_t *pk[1] = {P[MM_WO]};
            float *outs[1] = {f->xb};
            const int64_t strides[1] = {E};
            forward_matmul(f, f->xb2, n, E, 1, ws, pk, outs, strides);
        }
        if (l + 1 == hp->n_layer && out_first > 0) {
            /* Past the last attention, only the rows with logits matter:
             * the others' FFN would be thrown away. llama.cpp drops them
             * here too (inp_out_ids), so its kernels then see n_out rows,
             * which decides their rounding. */
            n -= out_first;
            memmove(f->x, f->x + (size_t)out_first * E, (size_t)n * E * sizeof(float));
            memmove(f->xb, f->xb + (size_t)out_first * E, (size_t)n * E * sizeof(float));
            out_first = 0;
            if (n == 0)
                return;
        }
        run_rows(f, ROWS_FFN_IN, l, tokens, start_pos, n);
        {
            const gguf_tensor *ws[2] = {L->ffn_gate, L->ffn_up};
            const uint8_t *pk[2] = {P[MM_GATE], P[MM_UP]};
            float *outs[2] = {f->hb, f->hb2};
            const int64_t strides[2] = {F, F};
            forward_matmul(f, f->xb, n, E, 2, ws, pk, outs, strides);
        }
        run_rows(f, ROWS_SWIGLU, l, tokens, start_pos, n);
        {
            const gguf_tensor *ws[1] = {L->ffn_down};
            const uint8_t *pk[1] = {P[MM_DOWN]};
            float *outs[1] = {f->xb};
            const int64_t strides[1] = {E};
            forward_matmul(f, f->hb, n, F, 1, ws, pk, outs, strides);
        }
    }

    /* the last layer kept only the rows with logits (a model has layers) */
    run_rows(f, ROWS_OUT_IN, 0, tokens, start_pos, n);
    const gguf_tensor *ws[1] = {w->output};
    const uint8_t *pk[1] = {f->packed_output};
    float *outs[1] = {out};
    const int64_t strides[1] = {hp->n_vocab};
    forward_matmul(f, f->xb, n, E, 1, ws, pk, outs, strides);
}

int forward_eval(forward_ctx *f, const int32_t *tokens, int32_t n, int32_t start_pos, float *logits,
                 bool all_logits, char *err, size_t errlen)
{
    if (n <= 0) {
        snprintf(err, errlen, "no tokens to evaluate");
        return -1;
    }
    if (start_pos < 0 || (int64_t)start_pos + n > (int64_t)f->p.n_ctx) {
        snprintf(err, errlen, "%d tokens at position %d do not fit the context of %u tokens (use a larger -c)", n,
                 start_pos, f->p.n_ctx);
        return -1;
    }
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= f->hp.n_vocab) {
            snprintf(err, errlen, "token id %d at index %d is outside the vocabulary (0..%d)", tokens[i], i,
                     f->hp.n_vocab - 1);
            return -1;
        }
    const int32_t nb = (int32_t)f->p.n_batch;
    for (int32_t done = 0; done < n;) {
        const int32_t cnt = n - done < nb ? n - done : nb;
        const bool last = done + cnt == n;
        float *out = NULL;
        int out_first = cnt;
        if (all_logits) {
            out = logits + (size_t)done * f->hp.n_vocab;
            out_first = 0;
        } else if (last) {
            out = logits;
            out_first = cnt - 1;
        }
        eval_batch(f, tokens + done, cnt, start_pos + done, out, out_first);
        done += cnt;
        if (f->progress && !f->progress(f->progress_user, done, n)) {
            snprintf(err, errlen, "evaluation cancelled after %d of %d tokens", done, n);
            return -1;
        }
    }
    return 0;
}
