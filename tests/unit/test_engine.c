/* Engine thread on real models: load, submit, stop, params mid-generation,
 * prefix reuse, reset, quit mid-generation, context shift, errors.
 * Every wait polls the event fd with a generous timeout; nothing asserts on
 * timing. step_mode makes "what happens after this token" deterministic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <poll.h>

#include "engine.h"
#include "model/model.h"
#include "engine_events.h"
#include "testutil.h"

#define STORIES "models/stories260K.gguf"

/* Skips events until one of `type`; fails on ERROR unless that is what we wait for. */
static void wait_for(engine *e, enum engine_event_type type, engine_event *ev)
{
    for (;;) {
        next_event(e, ev);
        if (ev->type == type)
            return;
        if (ev->type == ENGINE_EV_ERROR)
            fail_msg("engine error: %s", ev->message);
    }
}

static engine_params base_params(const char *path)
{
    engine_params p = engine_default_params();
    p.model_path = path;
    p.n_ctx = 256;
    p.n_threads = 1;
    p.sampling.seed = 42;
    p.sampling.seed_set = true;
    return p;
}

static engine *start_loaded(const engine_params *p, engine_model_info *info)
{
    char err[256];
    engine *e = engine_start(p, err, sizeof err);
    if (!e)
        fail_msg("engine_start: %s", err);
    engine_event ev;
    wait_for(e, ENGINE_EV_LOADED, &ev);
    if (info)
        *info = ev.info;
    return e;
}

/* A finished turn as seen by the UI. */
typedef struct turn_log {
    int n_tok;
    int32_t tok[1024], pos[1024];
    bool greedy_ok[1024]; /* chosen == top1 */
    char text[8192];
    size_t len;
    int n_shift, n_prefill;
    double prefill_tps; /* prompt_tps of the last PREFILL event: the prompt's speed before the reply ends */
    int32_t dropped[64];
    engine_event done;
} turn_log;

static void collect_turn(engine *e, turn_log *t)
{
    memset(t, 0, sizeof *t);
    engine_event ev;
    for (;;) {
        next_event(e, &ev);
        switch (ev.type) {
        case ENGINE_EV_TOKEN:
            assert_true(t->n_tok < 1024);
            t->tok[t->n_tok] = ev.token;
            t->pos[t->n_tok] = ev.pos;
            t->greedy_ok[t->n_tok] = ev.n_top > 0 && ev.top[0].id == ev.token;
            t->n_tok++;
            assert_true(ev.text_len >= 0 && ev.text_len < ENGINE_TEXT_MAX);
            assert_true(t->len + (size_t)ev.text_len < sizeof t->text);
            memcpy(t->text + t->len, ev.text, (size_t)ev.text_len);
            t->len += (size_t)ev.text_len;
            assert_true(ev.p_raw >= 0 && ev.p_raw <= 1.0f + 1e-6f);
            assert_true(ev.p_post > 0 && ev.p_post <= 1.0f + 1e-6f);
            for (int i = 1; i < ev.n_top; i++)
                assert_true(ev.top[i - 1].logit >= ev.top[i].logit);
            break;
        case ENGINE_EV_CONTEXT_SHIFT:
            if (t->n_shift < 64)
                t->dropped[t->n_shift] = ev.n_dropped;
            t->n_shift++;
            break;
        case ENGINE_EV_PREFILL:
            t->n_prefill++;
            assert_true(ev.done >= 0 && ev.done <= ev.total);
            t->prefill_tps = ev.prompt_tps;
            break;
        case ENGINE_EV_DONE:
            memcpy(t->text + t->len, ev.text, (size_t)ev.text_len);
            t->len += (size_t)ev.text_len;
            t->text[t->len] = 0;
            t->done = ev;
            return;
        case ENGINE_EV_ERROR:
            break; /* the DONE that follows says ERROR */
        default:
            break;
        }
    }
}

static void submit1(engine *e, const char *role, const char *content)
{
    chat_message m = {role, content, 0};
    engine_submit(e, 1, &m, 1);
}

