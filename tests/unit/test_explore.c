/* Explore mode in the engine, on real models of every architecture:
 * branching from an earlier step rolls the cache back in O(1) and gives the
 * logits of a fresh run to the same position; forced tokens (a branch's
 * alternative, step mode's picks and typed text) give the logits of teacher
 * forcing that sequence; undo takes a position back exactly; the lens of a
 * step ends in the step's own logits and leaves the cache alone; a turn with
 * its own parameters (compare settings) reuses the shared prompt; a branch
 * keeps the template its reply was made with. Logits are
 * compared through the top candidates the events carry, bit for bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <poll.h>

#include "engine.h"
#include "model/forward.h"
#include "model/model.h"
#include "engine_events.h"
#include "testutil.h"

#define MAX_TOK 256

static void wait_for(engine *e, enum engine_event_type type, engine_event *ev)
{
    for (;;) {
        next_event(e, ev);
        if (ev->type == type)
            return;
        if (ev->type == ENGINE_EV_ERROR)
            fail_msg("engine error: %s", ev->message);
        engine_lens_free(ev->lens);
    }
}

static int32_t ckpt_every; /* 0: the engine's default (recurrent models) */

static engine_params params_of(const char *path)
{
    engine_params p = engine_default_params();
    p.ckpt_every = ckpt_every;
    p.model_path = path;
    p.n_ctx = 256;
    p.n_threads = 2;
    p.template_name = "raw"; /* the prompt is its text: teacher forcing can tokenize it alike */
    p.sampling.temp = 0;
    p.sampling.seed = 42;
    p.sampling.seed_set = true;
    p.sampling.n_top = 16;
    p.sampling.n_predict = 20;
    return p;
}

static engine *start(const engine_params *p)
{
    char err[256];
    engine *e = engine_start(p, err, sizeof err);
    if (!e)
        fail_msg("engine_start: %s", err);
    engine_event ev;
    wait_for(e, ENGINE_EV_LOADED, &ev);
    return e;
}

/* One step as an event shows it. */
typedef struct step {
    int32_t token, pos, n_top;
    size_t text_at; /* reply text length before this token's text */
    engine_token_candidate top[16];
    float p_post;
} step;

typedef struct turn_log {
    int n;
    step s[MAX_TOK];
    char text[4096];
    size_t len;
    engine_event done;
} turn_log;

static void add_token(turn_log *t, const engine_event *ev)
{
    assert_true(t->n < MAX_TOK);
    step *s = &t->s[t->n++];
    s->token = ev->token;
    s->pos = ev->pos;
    s->n_top = ev->n_top < 16 ? ev->n_top : 16;
    s->p_post = ev->p_post;
    s->text_at = t->len;
    memcpy(s->top, ev->top, (size_t)s->n_top * sizeof s->top[0]);
    assert_true(t->len + (size_t)ev->text_len < sizeof t->text);
    memcpy(t->text + t->len, ev->text, (size_t)ev->text_len);
    t->len += (size_t)ev->text_len;
    t->text[t->len] = 0;
}

static void collect(engine *e, turn_log *t)
{
    memset(t, 0, sizeof *t);
    engine_event ev;
    for (;;) {
        next_event(e, &ev);
        if (ev.type == ENGINE_EV_TOKEN)
            add_token(t, &ev);
        else if (ev.type == ENGINE_EV_ERROR)
            fail_msg("engine error: %s", ev.message);
        else if (ev.type == ENGINE_EV_DONE) {
            memcpy(t->text + t->len, ev.text, (size_t)ev.text_len);
            t->len += (size_t)ev.text_len;
            t->text[t->len] = 0;
            t->done = ev;
            return;
        }
    }
}

static void submit(engine *e, const char *text, const int32_t *toks, int32_t n, int32_t emitted)
{
    chat_message m = {"user", text, 0};
    engine_cmd c = {.type = ENGINE_CMD_SUBMIT, .messages = &m, .n_messages = 1, .conv_id = 1,
                    .tokens = (int32_t *)toks, .n_tokens = n, .reply_emitted = emitted};
    engine_send(e, &c);
}

/* Same position, same token, same candidates with the same logits. */
static void assert_same_step(const step *a, const step *b)
{
    assert_int_equal(a->pos, b->pos);
    assert_int_equal(a->token, b->token);
    assert_int_equal(a->n_top, b->n_top);
    for (int i = 0; i < a->n_top; i++) {
        assert_int_equal(a->top[i].id, b->top[i].id);
        assert_memory_equal(&a->top[i].logit, &b->top[i].logit, sizeof(float));
    }
}

