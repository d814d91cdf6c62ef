/* The remote backend (engine/remote/) driven through the engine interface
 * against tests/tools/mock_openai.py on loopback: tokens and the server's
 * top-k arrive as TOKEN events, the panel's parameters are in the request
 * body, each failure (connection refused, DNS, TLS, 401, 404, 429, 5xx, a
 * timeout, an error event, a stream cut mid-reply) gives its one-line
 * message and a DONE with the partial text, STOP closes the stream, a
 * branch is an assistant prefix, what needs the local engine is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>

#include "engine.h"
#include "remote/remote.h"
#include "testutil.h"

static pid_t mock_pid, mock2_pid; /* the second: test_server_comes_back's (killed at teardown too, if it failed) */
static int mock_port;
static char base_url[64];

/* Starts the mock on port (0: a free one); its port, 0 on failure. */
static int spawn_mock(int port, pid_t *pid)
{
    int fd[2];
    if (pipe(fd) != 0)
        return 0;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    *pid = fork();
    if (*pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execlp("python3", "python3", "tests/tools/mock_openai.py", "--kind", "llamacpp", "--port", ps, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char line[32] = "";
    size_t n = 0;
    struct pollfd p = {fd[0], POLLIN, 0};
    while (n < sizeof line - 1 && poll(&p, 1, 30000) > 0) {
        ssize_t r = read(fd[0], line + n, 1);
        if (r <= 0 || line[n] == '\n')
            break;
        n++;
    }
    close(fd[0]);
    return atoi(line);
}

static int start_mock(void **state)
{
    (void)state;
    mock_port = spawn_mock(0, &mock_pid);
    snprintf(base_url, sizeof base_url, "http://127.0.0.1:%d", mock_port);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return mock_port > 0 ? 0 : -1;
}

static int stop_mock(void **state)
{
    (void)state;
    if (mock_pid > 0) {
        kill(mock_pid, SIGTERM);
        waitpid(mock_pid, NULL, 0);
    }
    if (mock2_pid > 0) {
        kill(mock2_pid, SIGTERM);
        waitpid(mock2_pid, NULL, 0);
    }
    return 0;
}

static engine *start_at(const char *url, const char *model, int timeout_s, const char *key)
{
    engine_params p = engine_default_params();
    p.remote_url = url;
    p.remote_model = model;
    p.remote_timeout_s = timeout_s;
    p.remote_api_key = key;
    char err[256];
    engine *e = engine_start(&p, err, sizeof err);
    assert_non_null(e);
    return e;
}

static bool next_event(engine *e, engine_event *ev, int ms)
{
    for (int waited = 0; waited <= ms; waited += 20) {
        if (engine_poll(e, ev))
            return true;
        struct pollfd p = {engine_event_fd(e), POLLIN, 0};
        poll(&p, 1, 20);
    }
    return false;
}

static void wait_type(engine *e, engine_event *ev, enum engine_event_type t, int ms)
{
    for (;;) {
        if (!next_event(e, ev, ms))
            fail_msg("no event %d within %d ms", t, ms);
        if (ev->type == t)
            return;
    }
}

typedef struct turn_log {
    char text[4096];
    int n_tokens;
    engine_event first, done;
    char errors[1024];
} turn_log;

/* Sends one user message and reads events until DONE. */
static void run_turn(engine *e, engine_cmd *cmd, turn_log *t, int ms)
{
    memset(t, 0, sizeof *t);
    chat_message msg = {"user", "Say hello", 0};
    if (!cmd->messages) {
        cmd->messages = &msg;
        cmd->n_messages = 1;
    }
    cmd->type = ENGINE_CMD_SUBMIT;
    cmd->conv_id = 1;
    cmd->req_id = 7;
    engine_send(e, cmd);
    engine_event *ev = malloc(sizeof *ev);
    for (;;) {
        if (!next_event(e, ev, ms))
            fail_msg("no DONE within %d ms (text so far '%s')", ms, t->text);
        if (ev->type == ENGINE_EV_TOKEN) {
            assert_int_equal(ev->req_id, 7);
            if (!t->n_tokens)
                t->first = *ev;
            t->n_tokens++;
            strncat(t->text, ev->text, sizeof t->text - strlen(t->text) - 1);
        } else if (ev->type == ENGINE_EV_ERROR) {
            strncat(t->errors, ev->message, sizeof t->errors - strlen(t->errors) - 1);
        } else if (ev->type == ENGINE_EV_DONE) {
            t->done = *ev;
            strncat(t->text, ev->text, sizeof t->text - strlen(t->text) - 1);
            break;
        }
    }
    free(ev);
}

static size_t collect(char *p, size_t s, size_t n, void *u)
{
    strncat(u, p, 65535 - strlen(u) < s * n ? 65535 - strlen(u) : s * n);
    return s * n;
}

/* The mock's record of the last request (GET /mock/last or /mock/headers). */
static cJSON *mock_get(const char *what)
{
    static char body[65536];
    body[0] = 0;
    char url[128];
    snprintf(url, sizeof url, "%s/mock/%s", base_url, what);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_cleanup(c);
    cJSON *j = cJSON_Parse(body);
    assert_non_null(j);
    return j;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        fail_msg("no number '%s'", k);
    return v->valuedouble;
}

static void test_handshake(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "ok", 5, NULL);
    engine_event ev;
    wait_type(e, &ev, ENGINE_EV_LOADED, 20000);
    assert_string_equal(ev.info.remote_kind, "llama-server");
    assert_string_equal(ev.info.name, "ok");
    assert_int_equal(ev.info.n_ctx, 2048); /* /props' n_ctx */
    assert_non_null(strstr(ev.info.remote_models, "ok reasoning crlf cut hang"));
    assert_int_equal(ev.info.remote_max_top, 20);
    engine_shutdown(e);
}

static void test_tokens_and_topk(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "ok", 5, NULL);
    engine_cmd c = {0};
    turn_log t;
    run_turn(e, &c, &t, 20000);
    assert_string_equal(t.text, "Hello, world!");
    assert_int_equal(t.n_tokens, 4);
    assert_int_equal(t.done.reason, ENGINE_DONE_EOG);
    assert_int_equal(t.done.n_gen, 4);
    assert_int_equal(t.done.n_prompt, 12);
    assert_string_equal(t.first.text, "Hello");
    assert_true(fabsf(t.first.p_raw - expf(-0.1f)) < 1e-6f);
    assert_int_equal(t.first.n_top, 3);
    assert_string_equal(t.first.top[1].text, "Hi");
    assert_true(fabsf(t.first.top[1].p_raw - expf(-2.5f)) < 1e-6f);
    assert_string_equal(t.errors, "");
    /* the same stream with CRLF, comments and cuts inside lines */
    engine_load(e, "crlf");
    run_turn(e, &c, &t, 20000);
    assert_string_equal(t.text, "Hello, world!");
    assert_int_equal(t.first.n_top, 3);
    assert_int_equal(t.done.reason, ENGINE_DONE_EOG);
    engine_shutdown(e);
}