static void test_load_info(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    engine_model_info info;
    engine *e = start_loaded(&p, &info);
    assert_int_equal(info.n_vocab, 512);
    assert_int_equal(info.n_layer, 5);
    assert_int_equal(info.n_embd, 64);
    assert_int_equal(info.n_ctx, 256);
    assert_int_equal(info.n_ctx_train, 2048);
    assert_string_equal(info.arch, "llama");
    assert_string_equal(info.template_name, "raw"); /* no template in the file */
    assert_true(info.n_params > 200000 && info.n_params < 400000);
    engine_shutdown(e);
}

static void test_errors(void **state)
{
    (void)state;
    char err[256];
    engine_params p = base_params(NULL);
    p.template_name = "no-such-format";
    assert_null(engine_start(&p, err, sizeof err));
    assert_non_null(strstr(err, "no-such-format"));

    p = base_params("/nonexistent/model.gguf");
    engine *e = engine_start(&p, err, sizeof err);
    assert_non_null(e);
    engine_event ev;
    wait_for(e, ENGINE_EV_ERROR, &ev);
    assert_non_null(strstr(ev.message, "/nonexistent/model.gguf"));
    /* submit without a model: error, then DONE with reason ERROR */
    submit1(e, "user", "hello");
    turn_log *t = malloc(sizeof *t);
    collect_turn(e, t);
    assert_int_equal(t->done.reason, ENGINE_DONE_ERROR);
    assert_int_equal(t->n_tok, 0);
    /* a file that is not a model */
    engine_load(e, TESTDATA_REQUIRE("golden/chat/golden.jsonl"));
    wait_for(e, ENGINE_EV_ERROR, &ev);
    /* unknown template by command */
    engine_set_template(e, "bogus");
    wait_for(e, ENGINE_EV_ERROR, &ev);
    assert_non_null(strstr(ev.message, "bogus"));
    /* the engine still works afterwards */
    engine_load(e, TESTDATA_REQUIRE(STORIES));
    wait_for(e, ENGINE_EV_LOADED, &ev);
    free(t);
    engine_shutdown(e);
}

/* Greedy continuation of "Once upon a time" matches llama.cpp's. */
static void test_generate_greedy(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.sampling.temp = 0;
    p.sampling.n_predict = 40;
    engine *e = start_loaded(&p, NULL);
    submit1(e, "user", "Once upon a time");
    turn_log *t = malloc(sizeof *t);
    collect_turn(e, t);
    assert_int_equal(t->done.reason, ENGINE_DONE_LENGTH);
    assert_int_equal(t->n_tok, 40);
    assert_int_equal(t->done.n_gen, 40);
    assert_true(t->n_prefill >= 1);
    assert_true(t->prefill_tps > 0); /* the status line shows it while the reply streams */
    int32_t np = t->done.n_prompt;
    assert_true(np >= 5);
    for (int i = 0; i < t->n_tok; i++) {
        assert_int_equal(t->pos[i], np + i); /* positions increase one by one */
        assert_true(t->greedy_ok[i]);
    }
    assert_int_equal(t->done.n_past, np + 39); /* the last token is not evaluated */
    assert_int_equal(t->done.n_ctx, 256);
    assert_true(t->done.gen_tps > 0);
    /* raw format of one user message = its text: prompt is BOS "Once upon a time" */
    assert_int_equal(np, 5);
    FILE *f = fopen(TESTDATA_REQUIRE("golden/logits/stories260K.once.jsonl"), "r");
    assert_non_null(f);
    char line[65536], last[65536] = "";
    while (fgets(line, sizeof line, f))
        memcpy(last, line, sizeof line);
    fclose(f);
    cJSON *j = cJSON_Parse(last);
    cJSON *gen = cJSON_GetObjectItem(j, "generated");
    assert_non_null(gen);
    for (int i = 0; i < 40 && i < cJSON_GetArraySize(gen); i++)
        assert_int_equal(t->tok[i], cJSON_GetArrayItem(gen, i)->valueint);
    const char *gtext = cJSON_GetObjectItem(j, "text")->valuestring;
    assert_true(t->len > 20);
    assert_memory_equal(t->text, gtext, 20);
    cJSON_Delete(j);
    free(t);
    engine_shutdown(e);
}

