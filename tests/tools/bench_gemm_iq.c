/* Microbenchmark of the IQ integer GEMM (kernels/gemm_iq.h) against the
 * vec_dot tiles it replaces (tensor_matmul), one thread, random weights of
 * the TinyLlama-1.1B matrix shapes against a batch of Q8_K tokens. Prints
 * tokens per second per matrix and for one layer's seven matmuls (q, k, v,
 * o, gate, up, down), and checks that both give the same bits.
 * Not part of make test. Usage: bench_gemm_iq [tokens] [seconds-per-case]
 * [gemm] [TYPE]: with "gemm", only the GEMM is timed (no vec_dot tiles, no
 * bit check), for comparing two builds of it quickly; a type name (IQ4_XS,
 * IQ2_XXS, IQ3_S, IQ1_M, and IQ2_XS, IQ2_S, IQ3_XXS, which run only when
 * named) runs that type only. The vec_dot tiles and the
 * GEMM run alternately, each case's time its fastest run (CPU time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/tensor.h"
#include "kernels/gemm_iq.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "bench_util.h"

static uint32_t rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

int main(int argc, char **argv)
{
    const int nt = argc > 1 ? atoi(argv[1]) : 512;
    const double secs = argc > 2 ? atof(argv[2]) : 0.5;
    const int gemm_only = argc > 3 && strcmp(argv[3], "gemm") == 0;
    const char *only = argc > 3 + gemm_only ? argv[3 + gemm_only] : NULL;
    const enum tensor_type types[] = {TENSOR_TYPE_IQ4_XS, TENSOR_TYPE_IQ2_XXS, TENSOR_TYPE_IQ3_S, TENSOR_TYPE_IQ1_M,
                                      TENSOR_TYPE_IQ2_XS,  TENSOR_TYPE_IQ2_S,   TENSOR_TYPE_IQ3_XXS};
    const char *names[] = {"IQ4_XS", "IQ2_XXS", "IQ3_S", "IQ1_M", "IQ2_XS", "IQ2_S", "IQ3_XXS"};
    /* the last three only when named (the table's rows are the first four) */
    /* TinyLlama: dim 2048, 4 kv heads of 64, ffn 5632; q k v o gate up down */
    const int64_t shp[7][2] = {{2048, 2048}, {2048, 256}, {2048, 256}, {2048, 2048},
                               {2048, 5632}, {2048, 5632}, {5632, 2048}};
    for (int ti = 0; ti < 7; ti++) {
        const enum tensor_type t = types[ti];
        if (only ? strcmp(only, names[ti]) != 0 : ti >= 4)
            continue;
        double layer[2] = {0, 0};
        for (int m = 0; m < 7; m++) {
            const int64_t n = shp[m][0], rows = shp[m][1];
            const size_t rs = tensor_row_size(t, n), as = tensor_row_size(TENSOR_TYPE_Q8_K, n);
            uint8_t *w = malloc(rs * (size_t)rows), *a = malloc(as * (size_t)nt);
            float *x = malloc(sizeof(float) * (size_t)n);
            float *o1 = malloc(sizeof(float) * (size_t)(rows * nt)), *o2 = malloc(sizeof(float) * (size_t)(rows * nt));
            for (size_t i = 0; i < rs * (size_t)rows; i++)
                w[i] = (uint8_t)rnd();
            for (size_t o = 0; o < rs * (size_t)rows; o += tensor_type_size(t)) {
                const uint16_t h = tensor_fp32_to_fp16((float)(1 + rnd() % 4096) / 65536.0f);
                memcpy(w + o, &h, 2);
                if (t == TENSOR_TYPE_IQ1_M) /* its d: the top nibbles of the four scales */
                    for (int k = 0; k < 4; k++)
                        w[o + 49 + 2 * k] = (uint8_t)((w[o + 49 + 2 * k] & 0x0F) | ((h >> 4 * k) & 15) << 4);
            }
            for (int c = 0; c < nt; c++) {
                for (int64_t i = 0; i < n; i++)
                    x[i] = (float)(rnd() % 20001) / 10000.0f - 1.0f;
                tensor_quantize_row(TENSOR_TYPE_Q8_K, x, a + as * (size_t)c, n);
            }
            gguf_tensor wt;
            memset(&wt, 0, sizeof wt);
            wt.n_dims = 2;
            wt.ne[0] = n;
            wt.ne[1] = rows;
            wt.ne[2] = wt.ne[3] = 1;
            wt.type = t;
            wt.data = w;
            double tpt[2] = {gemm_only ? 1 : 1e30, 1e30};
            /* alternately, the fastest run of each: others' work on a shared machine only adds */
            const double t0 = now();
            do {
                for (int k = gemm_only; k < 2; k++) {
                    const double r0 = now();
                    if (k == 0)
                        tensor_matmul(t, n, w, rows, a, nt, as, o1, rows);
                    else
                        gemm_iq_matmul(&wt, n, 0, rows, a, as, NULL, nt, o2, rows);
                    const double dt = now() - r0;
                    tpt[k] = dt < tpt[k] ? dt : tpt[k];
                }
            } while (now() - t0 < secs * (2 - gemm_only));
            layer[0] += tpt[0];
            layer[1] += tpt[1];
            const int same = gemm_only || memcmp(o1, o2, sizeof(float) * (size_t)(rows * nt)) == 0;
            if (gemm_only)
                printf("%-8s %5lld x %5lld, %d tokens: gemm %8.1f tok/s\n", names[ti], (long long)rows, (long long)n, nt,
                       nt / tpt[1]);
            else
                printf("%-8s %5lld x %5lld, %d tokens: vec_dot tiles %8.1f tok/s, gemm %8.1f tok/s (%.2fx)%s\n",
                       names[ti], (long long)rows, (long long)n, nt, nt / tpt[0], nt / tpt[1], tpt[0] / tpt[1],
                       same ? "" : "  BITS DIFFER");
            free(w);
            free(a);
            free(x);
            free(o1);
            free(o2);
        }
        if (gemm_only)
            printf("%-8s one layer's matmuls, %d tokens, one thread: gemm %.1f layer-tok/s\n", names[ti], nt,
                   nt / layer[1]);
        else
            printf("%-8s one layer's matmuls, %d tokens, one thread: vec_dot tiles %.1f layer-tok/s, gemm %.1f (%.2fx)\n",
                   names[ti], nt, nt / layer[0], nt / layer[1], layer[0] / layer[1]);
    }
    return 0;
}
