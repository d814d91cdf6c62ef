/* Microbenchmark of a prompt's tiled attention over an F16 cache
 * (attn_tile: the reference's flash-attention tiles, 64 queries by 64 keys)
 * at depth: one thread, one KV head with `heads` query heads, 64 queries
 * at positions depth .. depth + 63, random keys, values and queries.
 * Prints ns per query x key and the FMA rate it implies (2 FMAs a head
 * element: K.Q and P.V), CPU time, best of 5.
 * With "one" as the fifth argument: generation's attention instead, one
 * query per head at position depth over keys 0..depth (attn_group_row),
 * ns per key for the whole group.
 * With "oneq": the same over a Q8_0 cache (attn_quant_queries).
 * With "cold" as the sixth: K and V flushed from the caches before each
 * call (its own time taken off), as generation meets them at depth.
 * Not part of make test. Usage: bench_attn [hd] [heads] [depth] [seconds] [one|oneq [cold]] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>

#include "gguf/tensor.h"
#include "model/forward_attn.h"
#include "bench_util.h"

/* one call of the kernel under test, for bench_best */
struct call {
    const attn_kv *kv;
    const float *q;
    float *out, *buf;
    attn_scratch *s;
    int hd, heads, rows;
    int32_t depth;
};
static void run_tile(void *arg)
{
    const struct call *c = arg;
    attn_tile(c->kv, c->q, (int64_t)c->heads * c->hd, c->heads, c->rows, c->depth, c->s, c->out,
              (int64_t)c->heads * c->hd);
}
static void run_group(void *arg)
{
    const struct call *c = arg;
    attn_group_row(c->kv, c->q, c->heads, c->depth + 1, c->buf, c->out);
}
/* generation over a Q8_0 cache (attn_quant_queries): one query a head */
struct qcall {
    const attn_kv *kv;
    const attn_query *qs;
    int nq;
    float *buf;
};
static void run_quant(void *arg)
{
    const struct qcall *c = arg;
    attn_quant_queries(c->kv, c->qs, c->nq, c->buf);
}

/* A call with its cache's K and V bytes out of every cache level first, as
 * generation finds them after a token's weights streamed through */
struct cold {
    void (*run)(void *);
    void *arg;
    const void *k, *v;
    size_t bytes;
};
static void flush_kv(void *arg)
{
    const struct cold *c = arg;
    for (size_t i = 0; i < c->bytes; i += 64) {
        _mm_clflush((const char *)c->k + i);
        _mm_clflush((const char *)c->v + i);
    }
    _mm_mfence();
}
static void run_cold(void *arg)
{
    const struct cold *c = arg;
    flush_kv(arg);
    c->run(c->arg);
}

/* ns a key of run(arg) over depth + 1 keys, best of 5; cold: K and V
 * (bytes of each) flushed before each call, the flush's own time taken off */
static double ns_per_key(void (*run)(void *), void *arg, bool cold, const void *k, const void *v, size_t bytes,
                         int32_t depth, double secs)
{
    struct cold c = {run, arg, k, v, bytes};
    double best = 1e9 * (cold ? bench_best(run_cold, &c, secs) : bench_best(run, arg, secs)) / (depth + 1);
    if (cold)
        best -= 1e9 * bench_best(flush_kv, &c, secs) / (depth + 1);
    return best;
}