/* The logits of teacher forcing prompt + reply: the prompt as one batch,
 * then every reply token alone (as generation feeds them). Row i is the
 * distribution at position np + i. */
static float *teacher(const char *path, const char *text, const int32_t *reply, int32_t n, int32_t *np_out)
{
    char err[512];
    model *m = model_load(path, err, sizeof err);
    if (!m)
        fail_msg("%s", err);
    const tokenizer *t = model_get_tokenizer(m);
    const int32_t V = model_get_hparams(m)->n_vocab;
    int32_t toks[512];
    const int32_t np = tokenizer_encode(t, text, strlen(text), tokenizer_add_bos(t) && tokenizer_bos(t) >= 0, true,
                                        toks, 512);
    assert_true(np > 0 && np + n < 512);
    memcpy(toks + np, reply, (size_t)n * sizeof *toks);
    forward_params fp = forward_default_params();
    fp.n_ctx = 256;
    fp.n_threads = 2;
    forward_ctx *f = forward_build(m, &fp, err, sizeof err);
    assert_non_null(f);
    float *lg = malloc((size_t)(n + 1) * V * sizeof *lg);
    assert_int_equal(forward_eval(f, toks, np, 0, lg, false, err, sizeof err), 0);
    for (int32_t i = 0; i < n; i++)
        assert_int_equal(forward_eval(f, toks + np + i, 1, np + i, lg + (size_t)(i + 1) * V, false, err, sizeof err),
                         0);
    forward_free(f);
    model_free(m);
    *np_out = np;
    return lg;
}

static void assert_step_is_row(const step *s, const float *row)
{
    for (int i = 0; i < s->n_top; i++)
        assert_memory_equal(&s->top[i].logit, &row[s->top[i].id], sizeof(float));
}

/* Greedy reply; a branch from step K with its own token again (rollback and
 * regenerate), then with the second candidate; each against a fresh engine
 * submitting the same and against teacher forcing. */
static void check_branch_at(const char *rel, const char *text, int n_gen, int K)
{
    const char *path = TESTDATA_REQUIRE(rel);
    engine_params p = params_of(path);
    p.sampling.n_predict = n_gen;
    engine *e = start(&p);
    turn_log *orig = malloc(sizeof *orig), *again = malloc(sizeof *again), *fresh = malloc(sizeof *fresh);
    submit(e, text, NULL, 0, 0);
    collect(e, orig);
    assert_int_equal(orig->n, n_gen);
    int32_t prefix[MAX_TOK];
    for (int i = 0; i <= K; i++)
        prefix[i] = orig->s[i].token;
    /* the same token: the cache is set back to step K, one token evaluated
     * (the one before it, alone, as generation had evaluated it) */
    submit(e, text, prefix, K + 1, 0);
    collect(e, again);
    assert_int_equal(again->done.n_prompt, 1);
    assert_int_equal(again->n, n_gen - K);
    for (int i = 0; i < again->n; i++)
        assert_same_step(&again->s[i], &orig->s[K + i]);
    /* the second candidate instead */
    int32_t alt = orig->s[K].top[1].id;
    prefix[K] = alt;
    submit(e, text, prefix, K + 1, 0);
    collect(e, again);
    assert_true(again->done.n_prompt <= 1);
    assert_int_equal(again->s[0].token, alt);
    assert_int_equal(again->s[0].pos, orig->s[K].pos);
    for (int i = 0; i < again->s[0].n_top; i++) { /* the same distribution as before, another choice */
        assert_int_equal(again->s[0].top[i].id, orig->s[K].top[i].id);
        assert_memory_equal(&again->s[0].top[i].logit, &orig->s[K].top[i].logit, sizeof(float));
    }
    /* a fresh engine to the same position: every step equal */
    engine *e2 = start(&p);
    submit(e2, text, prefix, K + 1, 0);
    collect(e2, fresh);
    assert_int_equal(fresh->n, again->n);
    for (int i = 0; i < fresh->n; i++)
        assert_same_step(&fresh->s[i], &again->s[i]);
    engine_shutdown(e2);
    /* teacher forcing the whole branch */
    int32_t reply[2 * MAX_TOK], np;
    for (int i = 0; i < K; i++)
        reply[i] = orig->s[i].token;
    for (int i = 0; i < again->n; i++)
        reply[K + i] = again->s[i].token;
    float *lg = teacher(path, text, reply, K + again->n, &np);
    char err[256];
    model *m = model_load_weights_only(path, err, sizeof err);
    const int32_t V = model_get_hparams(m)->n_vocab;
    model_free(m);
    assert_int_equal(again->s[0].pos, np + K);
    for (int i = 0; i < again->n; i++)
        assert_step_is_row(&again->s[i], lg + (size_t)(K + i) * V);
    free(lg);
    /* branching at the reply's first token starts from the prompt's own
     * logits: nothing is evaluated */
    prefix[0] = orig->s[0].top[2].id;
    submit(e, text, prefix, 1, 0);
    collect(e, again);
    assert_int_equal(again->done.n_prompt, 0);
    for (int i = 0; i < again->s[0].n_top; i++)
        assert_memory_equal(&again->s[0].top[i].logit, &orig->s[0].top[i].logit, sizeof(float));
    free(orig);
    free(again);
    free(fresh);
    engine_shutdown(e);
}