static void test_request_body(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "ok", 5, "sekret-key");
    engine_cmd c = {0};
    c.own_sampling = true;
    c.sampling = sampler_default_params();
    c.sampling.temp = 0.3f;
    c.sampling.top_k = 7;
    c.sampling.top_p = 0.9f;
    c.sampling.min_p = 0.1f;
    c.sampling.typical_p = 0.8f;
    c.sampling.repeat_penalty = 1.1f;
    c.sampling.repeat_last_n = 32;
    c.sampling.presence_penalty = 0.5f;
    c.sampling.frequency_penalty = 0.25f;
    c.sampling.seed = 42;
    c.sampling.seed_set = true;
    c.sampling.n_predict = 50;
    c.sampling.n_top = 40; /* over the server's 20 */
    turn_log t;
    run_turn(e, &c, &t, 20000);
    cJSON *b = mock_get("last");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "stream")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "logprobs")));
    assert_int_equal((int)num(b, "top_logprobs"), 20);
    assert_true(fabs(num(b, "temperature") - 0.3) < 1e-9);
    assert_int_equal((int)num(b, "top_k"), 7);
    assert_true(fabs(num(b, "top_p") - 0.9) < 1e-9);
    assert_true(fabs(num(b, "min_p") - 0.1) < 1e-9);
    assert_true(fabs(num(b, "typical_p") - 0.8) < 1e-9);
    assert_true(fabs(num(b, "repeat_penalty") - 1.1) < 1e-9);
    assert_int_equal((int)num(b, "repeat_last_n"), 32);
    assert_true(fabs(num(b, "presence_penalty") - 0.5) < 1e-9);
    assert_true(fabs(num(b, "frequency_penalty") - 0.25) < 1e-9);
    assert_int_equal((int)num(b, "seed"), 42);
    assert_int_equal((int)num(b, "max_tokens"), 50);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(b, "model")), "ok");
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "messages"), 0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")), "Say hello");
    cJSON_Delete(b);
    cJSON *h = mock_get("headers");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(h, "Authorization")), "Bearer sekret-key");
    cJSON_Delete(h);
    engine_shutdown(e);

    /* by kind: vLLM's names, OpenAI/ollama without llama.cpp's samplers */
    sampler_params sp = c.sampling;
    chat_message msg = {"user", "x", 0};
    char *s = remote_body(REMOTE_VLLM, "m", &msg, 1, NULL, &sp, false);
    assert_non_null(strstr(s, "\"repetition_penalty\":1.1"));
    assert_null(strstr(s, "typical_p"));
    assert_null(strstr(s, "repeat_last_n"));
    free(s);
    s = remote_body(REMOTE_OLLAMA, "m", &msg, 1, NULL, &sp, false);
    assert_null(strstr(s, "top_k"));
    assert_null(strstr(s, "min_p"));
    assert_non_null(strstr(s, "\"seed\":42"));
    free(s);
    assert_non_null(strstr(remote_ignored_params(REMOTE_VLLM), "typical_p repeat_last_n"));
}