/* Sampled generation: positions, done stats, and the text is readable. */
static void test_generate_sampled(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.sampling.n_predict = 60;
    engine *e = start_loaded(&p, NULL);
    submit1(e, "user", "Lily and Ben went to the park.");
    turn_log *t = malloc(sizeof *t);
    collect_turn(e, t);
    assert_true(t->done.reason == ENGINE_DONE_LENGTH || t->done.reason == ENGINE_DONE_EOG);
    assert_int_equal(t->done.n_gen, t->n_tok);
    assert_true(t->n_tok > 0);
    for (int i = 1; i < t->n_tok; i++)
        assert_int_equal(t->pos[i], t->pos[i - 1] + 1);
    for (size_t i = 0; i < t->len; i++)
        assert_true(t->text[i] == '\n' || (t->text[i] >= 32 && t->text[i] < 127));
    free(t);
    engine_shutdown(e);
}

/* Step mode: the engine posts the distribution (STEP) and waits; a STEP
 * lets the sampler draw the token. */
static void step_token(engine *e, engine_event *ev)
{
    wait_for(e, ENGINE_EV_STEP, ev);
    engine_step(e);
    wait_for(e, ENGINE_EV_TOKEN, ev);
}

static void test_stop_step_mode(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.step_mode = true;
    p.sampling.temp = 0;
    engine *e = start_loaded(&p, NULL);
    submit1(e, "user", "Once upon a time");
    engine_event ev;
    step_token(e, &ev);
    step_token(e, &ev);
    step_token(e, &ev);
    wait_for(e, ENGINE_EV_STEP, &ev);
    assert_int_equal(ev.token, -1);
    engine_stop(e); /* the engine waits before its fourth token */
    next_event(e, &ev);
    assert_int_equal(ev.type, ENGINE_EV_DONE); /* no further token */
    assert_int_equal(ev.reason, ENGINE_DONE_STOPPED);
    assert_int_equal(ev.n_gen, 3);
    engine_shutdown(e);
}

/* Free-running: a stop ends the turn (the model may end its story first). */
static void test_stop_free_running(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.n_ctx = 2048;
    engine *e = start_loaded(&p, NULL);
    submit1(e, "user", "Once upon a time");
    engine_event ev;
    wait_for(e, ENGINE_EV_TOKEN, &ev);
    engine_stop(e);
    int extra = 0;
    do {
        next_event(e, &ev);
        extra += ev.type == ENGINE_EV_TOKEN;
    } while (ev.type != ENGINE_EV_DONE);
    assert_true(ev.reason == ENGINE_DONE_STOPPED || ev.reason == ENGINE_DONE_EOG);
    assert_true(ev.n_past < 2048);
    print_message("tokens after stop: %d\n", extra);
    engine_shutdown(e);
}

static void test_params_mid_generation(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.step_mode = true;
    p.sampling.temp = 3.0f; /* wild: the argmax is often not chosen */
    p.sampling.top_k = 0;
    p.sampling.top_p = 1.0f;
    p.sampling.min_p = 0.0f;
    p.sampling.n_predict = 40;
    engine *e = start_loaded(&p, NULL);
    submit1(e, "user", "Once upon a time");
    engine_event ev;
    int not_top = 0;
    for (int i = 0; i < 20; i++) {
        step_token(e, &ev);
        not_top += ev.token != ev.top[0].id;
    }
    assert_true(not_top > 0);
    step_token(e, &ev);
    sampler_params g = p.sampling;
    g.temp = 0;
    engine_set_params(e, &g);
    for (int i = 0; i < 10; i++) {
        step_token(e, &ev);
        assert_int_equal(ev.token, ev.top[0].id);
        assert_float_equal(ev.p_post, 1.0f, 1e-6);
    }
    engine_stop(e);
    wait_for(e, ENGINE_EV_DONE, &ev);
    engine_shutdown(e);
}

