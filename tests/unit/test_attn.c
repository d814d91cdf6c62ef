/* The three attention kernels (engine/model/forward_attn.c) on synthetic caches:
 * each must be softmax attention (against a double-precision computation),
 * causal, within the sliding window when there is one, and, for the tiled
 * one, independent of how queries are grouped into tiles. Bit-exactness against llama.cpp is checked by
 * tests/golden/logits.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/forward_math.h"
#include "model/forward_attn.h"
#include "gguf/tensor.h"

enum { N_CTX = 640, KV_HEADS = 2, WORK_FLOATS = 528 * 2 * 64 };

typedef struct {
    int hd;
    int64_t stride;
    uint16_t *k16, *v16;
    float *k32, *v32;
    float *buf;
    uint16_t *half;
    attn_scratch s;
    float *q, *a, *b; /* WORK_FLOATS each: queries and two outputs to compare */
} fixture;

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float rnd(void) { return (float)(test_xorshift64(&rng) >> 40) / (float)(1 << 24) * 2.0f - 1.0f; }

static void fixture_init(fixture *fx, int hd)
{
    fx->hd = hd;
    fx->stride = (int64_t)KV_HEADS * hd;
    const size_t n = (size_t)N_CTX * (size_t)fx->stride;
    fx->k16 = malloc(n * 2);
    fx->v16 = malloc(n * 2);
    fx->k32 = malloc(n * 4);
    fx->v32 = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        fx->k16[i] = tensor_fp32_to_fp16(rnd() * 2.0f);
        fx->v16[i] = tensor_fp32_to_fp16(rnd());
        fx->k32[i] = tensor_fp16_to_fp32(fx->k16[i]);
        fx->v32[i] = tensor_fp16_to_fp32(fx->v16[i]);
    }
    fx->buf = malloc(attn_scratch_floats(hd, N_CTX, KV_HEADS) * sizeof(float));
    fx->half = malloc((size_t)hd * 2 * sizeof(uint16_t));
    attn_scratch_init(&fx->s, fx->buf, fx->half, hd, N_CTX);
    fx->q = malloc(WORK_FLOATS * sizeof(float));
    fx->a = malloc(WORK_FLOATS * sizeof(float));
    fx->b = malloc(WORK_FLOATS * sizeof(float));
}

static void fixture_free(fixture *fx)
{
    free(fx->k16);
    free(fx->v16);
    free(fx->k32);
    free(fx->v32);
    free(fx->buf);
    free(fx->half);
    free(fx->q);
    free(fx->a);
    free(fx->b);
}

static attn_kv view(const fixture *fx, int head, bool f16)
{
    attn_kv kv = {
        .k = f16 ? (const void *)(fx->k16 + head * fx->hd) : (const void *)(fx->k32 + head * fx->hd),
        .v = f16 ? (const void *)(fx->v16 + head * fx->hd) : (const void *)(fx->v32 + head * fx->hd),
        .stride = fx->stride,
        .f16 = f16,
        .hd = fx->hd,
        .scale = 1.0f / sqrtf((float)fx->hd),
    };
    return kv;
}

/* softmax(q . K[0..n_kv) * scale) V in double. */
static void attn_exact(const fixture *fx, int head, const float *q, int32_t n_kv, double *out)
{
    const int hd = fx->hd;
    double *s = malloc(sizeof(double) * (size_t)n_kv), mx = -INFINITY, sum = 0.0;
    for (int32_t j = 0; j < n_kv; j++) {
        const float *k = fx->k32 + (int64_t)j * fx->stride + head * hd;
        double d = 0.0;
        for (int i = 0; i < hd; i++)
            d += (double)k[i] * q[i];
        s[j] = d / sqrt((double)hd);
        mx = s[j] > mx ? s[j] : mx;
    }
    for (int i = 0; i < hd; i++)
        out[i] = 0.0;
    for (int32_t j = 0; j < n_kv; j++) {
        const double p = exp(s[j] - mx);
        sum += p;
        const float *v = fx->v32 + (int64_t)j * fx->stride + head * hd;
        for (int i = 0; i < hd; i++)
            out[i] += p * v[i];
    }
    for (int i = 0; i < hd; i++)
        out[i] /= sum;
    free(s);
}

