/* The forward pass driver, numerically aligned with the reference CPU
 * backend (llama.cpp/ggml). The architecture's recipe (arch_*.c) was
 * turned into a graph of steps once, in forward_build (forward_graph.c);
 * forward_eval runs those steps for each batch:
 *  - row steps (norms, RoPE, activations: forward_rows.c) on the pool;
 *  - matmuls: activations converted to the weight's dot type (Q8_0 / Q8_1
 *    / Q8_K / F16 / BF16 / F32, see tensor_dot_type), each in the
 *    reference's kernel order (forward_matmul.c);
 *  - attention: K and V stored in the cache in F16 (default), and whichever
 *    of ggml's three flash-attention kernels the reference would pick for
 *    the batch (forward_attn.h), causal and within the sliding window.
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
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/forward_attn.h"
#include "kernels/forward_math.h"
#include "kernels/forward_packed.h"
#include "kernels/gemm_iq.h"
#include "kernels/threadpool.h"

forward_params forward_default_params(void)
{
    forward_params p;
    memset(&p, 0, sizeof p);
    p.n_ctx = 0;
    p.n_batch = 0;
    p.n_threads = 0;
    p.kv_type = TENSOR_TYPE_F16;
    p.v_type = TENSOR_TYPE_F16;
    p.blas = BLAS_MODE_OFF;
    p.n_seq = 1;
    return p;
}

static const struct {
    const char *name;
    enum tensor_type type;
} kv_types[] = {{"f16", TENSOR_TYPE_F16}, {"f32", TENSOR_TYPE_F32}, {"q8_0", TENSOR_TYPE_Q8_0}, {"q4_0", TENSOR_TYPE_Q4_0}};

bool forward_kv_type_parse(const char *name, enum tensor_type *out)
{
    for (size_t i = 0; i < sizeof kv_types / sizeof kv_types[0]; i++)
        if (!strcasecmp(name, kv_types[i].name)) {
            *out = kv_types[i].type;
            return true;
        }
    return false;
}

const char *forward_kv_type_name(enum tensor_type t)
{
    for (size_t i = 0; i < sizeof kv_types / sizeof kv_types[0]; i++)
        if (kv_types[i].type == t)
            return kv_types[i].name;
    return "?";
}

void forward_free(forward_ctx *f)
{
    if (!f)
        return;
    if (f->tp)
        threadpool_free(f->tp);
    blas_free(f->blas);
    for (uint32_t l = 0; l < f->hp.n_layer && !f->kv_shared; l++) {
        if (f->hp.kv_layer[l] != l)
            continue; /* the cache of the layer it shares */
        if (f->k_cache)
            free(f->k_cache[l]);
        if (f->v_cache)
            free(f->v_cache[l]);
    }
    free(f->k_cache);
    free(f->v_cache);
    for (int b = 0; b < FWD_N_BUF; b++)
        if (b != FWD_LOGITS && f->buf[b])
            munmap(f->buf[b], f->buf_len[b]);
    for (int i = 0; i < 3; i++) {
        free(f->act[i]);
        free(f->act_sum[i]);
    }
    free(f->rope);
    free(f->attn_buf);
    free(f->attn_half);
    free(f->attn_parts);
    free(f->packed_of);
    forward_moe_free(f);
    forward_rs_free(f);
    fwd_graph_free(&f->graph);
    forward_lens_free(f);
    if (f->packed_buf)
        munmap(f->packed_buf, f->packed_len);
    free(f);
}

/* ---- packed weights -------------------------------------------------------- */