static void test_prefix_reuse_and_reset(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.sampling.temp = 0;
    p.sampling.n_predict = 12;
    engine *e = start_loaded(&p, NULL);
    turn_log *t1 = malloc(sizeof *t1), *t2 = malloc(sizeof *t2);
    chat_message conv[3] = {{"user", "Once upon a time", 0}, {"assistant", NULL, 0}, {"user", " The end.", 0}};
    engine_submit(e, 1, conv, 1);
    collect_turn(e, t1);
    int32_t full1 = t1->done.n_prompt;
    assert_true(full1 >= 5);

    /* the same conversation again: nothing is evaluated, the prompt's own
     * last logits were kept */
    engine_submit(e, 1, conv, 1);
    collect_turn(e, t2);
    assert_int_equal(t2->done.n_prompt, 0);
    assert_memory_equal(t1->tok, t2->tok, sizeof(int32_t) * 12);

    /* extended conversation: the shared prefix is not evaluated again */
    conv[1].content = t1->text;
    engine_submit(e, 1, conv, 3);
    collect_turn(e, t2);
    int32_t prompt_len = t2->done.n_past - t2->done.n_gen + 1;
    print_message("extended: evaluated %d of %d prompt tokens\n", t2->done.n_prompt, prompt_len);
    assert_true(t2->done.n_prompt < prompt_len);
    assert_true(t2->done.n_prompt < prompt_len - full1 + 1);

    /* reset: the next submit evaluates everything */
    engine_reset(e);
    engine_submit(e, 1, conv, 1);
    collect_turn(e, t2);
    assert_int_equal(t2->done.n_prompt, full1);
    assert_memory_equal(t1->tok, t2->tok, sizeof(int32_t) * 12);
    free(t1);
    free(t2);
    engine_shutdown(e);
}

static void test_quit_mid_generation(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.step_mode = true;
    engine *e = start_loaded(&p, NULL);
    submit1(e, "user", "Once upon a time");
    engine_event ev;
    wait_for(e, ENGINE_EV_STEP, &ev);
    engine_shutdown(e); /* paused mid-turn: QUIT must wake and join it */

    p.step_mode = false;
    p.n_ctx = 2048;
    e = start_loaded(&p, NULL);
    submit1(e, "user", "Once upon a time");
    wait_for(e, ENGINE_EV_TOKEN, &ev);
    engine_submit(e, 2, &(chat_message){"user", "queued behind", 0}, 1); /* deferred, then dropped */
    engine_shutdown(e);
}

static void test_context_shift(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.n_ctx = 32;
    p.sampling.temp = 0;
    p.sampling.n_predict = 100;
    p.sampling.repeat_penalty = 1.3f; /* keep the tiny model from looping on EOG-free text */
    engine *e = start_loaded(&p, NULL);
    turn_log *t = malloc(sizeof *t), *r = malloc(sizeof *r);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    assert_true(t->n_shift >= 1);
    int shifts = 0;
    for (int i = 0; i < t->n_tok; i++) {
        assert_true(t->pos[i] < 32);
        if (i && t->pos[i] != t->pos[i - 1] + 1) {
            assert_true(shifts < t->n_shift);
            assert_int_equal(t->pos[i], t->pos[i - 1] + 1 - t->dropped[shifts]);
            shifts++;
        }
    }
    assert_int_equal(shifts, t->n_shift);
    if (t->done.reason != ENGINE_DONE_EOG) {
        assert_int_equal(t->done.reason, ENGINE_DONE_LENGTH);
        assert_int_equal(t->n_tok, 100);
    }
    engine_shutdown(e);

    /* the same with the whole sequence recomputed every step: same tokens,
     * so the re-evaluated cache after a shift holds the right positions */
    p.no_kv_cache = true;
    e = start_loaded(&p, NULL);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, r);
    assert_int_equal(r->n_tok, t->n_tok);
    assert_memory_equal(r->tok, t->tok, sizeof(int32_t) * (size_t)t->n_tok);
    assert_memory_equal(r->pos, t->pos, sizeof(int32_t) * (size_t)t->n_tok);
    engine_shutdown(e);

    /* a conversation longer than the whole context: the middle is dropped */
    p.no_kv_cache = false;
    p.sampling.n_predict = 10;
    e = start_loaded(&p, NULL);
    submit1(e, "user",
            "Once upon a time there was a little girl named Lily. She loved to play outside in the park "
            "with her friend Ben. One day they saw a big red ball under a tall green tree.");
    collect_turn(e, t);
    assert_true(t->n_shift >= 1);
    assert_true(t->done.n_prompt < 32);
    assert_true(t->n_tok > 0 && t->pos[0] < 32);
    assert_true(t->done.reason == ENGINE_DONE_LENGTH || t->done.reason == ENGINE_DONE_EOG);
    engine_shutdown(e);
    p.sampling.n_predict = 100;

    /* without context shift: stop with a clear reason */
    p.no_kv_cache = false;
    p.context_shift = false;
    e = start_loaded(&p, NULL);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    if (t->done.reason != ENGINE_DONE_EOG) {
        assert_int_equal(t->done.reason, ENGINE_DONE_CTX_FULL);
        assert_non_null(strstr(t->done.message, "context"));
        assert_int_equal(t->n_shift, 0);
    }
    /* ... and a conversation longer than the context is refused, naming both sizes */
    submit1(e, "user",
            "Once upon a time there was a little girl named Lily. She loved to play outside in the park "
            "with her friend Ben. One day they saw a big red ball under a tall green tree.");
    collect_turn(e, t);
    assert_int_equal(t->done.reason, ENGINE_DONE_CTX_FULL);
    assert_int_equal(t->n_tok, 0);
    assert_int_equal(t->n_shift, 0);
    if (!strstr(t->done.message, "does not fit the context (32 tokens)"))
        fail_msg("message: %s", t->done.message);
    free(t);
    free(r);
    engine_shutdown(e);
}

