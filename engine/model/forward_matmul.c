/* Matmuls on the thread pool: converts the activations to each weight's
 * dot type (in parallel over tokens), then cuts the weight rows into
 * chunks and runs each chunk through the kernel whose float order the
 * reference uses for that weight and batch (packed, repacked, tinyBLAS,
 * or the block kernels of quant_batch.h). */
#include <string.h>

#include "model/forward_internal.h"
#include "kernels/blas.h"
#include "kernels/forward_math.h"
#include "kernels/forward_packed.h"
#include "kernels/forward_repack.h"
#include "kernels/gemm_iq.h"
#include "kernels/gemm_kq5.h"
#include "kernels/gemm_kq6.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_iq4.h"

/* One matmul of a job: out[t*out_stride + r] = W[r] . act[t] for r < rows. */
struct mm_seg {
    const gguf_tensor *w;
    const uint8_t *packed; /* forward_packed.h copy, or NULL */
    const uint8_t *act;
    size_t act_stride;       /* bytes between activation rows */
    const uint8_t *act_extra; /* packed_act_prepare's side data of act, when the packed kernel wants it; for
                                an IQ weight (not packed) gemm_iq_prep_tokens' bytes, when its GEMM shares them */
    float *out;
    int64_t out_stride;
    int64_t rows;
};

struct mm_job {
    struct mm_seg seg[3];
    int n_seg;
    int64_t total_rows;
    int64_t row_align; /* chunks start on multiples of this */
    int n_tok;
    int64_t n_in;
};

/* First row of a chunk. With packed weights a multiple of PACKED_ROWS, so
 * that a packed group is not split between two threads (results do not
 * depend on the split, only the speed does). */
static int64_t chunk_row(const struct mm_job *job, int64_t chunk, int64_t n_chunks)
{
    const int64_t r = forward_chunk_start(job->total_rows, chunk, n_chunks);
    return chunk >= n_chunks ? job->total_rows : r - r % job->row_align;
}

bool fwd_gemm_vec_dot(const gguf_tensor *w, int64_t n, int64_t lo, int64_t hi, const uint8_t *act, size_t stride,
                      const uint8_t *iq_tok, int n_tok, float *out, int64_t out_stride)
{
    const size_t rs = tensor_row_size((enum tensor_type)w->type, n);
    if (gemm_iq_applies(w, n_tok))
        gemm_iq_matmul(w, n, lo, hi, act, stride, iq_tok, n_tok, out, out_stride);
    else if (gemm_kq5_applies(w, n_tok))
        gemm_kq5_rows(n, w->data, rs, lo, hi, act, stride, n_tok, out, out_stride);
    else if (gemm_kq6_applies(w, n_tok))
        gemm_kq6_rows(n, w->data, rs, lo, hi, act, stride, n_tok, out, out_stride);
    else
        return false;
    return true;
}

static void mm_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct mm_job *job = arg;
    const int64_t r0 = chunk_row(job, chunk, n_chunks), r1 = chunk_row(job, chunk + 1, n_chunks);
    int64_t base = 0;
    for (int s = 0; s < job->n_seg; s++) {
        const struct mm_seg *sg = &job->seg[s];
        const int64_t lo = r0 > base ? r0 - base : 0;
        const int64_t hi = r1 - base < sg->rows ? r1 - base : sg->rows;
        base += sg->rows;
        if (lo >= hi)
            continue;
        const enum tensor_type type = (enum tensor_type)sg->w->type;
        const size_t rb = tensor_row_size(type, job->n_in);
        const uint8_t *wd = sg->w->data;
        if (sg->packed) {
            packed_matmul(sg->w, sg->packed, lo, hi, sg->act, sg->act_stride, sg->act_extra, job->n_tok, sg->out,
                          sg->out_stride);
            continue;
        }
        if (repack_applies(sg->w)) {
            repack_matmul(sg->w, job->n_in, lo, hi, sg->act, sg->act_stride, job->n_tok, sg->out, sg->out_stride);
            continue;
        }
        if (quant_iq4_nl_batch_applies(sg->w, job->n_tok)) {
            quant_iq4_nl_batch_matmul(sg->w, job->n_in, lo, hi, sg->act, sg->act_stride, job->n_tok, sg->out,
                                      sg->out_stride);
            continue;
        }
        if (refk_applies(sg->w)) {
            refk_matmul(sg->w, job->n_in, lo, hi, sg->act, sg->act_stride, job->n_tok, sg->out, sg->out_stride);
            continue;
        }
        if (refbf16_applies(sg->w, job->n_tok)) {
            refbf16_matmul(sg->w, job->n_in, lo, hi, sg->act, sg->act_stride, job->n_tok, sg->out, sg->out_stride);
            continue;
        }
        if (reffloat_applies(sg->w)) {
            reffloat_matmul(sg->w, job->n_in, lo, hi, sg->act, sg->act_stride, job->n_tok, sg->out, sg->out_stride);
            continue;
        }
        if (fwd_gemm_vec_dot(sg->w, job->n_in, lo, hi, sg->act, sg->act_stride, sg->act_extra, job->n_tok, sg->out,
                             sg->out_stride))
            continue;
        if (job->n_tok == 1) {
            tensor_matvec(type, job->n_in, wd + (size_t)lo * rb, hi - lo, sg->act, sg->out + lo);
            continue;
        }
        /* Each weight tile is reused across every token's row. */
        tensor_matmul(type, job->n_in, wd + (size_t)lo * rb, hi - lo, sg->act, job->n_tok, sg->act_stride,
                      sg->out + lo, sg->out_stride);
    }
}

