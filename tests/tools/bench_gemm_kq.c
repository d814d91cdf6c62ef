/* Microbenchmark of the K-quant prompt GEMMs (kernels/gemm_kq5.h,
 * gemm_kq6.h, gemm_kq4v.h for a MoE expert's Q4_K tokens, and
 * packed_q8_0_rows for its Q8_0 tokens: q8_0_pack) against the
 * few-token kernels they replace for batches (tensor_matmul;
 * refk_matmul_gemv for q4_k_gemv), one thread, random weights, alternating
 * the two, ns per row x token x 256-block (CPU time; the GEMM's first call
 * also allocates its per-thread scratch), and a check that every output
 * equals the one-token bits (tensor_vec_dot; the gemv). Not part of make
 * test.
 * With experts > 1 each call takes the next of that many copies of the
 * weights (as a prompt's MoE step does), so that they come from memory,
 * not the caches: each "round" is then one call per expert.
 * Usage: bench_gemm_kq q5_k|q6_k|q4_k_gemv|q8_0_pack [n] [rows] [tokens] [rounds] [experts] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/tensor.h"
#include "kernels/forward_repack.h"
#include "kernels/gemm_kq4v.h"
#include "kernels/gemm_kq5.h"
#include "kernels/gemm_kq6.h"
#include "kernels/packed_q8_0.h"
#include "kernels/quant_batch.h"
#include "bench_util.h"

int main(int argc, char **argv)
{
    if (argc < 2 ||
        (strcmp(argv[1], "q5_k") != 0 && strcmp(argv[1], "q6_k") != 0 && strcmp(argv[1], "q4_k_gemv") != 0 &&
         strcmp(argv[1], "q8_0_pack") != 0)) {
        fprintf(stderr, "usage: bench_gemm_kq q5_k|q6_k|q4_k_gemv|q8_0_pack [n] [rows] [tokens] [rounds] [experts]\n");
        return 2;
    }
    const bool q5 = strcmp(argv[1], "q5_k") == 0, q4v = strcmp(argv[1], "q4_k_gemv") == 0;
    const bool q8 = strcmp(argv[1], "q8_0_pack") == 0;
    const int64_t n = argc > 2 ? atoll(argv[2]) : 2048;
    const int64_t rows = argc > 3 ? atoll(argv[3]) : 512;
    const int nt = argc > 4 ? atoi(argv[4]) : 512;
    const int rounds = argc > 5 ? atoi(argv[5]) : 3;
    const int nx = argc > 6 && atoi(argv[6]) > 1 ? atoi(argv[6]) : 1;
    const enum tensor_type t = q8 ? TENSOR_TYPE_Q8_0 : q4v ? TENSOR_TYPE_Q4_K : q5 ? TENSOR_TYPE_Q5_K : TENSOR_TYPE_Q6_K;
    const enum tensor_type dot = q8 ? TENSOR_TYPE_Q8_0 : TENSOR_TYPE_Q8_K;
    const size_t rs = tensor_row_size(t, n), as = tensor_row_size(dot, n);
    uint8_t *w = malloc(rs * (size_t)rows * (size_t)nx), *a = malloc(as * (size_t)nt);
    float *x = malloc(sizeof(float) * (size_t)n), *o = malloc(sizeof(float) * (size_t)rows * (size_t)nt);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = rndf();
        tensor_quantize_row(t, x, w + rs * (size_t)r, n);
    }
    for (int e = 1; e < nx; e++)
        memcpy(w + rs * (size_t)rows * (size_t)e, w, rs * (size_t)rows);
    for (int c = 0; c < nt; c++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = rndf();
        tensor_quantize_row(dot, x, a + as * (size_t)c, n);
    }
    float *one = malloc(sizeof(float) * (size_t)rows);
    const gguf_tensor wt = {.name = "w", .n_dims = 2, .ne = {n, rows, 1, 1}, .type = t, .data = w};
    const double cells = (double)rows * nt * (double)(n / 256) * nx;
    printf("%s n=%lld rows=%lld tokens=%d experts=%d, one thread, ns per row x token x 256-block\n", argv[1],
           (long long)n, (long long)rows, nt, nx);
    for (int rd = 0; rd < rounds; rd++)
        for (int k = 0; k < 2; k++) {
            memset(o, 0xff, sizeof(float) * (size_t)rows * (size_t)nt);
            const double t0 = now();
            for (int e = 0; e < nx; e++) {
                const uint8_t *we = w + rs * (size_t)rows * (size_t)e;
                gguf_tensor wte = wt;
                wte.data = we;
                if (k == 0 && q4v)
                    refk_matmul_gemv(&wte, n, 0, rows, a, as, nt, o, rows);
                else if (k == 0)
                    tensor_matmul(t, n, we, rows, a, nt, as, o, rows);
                else if (q8)
                    packed_q8_0_rows(we, rs, n / 32, 0, rows, a, as, nt, o, rows);
                else if (q4v)
                    gemm_kq4v_rows(n, we, rs, 0, rows, a, as, nt, o, rows);
                else if (q5)
                    gemm_kq5_rows(n, we, rs, 0, rows, a, as, nt, o, rows);
                else
                    gemm_kq6_rows(n, we, rs, 0, rows, a, as, nt, o, rows);
            }
            const double el = now() - t0;
            int bad = 0;
            for (int c = 0; c < nt; c += 7)
                for (int64_t r = 0; r < rows; r++) {
                    float v;
                    if (q4v) { /* the gemv, one token: out[r] */
                        refk_matmul(&wt, n, r, r + 1, a + as * (size_t)c, as, 1, one, 0);
                        v = one[r];
                    } else {
                        v = tensor_vec_dot(t, n, w + rs * (size_t)r, a + as * (size_t)c);
                    }
                    bad += memcmp(&v, &o[(size_t)c * (size_t)rows + (size_t)r], sizeof v) != 0;
                }
            printf("  %s %.3f%s", k ? "gemm" : "few ", el * 1e9 / cells, bad ? " (BITS DIFFER)" : "");
            fflush(stdout);
        }
    printf("\n");
    free(w);
    free(a);
    free(x);
    free(o);
    free(one);
    return 0;
}