/* Qwen3.5's recurrent state cannot drop tokens: a full context is never
 * shifted, context shift on or not; the turn ends saying why, and a
 * conversation longer than the context is refused the same way. */
static void test_no_shift_recurrent(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE("families2026/models/qwen35-mini-q8_0.gguf"));
    p.n_ctx = 32;
    p.template_name = "raw";
    p.sampling.temp = 0;
    p.sampling.n_predict = 100;
    engine *e = start_loaded(&p, NULL);
    turn_log *t = malloc(sizeof *t);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    assert_int_equal(t->n_shift, 0);
    if (t->done.reason != ENGINE_DONE_EOG) {
        assert_int_equal(t->done.reason, ENGINE_DONE_CTX_FULL);
        if (!strstr(t->done.message, "recurrent layers cannot drop tokens (no context shift)"))
            fail_msg("message: %s", t->done.message);
        for (int i = 0; i < t->n_tok; i++)
            assert_int_equal(t->pos[i], t->pos[0] + i);
    }
    submit1(e, "user",
            "Once upon a time there was a little girl named Lily. She loved to play outside in the park "
            "with her friend Ben. One day they saw a big red ball under a tall green tree.");
    collect_turn(e, t);
    assert_int_equal(t->done.reason, ENGINE_DONE_CTX_FULL);
    assert_int_equal(t->n_tok, 0);
    assert_int_equal(t->n_shift, 0);
    if (!strstr(t->done.message, "does not fit the context (32 tokens), and this model's recurrent layers"))
        fail_msg("message: %s", t->done.message);
    free(t);
    engine_shutdown(e);
}

static void test_stop_string(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.sampling.temp = 0;
    p.sampling.n_predict = 40;
    engine *e = start_loaded(&p, NULL);
    turn_log *t = malloc(sizeof *t), *s = malloc(sizeof *s);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    assert_true(t->len > 30);
    /* a stop string from the middle of the greedy reply */
    char stop[8];
    memcpy(stop, t->text + 20, 5);
    stop[5] = 0;
    const char *first = strstr(t->text, stop);
    sampler_params sp = p.sampling;
    char err[128];
    assert_true(sampler_params_set(&sp, "stop", stop, err, sizeof err));
    engine_set_params(e, &sp);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, s);
    assert_int_equal(s->done.reason, ENGINE_DONE_STOP_STRING);
    assert_int_equal(s->len, (size_t)(first - t->text));
    assert_memory_equal(s->text, t->text, s->len);
    free(t);
    free(s);
    engine_shutdown(e);
}

/* A SUBMIT with its own sampling parameters stops at its own stop strings
 * (tokscope serve sends every request so): they were read from the engine's
 * parameters instead, so a request's "stop" did nothing. */