static void expect_close(const float *got, const double *want, int hd, double tol, const char *what, int32_t pos)
{
    for (int i = 0; i < hd; i++)
        if (!(fabs(got[i] - want[i]) <= tol))
            fail_msg("%s pos %d elem %d: %.7f, exact %.7f", what, pos, i, (double)got[i], want[i]);
}

/* Every kernel is softmax attention, for F16 and F32 caches and both head
 * sizes that take different K.Q paths (below 64, and 64 and up). */
static void test_kernels_are_attention(void **state)
{
    (void)state;
    const int hds[] = {32, 64, 80};
    for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++) {
        fixture fx;
        fixture_init(&fx, hds[h]);
        const int hd = fx.hd;
        float *q = fx.q, *out = fx.a;
        double *want = malloc(sizeof(double) * (size_t)hd);
        for (int f16 = 0; f16 <= 1; f16++) {
            const attn_kv kv = view(&fx, 1, f16);
            /* F16 accumulation of V in the one-chunk kernel costs about 1e-3 */
            const double tol = f16 ? 4e-3 : 1e-4;
            for (int i = 0; i < ATTN_TILE * hd; i++)
                q[i] = rnd() * 1.5f;
            const int32_t lens[] = {1, 2, 7, 64, 65, 300};
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                attn_exact(&fx, 1, q, lens[l], want);
                attn_row(&kv, q, lens[l], &fx.s, out);
                expect_close(out, want, hd, tol, "attn_row", lens[l] - 1);
            }
            /* a single query past position 256, the view cut into 1..3 chunks */
            for (int split = 1; split <= 3; split++) {
                const int32_t n_kv = 400;
                attn_exact(&fx, 1, q, n_kv, want);
                attn_row_split(&kv, q, n_kv, attn_kv_view(n_kv - 1), split, &fx.s, out);
                expect_close(out, want, hd, tol, "attn_row_split", n_kv - 1);
            }
            /* 64 queries at positions 100..163 (tiles 0-63, 64-127, 128-191) */
            if (hd % 16 == 0) {
                attn_tile(&kv, q, hd, 1, ATTN_TILE, 100, &fx.s, out, hd);
                for (int r = 0; r < ATTN_TILE; r++) {
                    attn_exact(&fx, 1, q + (size_t)r * hd, 100 + r + 1, want);
                    expect_close(out + (size_t)r * hd, want, hd, 1e-4, "attn_tile", 100 + r);
                }
            }
        }
        free(want);
        fixture_free(&fx);
    }
}

/* Keys and values after a query's position never reach it, bit for bit. */
static void test_causal(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, 64);
    const int hd = fx.hd;
    const attn_kv kv = view(&fx, 0, true);
    float *q = fx.q, *a = fx.a, *b = fx.b;
    for (int i = 0; i < ATTN_TILE * hd; i++)
        q[i] = rnd();
    attn_tile(&kv, q, hd, 1, ATTN_TILE, 30, &fx.s, a, hd);
    float r1[64], r2[64];
    attn_row_split(&kv, q, 300, 512, 2, &fx.s, r1);
    /* scribble over every cache row after the tile's last position (93) */
    for (int64_t i = 94 * fx.stride; i < (int64_t)N_CTX * fx.stride; i++) {
        fx.k16[i] = tensor_fp32_to_fp16(50.0f);
        fx.v16[i] = tensor_fp32_to_fp16(-50.0f);
    }
    attn_tile(&kv, q, hd, 1, ATTN_TILE, 30, &fx.s, b, hd);
    for (int r = 0; r < ATTN_TILE; r++)
        assert_memory_equal(a + r * hd, b + r * hd, sizeof(float) * (size_t)hd);
    /* the split query at position 299 sees rows up to 299: those changed it... */
    attn_row_split(&kv, q, 300, 512, 2, &fx.s, r2);
    assert_true(memcmp(r1, r2, sizeof r1) != 0);
    /* ...but rows 300 and after, in its second chunk, do not */
    for (int64_t i = 300 * fx.stride; i < (int64_t)N_CTX * fx.stride; i++)
        fx.k16[i] = fx.v16[i] = tensor_fp32_to_fp16(7.0f);
    attn_row_split(&kv, q, 300, 512, 2, &fx.s, r1);
    assert_memory_equal(r1, r2, sizeof r1);
    fixture_free(&fx);
}