struct pack_item {
    const gguf_tensor *w;
    int64_t idx;   /* tensor index in the file */
    size_t off;    /* into packed_buf */
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
 * faults. The row buffers too: a GEMM writes a block of tokens' outputs a
 * row apart, each token on another 4 KB page otherwise (gemm_kpanel.c's
 * output copy, 5-6 % of a Q5_K prompt's samples in this VM), and their
 * rows start on whole lines. The mapping starts on a 2 MB boundary (below
 * 1 MB, a page boundary); *len is what to munmap. */
static uint8_t *huge_alloc(size_t n, size_t *len)
{
    const size_t huge = (size_t)2 << 20;
    if (n < huge / 2) { /* a small model: a huge page would be mostly waste (and zeroing it, time) */
        const size_t want = (n + 4095) & ~(size_t)4095;
        uint8_t *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        *len = want;
        return p;
    }
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
static void release_pages(const uint8_t *p, size_t n)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    const uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static void release_original(const gguf_tensor *w)
{
    release_pages(w->data, w->nbytes);
}

/* Rows [r0, r1) of a weight's original bytes (r1 may run past its last
 * row: a group's padding). */
static void release_rows(const gguf_tensor *w, int64_t r0, int64_t r1)
{
    const size_t rb = tensor_row_size((enum tensor_type)w->type, w->ne[0]);
    const int64_t rows = w->ne[1] * (w->ne[2] > 0 ? w->ne[2] : 1); /* experts: all matrices */
    if (r1 > rows)
        r1 = rows;
    if (r1 > r0)
        release_pages((const uint8_t *)w->data + (size_t)r0 * rb, (size_t)(r1 - r0) * rb);
}

/* Bytes packed between two releases of original pages. */
#define PACK_SLICE ((size_t)8 << 20)

/* Packs every matmul weight of the graph that has a packed kernel into one
 * buffer, on all threads. False when out of memory. */
static bool build_packed(forward_ctx *f)
{
    const gguf_ctx *g = model_get_gguf(f->m);
    const int64_t n_t = gguf_n_tensors(g);
    struct pack_item *items = calloc((size_t)n_t + 1, sizeof *items);
    f->packed_of = calloc((size_t)n_t + 1, sizeof *f->packed_of);
    bool *seen = calloc((size_t)n_t + 1, sizeof *seen);
    int64_t *resident = calloc((size_t)n_t + 1, sizeof *resident); /* the weights read from the file's bytes */
    int n_resident = 0;
    if (!items || !f->packed_of || !seen || !resident) {
        free(items);
        free(seen);
        free(resident);
        return false;
    }
    struct pack_job job = {items, 0, 0, NULL};
    size_t total = 0;
    /* the matmuls' weights, then the experts' (packed_bytes says which) */
    const int n_moe_w = 4 * f->graph.n_moe;
    for (int i = 0; i < f->graph.n_steps + n_moe_w; i++) {
        const gguf_tensor *ws[3] = {NULL, NULL, NULL};
        if (i < f->graph.n_steps) {
            const struct fwd_step *st = &f->graph.steps[i];
            for (int s = 0; st->kind == STEP_MATMUL && s < st->n_seg; s++)
                ws[s] = st->w[s];
        } else {
            const fwd_moe *m = &f->graph.moe[(i - f->graph.n_steps) / 4];
            const gguf_tensor *const mw[4] = {m->gate, m->up, m->gate_up, m->down};
            ws[0] = mw[(i - f->graph.n_steps) % 4];
        }
        for (int s = 0; s < 3 && ws[s]; s++) {
            const gguf_tensor *w = ws[s];
            const int64_t idx = w - gguf_tensor_at(g, 0);
            const size_t bytes = packed_bytes(w);
            if (seen[idx])
                continue;
            seen[idx] = true;
            if (bytes == 0) {
                resident[n_resident++] = idx;
                continue;
            }
            items[job.n++] = (struct pack_item){w, idx, total, job.total};
            total += (bytes + 63) & ~(size_t)63;
            job.total += packed_groups(w);
        }
    }
    /* in huge pages too (gguf_make_resident), where the file is large */
    const bool moved = gguf_make_resident(g, resident, n_resident, gguf_resident_min);
    if (job.n > 0 || moved) {
        /* Pages of the file are let go below (and were, for the weights
         * moved): the small tensors the forward pass reads whole (norms,
         * biases, rope factors: what no matmul reads, up to 1 MB; larger
         * ones are embedding tables, read by rows) leave the file too.
         * Read there, each fault mapped the pages around it that the page
         * cache holds (a whole 2 MB folio where it holds one), released
         * neighbours included: 74 MB of a 672 MB TinyLlama Q4_K_M. */
        int n_small = 0;
        for (int64_t i = 0; i < n_t; i++)
            if (!seen[i] && gguf_tensor_at(g, i)->nbytes <= ((size_t)1 << 20))
                resident[n_small++] = i;
        gguf_make_resident(g, resident, n_small, 0);
    }
    free(seen);
    free(resident);
    bool ok = true;
    if (job.n > 0) {
        f->packed_buf = huge_alloc(total, &f->packed_len);
        ok = f->packed_buf != NULL;
    }
    if (ok && job.n > 0) {
        /* Weight by weight, in slices of about PACK_SLICE bytes, each
         * slice's original pages let go as soon as it is packed: the
         * packed copy grows as the original shrinks, so the peak RSS is the
         * model plus one slice, not the model twice. */
        const bool mapped = gguf_is_mapped(g); /* a caller's buffer has no file behind it */
        for (int i = 0; i < job.n; i++) {
            const struct pack_item *it = &items[i];
            const int64_t n_groups = packed_groups(it->w);
            const size_t gb = packed_bytes(it->w) / (size_t)n_groups;
            const int64_t per = PACK_SLICE / gb > 0 ? (int64_t)(PACK_SLICE / gb) : 1;
            for (int64_t s0 = 0; s0 < n_groups; s0 += per) {
                const int64_t s1 = n_groups - s0 < per ? n_groups : s0 + per;
                struct pack_item one = {it->w, it->idx, it->off, -s0};
                struct pack_job slice = {&one, 1, s1 - s0, f->packed_buf};
                threadpool_run(f->tp, slice.total < f->n_threads * 8 ? slice.total : f->n_threads * 8, pack_worker,
                               &slice);
                if (mapped)
                    release_rows(it->w, s0 * PACKED_ROWS, s1 * PACKED_ROWS);
            }
            if (mapped)
                release_original(it->w);
            f->packed_of[it->idx] = f->packed_buf + it->off;
        }
    }
    free(items);
    return ok;
}

static bool build_blas(forward_ctx *f);

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
    if (p.n_seq == 0)
        p.n_seq = 1;
    if (p.n_seq > 1 && !forward_multi_seq_ok(m, err, errlen))
        return NULL;
    if (p.n_seq > 256 || (uint64_t)p.n_seq * p.n_ctx > (1u << 22)) {
        snprintf(err, errlen, "%u sequences of %u positions are too many (at most 256, 4M positions in all)",
                 p.n_seq, p.n_ctx);
        return NULL;
    }
    if (p.n_batch == 0)
        p.n_batch = 512;
    if (p.n_batch > p.n_ctx)
        p.n_batch = p.n_ctx;
    if (p.n_batch > 4096)
        p.n_batch = 4096;
    if (p.n_seq > p.n_batch) { /* an internal batch takes a token of each sequence it runs */
        snprintf(err, errlen, "%u sequences need a batch (-b) of at least %u tokens", p.n_seq, p.n_seq);
        return NULL;
    }
    if (p.n_threads <= 0)
        p.n_threads = threadpool_default_threads();
    if (p.n_threads > 256)
        p.n_threads = 256;
    /* llama.cpp casts an F32 cache to F16 for flash attention: the same
     * numbers as an F16 cache, which is what is kept */
    if (p.kv_type == TENSOR_TYPE_F32)
        p.kv_type = TENSOR_TYPE_F16;
    if (p.v_type == TENSOR_TYPE_F32)
        p.v_type = TENSOR_TYPE_F16;
    const enum tensor_type kvt[2] = {p.kv_type, p.v_type};
    for (int i = 0; i < 2; i++) {
        if (kvt[i] != TENSOR_TYPE_F16 && kvt[i] != TENSOR_TYPE_F32 && kvt[i] != TENSOR_TYPE_Q8_0 &&
            kvt[i] != TENSOR_TYPE_Q4_0) {
            snprintf(err, errlen, "%s cache type %s is not supported (f16, f32, q8_0, q4_0)", i ? "V" : "K",
                     tensor_type_name(kvt[i]) ? tensor_type_name(kvt[i]) : "?");
            return NULL;
        }
        /* rows are per layer (forward_k_head): each kind's heads must be whole blocks */
        for (int kind = 0; kind < 2; kind++) {
            const uint32_t hd = kind ? hp->head_dim_swa : hp->head_dim;
            if (tensor_row_size(kvt[i], hd) == 0) {
                snprintf(err, errlen, "a %s cache needs a head size that is a multiple of %lld (this model's is %u)",
                         tensor_type_name(kvt[i]), (long long)tensor_type_block_size(kvt[i]), hd);
                return NULL;
            }
        }
    }
    if (hp->arch == MODEL_ARCH_GEMMA4_ASSISTANT && !model_get_weights(m)->g4assist_input) {
        snprintf(err, errlen, "a gemma4-assistant file only drafts for its Gemma 4 target: give it to the target "
                 "with --spec mtp --draft-model FILE");
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
    f->n_group = 1;
    for (uint32_t l = 0; l < hp->n_layer; l++)
        if (forward_group(f, l) > f->n_group)
            f->n_group = forward_group(f, l);
    f->k_row = tensor_row_size(p.kv_type, f->kv_dim);
    f->v_row = tensor_row_size(p.v_type, f->kv_dim);
    f->k_head = tensor_row_size(p.kv_type, hp->head_dim);
    f->v_head = tensor_row_size(p.v_type, hp->head_dim);
    f->kv_generic = p.kv_type != p.v_type || (p.kv_type != TENSOR_TYPE_F16 && p.kv_type != TENSOR_TYPE_F32);
    f->n_threads = p.n_threads;
    /* llama.cpp (llama_kv_cache) rotates a quantized cache's contents when
     * the head size of layer 0 (n_embd_head_k(), the sliding kind's on
     * Gemma 4, for both of its caches) is a multiple of 64: K (and Q) by the
     * largest power of two dividing the head size of the cache's own layers,
     * V (and the output) by 64 (fwd_rot_size). LLAMA_ATTN_ROT_DISABLE=1
     * turns that off there, and here. */
    const char *rot_off = getenv("LLAMA_ATTN_ROT_DISABLE");
    const bool rot = !(rot_off && atoi(rot_off));
    const uint32_t hd0 = model_head_dim(hp, 0);
    const int rot_k = rot && tensor_type_block_size(p.kv_type) > 1 && hd0 % 64 == 0;
    const int rot_v = rot && tensor_type_block_size(p.v_type) > 1 && hd0 % 64 == 0;
    if ((rot_k || rot_v) && (hp->head_dim % 64 != 0 || hp->head_dim_swa % 64 != 0)) {
        /* a Walsh-Hadamard piece would straddle two heads: not what llama.cpp checks for */
        snprintf(err, errlen, "a rotated (quantized) cache with head sizes %u and %u is not supported; use f16 or "
                 "LLAMA_ATTN_ROT_DISABLE=1", hp->head_dim, hp->head_dim_swa);
        return NULL;
    }
    f->rot_k = rot_k;
    f->rot_v = rot_v;
    if (!fwd_graph_build(&f->graph, m, rot_k, rot_v)) {
        snprintf(err, errlen, "out of memory");
        forward_free(f);
        return NULL;
    }
    /* Phi-3's long factors once the context outgrows the original one, as
     * llama.cpp picks them (by the context size, not the position) */
    const gguf_tensor *ft = f->w->rope_freqs ? f->w->rope_freqs
                            : p.n_ctx > hp->n_ctx_orig ? f->w->rope_long
                                                       : f->w->rope_short;
    f->n_rope_tables = hp->n_swa > 0 ? 2 : 1;
    const uint32_t max_hd = hp->head_dim > hp->head_dim_swa ? hp->head_dim : hp->head_dim_swa;
    const uint32_t max_rot = hp->n_rot > hp->n_rot_swa ? hp->n_rot : hp->n_rot_swa;

    const size_t B = p.n_batch;
    bool ok = true;
    f->k_cache = calloc(hp->n_layer, sizeof *f->k_cache);
    f->v_cache = calloc(hp->n_layer, sizeof *f->v_cache);
    ok = f->k_cache && f->v_cache;
    for (uint32_t l = 0; ok && l < hp->n_layer; l++) {
        if (hp->kv_layer[l] != l) { /* a shared-KV layer reads an earlier layer's cache */
            f->k_cache[l] = f->k_cache[hp->kv_layer[l]];
            f->v_cache[l] = f->v_cache[hp->kv_layer[l]];
            continue;
        }
        if (hp->recurrent_layer[l])
            continue; /* a Gated DeltaNet layer keeps a recurrent state instead (forward_rs.c) */
        /* calloc: rows never written read as zeros, never as garbage */
        f->k_cache[l] = calloc((size_t)p.n_seq * p.n_ctx * forward_n_kv(f, l), forward_k_head(f, l));
        f->v_cache[l] = calloc((size_t)p.n_seq * p.n_ctx * forward_n_kv(f, l), forward_v_head(f, l));
        ok = f->k_cache[l] && f->v_cache[l];
    }
    if (ok) {
        /* (a width 0 buffer still gets a row: malloc(0) may be NULL) */
        for (int b = 0; b < FWD_N_BUF; b++)
            if (b != FWD_LOGITS &&
                !(f->buf[b] = (float *)(void *)huge_alloc(B * (size_t)(f->graph.width[b] + 1) * sizeof(float),
                                                          &f->buf_len[b])))
                ok = false;
        ok = ok && forward_moe_alloc(f);
        const size_t maxin = (size_t)f->graph.max_in;
        f->act_cap = B * maxin * sizeof(float); /* F32 is the widest dot type */
        for (int i = 0; i < 3; i++) {
            f->act[i] = aligned_alloc(64, (f->act_cap + 63) & ~(size_t)63); /* whole-line vector loads */
            const size_t pk = packed_act_bytes_max((int64_t)maxin), iq = gemm_iq_tok_bytes_max((int64_t)maxin);
            const size_t side = pk > iq ? pk : iq; /* forward_matmul's side data: either kind */
            f->act_sum[i] = aligned_alloc(64, (B * side + 127) & ~(size_t)63);
            ok = ok && f->act[i] && f->act_sum[i];
        }
        f->rope_stride = ((size_t)max_rot + 15) & ~(size_t)15; /* whole cache lines per token: no false sharing */
        f->rope = aligned_alloc(64, B * (size_t)f->n_rope_tables * f->rope_stride * sizeof(float));
        /* each thread's scratch on cache lines of its own: two threads
         * writing one line (16 bytes apart for stories260K's 8-wide heads)
         * made the attention a third slower */
        f->attn_floats = attn_scratch_floats((int)max_hd, p.n_ctx, f->n_group);
        /* the group and quant kernels take some head sizes only, each kind
         * of layer its own (Gemma 4: 512 on full layers, 256 on sliding
         * ones); the quantized AVX-512 kernel has no attention sinks */
        const bool sinks = f->w->layers[0].attn_sinks != NULL;
        for (int kind = 0; kind < 2; kind++) {
            const int hd = (int)(kind ? hp->head_dim_swa : hp->head_dim);
            const attn_kv probe = {.f16 = p.kv_type == TENSOR_TYPE_F16, .generic = f->kv_generic, .hd = hd};
            f->attn_group[kind] = attn_group_ok(&probe);
            const attn_kv probe_q = {.generic = f->kv_generic, .k_type = p.kv_type, .v_type = p.v_type, .hd = hd};
            f->attn_quant[kind] = !sinks && attn_quant_ok(&probe_q);
        }
        if ((f->attn_group[0] || f->attn_group[1]) && attn_group_scratch_floats((int)max_hd) > f->attn_floats)
            f->attn_floats = attn_group_scratch_floats((int)max_hd);
        if ((f->attn_quant[0] || f->attn_quant[1]) && attn_quant_scratch_floats((int)max_hd) > f->attn_floats)
            f->attn_floats = attn_quant_scratch_floats((int)max_hd);
        f->attn_floats = (f->attn_floats + 15) & ~(size_t)15;
        f->attn_halfs = (2 * (size_t)max_hd + 31) & ~(size_t)31;
        f->attn_buf = aligned_alloc(64, (size_t)p.n_threads * f->attn_floats * sizeof(float));
        f->attn_half = aligned_alloc(64, (size_t)p.n_threads * f->attn_halfs * sizeof(uint16_t));
        ok = ok && f->rope && f->attn_buf && f->attn_half;
        if (f->attn_group[0] || f->attn_group[1]) {
            f->attn_parts = aligned_alloc(64, ((size_t)hp->n_head * p.n_threads * ((size_t)max_hd + 2) * sizeof(float) + 63) &
                                                  ~(size_t)63);
            ok = ok && f->attn_parts;
        }
    }
    ok = ok && forward_rs_alloc(f);
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
    /* the whole weight file read ahead in the background: a MoE model's
     * experts are otherwise first read from disk when a token routes to
     * them, in the middle of a reply (gpt-oss-20b's shape: the first 64
     * tokens at 6-12 tok/s, then 12-13) */
    gguf_read_ahead(model_get_gguf(m));
    if (!build_packed(f)) {
        snprintf(err, errlen, "out of memory packing the weights");
        forward_free(f);
        return NULL;
    }
    /* after build_packed, which may have moved the factors out of the file */
    f->rope_factors = ft ? ft->data : NULL;
    if (!build_blas(f)) {
        snprintf(err, errlen, "out of memory allocating the OpenBLAS buffers (n_batch %u; --blas off needs none)",
                 p.n_batch);
        forward_free(f);
        return NULL;
    }
    return f;
}

/* ---- OpenBLAS (kernels/blas.h) ---------------------------------------------- */

/* Matmul weights of graph g that a batch of n_tok tokens sends through
 * OpenBLAS in mode m. */
static int64_t blas_plan(const fwd_graph *g, enum blas_mode m, int n_tok, int64_t *n_total, size_t *bytes)
{
    int64_t n = 0, total = 0;
    size_t b = 0;
    for (int i = 0; i < g->n_steps; i++) {
        const struct fwd_step *st = &g->steps[i];
        for (int s = 0; st->kind == STEP_MATMUL && s < st->n_seg; s++) {
            total++;
            if (!st->no_blas && blas_wants(m, st->w[s], n_tok)) {
                n++;
                b += st->w[s]->nbytes;
            }
        }
    }
    if (n_total)
        *n_total = total;
    if (bytes)
        *bytes = b;
    return n;
}

int64_t forward_blas_plan(const model *m, enum blas_mode mode, int n_tok, int64_t *n_total, size_t *bytes)
{
    fwd_graph g;
    memset(&g, 0, sizeof g);
    if (!fwd_graph_build(&g, m, 0, 0)) {
        fwd_graph_free(&g);
        return -1;
    }
    const int64_t n = blas_plan(&g, mode, n_tok, n_total, bytes);
    fwd_graph_free(&g);
    return n;
}

void forward_blas_describe(const model *m, enum blas_mode mode, char *buf, size_t cap)
{
    fwd_graph g;
    memset(&g, 0, sizeof g);
    if (!fwd_graph_build(&g, m, 0, 0)) {
        fwd_graph_free(&g);
        snprintf(buf, cap, "%s", blas_mode_name(mode));
        return;
    }
    int64_t total = 0, taken = 0, takeable = 0;
    bool seen[TENSOR_TYPE_COUNT] = {false};
    for (int i = 0; i < g.n_steps; i++)
        for (int s = 0; g.steps[i].kind == STEP_MATMUL && s < g.steps[i].n_seg; s++) {
            const gguf_tensor *w = g.steps[i].w[s];
            total++;
            /* a batch as large as any: what the mode takes at all */
            if (!g.steps[i].no_blas && blas_wants(mode, w, 1 << 20)) {
                taken++;
                seen[w->type < TENSOR_TYPE_COUNT ? w->type : 0] = true;
            }
            takeable += !g.steps[i].no_blas && blas_wants(BLAS_MODE_ON, w, 1 << 20);
        }
    fwd_graph_free(&g);
    size_t n = (size_t)snprintf(buf, cap, "%s", blas_mode_name(mode));
    if (mode == BLAS_MODE_OFF)
        return;
    if (taken == 0) {
        snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s",
                 mode == BLAS_MODE_AUTO && (!blas_auto_here() || takeable > 0)
                     ? ": unused on this CPU (OpenBLAS's kernels here were measured slower than tokscope's)"
                     : ": unused (no matmul weight of a type it takes)");
        return;
    }
    /* the types, grouped by the batch size from which the mode takes them */
    const char *sep = ": ";
    for (int min = 2; min > 0;) {
        int next = 0;
        const char *tsep = "";
        for (int t = 0; t < TENSOR_TYPE_COUNT; t++) {
            if (!seen[t])
                continue;
            const int at = mode == BLAS_MODE_ON ? 2 : blas_auto_min_tokens((enum tensor_type)t);
            if (at == min) {
                n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%s%s", sep, tsep,
                                      tensor_type_name((uint32_t)t));
                sep = "";
                tsep = ", ";
            } else if (at > min && (next == 0 || at < next)) {
                next = at;
            }
        }
        if (*tsep)
            n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, " from %d tokens", min);
        if (*tsep && next)
            sep = "; ";
        min = next;
    }
    snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, " (%lld of %lld matmul weights)", (long long)taken,
             (long long)total);
}

