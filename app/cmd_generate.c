/* tokscope generate: evaluate a prompt and stream the sampled continuation.
 * stdout carries only the generated text; timings go to stderr. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "golden.h"
#include "chat/chat_prompt.h"
#include "model/forward.h"
#include "model/model.h"
#include "sampler/sampler.h"
#include "spec/spec.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tokscope generate -m MODEL (-p PROMPT | --tokens 1,2,3) [options]\n"
            "\n"
            "  -m, --model FILE         GGUF model\n"
            "  -p, --prompt TEXT        prompt (\"\" = BOS only)\n"
            "  -n, --n-predict N        tokens to generate (default 128; -1 = until the end of\n"
            "                           generation or a full context)\n"
            "  --temp T                 temperature (default 0.8; <= 0 is greedy; at most 5)\n"
            "  --top-k K                (default 40; <= 0 off; at most 1000000)\n"
            "  --top-p P                (default 0.95; 1 off)\n"
            "  --min-p P                (default 0.05; 0 off)\n"
            "  --typical-p P            (default 1 = off; also --typical)\n"
            "  --repeat-penalty R       (default 1 = off; 0..10)\n"
            "  --repeat-last-n N        tokens the penalties look back (default 64, -1 = all; up to 1000000)\n"
            "  --frequency-penalty F    (default 0; -2..2)\n"
            "  --presence-penalty F     (default 0; -2..2)\n"
            "  --seed S                 sampling seed 0..4294967295, drawn as llama.cpp draws (default\n"
            "                           and 4294967295, llama.cpp's default: random)\n"
            "  --dry-multiplier F       DRY repetition penalty (default 0 = off; 0..100), llama.cpp's\n"
            "  --dry-base F             (default 1.75; 1..100)\n"
            "  --dry-allowed-length N   repeats this long go unpenalized (default 2)\n"
            "  --dry-penalty-last-n N   tokens DRY looks back (default 64; -1 = the context, 0 = off)\n"
            "  --dry-sequence-breaker S a DRY sequence breaker; the first one given clears the\n"
            "                           defaults ('\\n', ':', '\"', '*'), each adds one (up to 16),\n"
            "                           \"none\" clears them all (llama.cpp's option)\n"
            "  --no-bos                 do not add BOS\n"
            "  --tokens LIST            prompt as comma-separated token ids (no BOS added)\n"
            "  --cache-type-k T         KV cache type of keys: f16 (default), q8_0, q4_0, f32\n"
            "  --cache-type-v T         ... of values (llama.cpp's -ctk/-ctv, the same numbers)\n"
            "  --no-kv-cache            recompute the whole sequence for every token\n"
            "  --blas MODE              OpenBLAS for large prompt batches: auto (default; from the batch\n"
            "                           size where it was measured faster, per weight type: F32, F16,\n"
            "                           BF16, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, Q6_K; `tokscope info`\n"
            "                           names them), on, off (the reference's bits: llama.cpp's order)\n"
            "  --chat                   wrap the prompt in the model's chat template\n"
            "  --system TEXT            system message for --chat\n"
            "  --template NAME          force a built-in chat format for --chat\n"
            "  -c, --ctx-size N         context size (default or 0: min(training context, 4096))\n"
            "  --context-shift          on a full context drop the older half of the tokens after the\n"
            "                           first (BOS) and go on; a prompt longer than the context keeps\n"
            "                           its start and its end (default: stop, as llama.cpp does)\n"
            "  --no-context-shift       stop at a full context; refuse a prompt that does not fit\n"
            "  -t, --threads N          threads (default or 0: online CPUs)\n"
            "  --spec KIND              speculative decoding: off (default), ngram (the prompt and reply\n"
            "                           looked up), draft (a second model, --draft-model), mtp (the\n"
            "                           model's own MTP block: Qwen3.5/3.6 files with one; Gemma 4:\n"
            "                           its assistant file, --draft-model), auto (mtp where the model\n"
            "                           has a block, else draft with -md, else ngram; drafting pauses\n"
            "                           while under 40 %% of drafts are accepted); the same tokens as\n"
            "                           without it, the target verifying each draft\n"
            "  --draft-max N            drafts per verification (default 3)\n"
            "  -md, --draft-model FILE  the draft model for --spec draft (same vocabulary); with\n"
            "                           --spec mtp on Gemma 4 its assistant (gemma4-assistant) file\n"
            "  --spec-ngram-n N         tokens an ngram match needs (default 12)\n"
            "\n"
            "Prints only the generated text; prompt and generation speed go to stderr (with --spec,\n"
            "ending with 'spec: drafted N, accepted M (P %%)').\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cmd_generate(int argc, char **argv)
{
    const char *model_path = NULL, *prompt = NULL, *system = NULL, *tmpl = NULL, *tokens_arg = NULL;
    enum tensor_type ctk = TENSOR_TYPE_F16, ctv = TENSOR_TYPE_F16;
    enum blas_mode blas = BLAS_MODE_AUTO;
    long n_predict = 128, n_ctx = 0, threads = 0;
    bool no_bos = false, no_cache = false, chat = false, shift = false;
    sampler_params sp = sampler_default_params();
    spec_params spp = spec_default_params();
    static const int opt_ids[] = {
        CLI_MODEL, CLI_PROMPT, CLI_N_PREDICT, CLI_TEMP, CLI_TOP_K, CLI_TOP_P, CLI_MIN_P, CLI_TYPICAL,
        CLI_REPEAT_PENALTY, CLI_REPEAT_LAST_N, CLI_FREQUENCY_PENALTY, CLI_PRESENCE_PENALTY, CLI_SEED, CLI_NO_BOS,
        CLI_NO_KV, CLI_CHAT, CLI_SYSTEM, CLI_TEMPLATE, CLI_TOKENS, CLI_CTK, CLI_CTV, CLI_BLAS, CLI_CTX, CLI_SHIFT,
        CLI_NO_SHIFT, CLI_THREADS, CLI_SPEC, CLI_DRAFT_MAX, CLI_DRAFT_MODEL, CLI_SPEC_NGRAM_N, CLI_HELP,
        CLI_DRY_MULTIPLIER, CLI_DRY_BASE, CLI_DRY_ALLOWED_LENGTH, CLI_DRY_PENALTY_LAST_N, CLI_DRY_BREAKER,
    };
    bool dry_cleared = false;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    cli p;
    cli_value v;
    cli_begin(&p, "generate", opt_ids, sizeof opt_ids / sizeof opt_ids[0], false, argc, argv);
    int id;
    while ((id = cli_next(&p, &v)) != CLI_END) {
        switch (id) {
        case CLI_ERROR: return 2;
        case CLI_MODEL: model_path = v.text; break;
        case CLI_PROMPT: prompt = v.text; break;
        case CLI_N_PREDICT: n_predict = v.i; break;
        case CLI_CTX: n_ctx = v.i; break;
        case CLI_THREADS: threads = v.i; break;
        case CLI_TEMP: sp.temp = (float)v.f; break;
        case CLI_TOP_K: sp.top_k = (int32_t)v.i; break;
        case CLI_TOP_P: sp.top_p = (float)v.f; break;
        case CLI_MIN_P: sp.min_p = (float)v.f; break;
        case CLI_TYPICAL: sp.typical_p = (float)v.f; break;
        case CLI_REPEAT_PENALTY: sp.repeat_penalty = (float)v.f; break;
        case CLI_REPEAT_LAST_N: sp.repeat_last_n = (int32_t)v.i; break;
        case CLI_FREQUENCY_PENALTY: sp.frequency_penalty = (float)v.f; break;
        case CLI_PRESENCE_PENALTY: sp.presence_penalty = (float)v.f; break;
        case CLI_SEED:
            sp.seed_set = !v.random;
            sp.seed = v.seed;
            break;
        case CLI_DRY_MULTIPLIER: sp.dry_multiplier = (float)v.f; break;
        case CLI_DRY_BASE: sp.dry_base = (float)v.f; break;
        case CLI_DRY_ALLOWED_LENGTH: sp.dry_allowed_length = (int32_t)v.i; break;
        case CLI_DRY_PENALTY_LAST_N: sp.dry_penalty_last_n = (int32_t)v.i; break;
        case CLI_DRY_BREAKER:
            if (!cli_dry_breaker(&sp, &dry_cleared, v.text)) {
                cli_fail(&p, "more than %d DRY sequence breakers", SAMPLER_MAX_DRY_BRK);
                return 2;
            }
            break;
        case CLI_NO_BOS: no_bos = true; break;
        case CLI_NO_KV: no_cache = true; break;
        case CLI_CHAT: chat = true; break;
        case CLI_SYSTEM: system = v.text; break;
        case CLI_TEMPLATE: tmpl = v.text; break;
        case CLI_TOKENS: tokens_arg = v.text; break;
        case CLI_CTK: forward_kv_type_parse(v.text, &ctk); break;
        case CLI_CTV: forward_kv_type_parse(v.text, &ctv); break;
        case CLI_BLAS: blas_mode_parse(v.text, &blas); break;
        case CLI_SHIFT: shift = true; break;
        case CLI_NO_SHIFT: shift = false; break;
        case CLI_SPEC: spec_type_parse(v.text, &spp.type); break;
        case CLI_DRAFT_MAX: spp.draft_max = (int32_t)v.i; break;
        case CLI_DRAFT_MODEL: spp.draft_model = v.text; break;
        case CLI_SPEC_NGRAM_N: spp.ngram_n = (int32_t)v.i; break;
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

    char err[1024], warn[512];
    model *m = model_load(model_path, err, sizeof err);
    if (!m) {
        fprintf(stderr, "tokscope generate: %s\n", err);
        return 1;
    }
    const tokenizer *tok = model_get_tokenizer(m);
    const int32_t n_vocab = model_get_hparams(m)->n_vocab;
    int rc = 1;
    forward_ctx *f = NULL;
    sampler *smp = NULL;
    spec *sp_ctx = NULL;
    float *logits = NULL;
    int32_t *seq = NULL;
    forward_prompt_params pp = {prompt, no_bos, chat, system, tmpl};
    int32_t n_prompt = 0;
    warn[0] = 0;
    int32_t *toks = tokens_arg ? golden_parse_ids(tokens_arg, &n_prompt)
                               : forward_tokenize_prompt(m, &pp, &n_prompt, warn, sizeof warn, err, sizeof err);
    if (!toks && tokens_arg) {
        fprintf(stderr, "tokscope generate: --tokens wants comma-separated non-negative ids\n");
        goto done;
    }
    if (!toks) {
        fprintf(stderr, "tokscope generate: %s\n", err);
        goto done;
    }
    if (warn[0])
        fprintf(stderr, "tokscope generate: warning: %s\n", warn);
    if (!tokens_arg)
        chat_prompt_log("generate", toks, n_prompt);
    if (n_prompt == 0) {
        fprintf(stderr, "tokscope generate: the prompt is empty (no tokens and no BOS)\n");
        goto done;
    }
    forward_params fp = forward_default_params();
    fp.n_ctx = (uint32_t)n_ctx;
    fp.n_threads = (int32_t)threads;
    fp.kv_type = ctk;
    fp.v_type = ctv;
    fp.blas = blas;
    f = forward_build(m, &fp, err, sizeof err);
    if (!f) {
        fprintf(stderr, "tokscope generate: %s\n", err);
        goto done;
    }
    const int32_t ctx = (int32_t)forward_n_ctx(f);
    if (spp.type != SPEC_OFF) {
        if (no_cache) {
            fprintf(stderr, "tokscope generate: --spec needs the KV cache (not --no-kv-cache)\n");
            goto done;
        }
        forward_params dfp = fp;
        dfp.n_ctx = (uint32_t)ctx;
        sp_ctx = spec_create(&spp, m, &dfp, err, sizeof err);
        if (!sp_ctx) {
            fprintf(stderr, "tokscope generate: %s\n", err);
            goto done;
        }
    }
    /* on a shift the BOS stays, as llama.cpp keeps it (--keep 0) */
    const int32_t n_keep = tok && n_prompt > 0 && toks[0] == tokenizer_bos(tok) ? 1 : 0;
    if (n_prompt >= ctx) { /* room for one generated token is needed */
        if (!shift) {
            fprintf(stderr,
                    "tokscope generate: the prompt (%d tokens) does not fit the context of %d tokens "
                    "(use -c, or --context-shift to keep its start and end)\n",
                    n_prompt, ctx);
            goto done;
        }
        /* as the TUI's engine does: the first n_keep tokens, then the most
         * recent ones in half of the rest, so that the reply has room */
        const int32_t tail = (ctx - n_keep) / 2;
        const int32_t drop = n_prompt - n_keep - tail;
        memmove(toks + n_keep, toks + n_keep + drop, (size_t)tail * sizeof *toks);
        fprintf(stderr,
                "tokscope generate: context shift: the prompt (%d tokens) is longer than the context (%d): "
                "kept the first %d and the last %d\n",
                n_prompt, ctx, n_keep, tail);
        n_prompt -= drop;
    }
    logits = malloc((size_t)n_vocab * sizeof(float));
    seq = malloc((size_t)ctx * sizeof *seq);
    smp = sampler_build(&sp, n_vocab);
    if (smp)
        sampler_set_tokenizer(smp, tok); /* DRY's breakers are strings, matched as tokens */
    if (!logits || !seq || !smp) {
        fprintf(stderr, "tokscope generate: out of memory\n");
        goto done;
    }
    memcpy(seq, toks, (size_t)n_prompt * sizeof *seq);
    for (int32_t i = 0; i < n_prompt; i++)
        sampler_accept(smp, toks[i]);

    double t0 = now_s();
    if (spec_eval(sp_ctx, f, seq, n_prompt, 0, logits, false, err, sizeof err) != 0) {
        fprintf(stderr, "tokscope generate: %s\n", err);
        goto done;
    }
    double t1 = now_s();
    /* Pieces can end inside a UTF-8 character; hold those bytes back. */
    char pend[256];
    size_t n_pend = 0;
    int32_t n_past = n_prompt, n_gen = 0, n_shifts = 0;
    const char *stop = "length";
    /* --spec: the tokens the last verification sampled; all but the last
     * were drafts, evaluated already */
    int32_t queue[SPEC_DRAFT_MAX + 1], n_queue = 0, i_queue = 0;
    while (n_predict < 0 || n_gen < n_predict) { /* -1: no limit */
        const bool queued = i_queue < n_queue;
        int32_t id = queued ? queue[i_queue++] : sampler_sample(smp, logits, NULL);
        if (tok && tokenizer_is_eog(tok, id)) {
            stop = "end of generation";
            break;
        }
        if (!queued) /* a verification accepted its tokens as it drew them */
            sampler_accept(smp, id);
        n_gen++;
        char piece[128];
        int32_t len = tok ? tokenizer_token_to_piece(tok, id, false, piece, (int32_t)sizeof piece) : 0;
        if (len > (int32_t)sizeof piece)
            len = (int32_t)sizeof piece;
        if (len > 0) {
            if (n_pend + (size_t)len > sizeof pend) { /* never a valid character: flush as is */
                fwrite(pend, 1, n_pend, stdout);
                n_pend = 0;
            }
            memcpy(pend + n_pend, piece, (size_t)len);
            n_pend += (size_t)len;
            size_t ok = tokenizer_utf8_complete(pend, n_pend);
            fwrite(pend, 1, ok, stdout);
            memmove(pend, pend + ok, n_pend - ok);
            n_pend -= ok;
            fflush(stdout);
        }
        if (n_predict >= 0 && n_gen >= n_predict)
            break;
        if (i_queue < n_queue) /* an accepted draft: evaluated by the verification */
            continue;
        if (sp_ctx && n_past < ctx) {
            /* as llama-server: room for the drafts, the next token and one more */
            int32_t max = ctx - n_past - 2;
            if (n_predict >= 0 && max > n_predict - n_gen - 1)
                max = (int32_t)(n_predict - n_gen - 1);
            n_queue = spec_step(sp_ctx, f, smp, seq, n_past, id, max, queue, err, sizeof err);
            i_queue = 0;
            if (n_queue < 0) {
                fprintf(stderr, "\ntokscope generate: %s\n", err);
                goto done;
            }
            if (n_queue > 0) {
                n_past += n_queue; /* last and the accepted drafts */
                continue;
            }
        }
        bool recompute = no_cache;
        if (n_past >= ctx) {
            /* context shift: drop the older half of what follows the kept
             * tokens, then evaluate the rest again from position 0 */
            const int32_t n_discard = (n_past - n_keep) / 2;
            if (!shift || n_discard <= 0) {
                stop = "context full";
                break;
            }
            memmove(seq + n_keep, seq + n_keep + n_discard, (size_t)(n_past - n_keep - n_discard) * sizeof *seq);
            n_past -= n_discard;
            n_shifts++;
            recompute = true;
        }
        seq[n_past] = id;
        int ev = recompute ? spec_eval(sp_ctx, f, seq, n_past + 1, 0, logits, false, err, sizeof err)
                           : spec_eval(sp_ctx, f, seq + n_past, 1, n_past, logits, false, err, sizeof err);
        if (ev != 0) {
            fprintf(stderr, "\ntokscope generate: %s\n", err);
            goto done;
        }
        n_past++;
    }
    fwrite(pend, 1, n_pend, stdout);
    fflush(stdout);
    double t2 = now_s();
    const double tp = t1 - t0, tg = t2 - t1;
    fprintf(stderr,
            "\nprompt: %d tokens in %.3f s (%.1f tok/s); generation: %d tokens in %.3f s (%.1f tok/s); stop: %s",
            n_prompt, tp, tp > 0 ? n_prompt / tp : 0.0, n_gen, tg, tg > 0 ? n_gen / tg : 0.0, stop);
    if (n_shifts)
        fprintf(stderr, "; %d context shift%s", n_shifts, n_shifts == 1 ? "" : "s");
    fprintf(stderr, "; blas %s: %llu products", blas_mode_name(blas), (unsigned long long)forward_blas_calls(f));
    if (sp_ctx) { /* the counts llama-server logs as draft acceptance */
        const spec_stats ss = spec_get_stats(sp_ctx);
        fprintf(stderr, "; spec: drafted %lld, accepted %lld (%.1f %%)", (long long)ss.n_drafted,
                (long long)ss.n_accepted, ss.n_drafted ? 100.0 * (double)ss.n_accepted / (double)ss.n_drafted : 0.0);
    }
    fputc('\n', stderr);
    rc = 0;
done:
    sampler_free(smp);
    spec_free(sp_ctx);
    free(seq);
    free(logits);
    free(toks);
    forward_free(f);
    model_free(m);
    return rc;
}
