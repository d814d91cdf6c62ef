/* `tokscope bench`: llama-bench style throughput — prompt processing (pp) of
 * a batch of tokens and token generation (tg) one token at a time, each
 * repeated and reported as mean ± stddev tokens/s, optionally at a depth (a
 * cache already holding that many tokens, as a chat has). Lists of values
 * run every combination, like llama-bench; `-o jsonl` prints one object per
 * test with llama-bench's field names, so the two programs' outputs join.
 * Token ids are fixed pseudo-random ids so that runs are comparable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "kernels/threadpool.h"
#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "model/forward.h"
#include "model/model.h"
#include "sampler/sampler.h"
#include "spec/spec.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void bench_usage(FILE *f)
{
    fprintf(f, "usage: tokscope bench -m MODEL [-p N,..] [-n N,..] [-d N,..] [-t N,..] [-r REPS] [-b BATCH]\n"
               "                      [-ctk TYPE] [-ctv TYPE] [--blas MODE,..] [-o text|jsonl]\n"
               "                      [--spec ngram|draft|mtp|auto [-md FILE] [--draft-max N] [--spec-ngram-n N]]\n"
               "  -p N,..     prompt tokens evaluated as one batch (default 128; 0 skips)\n"
               "  -n N,..     tokens generated one at a time (default 64; 0 skips)\n"
               "  -d N,..     depth: tokens already in the cache before each test (default 0; filled\n"
               "              once per depth, not timed; a recurrent state is restored there before\n"
               "              each run)\n"
               "  -t N,..     threads (default: all cores)\n"
               "  -r N        repetitions (default 3, at most 100), after an untimed warm-up of up to\n"
               "              512 prompt tokens (or one generated token) repeated for 0.25 s; every\n"
               "              weight page is read once before the first test\n"
               "  -b N        batch size for the prompt (default 512)\n"
               "  -ctk, -ctv  KV cache type of keys / values: f16 (default), q8_0, q4_0, f32\n"
               "  --blas M,.. OpenBLAS for large prompt batches: auto (default: where it was measured\n"
               "              faster, by weight type and batch size), on (every batch it can take), off\n"
               "  -o FORMAT   text (default): one line per test, tokens/s mean ± stddev and the\n"
               "              peak resident memory so far; jsonl: one object per test with\n"
               "              llama-bench's field names (n_prompt, n_gen, n_depth, n_threads, type_k,\n"
               "              type_v, avg_ts, stddev_ts, samples_ts, ...), peak_rss_bytes, blas,\n"
               "              blas_matmuls (products per run that OpenBLAS computed), and\n"
               "              weight_bytes / kv_bytes_per_pos (what a generated token reads) and\n"
               "              weight_bytes_by_type (weight_bytes split by tensor type; the text\n"
               "              output gives that split once, in its first line)\n"
               "  --spec KIND speculative decoding in the tg tests (pp tests are unchanged): off\n"
               "              (default), ngram, draft (-md), mtp, auto; each tg test then generates as\n"
               "              `generate --temp 0 --spec KIND` does, from its first token, the\n"
               "              target verifying the drafts, N tokens evaluated in all; the text\n"
               "              line ends with 'spec KIND: drafted N, accepted M (P %%)' per run,\n"
               "              the jsonl object has spec, draft_max, n_drafted and n_accepted\n"
               "  --draft-max N  drafts per verification (default 3, at most 64)\n"
               "  -md FILE    the draft model of --spec draft, same vocabulary (--draft-model);\n"
               "              with --spec mtp on Gemma 4 its assistant (gemma4-assistant) file\n"
               "  --spec-ngram-n N  tokens an ngram match needs (default 12)\n"
               "Every combination of the lists runs, in the order -t, --blas, -d, then -p and -n.\n");
}

/* "1,2,3" -> ints >= lo; false when malformed. */
static bool parse_list(const char *s, int lo, int **out, int *n)
{
    int cap = 1, k = 0;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    int *v = malloc(sizeof *v * (size_t)cap);
    const char *p = s;
    while (v && *p) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || x < lo || x > (1 << 24) || (*end && *end != ',')) {
            free(v);
            return false;
        }
        v[k++] = (int)x;
        p = *end ? end + 1 : end;
    }
    if (!v || k == 0) {
        free(v);
        return false;
    }
    free(*out);
    *out = v;
    *n = k;
    return true;
}

