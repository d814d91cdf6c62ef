/* Snapshots of the engine's memory on disk (engine/memory/kv_snapshot.h):
 * a conversation restored from one continues with the logits of one never
 * interrupted, bit for bit, on a transformer (stories260K, tiny-spm with an
 * F16 and a Q8_0 cache) and on a Gated DeltaNet model (qwen35-mini), without
 * evaluating the restored tokens again; a snapshot made with another model
 * or settings is not used and says why; a truncated or altered one is
 * refused and leaves the memory as it was; a full disk or the size cap
 * leaves the snapshot that was there whole. Then the same through the
 * engine's commands (SAVE_KV, LOAD_KV and their events). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "memory/kv_snapshot.h"
#include "memory/memory.h"
#include "model/forward.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "engine_events.h"
#include "testutil.h"

#define STORIES "models/stories260K.gguf"
#define TINY "models/tiny-spm-q8_0.gguf"
#define QWEN35 "families2026/models/qwen35-mini-q8_0.gguf"

static char g_dir[256];

static void path_in(char *buf, size_t cap, const char *name)
{
    if (snprintf(buf, cap, "%s/%s", g_dir, name) >= (int)cap)
        fail_msg("path too long");
}

/* ---- a forward context and memory on a real model ---- */

typedef struct rig {
    model *m;
    forward_ctx *f;
    memory mem;
    kv_stamp st;
    int32_t V;
} rig;

static rig *rig_new(const char *path, int threads, enum tensor_type kv)
{
    char err[512];
    rig *r = calloc(1, sizeof *r);
    r->m = model_load(path, err, sizeof err);
    if (!r->m)
        fail_msg("%s", err);
    r->V = model_get_hparams(r->m)->n_vocab;
    forward_params fp = forward_default_params();
    fp.n_ctx = 512;
    fp.n_threads = threads;
    fp.kv_type = fp.v_type = kv;
    r->f = forward_build(r->m, &fp, err, sizeof err);
    if (!r->f)
        fail_msg("%s", err);
    memory_params mp = {.ckpt_every = 8}; /* several checkpoints in a short reply */
    assert_true(memory_init(&r->mem, r->f, 512, r->V, false, &mp, err, sizeof err));
    kv_stamp_make(&r->st, r->m, r->f, &r->mem);
    return r;
}

