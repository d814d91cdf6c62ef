/* The SSE reader (engine/remote/sse.c) and the chunk parser
 * (remote_json.c) on transcripts in the shapes llama-server, vLLM and
 * ollama document for their OpenAI-compatible streams; every transcript is
 * also fed cut at every byte and one byte at a time, which must not change
 * the events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "remote/remote.h"
#include "remote/sse.h"
#include "testutil.h"

typedef struct got {
    char log[16384]; /* "event|data\n" per event */
    size_t n;
    int n_events;
} got;

static bool collect(void *user, const char *event, const char *data, size_t n)
{
    got *g = user;
    g->n += (size_t)snprintf(g->log + g->n, sizeof g->log - g->n, "%s|%.*s\n", event, (int)n, data);
    g->n_events++;
    return true;
}

static void feed_whole(const char *s, got *g)
{
    sse_reader r;
    sse_init(&r);
    memset(g, 0, sizeof *g);
    assert_true(sse_feed(&r, s, strlen(s), collect, g));
    assert_true(sse_finish(&r));
    sse_free(&r);
}

/* The events do not depend on where the stream is cut. */
static void check_cuts(const char *s, const char *want)
{
    size_t n = strlen(s);
    for (size_t cut = 0; cut <= n; cut++) {
        sse_reader r;
        got g;
        memset(&g, 0, sizeof g);
        sse_init(&r);
        assert_true(sse_feed(&r, s, cut, collect, &g));
        assert_true(sse_feed(&r, s + cut, n - cut, collect, &g));
        sse_free(&r);
        if (strcmp(g.log, want) != 0)
            fail_msg("cut at %zu: got\n%s\nwant\n%s", cut, g.log, want);
    }
    sse_reader r;
    got g;
    memset(&g, 0, sizeof g);
    sse_init(&r);
    for (size_t i = 0; i < n; i++)
        assert_true(sse_feed(&r, s + i, 1, collect, &g));
    sse_free(&r);
    assert_string_equal(g.log, want);
}

static void test_basic_lines(void **state)
{
    (void)state;
    got g;
    const char *s = "data: one\n\ndata:two\n\ndata:  three\n\n";
    feed_whole(s, &g);
    /* one space after the colon goes, not two */
    assert_string_equal(g.log, "message|one\nmessage|two\nmessage| three\n");
    check_cuts(s, g.log);
}

static void test_multiline_comments_event_names(void **state)
{
    (void)state;
    got g;
    const char *s = ": this is a comment\n"
                    "event: delta\n"
                    "data: line 1\n"
                    "data: line 2\n"
                    "id: 7\n"
                    "retry: 1000\n"
                    "unknown: field\n"
                    "\n"
                    ":keep-alive\n\n"
                    "data\n\n"        /* a field without a colon: empty data */
                    "event: ping\n\n" /* no data: nothing dispatched, the name forgotten */
                    "data: after\n\n";
    feed_whole(s, &g);
    assert_string_equal(g.log, "delta|line 1\nline 2\nmessage|\nmessage|after\n");
    check_cuts(s, g.log);
}

static void test_crlf_and_cr(void **state)
{
    (void)state;
    got g;
    const char *s = "data: a\r\n\r\ndata: b\r\rdata: c\r\ndata: d\n\r\n";
    feed_whole(s, &g);
    assert_string_equal(g.log, "message|a\nmessage|b\nmessage|c\nd\n");
    check_cuts(s, g.log);
}

static void test_bom_and_unterminated(void **state)
{
    (void)state;
    got g;
    const char *s = "\xef\xbb\xbf"
                    "data: x\n\n";
    feed_whole(s, &g);
    assert_string_equal(g.log, "message|x\n");
    check_cuts(s, g.log);
    /* an event without its blank line is not dispatched, and finish says so */
    sse_reader r;
    sse_init(&r);
    memset(&g, 0, sizeof g);
    assert_true(sse_feed(&r, "data: half\n", 11, collect, &g));
    assert_int_equal(g.n_events, 0);
    assert_false(sse_finish(&r));
    sse_free(&r);
}

