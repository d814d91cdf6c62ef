/* Microbenchmark of the block kernels: tensor_matvec throughput per type
 * (weight GB/s and rows/s), the scalar reference for comparison, activation
 * quantization, and tensor_matmul with a batch of activations.
 * Not part of make test. Usage: bench_quant [n] [rows] [seconds-per-case] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "gguf/tensor.h"
#include "bench_util.h"

static void fill(float *x, int64_t n)
{
    uint32_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.1f;
    }
}

static volatile float sink;

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    int64_t rows = argc > 2 ? atoll(argv[2]) : 2048;
    double secs = argc > 3 ? atof(argv[3]) : 0.3;
    const enum tensor_type types[] = {
        TENSOR_TYPE_F32,  TENSOR_TYPE_F16,  TENSOR_TYPE_BF16, TENSOR_TYPE_Q8_0, TENSOR_TYPE_Q4_0,
        TENSOR_TYPE_Q4_1, TENSOR_TYPE_Q5_0, TENSOR_TYPE_Q5_1, TENSOR_TYPE_Q2_K, TENSOR_TYPE_Q3_K,
        TENSOR_TYPE_Q4_K, TENSOR_TYPE_Q5_K, TENSOR_TYPE_Q6_K,
    };
    float *x = malloc((size_t)n * 4);
    float *out = malloc((size_t)rows * 8 * sizeof(float));
    fill(x, n);
    printf("n=%lld rows=%lld, single thread\n", (long long)n, (long long)rows);
    printf("%-5s %10s %10s %12s %12s %12s %14s\n", "type", "GB/s", "rows/s", "vec_dot GB/s", "scalar GB/s",
           "quant act/s", "matmul8 GB/s");
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        enum tensor_type t = types[k], at = tensor_dot_type(t);
        size_t rs = tensor_row_size(t, n), ars = tensor_row_size(at, n);
        char *w = malloc(rs * (size_t)rows);
        char *act = malloc(ars * 8);
        for (int64_t r = 0; r < rows; r++) {
            x[r % n] += 0.01f;
            tensor_quantize_row(t, x, w + rs * (size_t)r, n);
        }
        for (int c = 0; c < 8; c++)
            tensor_quantize_row(at, x, act + ars * (size_t)c, n);

        int iters = 0;
        double t0 = now(), el;
        do {
            tensor_matvec(t, n, w, rows, act, out);
            iters++;
        } while ((el = now() - t0) < secs);
        double gbs = (double)rs * (double)rows * iters / el / 1e9;
        double rps = (double)rows * iters / el;

        /* the same rows through tensor_vec_dot one at a time */
        iters = 0;
        t0 = now();
        do {
            for (int64_t r = 0; r < rows; r++)
                out[r] = tensor_vec_dot(t, n, w + rs * (size_t)r, act);
            iters++;
        } while ((el = now() - t0) < secs);
        double vgbs = (double)rs * (double)rows * iters / el / 1e9;

        int64_t srows = rows / 8;
        iters = 0;
        t0 = now();
        do {
            for (int64_t r = 0; r < srows; r++)
                out[r] = quant_vec_dot_scalar(t, n, w + rs * (size_t)r, act);
            iters++;
        } while ((el = now() - t0) < secs / 2);
        double sgbs = (double)rs * (double)srows * iters / el / 1e9;

        iters = 0;
        t0 = now();
        do {
            tensor_quantize_row(at, x, act, n);
            iters++;
        } while ((el = now() - t0) < secs / 4);
        double qps = iters / el;

        iters = 0;
        t0 = now();
        do {
            tensor_matmul(t, n, w, rows, act, 8, ars, out, rows);
            iters++;
        } while ((el = now() - t0) < secs);
        double mgbs = (double)rs * (double)rows * 8 * iters / el / 1e9;

        sink = out[0];
        printf("%-5s %10.2f %10.0f %12.2f %12.2f %12.0f %14.2f\n", tensor_type_name(t), gbs, rps, vgbs, sgbs, qps, mgbs);
        free(w);
        free(act);
    }
    free(x);
    free(out);
    return 0;
}