/* With a window of W, a query at pos is attention over keys (pos - W, pos]
 * exactly: the same as the kernels over a cache that starts at pos - W + 1
 * (checked against double precision), and keys before the window never
 * reach it, bit for bit, in all three kernels. */
static void test_sliding_window(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, 64);
    const int hd = fx.hd;
    float *q = fx.q, *a = fx.a, *b = fx.b;
    double *want = malloc(sizeof(double) * (size_t)hd);
    for (int i = 0; i < ATTN_TILE * hd; i++)
        q[i] = rnd() * 1.5f;
    const int32_t W = 37;
    for (int f16 = 0; f16 <= 1; f16++) {
        attn_kv kv = view(&fx, 1, f16);
        kv.window = W;
        const double tol = f16 ? 4e-3 : 1e-4;
        /* the window's keys as a cache of their own, for attn_exact */
        fixture sub = fx;
        const int32_t lens[] = {1, 20, 37, 38, 100, 300};
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            const int32_t n = lens[l], lo = n > W ? n - W : 0;
            sub.k32 = fx.k32 + (size_t)lo * fx.stride;
            sub.v32 = fx.v32 + (size_t)lo * fx.stride;
            attn_exact(&sub, 1, q, n - lo, want);
            attn_row(&kv, q, n, &fx.s, a);
            expect_close(a, want, hd, tol, "attn_row, window", n - 1);
            for (int split = 1; split <= 3; split++) {
                attn_row_split(&kv, q, n, attn_kv_view(n - 1), split, &fx.s, a);
                expect_close(a, want, hd, tol, "attn_row_split, window", n - 1);
            }
        }
        /* 64 queries at 100..163: each row's window starts inside an earlier tile */
        attn_tile(&kv, q, hd, 1, ATTN_TILE, 100, &fx.s, a, hd);
        for (int r = 0; r < ATTN_TILE; r++) {
            const int32_t pos = 100 + r, lo = pos - W + 1;
            sub.k32 = fx.k32 + (size_t)lo * fx.stride;
            sub.v32 = fx.v32 + (size_t)lo * fx.stride;
            attn_exact(&sub, 1, q + (size_t)r * hd, W, want);
            expect_close(a + (size_t)r * hd, want, hd, 1e-4, "attn_tile, window", pos);
        }
    }
    /* scribbling over the keys before every window changes nothing */
    attn_kv kv = view(&fx, 1, true);
    kv.window = W;
    float r1[64], r2[64];
    attn_tile(&kv, q, hd, 1, ATTN_TILE, 100, &fx.s, a, hd);
    attn_row_split(&kv, q, 300, 512, 2, &fx.s, r1);
    for (int64_t i = 0; i < (int64_t)(100 - W + 1) * fx.stride; i++)
        fx.k16[i] = fx.v16[i] = tensor_fp32_to_fp16(30.0f);
    attn_tile(&kv, q, hd, 1, ATTN_TILE, 100, &fx.s, b, hd);
    assert_memory_equal(a, b, sizeof(float) * (size_t)ATTN_TILE * hd);
    attn_row_split(&kv, q, 300, 512, 2, &fx.s, r2);
    assert_memory_equal(r1, r2, sizeof r1);
    /* ...while without the window the same scribbles do */
    kv.window = 0;
    attn_row_split(&kv, q, 300, 512, 2, &fx.s, r2);
    assert_true(memcmp(r1, r2, sizeof r1) != 0);
    free(want);
    fixture_free(&fx);
}