static void test_llama_server_error_line(void **state)
{
    (void)state;
    got g;
    /* llama-server streams an error as "error: {json}" */
    const char *s = "data: {\"choices\":[]}\n\n"
                    "error: {\"code\":500,\"message\":\"slot unavailable\",\"type\":\"server_error\"}\n\n";
    feed_whole(s, &g);
    assert_string_equal(g.log,
                        "message|{\"choices\":[]}\n"
                        "error|{\"code\":500,\"message\":\"slot unavailable\",\"type\":\"server_error\"}\n");
    check_cuts(s, g.log);
    char m[256];
    remote_error_message("{\"code\":500,\"message\":\"slot unavailable\"}", m, sizeof m);
    assert_string_equal(m, "slot unavailable");
    remote_error_message("{\"error\":{\"message\":\"Invalid API key\",\"code\":401}}", m, sizeof m);
    assert_string_equal(m, "Invalid API key");
    remote_error_message("{\"error\":\"model 'x' not found\"}", m, sizeof m); /* ollama */
    assert_string_equal(m, "model 'x' not found");
    remote_error_message("{\"object\":\"error\",\"message\":\"bad\\nrequest\",\"code\":400}", m,
                         sizeof m); /* vLLM */
    assert_string_equal(m, "bad request");
    remote_error_message("Bad Gateway\n", m, sizeof m);
    assert_string_equal(m, "Bad Gateway ");
    /* a real llama-server (34af94cd, -c 128) refusing a long prompt: HTTP 400 before any event */
    remote_error_message("{\"error\":{\"code\":400,\"message\":\"request (409 tokens) exceeds the available "
                         "context size (256 tokens), try increasing it\",\"type\":\"exceed_context_size_error\","
                         "\"n_prompt_tokens\":409,\"n_ctx\":256}}",
                         m, sizeof m);
    assert_string_equal(m, "request (409 tokens) exceeds the available context size (256 tokens), try increasing it");
}

static bool stop_after_one(void *user, const char *event, const char *data, size_t n)
{
    (void)event;
    (void)data;
    (void)n;
    (*(int *)user)++;
    return false;
}

static void test_stop_and_limits(void **state)
{
    (void)state;
    sse_reader r;
    sse_init(&r);
    int k = 0;
    assert_false(sse_feed(&r, "data: 1\n\ndata: 2\n\n", 18, stop_after_one, &k));
    assert_int_equal(k, 1);
    assert_true(r.stopped);
    sse_free(&r);
    /* an endless line is refused, not buffered without end */
    sse_init(&r);
    char *big = malloc(1 << 20);
    memset(big, 'x', 1 << 20);
    bool ok = true;
    for (int i = 0; i < 9 && ok; i++)
        ok = sse_feed(&r, big, 1 << 20, collect, NULL);
    assert_false(ok);
    assert_true(r.failed);
    sse_free(&r);
    free(big);
}

/* ---- chunk parsing ---- */

typedef struct pieces {
    char text[4096];
    size_t n;
    int n_pieces, n_reasoning, n_with_prob;
    int n_top_first;
    char top_first[64];
    float lp_first;
    bool post_first;
    float prob_first, top1_prob_first, top1_lp_first;
    char finish[32];
    char error[256];
    int n_prompt;
} pieces;

static void on_piece(void *user, const remote_piece *p, bool reasoning)
{
    pieces *q = user;
    if (reasoning)
        q->n_reasoning++;
    if (!q->n_pieces && p->has_prob) {
        q->lp_first = p->logprob;
        q->post_first = p->post;
        q->prob_first = p->prob;
        q->n_top_first = p->n_top;
        if (p->n_top > 1) {
            snprintf(q->top_first, sizeof q->top_first, "%s", p->top[1].text);
            q->top1_prob_first = p->top[1].prob;
            q->top1_lp_first = p->top[1].logprob;
        }
    }
    q->n_with_prob += p->has_prob;
    q->n += (size_t)snprintf(q->text + q->n, sizeof q->text - q->n, "%s%.*s|", reasoning ? "R:" : "",
                             (int)p->len, p->text);
    q->n_pieces++;
}
static void on_finish(void *user, const char *r)
{
    snprintf(((pieces *)user)->finish, 32, "%s", r);
}
static void on_usage(void *user, int32_t np, int32_t ng, double tps)
{
    (void)ng;
    (void)tps;
    ((pieces *)user)->n_prompt = np;
}
static void on_error(void *user, const char *m)
{
    snprintf(((pieces *)user)->error, 256, "%s", m);
}