/* The OpenBLAS buffers, when a full batch would send any weight there. */
static bool build_blas(forward_ctx *f)
{
    if (f->p.blas == BLAS_MODE_OFF || blas_plan(&f->graph, f->p.blas, (int)f->p.n_batch, NULL, NULL) == 0)
        return true;
    f->blas = blas_create(f->p.blas, f->n_threads, (int)f->p.n_batch, f->graph.max_in);
    return f->blas != NULL;
}

enum blas_mode forward_blas_mode(const forward_ctx *f) { return f->p.blas; }

uint64_t forward_blas_calls(const forward_ctx *f) { return blas_calls(f->blas); }

uint32_t forward_n_ctx(const forward_ctx *f) { return f->p.n_ctx; }

uint32_t forward_n_seq(const forward_ctx *f) { return f->p.n_seq; }

size_t forward_k_head(const forward_ctx *f, uint32_t l)
{
    return tensor_row_size(f->p.kv_type, forward_hd(f, l));
}

size_t forward_v_head(const forward_ctx *f, uint32_t l)
{
    return tensor_row_size(f->p.v_type, forward_hd(f, l));
}

int forward_share_kv(forward_ctx *f, const forward_ctx *owner, const uint32_t *src, char *err, size_t errlen)
{
    if (f->p.n_ctx != owner->p.n_ctx || f->p.kv_type != owner->p.kv_type || f->p.v_type != owner->p.v_type ||
        f->rot_k != owner->rot_k || f->rot_v != owner->rot_v) {
        snprintf(err, errlen, "the contexts differ in cache length, cache types or their rotation");
        return -1;
    }
    for (uint32_t l = 0; l < f->hp.n_layer; l++) {
        const uint32_t s = src[l];
        if (s >= owner->hp.n_layer || owner->hp.recurrent_layer[owner->hp.kv_layer[s]] ||
            owner->hp.swa_layer[s] != f->hp.swa_layer[l] || forward_hd(owner, s) != forward_hd(f, l) ||
            forward_n_kv(owner, s) != forward_n_kv(f, l) ||
            (f->hp.swa_layer[l] && owner->hp.n_swa != f->hp.n_swa)) {
            snprintf(err, errlen, "layer %u (%s, head %lld, %d KV heads) cannot read the cache of layer %u (%s, head "
                     "%lld, %d KV heads)", l, f->hp.swa_layer[l] ? "sliding" : "full", (long long)forward_hd(f, l),
                     forward_n_kv(f, l), s, s < owner->hp.n_layer && owner->hp.swa_layer[s] ? "sliding" : "full",
                     s < owner->hp.n_layer ? (long long)forward_hd(owner, s) : 0LL,
                     s < owner->hp.n_layer ? forward_n_kv(owner, s) : 0);
            return -1;
        }
    }
    for (uint32_t l = 0; l < f->hp.n_layer && !f->kv_shared; l++)
        if (f->hp.kv_layer[l] == l) {
            free(f->k_cache[l]);
            free(f->v_cache[l]);
        }
    for (uint32_t l = 0; l < f->hp.n_layer; l++) {
        f->k_cache[l] = owner->k_cache[owner->hp.kv_layer[src[l]]];
        f->v_cache[l] = owner->v_cache[owner->hp.kv_layer[src[l]]];
        f->hp.kv_layer[l] = (uint16_t)l;
    }
    f->kv_shared = true;
    return 0;
}