static void check_branch(const char *rel, const char *text) { check_branch_at(rel, text, 20, 9); }

static void test_branch_llama(void **s)
{
    (void)s;
    check_branch("models/stories260K.gguf", "Once upon a time");
    check_branch("models/tiny-spm-q4_k_m.gguf", "The quick brown fox jumps over the lazy dog");
}

static void test_branch_families(void **s)
{
    (void)s;
    check_branch("models/qwen2-mini-q4_k_m.gguf", "The quick brown fox jumps over the lazy dog");
    check_branch("models/qwen3-mini-q8_0.gguf", "The quick brown fox jumps over the lazy dog");
    check_branch("models/gemma3-mini-q8_0.gguf", "The quick brown fox jumps over the lazy dog"); /* past its window */
    check_branch("models/phi3-mini-q8_0.gguf", "The quick brown fox jumps over the lazy dog");
}

/* Step mode: draw, force the fourth candidate, force typed text, draw;
 * every distribution is teacher forcing's, and the STEP event that asked
 * shows the distribution the TOKEN then reports. */
static void check_step_force(const char *rel, const char *text, const char *typed)
{
    const char *path = TESTDATA_REQUIRE(rel);
    engine_params p = params_of(path);
    p.step_mode = true;
    engine *e = start(&p);
    submit(e, text, NULL, 0, 0);
    turn_log *t = calloc(1, sizeof *t);
    engine_event ev, asked;
    wait_for(e, ENGINE_EV_STEP, &asked);
    assert_int_equal(asked.token, -1);
    engine_step(e);
    wait_for(e, ENGINE_EV_TOKEN, &ev);
    add_token(t, &ev);
    for (int i = 0; i < ev.n_top; i++)
        assert_int_equal(ev.top[i].id, asked.top[i].id);
    wait_for(e, ENGINE_EV_STEP, &asked);
    const int32_t pick = asked.top[3].id;
    engine_step_token(e, pick);
    wait_for(e, ENGINE_EV_TOKEN, &ev);
    add_token(t, &ev);
    assert_int_equal(ev.token, pick);
    assert_float_equal(ev.p_post, 0.0, 0); /* greedy: a forced fourth candidate had no chance */
    assert_float_equal(ev.p_raw, asked.top[3].p_raw, 0);
    wait_for(e, ENGINE_EV_STEP, &asked);
    engine_step_text(e, typed);
    int forced_n = 0;
    for (;;) { /* the text's tokens, one TOKEN each, then the next question */
        next_event(e, &ev);
        if (ev.type == ENGINE_EV_STEP)
            break;
        if (ev.type == ENGINE_EV_TOKEN) {
            add_token(t, &ev);
            forced_n++;
        }
        assert_int_not_equal(ev.type, ENGINE_EV_ERROR);
    }
    assert_true(forced_n >= 2);
    engine_step(e);
    wait_for(e, ENGINE_EV_TOKEN, &ev);
    add_token(t, &ev);
    wait_for(e, ENGINE_EV_STEP, &asked);
    engine_stop(e);
    wait_for(e, ENGINE_EV_DONE, &ev);
    assert_int_equal(ev.reason, ENGINE_DONE_STOPPED);
    assert_int_equal(ev.n_gen, t->n);
    assert_non_null(strstr(t->text, typed[0] == ' ' ? typed + 1 : typed));
    int32_t reply[64], np;
    for (int i = 0; i < t->n; i++)
        reply[i] = t->s[i].token;
    float *lg = teacher(path, text, reply, t->n, &np);
    char err[256];
    model *m = model_load_weights_only(path, err, sizeof err);
    const int32_t V = model_get_hparams(m)->n_vocab;
    model_free(m);
    for (int i = 0; i < t->n; i++) {
        assert_int_equal(t->s[i].pos, np + i);
        assert_step_is_row(&t->s[i], lg + (size_t)i * V);
    }
    free(lg);
    free(t);
    engine_shutdown(e);
}