static bool parse_event(void *user, const char *event, const char *data, size_t n)
{
    (void)event;
    if (!strcmp(data, "[DONE]"))
        return true;
    remote_chunk_cb cb = {user, on_piece, on_finish, on_usage, on_error};
    assert_true(remote_parse_chunk(data, n, &cb));
    return true;
}

static void parse_stream(const char *s, pieces *q)
{
    memset(q, 0, sizeof *q);
    q->n_prompt = -2;
    sse_reader r;
    sse_init(&r);
    assert_true(sse_feed(&r, s, strlen(s), parse_event, q));
    sse_free(&r);
}

/* llama-server (tools/server README: "stream": true with "logprobs"): one
 * token per chunk, logprobs.content with bytes and top_logprobs; a last
 * chunk with finish_reason and timings, then [DONE]. */
static void test_llama_server_transcript(void **state)
{
    (void)state;
    const char *s =
        "data: "
        "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":"
        "null}}],"
        "\"created\":1,\"id\":\"chatcmpl-x\",\"model\":\"gpt-3.5-turbo\",\"object\":\"chat.completion."
        "chunk\"}\n\n"
        "data: "
        "{\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"Hel\"},\"logprobs\":"
        "{\"content\":[{\"id\":9906,\"token\":\"Hel\",\"bytes\":[72,101,108],\"logprob\":-0.25,\"top_"
        "logprobs\":["
        "{\"id\":9906,\"token\":\"Hel\",\"bytes\":[72,101,108],\"logprob\":-0.25},"
        "{\"id\":13347,\"token\":\"Hi\",\"bytes\":[72,105],\"logprob\":-1.75}]}]}}],\"object\":\"chat."
        "completion.chunk\"}\n\n"
        "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"lo "
        "\xc3\xa9\"},\"logprobs\":"
        "{\"content\":[{\"id\":385,\"token\":\"lo\",\"bytes\":[108,111],\"logprob\":-0.5,\"top_logprobs\":[]}"
        ","
        "{\"id\":1,\"token\":\" "
        "\xc3\xa9\",\"bytes\":[32,195,169],\"logprob\":-0.01,\"top_logprobs\":[]}]}}]}\n\n"
        "data: "
        "{\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],\"timings\":{\"prompt_n\":7,"
        "\"prompt_per_second\":120.5,\"predicted_n\":3}}\n\n"
        "data: [DONE]\n\n";
    pieces q;
    parse_stream(s, &q);
    assert_string_equal(q.text, "Hel|lo| \xc3\xa9|");
    assert_int_equal(q.n_with_prob, 3);
    assert_true(fabsf(q.lp_first + 0.25f) < 1e-6f);
    assert_int_equal(q.n_top_first, 2);
    assert_string_equal(q.top_first, "Hi");
    assert_string_equal(q.finish, "stop");
    assert_int_equal(q.n_prompt, 7);
}

/* vLLM (OpenAI's shape, CRLF-free; reasoning parsers stream
 * "reasoning_content"; usage in a last chunk with empty choices). */
static void test_vllm_transcript(void **state)
{
    (void)state;
    const char *s =
        "data: "
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"Qwen/"
        "Qwen3-8B\","
        "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
        "\"finish_reason\":null}]}\n\n"
        "data: "
        "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Hmm\"},\"logprobs\":{\"content\":["
        "{\"token\":\"Hmm\",\"logprob\":-0.9,\"bytes\":[72,109,109],\"top_logprobs\":[{\"token\":\"Hmm\","
        "\"logprob\":-0.9,\"bytes\":[72,109,109]}]}]},\"finish_reason\":null}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Yes\"},\"logprobs\":{\"content\":["
        "{\"token\":\"Yes\",\"logprob\":-0.1,\"bytes\":[89,101,115],\"top_logprobs\":[]}]},"
        "\"finish_reason\":\"length\",\"stop_reason\":null}]}\n\n"
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":"
        "{\"prompt_tokens\":20,\"total_tokens\":22,\"completion_tokens\":2}}\n\n"
        "data: [DONE]\n\n";
    pieces q;
    parse_stream(s, &q);
    assert_string_equal(q.text, "R:Hmm|Yes|");
    assert_int_equal(q.n_reasoning, 1);
    assert_int_equal(q.n_with_prob, 2);
    assert_string_equal(q.finish, "length");
    assert_int_equal(q.n_prompt, 20);
    /* a mid-stream error in vLLM's shape */
    parse_stream(
        "data: {\"object\":\"error\",\"message\":\"out of KV cache\",\"type\":\"InternalServerError\","
        "\"code\":500}\n\ndata: [DONE]\n\n",
        &q);
    assert_string_equal(q.error, "out of KV cache");
}