size_t forward_kv_cache_bytes(const forward_ctx *f)
{
    size_t n = 0;
    for (uint32_t l = 0; l < f->hp.n_layer && !f->kv_shared; l++)
        if (f->hp.kv_layer[l] == l && !f->hp.recurrent_layer[l])
            n += (size_t)f->p.n_seq * f->p.n_ctx * forward_n_kv(f, l) * (forward_k_head(f, l) + forward_v_head(f, l));
    return n;
}

void forward_set_progress(forward_ctx *f, forward_progress_fn fn, void *user)
{
    f->progress = fn;
    f->progress_user = user;
}

/* ---- attention ------------------------------------------------------------- */

struct attn_job {
    forward_ctx *f;
    uint32_t layer;
    int n_tok; /* query rows of each stream */
    int32_t start_pos;
    /* forward_decode's batch (NULL: one stream, stream 0, rows from 0 at
     * start_pos): n_stream streams of n_tok rows each, one after the other,
     * each at its first row's position against its own cache stream */
    const struct fwd_ubatch *ub;
    int n_stream;
};

/* How a batch's attention runs (see forward_attn.h for which kernel the
 * reference runs when) and its work items: a block of `rows` tokens times
 * `heads` query heads of one KV head.
 *  - tiled: ATTN_TILE tokens, all the query heads of a KV head (so its K/V
 *    tiles are converted once);
 *  - group (F16 cache): one token, the query heads of a KV head together;
 *  - quant (quantized cache, AVX-512): up to ATTN_GROUP_MAX queries, tokens
 *    times the query heads of a KV head, all against the same keys;
 *  - generic (a quantized cache elsewhere, or K and V of different types):
 *    one token, the query heads of a KV head together, key by key;
 *  - one: one token, one head (the scalar kernels, F16 and F32 caches). */
