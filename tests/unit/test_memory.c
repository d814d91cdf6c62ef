/* The engine's memory (engine/memory/) on a fake forward context, so that
 * its rules can be checked without a model: a recurrent state and a KV
 * cache whose values depend on how each position was evaluated (alone, or
 * where in a batch call), as batched and one-token evaluations of a real
 * recurrent layer round differently. Going back to any position (a branch,
 * undo, the lens, an edit) must give what a fresh run to that position
 * gives, bit for bit: each prompt evaluated as one call from its own start,
 * each reply token alone. A real Qwen3.5 is checked in test_explore. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

/* the memory, built against the fake below (its forward_* renamed before
 * model/forward.h declares them) */
#define forward_eval fake_eval
#define forward_eval_lens fake_eval_lens
#define forward_set_progress fake_set_progress
#define forward_is_recurrent fake_is_recurrent
#define forward_rs_bytes fake_rs_bytes
#define forward_rs_pos fake_rs_pos
#define forward_rs_save fake_rs_save
#define forward_rs_load fake_rs_load
#define forward_rs_reset fake_rs_reset
#include "../../engine/memory/memory.c"
#include "../../engine/memory/memory_ckpt.c"

#define V 8
#define CTX 256
#define FAKE_BATCH 4 /* internal batches, as forward_eval splits a call */

struct forward_ctx {
    bool recurrent;
    float state; /* the recurrent state after [0, pos) */
    int32_t pos;
    float kv[CTX]; /* one "key" per position */
    forward_progress_fn progress;
    void *progress_user;
    int n_calls, n_tokens, n_lens;
    int cancel_after; /* > 0: the progress callback's answer is ignored, the call fails after that many
                         batches */
};

void fake_set_progress(forward_ctx *f, forward_progress_fn fn, void *user)
{
    f->progress = fn;
    f->progress_user = user;
}

bool fake_is_recurrent(const forward_ctx *f)
{
    return f->recurrent;
}
size_t fake_rs_bytes(const forward_ctx *f)
{
    return f->recurrent ? sizeof(float) : 0;
}
int32_t fake_rs_pos(const forward_ctx *f)
{
    return f->recurrent ? f->pos : 0;
}
void fake_rs_save(const forward_ctx *f, void *dst)
{
    memcpy(dst, &f->state, sizeof f->state);
}
void fake_rs_load(forward_ctx *f, const void *src, int32_t pos)
{
    memcpy(&f->state, src, sizeof f->state);
    f->pos = pos;
}
void fake_rs_reset(forward_ctx *f)
{
    f->state = 0.0f;
    f->pos = 0;
}

/* One token at position p, offset `off` into its call of n tokens: where
 * it sits and how long the call is change the numbers, as a batch's
 * chunking and size change a real layer's rounding. */
static void fake_token(forward_ctx *f, int32_t tok, int32_t p, int32_t off, int32_t n, float *logits)
{
    f->state = f->state * 0.75f + (float)tok * 0.5f + 1.0f + (float)off * 0.001f + (float)n * 0.0001f;
    f->kv[p] = f->state * 0.125f + (float)tok;
    f->pos = p + 1;
    if (logits) {
        float att = 0.0f;
        for (int32_t j = 0; j <= p; j++)
            att += f->kv[j] * 0.01f;
        for (int32_t i = 0; i < V; i++)
            logits[i] = f->state * (float)(i + 1) * 0.1f + att - (float)i;
    }
}

int fake_eval(forward_ctx *f, const int32_t *tokens, int32_t n, int32_t start, float *logits, bool all,
              char *err, size_t errlen)
{
    assert_false(all);
    if (start == 0)
        fake_rs_reset(f);
    if (f->recurrent && start != f->pos) {
        snprintf(err, errlen, "recurrent state at %d, asked to start at %d", f->pos, start);
        return -1;
    }
    f->n_calls++;
    for (int32_t done = 0; done < n;) {
        const int32_t cnt = n - done < FAKE_BATCH ? n - done : FAKE_BATCH;
        for (int32_t i = 0; i < cnt; i++)
            fake_token(f, tokens[done + i], start + done + i, done + i, n, done + i == n - 1 ? logits : NULL);
        done += cnt;
        f->n_tokens += cnt;
        if (!f->recurrent)
            f->pos = start + done;
        bool go = f->progress ? f->progress(f->progress_user, done, n) : true;
        if (f->cancel_after > 0)
            go = --f->cancel_after > 0;
        if (!go) {
            snprintf(err, errlen, "cancelled");
            return -1;
        }
    }
    return 0;
}

