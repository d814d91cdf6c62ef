/* refrun: the reference's logits in the golden schema, from libllama.
 *
 * Not part of tokscope's build: it links a llama.cpp build (34af94cd, the
 * goldens' commit) to make reference runs of what ../shared does not cover.
 *
 *   cc -O2 -o refrun tests/golden/reference/refrun.c -I$REF/include -I$REF/ggml/include \
 *      -L$REF/build/bin -lllama -lggml -lggml-base -Wl,-rpath,$REF/build/bin -lm
 *   refrun -m MODEL --tokens 1,2,3 [-n 12] [--top 40] [-t 2] [-c 512] [-ub 512]
 *          [--one-by-one | --last] [-ctk f16|q8_0|q4_0] [-ctv ...] [--seed S] > OUT.jsonl
 *
 * The prompt goes as one batch with logits for every row (--last: for its
 * last row only; --one-by-one: one llama_decode per token), then n greedy
 * tokens one per call, each decoded (so each has its line), as the shared
 * goldens were made; with --seed S sampled instead by common_sampler's
 * default chain (top-k 40, top-p 0.95, min-p 0.05, temp 0.8, dist(S)). Flash attention on auto, as llama-cli. Lines: the
 * {"prompt_tokens","n_vocab"} header, one {"pos","token_in","argmax","lse",
 * "top"} per position with logits (6 decimals; lse in double), then
 * {"generated":[...],"text":""}. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void die(const char *m)
{
    fprintf(stderr, "refrun: %s\n", m);
    exit(1);
}

static int top_k;

static void emit(int pos, int tok, const float *lg, int nv)
{
    double mx = -INFINITY, s = 0;
    int am = 0;
    for (int i = 0; i < nv; i++)
        if (lg[i] > mx) {
            mx = lg[i];
            am = i;
        }
    for (int i = 0; i < nv; i++)
        s += exp((double)lg[i] - mx);
    printf("{\"pos\":%d,\"token_in\":%d,\"argmax\":%d,\"lse\":%.6f,\"top\":[", pos, tok, am, mx + log(s));
    /* top k by logit, ties by id (selection, k small) */
    char *used = calloc((size_t)nv, 1);
    for (int k = 0; k < top_k && k < nv; k++) {
        int b = -1;
        for (int i = 0; i < nv; i++)
            if (!used[i] && (b < 0 || lg[i] > lg[b]))
                b = i;
        used[b] = 1;
        printf("%s[%d,%.6f]", k ? "," : "", b, lg[b]);
    }
    free(used);
    printf("]}\n");
}

static int argmax(const float *lg, int nv)
{
    int a = 0;
    for (int i = 1; i < nv; i++)
        if (lg[i] > lg[a])
            a = i;
    return a;
}

static enum ggml_type cache_type(const char *s)
{
    if (!strcmp(s, "f16")) return GGML_TYPE_F16;
    if (!strcmp(s, "q8_0")) return GGML_TYPE_Q8_0;
    if (!strcmp(s, "q4_0")) return GGML_TYPE_Q4_0;
    if (!strcmp(s, "f32")) return GGML_TYPE_F32;
    die("cache type: f16, q8_0, q4_0 or f32");
    return GGML_TYPE_F16;
}

static void quiet(enum ggml_log_level l, const char *t, void *u)
{
    (void)u;
    if (l >= GGML_LOG_LEVEL_ERROR)
        fputs(t, stderr);
}

