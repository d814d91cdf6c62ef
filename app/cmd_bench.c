/* `tokscope bench`: llama-bench style throughput — prompt processing (pp) of
 * a batch of tokens and token generation (tg) one token at a time, each
 * repeated and reported as mean ± stddev tokens/s. Token ids are fixed
 * pseudo-random ids so that runs are comparable. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "model/forward.h"
#include "model/model.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: tokscope bench -m MODEL [-p N_PROMPT] [-n N_GEN] [-r REPS] [-t THREADS] [-b BATCH]\n"
               "  -p N   prompt tokens evaluated as one batch (default 128; 0 skips)\n"
               "  -n N   tokens generated one at a time (default 64; 0 skips)\n"
               "  -r N   repetitions (default 3)\n"
               "  -t N   threads (default: all cores)\n"
               "  -b N   batch size for the prompt (default 512)\n"
               "Prints one line per test: model, test, tokens/s mean ± stddev.\n");
}

static void report(const char *model, const char *test, const double *tps, int reps)
{
    double mean = 0, var = 0;
    for (int i = 0; i < reps; i++)
        mean += tps[i];
    mean /= reps;
    for (int i = 0; i < reps; i++)
        var += (tps[i] - mean) * (tps[i] - mean);
    double sd = reps > 1 ? sqrt(var / (reps - 1)) : 0;
    printf("%-28s %-8s %10.2f ± %.2f tok/s\n", model, test, mean, sd);
    fflush(stdout);
}

int cmd_bench(int argc, char **argv)
{
    const char *path = NULL;
    int n_prompt = 128, n_gen = 64, reps = 3, threads = 0, batch = 0;
    static const struct option opts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:p:n:r:t:b:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': path = optarg; break;
        case 'p': n_prompt = atoi(optarg); break;
        case 'n': n_gen = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 'h': bench_usage(stdout); return 0;
        default: bench_usage(stderr); return 2;
        }
    }
    if (!path || n_prompt < 0 || n_gen < 0 || reps < 1 || reps > 100) {
        bench_usage(stderr);
        return 2;
    }
    char err[512];
    model *m = model_load(path, err, sizeof err);
    if (!m) {
        fprintf(stderr, "tokscope: %s\n", err);
        return 1;
    }
    const model_hparams *hp = model_get_hparams(m);
    forward_params fp = forward_default_params();
    fp.n_threads = threads;
    if (batch > 0)
        fp.n_batch = (uint32_t)batch;
    fp.n_ctx = (uint32_t)(n_prompt + n_gen + 1);
    forward_ctx *f = forward_build(m, &fp, err, sizeof err);
    if (!f) {
        fprintf(stderr, "tokscope: %s\n", err);
        model_free(m);
        return 1;
    }
    int n_tok = n_prompt > n_gen ? n_prompt : n_gen;
    int32_t *toks = malloc(sizeof *toks * (size_t)(n_tok + 1));
    float *logits = malloc(sizeof *logits * (size_t)hp->n_vocab);
    double *tps = malloc(sizeof *tps * (size_t)reps);
    uint32_t s = 12345;
    for (int i = 0; i <= n_tok; i++) {
        s = s * 1664525u + 1013904223u;
        toks[i] = (int32_t)((s >> 8) % (uint32_t)hp->n_vocab);
    }
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int rc = 0;
    /* one warm-up evaluation so page faults of the mmap are not measured */
    if (forward_eval(f, toks, 1, 0, logits, false, err, sizeof err) != 0)
        goto fail;
    if (n_prompt > 0) {
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            if (forward_eval(f, toks, n_prompt, 0, logits, false, err, sizeof err) != 0)
                goto fail;
            tps[r] = n_prompt / (now_s() - t0);
        }
        char test[32];
        snprintf(test, sizeof test, "pp%d", n_prompt);
        report(name, test, tps, reps);
    }
    if (n_gen > 0) {
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            for (int i = 0; i < n_gen; i++)
                if (forward_eval(f, &toks[i], 1, i, logits, false, err, sizeof err) != 0)
                    goto fail;
            tps[r] = n_gen / (now_s() - t0);
        }
        char test[32];
        snprintf(test, sizeof test, "tg%d", n_gen);
        report(name, test, tps, reps);
    }
    goto done;
fail:
    fprintf(stderr, "tokscope: %s\n", err);
    rc = 1;
done:
    free(tps);
    free(logits);
    free(toks);
    forward_free(f);
    model_free(m);
    return rc;
}