/* ggml groups queries into tiles by thread chunk; a query's result must not
 * depend on which other queries share its tile. */
static void test_tile_grouping(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, 32);
    const int hd = fx.hd;
    const attn_kv kv = view(&fx, 1, true);
    enum { N = 100 };
    float *q = fx.q, *a = fx.a, *b = fx.b;
    for (int i = 0; i < N * hd; i++)
        q[i] = rnd();
    /* tiles of 64 + 36 against 10 + 64 + 26 */
    attn_tile(&kv, q, hd, 1, 64, 0, &fx.s, a, hd);
    attn_tile(&kv, q + 64 * hd, hd, 1, 36, 64, &fx.s, a + 64 * hd, hd);
    attn_tile(&kv, q, hd, 1, 10, 0, &fx.s, b, hd);
    attn_tile(&kv, q + 10 * hd, hd, 1, 64, 10, &fx.s, b + 10 * hd, hd);
    attn_tile(&kv, q + 74 * hd, hd, 1, 26, 74, &fx.s, b + 74 * hd, hd);
    assert_memory_equal(a, b, sizeof(float) * N * 32);
    fixture_free(&fx);
}

/* Query heads sharing a KV head go through one call (the K/V tiles are
 * converted once); each must come out as if it ran alone. */
static void test_tile_heads(void **state)
{
    (void)state;
    fixture fx;
    fixture_init(&fx, 32);
    const int hd = fx.hd;
    const attn_kv kv = view(&fx, 0, true);
    enum { ROWS = 40, HEADS = 2, STRIDE = 2 * 32 };
    float *q = fx.q, *a = fx.a, *b = fx.b;
    for (int i = 0; i < ROWS * STRIDE; i++)
        q[i] = rnd();
    attn_tile(&kv, q, STRIDE, HEADS, ROWS, 70, &fx.s, a, STRIDE);
    for (int g = 0; g < HEADS; g++)
        attn_tile(&kv, q + g * hd, STRIDE, 1, ROWS, 70, &fx.s, b + g * hd, STRIDE);
    assert_memory_equal(a, b, sizeof(float) * ROWS * STRIDE);
    fixture_free(&fx);
}

/* ggml's tiled kernel (ops.cpp, flash_attn_ext tiled: simd_gemm's FMA
 * chains, the online softmax of ggml_vec_soft_max_f32) written out one
 * query at a time, the order attn_tile must keep however it interleaves
 * queries: K.Q an fmaf chain over the head, times the scale; per 64-key
 * tile the maximum, a libm expf rescale when it grows, 16-lane exps summed
 * per group in double; P.V an fmaf chain per output over the tile's keys. */