static void test_stop_string_own_sampling(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.sampling.temp = 0;
    p.sampling.n_predict = 40;
    engine *e = start_loaded(&p, NULL);
    turn_log *t = malloc(sizeof *t), *s = malloc(sizeof *s);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    assert_true(t->len > 30);
    char stop[8];
    memcpy(stop, t->text + 20, 5);
    stop[5] = 0;
    const char *first = strstr(t->text, stop);
    chat_message m = {"user", "Once upon a time", 0};
    engine_cmd c = {.type = ENGINE_CMD_SUBMIT, .messages = &m, .n_messages = 1, .sampling = p.sampling,
                    .own_sampling = true};
    char err[128];
    assert_true(sampler_params_set(&c.sampling, "stop", stop, err, sizeof err));
    engine_send(e, &c);
    collect_turn(e, s);
    assert_int_equal(s->done.reason, ENGINE_DONE_STOP_STRING);
    assert_int_equal(s->len, (size_t)(first - t->text));
    assert_memory_equal(s->text, t->text, s->len);
    /* and the engine's own parameters (no stop string) apply again after it */
    submit1(e, "user", "Once upon a time");
    collect_turn(e, s);
    assert_int_equal(s->done.reason, ENGINE_DONE_LENGTH);
    assert_int_equal(s->len, t->len);
    free(t);
    free(s);
    engine_shutdown(e);
}

/* Forcing a built-in on a template-less model changes the prompt. */
static void test_force_template(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.sampling.n_predict = 2;
    engine *e = start_loaded(&p, NULL);
    turn_log *t = malloc(sizeof *t);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    assert_int_equal(t->done.n_prompt, 5); /* BOS + 4 tokens */
    engine_set_template(e, "plain"); /* each message followed by a newline */
    engine_reset(e);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    assert_int_equal(t->done.n_prompt, 6);
    engine_set_template(e, "chatml");
    engine_reset(e);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    assert_true(t->done.n_prompt > 10);
    engine_set_template(e, NULL); /* back to the default */
    engine_reset(e);
    submit1(e, "user", "Once upon a time");
    collect_turn(e, t);
    assert_int_equal(t->done.n_prompt, 5);
    free(t);
    engine_shutdown(e);
}

/* A model with its own (zephyr-style) template, and a forced built-in. */
static void test_template_model(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE("models/tiny-spm-q8_0.gguf"));
    p.sampling.n_predict = 30;
    p.sampling.temp = 1.5f;
    p.sampling.top_k = 0;
    p.sampling.min_p = 0;
    p.sampling.top_p = 1.0f;
    engine_model_info info;
    engine *e = start_loaded(&p, &info);
    assert_string_equal(info.template_name, "model");
    chat_message conv[2] = {{"system", "You are a helpful assistant.", 0}, {"user", "Hello there!", 0}};
    engine_submit(e, 7, conv, 2);
    turn_log *t = malloc(sizeof *t);
    collect_turn(e, t);
    assert_int_not_equal(t->done.reason, ENGINE_DONE_ERROR);
    assert_int_equal(t->done.conv_id, 7);
    assert_true(t->done.n_prompt > 10);
    /* reply text = the pieces of the generated tokens, with no UTF-8 cut */
    char err[256];
    model *m = model_load(TESTDATA_REQUIRE("models/tiny-spm-q8_0.gguf"), err, sizeof err);
    assert_non_null(m);
    const tokenizer *tk = model_get_tokenizer(m);
    char expect[8192];
    size_t el = 0;
    for (int i = 0; i < t->n_tok; i++) {
        if (tokenizer_is_eog(tk, t->tok[i]))
            continue;
        int32_t k = tokenizer_token_to_piece(tk, t->tok[i], false, expect + el, (int32_t)(sizeof expect - el));
        assert_true(k >= 0 && el + (size_t)k < sizeof expect);
        el += (size_t)k;
    }
    assert_int_equal(t->len, el);
    assert_memory_equal(t->text, expect, el);
    model_free(m);

    engine_set_template(e, "chatml");
    engine_submit(e, 7, conv, 2);
    collect_turn(e, t);
    assert_int_not_equal(t->done.reason, ENGINE_DONE_ERROR);
    free(t);
    engine_shutdown(e);
}

/* A submit during a turn ends it (STOPPED) and then runs; n_predict set
 * mid-turn ends the turn at that length. */
