/* Microbenchmark of a prompt's gated delta-net steps on one head
 * (forward_deltanet_steps: Qwen3.5's recurrence, the reference's
 * ggml_gated_delta_net order), one thread, random state and inputs, ns per
 * token and head (CPU time).
 * With a fourth argument H > 0 it times one token's step instead
 * (forward_deltanet_step, generation's path) over H heads' states one after
 * the other, as a layer's heads meet it (H x S x S floats: 512 heads of 128
 * are 32 MB, past the caches), beside a plain read and write of the same
 * states (each float times 1, the floor the memory sets).
 * Not part of make test. Usage: bench_deltanet [S] [tokens] [seconds] [H] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/forward_internal.h"
#include "bench_util.h"

/* one token over H heads' states, for bench_best */
struct one {
    float *s;
    int64_t S, H;
    const float *q, *k, *v;
    float *o;
    int plain;
};
static void run_one(void *arg)
{
    const struct one *c = arg;
    const int64_t SS = c->S * c->S;
    for (int64_t h = 0; h < c->H; h++) {
        float *s = c->s + h * SS;
        if (c->plain) {
            typedef float v16 __attribute__((vector_size(64)));
            const float one = c->v[0] == 2.0f ? 2.0f : 1.0f; /* 1 unless v[0] is 2: not folded away */
            v16 *sv = (v16 *)s; /* SS a multiple of 16: the states are 64-byte aligned */
            for (int64_t i = 0; i < SS / 16; i++)
                sv[i] *= one;
            for (int64_t i = SS / 16 * 16; i < SS; i++)
                s[i] *= one;
            continue;
        }
        forward_deltanet_step(s, c->S, c->k + h % 16 * c->S, c->q + h % 16 * c->S, c->v + h % 16 * c->S, 0.7f,
                              0.99f, 1.0f / sqrtf((float)c->S), c->o + h % 16 * c->S);
    }
}

static int bench_one(int64_t S, int64_t H, double secs)
{
    float *s = aligned_alloc(64, sizeof(float) * (size_t)((H * S * S + 15) / 16 * 16)),
          *qkv = malloc(sizeof(float) * 3 * 16 * (size_t)S);
    float *o = malloc(sizeof(float) * 16 * (size_t)S);
    for (int64_t i = 0; i < H * S * S; i++)
        s[i] = 0.1f * rndf();
    for (int64_t i = 0; i < 3 * 16 * S; i++)
        qkv[i] = rndf() / sqrtf((float)S);
    struct one c = {s, S, H, qkv, qkv + 16 * S, qkv + 32 * S, o, 0};
    for (int rep = 0; rep < 3; rep++) {
        c.plain = 0;
        const double step = 1e9 * bench_best(run_one, &c, secs) / (double)H;
        c.plain = 1;
        const double plain = 1e9 * bench_best(run_one, &c, secs) / (double)H;
        printf("S=%lld, one token over %lld heads (%.1f MB), one thread: step %.0f ns a head, "
               "plain read and write %.0f ns (step / plain %.2f); out[0] %g\n",
               (long long)S, (long long)H, 4e-6 * (double)(H * S * S), step, plain, step / plain,
               (double)o[0]);
    }
    free(s);
    free(qkv);
    free(o);
    return 0;
}

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
    const int64_t H = argc > 4 ? atoll(argv[4]) : 0;
    if (S < 1 || S > 256 || n < 1) {
        fprintf(stderr, "bench_deltanet: S in 1..256, tokens >= 1\n");
        return 2;
    }
    if (H > 0)
        return bench_one(S, H, secs);
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
