/* tokscope logits: the model's logits at every position of a prompt and of a
 * greedy continuation, as JSONL in the golden schema (../shared/README.md),
 * so our output can be diffed against the reference's or fed to compare. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "chat/chat_prompt.h"
#include "model/forward.h"
#include "golden.h"
#include "model/model.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tokscope logits -m MODEL (-p PROMPT | --tokens 1,2,3) [options]\n"
            "\n"
            "Prints JSONL: {\"prompt_tokens\",\"n_vocab\"}, one line per position {pos, token_in, argmax,\n"
            "lse, top [[id,logit],...]}, then {\"generated\",\"text\"} for a greedy continuation.\n"
            "\n"
            "  -m, --model FILE     GGUF model\n"
            "  -p, --prompt TEXT    prompt (\"\" = BOS only)\n"
            "  --tokens LIST        prompt as comma-separated token ids (no BOS added)\n"
            "  -n N                 greedy tokens to generate (default 16)\n"
            "  -k N                 logits listed per position (default 40)\n"
            "  --one-by-one         evaluate the prompt one token at a time\n"
            "  --last               list only the prompt's last position, computed as generation does\n"
            "                       (no logits for the others, so their last-layer FFN is skipped)\n"
            "  --batch B            tokens per internal batch (default 512)\n"
            "  --no-bos             do not add BOS\n"
            "  --no-kv-cache        recompute the whole sequence at every position\n"
            "  --blas MODE          OpenBLAS for large batches: off (default: the reference's order,\n"
            "                       bit for bit), auto, on (the same products in another order)\n"
            "  --chat               wrap the prompt in the chat template (one user turn)\n"
            "  --system TEXT        system message for --chat\n"
            "  --template NAME      force a built-in chat format\n"
            "  -c, --ctx-size N     context size (default or 0: prompt + generated tokens)\n"
            "  -t, --threads N      threads (default or 0: online CPUs)\n"
            "\n"
            "Logit lens:\n"
            "  --lens-layer L       the logits the output norm and head give on the residual stream after\n"
            "                       the first L blocks, in every mode above: what the file cut to L\n"
            "                       blocks gives (the greedy continuation follows them)\n"
            "  --lens               besides the model's logits, every position gets \"lens\": one entry\n"
            "                       {\"layer\",\"argmax\",\"lse\",\"top\"} per block, the top -k of the head\n"
            "                       on the residual after it (not with --last or --no-kv-cache)\n");
}

/* How the positions are evaluated: the whole model, the model cut to some
 * blocks, or the whole model with every block's lens logits collected. */
typedef struct logits_run {
    forward_ctx *f;
    int32_t cut;   /* --lens-layer, 0 = all blocks */
    bool lens;     /* --lens */
    int32_t n_vocab, top_k, n_layer;
    int32_t *scratch;
    char **entries; /* --lens: [row * n_layer + layer - 1], JSON objects of the last evaluation */
    bool oom;
} logits_run;

static void lens_collect(void *user, int32_t layer, int32_t row0, int32_t n_rows, const float *logits)
{
    logits_run *r = user;
    for (int32_t i = 0; i < n_rows; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (!m) {
            r->oom = true;
            return;
        }
        fprintf(m, "{\"layer\":%d,", layer);
        golden_write_top(m, logits + (size_t)i * r->n_vocab, r->n_vocab, r->top_k, r->scratch);
        fputc('}', m);
        if (fclose(m) != 0 || !buf) {
            free(buf);
            r->oom = true;
            return;
        }
        char **slot = &r->entries[(size_t)(row0 + i) * r->n_layer + layer - 1];
        free(*slot);
        *slot = buf;
    }
}

