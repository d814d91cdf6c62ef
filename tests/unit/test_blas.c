/* OpenBLAS products (kernels/blas.h): within F32 rounding of the exact
 * path, by a bound that follows from the sizes; used exactly where the
 * decision says, never when off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/blas.h"
#include "kernels/gemm_kq5.h"
#include "kernels/packed_q6_K.h"
#include "kernels/quant_kfew.h"
#include "kernels/forward_repack.h"
#include "kernels/threadpool.h"
#include "model/forward.h"
#include "model/forward_internal.h"
#include "model/model.h"
#include "testutil.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* uniform in [lo, hi) */
static float frand(float lo, float hi)
{
    return lo + (hi - lo) * (float)(test_xorshift64(&rng_state) >> 40) / (float)(1 << 24);
}

/* A weight matrix of `type`, rows x n, values in [lo, hi). */
static gguf_tensor make_weight(enum tensor_type type, int64_t rows, int64_t n, float lo, float hi)
{
    gguf_tensor w;
    memset(&w, 0, sizeof w);
    w.type = type;
    w.n_dims = 2;
    w.ne[0] = n;
    w.ne[1] = rows;
    w.n_elements = rows * n;
    w.nbytes = tensor_row_size(type, n) * (size_t)rows;
    uint8_t *d = aligned_alloc(64, (w.nbytes + 63) & ~(size_t)63);
    assert_non_null(d);
    float *row = malloc((size_t)n * sizeof *row);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < n; i++)
            row[i] = frand(lo, hi);
        tensor_quantize_row(type, row, d + (size_t)r * tensor_row_size(type, n), n);
    }
    free(row);
    w.data = d;
    return w;
}

/* Weight row r as floats (the type's dequantization). */
static void weight_row(const gguf_tensor *w, int64_t r, float *out)
{
    const size_t rb = tensor_row_size((enum tensor_type)w->type, w->ne[0]);
    tensor_dequantize_row((enum tensor_type)w->type, (const uint8_t *)w->data + (size_t)r * rb, out,
                          w->ne[0]);
}

/* An activation row as the weight's dot type holds it (F16, BF16 or Q8
 * values), in floats; blk gets the row in the dot type. */
static void act_row(enum tensor_type wtype, const float *x, int64_t n, float *out, uint8_t *blk)
{
    const enum tensor_type dot = tensor_dot_type(wtype);
    tensor_quantize_row(dot, x, blk, n);
    tensor_dequantize_row(dot, blk, out, n);
}

/* Q4_1 and Q5_1 add each block's min times the activation block's sum s,
 * which Q8_1 stores as ggml does: the F16 rounding of the unrounded scale
 * times the sum of the quants, while the quants' values are the F16 scale
 * times each quant. So the exact path's s is off by up to two F16
 * roundings (2^-11 each) of the sum OpenBLAS's products add up to. The
 * bound on that difference for one output (0 for the other types). */
static double min_term_bound(const gguf_tensor *w, int64_t r, const uint8_t *act_blk)
{
    if (w->type != TENSOR_TYPE_Q4_1 && w->type != TENSOR_TYPE_Q5_1)
        return 0;
    const size_t rb = tensor_row_size((enum tensor_type)w->type, w->ne[0]);
    const size_t wbs = tensor_type_size(w->type), abs_ = tensor_type_size(TENSOR_TYPE_Q8_1);
    const uint8_t *wr = (const uint8_t *)w->data + (size_t)r * rb;
    double e = 0;
    for (int64_t b = 0; b < w->ne[0] / 32; b++) {
        uint16_t m, sa;
        memcpy(&m, wr + (size_t)b * wbs + 2, 2);        /* block: d, m, ... */
        memcpy(&sa, act_blk + (size_t)b * abs_ + 2, 2); /* block: d, s, qs */
        /* 2^-11 + 2^-11 of the stored s, and a margin for the second-order terms */
        e += fabs((double)tensor_fp16_to_fp32(m)) * fabs((double)tensor_fp16_to_fp32(sa)) * ldexp(1.0, -10) *
             (1 + ldexp(1.0, -9));
    }
    return e;
}

/* gamma_n of floating-point error analysis: any order of summing n
 * products (each rounded once, or exact in an FMA) is within
 * gamma_n * sum |products| of the exact sum, u = 2^-24 for F32. */
static double gamma_n(int64_t n)
{
    const double u = ldexp(1.0, -24);
    return (double)n * u / (1.0 - (double)n * u);
}

