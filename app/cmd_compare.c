/* tokscope compare: teacher-force a golden file's token sequence through our
 * forward pass and report, position by position, how far our logits are
 * from the reference's. Meant for people porting an engine: the table shows
 * where the two disagree most, the last line is machine-readable. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "model/forward.h"
#include "golden.h"
#include "model/model.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tokscope compare -m MODEL GOLDEN.jsonl [options]\n"
            "\n"
            "Feeds the golden file's tokens (prompt, then every later token_in) through the model\n"
            "and compares our logits with the reference's at every position. A file that starts at\n"
            "the last prompt position (made the way generation runs, e.g. `logits --last`) is\n"
            "evaluated that way: only the prompt's last token gets logits.\n"
            "\n"
            "  -m, --model FILE     GGUF model the golden file was made with\n"
            "  --one-by-one         evaluate every token alone (default: the prompt as one batch,\n"
            "                       then one token at a time, like the reference)\n"
            "  --all-batched        evaluate the whole sequence as one batch\n"
            "  --batch B            tokens per internal batch (default 512)\n"
            "  --no-kv-cache        recompute the whole prefix for every position\n"
            "  --f32-kv             the same as -ctk f32 -ctv f32\n"
            "  --cache-type-k T, --cache-type-v T (or -ctk, -ctv)\n"
            "                       KV cache types: f16 (default), f32, q8_0, q4_0\n"
            "  --blas MODE          OpenBLAS for large batches: off (default: the reference's order,\n"
            "                       bit for bit), auto, on (the same products in another order)\n"
            "  --top N              positions to list (default 10)\n"
            "  --max-diff X         fail when max |dlogit| > X (default 0.05 for F32/F16 models, off for\n"
            "                       quantized)\n"
            "  --max-kl X           fail when mean KL > X (default 1e-4 float, 1e-3 quantized)\n"
            "  --min-top1 X         fail when top-1 agreement < X (default 0.98 quantized, off for float)\n"
            "  -t, --threads N      threads (default or 0: online CPUs); past position 256 llama.cpp splits\n"
            "                       attention per thread, so use the -t the golden was made with\n"
            "  -c, --ctx-size N     context size (default or 0: the sequence's length); it picks Phi-3's\n"
            "                       long or short RoPE factors, so use the -c the golden was made with\n"
            "  --lens-layer L       our logits from the first L blocks only (the logit lens): compare\n"
            "                       with a golden made on the file cut to L blocks\n"
            "\n"
            "Metrics per position, over the reference's top-k ids: max |dlogit|; KL(ref||ours) with each\n"
            "side normalised by its own log-sum-exp; |dlse|. top1_agree counts positions whose reference\n"
            "top-2 gap exceeds 0.1. Exit status: 0 within tolerance, 1 outside, 2 bad arguments.\n");
}

/* forward_eval, or with --lens-layer the model cut to that many blocks */
static int32_t g_cut;
static int eval(forward_ctx *f, const int32_t *toks, int32_t n, int32_t start, float *logits, bool all, char *err,
                size_t errlen)
{
    return g_cut ? forward_eval_cut(f, g_cut, toks, n, start, logits, all, err, errlen)
                 : forward_eval(f, toks, n, start, logits, all, err, errlen);
}

struct pos_stat {
    int32_t pos, token;
    float max_diff, kl, lse_ref, lse_ours, lse_diff;
    int32_t argmax_ref, argmax_ours;
};

static int by_severity(const void *a, const void *b)
{
    const struct pos_stat *x = a, *y = b;
    if (x->max_diff != y->max_diff)
        return x->max_diff < y->max_diff ? 1 : -1;
    return x->pos - y->pos;
}

