/* Continuous batching (engine/engine_slots.h, serve --parallel N):
 * - the plan: generating slots one token each first, then prompts oldest
 *   first as far as the batch goes; an idle engine plans nothing;
 * - how much of a cached sequence a new prompt keeps (never its last
 *   token; a recurrent state all or nothing);
 * - an engine with n_parallel = 4 on stories260K: requests sent at once
 *   (more than the slots: the rest wait) each get their events tagged with
 *   their req_id, one DONE each, and the greedy tokens the same request
 *   gets alone (on prompts whose top-2 logit margins, checked here, leave
 *   the batch's rounding no say); STOP with a req_id ends that request
 *   alone; a seeded sampled request repeats itself; a prompt longer than a
 *   slot's context ends with CTX_FULL;
 * - a request alone in the slots is the single-sequence turn bit for bit
 *   (tokens, margins, text, the end at a full context, a stop string),
 *   Qwen3.5's recurrent state included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine.h"
#include "engine_events.h"
#include "engine_slots.h"
#include "testutil.h"

#define STORIES "models/stories260K.gguf"

static void test_plan_generating_first(void **state)
{
    (void)state;
    engine_slot_need need[4] = {
        {.busy = true, .n_left = 0, .order = 3},   /* generating */
        {.busy = true, .n_left = 100, .order = 2}, /* a prompt, newer */
        {.busy = true, .n_left = 50, .order = 1},  /* a prompt, older */
        {.busy = false, .n_left = 7, .order = 0},  /* free: ignored */
    };
    int32_t take[4];
    assert_int_equal(engine_slots_plan(need, 4, 64, take), 64);
    assert_int_equal(take[0], 1);
    assert_int_equal(take[2], 50); /* the older prompt first, whole */
    assert_int_equal(take[1], 13); /* the newer one: what is left */
    assert_int_equal(take[3], 0);
}

static void test_plan_full_batch(void **state)
{
    (void)state;
    /* four replies fill a batch of 4: the prompt waits a step */
    engine_slot_need need[5] = {{true, 0, 0}, {true, 0, 1}, {true, 0, 2}, {true, 0, 3}, {true, 9, 4}};
    int32_t take[5];
    assert_int_equal(engine_slots_plan(need, 5, 4, take), 4);
    assert_int_equal(take[4], 0);
    /* a prompt alone takes the whole batch, cut to it */
    engine_slot_need one[2] = {{true, 1000, 0}, {false, 0, 0}};
    assert_int_equal(engine_slots_plan(one, 2, 512, take), 512);
    assert_int_equal(take[0], 512);
}

static void test_plan_idle(void **state)
{
    (void)state;
    engine_slot_need need[3] = {{false, 0, 0}, {false, 5, 1}, {false, 0, 2}};
    int32_t take[3] = {9, 9, 9};
    assert_int_equal(engine_slots_plan(need, 3, 512, take), 0);
    assert_int_equal(take[0] + take[1] + take[2], 0);
}

static void test_keep(void **state)
{
    (void)state;
    assert_int_equal(engine_slots_keep(5, 5, 9, true), 4); /* the whole prompt cached: its last token again */
    assert_int_equal(engine_slots_keep(3, 10, 9, true), 3); /* a prefix */
    assert_int_equal(engine_slots_keep(0, 10, 9, true), 0);
    assert_int_equal(engine_slots_keep(0, 1, 0, true), 0);
    assert_int_equal(engine_slots_keep(3, 10, 8, false), 0); /* a recurrent state cannot drop its last 5 */
    assert_int_equal(engine_slots_keep(3, 10, 3, false), 3); /* ... but may go on from where it is */
    assert_int_equal(engine_slots_keep(5, 5, 5, false), 0);  /* would drop its last token: whole */
}

/* The new request's slot: llama-server's get_available_slot (similarity
 * over 0.1 first, else least recently used, empty slots before cached
 * ones). The case that failed before: a 3-token shared template head (6 %
 * of the prompt) took slot 0's cached conversation while slot 1 was empty. */