static void test_step_force(void **s)
{
    (void)s;
    check_step_force("models/stories260K.gguf", "Once upon a time", " the big dog");
    check_step_force("models/qwen2-mini-q4_k_m.gguf", "Hello there", " the big dog");
    check_step_force("models/qwen3-mini-q8_0.gguf", "Hello there", " the big dog");
    check_step_force("models/gemma3-mini-q8_0.gguf", "Hello there", " the big dog");
    check_step_force("models/phi3-mini-q8_0.gguf", "Hello there", " the big dog");
}

/* Undo: five tokens, take back three (the last with the reply's first
 * token: the prompt's own logits come back), draw again: the same steps,
 * the same text; nothing to undo at the reply's start. */
/* text: check the reply's byte counts too (not for a vocabulary whose
 * tokens split UTF-8 characters: the bytes held back move them) */
static void check_undo(const char *rel, bool text)
{
    engine_params p = params_of(TESTDATA_REQUIRE(rel));
    p.step_mode = true;
    engine *e = start(&p);
    submit(e, "The quick brown fox", NULL, 0, 0);
    turn_log *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    engine_event ev;
    for (int i = 0; i < 5; i++) {
        wait_for(e, ENGINE_EV_STEP, &ev);
        engine_step(e);
        wait_for(e, ENGINE_EV_TOKEN, &ev);
        add_token(a, &ev);
    }
    size_t len = a->len;
    for (int i = 0; i < 5; i++) {
        wait_for(e, ENGINE_EV_STEP, &ev);
        assert_int_equal(ev.pos, a->s[4 - i].pos + 1);
        engine_undo(e);
        wait_for(e, ENGINE_EV_UNDO, &ev);
        assert_int_equal(ev.pos, a->s[4 - i].pos);
        assert_true((size_t)ev.reply_len <= len);
        len = (size_t)ev.reply_len;
    }
    assert_int_equal(len, 0);
    wait_for(e, ENGINE_EV_STEP, &ev);
    engine_undo(e); /* at the reply's start */
    wait_for(e, ENGINE_EV_ERROR, &ev);
    assert_non_null(strstr(ev.message, "nothing to take back"));
    for (int i = 0; i < 5; i++) {
        wait_for(e, ENGINE_EV_STEP, &ev);
        engine_step(e);
        wait_for(e, ENGINE_EV_TOKEN, &ev);
        add_token(b, &ev);
        assert_same_step(&b->s[i], &a->s[i]);
    }
    assert_string_equal(a->text, b->text);
    /* undo the last one: the text it added goes */
    wait_for(e, ENGINE_EV_STEP, &ev);
    engine_undo(e);
    wait_for(e, ENGINE_EV_UNDO, &ev);
    assert_int_equal(ev.pos, b->s[4].pos);
    if (text) {
        assert_int_equal(ev.reply_len, (int)b->s[4].text_at);
        assert_true(b->s[4].text_at < b->len); /* it had added text */
    }
    wait_for(e, ENGINE_EV_STEP, &ev);
    for (int i = 0; i < b->s[4].n_top; i++) /* the distribution at position 4 again */
        assert_memory_equal(&ev.top[i].logit, &b->s[4].top[i].logit, sizeof(float));
    engine_stop(e);
    wait_for(e, ENGINE_EV_DONE, &ev);
    assert_int_equal(ev.n_gen, 4);
    /* free generation ignores an undo */
    engine_set_step(e, false);
    submit(e, "The quick brown fox", NULL, 0, 0);
    engine_undo(e);
    collect(e, a);
    assert_int_equal(a->n, 20);
    free(a);
    free(b);
    engine_shutdown(e);
}

static void test_step_undo(void **s)
{
    (void)s;
    check_undo("models/tiny-spm-q8_0.gguf", true);
}

/* The lens of every step of a reply: its last block is the step's own
 * distribution (bit for bit past the first token, which the prompt's batch
 * computed), its blocks count the model's, and the cache is left as it was:
 * a reply with lenses asked in the middle (step mode) equals one without. */
static void check_lens_first(const char *rel, const char *text, const float *first);
static void check_lens(const char *rel, const char *text) { check_lens_first(rel, text, NULL); }

/* first: the logits the first step's lens must end in, bit for bit (NULL:
 * within 1e-3 of the prompt's own, which its batch computed) */