/* One position alone; "block 1" sees the state only, "block 2" is the model. */
int fake_eval_lens(forward_ctx *f, const int32_t *tokens, int32_t n, int32_t start, float *logits,
                   bool keep_cache, forward_lens_fn fn, void *user, char *err, size_t errlen)
{
    assert_int_equal(n, 1);
    if (f->recurrent && start != f->pos) {
        snprintf(err, errlen, "lens: recurrent state at %d, asked for %d", f->pos, start);
        return -1;
    }
    f->n_lens++;
    const float kv = f->kv[start], st = f->state;
    const int32_t pos = f->pos;
    fake_token(f, tokens[0], start, 0, 1, logits);
    float l1[V];
    for (int32_t i = 0; i < V; i++)
        l1[i] = f->state * (float)i;
    fn(user, 1, 0, 1, l1);
    fn(user, 2, 0, 1, logits);
    if (keep_cache) {
        f->kv[start] = kv;
        f->state = st;
        f->pos = pos;
    }
    return 0;
}

/* ---- helpers ---- */

static forward_ctx *fake_new(bool recurrent)
{
    forward_ctx *f = calloc(1, sizeof *f);
    f->recurrent = recurrent;
    return f;
}

static memory *mem_new(forward_ctx *f, int32_t every, int32_t max)
{
    memory *m = calloc(1, sizeof *m);
    char err[128];
    memory_params p = {.ckpt_every = every, .ckpt_max = max};
    assert_true(memory_init(m, f, CTX, V, false, &p, err, sizeof err));
    return m;
}

static void mem_free(memory *m)
{
    memory_release(m);
    free(m);
}

#define NP 10
#define NR 40
static const int32_t prompt[NP] = {1, 5, 2, 7, 3, 3, 6, 0, 4, 2};
static int32_t reply[NR];

static void make_reply(void)
{
    for (int i = 0; i < NR; i++)
        reply[i] = (i * 5 + 3) % V;
}

/* The logits at position np + k of a fresh run: the prompt as one call, the
 * first k reply tokens alone. */
static void fresh_at(const int32_t *pr, int32_t np, const int32_t *rep, int32_t k, float *out)
{
    forward_ctx *f = fake_new(true);
    char err[128];
    float lg[V];
    assert_int_equal(fake_eval(f, pr, np, 0, lg, false, err, sizeof err), 0);
    for (int32_t i = 0; i < k; i++)
        assert_int_equal(fake_eval(f, rep + i, 1, np + i, lg, false, err, sizeof err), 0);
    memcpy(out, lg, sizeof lg);
    free(f);
}

/* A memory that ran prompt + the whole reply as a turn does. */
static memory *run_turn(forward_ctx *f, int32_t every, int32_t max)
{
    memory *m = mem_new(f, every, max);
    char err[128];
    int32_t ev;
    assert_int_equal(memory_ensure(m, prompt, NP, NP, &ev, err, sizeof err), 0);
    assert_int_equal(ev, NP);
    for (int i = 0; i < NR; i++)
        assert_int_equal(memory_push(m, reply[i], err, sizeof err), 0);
    return m;
}

/* ---- tests ---- */

/* Going back to every position of the reply, in an order that jumps back
 * and forth: the logits of a fresh run there, and continuing from there
 * gives the fresh run's next ones; at most ckpt_every tokens evaluated
 * again to restore the state. */