enum attn_mode { ATTN_ONE, ATTN_TILED, ATTN_GROUP, ATTN_QUANT, ATTN_GENERIC };

struct attn_plan {
    enum attn_mode mode;
    int rows, heads;
    int64_t n_items;
};

static struct attn_plan attn_plan(const forward_ctx *f, int n_tok, uint32_t il)
{
    struct attn_plan p = {ATTN_ONE, 1, 1, 0};
    const int kind = f->hp.swa_layer[il] ? 1 : 0; /* model_head_dim: head_dim_swa or head_dim */
    if (!f->kv_generic && attn_use_tiled(n_tok, (int)forward_hd(f, il))) {
        p.mode = ATTN_TILED;
        p.rows = ATTN_TILE;
        p.heads = forward_group(f, il);
    } else if (f->attn_group[kind] || f->attn_quant[kind] || f->kv_generic) {
        p.mode = f->attn_group[kind] ? ATTN_GROUP : f->attn_quant[kind] ? ATTN_QUANT : ATTN_GENERIC;
        /* as few blocks as keep every thread busy */
        int hb = forward_group(f, il);
        while (hb > ATTN_GROUP_MAX || (hb % 2 == 0 && (int64_t)n_tok * f->hp.n_head / hb < 2 * f->n_threads))
            hb = hb % 2 == 0 ? hb / 2 : 1;
        p.heads = hb;
        if (p.mode == ATTN_QUANT) {
            p.rows = ATTN_GROUP_MAX / hb;
            while (p.rows > 1 && ((int64_t)n_tok + p.rows - 1) / p.rows * f->hp.n_head / hb < 2 * f->n_threads)
                p.rows /= 2;
        }
    }
    p.n_items = (int64_t)((n_tok + p.rows - 1) / p.rows) * (int64_t)forward_n_kv(f, il) * (forward_group(f, il) / p.heads);
    return p;
}