/* x rounded to the nearest half (ties to even), back in floats. */
static void round_f16_row(const float *x, float *y, int64_t n)
{
    int64_t i = 0;
#ifdef FWD_F16C
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
#endif
    for (; i < n; i++)
        y[i] = tensor_fp16_to_fp32(tensor_fp32_to_fp16(x[i]));
}

/* Side data of n_tok activation rows for a weight's kernel, into dst. */
typedef void (*side_prep_fn)(const gguf_tensor *w, const uint8_t *act, size_t act_stride, int n_tok, uint8_t *dst);

/* The activation rows of one matmul job, converted to each distinct dot
 * type its weights need, plus the side data a packed weight wants
 * (packed_act_prepare: one buffer per dot type and weight type). F32 uses x directly. F16 activations are stored as floats,
 * F16-rounded (exact), so that the kernels convert only the weights. */
struct prep_job {
    const float *x;
    int64_t n_in, x_stride;
    int n_tok, n_dots;
    enum tensor_type dot[3];
    uint8_t *act[3];
    size_t stride[3];
    int n_extra;
    int extra_dot[3];                /* index into dot / act */
    const gguf_tensor *extra_w[3];   /* a weight of the type the side data is for */
    side_prep_fn extra_prep[3];      /* what makes it: packed_act_prepare or gemm_iq_prep_tokens */
    size_t extra_bytes[3];           /* per token */
    uint8_t *extra[3];
};

static void prep_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)ith;
    const struct prep_job *j = arg;
    const int t0 = (int)forward_chunk_start(j->n_tok, chunk, n_chunks), t1 = (int)forward_chunk_start(j->n_tok, chunk + 1, n_chunks);
    for (int d = 0; d < j->n_dots; d++)
        for (int t = t0; t < t1; t++) {
            const float *x = j->x + (size_t)t * j->x_stride;
            uint8_t *a = j->act[d] + (size_t)t * j->stride[d];
            if (j->dot[d] == TENSOR_TYPE_F16)
                round_f16_row(x, (float *)(void *)a, j->n_in);
            else if (j->dot[d] != TENSOR_TYPE_F32)
                tensor_quantize_row(j->dot[d], x, a, j->n_in);
        }
    for (int e = 0; e < j->n_extra; e++) {
        const int d = j->extra_dot[e];
        j->extra_prep[e](j->extra_w[e], j->act[d] + (size_t)t0 * j->stride[d], j->stride[d], t1 - t0,
                         j->extra[e] + (size_t)t0 * j->extra_bytes[e]);
    }
}