static void ref_tile_query(const attn_kv *kv, const float *q, int32_t pos, float *out)
{
    const int hd = kv->hd;
    const uint16_t *k = kv->k, *v = kv->v;
    float acc[528] = {0}, kq[ATTN_TILE], M = -INFINITY, S = 0.0f;
    for (int32_t ic = 0; ic <= pos; ic += ATTN_TILE) {
        float tmax = -INFINITY;
        for (int j = 0; j < ATTN_TILE; j++) {
            float a = 0.0f;
            for (int d = 0; d < hd; d++)
                a = fmaf(tensor_fp16_to_fp32(k[(ic + j) * kv->stride + d]), q[d], a);
            kq[j] = ic + j > pos ? -INFINITY : a * kv->scale;
            tmax = fmaxf(tmax, kq[j]);
        }
        const float Mnew = fmaxf(M, tmax);
        if (Mnew > M) {
            const float ms = expf(M - Mnew);
            for (int d = 0; d < hd; d++)
                acc[d] *= ms;
            S *= ms;
        }
        M = Mnew;
        double sum = 0.0;
        for (int j = 0; j < ATTN_TILE; j += 16) {
            for (int l = 0; l < 16; l++)
                kq[j + l] = v_expf(kq[j + l] - Mnew);
            sum += (double)red16(kq + j);
        }
        S = (float)((double)S + sum);
        for (int d = 0; d < hd; d++)
            for (int j = 0; j < ATTN_TILE && ic + j <= pos; j++)
                acc[d] = fmaf(tensor_fp16_to_fp32(v[(ic + j) * kv->stride + d]), kq[j], acc[d]);
    }
    for (int d = 0; d < hd; d++)
        out[d] = acc[d] * (S == 0.0f ? 0.0f : 1.0f / S);
}

/* attn_tile (four queries at a time on AVX-512, their chains interleaved;
 * six on AVX2, phase by phase, a head over 512 wide in two parts) gives
 * ref_tile_query's bits for every query head and row. */
static void test_tile_reference_bits(void **state)
{
    (void)state;
    const int hds[] = {64, 128, 32, 48, 528};
    for (size_t t = 0; t < sizeof hds / sizeof *hds; t++) {
        fixture fx;
        fixture_init(&fx, hds[t]);
        const int hd = fx.hd, heads = 2, rows = hd == 128 ? 40 : 61, stride = heads * hd;
        const attn_kv kv = view(&fx, 1, true);
        float *q = fx.q, *a = fx.a, *b = fx.b;
        for (int i = 0; i < rows * stride; i++)
            q[i] = rnd() * 2.0f;
        attn_tile(&kv, q, stride, heads, rows, 250, &fx.s, a, stride);
        for (int r = 0; r < rows; r++)
            for (int g = 0; g < heads; g++)
                ref_tile_query(&kv, q + r * stride + g * hd, 250 + r, b + r * stride + g * hd);
        assert_memory_equal(a, b, sizeof(float) * (size_t)(rows * stride));
        /* the same keys and values in an F32 cache: the same bits (the K
         * tile is transposed from either type, 16 x 16 at a time on
         * AVX-512) */
        const attn_kv kv32 = view(&fx, 1, false);
        attn_tile(&kv32, q, stride, heads, rows, 250, &fx.s, b, stride);
        assert_memory_equal(a, b, sizeof(float) * (size_t)(rows * stride));
        fixture_free(&fx);
    }
}

static void test_view_and_choice(void **state)
{
    (void)state;
    assert_int_equal(attn_kv_view(0), 256);
    assert_int_equal(attn_kv_view(255), 256);
    assert_int_equal(attn_kv_view(256), 512);
    assert_int_equal(attn_kv_view(600), 768);
    assert_true(attn_use_tiled(64, 32));
    assert_false(attn_use_tiled(63, 32));
    assert_false(attn_use_tiled(128, 8)); /* head size not a multiple of 16 */
}

/* v_expf at the edges: a NaN input (a corrupt model's NaN weights reach
 * softmax) gives NaN without converting NaN to int, which C leaves
 * undefined (make fuzz found it: UBSan's float-cast-overflow); infinities
 * and huge inputs saturate. make test-asan runs this under UBSan. */
static void test_expf_edges(void **s)
{
    (void)s;
    volatile float nan = NAN; /* not folded at compile time */
    assert_true(isnan(v_expf(nan)));
    assert_true(isnan(v_expf(-nan)));
    assert_true(isinf(v_expf(INFINITY)) && v_expf(INFINITY) > 0);
    assert_true(v_expf(-INFINITY) == 0.0f);
    assert_true(isinf(v_expf(1e30f)) && v_expf(-1e30f) == 0.0f);
    assert_float_equal(v_expf(0.0f), 1.0f, 0);
    assert_float_equal(v_expf(1.0f), expf(1.0f), 1e-6);
}