static void test_rollback_is_fresh(void **s)
{
    (void)s;
    make_reply();
    forward_ctx *f = fake_new(true);
    memory *m = run_turn(f, 4, 64);
    char err[128];
    assert_true(m->n_ckpt >= NR / 4);
    assert_non_null(memory_ckpt_find(m, NP));
    assert_int_equal(memory_ckpt_find(m, NP)->pos, NP); /* the end of the prompt */
    assert_int_equal(memory_ckpt_find(m, NP + 7)->pos, NP + 4);
    const int order[] = {37, 12, 0, 39, 1, 25, 4, 5, 3, 20, 8, 33, 16, 2, 40};
    for (size_t t = 0; t < sizeof order / sizeof order[0]; t++) {
        const int k = order[t];
        float want[V], want1[V];
        fresh_at(prompt, NP, reply, k, want);
        /* bring the cache back to the whole reply first, as a branch would after running on */
        int32_t ev;
        int32_t seq[NP + NR];
        memcpy(seq, prompt, sizeof prompt);
        memcpy(seq + NP, reply, sizeof reply);
        assert_int_equal(memory_ensure(m, seq, NP, NP + NR, &ev, err, sizeof err), 0);
        const int32_t before = m->n_replayed;
        int32_t again = 0;
        if (k == NR) {
            assert_int_equal(m->n_past, NP + NR);
        } else {
            assert_int_equal(memory_rollback(m, NP + k, &again, err, sizeof err), 0);
        }
        if (k % 4 == 0) /* a checkpoint's position: its logits, nothing evaluated */
            assert_int_equal(again + m->n_replayed - before, 0);
        assert_true(m->n_replayed - before <= 4);
        assert_memory_equal(m->logits, want, sizeof want);
        if (k < NR) {
            fresh_at(prompt, NP, reply, k + 1, want1);
            assert_int_equal(memory_push(m, reply[k], err, sizeof err), 0);
            assert_memory_equal(m->logits, want1, sizeof want1);
        }
    }
    mem_free(m);
    free(f);
}

/* A branch as the engine makes it: memory_ensure to the prompt and the
 * forced tokens but the last, memory_rollback for the distribution. */
static void test_branch_is_fresh(void **s)
{
    (void)s;
    make_reply();
    forward_ctx *f = fake_new(true);
    memory *m = run_turn(f, 8, 64);
    char err[128];
    for (int k = 30; k >= 1; k -= 7) {
        int32_t seq[NP + NR], ev, again;
        memcpy(seq, prompt, sizeof prompt);
        memcpy(seq + NP, reply, sizeof reply);
        seq[NP + k] = (reply[k] + 1) % V; /* the alternative at step k, then it runs on */
        assert_int_equal(memory_ensure(m, seq, NP, NP + k, &ev, err, sizeof err), 0);
        assert_int_equal(memory_rollback(m, NP + k, &again, err, sizeof err), 0);
        float want[V];
        fresh_at(prompt, NP, reply, k, want);
        assert_memory_equal(m->logits, want, sizeof want);
        int32_t alt[NR];
        memcpy(alt, reply, sizeof alt);
        alt[k] = seq[NP + k];
        assert_int_equal(memory_push(m, alt[k], err, sizeof err), 0);
        fresh_at(prompt, NP, alt, k + 1, want);
        assert_memory_equal(m->logits, want, sizeof want);
    }
    mem_free(m);
    free(f);
}

/* Undo all the way back to the reply's start, one position at a time. */
static void test_undo_chain(void **s)
{
    (void)s;
    make_reply();
    forward_ctx *f = fake_new(true);
    memory *m = run_turn(f, 4, 64);
    char err[128];
    for (int k = NR - 1; k >= 0; k--) {
        assert_int_equal(memory_rollback(m, NP + k, NULL, err, sizeof err), 0);
        float want[V];
        fresh_at(prompt, NP, reply, k, want);
        assert_memory_equal(m->logits, want, sizeof want);
    }
    mem_free(m);
    free(f);
}

/* A second turn: its prompt one call from where it starts (after the first
 * reply), a reply; a branch in the second reply gives what a fresh memory
 * given the same two turns gives. */