/* The samplers outside the panel (/set mirostat 2, top_n_sigma, XTC, DRY)
 * go to a server that runs them when set (they were never sent: /set
 * answered "mirostat = 2" and the server sampled without it); a kind that
 * does not take one names it among its ignored parameters. */
static void test_further_samplers(void **state)
{
    (void)state;
    sampler_params sp = sampler_default_params();
    chat_message msg = {"user", "x", 0};
    char *s = remote_body(REMOTE_LLAMA, "m", &msg, 1, NULL, &sp, false);
    assert_null(strstr(s, "mirostat")); /* defaults: not sent */
    assert_null(strstr(s, "top_n_sigma"));
    assert_null(strstr(s, "xtc_"));
    assert_null(strstr(s, "dry_"));
    free(s);
    sp.mirostat = 2;
    sp.mirostat_tau = 3.0f;
    sp.top_n_sigma = 1.5f;
    sp.xtc_probability = 0.5f;
    sp.dry_multiplier = 0.8f;
    s = remote_body(REMOTE_LLAMA, "m", &msg, 1, NULL, &sp, false);
    assert_non_null(strstr(s, "\"mirostat\":2"));
    assert_non_null(strstr(s, "\"mirostat_tau\":3"));
    assert_non_null(strstr(s, "\"mirostat_eta\":0.1"));
    assert_non_null(strstr(s, "\"top_n_sigma\":1.5"));
    assert_non_null(strstr(s, "\"xtc_probability\":0.5"));
    assert_non_null(strstr(s, "\"xtc_threshold\":0.1"));
    assert_non_null(strstr(s, "\"dry_multiplier\":0.8"));
    assert_non_null(strstr(s, "\"dry_base\":1.75"));
    free(s);
    s = remote_body(REMOTE_TOKSCOPE, "m", &msg, 1, NULL, &sp, false);
    assert_non_null(strstr(s, "\"mirostat\":2"));
    assert_non_null(strstr(s, "\"top_n_sigma\":1.5"));
    assert_non_null(strstr(s, "\"xtc_probability\":0.5"));
    assert_null(strstr(s, "dry_")); /* tokscope serve refuses DRY */
    free(s);
    assert_non_null(strstr(remote_ignored_params(REMOTE_TOKSCOPE), "dry_multiplier"));
    s = remote_body(REMOTE_VLLM, "m", &msg, 1, NULL, &sp, false);
    assert_null(strstr(s, "mirostat"));
    assert_null(strstr(s, "top_n_sigma"));
    free(s);
    assert_non_null(strstr(remote_ignored_params(REMOTE_VLLM), "mirostat"));
    assert_non_null(strstr(remote_ignored_params(REMOTE_OLLAMA), "xtc_probability"));
    assert_null(strstr(remote_ignored_params(REMOTE_LLAMA), "mirostat"));
}