static void token_text(const tokenizer *tok, int32_t id, char *buf, size_t cap)
{
    if (!tok || cap < 8) {
        snprintf(buf, cap, "%d", id);
        return;
    }
    char piece[64];
    int32_t n = tokenizer_token_to_piece(tok, id, true, piece, (int32_t)sizeof piece - 1);
    if (n < 0)
        n = 0;
    if (n > (int32_t)sizeof piece - 1)
        n = (int32_t)sizeof piece - 1;
    size_t o = 0;
    o += (size_t)snprintf(buf, cap, "%d '", id);
    for (int32_t i = 0; i < n && o + 6 < cap; i++) {
        unsigned char c = (unsigned char)piece[i];
        if (c == '\n')
            o += (size_t)snprintf(buf + o, cap - o, "\\n");
        else if (c < 0x20)
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    snprintf(buf + o, cap - o, "'");
}

int cmd_compare(int argc, char **argv)
{
    const char *model_path = NULL, *golden_path = NULL;
    bool one_by_one = false, all_batched = false, no_cache = false, f32_kv = false;
    int batch = 0, top_n = 10, threads = 0;
    long n_ctx = 0;
    double max_diff = -1, max_kl = -1, min_top1 = -1;
    enum blas_mode blas = BLAS_MODE_OFF;
    enum tensor_type ctk = TENSOR_TYPE_F16, ctv = TENSOR_TYPE_F16;
    static const int opt_ids[] = {
        CLI_MODEL, CLI_THREADS, CLI_ONE_BY_ONE, CLI_ALL_BATCHED, CLI_BATCH, CLI_NO_KV,      CLI_TOP,
        CLI_MAX_DIFF, CLI_MAX_KL, CLI_MIN_TOP1, CLI_F32_KV,     CLI_HELP,  CLI_CTX,        CLI_CTK,
        CLI_CTV,   CLI_LENS_LAYER, CLI_BLAS,
    };
    g_cut = 0;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    cli p;
    cli_value v;
    /* long_only: -ctk and -ctv as llama.cpp spells them */
    cli_begin(&p, "compare", opt_ids, sizeof opt_ids / sizeof opt_ids[0], true, argc, argv);
    int id;
    while ((id = cli_next(&p, &v)) != CLI_END) {
        switch (id) {
        case CLI_ERROR: return 2;
        case CLI_MODEL: model_path = v.text; break;
        case CLI_THREADS: threads = (int)v.i; break;
        case CLI_CTX: n_ctx = v.i; break;
        case CLI_ONE_BY_ONE: one_by_one = true; break;
        case CLI_ALL_BATCHED: all_batched = true; break;
        case CLI_LENS_LAYER: g_cut = (int32_t)v.i; break;
        case CLI_NO_KV: no_cache = true; break;
        case CLI_F32_KV: f32_kv = true; break;
        case CLI_CTK: forward_kv_type_parse(v.text, &ctk); break;
        case CLI_CTV: forward_kv_type_parse(v.text, &ctv); break;
        case CLI_BLAS: blas_mode_parse(v.text, &blas); break;
        case CLI_BATCH: batch = (int)v.i; break;
        case CLI_TOP: top_n = (int)v.i; break;
        case CLI_MAX_DIFF: max_diff = v.f; break;
        case CLI_MAX_KL: max_kl = v.f; break;
        case CLI_MIN_TOP1: min_top1 = v.f; break;
        case CLI_HELP: usage(stdout); return 0;
        }
    }
    const int rest = cli_rest(&p);
    if (rest < argc - 1)
        return cli_fail(&p, "one golden file at a time ('%s' and '%s')", argv[rest], argv[rest + 1]);
    if (rest == argc - 1)
        golden_path = argv[rest];
    if (!model_path)
        return cli_fail(&p, "-m MODEL is required");
    if (!golden_path)
        return cli_fail(&p, "GOLDEN.jsonl is required");
    if (one_by_one + all_batched + no_cache > 1)
        return cli_fail(&p, "--one-by-one, --all-batched and --no-kv-cache are ways to evaluate: one at a time");

    char err[1024];
    golden *g = golden_load(golden_path, err, sizeof err);
    if (!g) {
        fprintf(stderr, "tokscope compare: %s\n", err);
        return 1;
    }
    model *m = model_load_weights_only(model_path, err, sizeof err);
    if (!m) {
        fprintf(stderr, "tokscope compare: %s\n", err);
        golden_free(g);
        return 1;
    }
    const model_hparams *hp = model_get_hparams(m);
    const int32_t n_vocab = hp->n_vocab;
    if (g->n_vocab != n_vocab) {
        fprintf(stderr, "tokscope compare: golden file has n_vocab %d, model has %d (wrong model?)\n", g->n_vocab,
                n_vocab);
        model_free(m);
        golden_free(g);
        return 1;
    }
    int32_t n_seq = 0;
    int32_t *seq = golden_sequence(g, &n_seq);
    forward_params fp = forward_default_params();
    if (n_ctx && n_ctx < n_seq) {
        fprintf(stderr, "tokscope compare: the golden's %d tokens do not fit a context of %ld\n", n_seq, n_ctx);
        free(seq);
        model_free(m);
        golden_free(g);
        return 1;
    }
    fp.n_ctx = (uint32_t)(n_ctx ? n_ctx : n_seq);
    if (batch)
        fp.n_batch = (uint32_t)batch;
    fp.n_threads = threads;
    if (f32_kv)
        ctk = ctv = TENSOR_TYPE_F32;
    fp.kv_type = ctk;
    fp.v_type = ctv;
    if (g_cut > (int32_t)hp->n_layer) {
        fprintf(stderr, "tokscope compare: --lens-layer %d: the model has %u blocks\n", g_cut, hp->n_layer);
        free(seq);
        model_free(m);
        golden_free(g);
        return 1;
    }
    fp.blas = blas;
    forward_ctx *f = seq ? forward_build(m, &fp, err, sizeof err) : NULL;
    float *logits = malloc((size_t)n_seq * n_vocab * sizeof(float));
    struct pos_stat *st = calloc((size_t)n_seq, sizeof *st);
    int rc = 1;
    if (!f || !logits || !st) {
        fprintf(stderr, "tokscope compare: %s\n", f ? "out of memory" : err);
        goto done;
    }

    /* Our logits for every position of the sequence. */
    int ev = 0;
    if (all_batched) {
        ev = eval(f, seq, n_seq, 0, logits, true, err, sizeof err);
    } else if (no_cache) {
        for (int32_t p = 0; ev == 0 && p < n_seq; p++)
            ev = eval(f, seq, p + 1, 0, logits + (size_t)p * n_vocab, false, err, sizeof err);
    } else {
        int32_t first = one_by_one ? 0 : g->n_prompt;
        /* A file from the last prompt position on was made the way generation
         * runs: the prompt's other rows have no logits, so their last-layer
         * FFN is not computed, and the last row's goes through one-token
         * kernels. */
        if (first > 0 && g->first > 0)
            ev = eval(f, seq, first, 0, logits + (size_t)(first - 1) * n_vocab, false, err, sizeof err);
        else if (first > 0)
            ev = eval(f, seq, first, 0, logits, true, err, sizeof err);
        for (int32_t p = first; ev == 0 && p < n_seq; p++)
            ev = eval(f, seq + p, 1, p, logits + (size_t)p * n_vocab, false, err, sizeof err);
    }
    if (ev != 0) {
        fprintf(stderr, "tokscope compare: %s\n", err);
        goto done;
    }

    double sum_kl = 0, worst_diff = 0, worst_lse = 0;
    int32_t n_decisive = 0, n_agree = 0, n_cmp = 0;
    for (int32_t p = g->first; p < n_seq; p++) {
        const golden_pos *gp = &g->pos[p];
        const float *lo = logits + (size_t)p * n_vocab;
        const double lse = golden_lse(lo, n_vocab);
        double md = 0, kl = 0;
        for (int32_t i = 0; i < gp->n_top; i++) {
            const int32_t id = gp->top_id[i];
            if (id < 0 || id >= n_vocab)
                continue;
            const double d = fabs((double)lo[id] - gp->top_logit[i]);
            if (d > md)
                md = d;
            const double lr = gp->top_logit[i] - (double)gp->lse, lq = lo[id] - lse;
            kl += exp(lr) * (lr - lq);
        }
        struct pos_stat *s = &st[n_cmp++];
        s->pos = p;
        s->token = seq[p];
        s->max_diff = (float)md;
        s->kl = (float)kl;
        s->lse_ref = gp->lse;
        s->lse_ours = (float)lse;
        s->lse_diff = (float)fabs(lse - gp->lse);
        s->argmax_ref = gp->argmax;
        s->argmax_ours = golden_argmax(lo, n_vocab);
        sum_kl += kl;
        if (md > worst_diff)
            worst_diff = md;
        if (s->lse_diff > worst_lse)
            worst_lse = s->lse_diff;
        if (gp->n_top >= 2 && gp->top_logit[0] - gp->top_logit[1] > 0.1f) {
            n_decisive++;
            n_agree += s->argmax_ours == gp->argmax;
        }
    }
    const double mean_kl = sum_kl / n_cmp;
    const double top1 = n_decisive ? (double)n_agree / n_decisive : 1.0;

    const bool quantized = model_is_quantized(m);
    if (max_diff < 0)
        max_diff = quantized ? INFINITY : 0.05;
    if (max_kl < 0)
        max_kl = quantized ? 1e-3 : 1e-4;
    if (min_top1 < 0)
        min_top1 = quantized ? 0.98 : 0;

    const tokenizer *tok = model_get_tokenizer(m);
    printf("compare %s\n  model %s (%s weights), %d positions (%d prompt%s), mode %s, KV %s/%s, blas %s (%llu "
           "products)\n",
           golden_path, model_path, quantized ? "quantized" : "float", n_cmp, g->n_prompt,
           g->first > 0 ? ", logits of its last token only" : "",
           all_batched ? "all-batched" : no_cache ? "no-kv-cache" : one_by_one ? "one-by-one" : "prompt batched",
           forward_kv_type_name(ctk), forward_kv_type_name(ctv), blas_mode_name(blas),
           (unsigned long long)forward_blas_calls(f));
    if (top_n > 0) {
        qsort(st, (size_t)n_cmp, sizeof *st, by_severity);
        int shown = top_n < n_cmp ? top_n : n_cmp;
        printf("  %d positions with the largest |dlogit| (over the reference top-%d):\n", shown,
               g->pos[g->first].n_top);
        printf("  %5s  %-22s %10s %10s %10s  %s\n", "pos", "token_in", "max|dlog|", "KL", "|dlse|",
               "argmax ref / ours");
        for (int i = 0; i < shown; i++) {
            char tt[48], a1[48], a2[48];
            token_text(tok, st[i].token, tt, sizeof tt);
            token_text(tok, st[i].argmax_ref, a1, sizeof a1);
            token_text(tok, st[i].argmax_ours, a2, sizeof a2);
            printf("  %5d  %-22s %10.6f %10.3g %10.6f  %s%s%s\n", st[i].pos, tt, st[i].max_diff, st[i].kl,
                   st[i].lse_diff, a1, st[i].argmax_ref == st[i].argmax_ours ? " = " : " != ", a2);
        }
    }
    bool pass = worst_diff <= max_diff && mean_kl <= max_kl && top1 >= min_top1;
    printf("  tolerance: max|dlogit| <= %g, mean KL <= %g, top1 >= %g: %s\n", max_diff, max_kl, min_top1,
           pass ? "PASS" : "FAIL");
    printf("{\"positions\":%d,\"max_abs_logit_diff\":%.6f,\"mean_kl\":%.3e,\"top1_agree\":%.4f,\"max_lse_diff\":%.6f}\n",
           n_cmp, worst_diff, mean_kl, top1, worst_lse);
    rc = pass ? 0 : 1;
done:
    free(st);
    free(logits);
    free(seq);
    forward_free(f);
    model_free(m);
    golden_free(g);
    return rc;
}
