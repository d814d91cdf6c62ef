/* Microbenchmark of the IQ types' one-token kernels: tensor_matvec (the
 * AVX-512 matvecs where built) against a loop over the table's vec_dot
 * (the AVX2 kernels), in ns per row x super-block of thread CPU time.
 * Not part of make test. Usage: bench_matvec_iq [n] [rows] [seconds] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/tensor.h"
#include "kernels/quant_internal.h"
#include "bench_util.h"

static volatile float sink;

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 2048;
    const int64_t rows = argc > 2 ? atoll(argv[2]) : 2048;
    const double secs = argc > 3 ? atof(argv[3]) : 0.5;
    const enum tensor_type types[] = {TENSOR_TYPE_IQ2_XXS, TENSOR_TYPE_IQ4_XS, TENSOR_TYPE_IQ3_S,
                                      TENSOR_TYPE_IQ1_M};
    float *x = malloc((size_t)n * sizeof *x), *out = malloc((size_t)rows * sizeof *out);
    uint32_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.1f;
    }
    uint8_t *act = malloc(tensor_row_size(TENSOR_TYPE_Q8_K, n));
    tensor_quantize_row(TENSOR_TYPE_Q8_K, x, act, n);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const enum tensor_type t = types[k];
        const struct quant_kernels *qk = quant_kernels_get(t);
        if (!qk || !qk->vec_dot)
            continue;
        const size_t rs = tensor_row_size(t, n);
        uint8_t *w = malloc(rs * (size_t)rows);
        for (size_t i = 0; i < rs * (size_t)rows; i++) {
            s = s * 1664525u + 1013904223u;
            w[i] = (uint8_t)(s >> 24);
        }
        for (int64_t r = 0; r < rows * (int64_t)(rs / tensor_type_size(t)); r++) /* small F16 scales */
            memcpy(w + (size_t)r * tensor_type_size(t), &(uint16_t){0x2000}, 2);
        double tm = 0, tv = 0;
        int64_t im = 0, iv = 0;
        for (double t0 = now(); (tm = now() - t0) < secs; im++)
            tensor_matvec(t, n, w, rows, act, out);
        sink = out[0];
        for (double t0 = now(); (tv = now() - t0) < secs; iv++)
            for (int64_t r = 0; r < rows; r++)
                out[r] = qk->vec_dot(n, w + rs * (size_t)r, act);
        sink = out[0];
        const double per = (double)rows * (double)(n / QK_K);
        printf("%-8s n=%lld rows=%lld  matvec %.2f ns  vec_dot loop %.2f ns  per row x block  (%.2fx)\n",
               tensor_type_name(t), (long long)n, (long long)rows, 1e9 * tm / (double)im / per,
               1e9 * tv / (double)iv / per, (tv / (double)iv) / (tm / (double)im));
        free(w);
    }
    free(x);
    free(out);
    free(act);
    return 0;
}