static bool parse_kv_type(const char *s, enum tensor_type *t) { return forward_kv_type_parse(s, t); }

static const char *kv_type_name(enum tensor_type t) { return forward_kv_type_name(t); }

/* "off,on" -> up to 3 modes; false when malformed (an empty item too). */
static bool parse_blas_list(const char *s, enum blas_mode *out, int *n)
{
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return false;
    strcpy(buf, s);
    int k = 0;
    for (char *p = buf;; p++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (k == 3 || !blas_mode_parse(p, &out[k++]))
            return false;
        if (!comma)
            break;
        p = comma;
    }
    *n = k;
    return true;
}

static long peak_rss_bytes(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss * 1024L : 0;
}

struct bench_test {
    const char *path, *name;
    int n_prompt, n_gen, n_depth, threads, reps;
    enum tensor_type type_k, type_v;
    enum blas_mode blas;
    double blas_matmuls; /* per run, set by run_test */
    /* what one generated token reads: every weight a matmul uses (the
     * embeddings' one row aside) and the cache's K and V per position */
    double weight_bytes, kv_bytes_per_pos;
    const double *type_bytes; /* weight_bytes split by tensor type, TENSOR_TYPE_COUNT entries */
    const spec *sp;           /* a tg test with --spec, else NULL */
    double n_drafted, n_accepted; /* per run, set by run_test with sp */
};

/* Bytes of the weights one token's forward pass reads: every tensor but the
 * token embeddings, of which it reads one row (unless they are the output
 * matrix too); of a mixture of experts' 3-D expert tensors, the used
 * experts' share. */
static double weight_bytes(const model *m, double by_type[TENSOR_TYPE_COUNT])
{
    const gguf_ctx *g = model_get_gguf(m);
    const model_weights *w = model_get_weights(m);
    const model_hparams *hp = model_get_hparams(m);
    double sum = 0;
    for (int ty = 0; ty < TENSOR_TYPE_COUNT; ty++)
        by_type[ty] = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        double b = 0;
        if (hp->n_expert > 1 && t->n_dims == 3 && t->ne[2] == (int64_t)hp->n_expert)
            b = (double)t->nbytes * hp->n_expert_used / hp->n_expert;
        else if (t != w->tok_embd || w->output == w->tok_embd)
            b = (double)t->nbytes;
        sum += b;
        if (t->type < TENSOR_TYPE_COUNT) /* always: the reader refuses unknown ids */
            by_type[t->type] += b;
    }
    return sum;
}

/* Text mode, once per model: what a generated token reads of the weights,
 * per tensor type, largest share first (an imatrix quant's mix: the speed
 * of a "IQ2_XXS" file is partly its K-type tensors'). */
static void report_type_bytes(const char *name, double total, const double *by_type)
{
    printf("%s: a generated token reads %.2f MiB of weights:", name, total / 1048576.0);
    bool done[TENSOR_TYPE_COUNT] = {false};
    for (const char *sep = " ";; sep = ", ") {
        int best = -1;
        for (int ty = 0; ty < TENSOR_TYPE_COUNT; ty++)
            if (by_type[ty] > 0 && !done[ty] && (best < 0 || by_type[ty] > by_type[best]))
                best = ty;
        if (best < 0)
            break;
        done[best] = true;
        printf("%s%s %.2f MiB (%.1f%%)", sep, tensor_type_name((uint32_t)best), by_type[best] / 1048576.0,
               total > 0 ? 100.0 * by_type[best] / total : 0.0);
    }
    putchar('\n');
}