/* v_expf as ggml_v_expf's steps with the final 2^n scaling by ldexpf, the
 * form v_expf had before its one-multiply fast path. */
static float expf_ldexp(float x)
{
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    if (!(fabsf(n) <= 192.0f))
        return n != n ? x : n <= 0.0f ? 0.0f : INFINITY;
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
                         fmaf(0x1.ffffecp-1f, b, 1.0f));
    return ldexpf(j, (int)n);
}

/* v_expf's multiply by 2^n gives ldexpf's bits: every float in [-104, 90]
 * whose exponent puts the result near the subnormal and overflow edges
 * (|x| in [86, 104]: all of them), a spread over the rest, and the ends. */
static void test_expf_scaling_bits(void **s)
{
    (void)s;
    uint64_t checked = 0;
    for (uint32_t u = 0; u < 0xFFFFFFFFu - 997; u += 997) {
        float x;
        memcpy(&x, &u, sizeof x);
        const float ax = fabsf(x);
        if (!(ax <= 110.0f) || (ax < 86.0f && u % 7 != 0))
            continue;
        const float a = v_expf(x), b = expf_ldexp(x);
        if (memcmp(&a, &b, sizeof a) != 0)
            fail_msg("x %a: v_expf %a, with ldexpf %a", (double)x, (double)a, (double)b);
        checked++;
    }
    for (uint32_t u = 0x42AC0000u; u <= 0x42D00000u; u++) { /* x in [86, 104], both signs: every float */
        for (int sign = 0; sign < 2; sign++) {
            const uint32_t v = u | (uint32_t)sign << 31;
            float x;
            memcpy(&x, &v, sizeof x);
            const float a = v_expf(x), b = expf_ldexp(x);
            if (memcmp(&a, &b, sizeof a) != 0)
                fail_msg("x %a: v_expf %a, with ldexpf %a", (double)x, (double)a, (double)b);
            checked++;
        }
    }
    assert_true(checked > 4000000);
}

#ifdef FWD_F16C
/* v_expf8 lane by lane against v_expf (held to ldexpf's bits above): every
 * float with |x| in [86, 140], where results underflow, overflow or
 * saturate (its two-step scaling and its saturated lanes), each beside
 * ordinary values in the same vector (one lane wide, the rest on the fast
 * path), a spread over the rest, and NaN and the infinities. */
static void expf8_check(const float x[8], uint64_t *checked)
{
    float y[8];
    _mm256_storeu_ps(y, v_expf8(_mm256_loadu_ps(x)));
    for (int l = 0; l < 8; l++) {
        const float want = v_expf(x[l]);
        if (memcmp(&y[l], &want, sizeof want) != 0 && !(isnan(y[l]) && isnan(want)))
            fail_msg("x %a (lane %d): v_expf8 %a, v_expf %a", (double)x[l], l, (double)y[l], (double)want);
        (*checked)++;
    }
}

static void test_expf8_lanes(void **s)
{
    (void)s;
    uint64_t checked = 0;
    float x[8];
    int k = 0;
    for (uint32_t u = 0; u < 0xFFFFFFFFu - 997; u += 997) {
        memcpy(&x[k], &u, sizeof(float));
        if (!(fabsf(x[k]) <= 200.0f))
            continue;
        if (++k == 8) {
            expf8_check(x, &checked);
            k = 0;
        }
    }
    for (uint32_t u = 0x42AC0000u; u <= 0x430C0000u; u++) /* |x| in [86, 140]: every float */
        for (int sign = 0; sign < 2; sign++) {
            const uint32_t v = u | (uint32_t)sign << 31;
            for (int l = 0; l < 8; l++)
                x[l] = (float)l * 0.37f - 1.5f;
            memcpy(&x[(u + (uint32_t)sign) % 8], &v, sizeof(float));
            expf8_check(x, &checked);
        }
    const float ends[8] = {NAN, -NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0.0f, -0.0f};
    expf8_check(ends, &checked);
    assert_true(checked > 6000000);
}
#endif

