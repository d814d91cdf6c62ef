/* Microbenchmark of the K-quant kernels with a few tokens: tensor_matvec
 * (1 token) and tensor_matmul (2..16 tokens), one thread, random weights,
 * ns per row x token x 256-block (CPU time), and a check that every output
 * equals tensor_vec_dot's bits.
 * Not part of make test. Usage: bench_kfew [n] [rows] [seconds-per-case] [types: q6_k,q4_k,q5_k] [tokens: 1,2,4,8] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/tensor.h"
#include "kernels/quant_batch.h"
#include "bench_util.h"

static volatile float sink;

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 2048;
    const int64_t rows = argc > 2 ? atoll(argv[2]) : 512;
    const double secs = argc > 3 ? atof(argv[3]) : 0.3;
    const char *want = argc > 4 ? argv[4] : "q6_k";
    const char *toks = argc > 5 ? argv[5] : "1,2,4,8";
    const struct {
        const char *name;
        enum tensor_type t;
    } types[] = {{"q6_k", TENSOR_TYPE_Q6_K}, {"q4_k", TENSOR_TYPE_Q4_K}, {"q5_k", TENSOR_TYPE_Q5_K}};
    printf("n=%lld rows=%lld, one thread, ns per row x token x 256-block\n", (long long)n, (long long)rows);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        if (!strstr(want, types[ti].name))
            continue;
        const enum tensor_type t = types[ti].t, dot = tensor_dot_type(t);
        const size_t rs = tensor_row_size(t, n), as = tensor_row_size(dot, n);
        uint8_t *w = malloc(rs * (size_t)rows), *a = malloc(as * 16);
        float *x = malloc(sizeof(float) * (size_t)n), *o = malloc(sizeof(float) * (size_t)rows * 16);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t i = 0; i < n; i++)
                x[i] = rndf();
            tensor_quantize_row(t, x, w + rs * (size_t)r, n);
        }
        for (int c = 0; c < 16; c++) {
            for (int64_t i = 0; i < n; i++)
                x[i] = rndf();
            tensor_quantize_row(dot, x, a + as * (size_t)c, n);
        }
        printf("%s:", tensor_type_name(t));
        for (const char *p = toks; *p;) {
            const int nt = atoi(p);
            if (nt < 1 || nt > 16)
                break;
            int iters = 0;
            double el, t0 = now();
            do {
                if (nt == 1)
                    tensor_matvec(t, n, w, rows, a, o);
                else
                    tensor_matmul(t, n, w, rows, a, nt, as, o, rows);
                iters++;
            } while ((el = now() - t0) < secs);
            int bad = 0;
            for (int c = 0; c < nt; c++)
                for (int64_t r = 0; r < rows; r++) {
                    const float v = tensor_vec_dot(t, n, w + rs * (size_t)r, a + as * (size_t)c);
                    bad += memcmp(&v, &o[c * rows + r], sizeof v) != 0;
                }
            sink = o[0];
            printf("  %d tok %.3f%s", nt, el * 1e9 / iters / (double)(rows * nt * (n / 256)), bad ? " (BITS DIFFER)" : "");
            fflush(stdout);
            p = strchr(p, ',');
            if (!p)
                break;
            p++;
        }
        printf("\n");
        free(w);
        free(a);
        free(x);
        free(o);
    }
    return 0;
}
