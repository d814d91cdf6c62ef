/* Microbenchmark of the packed-weight prompt kernels (kernels/forward_packed.h)
 * against tensor_matmul (the reference's vec_dot / tinyBLAS order, what an
 * AVX2 build runs for Q8_0), one thread, random weights of the
 * TinyLlama-1.1B matrix shapes against a batch of tokens. Prints, per
 * matrix and for one layer's seven matmuls (q, k, v, o, gate, up, down),
 * ns per row x token x 32-weight block and tokens per second, and checks
 * the packed bits against the reference's chain for that weight: its
 * repacked kernels where it repacks (Q4_0, Q4_K; their sums differ from
 * vec_dot's in the reference too), tensor_matmul otherwise.
 * MXFP4 runs against repack_matmul, its unpacked path.
 * Not part of make test. Usage: bench_packed [tokens] [seconds-per-case] [types: q8_0,q4_0,q4_k,mxfp4] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/tensor.h"
#include "kernels/forward_packed.h"
#include "kernels/forward_repack.h"
#include "kernels/quant_batch.h"
#include "bench_util.h"

int main(int argc, char **argv)
{
    const int nt = argc > 1 ? atoi(argv[1]) : 512;
    const double secs = argc > 2 ? atof(argv[2]) : 0.5;
    const char *want = argc > 3 ? argv[3] : "q8_0";
    const struct {
        const char *name;
        enum tensor_type t;
    } types[] = {{"q8_0", TENSOR_TYPE_Q8_0}, {"q4_0", TENSOR_TYPE_Q4_0}, {"q4_k", TENSOR_TYPE_Q4_K},
                 {"mxfp4", TENSOR_TYPE_MXFP4}};
    /* TinyLlama: dim 2048, 4 kv heads of 64, ffn 5632; q k v o gate up down */
    const int64_t shp[7][2] = {{2048, 2048}, {2048, 256}, {2048, 256}, {2048, 2048},
                               {2048, 5632}, {2048, 5632}, {5632, 2048}};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        if (!strstr(want, types[ti].name))
            continue;
        const enum tensor_type t = types[ti].t, dot = tensor_dot_type(t);
        double layer[2] = {0, 0}, blocks = 0;
        for (int m = 0; m < 7; m++) {
            const int64_t n = shp[m][0], rows = shp[m][1];
            const size_t rs = tensor_row_size(t, n), as = tensor_row_size(dot, n);
            uint8_t *w = malloc(rs * (size_t)rows), *a = malloc(as * (size_t)nt);
            float *x = malloc(sizeof(float) * (size_t)n);
            float *o1 = malloc(sizeof(float) * (size_t)(rows * nt)), *o2 = malloc(sizeof(float) * (size_t)(rows * nt));
            for (int64_t r = 0; r < rows; r++) {
                for (int64_t i = 0; i < n; i++)
                    x[i] = rndf();
                tensor_quantize_row(t, x, w + rs * (size_t)r, n);
            }
            for (int c = 0; c < nt; c++) {
                for (int64_t i = 0; i < n; i++)
                    x[i] = rndf();
                tensor_quantize_row(dot, x, a + as * (size_t)c, n);
            }
            gguf_tensor wt;
            memset(&wt, 0, sizeof wt);
            wt.n_dims = 2;
            wt.ne[0] = n;
            wt.ne[1] = rows;
            wt.ne[2] = wt.ne[3] = 1;
            wt.type = t;
            wt.data = w;
            const size_t pb = packed_bytes(&wt), eb = packed_act_bytes(&wt);
            uint8_t *pk = pb ? aligned_alloc(64, (pb + 63) & ~(size_t)63) : NULL;
            uint8_t *extra = eb ? aligned_alloc(64, (eb * (size_t)nt + 63) & ~(size_t)63) : NULL;
            if (pk)
                packed_build(&wt, pk, 0, packed_groups(&wt));
            double tpt[2];
            for (int k = 0; k < 2; k++) {
                int reps = 0;
                const double t0 = now();
                do {
                    if (k == 0 && t == TENSOR_TYPE_MXFP4) /* the unpacked weights' own path */
                        repack_matmul(&wt, n, 0, rows, a, as, nt, o1, rows);
                    else if (k == 0)
                        tensor_matmul(t, n, w, rows, a, nt, as, o1, rows);
                    else {
                        if (extra) /* once per matmul in the forward pass too */
                            packed_act_prepare(&wt, a, as, nt, extra);
                        packed_matmul(&wt, pk, 0, rows, a, as, extra, nt, o2, rows);
                    }
                    reps++;
                } while (now() - t0 < secs);
                tpt[k] = (now() - t0) / reps;
                layer[k] += tpt[k];
            }
            const double nblk = (double)rows * nt * (double)(n / 32);
            blocks += nblk;
            if (repack_applies(&wt))
                repack_matmul(&wt, n, 0, rows, a, as, nt, o1, rows);
            else if (refk_applies(&wt))
                refk_matmul(&wt, n, 0, rows, a, as, nt, o1, rows);
            const int same = memcmp(o1, o2, sizeof(float) * (size_t)(rows * nt)) == 0;
            printf("%-5s %5lld x %5lld, %d tokens: tensor_matmul %6.3f ns/blk %7.1f tok/s, packed %6.3f ns/blk "
                   "%7.1f tok/s (%.2fx)%s\n",
                   types[ti].name, (long long)rows, (long long)n, nt, 1e9 * tpt[0] / nblk, nt / tpt[0],
                   1e9 * tpt[1] / nblk, nt / tpt[1], tpt[0] / tpt[1], same ? "" : "  BITS DIFFER");
            free(w);
            free(a);
            free(x);
            free(o1);
            free(o2);
            free(pk);
            free(extra);
        }
        printf("%-5s one layer's matmuls, %d tokens, one thread: tensor_matmul %.3f ns/blk %.1f layer-tok/s, "
               "packed %.3f ns/blk %.1f layer-tok/s (%.2fx)\n",
               types[ti].name, nt, 1e9 * layer[0] / blocks, nt / layer[0], 1e9 * layer[1] / blocks, nt / layer[1],
               layer[0] / layer[1]);
    }
    return 0;
}