static void test_reasoning(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "reasoning", 5, NULL);
    engine_cmd c = {0};
    turn_log t;
    run_turn(e, &c, &t, 20000);
    assert_string_equal(t.text, "<think>\nLet me think.\n</think>\n\nHello, world!");
    assert_int_equal(t.done.reason, ENGINE_DONE_EOG);
    engine_shutdown(e);
}

/* scenario, expected reason, a piece of the message, the text kept */
static const struct failure {
    const char *model;
    enum engine_done_reason reason;
    const char *msg, *text;
} failures[] = {
    {"cut", ENGINE_DONE_CUT, "connection lost", "Hello,"},
    {"error_event", ENGINE_DONE_CUT, "slot unavailable", "Hello"},
    {"hang", ENGINE_DONE_CUT, "timeout", "Hello,"},
    {"http401", ENGINE_DONE_ERROR, "HTTP 401 unauthorized", ""},
    {"http404", ENGINE_DONE_ERROR, "HTTP 404 not found", ""},
    {"http429", ENGINE_DONE_ERROR, "HTTP 429 rate limited", ""},
    {"http500", ENGINE_DONE_ERROR, "HTTP 500 server error: Internal error", ""},
    {"http503", ENGINE_DONE_ERROR, "HTTP 503 server error", ""},
};

static void test_failures(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof failures / sizeof failures[0]; i++) {
        const struct failure *f = &failures[i];
        engine *e = start_at(base_url, f->model, 2, NULL);
        engine_cmd c = {0};
        turn_log t;
        run_turn(e, &c, &t, 20000);
        if (t.done.reason != f->reason || !strstr(t.done.message, f->msg) || strcmp(t.text, f->text) != 0)
            fail_msg("%s: reason %d '%s' text '%s'", f->model, t.done.reason, t.done.message, t.text);
        assert_null(strchr(t.done.message, '\n'));
        if (f->reason == ENGINE_DONE_CUT)
            assert_non_null(strstr(t.done.message, "partial reply kept"));
        /* retry works: the same engine, a good model */
        engine_load(e, "ok");
        run_turn(e, &c, &t, 20000);
        assert_string_equal(t.text, "Hello, world!");
        engine_shutdown(e);
    }
}

static void test_unreachable(void **state)
{
    (void)state;
    /* a port nobody listens on: a socket bound and closed */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(s, (struct sockaddr *)&a, &al);
    close(s);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    const struct {
        const char *url, *msg;
    } cases[] = {
        {url, "cannot connect"},
        {"http://tokscope-test.invalid", "cannot resolve"},
        {NULL, "TLS"}, /* https to the mock, which speaks plain HTTP */
    };
    char tls[64];
    snprintf(tls, sizeof tls, "https://127.0.0.1:%d", mock_port);
    for (size_t i = 0; i < 3; i++) {
        engine *e = start_at(cases[i].url ? cases[i].url : tls, "ok", 3, NULL);
        engine_event ev;
        wait_type(e, &ev, ENGINE_EV_LOADED, 20000); /* the UI stays usable */
        wait_type(e, &ev, ENGINE_EV_ERROR, 20000);
        if (!strstr(ev.message, cases[i].msg))
            fail_msg("%s: '%s'", cases[i].msg, ev.message);
        engine_cmd c = {0};
        turn_log t;
        run_turn(e, &c, &t, 20000);
        assert_int_equal(t.done.reason, ENGINE_DONE_ERROR);
        if (!strstr(t.done.message, cases[i].msg))
            fail_msg("%s: '%s'", cases[i].msg, t.done.message);
        engine_shutdown(e);
    }
}

/* A port nobody listens on (bound, then closed). */
static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(s, (struct sockaddr *)&a, &al);
    close(s);
    return ntohs(a.sin_port);
}

/* The server is down at start and comes up later: the next message asks it
 * again, and the turn's events carry no stale error of the handshake. */