/* The generic kernel (quantized caches) for the query heads of one KV head
 * together: each head's result the same bits as that head alone, for every
 * K/V type pair the cache offers, with and without a window, and one head's
 * numbers untouched by the others'. */
/* The tiled kernel's K and V tiles start on a 64-byte line whatever n_ctx is
 * (bench's n_ctx is prompt + depth + 1): a straddling tile made every 512-bit
 * load of pp512 @ d4096 split in two, a quarter of the step's time. */
static void test_scratch_lines(void **state)
{
    (void)state;
    const uint32_t ctxs[] = {640, 4609, 8705, 17};
    const int hds[] = {64, 128, 80, 72};
    for (size_t c = 0; c < sizeof ctxs / sizeof *ctxs; c++)
        for (size_t h = 0; h < sizeof hds / sizeof *hds; h++) {
            const size_t n = attn_scratch_floats(hds[h], ctxs[c], 4);
            float *buf = aligned_alloc(64, (n * sizeof(float) + 63) & ~(size_t)63);
            uint16_t half[2 * 128];
            attn_scratch s;
            attn_scratch_init(&s, buf, half, hds[h], ctxs[c]);
            assert_int_equal((uintptr_t)s.tile % 64, 0);
            assert_true(s.part >= s.scores + ctxs[c] && s.tile >= s.part + hds[h]);
            /* the tiles, krow, and 4 heads' vkq, M and S fit (and on AVX2
             * tile_phased's scores and query rows after them) */
            assert_true(s.tile + 2 * ATTN_TILE * hds[h] + hds[h] + 4 * ATTN_TILE * (hds[h] + 2) <= buf + n);
            free(buf);
        }
}

static void test_generic_heads(void **state)
{
    (void)state;
    enum { HD = 64, NK = 300, NH = 5 };
    const enum tensor_type pairs[][2] = {
        {TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q8_0}, {TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q4_0},
        {TENSOR_TYPE_Q8_0, TENSOR_TYPE_F16},  {TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q8_0},
        {TENSOR_TYPE_F16, TENSOR_TYPE_Q8_0},
    };
    const size_t k_max = tensor_row_size(TENSOR_TYPE_F16, HD);
    uint8_t *kc = malloc((size_t)NK * k_max), *vc = malloc((size_t)NK * k_max);
    float row[HD], q[NH * HD], all[NH * HD], one[HD];
    float *buf = malloc(attn_scratch_floats(HD, N_CTX, NH) * sizeof(float));
    uint16_t half[2 * HD];
    attn_scratch sc;
    attn_scratch_init(&sc, buf, half, HD, N_CTX);
    assert_true(attn_generic_tile_floats(HD, NH) <= attn_scratch_floats(HD, N_CTX, NH) - N_CTX - HD);
    for (int i = 0; i < NH * HD; i++)
        q[i] = rnd() * 2.0f;
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        const enum tensor_type kt = pairs[p][0], vt = pairs[p][1];
        const size_t kr = tensor_row_size(kt, HD), vr = tensor_row_size(vt, HD);
        for (int j = 0; j < NK; j++) {
            for (int i = 0; i < HD; i++)
                row[i] = rnd() * 2.0f;
            tensor_quantize_row(kt, row, kc + (size_t)j * kr, HD);
            for (int i = 0; i < HD; i++)
                row[i] = rnd();
            tensor_quantize_row(vt, row, vc + (size_t)j * vr, HD);
        }
        attn_kv kv = {.k = kc, .v = vc, .generic = true, .k_type = kt, .v_type = vt, .k_row = kr, .v_row = vr,
                      .hd = HD, .scale = 0.125f};
        for (int w = 0; w <= 1; w++) {
            kv.window = w ? 37 : 0;
            const int32_t lens[] = {1, 38, NK};
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                attn_rows_generic(&kv, q, NH, lens[l], &sc, all);
                for (int h = 0; h < NH; h++) {
                    attn_row(&kv, q + h * HD, lens[l], &sc, one);
                    if (memcmp(one, all + h * HD, sizeof one) != 0)
                        fail_msg("K %d V %d window %d n_kv %d: head %d of %d differs from the head alone", kt, vt,
                                 kv.window, lens[l], h, NH);
                }
            }
        }
        /* a different query in head 0 leaves the other heads' bits alone */
        attn_rows_generic(&kv, q, NH, NK, &sc, all);
        float q2[NH * HD], all2[NH * HD];
        memcpy(q2, q, sizeof q2);
        for (int i = 0; i < HD; i++)
            q2[i] = -q2[i];
        attn_rows_generic(&kv, q2, NH, NK, &sc, all2);
        assert_true(memcmp(all, all2, HD * sizeof(float)) != 0);
        assert_memory_equal(all + HD, all2 + HD, (NH - 1) * HD * sizeof(float));
    }
    free(kc);
    free(vc);
    free(buf);
}