/* The exact path's kernel for the batch (forward_matmul's choice for these
 * sizes: tinyBLAS order for F32/F16/BF16, the reference's vec_dot order for
 * the quantized types), activations in the dot type. */
static void exact_matmul(const gguf_tensor *w, const float *x, int n_tok, float *out, int64_t out_stride)
{
    const int64_t n = w->ne[0];
    const enum tensor_type type = (enum tensor_type)w->type;
    const enum tensor_type dot = tensor_dot_type(type);
    if (type != TENSOR_TYPE_F32 && type != TENSOR_TYPE_F16 && type != TENSOR_TYPE_BF16) {
        const size_t rb = tensor_row_size(type, n);
        uint8_t *a = malloc(tensor_row_size(dot, n));
        for (int t = 0; t < n_tok; t++) {
            tensor_quantize_row(dot, x + (size_t)t * n, a, n);
            for (int64_t r = 0; r < w->ne[1]; r++)
                out[(size_t)t * out_stride + r] =
                    tensor_vec_dot(type, n, (const uint8_t *)w->data + (size_t)r * rb, a);
        }
        free(a);
        return;
    }
    /* F32 rows; F16-rounded values in floats for F16 weights; BF16 rows */
    const size_t stride = type == TENSOR_TYPE_BF16 ? (size_t)n * 2 : (size_t)n * 4;
    uint8_t *act = aligned_alloc(64, ((size_t)n_tok * stride + 63) & ~(size_t)63);
    for (int t = 0; t < n_tok; t++) {
        uint8_t *a = act + (size_t)t * stride;
        if (type == TENSOR_TYPE_F16) {
            uint16_t *h = malloc((size_t)n * sizeof *h);
            act_row(type, x + (size_t)t * n, n, (float *)(void *)a, (uint8_t *)h);
            free(h);
        } else if (type == TENSOR_TYPE_BF16)
            tensor_quantize_row(dot, x + (size_t)t * n, a, n);
        else
            memcpy(a, x + (size_t)t * n, (size_t)n * sizeof(float));
    }
    if (type == TENSOR_TYPE_BF16)
        refbf16_matmul(w, n, 0, w->ne[1], act, stride, n_tok, out, out_stride);
    else
        reffloat_matmul(w, n, 0, w->ne[1], act, stride, n_tok, out, out_stride);
    free(act);
}

/* Checks one OpenBLAS output block against the exact sum (in double) of
 * the products of the weights and activations as floats (w_i, a_i: what
 * the dequantization and the dot type give), and against the exact path:
 *   |blas - sum| <= gamma_n S,
 *   |blas - exact| <= 2 gamma_{n+2} S (+ the Q8_1 F16 block sums' rounding),
 * S = sum |w_i a_i|: the exact path's integer sums, its scale products and
 * the dequantized weights (d * q + m) round at most twice more per product.
 * Returns the largest |blas - sum| / (gamma_n S). */
static double check_block(const gguf_tensor *w, const float *x, int n_tok, const float *blas,
                          const float *exact, int64_t stride)
{
    const int64_t n = w->ne[0], rows = w->ne[1];
    const enum tensor_type type = (enum tensor_type)w->type;
    const double g = gamma_n(n), g2 = gamma_n(n + 2);
    float *wr = malloc((size_t)n * sizeof *wr), *ar = malloc((size_t)n * sizeof *ar);
    uint8_t *blk = malloc((size_t)n * sizeof(float) + 64);
    double worst = 0;
    for (int t = 0; t < n_tok; t++) {
        act_row(type, x + (size_t)t * n, n, ar, blk);
        for (int64_t r = 0; r < rows; r++) {
            weight_row(w, r, wr);
            double sum = 0, abs_sum = 0;
            for (int64_t i = 0; i < n; i++) {
                const double p = (double)wr[i] * (double)ar[i];
                sum += p;
                abs_sum += fabs(p);
            }
            const double b = blas[(size_t)t * stride + r], e = exact[(size_t)t * stride + r];
            const double bound = 2 * g2 * abs_sum + min_term_bound(w, r, blk);
            if (!(fabs(b - sum) <= g * abs_sum) || !(fabs(b - e) <= bound))
                fail_msg("%s %lldx%lld, token %d row %lld: blas %.9g exact %.9g sum %.9g; bounds %.3g, %.3g",
                         tensor_type_name(type), (long long)rows, (long long)n, t, (long long)r, b, e, sum,
                         g * abs_sum, bound);
            if (abs_sum > 0 && fabs(b - sum) / (g * abs_sum) > worst)
                worst = fabs(b - sum) / (g * abs_sum);
        }
    }
    free(wr);
    free(ar);
    free(blk);
    return worst;
}