static void test_server_comes_back(void **state)
{
    (void)state;
    int port = free_port();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    engine *e = start_at(url, "ok", 3, NULL);
    engine_event ev;
    wait_type(e, &ev, ENGINE_EV_LOADED, 20000);
    wait_type(e, &ev, ENGINE_EV_ERROR, 20000);
    assert_non_null(strstr(ev.message, "cannot connect"));
    /* still down: the turn ends with one DONE that says so, no second ERROR */
    engine_cmd d = {0};
    turn_log t0;
    run_turn(e, &d, &t0, 20000);
    assert_int_equal(t0.done.reason, ENGINE_DONE_ERROR);
    assert_non_null(strstr(t0.done.message, "cannot connect"));
    assert_string_equal(t0.errors, "");
    assert_int_equal(spawn_mock(port, &mock2_pid), port);
    engine_cmd c = {0};
    turn_log t;
    run_turn(e, &c, &t, 20000);
    assert_string_equal(t.text, "Hello, world!");
    assert_string_equal(t.errors, "");
    assert_int_equal(t.done.reason, ENGINE_DONE_EOG);
    engine_shutdown(e);
    kill(mock2_pid, SIGTERM);
    waitpid(mock2_pid, NULL, 0);
    mock2_pid = 0;
}

static void test_stop_closes_stream(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "slow", 5, NULL);
    chat_message msg = {"user", "count", 0};
    engine_cmd c = {.type = ENGINE_CMD_SUBMIT, .messages = &msg, .n_messages = 1, .conv_id = 1, .req_id = 3};
    engine_send(e, &c);
    engine_event ev;
    wait_type(e, &ev, ENGINE_EV_TOKEN, 20000);
    engine_stop(e);
    wait_type(e, &ev, ENGINE_EV_DONE, 2000); /* at once, not after the 40 tokens (12 s) */
    assert_int_equal(ev.reason, ENGINE_DONE_STOPPED);
    assert_true(ev.n_gen < 10);
    engine_shutdown(e);
}

static void test_branch_prefix(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "ok", 5, NULL);
    engine_cmd c = {0};
    turn_log t;
    run_turn(e, &c, &t, 20000);
    /* the first token, then the second step's alternative " there" */
    int32_t toks[2] = {t.first.token, -1};
    assert_string_equal(t.first.top[2].text, "Hey");
    /* ids of the second step's candidates come with its TOKEN event: find
     * " there" by running a turn and reading its events */
    chat_message msg = {"user", "Say hello", 0};
    engine_cmd s = {.type = ENGINE_CMD_SUBMIT, .messages = &msg, .n_messages = 1, .conv_id = 1, .req_id = 9};
    engine_send(e, &s);
    engine_event ev;
    wait_type(e, &ev, ENGINE_EV_TOKEN, 20000);
    wait_type(e, &ev, ENGINE_EV_TOKEN, 20000);
    assert_string_equal(ev.top[2].text, " there");
    toks[1] = ev.top[2].id;
    wait_type(e, &ev, ENGINE_EV_DONE, 20000);
    engine_cmd b = {.tokens = toks, .n_tokens = 2, .reply_emitted = 5};
    run_turn(e, &b, &t, 20000);
    assert_string_equal(t.first.text, " there"); /* the branch's new token is shown */
    /* llama-server streams the prefix back at the start of its first delta
     * (seen on a real one, 34af94cd): not shown twice */
    assert_string_equal(t.text, " thereHello, world!");
    cJSON *body = mock_get("last");
    const cJSON *msgs = cJSON_GetObjectItem(body, "messages");
    const cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(last, "role")), "assistant");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(last, "content")), "Hello there");
    cJSON_Delete(body);
    engine_shutdown(e);
}

/* /probs post: llama-server is asked for post_sampling_probs and its
 * "prob"/"top_probs" fill the post column (raw: -1, not given); back to raw
 * from the next request on */
