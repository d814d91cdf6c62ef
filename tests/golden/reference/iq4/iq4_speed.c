/* One-thread kernel timings, tokscope against the reference (llama.cpp
 * 34af94cd's ggml, /work/ref), on the same random IQ4_NL / IQ4_XS matrix:
 * one token (vec_dot / repacked gemv) and a batch (repacked gemm,
 * tinyBLAS, vec_dot per pair). Each line also checks that both give the
 * same bits. Build: see README.md (link build/libtokscope.a too). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-cpu.h"
#include "ggml.h"

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_iq4.h"

int _ZN4ggml3cpu6repack6repackI12block_iq4_nlLl8ELl8EEEiP11ggml_tensorPKvm(struct ggml_tensor *t, const void *data,
                                                                          size_t size);
void _ZN4ggml3cpu6repack4gemvI12block_iq4_nlLl8ELl8EL9ggml_type8EEEviPfmPKvS7_ii(int n, float *s, size_t bs,
                                                                                  const void *vx, const void *vy,
                                                                                  int nr, int nc);
void _ZN4ggml3cpu6repack4gemmI12block_iq4_nlLl8ELl8EL9ggml_type8EEEviPfmPKvS7_ii(int n, float *s, size_t bs,
                                                                                  const void *vx, const void *vy,
                                                                                  int nr, int nc);
void _Z19ggml_quantize_mat_tILl8EL9ggml_type8EEvPKfPvll(const float *x, void *vy, int64_t nrow, int64_t n_per_row);

enum { N = 4096, ROWS = 1024, TOK = 64 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static void fill(enum ggml_type t, uint8_t *w, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)rnd();
    for (size_t o = 0; o < bytes; o += ggml_type_size(t)) {
        const ggml_fp16_t h = ggml_fp32_to_fp16((float)(1 + rnd() % 1000) / 32768.0f);
        memcpy(w + o, &h, 2);
    }
}

static int same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

/* The best of `reps` runs of each, alternating (the machine is shared:
 * a slow spell hits both). */
#define PAIR(reps, code_a, code_b)                                                                                     \
    do {                                                                                                               \
        ta = tb = 1e30;                                                                                                \
        for (int r_ = 0; r_ < (reps); r_++) {                                                                          \
            double t0_ = now();                                                                                        \
            code_a;                                                                                                    \
            double t_ = now() - t0_;                                                                                   \
            ta = t_ < ta ? t_ : ta;                                                                                    \
            t0_ = now();                                                                                               \
            code_b;                                                                                                    \
            t_ = now() - t0_;                                                                                          \
            tb = t_ < tb ? t_ : tb;                                                                                    \
        }                                                                                                              \
    } while (0)