int main(int argc, char **argv)
{
    const int hd = argc > 1 ? atoi(argv[1]) : 128;
    const int heads = argc > 2 ? atoi(argv[2]) : 8;
    const int32_t depth = argc > 3 ? atoi(argv[3]) : 8192;
    const double secs = argc > 4 ? atof(argv[4]) : 2.0;
    enum { ROWS = ATTN_TILE };
    if (hd < 16 || hd > 512 || hd % 16 != 0 || heads < 1 || heads > 64 || depth < 0 || depth > (1 << 20)) {
        fprintf(stderr, "bench_attn: hd a multiple of 16 in 16..512, heads 1..64, depth 0..1048576\n");
        return 2;
    }
    const uint32_t n_ctx = (uint32_t)depth + ROWS;
    uint16_t *k = malloc(sizeof(uint16_t) * (size_t)n_ctx * hd),
             *v = malloc(sizeof(uint16_t) * (size_t)n_ctx * hd);
    float *q = malloc(sizeof(float) * (size_t)ROWS * heads * hd),
          *out = malloc(sizeof(float) * (size_t)ROWS * heads * hd);
    /* the tiled kernel's scratch, or the group kernel's where larger */
    size_t floats = attn_scratch_floats(hd, n_ctx, heads);
    if (attn_group_scratch_floats(hd) > floats)
        floats = attn_group_scratch_floats(hd);
    float *buf = aligned_alloc(64, (sizeof(float) * floats + 63) / 64 * 64);
    uint16_t *half = malloc(sizeof(uint16_t) * 2 * (size_t)hd);
    if (!k || !v || !q || !out || !buf || !half) {
        fprintf(stderr, "bench_attn: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < (size_t)n_ctx * hd; i++) {
        k[i] = tensor_fp32_to_fp16(rndf());
        v[i] = tensor_fp32_to_fp16(rndf());
    }
    for (size_t i = 0; i < (size_t)ROWS * heads * hd; i++)
        q[i] = rndf();
    const attn_kv kv = {
        .k = k, .v = v, .stride = hd, .f16 = true, .hd = hd, .scale = 1.0f / sqrtf((float)hd)};
    attn_scratch s;
    attn_scratch_init(&s, buf, half, hd, n_ctx);
    struct call c = {&kv, q, out, buf, &s, hd, heads, ROWS, depth};
    int rc = 0;
    const bool cold = argc > 6 && strcmp(argv[6], "cold") == 0;
    if (argc > 5 && strcmp(argv[5], "oneq") == 0) {
        /* the same keys and values as Q8_0 rows */
        const size_t row = (size_t)hd / 32 * 34, bytes = row * (size_t)(depth + 1);
        uint8_t *kq = malloc(row * n_ctx), *vq = malloc(row * n_ctx);
        float *src = malloc(sizeof(float) * (size_t)hd);
        attn_query qs[64];
        const size_t qfloats = attn_quant_scratch_floats(hd);
        float *qbuf = aligned_alloc(64, (sizeof(float) * qfloats + 63) / 64 * 64);
        if (!kq || !vq || !src || !qbuf || heads > ATTN_GROUP_MAX) {
            fprintf(stderr, "bench_attn: out of memory, or more heads than the kernel takes\n");
            return 1;
        }
        for (uint32_t r = 0; r < n_ctx; r++) {
            for (int i = 0; i < hd; i++)
                src[i] = tensor_fp16_to_fp32(k[(size_t)r * hd + i]);
            tensor_quantize_row(TENSOR_TYPE_Q8_0, src, kq + row * r, hd);
            for (int i = 0; i < hd; i++)
                src[i] = tensor_fp16_to_fp32(v[(size_t)r * hd + i]);
            tensor_quantize_row(TENSOR_TYPE_Q8_0, src, vq + row * r, hd);
        }
        const attn_kv kvq = {.k = kq, .v = vq, .generic = true, .k_type = TENSOR_TYPE_Q8_0,
                             .v_type = TENSOR_TYPE_Q8_0, .k_row = row, .v_row = row, .hd = hd,
                             .scale = 1.0f / sqrtf((float)hd)};
        for (int h = 0; h < heads; h++)
            qs[h] = (attn_query){q + (size_t)h * hd, out + (size_t)h * hd, 0, depth + 1};
        if (!attn_quant_ok(&kvq)) {
            fprintf(stderr, "bench_attn: no quantized-cache kernel for this build or hd\n");
            rc = 2;
        } else {
            struct qcall qc = {&kvq, qs, heads, qbuf};
            const double best = ns_per_key(run_quant, &qc, cold, kq, vq, bytes, depth, secs);
            printf("hd %d, %d query heads, one query each at depth %d, Q8_0 cache, one thread: %.3f ns per key "
                   "(all heads), %.2f ns per head x key (best of 5)%s; out[0] %g\n",
                   hd, heads, (int)depth, best, best / heads, cold ? ", cold" : "", (double)out[0]);
        }
        free(kq);
        free(vq);
        free(src);
        free(qbuf);
    } else if (argc > 5 && strcmp(argv[5], "one") == 0) {
        if (!attn_group_ok(&kv) || heads > ATTN_GROUP_MAX) {
            fprintf(stderr, "bench_attn: no group kernel for this build, hd or head count\n");
            rc = 2;
        } else {
            const double best =
                ns_per_key(run_group, &c, cold, k, v, sizeof(uint16_t) * (size_t)(depth + 1) * hd, depth, secs);
            printf("hd %d, %d query heads, one query each at depth %d, one thread: %.3f ns per key (all heads), "
                   "%.2f ns per head x key (best of 5)%s; out[0] %g\n",
                   hd, heads, (int)depth, best, best / heads, cold ? ", cold" : "", (double)out[0]);
        }
    } else {
        const double pairs = (double)heads * ROWS * ((double)depth + (ROWS + 1) / 2.0);
        const double best = 1e9 * bench_best(run_tile, &c, secs) / pairs;
        printf("hd %d, %d query heads, 64 queries at depth %d, one thread: %.3f ns per query x key, %.1f GFMA/s "
               "(best of 5); out[0] %g\n",
               hd, heads, (int)depth, best, 2.0 * hd / best, (double)out[0]);
    }
    free(k);
    free(v);
    free(q);
    free(out);
    free(buf);
    free(half);
    return rc;
}