static void rig_free(rig *r)
{
    memory_release(&r->mem);
    forward_free(r->f);
    model_free(r->m);
    free(r);
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

static int32_t encode(rig *r, const char *text, bool bos, int32_t *out, int32_t cap)
{
    const tokenizer *t = model_get_tokenizer(r->m);
    int32_t n = tokenizer_encode(t, text, strlen(text), bos && tokenizer_bos(t) >= 0, true, out, cap);
    assert_true(n > 0 && n < cap);
    return n;
}

/* Turn 1: the prompt as one batch, n_gen greedy tokens one at a time (as
 * the engine evaluates a reply). seq gets prompt + reply; returns its length. */
static int32_t turn1(rig *r, const char *text, int n_gen, int32_t *seq)
{
    char err[256];
    int32_t ev = 0;
    const int32_t np = encode(r, text, true, seq, 256);
    assert_int_equal(memory_ensure(&r->mem, seq, np, np, &ev, err, sizeof err), 0);
    int32_t n = np;
    for (int i = 0; i < n_gen; i++) {
        seq[n] = argmax(r->mem.logits, r->V);
        assert_int_equal(memory_push(&r->mem, seq[n], err, sizeof err), 0);
        n++;
    }
    return n;
}

/* Turn 2 on seq[0, n): the cache keeps what it can, the rest is one batch;
 * then n_gen greedy tokens. rows gets the n_gen + 1 distributions; returns
 * the tokens evaluated for the prompt. */
static int32_t turn2(rig *r, int32_t *seq, int32_t n, int n_gen, float *rows)
{
    char err[256];
    int32_t ev = 0;
    assert_int_equal(memory_ensure(&r->mem, seq, n, n, &ev, err, sizeof err), 0);
    for (int i = 0; i <= n_gen; i++) {
        memcpy(rows + (size_t)i * r->V, r->mem.logits, (size_t)r->V * sizeof(float));
        if (i == n_gen)
            break;
        const int32_t t = argmax(r->mem.logits, r->V);
        assert_int_equal(memory_push(&r->mem, t, err, sizeof err), 0);
    }
    return ev;
}

/* The exactness check on one model: turn 1, a snapshot, turn 2 (the
 * conversation plus a new message, or cut back to `diverge` tokens of turn
 * 1 first, as a template that drops an old reply's reasoning renders it)
 * in the same memory and in a new process's memory restored from the
 * snapshot: the same bits, and the restored tokens not evaluated again. */
static void check_exact(const char *rel, enum tensor_type kv, int diverge_back)
{
    const char *path = TESTDATA_REQUIRE(rel);
    char snap[300];
    path_in(snap, sizeof snap, "exact.kv");
    int32_t seq[512];
    rig *a = rig_new(path, 2, kv);
    const int32_t n1 = turn1(a, "Once upon a time, there was a little dog", 24, seq);
    char err[256];
    uint64_t bytes = 0;
    assert_int_equal(kv_snapshot_save(&a->mem, &a->st, snap, 0, &bytes, err, sizeof err), 0);
    assert_int_equal(bytes, kv_snapshot_bytes(&a->mem));
    struct stat sb;
    assert_int_equal(stat(snap, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, bytes);

    /* turn 2: the conversation (cut back diverge_back tokens) and a new message */
    int32_t n2 = n1 - diverge_back;
    n2 += encode(a, " The dog ran to the park and", false, seq + n2, 64);
    const int G = 12;
    float *ra = malloc((size_t)(G + 1) * a->V * sizeof(float)),
          *rb = malloc((size_t)(G + 1) * a->V * sizeof(float));
    const int32_t ev_a = turn2(a, seq, n2, G, ra);

    rig *b = rig_new(path, 2, kv);
    int32_t nt = 0;
    char why[256];
    assert_int_equal(kv_snapshot_load(&b->mem, &b->st, snap, &nt, why, sizeof why), 0);
    assert_int_equal(nt, n1);
    assert_int_equal(b->mem.n_past, n1); /* the restored position counter */
    const int32_t ev_b = turn2(b, seq, n2, G, rb);
    assert_int_equal(ev_b, ev_a); /* what an uninterrupted turn 2 evaluated, nothing more */
    assert_true(ev_b <= n2 - n1 + diverge_back);
    assert_int_equal(b->mem.n_replayed, a->mem.n_replayed); /* a recurrent state brought forward alike */
    assert_memory_equal(ra, rb, (size_t)(G + 1) * a->V * sizeof(float));

    /* without it, turn 2 evaluates everything: the same bits, more work */
    rig *c = rig_new(path, 2, kv);
    float *rc = malloc((size_t)(G + 1) * c->V * sizeof(float));
    const int32_t ev_c = turn2(c, seq, n2, G, rc);
    assert_int_equal(ev_c, n2);
    (void)rc;
    free(rc);
    rig_free(c);
    free(ra);
    free(rb);
    rig_free(a);
    rig_free(b);
    unlink(snap);
}

static void test_exact_stories(void **s)
{
    (void)s;
    check_exact(STORIES, TENSOR_TYPE_F16, 0);
}

static void test_exact_tiny_q8_0(void **s)
{
    (void)s;
    check_exact(TINY, TENSOR_TYPE_Q8_0, 0);
    check_exact("models/tiny-spm-f16.gguf", TENSOR_TYPE_F16, 5); /* turn 2 diverges inside turn 1's reply */
}

static void test_exact_qwen35(void **s)
{
    (void)s;
    check_exact(QWEN35, TENSOR_TYPE_F16, 0);
    check_exact(QWEN35, TENSOR_TYPE_F16, 20); /* back to a checkpoint, brought forward */
    check_exact(QWEN35, TENSOR_TYPE_Q8_0, 3);
}

/* ---- another model or settings: not used, said why ---- */

static void test_stamp_mismatch(void **s)
{
    (void)s;
    const char *path = TESTDATA_REQUIRE(TINY);
    char snap[300], why[256], err[256];
    path_in(snap, sizeof snap, "stamp.kv");
    int32_t seq[512], nt;
    rig *a = rig_new(path, 2, TENSOR_TYPE_F16);
    turn1(a, "Hello there", 4, seq);
    assert_int_equal(kv_snapshot_save(&a->mem, &a->st, snap, 0, NULL, err, sizeof err), 0);

    rig *b = rig_new(path, 1, TENSOR_TYPE_F16);
    assert_int_equal(kv_snapshot_load(&b->mem, &b->st, snap, &nt, why, sizeof why), 1);
    assert_non_null(strstr(why, "thread count differs (2 then, 1 now)"));
    assert_int_equal(b->mem.n_past, 0);
    rig_free(b);

    b = rig_new(path, 2, TENSOR_TYPE_Q8_0);
    assert_int_equal(kv_snapshot_load(&b->mem, &b->st, snap, &nt, why, sizeof why), 1);
    assert_non_null(strstr(why, "KV cache type differs"));
    rig_free(b);

    b = rig_new(TESTDATA_REQUIRE("models/tiny-spm-q4_0.gguf"), 2,
                TENSOR_TYPE_F16); /* same shape, other weights */
    assert_int_equal(kv_snapshot_load(&b->mem, &b->st, snap, &nt, why, sizeof why), 1);
    assert_non_null(strstr(why, "another model file"));
    rig_free(b);

    /* the same model and settings: used */
    b = rig_new(path, 2, TENSOR_TYPE_F16);
    assert_int_equal(kv_snapshot_load(&b->mem, &b->st, snap, &nt, why, sizeof why), 0);
    assert_int_equal(nt, a->mem.n_past);
    assert_memory_equal(b->mem.tokens, a->mem.tokens, (size_t)nt * sizeof(int32_t));
    rig_free(b);

    /* a stamp that differs in the model's bytes alone */
    kv_stamp st = a->st;
    st.model_hash[7] ^= 1;
    assert_int_equal(kv_snapshot_load(&a->mem, &st, snap, &nt, why, sizeof why), 1);
    assert_non_null(strstr(why, "header or weights differ"));
    path_in(snap, sizeof snap, "absent.kv");
    assert_int_equal(kv_snapshot_load(&a->mem, &a->st, snap, &nt, why, sizeof why), 1);
    assert_non_null(strstr(why, "No such file"));
    rig_free(a);
}

/* ---- damaged files: refused, the memory as it was ---- */

static unsigned char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void spit(const char *p, const unsigned char *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void check_refused(rig *b, const char *bad, const int32_t *held, int32_t n_held, const float *logits,
                          const char *want)
{
    int32_t nt = -1;
    char why[256];
    assert_int_equal(kv_snapshot_load(&b->mem, &b->st, bad, &nt, why, sizeof why), 1);
    if (want && !strstr(why, want))
        fail_msg("refused for '%s', expected '%s'", why, want);
    assert_int_equal(nt, 0);
    assert_int_equal(b->mem.n_past, n_held);
    assert_memory_equal(b->mem.tokens, held, (size_t)n_held * sizeof(int32_t));
    assert_memory_equal(b->mem.logits, logits, (size_t)b->V * sizeof(float));
}

static void fuzz_on(const char *rel)
{
    const char *path = TESTDATA_REQUIRE(rel);
    char snap[300], bad[300], err[256];
    path_in(snap, sizeof snap, "good.kv");
    path_in(bad, sizeof bad, "bad.kv");
    int32_t seq[512], seq_b[512];
    rig *a = rig_new(path, 2, TENSOR_TYPE_F16);
    turn1(a, "Once upon a time", 20, seq);
    assert_int_equal(kv_snapshot_save(&a->mem, &a->st, snap, 0, NULL, err, sizeof err), 0);
    size_t n;
    unsigned char *good = slurp(snap, &n);
    /* b holds a conversation of its own, which a refused file must leave alone */
    rig *b = rig_new(path, 2, TENSOR_TYPE_F16);
    const int32_t nb = turn1(b, "The little dog", 6, seq_b);
    float *lg = malloc((size_t)b->V * sizeof(float));
    memcpy(lg, b->mem.logits, (size_t)b->V * sizeof(float));
    /* truncated: empty, inside the header, at every 1/37th, one byte short */
    const size_t cuts[] = {0, 1, 8, 100, 255, 256, 257, n / 2, n - 33, n - 32, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        spit(bad, good, cuts[i]);
        check_refused(b, bad, seq_b, nb, lg, NULL);
    }
    for (size_t k = 1; k < 37; k++) {
        spit(bad, good, n * k / 37);
        check_refused(b, bad, seq_b, nb, lg, n * k / 37 > 256 ? "truncated" : NULL);
    }
    /* one more byte */
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, good, n);
    longer[n] = 0;
    spit(bad, longer, n + 1);
    check_refused(b, bad, seq_b, nb, lg, "longer than it says");
    free(longer);
    /* a flipped bit anywhere: the header's magic and counts, the stamp, the
     * tokens, the logits, the cache, the checksum itself */
    uint64_t rng = 0x5eed;
    size_t spots[200];
    const size_t fixed[] = {0, 9, 12, 60, 150, 200, 230, 256, 260, n - 40, n - 33, n - 32, n - 1};
    size_t ns = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        spots[ns++] = fixed[i];
    while (ns < 200)
        spots[ns++] = (size_t)(test_xorshift64(&rng) % n);
    for (size_t i = 0; i < ns; i++) {
        good[spots[i]] ^= (unsigned char)(1u << (i % 8));
        spit(bad, good, n);
        good[spots[i]] ^= (unsigned char)(1u << (i % 8));
        check_refused(b, bad, seq_b, nb, lg, spots[i] >= 256 ? "checksum" : NULL);
    }
    /* and the good one loads over it */
    spit(bad, good, n);
    int32_t nt;
    char why[256];
    assert_int_equal(kv_snapshot_load(&b->mem, &b->st, bad, &nt, why, sizeof why), 0);
    assert_int_equal(nt, a->mem.n_past);
    assert_memory_equal(b->mem.logits, a->mem.logits, (size_t)b->V * sizeof(float));
    free(lg);
    free(good);
    rig_free(a);
    rig_free(b);
    unlink(snap);
    unlink(bad);
}

static void test_damaged(void **s)
{
    (void)s;
    fuzz_on(STORIES);
    fuzz_on(QWEN35);
}

/* ---- the cap, a full disk, a directory that is not there ---- */

static bool no_tmp_left(void)
{
    DIR *d = opendir(g_dir);
    struct dirent *de;
    bool none = true;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, ".tmp"))
            none = false;
    if (d)
        closedir(d);
    return none;
}