static void check_lens_first(const char *rel, const char *text, const float *first)
{
    const char *path = TESTDATA_REQUIRE(rel);
    engine_params p = params_of(path);
    p.sampling.n_predict = 8;
    engine *e = start(&p);
    turn_log *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    submit(e, text, NULL, 0, 0);
    collect(e, a);
    char err[256];
    model *m = model_load_weights_only(path, err, sizeof err);
    const int32_t L = (int32_t)model_get_hparams(m)->n_layer;
    model_free(m);
    chat_message msg = {"user", text, 0};
    for (int k = 0; k < a->n; k++) {
        int32_t prefix[16];
        for (int i = 0; i < k; i++)
            prefix[i] = a->s[i].token;
        engine_cmd c = {.type = ENGINE_CMD_LENS, .messages = &msg, .n_messages = 1, .conv_id = 7, .req_id = 70 + k,
                        .tokens = prefix, .n_tokens = k, .token = a->s[k].token, .index = k};
        engine_send(e, &c);
        engine_event ev;
        wait_for(e, ENGINE_EV_LENS, &ev);
        assert_non_null(ev.lens);
        assert_int_equal(ev.req_id, 70 + k);
        assert_int_equal(ev.index, k);
        assert_int_equal(ev.lens->pos, a->s[k].pos);
        assert_int_equal(ev.lens->n_layer, L);
        const engine_lens_layer *last = &ev.lens->layer[L - 1];
        if (k == 0 && first) {
            for (int i = 0; i < last->n_top; i++)
                assert_memory_equal(&last->top[i].logit, &first[last->top[i].id], sizeof(float));
            engine_lens_free(ev.lens);
            continue;
        }
        assert_int_equal(last->top[0].id, a->s[k].top[0].id); /* greedy: the chosen one is top-1 at the end */
        assert_int_equal(last->chosen_rank, 0);
        assert_true(ev.lens->first_top >= 1 && ev.lens->first_top <= L);
        for (int l = 0; l < ev.lens->first_top - 1; l++)
            assert_true(ev.lens->layer[l].chosen_rank > 0);
        for (int i = 0; i < last->n_top; i++) {
            assert_int_equal(last->top[i].id, a->s[k].top[i].id);
            if (k > 0)
                assert_memory_equal(&last->top[i].logit, &a->s[k].top[i].logit, sizeof(float));
            else
                assert_float_equal(last->top[i].logit, a->s[k].top[i].logit, 1e-3);
        }
        engine_lens_free(ev.lens);
    }
    /* lenses in the middle of a step-mode reply change nothing */
    engine_set_step(e, true);
    submit(e, text, NULL, 0, 0);
    for (int k = 0; k < a->n; k++) {
        engine_event ev;
        wait_for(e, ENGINE_EV_STEP, &ev);
        if (k >= 1) { /* the previous step's, and the first one's: the prompt's last token, which its
                         batch had computed (a lens writing the cache would show) */
            int32_t prefix[16];
            const int j = k % 2 ? 0 : k - 1;
            for (int i = 0; i < j; i++)
                prefix[i] = a->s[i].token;
            engine_cmd c = {.type = ENGINE_CMD_LENS, .messages = &msg, .n_messages = 1, .conv_id = 7,
                            .tokens = prefix, .n_tokens = j, .token = a->s[j].token};
            engine_send(e, &c);
            wait_for(e, ENGINE_EV_LENS, &ev);
            assert_non_null(ev.lens);
            engine_lens_free(ev.lens);
        }
        engine_step(e);
        wait_for(e, ENGINE_EV_TOKEN, &ev);
        add_token(b, &ev);
        assert_same_step(&b->s[k], &a->s[k]);
    }
    engine_set_step(e, false);
    engine_event ev;
    wait_for(e, ENGINE_EV_DONE, &ev);
    /* a lens whose prefix the cache no longer holds: evaluated first */
    engine_reset(e);
    int32_t prefix[2] = {a->s[0].token, a->s[1].token};
    engine_cmd c = {.type = ENGINE_CMD_LENS, .messages = &msg, .n_messages = 1, .tokens = prefix, .n_tokens = 2,
                    .token = a->s[2].token};
    engine_send(e, &c);
    wait_for(e, ENGINE_EV_LENS, &ev);
    assert_non_null(ev.lens);
    for (int i = 0; i < ev.lens->layer[L - 1].n_top; i++)
        assert_memory_equal(&ev.lens->layer[L - 1].top[i].logit, &a->s[2].top[i].logit, sizeof(float));
    engine_lens_free(ev.lens);
    if (first) { /* recurrent: the first step's lens from an empty cache, then the reply again: the
                    prompt was evaluated as its own batch (not cut before its last token), so the
                    reply is the first one, bit for bit */
        engine_reset(e);
        engine_cmd c0 = {.type = ENGINE_CMD_LENS, .messages = &msg, .n_messages = 1, .token = a->s[0].token};
        engine_send(e, &c0);
        wait_for(e, ENGINE_EV_LENS, &ev);
        assert_non_null(ev.lens);
        for (int i = 0; i < ev.lens->layer[L - 1].n_top; i++)
            assert_memory_equal(&ev.lens->layer[L - 1].top[i].logit, &first[ev.lens->layer[L - 1].top[i].id],
                                sizeof(float));
        engine_lens_free(ev.lens);
        submit(e, text, NULL, 0, 0);
        collect(e, b);
        assert_int_equal(b->done.n_prompt, 0); /* the prompt's checkpoint: nothing evaluated */
        assert_int_equal(b->n, a->n);
        for (int k = 0; k < a->n; k++)
            assert_same_step(&b->s[k], &a->s[k]);
    }
    free(a);
    free(b);
    engine_shutdown(e);
}