/* ollama's /v1 (docs/openai.md): no logprobs unless asked, "reasoning" for
 * thinking models, a text that arrives without logprobs is one piece. */
static void test_ollama_transcript(void **state)
{
    (void)state;
    const char *s =
        "data: "
        "{\"id\":\"chatcmpl-42\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"llama3.2\","
        "\"system_fingerprint\":\"fp_ollama\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
        "\"reasoning\":\"ok so\"},\"finish_reason\":null}]}\n\n"
        "data: "
        "{\"id\":\"chatcmpl-42\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
        "{\"role\":\"assistant\",\"content\":\"The sky\"},\"finish_reason\":null}]}\n\n"
        "data: "
        "{\"id\":\"chatcmpl-42\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":"
        "{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":\"stop\"}]}\n\n"
        "data: [DONE]\n\n";
    pieces q;
    parse_stream(s, &q);
    assert_string_equal(q.text, "R:ok so|The sky|");
    assert_int_equal(q.n_with_prob, 0);
    assert_string_equal(q.finish, "stop");
    parse_stream("data: {\"error\":{\"message\":\"model \\\"x\\\" not found, try pulling it first\","
                 "\"type\":\"api_error\"}}\n\n",
                 &q);
    assert_string_equal(q.error, "model \"x\" not found, try pulling it first");
}

/* Logprobs that do not spell the text (a server that held some back) give
 * the text as one piece; with a single entry it keeps that entry's numbers. */
static void test_unspelled_text(void **state)
{
    (void)state;
    pieces q;
    parse_stream(
        "data: {\"choices\":[{\"delta\":{\"content\":\"abc\"},\"logprobs\":{\"content\":[{\"token\":\"ab\","
        "\"logprob\":-1.0,\"top_logprobs\":[]},{\"token\":\"x\",\"logprob\":-1}]}}]}\n\n",
        &q);
    assert_string_equal(q.text, "abc|");
    assert_int_equal(q.n_with_prob, 0);
    parse_stream(
        "data: {\"choices\":[{\"delta\":{\"content\":\"abc\"},\"logprobs\":{\"content\":[{\"token\":\"ab\","
        "\"logprob\":-1.0,\"top_logprobs\":[]}]}}]}\n\n",
        &q);
    assert_string_equal(q.text, "abc|");
    assert_int_equal(q.n_with_prob, 1);
    memset(&q, 0, sizeof q);
    remote_chunk_cb cb = {&q, on_piece, on_finish, on_usage, on_error};
    assert_false(remote_parse_chunk("{not json", 9, &cb));
}

/* tokscope serve: OpenAI's entries plus the engine's own numbers. */
typedef struct ext_seen {
    remote_piece p;
    int n;
} ext_seen;
static void on_ext_piece(void *user, const remote_piece *p, bool reasoning)
{
    (void)reasoning;
    ext_seen *s = user;
    s->p = *p;
    s->n++;
}

/* A NUL in a delta ("\u0000", a byte token's) is a byte of the reply, and
 * the bytes after it stay; a request carries a reply's NUL the same way. */
static void test_nul_both_ways(void **state)
{
    (void)state;
    const char *d = "{\"choices\":[{\"delta\":{\"content\":\"x\\u0000y\\\\u0000\"},\"finish_reason\":null}]}";
    ext_seen s;
    memset(&s, 0, sizeof s);
    remote_chunk_cb cb = {&s, on_ext_piece, on_finish, on_usage, on_error};
    assert_true(remote_parse_chunk(d, strlen(d), &cb));
    assert_int_equal(s.n, 1);
    assert_int_equal(s.p.len, 9);
    sampler_params sp = sampler_default_params();
    chat_message msgs[2] = {{"user", "hi", 0}, {"assistant", "a\0b\xff", 4}};
    char *body = remote_body(REMOTE_LLAMA, "m", msgs, 2, NULL, &sp, false);
    assert_non_null(strstr(body, "\"content\":\"a\\u0000b\xff\""));
    free(body);
}