void forward_matmul(forward_ctx *f, const float *x, int64_t x_stride, int n_tok, int64_t n_in, int n_seg,
                    const gguf_tensor *const *ws, const uint8_t *const *packed, float *const *outs,
                    const int64_t *out_strides)
{
    /* ---- OpenBLAS (kernels/blas.h) takes the weights it is faster on; the
     * others go on below as if they were the whole job ---- */
    const gguf_tensor *rest_w[3];
    const uint8_t *rest_p[3];
    float *rest_o[3];
    int64_t rest_s[3];
    if (f->blas && x_stride == n_in) { /* blas_matmul reads packed rows */
        struct blas_seg bs[3];
        int n_blas = 0, n_rest = 0;
        for (int s = 0; s < n_seg; s++) {
            /* OpenBLAS reads the rows n_in apart */
            if (!packed[s] && x_stride == n_in && blas_wants(blas_mode_of(f->blas), ws[s], n_tok)) {
                bs[n_blas++] = (struct blas_seg){ws[s], outs[s], out_strides[s]};
                continue;
            }
            rest_w[n_rest] = ws[s];
            rest_p[n_rest] = packed[s];
            rest_o[n_rest] = outs[s];
            rest_s[n_rest++] = out_strides[s];
        }
        if (n_blas > 0) {
            blas_matmul(f->blas, f->tp, x, n_tok, n_in, n_blas, bs);
            if (n_rest == 0)
                return;
            n_seg = n_rest;
            ws = rest_w;
            packed = rest_p;
            outs = rest_o;
            out_strides = rest_s;
        }
    }
    /* ---- end of OpenBLAS ---- */
    struct prep_job pj;
    memset(&pj, 0, sizeof pj);
    pj.x = x;
    pj.n_in = n_in;
    pj.x_stride = x_stride;
    pj.n_tok = n_tok;
    int seg_dot[3];
    const uint8_t *seg_extra[3];
    bool any = false;
    for (int s = 0; s < n_seg; s++) {
        const enum tensor_type dot = tensor_dot_type((enum tensor_type)ws[s]->type);
        int d = 0;
        while (d < pj.n_dots && pj.dot[d] != dot)
            d++;
        if (d == pj.n_dots) {
            pj.dot[d] = dot;
            pj.act[d] = dot == TENSOR_TYPE_F32 ? (uint8_t *)(uintptr_t)x : f->act[d];
            pj.stride[d] = dot == TENSOR_TYPE_F32   ? (size_t)x_stride * sizeof(float)
                           : dot == TENSOR_TYPE_F16 ? (size_t)n_in * sizeof(float)
                                                    : tensor_row_size(dot, n_in);
            any |= dot != TENSOR_TYPE_F32;
            pj.n_dots++;
        }
        seg_dot[s] = d;
        seg_extra[s] = NULL;
        /* side data made once for every thread, per weight type: a packed
         * weight's, or the tokens an IQ GEMM prepares (each thread made
         * them all itself: 2 % of a native IQ3_S prompt) */
        const size_t sb = packed[s] ? packed_act_bytes(ws[s]) : gemm_iq_tok_bytes(ws[s], n_tok);
        const side_prep_fn prep = packed[s] ? packed_act_prepare : gemm_iq_prep_tokens;
        if (sb > 0) {
            int e = 0;
            while (e < pj.n_extra &&
                   (pj.extra_dot[e] != d || pj.extra_prep[e] != prep || pj.extra_w[e]->type != ws[s]->type))
                e++;
            if (e == pj.n_extra) {
                pj.extra_dot[e] = d;
                pj.extra_w[e] = ws[s];
                pj.extra_prep[e] = prep;
                pj.extra_bytes[e] = sb;
                pj.extra[e] = f->act_sum[e];
                pj.n_extra++;
                any = true;
            }
            seg_extra[s] = pj.extra[e];
        }
    }
    if (any)
        threadpool_run(f->tp, forward_n_chunks(f, n_tok, (int64_t)n_tok * n_in * PREP_COST), prep_worker, &pj);

    struct mm_job job;
    memset(&job, 0, sizeof job);
    job.n_seg = n_seg;
    job.n_tok = n_tok;
    job.n_in = n_in;
    /* Chunks of whole 4-row tiles: a chunk boundary inside one sends its
     * rows through the one-row kernels (Q8_0's dot4 ran at half the tile's
     * speed per pair and took 5 % of tiny-spm-q8_0's prompt). */
    job.row_align = 4;
    for (int s = 0; s < n_seg; s++) {
        const int d = seg_dot[s];
        job.seg[s].act_extra = seg_extra[s];
        job.seg[s].w = ws[s];
        job.seg[s].packed = packed[s];
        if (packed[s])
            job.row_align = PACKED_ROWS;
        job.seg[s].act = pj.act[d];
        job.seg[s].act_stride = pj.stride[d];
        job.seg[s].out = outs[s];
        job.seg[s].out_stride = out_strides[s];
        job.seg[s].rows = ws[s]->ne[1];
        job.total_rows += ws[s]->ne[1];
    }
    threadpool_run(f->tp, forward_n_chunks(f, job.total_rows, job.total_rows * n_in * n_tok), mm_worker, &job);
}