static void test_lens(void **s)
{
    (void)s;
    check_lens("models/stories260K.gguf", "Once upon a time");
    check_lens("models/tiny-spm-mix.gguf", "The quick brown fox");
    check_lens("models/qwen2-mini-q4_k_m.gguf", "The quick brown fox");
    check_lens("models/qwen3-mini-q8_0.gguf", "The quick brown fox");
    check_lens("models/gemma3-mini-q8_0.gguf", "The quick brown fox");
    check_lens("models/phi3-mini-q8_0.gguf", "The quick brown fox");
}

/* Compare settings: the same prompt under two parameter sets, one after the
 * other. The second evaluates nothing (the shared prompt's cache and its
 * logits) and sees the same raw distribution; each follows its own
 * parameters, and the session's come back afterwards. */
static void test_compare_turns(void **s)
{
    (void)s;
    engine_params p = params_of(TESTDATA_REQUIRE("models/stories260K.gguf"));
    engine *e = start(&p);
    turn_log *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *c2 = calloc(1, sizeof *c2);
    chat_message m = {"user", "Once upon a time", 0};
    sampler_params pa = p.sampling, pb = p.sampling;
    pa.temp = 0;
    pb.temp = 1.5f; /* no filter: 20 draws all landing on the top token would be a wonder */
    pb.top_k = 0;
    pb.top_p = 1.0f;
    pb.min_p = 0.0f;
    pb.seed = 5;
    engine_cmd ca = {.type = ENGINE_CMD_SUBMIT, .messages = &m, .n_messages = 1, .conv_id = 1, .req_id = 1,
                     .own_sampling = true, .sampling = pa};
    engine_send(e, &ca);
    collect(e, a);
    engine_cmd cb = {.type = ENGINE_CMD_SUBMIT, .messages = &m, .n_messages = 1, .conv_id = 2, .req_id = 2,
                     .own_sampling = true, .sampling = pb};
    engine_send(e, &cb);
    collect(e, b);
    assert_int_equal(b->done.n_prompt, 0);
    assert_int_equal(b->done.conv_id, 2);
    assert_int_equal(b->done.req_id, 2);
    for (int i = 0; i < a->s[0].n_top; i++) {
        assert_int_equal(a->s[0].top[i].id, b->s[0].top[i].id);
        assert_memory_equal(&a->s[0].top[i].logit, &b->s[0].top[i].logit, sizeof(float));
    }
    int greedy_a = 0, greedy_b = 0;
    for (int i = 0; i < a->n; i++)
        greedy_a += a->s[i].token == a->s[i].top[0].id;
    for (int i = 0; i < b->n; i++)
        greedy_b += b->s[i].token == b->s[i].top[0].id;
    assert_int_equal(greedy_a, a->n);
    assert_true(greedy_b < b->n);
    /* B again: from its seed, the same reply */
    engine_send(e, &cb);
    collect(e, c2);
    assert_string_equal(c2->text, b->text);
    /* the session's parameters (greedy) are back */
    submit(e, "Once upon a time", NULL, 0, 0);
    collect(e, c2);
    assert_string_equal(c2->text, a->text);
    free(a);
    free(b);
    free(c2);
    engine_shutdown(e);
}

