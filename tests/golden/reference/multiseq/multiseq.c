/* multiseq: llama.cpp's logits for batches that mix sequences, from libllama.
 *
 * Not part of tokscope's build: it links the reference build (34af94cd) to
 * write the goldens tests/unit/test_multiseq.c replays (see README.md).
 *
 *   multiseq MODEL REL_NAME [q] > OUT.txt
 *
 * Each schedule runs on a fresh context with n_seq_max sequences and
 * kv_unified = false (what llama-server -np N does: one KV stream per
 * sequence), flash attention on auto (on, on CPU), 2 threads, an F16
 * cache; with q, schedules 1 and 2 again with Q8_0 K and V, and with a
 * Q4_0 K beside an F16 V (the heads must be whole blocks of 32).
 * A schedule is a list of batches; "S:N" puts N new tokens of sequence S
 * (at its next positions) into the batch with logits for the last one,
 * "S:N*" with logits for all of them; "|" decodes the batch; "rmS" drops
 * sequence S (llama_memory_seq_rm(S, -1, -1)), which then starts again at
 * position 0. Token ids come from a fixed xorshift stream.
 *
 * Output, one line each:
 *   model REL_NAME
 *   context N_SEQ N_CTX_SEQ N_UBATCH N_THREADS CTK CTV  (a fresh context)
 *   rm SEQ                                         (the sequence dropped)
 *   batch N, then N lines "t TOKEN POS SEQ OUT"    (one llama_decode)
 *   logits INDEX ARGMAX FNV1A64 K ID:HEXFLOAT...   (each row with OUT = 1, by batch index)
 * FNV-1a 64 is over the row's n_vocab float32s as little-endian bytes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

#define TOP 4

static void die(const char *m)
{
    fprintf(stderr, "multiseq: %s\n", m);
    exit(1);
}

static void quiet(enum ggml_log_level l, const char *t, void *u)
{
    (void)u;
    if (l >= GGML_LOG_LEVEL_ERROR)
        fputs(t, stderr);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static int next_token(int nv)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    const int span = nv < 1000 ? nv - 3 : 997;
    return 3 + (int)(rng % (uint64_t)span);
}

static void emit(int idx, const float *lg, int nv)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint8_t *p = (const uint8_t *)lg;
    for (size_t i = 0; i < 4 * (size_t)nv; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    int am = 0;
    for (int i = 1; i < nv; i++)
        if (lg[i] > lg[am])
            am = i;
    printf("logits %d %d %016llx %d", idx, am, (unsigned long long)h, TOP);
    char *used = calloc((size_t)nv, 1);
    for (int k = 0; k < TOP && k < nv; k++) {
        int b = -1;
        for (int i = 0; i < nv; i++)
            if (!used[i] && (b < 0 || lg[i] > lg[b]))
                b = i;
        used[b] = 1;
        printf(" %d:%a", b, (double)lg[b]);
    }
    free(used);
    printf("\n");
}

struct sched {
    int n_seq, n_ctx_seq, n_ubatch;
    const char *plan;
    enum ggml_type tk, tv;
};

/* Prompt chunks of one sequence beside single tokens of others, in both
 * orders (split_equal only groups increasing sequence ids); sequences at
 * different positions; one dropped and started again; ubatches cut by
 * n_ubatch; a long sequence whose single query takes the split-KV kernel
 * alone and the one-chunk kernel beside another stream. */
#define S1 "0:20 | 0:1 1:70 | 1:1 0:1 2:5* | 2:1 1:1 0:1 | rm0 | 0:10 1:1 2:1 | 2:1 0:1 1:1 | 0:1 2:1"
#define S2 "0:100 1:30 | 0:1 1:1 | 1:80* 0:1 | 0:3* 1:3*"
static const struct sched scheds[] = {
    {3, 512, 512, S1, GGML_TYPE_F16, GGML_TYPE_F16},
    {2, 512, 64, S2, GGML_TYPE_F16, GGML_TYPE_F16},
    {2, 512, 512, "0:300 | 0:1 | 0:1 1:1 | 1:1 0:1 | 1:66 0:1", GGML_TYPE_F16, GGML_TYPE_F16},
    /* with q only */
    {3, 512, 512, S1, GGML_TYPE_Q8_0, GGML_TYPE_Q8_0},
    {2, 512, 64, S2, GGML_TYPE_Q4_0, GGML_TYPE_F16},
};

int main(int argc, char **argv)
{
    if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "q")))
        die("usage: multiseq MODEL REL_NAME [q]");
    const size_t n_sched = argc == 4 ? 5 : 3;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m)
        die("cannot load the model");
    const int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
    printf("model %s\n", argv[2]);
    for (size_t si = 0; si < n_sched; si++) {
        const struct sched *sc = &scheds[si];
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = (uint32_t)(sc->n_ctx_seq * sc->n_seq);
        cp.n_batch = 1024;
        cp.n_ubatch = (uint32_t)sc->n_ubatch;
        cp.n_seq_max = (uint32_t)sc->n_seq;
        cp.kv_unified = false;
        cp.n_threads = cp.n_threads_batch = 2;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
        cp.no_perf = true;
        cp.type_k = sc->tk;
        cp.type_v = sc->tv;
        struct llama_context *c = llama_init_from_model(m, cp);
        if (!c)
            die("cannot make a context");
        if (llama_n_ctx_seq(c) != (uint32_t)sc->n_ctx_seq)
            die("n_ctx_seq is not what was asked");
        printf("context %d %d %d %d %s %s\n", sc->n_seq, sc->n_ctx_seq, sc->n_ubatch, 2, ggml_type_name(sc->tk),
               ggml_type_name(sc->tv));
        int pos[8] = {0};
        struct llama_batch b = llama_batch_init(1024, 0, 1);
        b.n_tokens = 0;
        for (const char *s = sc->plan;; s++) {
            if (*s == ' ')
                continue;
            if (*s == '|' || *s == '\0') {
                if (b.n_tokens > 0) {
                    printf("batch %d\n", b.n_tokens);
                    for (int i = 0; i < b.n_tokens; i++)
                        printf("t %d %d %d %d\n", b.token[i], b.pos[i], b.seq_id[i][0], b.logits[i]);
                    if (llama_decode(c, b))
                        die("decode failed");
                    for (int i = 0; i < b.n_tokens; i++)
                        if (b.logits[i])
                            emit(i, llama_get_logits_ith(c, i), nv);
                    b.n_tokens = 0;
                }
                if (*s == '\0')
                    break;
                continue;
            }
            if (s[0] == 'r' && s[1] == 'm') {
                const int q = s[2] - '0';
                if (!llama_memory_seq_rm(llama_get_memory(c), q, -1, -1))
                    die("seq_rm failed");
                pos[q] = 0;
                printf("rm %d\n", q);
                s += 2;
                continue;
            }
            char *e;
            const int q = (int)strtol(s, &e, 10);
            if (*e != ':')
                die("bad plan");
            const int n = (int)strtol(e + 1, &e, 10);
            const int all = *e == '*';
            for (int i = 0; i < n; i++) {
                const int k = b.n_tokens++;
                b.token[k] = next_token(nv);
                b.pos[k] = pos[q]++;
                b.n_seq_id[k] = 1;
                b.seq_id[k][0] = q;
                b.logits[k] = (int8_t)(all || i == n - 1);
            }
            s = e - (all ? 0 : 1);
        }
        llama_batch_free(b);
        llama_free(c);
    }
    llama_model_free(m);
    return 0;
}