int main(void)
{
    ggml_cpu_init();
    struct ggml_init_params ip = {512 * 1024 * 1024, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    float *x = malloc(sizeof(float) * N * TOK), *o1 = malloc(sizeof(float) * ROWS * TOK),
          *o2 = malloc(sizeof(float) * ROWS * TOK);
    for (int i = 0; i < N * TOK; i++)
        x[i] = (float)(rnd() % 20001) / 10000.0f - 1.0f;
    double ta, tb;

    /* ---- IQ4_NL ---- */
    for (int rows = ROWS; rows >= ROWS - 4; rows -= 4) { /* 1024: repacked; 1020: vec_dot / tinyBLAS */
        struct ggml_tensor *W = ggml_new_tensor_2d(ctx, GGML_TYPE_IQ4_NL, N, rows);
        struct ggml_tensor *X = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, TOK);
        memcpy(X->data, x, sizeof(float) * N * TOK);
        fill(GGML_TYPE_IQ4_NL, W->data, ggml_nbytes(W));
        const size_t as = ggml_row_size(GGML_TYPE_Q8_0, N), rs = ggml_row_size(GGML_TYPE_IQ4_NL, N);
        uint8_t *a = malloc(as * TOK);
        for (int t = 0; t < TOK; t++)
            ggml_get_type_traits_cpu(GGML_TYPE_Q8_0)->from_float(x + N * t, a + as * t, N);
        gguf_tensor w;
        memset(&w, 0, sizeof w);
        w.n_dims = 2, w.ne[0] = N, w.ne[1] = rows, w.ne[2] = w.ne[3] = 1, w.type = TENSOR_TYPE_IQ4_NL;
        w.data = W->data;
        if (rows % 8 == 0) {
            struct ggml_tensor *R = ggml_new_tensor_2d(ctx, GGML_TYPE_IQ4_NL, N, rows);
            _ZN4ggml3cpu6repack6repackI12block_iq4_nlLl8ELl8EEEiP11ggml_tensorPKvm(R, W->data, ggml_nbytes(W));
            PAIR(30, _ZN4ggml3cpu6repack4gemvI12block_iq4_nlLl8ELl8EL9ggml_type8EEEviPfmPKvS7_ii(N, o1, rows, R->data, a, 1, rows), quant_iq4_nl_batch_matmul(&w, N, 0, rows, a, as, 1, o2, rows));
            printf("iq4_nl repacked gemv  1 token : ref %7.3f ms  tokscope %7.3f ms  (%.2fx) %s\n", ta * 1e3, tb * 1e3,
                   ta / tb, same(o1, o2, rows) ? "same bits" : "DIFFERENT");
            uint8_t *a4 = malloc(as * TOK);
            for (int g = 0; g < TOK / 4; g++)
                _Z19ggml_quantize_mat_tILl8EL9ggml_type8EEvPKfPvll(x + (size_t)N * 4 * g, a4 + as * 4 * g, 4, N);
            PAIR(10, for (int g = 0; g < TOK / 4; g++) _ZN4ggml3cpu6repack4gemmI12block_iq4_nlLl8ELl8EL9ggml_type8EEEviPfmPKvS7_ii(N, o1 + (size_t)rows * 4 * g, rows, R->data, a4 + as * 4 * g, 4, rows), quant_iq4_nl_batch_matmul(&w, N, 0, rows, a, as, TOK, o2, rows));
            printf("iq4_nl repacked gemm %d tokens: ref %7.3f ms  tokscope %7.3f ms  (%.2fx) %s\n", TOK, ta * 1e3,
                   tb * 1e3, ta / tb, same(o1, o2, (size_t)rows * TOK) ? "same bits" : "DIFFERENT");
            free(a4);
        } else {
            const struct ggml_type_traits_cpu *tc = ggml_get_type_traits_cpu(GGML_TYPE_IQ4_NL);
            PAIR(30, for (int r = 0; r < rows; r++) tc->vec_dot(N, o1 + r, 0, (const uint8_t *)W->data + rs * r, 0, a, 0, 1), tensor_matvec(TENSOR_TYPE_IQ4_NL, N, W->data, rows, a, o2));
            printf("iq4_nl vec_dot        1 token : ref %7.3f ms  tokscope %7.3f ms  (%.2fx) %s\n", ta * 1e3, tb * 1e3,
                   ta / tb, same(o1, o2, rows) ? "same bits" : "DIFFERENT");
            struct ggml_tensor *Y = ggml_mul_mat(ctx, W, X);
            struct ggml_cgraph *g = ggml_new_graph(ctx);
            ggml_build_forward_expand(g, Y);
            /* the reference's time includes quantizing X */
            PAIR(10, ggml_graph_compute_with_ctx(ctx, g, 1), quant_iq4_nl_batch_matmul(&w, N, 0, rows, a, as, TOK, o2, rows));
            printf("iq4_nl tinyBLAS %d tokens     : ref %7.3f ms  tokscope %7.3f ms  (%.2fx) %s\n", TOK, ta * 1e3,
                   tb * 1e3, ta / tb, same(Y->data, o2, (size_t)rows * TOK) ? "same bits" : "DIFFERENT");
        }
        free(a);
    }

    /* ---- IQ4_XS ---- */
    {
        struct ggml_tensor *W = ggml_new_tensor_2d(ctx, GGML_TYPE_IQ4_XS, N, ROWS);
        struct ggml_tensor *X = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, TOK);
        memcpy(X->data, x, sizeof(float) * N * TOK);
        fill(GGML_TYPE_IQ4_XS, W->data, ggml_nbytes(W));
        const size_t as = ggml_row_size(GGML_TYPE_Q8_K, N), rs = ggml_row_size(GGML_TYPE_IQ4_XS, N);
        uint8_t *a = malloc(as * TOK);
        for (int t = 0; t < TOK; t++)
            ggml_get_type_traits_cpu(GGML_TYPE_Q8_K)->from_float(x + N * t, a + as * t, N);
        const struct ggml_type_traits_cpu *tc = ggml_get_type_traits_cpu(GGML_TYPE_IQ4_XS);
        PAIR(30, for (int r = 0; r < ROWS; r++) tc->vec_dot(N, o1 + r, 0, (const uint8_t *)W->data + rs * r, 0, a, 0, 1), tensor_matvec(TENSOR_TYPE_IQ4_XS, N, W->data, ROWS, a, o2));
        printf("iq4_xs vec_dot        1 token : ref %7.3f ms  tokscope %7.3f ms  (%.2fx) %s\n", ta * 1e3, tb * 1e3,
               ta / tb, same(o1, o2, ROWS) ? "same bits" : "DIFFERENT");
        struct ggml_tensor *Y = ggml_mul_mat(ctx, W, X);
        struct ggml_cgraph *g = ggml_new_graph(ctx);
        ggml_build_forward_expand(g, Y);
        /* the reference's time includes quantizing X */
        PAIR(10, ggml_graph_compute_with_ctx(ctx, g, 1), tensor_matmul(TENSOR_TYPE_IQ4_XS, N, W->data, ROWS, a, TOK, as, o2, ROWS));
        printf("iq4_xs mul_mat %d tokens      : ref %7.3f ms  tokscope %7.3f ms  (%.2fx) %s\n", TOK, ta * 1e3, tb * 1e3,
               ta / tb, same(Y->data, o2, (size_t)ROWS * TOK) ? "same bits" : "DIFFERENT");
        free(a);
    }
    return 0;
}