static void test_errors(void **s)
{
    (void)s;
    engine_params p = params_of(TESTDATA_REQUIRE("models/stories260K.gguf"));
    engine *e = start(&p);
    turn_log *t = calloc(1, sizeof *t);
    const int32_t bad[2] = {5, 512};
    submit(e, "Once", bad, 2, 0);
    engine_event ev;
    wait_for(e, ENGINE_EV_ERROR, &ev);
    assert_non_null(strstr(ev.message, "vocabulary"));
    wait_for(e, ENGINE_EV_DONE, &ev);
    assert_int_equal(ev.reason, ENGINE_DONE_ERROR);
    /* a forced last token outside the vocabulary too */
    const int32_t bad2[1] = {9999};
    submit(e, "Once", bad2, 1, 0);
    wait_for(e, ENGINE_EV_ERROR, &ev);
    assert_non_null(strstr(ev.message, "vocabulary"));
    wait_for(e, ENGINE_EV_DONE, &ev);
    assert_int_equal(ev.reason, ENGINE_DONE_ERROR);
    assert_int_equal(ev.n_gen, 0);
    /* step mode: a token id outside the vocabulary is refused, the step asked again */
    engine_set_step(e, true);
    submit(e, "Once", NULL, 0, 0);
    wait_for(e, ENGINE_EV_STEP, &ev);
    engine_step_token(e, 4096);
    wait_for(e, ENGINE_EV_ERROR, &ev);
    assert_non_null(strstr(ev.message, "outside the vocabulary"));
    wait_for(e, ENGINE_EV_STEP, &ev);
    engine_stop(e);
    wait_for(e, ENGINE_EV_DONE, &ev);
    /* a lens without a model */
    engine_load(e, "/nonexistent.gguf");
    wait_for(e, ENGINE_EV_ERROR, &ev);
    chat_message m = {"user", "x", 0};
    engine_cmd c = {.type = ENGINE_CMD_LENS, .messages = &m, .n_messages = 1};
    engine_send(e, &c);
    wait_for(e, ENGINE_EV_LENS, &ev);
    assert_null(ev.lens);
    assert_non_null(strstr(ev.message, "no model"));
    free(t);
    engine_shutdown(e);
}

/* The logits of a fresh run of text's prompt cut before its last token
 * (one batch), then that token alone: what the lens of a recurrent
 * model's first reply step must give (no state was ever kept inside the
 * prompt's batch; engine/memory/memory.h). */
static float *cut_first(const char *path, const char *text)
{
    char err[512];
    model *m = model_load(path, err, sizeof err);
    if (!m)
        fail_msg("%s", err);
    const tokenizer *t = model_get_tokenizer(m);
    const int32_t V = model_get_hparams(m)->n_vocab;
    int32_t toks[512];
    const int32_t np = tokenizer_encode(t, text, strlen(text), tokenizer_add_bos(t) && tokenizer_bos(t) >= 0, true,
                                        toks, 512);
    assert_true(np > 1 && np < 256);
    forward_params fp = forward_default_params();
    fp.n_ctx = 256;
    fp.n_threads = 2;
    forward_ctx *f = forward_build(m, &fp, err, sizeof err);
    assert_non_null(f);
    float *lg = malloc((size_t)V * sizeof *lg);
    assert_int_equal(forward_eval(f, toks, np - 1, 0, lg, false, err, sizeof err), 0);
    assert_int_equal(forward_eval(f, toks + np - 1, 1, np - 1, lg, false, err, sizeof err), 0);
    forward_free(f);
    model_free(m);
    return lg;
}

/* Qwen3.5 (Gated DeltaNet layers: a recurrent state that cannot be
 * truncated; engine/memory/). A branch in the middle of a reply gives the
 * logits of a fresh run to that position (a fresh engine, and teacher
 * forcing: the prompt as one batch, every reply token alone), with the
 * state restored from the prompt's checkpoint and, with a checkpoint every
 * 4 tokens, from one in the middle of the reply; step mode with forced
 * tokens and text, undo, the lens (the cache left as it was) likewise. */
/* A branch continues the context it branched from: after /template changes
 * the engine's template, a SUBMIT naming the template its reply was made with
 * (as the UI's branch does) gets the same positions and the same
 * distribution at the step; a new turn (no name) gets the new template. */