struct shape {
    int64_t rows, n;
    int n_tok;
    float lo, hi; /* value range of weights and activations */
};

/* Shapes with odd row counts (a partial panel), inputs of 64 to 2048, both
 * signs and positive-only values (rounding errors then do not cancel, so a
 * product taken from unrounded activations would show). */
static const struct shape shapes[] = {
    {37, 64, 5, -1.0f, 1.0f}, {37, 64, 5, 0.5f, 1.0f},     {70, 320, 9, -1.0f, 1.0f},
    {70, 320, 9, 0.5f, 1.0f}, {300, 2048, 6, -0.5f, 0.5f}, {16, 2048, 3, 0.5f, 1.0f},
};

/* K-quants need rows of whole 256-element super-blocks. */
static const struct shape shapes_k[] = {
    {37, 256, 5, -1.0f, 1.0f},
    {37, 256, 5, 0.5f, 1.0f},
    {70, 512, 9, -1.0f, 1.0f},
    {300, 2048, 6, -0.5f, 0.5f},
};

static void test_blas_within_f32_rounding(void **s)
{
    (void)s;
    const enum tensor_type types[] = {TENSOR_TYPE_F32,  TENSOR_TYPE_F16,  TENSOR_TYPE_BF16, TENSOR_TYPE_Q4_1,
                                      TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_1, TENSOR_TYPE_Q2_K, TENSOR_TYPE_Q3_K,
                                      TENSOR_TYPE_Q5_K,
#ifndef PACKED_Q6_K /* AVX2 builds re-encode Q6_K at load (packed_q6_K.h) */
                                      TENSOR_TYPE_Q6_K
#endif
    };
    threadpool *tp = threadpool_create(2);
    assert_non_null(tp);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        assert_true(blas_takes(types[ti]));
        const bool k = tensor_type_block_size(types[ti]) == 256;
        const struct shape *list = k ? shapes_k : shapes;
        const size_t n_shapes = k ? sizeof shapes_k / sizeof shapes_k[0] : sizeof shapes / sizeof shapes[0];
        for (size_t si = 0; si < n_shapes; si++) {
            const struct shape *sh = &list[si];
            gguf_tensor w = make_weight(types[ti], sh->rows, sh->n, sh->lo, sh->hi);
            const int64_t stride = sh->rows + 3; /* outputs need not be packed */
            float *x = malloc((size_t)sh->n_tok * (size_t)sh->n * sizeof *x);
            float *ob = calloc((size_t)sh->n_tok * (size_t)stride, sizeof *ob);
            float *oe = calloc((size_t)sh->n_tok * (size_t)stride, sizeof *oe);
            for (int64_t i = 0; i < sh->n_tok * sh->n; i++)
                x[i] = frand(sh->lo, sh->hi);
            blas_ctx *b = blas_create(BLAS_MODE_ON, 2, sh->n_tok, sh->n);
            assert_non_null(b);
            const struct blas_seg seg = {&w, ob, stride};
            blas_matmul(b, tp, x, sh->n_tok, sh->n, 1, &seg);
            assert_int_equal(blas_calls(b), 1);
            exact_matmul(&w, x, sh->n_tok, oe, stride);
            const double worst = check_block(&w, x, sh->n_tok, ob, oe, stride);
            print_message("%-4s %3lld x %4lld, %d tokens: worst |blas - sum| = %.3f of the bound\n",
                          tensor_type_name(types[ti]), (long long)sh->rows, (long long)sh->n, sh->n_tok,
                          worst);
            blas_free(b);
            free(x);
            free(ob);
            free(oe);
            free((void *)(uintptr_t)w.data);
        }
    }
    threadpool_free(tp);
}

/* One job of three weights of different types sharing the input (as Q/K/V
 * do), each written at its own place of the outputs. */