int main(int argc, char **argv)
{
    const char *model = NULL, *toks = NULL;
    int n_gen = 12, threads = 2, ctx = 512, ub = 512, obo = 0, last = 0;
    long seed = -1;
    enum ggml_type tk = GGML_TYPE_F16, tv = GGML_TYPE_F16;
    top_k = 40;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-m") && v) model = v, i++;
        else if (!strcmp(a, "--tokens") && v) toks = v, i++;
        else if (!strcmp(a, "-n") && v) n_gen = atoi(v), i++;
        else if (!strcmp(a, "--top") && v) top_k = atoi(v), i++;
        else if (!strcmp(a, "-t") && v) threads = atoi(v), i++;
        else if (!strcmp(a, "-c") && v) ctx = atoi(v), i++;
        else if (!strcmp(a, "-ub") && v) ub = atoi(v), i++;
        else if (!strcmp(a, "-ctk") && v) tk = cache_type(v), i++;
        else if (!strcmp(a, "-ctv") && v) tv = cache_type(v), i++;
        else if (!strcmp(a, "--one-by-one")) obo = 1;
        else if (!strcmp(a, "--last")) last = 1;
        else if (!strcmp(a, "--seed") && v) seed = atol(v), i++;
        else die("usage: refrun -m MODEL --tokens IDS [-n N] [--top K] [-t T] [-c CTX] [-ub N] "
                 "[--one-by-one|--last] [-ctk T] [-ctv T]");
    }
    if (!model || !toks)
        die("-m and --tokens are required");
    int np = 0, cap = 16;
    int *p = malloc(sizeof *p * (size_t)cap);
    for (const char *s = toks; *s;) {
        if (np == cap)
            p = realloc(p, sizeof *p * (size_t)(cap *= 2));
        p[np++] = (int)strtol(s, (char **)&s, 10);
        if (*s == ',')
            s++;
        else if (*s)
            die("--tokens: comma-separated ids");
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *m = llama_model_load_from_file(model, mp);
    if (!m)
        die("cannot load the model");
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)ctx;
    cp.n_batch = (uint32_t)(np > ub ? np : ub);
    cp.n_ubatch = (uint32_t)ub;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.type_k = tk;
    cp.type_v = tv;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.no_perf = true;
    struct llama_context *c = llama_init_from_model(m, cp);
    if (!c)
        die("cannot make a context");
    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
    printf("{\"prompt_tokens\":[");
    for (int i = 0; i < np; i++)
        printf("%s%d", i ? "," : "", p[i]);
    printf("],\"n_vocab\":%d}\n", nv);

    struct llama_batch b = llama_batch_init(np > 1 ? np : 1, 0, 1);
    int pos = 0;
    const float *lg = NULL;
    if (obo) {
        for (int i = 0; i < np; i++) {
            b.n_tokens = 1;
            b.token[0] = p[i], b.pos[0] = pos, b.n_seq_id[0] = 1, b.seq_id[0][0] = 0, b.logits[0] = 1;
            if (llama_decode(c, b))
                die("decode failed");
            lg = llama_get_logits_ith(c, 0);
            emit(pos, p[i], lg, nv);
            pos++;
        }
    } else {
        b.n_tokens = np;
        for (int i = 0; i < np; i++) {
            b.token[i] = p[i], b.pos[i] = i, b.n_seq_id[i] = 1, b.seq_id[i][0] = 0;
            b.logits[i] = (int8_t)(!last || i == np - 1);
        }
        if (llama_decode(c, b))
            die("decode failed");
        for (int i = last ? np - 1 : 0; i < np; i++)
            emit(i, p[i], llama_get_logits_ith(c, i), nv);
        lg = llama_get_logits_ith(c, np - 1);
        pos = np;
    }
    int *gen = malloc(sizeof *gen * (size_t)(n_gen > 0 ? n_gen : 1));
    struct llama_sampler *smp = NULL;
    llama_token_data *cand = NULL;
    if (seed >= 0) {
        smp = llama_sampler_chain_init(llama_sampler_chain_default_params());
        llama_sampler_chain_add(smp, llama_sampler_init_top_k(40));
        llama_sampler_chain_add(smp, llama_sampler_init_top_p(0.95f, 0));
        llama_sampler_chain_add(smp, llama_sampler_init_min_p(0.05f, 0));
        llama_sampler_chain_add(smp, llama_sampler_init_temp_ext(0.8f, 0.0f, 1.0f));
        llama_sampler_chain_add(smp, llama_sampler_init_dist((uint32_t)seed));
        cand = malloc(sizeof *cand * (size_t)nv);
    }
    for (int g = 0; g < n_gen; g++) {
        int t;
        if (smp) {
            for (int i = 0; i < nv; i++)
                cand[i] = (llama_token_data){i, lg[i], 0.0f};
            llama_token_data_array cur = {cand, (size_t)nv, -1, false};
            llama_sampler_apply(smp, &cur);
            t = cur.data[cur.selected].id;
            llama_sampler_accept(smp, t);
        } else
            t = argmax(lg, nv);
        gen[g] = t;
        b.n_tokens = 1;
        b.token[0] = t, b.pos[0] = pos, b.n_seq_id[0] = 1, b.seq_id[0][0] = 0, b.logits[0] = 1;
        if (llama_decode(c, b))
            die("decode failed");
        lg = llama_get_logits_ith(c, 0);
        emit(pos, t, lg, nv);
        pos++;
    }
    printf("{\"generated\":[");
    for (int g = 0; g < n_gen; g++)
        printf("%s%d", g ? "," : "", gen[g]);
    printf("],\"text\":\"\"}\n"); /* compare reads the ids; the text is left empty */
    if (smp)
        llama_sampler_free(smp);
    free(cand);
    llama_batch_free(b);
    llama_free(c);
    llama_model_free(m);
    return 0;
}