static void test_write_failures(void **s)
{
    (void)s;
    const char *path = TESTDATA_REQUIRE(STORIES);
    char snap[300], err[256], why[256];
    path_in(snap, sizeof snap, "keep.kv");
    int32_t seq[512], nt;
    rig *a = rig_new(path, 2, TENSOR_TYPE_F16);
    turn1(a, "Once upon a time", 8, seq);
    uint64_t first = 0;
    assert_int_equal(kv_snapshot_save(&a->mem, &a->st, snap, 0, &first, err, sizeof err), 0);
    size_t n0;
    unsigned char *before = slurp(snap, &n0);
    char seq2[512];
    (void)seq2;
    memory_push(&a->mem, 5, err, sizeof err); /* the memory moves on: a new snapshot would differ */

    /* over the cap: refused, said so, the old one whole */
    assert_int_equal(kv_snapshot_save(&a->mem, &a->st, snap, first / 2, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "over the cap"));
    /* a full disk (a file size limit: the writes fail part way) */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = first / 2;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = kv_snapshot_save(&a->mem, &a->st, snap, 0, NULL, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "File too large"));
    size_t n1;
    unsigned char *after = slurp(snap, &n1);
    assert_int_equal(n1, n0);
    assert_memory_equal(after, before, n0);
    assert_true(no_tmp_left());
    /* no such directory */
    path_in(why, sizeof why, "missing/dir/x.kv");
    assert_int_equal(kv_snapshot_save(&a->mem, &a->st, why, 0, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "No such file"));
    /* the old one still restores */
    rig *b = rig_new(path, 2, TENSOR_TYPE_F16);
    assert_int_equal(kv_snapshot_load(&b->mem, &b->st, snap, &nt, why, sizeof why), 0);
    assert_int_equal(nt, a->mem.n_past - 1);
    rig_free(b);
    /* an empty memory or no cache at all */
    free(before);
    free(after);
    rig_free(a);
    unlink(snap);
}

