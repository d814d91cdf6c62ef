/* Microbenchmark of a prompt's tiled attention over an F16 cache
 * (attn_tile: the reference's flash-attention tiles, 64 queries by 64 keys)
 * at depth: one thread, one KV head with `heads` query heads, 64 queries
 * at positions depth .. depth + 63, random keys, values and queries.
 * Prints ns per query x key and the FMA rate it implies (2 FMAs a head
 * element: K.Q and P.V), CPU time, best of 5.
 * With "one" as the fifth argument: generation's attention instead, one
 * query per head at position depth over keys 0..depth (attn_group_row),
 * ns per key for the whole group.
 * With "cold" as the sixth: K and V flushed from the caches before each
 * call (its own time taken off), as generation meets them at depth.
 * Not part of make test. Usage: bench_attn [hd] [heads] [depth] [seconds] [one [cold]] */
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
/* the cache's K and V rows out of every cache level, as generation finds
 * them after a token's weights streamed through */
static void flush_kv(void *arg)
{
    const struct call *c = arg;
    const size_t bytes = sizeof(uint16_t) * (size_t)(c->depth + 1) * c->hd;
    for (size_t i = 0; i < bytes; i += 64) {
        _mm_clflush((const char *)c->kv->k + i);
        _mm_clflush((const char *)c->kv->v + i);
    }
    _mm_mfence();
}
static void run_group_cold(void *arg)
{
    flush_kv(arg);
    run_group(arg);
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
    if (argc > 5 && strcmp(argv[5], "one") == 0) {
        if (!attn_group_ok(&kv) || heads > ATTN_GROUP_MAX) {
            fprintf(stderr, "bench_attn: no group kernel for this build, hd or head count\n");
            rc = 2;
        } else {
            const bool cold = argc > 6 && strcmp(argv[6], "cold") == 0;
            double best = 1e9 * bench_best(cold ? run_group_cold : run_group, &c, secs) / (depth + 1);
            if (cold) /* less the flush's own time */
                best -= 1e9 * bench_best(flush_kv, &c, secs) / (depth + 1);
            printf("hd %d, %d query heads, one query each at depth %d, one thread: %.3f ns per key (all heads), "
                   "%.2f ns per head x key (best of 5); out[0] %g\n",
                   hd, heads, (int)depth, best, best / heads, (double)out[0]);
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