static void test_submit_during_turn(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE(STORIES));
    p.step_mode = true;
    engine *e = start_loaded(&p, NULL);
    chat_message m1 = {"user", "Once upon a time", 0}, m2 = {"user", "Lily had a dog.", 0};
    engine_submit(e, 1, &m1, 1);
    engine_event ev;
    step_token(e, &ev);
    assert_int_equal(ev.conv_id, 1);
    wait_for(e, ENGINE_EV_STEP, &ev);
    engine_submit(e, 2, &m2, 1);
    wait_for(e, ENGINE_EV_DONE, &ev);
    assert_int_equal(ev.conv_id, 1);
    assert_int_equal(ev.reason, ENGINE_DONE_STOPPED);
    step_token(e, &ev);
    assert_int_equal(ev.conv_id, 2);
    /* n_predict 3 from now on: this turn has 1 token, so two more */
    sampler_params sp = p.sampling;
    sp.n_predict = 3;
    engine_set_params(e, &sp);
    step_token(e, &ev);
    step_token(e, &ev);
    next_event(e, &ev);
    assert_int_equal(ev.type, ENGINE_EV_DONE);
    assert_int_equal(ev.reason, ENGINE_DONE_LENGTH);
    assert_int_equal(ev.n_gen, 3);
    assert_int_equal(ev.conv_id, 2);
    engine_shutdown(e);
}

/* Context shift keeps the rendered system prompt: the CONTEXT_SHIFT message
 * names how many tokens were kept. */
static void test_shift_keeps_system(void **state)
{
    (void)state;
    engine_params p = base_params(TESTDATA_REQUIRE("models/tiny-spm-q8_0.gguf"));
    p.n_ctx = 96;
    p.sampling.n_predict = 120;
    p.sampling.temp = 0;
    p.sampling.repeat_penalty = 1.2f;
    engine *e = start_loaded(&p, NULL);
    chat_message conv[2] = {{"system", "You are a pirate.", 0}, {"user", "Hi", 0}};
    engine_submit(e, 3, conv, 2);
    turn_log *t = malloc(sizeof *t);
    collect_turn(e, t);
    if (t->done.reason == ENGINE_DONE_EOG && t->n_shift == 0) {
        print_message("model ended its turn before the context filled\n");
    } else {
        assert_true(t->n_shift >= 1);
        for (int i = 1; i < t->n_tok; i++)
            assert_true(t->pos[i] == t->pos[i - 1] + 1 || t->pos[i] < t->pos[i - 1]);
        assert_true(t->pos[t->n_tok - 1] < 96);
    }
    bool shifted = t->n_shift > 0;
    free(t);
    /* the kept count: render the system prompt alone and compare */
    engine_submit(e, 3, conv, 2);
    engine_event ev;
    int kept = -1;
    do {
        next_event(e, &ev);
        if (ev.type == ENGINE_EV_CONTEXT_SHIFT && kept < 0) {
            const char *q = strstr(ev.message, "after the first ");
            assert_non_null(q);
            kept = atoi(q + strlen("after the first "));
        }
    } while (ev.type != ENGINE_EV_DONE);
    if (shifted) /* the same turn again (greedy) shifts again */
        assert_true(kept >= 0);
    if (kept >= 0) {
        /* "<s><|system|>\nYou are a pirate.</s>\n" is about a dozen tokens */
        print_message("kept %d tokens\n", kept);
        assert_true(kept > 5 && kept < 40);
    }
    engine_shutdown(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_info),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_generate_greedy),
        cmocka_unit_test(test_generate_sampled),
        cmocka_unit_test(test_stop_step_mode),
        cmocka_unit_test(test_stop_free_running),
        cmocka_unit_test(test_params_mid_generation),
        cmocka_unit_test(test_prefix_reuse_and_reset),
        cmocka_unit_test(test_quit_mid_generation),
        cmocka_unit_test(test_context_shift),
        cmocka_unit_test(test_no_shift_recurrent),
        cmocka_unit_test(test_stop_string),
        cmocka_unit_test(test_stop_string_own_sampling),
        cmocka_unit_test(test_template_model),
        cmocka_unit_test(test_force_template),
        cmocka_unit_test(test_submit_during_turn),
        cmocka_unit_test(test_shift_keeps_system),
    };
    return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
