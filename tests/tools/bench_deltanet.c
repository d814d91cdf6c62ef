/* Microbenchmark of a prompt's gated delta-net steps on one head
 * (forward_deltanet_steps: Qwen3.5's recurrence, the reference's
 * ggml_gated_delta_net order), one thread, random state and inputs, ns per
 * token and head (CPU time).
 * Not part of make test. Usage: bench_deltanet [S] [tokens] [seconds] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/forward_internal.h"
#include "bench_util.h"

int main(int argc, char **argv)
{
    const int64_t S = argc > 1 ? atoll(argv[1]) : 128;
    const int n = argc > 2 ? atoi(argv[2]) : 512;
    const double secs = argc > 3 ? atof(argv[3]) : 1.0;
    if (S < 1 || S > 256 || n < 1) {
        fprintf(stderr, "bench_deltanet: S in 1..256, tokens >= 1\n");
        return 2;
    }
    float *s = malloc(sizeof(float) * (size_t)(S * S)), *qkv = malloc(sizeof(float) * 3 * (size_t)n * (size_t)S);
    float *o = malloc(sizeof(float) * (size_t)n * (size_t)S), *beta = malloc(sizeof(float) * (size_t)n),
          *eg = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < S * S; i++)
        s[i] = 0.1f * rndf();
    for (int64_t i = 0; i < 3 * n * S; i++)
        qkv[i] = rndf() / sqrtf((float)S);
    for (int t = 0; t < n; t++) {
        beta[t] = 0.5f + 0.4f * rndf();
        eg[t] = 0.97f + 0.02f * rndf();
    }
    const float *q = qkv, *k = qkv + (size_t)n * S, *v = qkv + 2 * (size_t)n * S;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        int iters = 0;
        double el, t0 = now();
        do {
            forward_deltanet_steps(s, S, n, q, k, v, beta, eg, 1.0f / sqrtf((float)S), o);
            iters++;
        } while ((el = now() - t0) < secs / 5);
        const double ns = 1e9 * el / iters / n;
        best = ns < best ? ns : best;
    }
    printf("S=%lld, %d tokens a call, one thread: %.1f ns per token and head (best of 5); out[0] %g\n", (long long)S,
           n, best, (double)o[0]);
    free(s);
    free(qkv);
    free(o);
    free(beta);
    free(eg);
    return 0;
}