static void test_second_turn(void **s)
{
    (void)s;
    make_reply();
    char err[128];
    int32_t seq[NP + NR + 6 + NR], ev;
    memcpy(seq, prompt, sizeof prompt);
    memcpy(seq + NP, reply, 20 * sizeof *reply);
    const int32_t p2[6] = {7, 7, 1, 0, 2, 5};
    memcpy(seq + NP + 20, p2, sizeof p2);
    const int32_t np2 = NP + 20 + 6;
    for (int i = 0; i < 20; i++)
        seq[np2 + i] = reply[(i + 11) % NR];
    float want[V], got[V];
    for (int pass = 0; pass < 2;
         pass++) { /* pass 0: a fresh memory's logits at np2 + 13; pass 1: after a branch */
        forward_ctx *f = fake_new(true);
        memory *m = mem_new(f, 4, 64);
        assert_int_equal(memory_ensure(m, seq, NP, NP, &ev, err, sizeof err), 0);
        for (int i = 0; i < 20; i++)
            assert_int_equal(memory_push(m, seq[NP + i], err, sizeof err), 0);
        assert_int_equal(memory_ensure(m, seq, np2, np2, &ev, err, sizeof err), 0);
        assert_int_equal(ev, 6); /* only the new message */
        for (int i = 0; i < (pass ? 20 : 13); i++)
            assert_int_equal(memory_push(m, seq[np2 + i], err, sizeof err), 0);
        if (pass) {
            assert_int_equal(memory_ensure(m, seq, np2, np2 + 13, &ev, err, sizeof err), 0);
            assert_int_equal(memory_rollback(m, np2 + 13, NULL, err, sizeof err), 0);
        }
        memcpy(pass ? got : want, m->logits, sizeof want);
        mem_free(m);
        free(f);
    }
    assert_memory_equal(got, want, sizeof want);
}

/* An edit inside the prompt: evaluated again from the prompt's start as one
 * call (the state inside its batch was never there), like a fresh run. */
static void test_edit_in_prompt(void **s)
{
    (void)s;
    make_reply();
    forward_ctx *f = fake_new(true);
    memory *m = run_turn(f, 4, 64);
    char err[128];
    int32_t seq[NP], ev;
    memcpy(seq, prompt, sizeof prompt);
    seq[6] = (seq[6] + 3) % V;
    assert_int_equal(memory_reuse(m, seq, NP), 0);
    assert_int_equal(memory_ensure(m, seq, NP, NP, &ev, err, sizeof err), 0);
    assert_int_equal(ev, NP);
    float want[V];
    fresh_at(seq, NP, reply, 0, want);
    assert_memory_equal(m->logits, want, sizeof want);
    mem_free(m);
    free(f);
}

typedef struct lens_got {
    float l2[V];
    int n;
} lens_got;

static void lens_cb(void *user, int32_t layer, int32_t row0, int32_t n_rows, const float *logits)
{
    lens_got *g = user;
    (void)row0, (void)n_rows;
    if (layer == 2)
        memcpy(g->l2, logits, sizeof g->l2);
    g->n++;
}

/* The lens of a reply step and of the reply's first step (its position
 * inside the prompt): the logits of a fresh run cut there, and the context
 * is left as it was (what follows is unchanged, bit for bit). */
static void test_lens(void **s)
{
    (void)s;
    make_reply();
    char err[128];
    int32_t seq[NP + NR];
    memcpy(seq, prompt, sizeof prompt);
    memcpy(seq + NP, reply, sizeof reply);
    const int qs[] = {NP + 17, NP - 1, NP + 3, 4};
    for (size_t t = 0; t < sizeof qs / sizeof qs[0]; t++) {
        const int32_t q = qs[t];
        forward_ctx *f = fake_new(true);
        memory *m = run_turn(f, 4, 64);
        float kv[CTX], lg[V], before[V];
        memcpy(kv, f->kv, sizeof kv);
        memcpy(before, m->logits, sizeof before);
        lens_got g = {0};
        float out[V];
        assert_int_equal(memory_lens(m, seq, q + 1, out, lens_cb, &g, err, sizeof err), 0);
        assert_int_equal(g.n, 2);
        /* the reference: a fresh run to q (a prompt cut at q when q lies in it), then token q alone */
        forward_ctx *r = fake_new(true);
        if (q < NP) {
            assert_int_equal(fake_eval(r, seq, q, 0, lg, false, err, sizeof err), 0);
        } else {
            assert_int_equal(fake_eval(r, seq, NP, 0, lg, false, err, sizeof err), 0);
            for (int32_t i = NP; i < q; i++)
                assert_int_equal(fake_eval(r, seq + i, 1, i, lg, false, err, sizeof err), 0);
        }
        assert_int_equal(fake_eval(r, seq + q, 1, q, lg, false, err, sizeof err), 0);
        assert_memory_equal(g.l2, lg, sizeof lg);
        free(r);
        /* the context as it was: its rows, its logits, and what comes next */
        assert_memory_equal(f->kv, kv, sizeof kv);
        assert_memory_equal(m->logits, before, sizeof before);
        assert_int_equal(m->n_past, NP + NR);
        int32_t more[NR + 1];
        memcpy(more, reply, sizeof reply);
        more[NR] = 3;
        assert_int_equal(memory_push(m, 3, err, sizeof err), 0);
        fresh_at(prompt, NP, more, NR + 1, lg);
        assert_memory_equal(m->logits, lg, sizeof lg);
        mem_free(m);
        free(f);
    }
}