static void test_choose(void **state)
{
    (void)state;
    /* busy, held, common, last_used */
    engine_slot_cand head[2] = {{false, 40, 3, 0}, {false, 0, 0, 0}};
    assert_int_equal(engine_slots_choose(head, 2, 50), 1);
    engine_slot_cand ext[3] = {{false, 40, 40, 0}, {false, 30, 20, 1}, {false, 0, 0, 0}};
    assert_int_equal(engine_slots_choose(ext, 3, 50), 0); /* 0.8 beats 0.4 */
    ext[0].busy = true;
    assert_int_equal(engine_slots_choose(ext, 3, 50), 1); /* busy slots are never taken */
    engine_slot_cand edge[2] = {{false, 40, 5, 0}, {false, 40, 6, 1}};
    assert_int_equal(engine_slots_choose(edge, 2, 50), 1); /* 0.12 > 0.1; 0.1 is not over it */
    edge[1].common = 5;
    assert_int_equal(engine_slots_choose(edge, 2, 50), 0); /* both 0.1: least recently used */
    engine_slot_cand lru[3] = {{false, 9, 0, 7}, {false, 9, 0, 2}, {false, 9, 0, 5}};
    assert_int_equal(engine_slots_choose(lru, 3, 50), 1);
    engine_slot_cand empties[3] = {{false, 0, 0, 0}, {false, 9, 0, 0}, {false, 0, 0, 0}};
    assert_int_equal(engine_slots_choose(empties, 3, 50), 0); /* of equals the lowest id */
    engine_slot_cand none[2] = {{true, 0, 0, 0}, {true, 9, 9, 0}};
    assert_int_equal(engine_slots_choose(none, 2, 50), -1);
}

/* ---- an engine with slots ------------------------------------------------- */

#define NREQ 6
#define NGEN 10

typedef struct reply {
    int32_t n, tok[512];
    float margin[512]; /* top-1 minus top-2 logit at each step */
    int n_done;
    engine_event done;
    char text[4096]; /* the TOKEN events' text, then the DONE's rest */
    size_t len;
} reply;

static engine *start_model(const char *path, int32_t n_parallel, uint32_t n_ctx)
{
    engine_params p = engine_default_params();
    p.model_path = path;
    p.n_ctx = n_ctx;
    p.context_shift = false; /* as serve runs it */
    p.n_threads = 1;
    p.n_parallel = n_parallel;
    char err[256];
    engine *e = engine_start(&p, err, sizeof err);
    if (!e)
        fail_msg("engine_start: %s", err);
    engine_event ev;
    for (;;) {
        next_event(e, &ev);
        if (ev.type == ENGINE_EV_LOADED)
            break;
        if (ev.type == ENGINE_EV_ERROR)
            fail_msg("load: %s", ev.message);
    }
    return e;
}

static engine *start_slots(int32_t n_parallel)
{
    return start_model(TESTDATA_REQUIRE(STORIES), n_parallel, 128);
}

static const char *stop_string; /* submit's stop string, NULL: none */

static void submit(engine *e, int32_t req_id, const char *text, float temp, uint64_t seed, int32_t n_predict)
{
    chat_message m = {.role = "user", .content = text};
    engine_cmd c = {.type = ENGINE_CMD_SUBMIT,
                    .name = strdup("raw"),
                    .messages = &m,
                    .n_messages = 1,
                    .req_id = req_id,
                    .own_sampling = true};
    c.sampling = sampler_default_params();
    c.sampling.temp = temp;
    c.sampling.seed = seed;
    c.sampling.seed_set = true;
    c.sampling.n_predict = n_predict;
    c.sampling.n_top = 2;
    if (stop_string) {
        c.sampling.n_stop = 1;
        snprintf(c.sampling.stop[0], sizeof c.sampling.stop[0], "%s", stop_string);
    }
    engine_send(e, &c);
}

/* Events until every one of ids[0, n) is DONE; r[i] gets ids[i]'s. */
static void collect(engine *e, const int32_t *ids, int n, reply *r)
{
    memset(r, 0, (size_t)n * sizeof *r);
    int left = n;
    while (left > 0) {
        engine_event ev;
        next_event(e, &ev);
        int i = 0;
        while (i < n && ids[i] != ev.req_id)
            i++;
        if (ev.type == ENGINE_EV_ERROR)
            continue; /* the DONE that follows carries it */
        assert_true(i < n);
        if (ev.type == ENGINE_EV_TOKEN) {
            assert_int_equal(r[i].n_done, 0);
            assert_true(r[i].n < 512);
            r[i].margin[r[i].n] = ev.n_top >= 2 ? ev.top[0].logit - ev.top[1].logit : 0;
            r[i].tok[r[i].n++] = ev.token;
        }
        if ((ev.type == ENGINE_EV_TOKEN || ev.type == ENGINE_EV_DONE) &&
            r[i].len + (size_t)ev.text_len < 4096) {
            memcpy(r[i].text + r[i].len, ev.text, (size_t)ev.text_len);
            r[i].len += (size_t)ev.text_len;
        }
        if (ev.type == ENGINE_EV_DONE) {
            r[i].n_done++;
            r[i].done = ev;
            left--;
        }
    }
}