static void test_blas_mixed_job(void **s)
{
    (void)s;
    const int64_t n = 256;
    const int n_tok = 7;
    gguf_tensor w[3] = {make_weight(TENSOR_TYPE_F16, 96, n, -1, 1),
                        make_weight(TENSOR_TYPE_BF16, 40, n, -1, 1),
                        make_weight(TENSOR_TYPE_F32, 24, n, -1, 1)};
    const int64_t stride = 96 + 40 + 24;
    float *x = malloc((size_t)n_tok * n * sizeof *x);
    for (int64_t i = 0; i < n_tok * n; i++)
        x[i] = frand(-1, 1);
    float *ob = calloc((size_t)n_tok * stride, sizeof *ob), *oe = calloc((size_t)n_tok * stride, sizeof *oe);
    const struct blas_seg segs[3] = {
        {&w[0], ob, stride}, {&w[1], ob + 96, stride}, {&w[2], ob + 136, stride}};
    threadpool *tp = threadpool_create(2);
    blas_ctx *b = blas_create(BLAS_MODE_ON, 2, n_tok, n);
    blas_matmul(b, tp, x, n_tok, n, 3, segs);
    assert_int_equal(blas_calls(b), 3);
    exact_matmul(&w[0], x, n_tok, oe, stride);
    exact_matmul(&w[1], x, n_tok, oe + 96, stride);
    exact_matmul(&w[2], x, n_tok, oe + 136, stride);
    check_block(&w[0], x, n_tok, ob, oe, stride);
    check_block(&w[1], x, n_tok, ob + 96, oe + 96, stride);
    check_block(&w[2], x, n_tok, ob + 136, oe + 136, stride);
    blas_free(b);
    threadpool_free(tp);
    for (int i = 0; i < 3; i++)
        free((void *)(uintptr_t)w[i].data);
    free(x);
    free(ob);
    free(oe);
}

/* The decision itself: off never, on from 2 tokens, auto from the
 * measured threshold of the type, never a quantized weight or one token. */
static void test_blas_decision(void **s)
{
    (void)s;
    blas_auto_assume_core(1); /* the table, as on the core it was measured on */
    const enum tensor_type types[] = {TENSOR_TYPE_F32,  TENSOR_TYPE_F16,  TENSOR_TYPE_BF16, TENSOR_TYPE_Q8_0,
                                      TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q4_0, TENSOR_TYPE_Q6_K, TENSOR_TYPE_Q4_1};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        gguf_tensor w;
        memset(&w, 0, sizeof w);
        w.type = types[i];
        w.ne[0] = 256;
        w.ne[1] = 256;
        const bool takes = blas_takes(types[i]);
        const int min = blas_auto_min_tokens(types[i]);
        if (min > 0)
            assert_true(takes); /* auto takes only what OpenBLAS can */
        assert_int_equal(min, blas_auto_table_at(BLAS_SITE_XEON, types[i]));
        for (int n = 1; n <= 4096; n++) {
            assert_false(blas_wants(BLAS_MODE_OFF, &w, n));
            assert_int_equal(blas_wants(BLAS_MODE_ON, &w, n), takes && n >= 2);
            assert_int_equal(blas_wants(BLAS_MODE_AUTO, &w, n), min > 0 && n >= min);
        }
    }
    /* auto leaves products narrower than 32 either way to the CPU kernels:
     * gemma4moe-mini's F32 router (64 x 8) picked other experts through
     * OpenBLAS at 143 tokens */
    gguf_tensor small;
    memset(&small, 0, sizeof small);
    small.type = TENSOR_TYPE_F32;
    small.ne[0] = 64;
    small.ne[1] = 8;
    assert_false(blas_wants(BLAS_MODE_AUTO, &small, 4096));
    assert_true(blas_wants(BLAS_MODE_ON, &small, 4096));
    small.ne[0] = 16;
    small.ne[1] = 64;
    assert_false(blas_wants(BLAS_MODE_AUTO, &small, 4096));
    small.ne[0] = 32;
    small.ne[1] = 32;
    assert_true(blas_wants(BLAS_MODE_AUTO, &small, 4096));
    enum blas_mode m;
    assert_true(blas_mode_parse("AUTO", &m) && m == BLAS_MODE_AUTO);
    assert_true(blas_mode_parse("off", &m) && m == BLAS_MODE_OFF);
    assert_true(blas_mode_parse("on", &m) && m == BLAS_MODE_ON);
    assert_false(blas_mode_parse("yes", &m));
    assert_string_equal(blas_mode_name(BLAS_MODE_AUTO), "auto");
    assert_non_null(strstr(blas_library(), "OpenBLAS"));
    blas_auto_assume_core(0);
}