static void test_tokscope_extension(void **state)
{
    (void)state;
    const char *d = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\" the\"},\"logprobs\":{\"content\":[{\"token\":"
                    "\" the\",\"logprob\":-0.3566749,\"bytes\":[32,116,104,101],\"id\":278,\"logit\":11.25,\"p_raw\":0.7,"
                    "\"p_post\":0.9,\"entropy_raw\":1.5,\"entropy_post\":0.25,\"top_logprobs\":[{\"token\":\" the\","
                    "\"logprob\":-0.3566749,\"id\":278,\"logit\":11.25,\"p_raw\":0.7,\"p_post\":0.9},{\"token\":\" a\","
                    "\"logprob\":-2.3,\"id\":263,\"logit\":9.5,\"p_raw\":0.1,\"p_post\":0.0}]}]},"
                    "\"finish_reason\":null}]}";
    ext_seen s;
    memset(&s, 0, sizeof s);
    remote_chunk_cb cb = {&s, on_ext_piece, on_finish, on_usage, on_error};
    assert_true(remote_parse_chunk(d, strlen(d), &cb));
    assert_int_equal(s.n, 1);
    assert_true(s.p.has_ext);
    assert_true(s.p.p_raw == 0.7f && s.p.p_post == 0.9f && s.p.logit == 11.25f);
    assert_true(s.p.entropy_raw == 1.5f && s.p.entropy_post == 0.25f);
    assert_int_equal(s.p.n_top, 2);
    assert_true(s.p.top[1].p_raw == 0.1f && s.p.top[1].p_post == 0.0f && s.p.top[1].logit == 9.5f);
    /* without them: no extension */
    memset(&s, 0, sizeof s);
    const char *o = "{\"choices\":[{\"delta\":{\"content\":\"x\"},\"logprobs\":{\"content\":[{\"token\":\"x\","
                    "\"logprob\":-1}]}}]}";
    assert_true(remote_parse_chunk(o, strlen(o), &cb));
    assert_false(s.p.has_ext);
}

/* A real llama-server (llama.cpp 34af94cd, tiny-spm-q8_0.gguf, temperature
 * 0.8, seed 42) asked with "post_sampling_probs": true next to logprobs on
 * /v1/chat/completions: "prob" and "top_probs" replace "logprob" and
 * "top_logprobs" (its min_p 0.05 left two candidates, then one). The stream
 * as it was sent. */
static void test_llama_server_post_probs(void **state)
{
    (void)state;
    const char *s =
        "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"cont"
        "ent\":null}}],\"created\":1795802538,\"id\":\"chatcmpl-w1rYqUMQgfgeKFWG3Eivc7qXYu1eHsM3\",\"mode"
        "l\":\"/work/shared/models/tiny-spm-q8_0.gguf\",\"system_fingerprint\":\"b0-unknown\",\"object\":"
        "\"chat.completion.chunk\"}\n\ndata: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
        "{\"content\":\" deeper\"},\"logprobs\":{\"content\":[{\"id\":25871,\"token\":\" deeper\",\"bytes"
        "\":[32,100,101,101,112,101,114],\"prob\":0.8758492469787598,\"top_probs\":[{\"id\":25871,\"token"
        "\":\" deeper\",\"bytes\":[32,100,101,101,112,101,114],\"prob\":0.8758492469787598},{\"id\":8266,"
        "\"token\":\"\xc3\xb1""o\",\"bytes\":[195,177,111],\"prob\":0.12415077537298203}]}]}}],\"created\""
        ":1795802538,\"id\":\"chatcmpl-w1rYqUMQgfgeKFWG3Eivc7qXYu1eHsM3\",\"model\":\"/work/shared/models"
        "/tiny-spm-q8_0.gguf\",\"system_fingerprint\":\"b0-unknown\",\"object\":\"chat.completion.chunk\""
        "}\n\ndata: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" Bernard\""
        "},\"logprobs\":{\"content\":[{\"id\":13337,\"token\":\" Bernard\",\"bytes\":[32,66,101,114,110,9"
        "7,114,100],\"prob\":1.0,\"top_probs\":[{\"id\":13337,\"token\":\" Bernard\",\"bytes\":[32,66,101"
        ",114,110,97,114,100],\"prob\":1.0}]}]}}],\"created\":1795802538,\"id\":\"chatcmpl-w1rYqUMQgfgeKF"
        "WG3Eivc7qXYu1eHsM3\",\"model\":\"/work/shared/models/tiny-spm-q8_0.gguf\",\"system_fingerprint\""
        ":\"b0-unknown\",\"object\":\"chat.completion.chunk\"}\n\ndata: {\"choices\":[{\"finish_reason\":"
        "\"length\",\"index\":0,\"delta\":{}}],\"created\":1795802538,\"id\":\"chatcmpl-w1rYqUMQgfgeKFWG3"
        "Eivc7qXYu1eHsM3\",\"model\":\"/work/shared/models/tiny-spm-q8_0.gguf\",\"system_fingerprint\":\""
        "b0-unknown\",\"object\":\"chat.completion.chunk\",\"timings\":{\"cache_n\":20,\"prompt_n\":1,\"p"
        "rompt_ms\":2.539,\"prompt_per_token_ms\":2.539,\"prompt_per_second\":393.85584875935405,\"predic"
        "ted_n\":2,\"predicted_ms\":2.13,\"predicted_per_token_ms\":2.13,\"predicted_per_second\":469.483"
        "5680751174}}\n\ndata: [DONE]\n\n";
    pieces q;
    parse_stream(s, &q);
    assert_string_equal(q.text, " deeper| Bernard|");
    assert_int_equal(q.n_with_prob, 2);
    assert_true(q.post_first);
    assert_true(fabsf(q.prob_first - 0.8758492469787598f) < 1e-7f);
    assert_true(isinf(q.lp_first) && q.lp_first < 0); /* no logprob came */
    assert_int_equal(q.n_top_first, 2);
    assert_string_equal(q.top_first, "\xc3\xb1o");
    assert_true(fabsf(q.top1_prob_first - 0.12415077537298203f) < 1e-7f);
    assert_string_equal(q.finish, "length");
    assert_int_equal(q.n_prompt, 1);
}