static int run_eval(logits_run *r, const int32_t *toks, int32_t n, int32_t start, float *logits, bool all, char *err,
                    size_t errlen)
{
    int rc;
    if (r->lens)
        rc = forward_eval_lens(r->f, toks, n, start, logits, false, lens_collect, r, err, errlen);
    else if (r->cut)
        rc = forward_eval_cut(r->f, r->cut, toks, n, start, logits, all, err, errlen);
    else
        rc = forward_eval(r->f, toks, n, start, logits, all, err, errlen);
    if (rc == 0 && r->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return rc;
}

/* The position line; with --lens, row's entries of the last evaluation. */
static void write_pos(logits_run *r, int32_t pos, int32_t tok, const float *logits, int32_t row)
{
    if (!r->lens) {
        golden_write_pos(stdout, pos, tok, logits, r->n_vocab, r->top_k, r->scratch);
        return;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
        fputs(",\"lens\":[", m);
        for (int32_t l = 0; l < r->n_layer; l++) {
            char **e = &r->entries[(size_t)row * r->n_layer + l];
            fprintf(m, "%s%s", l ? "," : "", *e ? *e : "null");
            free(*e);
            *e = NULL;
        }
        fputc(']', m);
        fclose(m);
    }
    golden_write_pos_extra(stdout, pos, tok, logits, r->n_vocab, r->top_k, r->scratch, buf);
    free(buf);
}

int cmd_logits(int argc, char **argv)
{
    const char *model_path = NULL, *prompt = NULL, *tokens_arg = NULL, *system = NULL, *tmpl = NULL;
    int n_gen = 16, top_k = 40, batch = 0, threads = 0;
    long n_ctx = 0;
    bool one_by_one = false, no_bos = false, no_cache = false, chat = false, last_only = false, lens = false;
    long lens_layer = 0;
    enum blas_mode blas = BLAS_MODE_OFF;
    static const int opt_ids[] = {
        CLI_MODEL,   CLI_PROMPT, CLI_TOKENS, CLI_ONE_BY_ONE, CLI_BATCH, CLI_NO_BOS,     CLI_NO_KV,
        CLI_CHAT,    CLI_SYSTEM, CLI_TEMPLATE, CLI_THREADS, CLI_CTX,   CLI_LAST,       CLI_HELP,
        CLI_LENS,    CLI_LENS_LAYER, CLI_BLAS, CLI_LOGITS_N, CLI_LOGITS_K,
    };
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    cli p;
    cli_value v;
    cli_begin(&p, "logits", opt_ids, sizeof opt_ids / sizeof opt_ids[0], false, argc, argv);
    int id;
    while ((id = cli_next(&p, &v)) != CLI_END) {
        switch (id) {
        case CLI_ERROR: return 2;
        case CLI_MODEL: model_path = v.text; break;
        case CLI_PROMPT: prompt = v.text; break;
        case CLI_TOKENS: tokens_arg = v.text; break;
        case CLI_LOGITS_N: n_gen = (int)v.i; break;
        case CLI_LOGITS_K: top_k = (int)v.i; break;
        case CLI_THREADS: threads = (int)v.i; break;
        case CLI_CTX: n_ctx = v.i; break;
        case CLI_BATCH: batch = (int)v.i; break;
        case CLI_ONE_BY_ONE: one_by_one = true; break;
        case CLI_LAST: last_only = true; break;
        case CLI_LENS: lens = true; break;
        case CLI_LENS_LAYER: lens_layer = v.i; break;
        case CLI_NO_BOS: no_bos = true; break;
        case CLI_NO_KV: no_cache = true; break;
        case CLI_CHAT: chat = true; break;
        case CLI_SYSTEM: system = v.text; break;
        case CLI_TEMPLATE: tmpl = v.text; break;
        case CLI_BLAS: blas_mode_parse(v.text, &blas); break;
        case CLI_HELP: usage(stdout); return 0;
        }
    }
    if (cli_rest(&p) != argc)
        return cli_fail(&p, "unexpected argument '%s'", argv[cli_rest(&p)]);
    if (!model_path)
        return cli_fail(&p, "-m MODEL is required");
    if (!prompt == !tokens_arg)
        return cli_fail(&p, "give the prompt as -p TEXT or as --tokens LIST (one of the two)");
    if (tokens_arg && chat)
        return cli_fail(&p, "--chat wraps a text prompt: not with --tokens");
    if (one_by_one && no_cache)
        return cli_fail(&p, "--one-by-one and --no-kv-cache are two ways to evaluate: one at a time");
    if (lens && (lens_layer || last_only || no_cache))
        return cli_fail(&p, "--lens lists every block at every position: not with --lens-layer, --last or "
                            "--no-kv-cache");

    char err[1024], warn[512];
    int32_t n_prompt = 0;
    int32_t *toks = NULL;
    if (tokens_arg && !(toks = golden_parse_ids(tokens_arg, &n_prompt))) {
        fprintf(stderr, "tokscope logits: --tokens wants comma-separated non-negative ids\n");
        return 2;
    }
    model *m = tokens_arg ? model_load_weights_only(model_path, err, sizeof err) : model_load(model_path, err, sizeof err);
    if (!m) {
        fprintf(stderr, "tokscope logits: %s\n", err);
        free(toks);
        return 1;
    }
    const tokenizer *tok = model_get_tokenizer(m);
    const model_hparams *hp = model_get_hparams(m);
    const int32_t n_vocab = hp->n_vocab;
    int rc = 1;
    forward_ctx *f = NULL;
    float *logits = NULL;
    int32_t *seq = NULL, *scratch = NULL;
    logits_run run = {0};
    if (!toks) {
        forward_prompt_params pp = {prompt, no_bos, chat, system, tmpl};
        toks = forward_tokenize_prompt(m, &pp, &n_prompt, warn, sizeof warn, err, sizeof err);
        if (!toks) {
            fprintf(stderr, "tokscope logits: %s\n", err);
            goto done;
        }
        if (warn[0])
            fprintf(stderr, "tokscope logits: warning: %s\n", warn);
        chat_prompt_log("logits", toks, n_prompt);
    }
    if (n_prompt == 0) {
        fprintf(stderr, "tokscope logits: the prompt is empty (no tokens and no BOS)\n");
        goto done;
    }
    const int64_t total = (int64_t)n_prompt + n_gen;
    if (n_ctx == 0)
        n_ctx = total;
    if (total > n_ctx) {
        fprintf(stderr, "tokscope logits: prompt (%d tokens) plus %d generated tokens exceed the context of %ld\n",
                n_prompt, n_gen, n_ctx);
        goto done;
    }
    forward_params fp = forward_default_params();
    fp.n_ctx = (uint32_t)n_ctx;
    fp.n_threads = threads;
    if (batch)
        fp.n_batch = (uint32_t)batch;
    fp.blas = blas;
    f = forward_build(m, &fp, err, sizeof err);
    if (!f) {
        fprintf(stderr, "tokscope logits: %s\n", err);
        goto done;
    }
    const int32_t nb = batch ? batch : 512;
    logits = malloc((size_t)nb * n_vocab * sizeof(float));
    seq = malloc((size_t)total * sizeof *seq);
    scratch = malloc(((size_t)n_vocab + 1) * sizeof *scratch);
    if (!logits || !seq || !scratch) {
        fprintf(stderr, "tokscope logits: out of memory\n");
        goto done;
    }
    if (lens_layer > (long)hp->n_layer) {
        fprintf(stderr, "tokscope logits: --lens-layer %ld: the model has %u blocks\n", lens_layer, hp->n_layer);
        goto done;
    }
    run = (logits_run){f, (int32_t)lens_layer, lens, n_vocab, top_k, (int32_t)hp->n_layer, scratch, NULL, false};
    if (lens && !(run.entries = calloc((size_t)nb * hp->n_layer, sizeof *run.entries))) {
        fprintf(stderr, "tokscope logits: out of memory\n");
        goto done;
    }
    memcpy(seq, toks, (size_t)n_prompt * sizeof *seq);
    golden_write_header(stdout, toks, n_prompt, n_vocab);

    /* Prompt positions. With --last, only the last one gets logits, as in
     * generate: forward_eval with all_logits false. */
    if (last_only) {
        const int32_t step = one_by_one ? 1 : n_prompt; /* --no-kv-cache: one call anyway */
        int ev = 0;
        for (int32_t p0 = 0; ev == 0 && p0 < n_prompt; p0 += step)
            ev = run_eval(&run, seq + p0, step, p0, logits, false, err, sizeof err);
        if (ev != 0) {
            fprintf(stderr, "tokscope logits: %s\n", err);
            goto done;
        }
        write_pos(&run, n_prompt - 1, seq[n_prompt - 1], logits, 0);
    }
    for (int32_t p0 = 0; !last_only && p0 < n_prompt;) {
        int32_t cnt = one_by_one || no_cache ? 1 : (n_prompt - p0 < nb ? n_prompt - p0 : nb);
        int ev = no_cache ? run_eval(&run, seq, p0 + 1, 0, logits, false, err, sizeof err)
                          : run_eval(&run, seq + p0, cnt, p0, logits, true, err, sizeof err);
        if (ev != 0) {
            fprintf(stderr, "tokscope logits: %s\n", err);
            goto done;
        }
        for (int32_t i = 0; i < cnt; i++)
            write_pos(&run, p0 + i, seq[p0 + i], logits + (size_t)i * n_vocab, i);
        p0 += cnt;
    }
    /* Greedy continuation: feed each argmax back, report its logits too. */
    const float *last = logits + (size_t)((one_by_one || no_cache || last_only) ? 0 : (n_prompt - 1) % nb) * n_vocab;
    int32_t next = golden_argmax(last, n_vocab);
    for (int32_t i = 0; i < n_gen; i++) {
        const int32_t pos = n_prompt + i;
        seq[pos] = next;
        int ev = no_cache ? run_eval(&run, seq, pos + 1, 0, logits, false, err, sizeof err)
                          : run_eval(&run, seq + pos, 1, pos, logits, false, err, sizeof err);
        if (ev != 0) {
            fprintf(stderr, "tokscope logits: %s\n", err);
            goto done;
        }
        write_pos(&run, pos, next, logits, 0);
        next = golden_argmax(logits, n_vocab);
    }
    char *text = NULL;
    if (tok && n_gen > 0) {
        int32_t need = tokenizer_decode(tok, seq + n_prompt, n_gen, false, false, NULL, 0);
        text = need >= 0 ? malloc((size_t)need + 1) : NULL;
        if (text && tokenizer_decode(tok, seq + n_prompt, n_gen, false, false, text, need + 1) < 0)
            text[0] = 0;
    }
    golden_write_final(stdout, seq + n_prompt, n_gen, text ? text : "");
    free(text);
    fflush(stdout);
    rc = 0;
done:
    for (size_t i = 0; run.entries && i < (size_t)(batch ? batch : 512) * (size_t)run.n_layer; i++)
        free(run.entries[i]);
    free(run.entries);
    free(scratch);
    free(seq);
    free(logits);
    free(toks);
    forward_free(f);
    model_free(m);
    return rc;
}