static const char *const PROMPTS[NREQ] = {"Once upon a time", "The little dog",         "Tom and Sue went",
                                          "One day, a bird",  "Lily was happy because", "The sun was"};

static void test_engine_greedy_concurrent(void **state)
{
    (void)state;
    engine *e = start_slots(4);
    reply alone[NREQ], together[NREQ];
    for (int i = 0; i < NREQ; i++) { /* each alone in the batch: forward_eval's bits */
        int32_t id = 100 + i;
        submit(e, id, PROMPTS[i], 0.0f, 1, NGEN);
        collect(e, &id, 1, &alone[i]);
        assert_int_equal(alone[i].done.reason, ENGINE_DONE_LENGTH);
        assert_int_equal(alone[i].n, NGEN);
        for (int k = 0; k < NGEN; k++) /* wide enough that a batch's rounding cannot swap the top two */
            if (alone[i].margin[k] < 1e-3f)
                fail_msg("prompt %d step %d: top-2 margin %g too small for this test", i, k,
                         (double)alone[i].margin[k]);
    }
    int32_t ids[NREQ];
    for (int i = 0; i < NREQ; i++) { /* 6 at once into 4 slots: two wait */
        ids[i] = 200 + i;
        submit(e, ids[i], PROMPTS[i], 0.0f, 1, NGEN);
    }
    collect(e, ids, NREQ, together);
    for (int i = 0; i < NREQ; i++) {
        assert_int_equal(together[i].n_done, 1);
        assert_int_equal(together[i].done.reason, ENGINE_DONE_LENGTH);
        assert_int_equal(together[i].n, NGEN);
        assert_memory_equal(together[i].tok, alone[i].tok, NGEN * sizeof(int32_t));
    }
    engine_shutdown(e);
}

static void test_engine_stop_one(void **state)
{
    (void)state;
    engine *e = start_slots(4);
    int32_t ids[3] = {1, 2, 3};
    for (int i = 0; i < 3; i++)
        submit(e, ids[i], PROMPTS[i], 0.0f, 1, 60);
    /* request 2 stopped once it produced a token */
    reply r[3];
    memset(r, 0, sizeof r);
    int left = 3;
    bool sent = false;
    while (left > 0) {
        engine_event ev;
        next_event(e, &ev);
        if (ev.req_id < 1 || ev.req_id > 3)
            continue;
        reply *x = &r[ev.req_id - 1];
        if (ev.type == ENGINE_EV_TOKEN) {
            x->n++;
            if (ev.req_id == 2 && !sent) {
                engine_cmd c = {.type = ENGINE_CMD_STOP, .req_id = 2};
                engine_send(e, &c);
                sent = true;
            }
        } else if (ev.type == ENGINE_EV_DONE) {
            x->n_done++;
            x->done = ev;
            left--;
        }
    }
    assert_int_equal(r[1].done.reason, ENGINE_DONE_STOPPED);
    assert_true(r[1].n < 60);
    assert_int_equal(r[0].done.reason, ENGINE_DONE_LENGTH);
    assert_int_equal(r[0].n, 60);
    assert_int_equal(r[2].done.reason, ENGINE_DONE_LENGTH);
    assert_int_equal(r[2].n, 60);
    engine_shutdown(e);
}

static void test_engine_seeded_repeats(void **state)
{
    (void)state;
    engine *e = start_slots(2);
    reply a, b;
    int32_t id = 7;
    submit(e, id, "Once upon a time", 1.0f, 1234, 30);
    collect(e, &id, 1, &a);
    id = 8;
    submit(e, id, "Once upon a time", 1.0f, 1234, 30);
    collect(e, &id, 1, &b);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.tok, b.tok, (size_t)a.n * sizeof(int32_t));
    engine_shutdown(e);
}