/* A real llama-server (smollm-mini-q8_0.gguf, whose random weights give
 * logits hundreds apart) sends log(0) as the float's lowest value,
 * -3.4028234663852886e+38 (nlohmann's JSON would print -inf as null:
 * completion_token_output::logarithm): read as -inf, p 0, not as a number
 * the inspector prints 40 digits of. */
static void test_llama_server_log_zero(void **state)
{
    (void)state;
    const char *s =
        "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"\\n\"},\"logpro"
        "bs\":{\"content\":[{\"id\":198,\"token\":\"\\n\",\"bytes\":[10],\"logprob\":0.0,\"top_logprobs\""
        ":[{\"id\":198,\"token\":\"\\n\",\"bytes\":[10],\"logprob\":0.0},{\"id\":38141,\"token\":\" chest"
        "nut\",\"bytes\":[32,99,104,101,115,116,110,117,116],\"logprob\":-3.4028234663852886e+38},{\"id\""
        ":8692,\"token\":\"cut\",\"bytes\":[99,117,116],\"logprob\":-3.4028234663852886e+38}]}]}}],\"crea"
        "ted\":1795802484,\"id\":\"chatcmpl-3hy440cPVxBTcOJtnoXIwtYrKndmhdv4\",\"model\":\"/work/shared/m"
        "odels/smollm-mini-q8_0.gguf\",\"system_fingerprint\":\"b0-unknown\",\"object\":\"chat.completion"
        ".chunk\"}\n\n";
    pieces q;
    parse_stream(s, &q);
    assert_string_equal(q.text, "\n|");
    assert_false(q.post_first);
    assert_true(q.lp_first == 0.0f);
    assert_int_equal(q.n_top_first, 3);
    assert_true(isinf(q.top1_lp_first) && q.top1_lp_first < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_lines),
        cmocka_unit_test(test_multiline_comments_event_names),
        cmocka_unit_test(test_crlf_and_cr),
        cmocka_unit_test(test_bom_and_unterminated),
        cmocka_unit_test(test_llama_server_error_line),
        cmocka_unit_test(test_stop_and_limits),
        cmocka_unit_test(test_llama_server_transcript),
        cmocka_unit_test(test_vllm_transcript),
        cmocka_unit_test(test_ollama_transcript),
        cmocka_unit_test(test_unspelled_text),
        cmocka_unit_test(test_tokscope_extension), cmocka_unit_test(test_nul_both_ways),
        cmocka_unit_test(test_llama_server_post_probs),
        cmocka_unit_test(test_llama_server_log_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