/* Query head h's KV head in cache stream `stream` of a layer, as the
 * kernels take it (sinks from head h on). A sliding-window layer's query at
 * pos sees keys (pos - n_swa, pos]; on a shared cache (forward_share_kv)
 * those before pos only: the keys [0, pos) with n_kv = pos, the window one
 * shorter. */
static attn_kv layer_kv(const forward_ctx *f, uint32_t layer, int h, int32_t stream)
{
    const int hd = (int)forward_hd(f, layer);
    const uint32_t kl = f->hp.kv_layer[layer]; /* the cache it reads */
    const size_t k_head = forward_k_head(f, layer), v_head = forward_v_head(f, layer);
    const int32_t past = f->kv_shared ? 1 : 0;
    const gguf_tensor *sink_t = f->w->layers[layer].attn_sinks;
    const float *sinks = sink_t ? (const float *)sink_t->data : NULL;
    const size_t base = forward_kv_base(f, kl, stream, h / forward_group(f, layer));
    return (attn_kv){
        .k = (const uint8_t *)f->k_cache[kl] + base * k_head,
        .v = (const uint8_t *)f->v_cache[kl] + base * v_head,
        .stride = hd,
        .f16 = f->p.kv_type == TENSOR_TYPE_F16,
        .generic = f->kv_generic,
        .k_type = f->p.kv_type,
        .v_type = f->p.v_type,
        .k_row = k_head,
        .v_row = v_head,
        .hd = hd,
        .scale = f->hp.kq_scale,
        .window = f->hp.swa_layer[layer] ? (int32_t)f->hp.n_swa - past : 0,
        .sinks = sinks ? sinks + h : NULL,
    };
}

static void attn_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    const struct attn_job *job = arg;
    forward_ctx *f = job->f;
    const int hd = (int)forward_hd(f, job->layer);
    const int64_t qs = f->graph.width[FWD_Q], os = f->graph.width[FWD_ATT];
    const int32_t past = f->kv_shared ? 1 : 0;
    const int32_t window = f->hp.swa_layer[job->layer] ? (int32_t)f->hp.n_swa - past : 0;
    const struct attn_plan plan = attn_plan(f, job->n_tok, job->layer);
    const int items_per_block = (int)f->hp.n_head / plan.heads;
    const int64_t total = plan.n_items * job->n_stream;
    /* ggml splits the KV view only for one query of one stream */
    const bool no_split = job->n_stream > 1;
    const int64_t i0 = forward_chunk_start(total, chunk, n_chunks), i1 = forward_chunk_start(total, chunk + 1, n_chunks);
    float *scratch = f->attn_buf + (size_t)ith * f->attn_floats;
    attn_scratch s;
    attn_scratch_init(&s, scratch, f->attn_half + (size_t)ith * f->attn_halfs, hd, f->p.n_ctx);
    for (int64_t ii = i0; ii < i1; ii++) {
        const int64_t sidx = ii / plan.n_items, i = ii % plan.n_items;
        const int row0 = (int)sidx * job->n_tok;
        const int32_t stream = job->ub ? job->ub->seq[row0] : 0;
        const int32_t start_pos = job->ub ? job->ub->pos[row0] : job->start_pos;
        const int t0 = (int)(i / items_per_block) * plan.rows;
        const int h = (int)(i % items_per_block) * plan.heads;
        const attn_kv kv = layer_kv(f, job->layer, h, stream);
        const float *q = f->buf[FWD_Q] + (size_t)(row0 + t0) * qs + (size_t)h * hd;
        float *out = f->buf[FWD_ATT] + (size_t)(row0 + t0) * os + (size_t)h * hd;
        const int32_t pos = start_pos + t0 - past; /* the last key it sees */
        const int rows = job->n_tok - t0 < plan.rows ? job->n_tok - t0 : plan.rows;
        switch (plan.mode) {
        case ATTN_TILED:
            attn_tile(&kv, q, qs, plan.heads, rows, pos, &s, out, os);
            break;
        case ATTN_GROUP:
            if (job->n_tok == 1 && !no_split && attn_kv_view(pos) >= 512)
                attn_group_split(&kv, q, plan.heads, pos + 1, attn_kv_view(pos), f->n_threads, scratch, out);
            else
                attn_group_row(&kv, q, plan.heads, pos + 1, scratch, out);
            break;
        case ATTN_QUANT: {
            attn_query qv[ATTN_GROUP_MAX];
            int nq = 0;
            for (int r = 0; r < rows; r++)
                for (int g = 0; g < plan.heads; g++) {
                    const int32_t n_kv = pos + r + 1; /* causal, and within the window */
                    qv[nq].q = q + (size_t)r * qs + (size_t)g * hd;
                    qv[nq].out = out + (size_t)r * os + (size_t)g * hd;
                    qv[nq].lo = window > 0 && n_kv > window ? n_kv - window : 0;
                    qv[nq].hi = n_kv;
                    nq++;
                }
            attn_quant_queries(&kv, qv, nq, scratch);
            break;
        }
        case ATTN_GENERIC:
            attn_rows_generic(&kv, q, plan.heads, pos + 1, &s, out);
            break;
        case ATTN_ONE:
            if (job->n_tok == 1 && !no_split && attn_kv_view(pos) >= 512)
                attn_row_split(&kv, q, pos + 1, attn_kv_view(pos), f->n_threads, &s, out);
            else
                attn_row(&kv, q, pos + 1, &s, out); /* causal: this token and those before it */
            break;
        }
    }
}