static void test_engine_too_long(void **state)
{
    (void)state;
    engine *e = start_slots(2);
    char text[4096] = "";
    for (int i = 0; i < 100; i++)
        strcat(text, "The little dog ran. ");
    reply r;
    int32_t id = 9;
    submit(e, id, text, 0.0f, 1, 5);
    collect(e, &id, 1, &r);
    assert_int_equal(r.done.reason, ENGINE_DONE_CTX_FULL);
    assert_int_equal(r.n, 0);
    /* the slot is free again: a short one runs */
    id = 10;
    submit(e, id, "The sun was", 0.0f, 1, 5);
    collect(e, &id, 1, &r);
    assert_int_equal(r.done.reason, ENGINE_DONE_LENGTH);
    assert_int_equal(r.n, 5);
    engine_shutdown(e);
}

/* A request alone in the slots' batch is today's single-sequence turn, bit for
 * bit: the same greedy tokens at the same positions, the same end at a full
 * context (32 tokens), also for a second request that extends the first's
 * conversation (prefix reuse; on Qwen3.5's recurrent state, kept whole). */
static void same_as_single(const char *rel)
{
    const char *path = TESTDATA_REQUIRE(rel);
    const char *first = "Once upon a time";
    const char *second = "Once upon a time, there was a little";
    reply one[2], par[2];
    for (int k = 0; k < 2; k++) {
        engine *e = start_model(path, k == 0 ? 1 : 3, 32);
        reply *r = k == 0 ? one : par;
        int32_t id = 1;
        submit(e, id, first, 0.0f, 1, 100);
        collect(e, &id, 1, &r[0]);
        id = 2;
        submit(e, id, second, 0.0f, 1, 100);
        collect(e, &id, 1, &r[1]);
        engine_shutdown(e);
    }
    for (int i = 0; i < 2; i++) {
        assert_int_equal(par[i].done.reason, one[i].done.reason);
        assert_int_equal(par[i].n, one[i].n);
        assert_memory_equal(par[i].tok, one[i].tok, (size_t)one[i].n * sizeof(int32_t));
        assert_memory_equal(par[i].margin, one[i].margin, (size_t)one[i].n * sizeof(float));
        assert_int_equal(par[i].done.n_past, one[i].done.n_past);
        assert_int_equal(par[i].len, one[i].len);
        assert_memory_equal(par[i].text, one[i].text, one[i].len);
    }
    assert_true(one[0].done.reason == ENGINE_DONE_CTX_FULL || one[0].done.reason == ENGINE_DONE_EOG);
}

static void test_alone_is_single_llama(void **state)
{
    (void)state;
    same_as_single(STORIES);
}

static void test_alone_is_single_recurrent(void **state)
{
    (void)state;
    same_as_single("families2026/models/qwen35-mini-q8_0.gguf");
}

/* A stop string ends a slot's reply as it ends the single-sequence turn:
 * the same text (the stop string left out, nothing held back lost). */
static void test_stop_string_as_single(void **state)
{
    (void)state;
    reply r[2];
    stop_string = "Lily";
    for (int k = 0; k < 2; k++) {
        engine *e = start_model(TESTDATA_REQUIRE(STORIES), k == 0 ? 1 : 2, 128);
        int32_t id = 1;
        submit(e, id, "Once upon a time", 0.0f, 1, 40);
        collect(e, &id, 1, &r[k]);
        engine_shutdown(e);
    }
    stop_string = NULL;
    assert_int_equal(r[0].done.reason, ENGINE_DONE_STOP_STRING);
    assert_int_equal(r[1].done.reason, ENGINE_DONE_STOP_STRING);
    assert_int_equal(r[1].len, r[0].len);
    assert_memory_equal(r[1].text, r[0].text, r[0].len);
    assert_null(memmem(r[1].text, r[1].len, "Lily", 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_generating_first),
        cmocka_unit_test(test_plan_full_batch),
        cmocka_unit_test(test_plan_idle),
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_choose),
        cmocka_unit_test(test_engine_greedy_concurrent),
        cmocka_unit_test(test_engine_stop_one),
        cmocka_unit_test(test_engine_seeded_repeats),
        cmocka_unit_test(test_engine_too_long),
        cmocka_unit_test(test_alone_is_single_llama),
        cmocka_unit_test(test_alone_is_single_recurrent),
        cmocka_unit_test(test_stop_string_as_single),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