static void test_branch_keeps_template(void **s)
{
    (void)s;
    const char *path = TESTDATA_REQUIRE("models/smollm-mini-q8_0.gguf");
    engine_params p = params_of(path);
    p.template_name = NULL; /* SmolLM2's own template */
    p.sampling.n_predict = 8;
    engine *e = start(&p);
    turn_log *orig = malloc(sizeof *orig), *br = malloc(sizeof *br);
    chat_message m = {"user", "Hi\n", 0};
    engine_cmd c = {.type = ENGINE_CMD_SUBMIT, .messages = &m, .n_messages = 1, .conv_id = 1};
    engine_send(e, &c);
    collect(e, orig);
    assert_int_equal(orig->n, 8);
    engine_set_template(e, "chatml"); /* applies from the next new turn */
    const int K = 3;
    int32_t prefix[8];
    for (int i = 0; i < K; i++)
        prefix[i] = orig->s[i].token;
    prefix[K] = orig->s[K].top[1].id;
    engine_cmd b = {.type = ENGINE_CMD_SUBMIT, .name = strdup("model"), .messages = &m, .n_messages = 1,
                    .conv_id = 1, .tokens = prefix, .n_tokens = K + 1};
    engine_send(e, &b);
    collect(e, br);
    assert_true(br->done.n_prompt <= 1); /* the cache held the context: nothing evaluated again but a step */
    assert_int_equal(br->s[0].token, prefix[K]);
    assert_int_equal(br->s[0].pos, orig->s[K].pos);
    for (int i = 0; i < br->s[0].n_top; i++) {
        assert_int_equal(br->s[0].top[i].id, orig->s[K].top[i].id);
        assert_memory_equal(&br->s[0].top[i].logit, &orig->s[K].top[i].logit, sizeof(float));
    }
    /* a new turn: chatml, without SmolLM2's default system prompt */
    engine_cmd n = {.type = ENGINE_CMD_SUBMIT, .messages = &m, .n_messages = 1, .conv_id = 1};
    engine_send(e, &n);
    collect(e, br);
    assert_true(br->s[0].pos < orig->s[0].pos);
    free(orig);
    free(br);
    engine_shutdown(e);
}

static void test_qwen35(void **s)
{
    (void)s;
    const char *rel = "families2026/models/qwen35-mini-q8_0.gguf";
    const char *path = TESTDATA_REQUIRE(rel);
    char err[256];
    model *m = model_load(path, err, sizeof err);
    if (!m)
        fail_msg("%s", err);
    model_free(m);
    /* the engine knows it is recurrent, and keeps checkpoints */
    ckpt_every = 4;
    engine_params p = params_of(path);
    engine *e = engine_start(&p, err, sizeof err);
    assert_non_null(e);
    engine_event ev;
    wait_for(e, ENGINE_EV_LOADED, &ev);
    assert_true(ev.info.recurrent);
    assert_true(ev.info.ckpt_unit_bytes > 0);
    assert_int_equal(ev.info.ckpt_every, 4);
    submit(e, "The quick brown fox jumps over the lazy dog", NULL, 0, 0);
    turn_log *t = calloc(1, sizeof *t);
    collect(e, t);
    assert_int_equal(t->n, 20);
    assert_int_equal(t->done.n_ckpt, 1 + 19 / 4); /* the prompt's end, then every 4 tokens */
    assert_int_equal(t->done.ckpt_bytes, (uint64_t)t->done.n_ckpt * ev.info.ckpt_unit_bytes);
    free(t);
    engine_shutdown(e);

    check_branch(rel, "The quick brown fox jumps over the lazy dog");
    check_step_force(rel, "Hello there", " the big dog");
    check_undo(rel, false);
    /* Qwen3.5-mini's evaluation of 64 tokens or more at once rounds
     * otherwise than one at a time (below 64 it gives the same bits): a
     * prompt that long, and a branch at step 83 of a reply, so that what is
     * evaluated again to restore the state would show if it were evaluated
     * otherwise than the first time (the prompt as one batch, the reply's
     * tokens alone), and the lens of the first step (the prompt cut before
     * its last token) would show if the prompt's cache rows were not given
     * back. With a checkpoint every 16 tokens, then only the prompt's. */
    const char *long_text = "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy "
                            "dog again, and then the dog wakes up and runs after the fox into the woods.";
    /* 64 tokens: the prompt one chunk of 64, the prompt cut before its last
     * token evaluated otherwise, so that its cache rows differ */
    const char *text64 = "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog "
                         "again, and";
    float *first = cut_first(path, text64);
    ckpt_every = 16;
    check_branch_at(rel, long_text, 100, 83);
    check_lens_first(rel, text64, first);
    ckpt_every = 0; /* the default (256): only the prompt's checkpoint in these replies */
    check_branch_at(rel, long_text, 100, 83);
    check_lens_first(rel, text64, first);
    free(first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_branch_llama),  cmocka_unit_test(test_branch_families),
        cmocka_unit_test(test_step_force),    cmocka_unit_test(test_step_undo),
        cmocka_unit_test(test_lens),          cmocka_unit_test(test_compare_turns),
        cmocka_unit_test(test_errors),        cmocka_unit_test(test_qwen35),
        cmocka_unit_test(test_branch_keeps_template),
    };
    return cmocka_run_group_tests_name("explore", tests, NULL, NULL);
}