/* One token on the group kernel past the point where ggml splits its
 * keys (attn_kv_view(pos) >= 512): ggml's n_threads chunks, each for a
 * block of query heads, on any thread, then each head's chunks merged in
 * their order. A work item per block and chunk, so that many threads and
 * few KV heads keep the heads of a KV head together (one item per query
 * head took the grouped kernel down to one head at 16 threads). */
struct split_job {
    forward_ctx *f;
    uint32_t layer;
    int hb;         /* query heads per block (of one KV head) */
    int32_t pos;    /* the last key the query sees */
    int32_t stream; /* its cache stream */
};

static void split_part_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    const struct split_job *job = arg;
    forward_ctx *f = job->f;
    const int hd = (int)forward_hd(f, job->layer), n_split = f->n_threads;
    const int64_t total = (int64_t)(f->hp.n_head / job->hb) * n_split;
    const int64_t i0 = forward_chunk_start(total, chunk, n_chunks), i1 = forward_chunk_start(total, chunk + 1, n_chunks);
    float *scratch = f->attn_buf + (size_t)ith * f->attn_floats;
    for (int64_t ii = i0; ii < i1; ii++) {
        const int h = (int)(ii / n_split) * job->hb, c = (int)(ii % n_split);
        const attn_kv kv = layer_kv(f, job->layer, h, job->stream);
        attn_group_part(&kv, f->buf[FWD_Q] + (size_t)h * hd, job->hb, job->pos + 1, attn_kv_view(job->pos), n_split,
                        c, scratch, f->attn_parts + (size_t)ii * attn_group_part_floats(job->hb, hd));
    }
}

static void split_merge_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct split_job *job = arg;
    forward_ctx *f = job->f;
    const int hd = (int)forward_hd(f, job->layer), n_split = f->n_threads;
    const int64_t total = f->hp.n_head;
    const int64_t i0 = forward_chunk_start(total, chunk, n_chunks), i1 = forward_chunk_start(total, chunk + 1, n_chunks);
    for (int64_t h = i0; h < i1; h++) {
        const int64_t b = h / job->hb;
        attn_group_merge(job->hb, hd, n_split,
                         f->attn_parts + (size_t)b * n_split * attn_group_part_floats(job->hb, hd), (int)(h % job->hb),
                         f->buf[FWD_ATT] + (size_t)h * hd);
    }
}

/* forward_decode's batch (f->ub): each stream's rows are their own query
 * batch (ggml's flash attention takes a stream's rows as its queries,
 * ne[1]) against that stream's cache, all streams in one job. */
static void run_attention(forward_ctx *f, uint32_t il, int n, int32_t start_pos)
{
    const int n_stream = f->ub ? f->ub->n_stream : 1;
    const int per = n / n_stream;
    struct attn_job job = {f, il, per, start_pos, f->ub, n_stream};
    const int64_t items = attn_plan(f, per, il).n_items * n_stream;
    const int32_t pos = (f->ub ? f->ub->pos[0] : start_pos) - (f->kv_shared ? 1 : 0);
    if (n_stream == 1 && per == 1 && f->attn_parts && attn_plan(f, 1, il).mode == ATTN_GROUP &&
        attn_kv_view(pos) >= 512) {
        int hb = forward_group(f, il);
        while (hb > ATTN_GROUP_MAX)
            hb = hb % 2 == 0 ? hb / 2 : 1;
        struct split_job sj = {f, il, hb, pos, f->ub ? f->ub->seq[0] : 0};
        const int64_t work = (int64_t)f->hp.n_head * (pos + 1) * forward_hd(f, il);
        threadpool_run(f->tp, forward_n_chunks(f, (int64_t)(f->hp.n_head / hb) * f->n_threads, work),
                       split_part_worker, &sj);
        threadpool_run(f->tp, forward_n_chunks(f, f->hp.n_head, (int64_t)f->hp.n_head * f->n_threads * forward_hd(f, il)),
                       split_merge_worker, &sj);
        return;
    }
    int32_t last = 0; /* the longest stream's end, for the work estimate */
    for (int s = 0; s < n_stream; s++) {
        const int32_t e = (f->ub ? f->ub->pos[s * per] : start_pos) + per;
        last = e > last ? e : last;
    }
    threadpool_run(f->tp, forward_n_chunks(f, items, (int64_t)n * f->hp.n_head * last * forward_hd(f, il)), attn_worker,
                   &job);
}

/* ---- one batch ------------------------------------------------------------- */

/* Evaluates n <= n_batch tokens at start_pos: the graph's steps in order.
 * Writes logits for rows [out_first, n) into out (n_vocab floats each). */