/* Auto is a measurement, and measurements are per machine: on OpenBLAS's
 * Haswell core (what it runs on AMD Zen) tokscope's own kernels won at every
 * batch size, and with the AVX-512 few-token K-quant kernels its Q5_K and
 * Q6_K prompts beat OpenBLAS's on every core: auto must leave those to the
 * reference's order (once it sent Q6_K from 192 tokens to OpenBLAS at 0.4x
 * the speed and other bits). */
static void test_blas_auto_where_measured(void **s)
{
    (void)s;
    assert_true(blas_auto_core_measured("SkylakeX"));
    assert_true(blas_auto_core_measured("sapphirerapids"));
    assert_false(blas_auto_core_measured("Haswell"));
    assert_false(blas_auto_core_measured("Zen"));
    assert_false(blas_auto_core_measured(NULL));
    gguf_tensor w;
    memset(&w, 0, sizeof w);
    w.ne[0] = w.ne[1] = 256;
    blas_auto_assume_core(-1);
    for (int t = 0; t < TENSOR_TYPE_COUNT; t++) {
        w.type = (uint32_t)t;
        assert_int_equal(blas_auto_min_tokens((enum tensor_type)t), 0);
        assert_false(blas_wants(BLAS_MODE_AUTO, &w, 4096));
        assert_int_equal(blas_wants(BLAS_MODE_ON, &w, 4096), blas_takes((enum tensor_type)t));
    }
    blas_auto_assume_core(BLAS_SITE_XEON);
    assert_int_equal(blas_auto_min_tokens(TENSOR_TYPE_F16), 256);
#ifdef QUANT_HAVE_KFEW
    assert_int_equal(blas_auto_table_at(BLAS_SITE_XEON, TENSOR_TYPE_Q6_K), 0);
    assert_int_equal(blas_auto_table_at(BLAS_SITE_XEON, TENSOR_TYPE_Q5_K), 0);
#else
#ifdef PACKED_Q6_K
    assert_false(blas_takes(TENSOR_TYPE_Q6_K));
    assert_int_equal(blas_auto_table_at(BLAS_SITE_XEON, TENSOR_TYPE_Q6_K), 0);
#else
    assert_int_equal(blas_auto_table_at(BLAS_SITE_XEON, TENSOR_TYPE_Q6_K), 192);
#endif
#ifdef GEMM_KQ5
    /* the AVX2 Q5_K GEMM (gemm_kq5.h): pp512 on a Zen 4, one thread, 77
     * tok/s against 46 with its Q5_K matmuls in OpenBLAS */
    assert_int_equal(blas_auto_table_at(BLAS_SITE_XEON, TENSOR_TYPE_Q5_K), 0);
#else
    assert_int_equal(blas_auto_table_at(BLAS_SITE_XEON, TENSOR_TYPE_Q5_K), 128);
#endif
#endif
    blas_auto_assume_core(0);
    char core[64] = "";
    const char *lib = strchr(blas_library(), '(');
    if (lib)
        sscanf(lib + 1, "%63[^,]", core);
    assert_int_equal(blas_auto_here(), blas_auto_site(core, blas_cpu_is_amd()) != BLAS_SITE_NONE);
}

/* The Xeon's table is not an AMD core's: OpenBLAS 0.3.21 runs its
 * Cooperlake core on a Zen 4 (AVX512_BF16, no avx_vnni), where the F16,
 * BF16 and Q2_K prompts ran slower through it than through tokscope's
 * exact kernels (pp512: 298 / 303 / 570 against 350 / 627 / 640 tok/s) and
 * auto once sent them there anyway, off the reference's bits. */
static void test_blas_auto_zen4(void **s)
{
    (void)s;
    assert_int_equal(blas_auto_site("Cooperlake", true), BLAS_SITE_ZEN4);
    assert_int_equal(blas_auto_site("Cooperlake", false), BLAS_SITE_XEON);
    assert_int_equal(blas_auto_site("SkylakeX", false), BLAS_SITE_XEON);
    assert_int_equal(blas_auto_site("SkylakeX", true), BLAS_SITE_NONE);
    assert_int_equal(blas_auto_site("Haswell", true), BLAS_SITE_NONE);
    assert_int_equal(blas_auto_site(NULL, false), BLAS_SITE_NONE);
    blas_auto_assume_core(BLAS_SITE_ZEN4);
    const enum tensor_type never[] = {TENSOR_TYPE_F16, TENSOR_TYPE_BF16, TENSOR_TYPE_F32, TENSOR_TYPE_Q2_K,
                                      TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q6_K};
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
        assert_int_equal(blas_auto_min_tokens(never[i]), 0);
    assert_int_equal(blas_auto_min_tokens(TENSOR_TYPE_Q4_1), 128);
    assert_int_equal(blas_auto_min_tokens(TENSOR_TYPE_Q5_1), 128);
    assert_int_equal(blas_auto_min_tokens(TENSOR_TYPE_Q3_K), 256);
    blas_auto_assume_core(0);
}