/* The caps: never more than ckpt_max checkpoints, bytes counted, spread
 * over the sequence; going back stays exact. */
static void test_caps(void **s)
{
    (void)s;
    make_reply();
    forward_ctx *f = fake_new(true);
    memory *m = run_turn(f, 2, 5);
    char err[128];
    assert_int_equal(m->n_ckpt, 5);
    assert_int_equal(memory_ckpt_bytes(m), 5 * (sizeof(float) + V * sizeof(float)));
    for (int i = 1; i < m->n_ckpt; i++)
        assert_true(m->ckpt[i].pos > m->ckpt[i - 1].pos);
    assert_true(m->ckpt[0].pos < NP + NR / 2); /* not all at the end */
    for (int k = NR - 1; k >= 0; k -= 3) {
        assert_int_equal(memory_rollback(m, NP + k, NULL, err, sizeof err), 0);
        float want[V];
        fresh_at(prompt, NP, reply, k, want);
        assert_memory_equal(m->logits, want, sizeof want);
    }
    assert_true(m->n_ckpt <= 5);
    mem_free(m);
    free(f);
}

/* A context shift never applies to a recurrent state: refused, said why. */
static void test_no_shift(void **s)
{
    (void)s;
    make_reply();
    forward_ctx *f = fake_new(true);
    memory *m = run_turn(f, 4, 64);
    char err[256] = "";
    int32_t d = -1;
    assert_false(memory_can_shift(m));
    assert_int_equal(memory_shift(m, 1, &d, err, sizeof err), -1);
    assert_int_equal(d, 0);
    assert_non_null(strstr(err, "recurrent"));
    assert_int_equal(m->n_past, NP + NR);
    mem_free(m);
    free(f);
}

/* A non-recurrent model: no checkpoints, nothing evaluated again, the
 * rollback one token alone as before; the context shift applies. */
static void test_not_recurrent(void **s)
{
    (void)s;
    make_reply();
    forward_ctx *f = fake_new(false);
    memory *m = run_turn(f, 4, 64);
    char err[128];
    assert_int_equal(m->n_ckpt, 0);
    assert_null(m->call_start);
    assert_int_equal(memory_ckpt_bytes(m), 0);
    const int calls = f->n_calls;
    int32_t again;
    assert_int_equal(memory_rollback(m, NP + 20, &again, err, sizeof err), 0);
    assert_int_equal(again, 1);
    assert_int_equal(f->n_calls, calls + 1);
    assert_int_equal(m->n_replayed, 0);
    assert_true(memory_can_shift(m));
    int32_t d;
    assert_int_equal(memory_shift(m, 1, &d, err, sizeof err), 0);
    assert_true(d > 0);
    mem_free(m);
    free(f);
}

/* A stop in the middle of restoring the state: the evaluation fails, and
 * the next one still gives the fresh run's logits. */
static void test_cancel_replay(void **s)
{
    (void)s;
    make_reply();
    forward_ctx *f = fake_new(true);
    memory *m = run_turn(f, 16, 64);
    char err[128];
    f->cancel_after = 1; /* the next call dies after its first internal batch */
    assert_int_equal(memory_rollback(m, NP + 13, NULL, err, sizeof err), -1);
    assert_int_equal(memory_rollback(m, NP + 9 <= m->n_past ? NP + 9 : 1, NULL, err, sizeof err), 0);
    float want[V];
    fresh_at(prompt, NP, reply, 9, want);
    assert_memory_equal(m->logits, want, sizeof want);
    mem_free(m);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollback_is_fresh),
        cmocka_unit_test(test_branch_is_fresh),
        cmocka_unit_test(test_undo_chain),
        cmocka_unit_test(test_second_turn),
        cmocka_unit_test(test_edit_in_prompt),
        cmocka_unit_test(test_lens),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_no_shift),
        cmocka_unit_test(test_not_recurrent),
        cmocka_unit_test(test_cancel_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