static void report(const struct bench_test *t, const double *tps, int reps, bool jsonl)
{
    double mean = 0, var = 0;
    for (int i = 0; i < reps; i++)
        mean += tps[i];
    mean /= reps;
    for (int i = 0; i < reps; i++)
        var += (tps[i] - mean) * (tps[i] - mean);
    const double sd = reps > 1 ? sqrt(var / (reps - 1)) : 0;
    const long rss = peak_rss_bytes();
    if (jsonl) {
        const int n = t->n_prompt > 0 ? t->n_prompt : t->n_gen;
        printf("{\"model_filename\": \"%s\", \"n_prompt\": %d, \"n_gen\": %d, \"n_depth\": %d, \"n_threads\": %d, "
               "\"type_k\": \"%s\", \"type_v\": \"%s\", \"avg_ns\": %.0f, \"avg_ts\": %.6f, \"stddev_ts\": %.6f, "
               "\"samples_ts\": [",
               t->path, t->n_prompt, t->n_gen, t->n_depth, t->threads, kv_type_name(t->type_k),
               kv_type_name(t->type_v), mean > 0 ? 1e9 * n / mean : 0.0, mean, sd);
        for (int i = 0; i < reps; i++)
            printf("%s%.2f", i ? ", " : " ", tps[i]);
        printf(" ], \"peak_rss_bytes\": %ld, \"blas\": \"%s\", \"blas_matmuls\": %.0f", rss,
               blas_mode_name(t->blas), t->blas_matmuls);
        printf(", \"weight_bytes\": %.0f, \"weight_bytes_by_type\": {", t->weight_bytes);
        const char *sep = "";
        for (int ty = 0; ty < TENSOR_TYPE_COUNT; ty++)
            if (t->type_bytes[ty] > 0) {
                printf("%s\"%s\": %.0f", sep, tensor_type_name((uint32_t)ty), t->type_bytes[ty]);
                sep = ", ";
            }
        printf("}, \"kv_bytes_per_pos\": %.0f", t->kv_bytes_per_pos);
        if (t->sp)
            printf(", \"spec\": \"%s\", \"draft_max\": %d, \"n_drafted\": %.6g, \"n_accepted\": %.6g",
                   spec_type_name(spec_get_params(t->sp)->type), (int)spec_get_params(t->sp)->draft_max,
                   t->n_drafted, t->n_accepted);
        printf("}\n");
    } else {
        char test[64];
        if (t->n_prompt > 0)
            snprintf(test, sizeof test, "pp%d", t->n_prompt);
        else
            snprintf(test, sizeof test, "tg%d", t->n_gen);
        if (t->n_depth > 0) {
            const size_t l = strlen(test);
            snprintf(test + l, sizeof test - l, " @ d%d", t->n_depth);
        }
        char blas[48];
        snprintf(blas, sizeof blas, "blas %s%s", blas_mode_name(t->blas), t->blas_matmuls > 0 ? "*" : "");
        printf("%-28s %-14s t%-3d %s/%s %-10s %10.2f ± %.2f tok/s   peak RSS %.0f MiB", t->name, test,
               t->threads, kv_type_name(t->type_k), kv_type_name(t->type_v), blas, mean, sd,
               (double)rss / 1048576.0);
        if (t->sp) /* per run, as generate's stats end */
            printf("   spec %s: drafted %.6g, accepted %.6g (%.1f %%)",
                   spec_type_name(spec_get_params(t->sp)->type), t->n_drafted, t->n_accepted,
                   t->n_drafted > 0 ? 100.0 * t->n_accepted / t->n_drafted : 0.0);
        putchar('\n');
    }
    fflush(stdout);
}

/* Reads every page of the weights once, untimed, so that the tests measure
 * the model in memory, as llama-bench's do: its load reads the file (it
 * copies the repacked tensors and advises the kernel to read the rest
 * ahead). A warm-up token touches only the experts it routes to; with a MoE
 * model's file partly out of the page cache, the first tokens of a test read
 * the others from disk (gpt-oss-20b's shape: tg64 6.6-12 tok/s against 12-13
 * once read). */