static void test_paths(void **s)
{
    (void)s;
    char out[64];
    assert_true(kv_snapshot_path("/a/b/20260101-000000-12.json", out, sizeof out));
    assert_string_equal(out, "/a/b/20260101-000000-12.kv");
    assert_true(kv_snapshot_path("chat.txt", out, sizeof out));
    assert_string_equal(out, "chat.txt.kv");
    assert_false(kv_snapshot_path("/a/very/long/path/that/does/not/fit/in/sixty-four/bytes.json", out, 16));
}

/* ---- through the engine ---- */

static void wait_kv(engine *e, engine_event *ev)
{
    for (;;) {
        next_event(e, ev);
        if (ev->type == ENGINE_EV_KV)
            return;
        if (ev->type == ENGINE_EV_ERROR)
            fail_msg("engine error: %s", ev->message);
    }
}

typedef struct tlog {
    int n;
    int32_t tok[256];
    engine_event ev[64]; /* the first tokens' events: candidates and logits */
    engine_event done;
    bool kv_used;
    engine_event kv;
} tlog;

static void collect(engine *e, tlog *t)
{
    memset(t, 0, sizeof *t);
    engine_event ev;
    for (;;) {
        next_event(e, &ev);
        if (ev.type == ENGINE_EV_TOKEN) {
            if (t->n < 64)
                t->ev[t->n] = ev;
            t->tok[t->n++] = ev.token;
        } else if (ev.type == ENGINE_EV_KV) {
            t->kv_used = true;
            t->kv = ev;
        } else if (ev.type == ENGINE_EV_DONE) {
            t->done = ev;
            return;
        }
    }
}