static void test_post_probs(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "ok", 5, NULL);
    engine_cmd c = {0};
    turn_log t;
    run_turn(e, &c, &t, 20000);
    cJSON *b = mock_get("last");
    assert_null(cJSON_GetObjectItem(b, "post_sampling_probs"));
    cJSON_Delete(b);
    assert_true(fabsf(t.first.p_raw - expf(-0.1f)) < 1e-6f);
    assert_true(t.first.p_post < 0);
    assert_true(t.first.top[1].p_post < 0);
    assert_true(t.first.entropy_raw > 0 && t.first.entropy_post < 0);

    engine_set_remote_probs(e, true);
    run_turn(e, &c, &t, 20000);
    assert_string_equal(t.text, "Hello, world!");
    b = mock_get("last");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "post_sampling_probs")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "logprobs")));
    cJSON_Delete(b);
    assert_true(fabsf(t.first.p_post - 0.904837f) < 1e-6f); /* the mock's round(exp(-0.1), 6) */
    assert_true(t.first.p_raw < 0);
    assert_int_equal(t.first.n_top, 3);
    assert_string_equal(t.first.top[1].text, "Hi");
    assert_true(fabsf(t.first.top[1].p_post - 0.082085f) < 1e-6f);
    assert_true(t.first.top[1].p_raw < 0);
    assert_true(t.first.entropy_post > 0 && t.first.entropy_raw < 0);

    engine_set_remote_probs(e, false);
    run_turn(e, &c, &t, 20000);
    b = mock_get("last");
    assert_null(cJSON_GetObjectItem(b, "post_sampling_probs"));
    cJSON_Delete(b);
    assert_true(t.first.p_raw > 0 && t.first.p_post < 0);
    engine_shutdown(e);

    /* only llama-server knows the field */
    sampler_params sp = sampler_default_params();
    chat_message msg = {"user", "x", 0};
    char *s = remote_body(REMOTE_VLLM, "m", &msg, 1, NULL, &sp, true);
    assert_null(strstr(s, "post_sampling_probs"));
    free(s);
    s = remote_body(REMOTE_LLAMA, "m", &msg, 1, NULL, &sp, true);
    assert_non_null(strstr(s, "\"post_sampling_probs\":true"));
    free(s);
}

/* llama-server's log(0) (the float's lowest): p 0 and a finite logit in
 * the TOKEN event, so that /save writes a number (cJSON writes -inf as
 * null, which /load refuses) */
static void test_log_zero(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "logzero", 5, NULL);
    engine_cmd c = {0};
    turn_log t;
    run_turn(e, &c, &t, 20000);
    assert_string_equal(t.text, "\n");
    assert_int_equal(t.first.n_top, 3);
    assert_true(t.first.p_raw == 1.0f);
    assert_true(t.first.top[1].p_raw == 0.0f);
    assert_true(isfinite(t.first.top[1].logit) && t.first.top[1].logit < -1e30f);
    assert_true(isfinite(t.first.entropy_raw));
    engine_shutdown(e);
}

static void test_refusals(void **state)
{
    (void)state;
    engine *e = start_at(base_url, "ok", 5, NULL);
    engine_event ev;
    wait_type(e, &ev, ENGINE_EV_LOADED, 20000);
    engine_set_step(e, true);
    wait_type(e, &ev, ENGINE_EV_ERROR, 5000);
    assert_non_null(strstr(ev.message, "step mode needs the local engine"));
    engine_cmd l = {.type = ENGINE_CMD_LENS};
    engine_send(e, &l);
    wait_type(e, &ev, ENGINE_EV_ERROR, 5000);
    assert_non_null(strstr(ev.message, "logit lens needs the local engine"));
    engine_shutdown(e);
    char err[256];
    engine_params p = engine_default_params();
    p.remote_url = "ftp://x";
    assert_null(engine_start(&p, err, sizeof err));
    assert_non_null(strstr(err, "not an http"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake),          cmocka_unit_test(test_tokens_and_topk),
        cmocka_unit_test(test_request_body),       cmocka_unit_test(test_reasoning),
        cmocka_unit_test(test_failures),           cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_server_comes_back),
        cmocka_unit_test(test_stop_closes_stream), cmocka_unit_test(test_branch_prefix),
        cmocka_unit_test(test_refusals),           cmocka_unit_test(test_post_probs),
        cmocka_unit_test(test_log_zero),           cmocka_unit_test(test_further_samplers),
    };
    return cmocka_run_group_tests(tests, start_mock, stop_mock);
}