static void touch_weights(const model *m)
{
    const gguf_ctx *g = model_get_gguf(m);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    volatile uint8_t sink = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        const uint8_t *d = t->data;
        for (size_t o = 0; o < t->nbytes; o += page)
            sink ^= d[o];
        if (t->nbytes)
            sink ^= d[t->nbytes - 1];
    }
    (void)sink;
}

/* Fills the cache with `depth` tokens (not timed), as llama-bench's -d.
 * llama-bench fills it again before every repetition; the tests only write
 * positions from `depth` on and every evaluation is given its start
 * position, so here one fill serves every test and repetition at that
 * depth: the same work is timed, without refilling 16k positions per run. */
static int fill_depth(forward_ctx *f, spec *sp, const int32_t *toks, int depth, float *logits, char *err,
                      size_t errlen)
{
    /* spec_eval: an MTP block sees the depth's tokens too */
    return depth > 0 ? spec_eval(sp, f, toks, depth, 0, logits, false, err, errlen) : 0;
}

/* A recurrent state (Qwen3.5's DeltaNet layers) cannot be truncated back to
 * the depth as the KV cache is, by giving the next evaluation its start
 * position: snap is the state as the fill left it (NULL for a model without
 * one, or at depth 0, where evaluating from position 0 starts afresh), and it
 * is restored, untimed, before every evaluation at the depth. */
static void back_to_depth(forward_ctx *f, const struct bench_test *t, const void *snap)
{
    if (snap)
        forward_rs_load(f, snap, t->n_depth);
}

/* A tg test with --spec: n tokens evaluated from position depth on, as
 * generate's loop runs (greedy: smp is a temp 0 chain): the first token
 * toks[depth], as the plain tg test's, then what the target samples, each
 * step drafting after the last sampled token and verifying (spec_step),
 * or evaluating that token alone when there were no drafts. The drafts are
 * cut to what is left of the n, so exactly n are evaluated. */
static int spec_run(forward_ctx *f, spec *sp, sampler *smp, int32_t *seq, int depth, int n, float *logits,
                    char *err, size_t errlen)
{
    int32_t last = seq[depth], n_past = depth, out[SPEC_DRAFT_MAX + 1];
    sampler_accept(smp, last);
    while (n_past < depth + n) {
        const int32_t k = spec_step(sp, f, smp, seq, n_past, last, depth + n - n_past - 1, out, err, errlen);
        if (k < 0)
            return -1;
        if (k > 0) { /* last and k - 1 accepted drafts evaluated; out[k - 1] sampled after them */
            n_past += k;
            last = out[k - 1];
            continue;
        }
        seq[n_past] = last;
        if (spec_eval(sp, f, &last, 1, n_past, logits, false, err, errlen) != 0)
            return -1;
        n_past++;
        last = sampler_sample(smp, logits, NULL);
        sampler_accept(smp, last);
    }
    return 0;
}

/* One run of a test at its depth: pp or tg of n tokens, or with sp a tg
 * with speculation (spec_run) on seq, a copy of toks it writes into. */
static int run_once(forward_ctx *f, const struct bench_test *t, spec *sp, sampler *smp, const int32_t *toks,
                    int32_t *seq, int n, float *logits, char *err, size_t errlen)
{
    if (sp)
        return spec_run(f, sp, smp, seq, t->n_depth, n, logits, err, errlen);
    const int32_t *s = toks + t->n_depth;
    if (t->n_prompt > 0)
        return forward_eval(f, s, n, t->n_depth, logits, false, err, errlen);
    for (int i = 0; i < n; i++)
        if (forward_eval(f, &s[i], 1, t->n_depth + i, logits, false, err, errlen) != 0)
            return -1;
    return 0;
}

/* Untimed, before a run: the depth's state back and, with sp, a fresh
 * greedy sampler and seq holding toks to the test's first token. */