static engine *start(const char *path, int threads)
{
    engine_params p = engine_default_params();
    p.template_name = "raw"; /* the history renders as it was generated: the whole reply is reused (Qwen3.5's
                                own template drops an old reply's reasoning, inside the first prompt) */
    p.model_path = path;
    p.n_ctx = 512;
    p.n_threads = threads;
    p.sampling.temp = 0.0f;
    p.sampling.n_predict = 16;
    char err[256];
    engine *e = engine_start(&p, err, sizeof err);
    if (!e)
        fail_msg("%s", err);
    engine_event ev;
    do
        next_event(e, &ev);
    while (ev.type != ENGINE_EV_LOADED);
    return e;
}

static void check_engine(const char *rel)
{
    const char *path = TESTDATA_REQUIRE(rel);
    char snap[300];
    path_in(snap, sizeof snap, "engine.kv");
    engine *a = start(path, 2);
    tlog *t1 = malloc(sizeof *t1), *t2a = malloc(sizeof *t2a), *t2b = malloc(sizeof *t2b);
    engine_event ev;
    engine_save_kv(a, snap); /* nothing evaluated yet: nothing to keep, no file, not a failure */
    wait_kv(a, &ev);
    assert_int_equal(ev.kv, ENGINE_KV_SAVE_SKIPPED);
    assert_int_not_equal(access(snap, F_OK), 0);
    chat_message msgs[3] = {
        {"user", "Tell me a story about a dog.", 0}, {"assistant", "", 0}, {"user", "And then?", 0}};
    engine_submit(a, 1, msgs, 1);
    collect(a, t1);
    /* the reply as the UI keeps it: its text */
    char reply[4096] = "";
    size_t rl = 0;
    for (int i = 0; i < t1->n && i < 64; i++) {
        size_t l = (size_t)t1->ev[i].text_len;
        memcpy(reply + rl, t1->ev[i].text, l);
        rl += l;
    }
    memcpy(reply + rl, t1->done.text, (size_t)t1->done.text_len);
    rl += (size_t)t1->done.text_len;
    reply[rl] = 0;
    msgs[1].content = reply;
    engine_save_kv(a, snap);
    wait_kv(a, &ev);
    if (ev.kv != ENGINE_KV_SAVED)
        fail_msg("%s", ev.message);
    assert_true(ev.done > 0 && ev.bytes > 0);
    engine_submit(a, 1, msgs, 3);
    collect(a, t2a);
    assert_false(t2a->kv_used);

    engine *b = start(path, 2);
    engine_load_kv(b, snap);
    wait_kv(b, &ev);
    if (ev.kv != ENGINE_KV_RESTORED)
        fail_msg("%s", ev.message);
    assert_true(ev.n_past > 0);
    const int32_t restored = ev.done;
    engine_submit(b, 1, msgs, 3);
    collect(b, t2b);
    assert_true(t2b->kv_used);
    assert_int_equal(t2b->kv.kv, ENGINE_KV_USED);
    assert_int_equal(t2b->kv.total, restored);
    assert_int_equal(t2b->done.n_prompt, t2a->done.n_prompt); /* only what an uninterrupted turn evaluated */
    assert_int_equal(t2b->n, t2a->n);
    assert_memory_equal(t2b->tok, t2a->tok, (size_t)t2a->n * sizeof(int32_t));
    for (int i = 0; i < t2a->n && i < 64; i++) {
        assert_memory_equal(&t2b->ev[i].logit, &t2a->ev[i].logit, sizeof(float));
        for (int k = 0; k < t2a->ev[i].n_top; k++)
            assert_memory_equal(&t2b->ev[i].top[k].logit, &t2a->ev[i].top[k].logit, sizeof(float));
    }
    engine_shutdown(b);

    /* other settings: not used, and why; the turn is evaluated from the start */
    engine *c = start(path, 1);
    engine_load_kv(c, snap);
    wait_kv(c, &ev);
    assert_int_equal(ev.kv, ENGINE_KV_NOT_USED);
    assert_non_null(strstr(ev.message, "thread count differs"));
    engine_submit(c, 1, msgs, 3);
    collect(c, t2b);
    assert_false(t2b->kv_used);
    assert_true(t2b->done.n_prompt > t2a->done.n_prompt);
    engine_shutdown(c);
    engine_shutdown(a);
    free(t1);
    free(t2a);
    free(t2b);
    unlink(snap);
}

static void test_engine_stories(void **s)
{
    (void)s;
    check_engine(STORIES);
}

static void test_engine_qwen35(void **s)
{
    (void)s;
    check_engine(QWEN35);
}

static int setup(void **s)
{
    (void)s;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/kvsnap.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    DIR *d = opendir(g_dir);
    struct dirent *de;
    char p[600];
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.' || strstr(de->d_name, ".tmp")) {
            snprintf(p, sizeof p, "%s/%s", g_dir, de->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    rmdir(g_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),           cmocka_unit_test(test_exact_stories),
        cmocka_unit_test(test_exact_tiny_q8_0), cmocka_unit_test(test_exact_qwen35),
        cmocka_unit_test(test_stamp_mismatch),  cmocka_unit_test(test_damaged),
        cmocka_unit_test(test_write_failures),  cmocka_unit_test(test_engine_stories),
        cmocka_unit_test(test_engine_qwen35),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
