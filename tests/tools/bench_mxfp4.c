/* Microbenchmark of the MXFP4 matmul (kernels/repack_mxfp4.h), one thread:
 * random MXFP4 rows of TinyLlama-1.1B's FFN shapes (2048 -> 5632, 5632 ->
 * 2048) and gpt-oss-20b's expert (2880 -> 2880) against a batch of Q8_0
 * tokens. Prints each case's fastest run (CPU time) in ms and tokens per
 * second, and checks a sample of outputs against the one-row repacked
 * chain bit for bit. Not part of make test. Build it against two trees and
 * alternate the binaries to compare kernels on a shared machine.
 * Usage: bench_mxfp4 [seconds-per-case] [tokens | n,rows,tokens[,copies] ...]
 * (default 0.5 s; 512 tokens for the dense shapes, 16 32 64 for the
 * expert; a count from 128 on runs both dense shapes, below the expert;
 * copies: that many matrices used in turn, so that the weights come from
 * memory, as a model's experts do). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "gguf/tensor.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_mxfp4.h"
#include "kernels/repack_mxfp4.h"

/* bench_util.h's generator, as whole numbers (bytes, nibbles, scales) */
static uint32_t rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

static int run_case(int64_t n, int64_t rows, int nt, int copies, double secs)
{
    const int64_t nb = n / 32;
    const size_t rb = (size_t)nb * sizeof(block_mxfp4), as = (size_t)nb * sizeof(block_q8_0);
    /* copies > 1: that many matrices in turn, as a model's experts come
     * from memory rather than the caches */
    block_mxfp4 *w0 = malloc(rb * (size_t)rows * (size_t)copies), *w = w0;
    uint8_t *a = malloc(as * (size_t)nt);
    float *x = malloc(sizeof(float) * (size_t)n), *o = malloc(sizeof(float) * (size_t)(rows * nt));
    for (int64_t i = 0; i < rows * nb * copies; i++) {
        w[i].e = (uint8_t)(118 + rnd() % 16);
        for (int j = 0; j < 16; j++)
            w[i].qs[j] = (uint8_t)rnd();
    }
    for (int c = 0; c < nt; c++) {
        for (int64_t i = 0; i < n; i++)
            x[i] = (float)(rnd() % 20001) / 10000.0f - 1.0f;
        tensor_quantize_row(TENSOR_TYPE_Q8_0, x, a + as * (size_t)c, n);
    }
    double best = 1e30;
    const double t0 = now();
    int runs = 0;
    do {
        w = (block_mxfp4 *)(void *)((uint8_t *)w0 + rb * (size_t)rows * (size_t)(runs % copies));
        const double r0 = now();
        repack_mxfp4_matmul(w, n, 0, rows, a, as, nt, o, rows);
        const double dt = now() - r0;
        best = dt < best ? dt : best;
        runs++;
    } while (now() - t0 < secs || runs < 2);
    int bad = 0;
    for (int k = 0; k < 200; k++) {
        const int64_t r = (int64_t)(rnd() % (uint32_t)rows);
        const int t = (int)(rnd() % (uint32_t)nt);
        const float want = quant_dot_mxfp4_repacked(n, (const uint8_t *)w + (size_t)r * rb, a + (size_t)t * as);
        if (memcmp(&want, &o[(int64_t)t * rows + r], 4) != 0)
            bad++;
    }
    printf("%5lld x %5lld  %4d tok  %9.3f ms  %9.1f tok/s  %s%s\n", (long long)n, (long long)rows, nt, best * 1e3,
           nt / best, bad ? "BITS DIFFER" : "bits ok", copies > 1 ? "  (from memory)" : "");
    free(w0);
    free(a);
    free(x);
    free(o);
    return bad != 0;
}

int main(int argc, char **argv)
{
    const double secs = argc > 1 ? atof(argv[1]) : 0.5;
    int toks[16], n_toks = 0;
    int bad = 0;
    for (int i = 2; i < argc && n_toks < 16; i++) {
        long long cn, cr;
        int ct, cc = 1;
        if (sscanf(argv[i], "%lld,%lld,%d,%d", &cn, &cr, &ct, &cc) >= 3)
            bad |= run_case(cn, cr, ct, cc < 1 ? 1 : cc, secs);
        else
            toks[n_toks++] = atoi(argv[i]);
    }
    if (argc > 2 && n_toks == 0)
        return bad;
    if (n_toks == 0) {
        bad |= run_case(2048, 5632, 512, 1, secs);
        bad |= run_case(5632, 2048, 512, 1, secs);
        bad |= run_case(2880, 2880, 16, 1, secs);
        bad |= run_case(2880, 2880, 32, 1, secs);
        bad |= run_case(2880, 2880, 64, 1, secs);
        return bad;
    }
    for (int i = 0; i < n_toks; i++) {
        if (toks[i] >= 128) {
            bad |= run_case(2048, 5632, toks[i], 1, secs);
            bad |= run_case(5632, 2048, toks[i], 1, secs);
        } else {
            bad |= run_case(2880, 2880, toks[i], 1, secs);
        }
    }
    return bad;
}