static int prepare_run(forward_ctx *f, const struct bench_test *t, spec *sp, sampler **smp, int32_t n_vocab,
                       const int32_t *toks, int32_t *seq, const void *snap, char *err, size_t errlen)
{
    back_to_depth(f, t, snap);
    if (!sp)
        return 0;
    sampler_free(*smp);
    sampler_params spp = sampler_default_params();
    spp.temp = 0; /* generate --temp 0 */
    if (!(*smp = sampler_build(&spp, n_vocab))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(seq, toks, (size_t)(t->n_depth + 1) * sizeof *seq);
    return 0;
}

/* One test, reps times, on a cache filled to t->n_depth: tokens/s into tps;
 * with sp (a tg test with --spec) the drafts made and accepted per run. */
static int run_test(forward_ctx *f, struct bench_test *t, spec *sp, int32_t n_vocab, const int32_t *toks,
                    int32_t *seq, const void *snap, float *logits, double *tps, char *err, size_t errlen)
{
    /* Untimed runs first, as llama-bench warms up before each test. The first
     * ~0.1 s of runs after a process starts are slow on the shared machines
     * here, in llama-bench too (its own --no-warmup runs of smollm-mini pp128
     * start at 2700-4300 tok/s and settle near 7000); llama-bench's model load
     * and warm-up pass that time, tokscope's faster load does not. So the
     * warm-up repeats until 0.25 s have passed, once at least; a long test
     * spends no extra time. Up to 512 tokens touch every buffer a longer
     * prompt uses but the cache pages past them, at a quarter of pp2048.
     * With --spec up to 16 generated tokens: the draft model's context then
     * holds the depth, as after a prompt, and every timed run finds it so. */
    int warm = 1;
    if (t->n_prompt > 0)
        warm = t->n_prompt > 512 ? 512 : t->n_prompt;
    else if (sp)
        warm = t->n_gen > 16 ? 16 : t->n_gen;
    sampler *smp = NULL;
    int rc = -1;
    const double w0 = now_s();
    do {
        if (prepare_run(f, t, sp, &smp, n_vocab, toks, seq, snap, err, errlen) != 0 ||
            run_once(f, t, sp, smp, toks, seq, warm, logits, err, errlen) != 0)
            goto out;
    } while (now_s() - w0 < 0.25);
    uint64_t blas_calls = 0;
    const spec_stats s0 = sp ? spec_get_stats(sp) : (spec_stats){0};
    const int n = t->n_prompt > 0 ? t->n_prompt : t->n_gen;
    for (int r = 0; r < t->reps; r++) {
        if (prepare_run(f, t, sp, &smp, n_vocab, toks, seq, snap, err, errlen) != 0)
            goto out;
        const uint64_t b0 = forward_blas_calls(f);
        const double t0 = now_s();
        if (run_once(f, t, sp, smp, toks, seq, n, logits, err, errlen) != 0)
            goto out;
        tps[r] = n / (now_s() - t0);
        blas_calls += forward_blas_calls(f) - b0;
    }
    t->blas_matmuls = (double)blas_calls / t->reps;
    if (sp) {
        const spec_stats s1 = spec_get_stats(sp);
        t->n_drafted = (double)(s1.n_drafted - s0.n_drafted) / t->reps;
        t->n_accepted = (double)(s1.n_accepted - s0.n_accepted) / t->reps;
    }
    rc = 0;
out:
    sampler_free(smp);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    const char *path = NULL;
    int *pp = NULL, *tg = NULL, *depth = NULL, *thr = NULL;
    int n_pp = 0, n_tg = 0, n_depth = 0, n_thr = 0, reps = 3, batch = 0;
    enum blas_mode blas[3] = {BLAS_MODE_AUTO};
    int n_blas = 1;
    enum tensor_type type_k = TENSOR_TYPE_F16, type_v = TENSOR_TYPE_F16;
    bool jsonl = false;
    spec_params spp = spec_default_params();
    int rc = 2;
    static const int one_pp[] = {128}, one_tg[] = {64}, one_zero[] = {0};
    static const int opt_ids[] = {CLI_HELP,         CLI_MODEL,         CLI_BENCH_PROMPT, CLI_BENCH_GEN,
                                  CLI_BENCH_DEPTH,  CLI_BENCH_THREADS, CLI_BENCH_REPS,   CLI_BENCH_BATCH,
                                  CLI_BENCH_OUTPUT, CLI_CTK,           CLI_CTV,          CLI_BENCH_BLAS,
                                  CLI_SPEC,         CLI_DRAFT_MAX,     CLI_DRAFT_MODEL,  CLI_SPEC_NGRAM_N};
    cli p;
    cli_value v;
    /* long_only: llama-bench's two-letter options, -ctk and -ctv */
    cli_begin(&p, "bench", opt_ids, sizeof opt_ids / sizeof opt_ids[0], true, argc, argv);
    int id;
    while ((id = cli_next(&p, &v)) != CLI_END) {
        switch (id) {
        case CLI_ERROR: goto out;
        case CLI_MODEL: path = v.text; break;
        /* the table checked every list: these parse */
        case CLI_BENCH_PROMPT: parse_list(v.text, 0, &pp, &n_pp); break;
        case CLI_BENCH_GEN: parse_list(v.text, 0, &tg, &n_tg); break;
        case CLI_BENCH_DEPTH: parse_list(v.text, 0, &depth, &n_depth); break;
        case CLI_BENCH_THREADS: parse_list(v.text, 1, &thr, &n_thr); break;
        case CLI_BENCH_REPS: reps = (int)v.i; break;
        case CLI_BENCH_BATCH: batch = (int)v.i; break;
        case CLI_BENCH_OUTPUT: jsonl = !strcmp(v.text, "jsonl"); break;
        case CLI_CTK: parse_kv_type(v.text, &type_k); break;
        case CLI_CTV: parse_kv_type(v.text, &type_v); break;
        case CLI_BENCH_BLAS: parse_blas_list(v.text, blas, &n_blas); break;
        case CLI_SPEC: spec_type_parse(v.text, &spp.type); break;
        case CLI_DRAFT_MAX: spp.draft_max = (int32_t)v.i; break;
        case CLI_DRAFT_MODEL: spp.draft_model = v.text; break;
        case CLI_SPEC_NGRAM_N: spp.ngram_n = (int32_t)v.i; break;
        case CLI_HELP: bench_usage(stdout); rc = 0; goto out;
        }
    }
    if (cli_rest(&p) != argc) {
        cli_fail(&p, "unexpected argument '%s'", argv[cli_rest(&p)]);
        goto out;
    }
    if (!path) {
        cli_fail(&p, "-m MODEL is required");
        goto out;
    }
    if (spp.type == SPEC_DRAFT && !spp.draft_model) {
        cli_fail(&p, "--spec draft needs a draft model (-md FILE)");
        goto out;
    }
    const int *P = pp ? pp : one_pp, *G = tg ? tg : one_tg, *D = depth ? depth : one_zero;
    const int nP = pp ? n_pp : 1, nG = tg ? n_tg : 1, nD = depth ? n_depth : 1;
    static int default_thr[1];
    default_thr[0] = 0;
    const int *T = thr ? thr : default_thr;
    const int nT = thr ? n_thr : 1;

    char err[512];
    rc = 1;
    model *m = model_load(path, err, sizeof err);
    if (!m) {
        fprintf(stderr, "tokscope: %s\n", err);
        goto out;
    }
    /* before forward_build, which packs some weights and lets their
     * original pages go: touched later they would count twice in the RSS */
    touch_weights(m);
    const model_hparams *hp = model_get_hparams(m);
    int max_tok = 1;
    for (int i = 0; i < nD; i++)
        for (int j = 0; j < nP; j++)
            for (int k = 0; k < nG; k++) {
                const int need = D[i] + (P[j] > G[k] ? P[j] : G[k]);
                max_tok = need > max_tok ? need : max_tok;
            }
    int32_t *toks = malloc(sizeof *toks * (size_t)(max_tok + 1));
    float *logits = malloc(sizeof *logits * (size_t)hp->n_vocab);
    double *tps = malloc(sizeof *tps * (size_t)reps);
    /* --spec: what a run generated (spec_run writes the drafts past it too) */
    int32_t *seq = malloc(sizeof *seq * (size_t)(max_tok + SPEC_DRAFT_MAX + 2));
    if (!toks || !logits || !tps || !seq) {
        fprintf(stderr, "tokscope: out of memory\n");
        goto done;
    }
    uint32_t s = 12345;
    for (int i = 0; i <= max_tok; i++) {
        s = s * 1664525u + 1013904223u;
        toks[i] = (int32_t)((s >> 8) % (uint32_t)hp->n_vocab);
    }
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    double type_bytes[TENSOR_TYPE_COUNT];
    const double wbytes = weight_bytes(m, type_bytes);
    if (!jsonl)
        report_type_bytes(name, wbytes, type_bytes);
    rc = 0;
    for (int ti = 0; ti < nT * n_blas && rc == 0; ti++) {
        forward_params fp = forward_default_params();
        fp.blas = blas[ti % n_blas];
        fp.n_threads = T[ti / n_blas];
        fp.kv_type = type_k;
        fp.v_type = type_v;
        if (batch > 0)
            fp.n_batch = (uint32_t)batch;
        fp.n_ctx = (uint32_t)(max_tok + 1);
        forward_ctx *f = forward_build(m, &fp, err, sizeof err);
        if (!f) {
            fprintf(stderr, "tokscope: %s\n", err);
            rc = 1;
            break;
        }
        const int threads = fp.n_threads > 0 ? (int)fp.n_threads : (int)threadpool_default_threads();
        /* the drafting side built as generate builds it: a draft model's
         * context as the target's (threads, cache types, size) */
        spec *sp = NULL;
        if (spp.type != SPEC_OFF && !(sp = spec_create(&spp, m, &fp, err, sizeof err))) {
            fprintf(stderr, "tokscope: %s\n", err);
            forward_free(f);
            rc = 1;
            break;
        }
        /* one warm-up evaluation so page faults of the mmap are not measured */
        if (forward_eval(f, toks, 1, 0, logits, false, err, sizeof err) != 0) {
            fprintf(stderr, "tokscope: %s\n", err);
            rc = 1;
        }
        void *snap = NULL; /* the recurrent state at the depth (back_to_depth) */
        for (int di = 0; di < nD && rc == 0; di++) {
            free(snap);
            snap = NULL;
            if (fill_depth(f, sp, toks, D[di], logits, err, sizeof err) != 0) {
                fprintf(stderr, "tokscope: %s\n", err);
                rc = 1;
                break;
            }
            if (D[di] > 0 && forward_rs_bytes(f) > 0) {
                if (!(snap = malloc(forward_rs_bytes(f)))) {
                    fprintf(stderr, "tokscope: out of memory for the recurrent state at depth %d\n", D[di]);
                    rc = 1;
                    break;
                }
                forward_rs_save(f, snap);
            }
            for (int pass = 0; pass < 2 && rc == 0; pass++) {
                const int n_list = pass == 0 ? nP : nG;
                for (int li = 0; li < n_list && rc == 0; li++) {
                    const int n = pass == 0 ? P[li] : G[li];
                    if (n == 0)
                        continue;
                    struct bench_test t = {path,
                                           name,
                                           pass == 0 ? n : 0,
                                           pass == 1 ? n : 0,
                                           D[di],
                                           threads,
                                           reps,
                                           type_k,
                                           type_v,
                                           fp.blas,
                                           0,
                                           wbytes,
                                           (double)forward_kv_cache_bytes(f) / forward_n_ctx(f),
                                           type_bytes,
                                           pass == 1 ? sp : NULL,
                                           0,
                                           0};
                    if (run_test(f, &t, pass == 1 ? sp : NULL, hp->n_vocab, toks, seq, snap, logits, tps, err,
                                 sizeof err) != 0) {
                        fprintf(stderr, "tokscope: %s\n", err);
                        rc = 1;
                        break;
                    }
                    report(&t, tps, reps, jsonl);
                }
            }
        }
        free(snap);
        spec_free(sp);
        forward_free(f);
    }
done:
    free(seq);
    free(tps);
    free(logits);
    free(toks);
    model_free(m);
out:
    free(pp);
    free(tg);
    free(depth);
    free(thr);
    return rc;
}