/* RoPE's rotation (forward_math.h rope_rotate), both pairings, against
 * the scalar form one pair at a time: fused as GCC contracts it where FMA
 * is on (fma(x0, c, -(x1 s)), fma(x0, s, x1 c)), plain otherwise. Head
 * sizes with and without a vector tail; the values past n_rot untouched. */
static float rope_one(float x0, float x1, float c, float s, int second)
{
#ifdef FWD_F16C
    return second ? fmaf(x0, s, x1 * c) : fmaf(x0, c, -(x1 * s));
#else
    return second ? x0 * s + x1 * c : x0 * c - x1 * s;
#endif
}

static void test_rope_rotate_bits(void **st)
{
    (void)st;
    const uint32_t n_rots[] = {2, 6, 16, 24, 32, 40, 64, 128, 256};
    enum { HD = 272 };
    float x[HD], y[HD], cs[HD];
    for (int neox = 0; neox < 2; neox++)
        for (size_t k = 0; k < sizeof n_rots / sizeof n_rots[0]; k++) {
            const uint32_t n = n_rots[k], half = n / 2;
            for (int r = 0; r < 20; r++) {
                for (int i = 0; i < HD; i++) {
                    x[i] = y[i] = rnd() * 8.0f;
                    cs[i] = rnd() * 1.1f;
                }
                rope_rotate(x, cs, n, neox);
                for (uint32_t i = 0; i < half; i++) {
                    const uint32_t a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
                    const float c = cs[2 * i], s = cs[2 * i + 1];
                    const float e0 = rope_one(y[a], y[b], c, s, 0), e1 = rope_one(y[a], y[b], c, s, 1);
                    if (memcmp(&x[a], &e0, 4) != 0 || memcmp(&x[b], &e1, 4) != 0)
                        fail_msg("rope %s n_rot %u pair %u: %a %a, expected %a %a", neox ? "neox" : "norm", n, i,
                                 (double)x[a], (double)x[b], (double)e0, (double)e1);
                }
                assert_memory_equal(x + n, y + n, (HD - n) * sizeof(float));
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_are_attention),
        cmocka_unit_test(test_expf_edges),
        cmocka_unit_test(test_expf_scaling_bits),
        cmocka_unit_test(test_rope_rotate_bits),
#ifdef FWD_F16C
        cmocka_unit_test(test_expf8_lanes),
#endif
        cmocka_unit_test(test_causal),
        cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_tile_grouping),
        cmocka_unit_test(test_tile_heads),
        cmocka_unit_test(test_tile_reference_bits),
        cmocka_unit_test(test_view_and_choice),
        cmocka_unit_test(test_generic_heads),
        cmocka_unit_test(test_scratch_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
