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

/* one call of forward_deltanet_steps, for bench_best */
struct call {
    float *s;
    int64_t S;
    int n;
    const float *q, *k, *v, *beta, *eg;
    float *o;
};
static void run_steps(void *arg)
{
    const struct call *c = arg;
    forward_deltanet_steps(c->s, c->S, c->n, c->q, c->k, c->v, c->beta, c->eg, 1.0f / sqrtf((float)c->S), c->o);
}

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
    struct call c = {s, S, n, qkv, qkv + (size_t)n * S, qkv + 2 * (size_t)n * S, beta, eg, o};
    const double best = 1e9 * bench_best(run_steps, &c, secs) / n;
    printf("S=%lld, %d tokens a call, one thread: %.1f ns per token and head (best of 5); out[0] %g\n", (long long)S,
           n, best, (double)o[0]);
    free(s);
    free(qkv);
    free(o);
    free(beta);
    free(eg);
    return 0;
}