void forward_eval_batch(forward_ctx *f, const fwd_graph *gr, const int32_t *tokens, int n, int32_t start_pos,
                        float *out, int out_first)
{
    f->tokens = tokens;
    f->start_pos = start_pos;
    f->buf[FWD_LOGITS] = out;
    const gguf_ctx *g = model_get_gguf(f->m);
    const gguf_tensor *t0 = gguf_tensor_at(g, 0);
    for (int i = 0; i < gr->n_steps; i++) {
        const struct fwd_step *st = &gr->steps[i];
        switch (st->kind) {
        case STEP_ROWS: forward_run_rows(f, st, n); break;
        case STEP_MATMUL: {
            const uint8_t *pk[3];
            float *outs[3];
            int64_t strides[3];
            for (int s = 0; s < st->n_seg; s++) {
                pk[s] = f->packed_of[st->w[s] - t0];
                outs[s] = f->buf[st->out[s]];
                strides[s] = f->graph.width[st->out[s]];
            }
            blas_ctx *blas = f->blas;
            if (st->no_blas)
                f->blas = NULL;
            forward_matmul(f, f->buf[st->in], f->graph.width[st->in], n, st->w[0]->ne[0], st->n_seg, st->w, pk, outs,
                           strides);
            f->blas = blas;
            break;
        }
        case STEP_ATTN: run_attention(f, st->il, n, start_pos); break;
        case STEP_MOE: forward_run_moe(f, gr, st, n); break;
        case STEP_DELTANET: forward_deltanet_run(f, st->il, n); break;
        case STEP_KEEP_OUT:
            if (f->h_out && !f->w->g4assist_input) /* every row's h_nextn: the last block's residual through the output norm */
                for (int t = 0; t < n; t++)
                    forward_rmsnorm_row(f->h_out + (size_t)(f->row0 + t) * f->hp.n_embd,
                                        f->buf[FWD_X] + (size_t)t * f->hp.n_embd, f->w->output_norm->data,
                                        f->hp.n_embd, f->hp.rms_eps);
            if (f->ub && f->ub->n_out < n) {
                /* forward_decode: its rows with logits, in order */
                const int64_t E = f->hp.n_embd;
                for (int k = 0; k < f->ub->n_out; k++) {
                    const int r = f->ub->out_rows[k];
                    memmove(f->buf[FWD_X] + (size_t)k * E, f->buf[FWD_X] + (size_t)r * E, (size_t)E * sizeof(float));
                    memmove(f->buf[FWD_XB] + (size_t)k * E, f->buf[FWD_XB] + (size_t)r * E, (size_t)E * sizeof(float));
                }
                n = f->ub->n_out;
                if (n == 0)
                    return;
            } else if (out_first > 0) {
                /* Past the last attention, only the rows with logits
                 * matter: the others' FFN would be thrown away. llama.cpp
                 * drops them here too (inp_out_ids), so its kernels then
                 * see n_out rows, which decides their rounding. */
                const int64_t E = f->hp.n_embd;
                n -= out_first;
                memmove(f->buf[FWD_X], f->buf[FWD_X] + (size_t)out_first * E, (size_t)n * E * sizeof(float));
                memmove(f->buf[FWD_XB], f->buf[FWD_XB] + (size_t)out_first * E, (size_t)n * E * sizeof(float));
                out_first = 0;
                if (n == 0)
                    return;
            }
            break;
        case STEP_LENS:
            if (f->lens_fn)
                f->lens_fn(f->lens_user, (int32_t)st->il + 1, f->row0, n, out);
            break;
        }
    }
}

int forward_eval(forward_ctx *f, const int32_t *tokens, int32_t n, int32_t start_pos, float *logits,
                 bool all_logits, char *err, size_t errlen)
{
    return forward_eval_h(f, tokens, NULL, n, start_pos, logits, all_logits, NULL, err, errlen);
}

int forward_eval_h(forward_ctx *f, const int32_t *tokens, const float *h_in, int32_t n, int32_t start_pos,
                   float *logits, bool all_logits, float *h_out, char *err, size_t errlen)
{
    if ((f->w->mtp_input || f->w->g4assist_input) && !h_in) {
        snprintf(err, errlen, "an MTP block needs the hidden state of every token");
        return -1;
    }
    if (f->kv_shared && n != 1) { /* its queries sit past the cache they read: one at a time */
        snprintf(err, errlen, "a context on a shared cache evaluates one token at a time, not %d", n);
        return -1;
    }
    f->h_in = h_in;
    f->h_out = h_out;
    const int rc = forward_run(f, &f->graph, tokens, n, start_pos, logits, all_logits, err, errlen);
    f->h_in = NULL;
    f->h_out = NULL;
    return rc;
}

int forward_run(forward_ctx *f, const fwd_graph *g, const int32_t *tokens, int32_t n, int32_t start_pos,
                float *logits, bool all_logits, char *err, size_t errlen)
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
    if (forward_rs_check(f, g->n_layer, start_pos, err, errlen) != 0)
        return -1;
    forward_rs_snap_begin(f, g->n_layer == f->hp.n_layer ? n : INT32_MAX, start_pos);
    const int32_t nb = (int32_t)f->p.n_batch;
    for (int32_t done = 0; done < n;) {
        const int32_t cnt = n - done < nb ? n - done : nb;
        const bool last = done + cnt == n;
        float *out = NULL;
        int out_first = cnt;
        if (all_logits) {
            out = logits + (size_t)done * f->hp.n_vocab;
            out_first = 0;
        } else if (last && logits) {
            out = logits;
            out_first = cnt - 1;
        }
        f->row0 = done;
        forward_eval_batch(f, g, tokens + done, cnt, start_pos + done, out, out_first);
        done += cnt;
        f->rs_pos = start_pos + done; /* the recurrent state has consumed these, even if cancelled next */
        if (f->progress && !f->progress(f->progress_user, done, n)) {
            forward_rs_snap_end(f, 0);
            snprintf(err, errlen, "evaluation cancelled after %d of %d tokens", done, n);
            return -1;
        }
    }
    forward_rs_snap_end(f, n);
    return 0;
}