static model *load(const char *rel)
{
    const char *path = TESTDATA_REQUIRE(rel);
    char err[512];
    model *m = model_load_weights_only(path, err, sizeof err);
    if (!m) {
        fail_msg("%s", err);
        abort();
    }
    return m;
}

/* Logits of a batch of n tokens (all rows) with the given mode; *calls:
 * the products OpenBLAS ran. */
static float *run(const model *m, enum blas_mode mode, int n, uint64_t *calls, bool *has_ctx)
{
    forward_params p = forward_default_params();
    p.n_ctx = (uint32_t)n + 1;
    p.n_batch = (uint32_t)n;
    p.n_threads = 2;
    p.blas = mode;
    char err[256];
    forward_ctx *f = forward_build(m, &p, err, sizeof err);
    if (!f)
        fail_msg("%s", err);
    const int32_t V = model_get_hparams(m)->n_vocab;
    int32_t *toks = malloc((size_t)n * sizeof *toks);
    for (int i = 0; i < n; i++)
        toks[i] = 1 + (int32_t)((uint32_t)i * 2654435761u % (uint32_t)(V - 1));
    float *logits = malloc((size_t)n * (size_t)V * sizeof *logits);
    assert_int_equal(forward_eval(f, toks, n, 0, logits, true, err, sizeof err), 0);
    assert_int_equal(forward_blas_mode(f), mode);
    *calls = forward_blas_calls(f);
    *has_ctx = f->blas != NULL;
    forward_free(f);
    free(toks);
    return logits;
}

/* A whole model: auto runs exactly the products forward_blas_plan names
 * (each weight of a type it takes once per batch, from that type's
 * threshold on, none below it), at every threshold and just below it; off
 * never calls OpenBLAS nor allocates for it, and gives the default
 * context's bits; what OpenBLAS computes differs from them, but only by
 * rounding. */
static void check_model_auto(const char *rel, int64_t want_weights, int64_t want_on, double max_rel_diff)
{
    blas_auto_assume_core(1); /* the table, as on the core it was measured on */
    model *m = load(rel);
    const int32_t V = model_get_hparams(m)->n_vocab;
    /* the distinct thresholds of the types auto takes */
    int th[TENSOR_TYPE_COUNT], n_th = 0, lo = 1 << 30, hi = 0;
    for (int t = 0; t < TENSOR_TYPE_COUNT; t++) {
        const int v = blas_auto_min_tokens((enum tensor_type)t);
        bool dup = v == 0;
        for (int i = 0; i < n_th; i++)
            dup |= th[i] == v;
        if (!dup) {
            th[n_th++] = v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    assert_true(n_th > 0 && lo >= 2);
    int64_t total = 0;
    assert_int_equal(forward_blas_plan(m, BLAS_MODE_AUTO, lo - 1, &total, NULL), 0);
    assert_int_equal(forward_blas_plan(m, BLAS_MODE_AUTO, hi, NULL, NULL), want_weights);
    assert_int_equal(forward_blas_plan(m, BLAS_MODE_ON, 2, NULL, NULL), want_on);
    assert_int_equal(forward_blas_plan(m, BLAS_MODE_OFF, 4096, NULL, NULL), 0);
    assert_true(total >= want_weights);

    uint64_t calls;
    bool has;
    for (int i = 0; i < n_th; i++)
        for (int n = th[i] - 1; n <= th[i]; n++) {
            const int64_t plan = forward_blas_plan(m, BLAS_MODE_AUTO, n, NULL, NULL);
            free(run(m, BLAS_MODE_AUTO, n, &calls, &has));
            assert_int_equal(calls, (uint64_t)plan);
            assert_int_equal(has, plan > 0); /* no buffers for a batch that never reaches a threshold */
        }

    float *on = run(m, BLAS_MODE_AUTO, hi, &calls, &has);
    assert_int_equal(calls, (uint64_t)want_weights);
    float *off = run(m, BLAS_MODE_OFF, hi, &calls, &has);
    assert_int_equal(calls, 0);
    assert_false(has);
    forward_params p = forward_default_params();
    assert_int_equal(p.blas, BLAS_MODE_OFF); /* the library's default is the reference's bits */

    double diff = 0, mag = 0;
    int same_top = 0;
    for (int t = 0; t < hi; t++) {
        const float *a = on + (size_t)t * V, *b = off + (size_t)t * V;
        int ia = 0, ib = 0;
        for (int32_t v = 0; v < V; v++) {
            diff = fmax(diff, fabs((double)a[v] - b[v]));
            mag = fmax(mag, fabs((double)b[v]));
            ia = a[v] > a[ia] ? v : ia;
            ib = b[v] > b[ib] ? v : ib;
        }
        same_top += ia == ib;
    }
    print_message(
        "%s, %d tokens: auto ran %lld products; max |logit(auto) - logit(off)| %.3g (of %.3g); top-1 "
        "equal %d of %d\n",
        rel, hi, (long long)want_weights, diff, mag, same_top, hi);
    assert_true(diff > 0); /* the products did go another way */
    /* and only by rounding, amplified through the layers: Q8 activations
     * round a last-bit change into a whole step now and then, so a mixed
     * file drifts further than an all-F16 one */
    assert_true(diff < max_rel_diff * mag);
    assert_true(same_top >= hi * 95 / 100);
    free(on);
    free(off);
    model_free(m);
    blas_auto_assume_core(0);
}

static void test_blas_auto_f16_model(void **s)
{
    (void)s;
    /* 4 layers x 7 weights + the output head, all F16 */
    check_model_auto("models/tiny-spm-f16.gguf", 29, 29, 1e-2);
}

/* tiny-spm-mix's Q5_K matmul weights (one of them its token embeddings)
 * and its Q6_K ones */
#define MIX_Q5K 4
#define MIX_Q6K 3

static void test_blas_auto_mixed_model(void **s)
{
    (void)s;
    /* every block type in one file: 22 of its 29 matmul weights are of a
     * type OpenBLAS takes (not Q4_0, Q4_K, Q8_0); auto leaves Q5_K to the
     * few-token kernels or the Q5_K GEMM, Q6_K to the few-token kernels or
     * the re-encoded rows (which OpenBLAS cannot take at all) */
    int q5 = 0, q6 = 0, q6_on = 0;
#if defined(QUANT_HAVE_KFEW) || defined(GEMM_KQ5)
    q5 = MIX_Q5K;
#endif
#if defined(QUANT_HAVE_KFEW) || defined(PACKED_Q6_K)
    q6 = MIX_Q6K;
#endif
#ifdef PACKED_Q6_K
    q6_on = MIX_Q6K;
#endif
    check_model_auto("models/tiny-spm-mix.gguf", 22 - q5 - q6, 22 - q6_on, 5e-2);
}

/* OpenBLAS's pthreads build starts a server thread per extra core when the
 * library loads, and each polls with sched_yield for about 0.1 s before it
 * sleeps: on a 2-core machine that took a core from the first evaluations
 * (tiny-spm-q8_0 prompts at 0.56 of llama.cpp in short runs, 1.05 with
 * OPENBLAS_NUM_THREADS=1). tokscope calls OpenBLAS with one thread per call,
 * so no OpenBLAS thread may be left running once main starts. Run first,
 * before anything here creates a thread. */
static void test_blas_no_server_threads(void **s)
{
    (void)s;
    int n = 0;
    FILE *f = fopen("/proc/self/status", "r");
    assert_non_null(f);
    char line[256];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8))
            n = atoi(line + 8);
    fclose(f);
    if (n != 1)
        fail_msg("%d threads before any pool was created (OpenBLAS's server threads still running?)", n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blas_no_server_threads),
        cmocka_unit_test(test_blas_within_f32_rounding),
        cmocka_unit_test(test_blas_mixed_job),
        cmocka_unit_test(test_blas_decision),
        cmocka_unit_test(test_blas_auto_where_measured),
        cmocka_unit_test(test_blas_auto_zen4),
        cmocka_unit_test(test_blas_auto_f16_model),
        cmocka_unit_test(test_blas_auto_mixed_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
