/* tokscope serve without a socket: request parsing and validation
 * (serve_request.c) and response shaping (serve_json.c): the fields that
 * reach the sampler, each refusal naming its field, logprobs entries, the
 * streamed reasoning/answer split, chunks and whole replies. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "serve.h"
#include "testutil.h"

static int parse(serve_request *r, bool chat, const char *body, char *param)
{
    char err[256];
    char p[64];
    int rc = serve_request_parse(r, chat, body, strlen(body), NULL, err, sizeof err, p, sizeof p);
    if (param)
        strcpy(param, p);
    if (rc)
        assert_true(err[0] != 0);
    return rc;
}

static void test_chat_fields(void **state)
{
    (void)state;
    serve_request r;
    assert_int_equal(parse(&r, true,
                           "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"S\"},"
                           "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                           "{\"type\":\"text\",\"text\":\"b\"}]},"
                           "{\"role\":\"assistant\",\"content\":\"A\",\"reasoning_content\":\"R\"}],"
                           "\"temperature\":0.5,\"top_p\":0.9,\"top_k\":7,\"min_p\":0.1,\"typical_p\":0.8,"
                           "\"repeat_penalty\":1.1,\"repeat_last_n\":32,\"presence_penalty\":0.5,"
                           "\"frequency_penalty\":-0.5,\"seed\":1234,\"max_tokens\":33,\"stop\":[\"x\",\"yz\"],"
                           "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"logprobs\":true,"
                           "\"top_logprobs\":4,\"user\":\"ignored\",\"unknown_field\":[1,2]}",
                           NULL),
                     0);
    assert_true(r.chat && r.stream && r.include_usage && r.logprobs);
    assert_string_equal(r.model, "m");
    assert_int_equal(r.top_logprobs, 4);
    assert_int_equal(r.sp.n_top, 4);
    assert_float_equal(r.sp.temp, 0.5f, 0);
    assert_float_equal(r.sp.top_p, 0.9f, 0);
    assert_int_equal(r.sp.top_k, 7);
    assert_float_equal(r.sp.min_p, 0.1f, 0);
    assert_float_equal(r.sp.typical_p, 0.8f, 0);
    assert_float_equal(r.sp.repeat_penalty, 1.1f, 0);
    assert_int_equal(r.sp.repeat_last_n, 32);
    assert_float_equal(r.sp.presence_penalty, 0.5f, 0);
    assert_float_equal(r.sp.frequency_penalty, -0.5f, 0);
    assert_true(r.sp.seed_set);
    assert_int_equal(r.sp.seed, 1234);
    assert_int_equal(r.sp.n_predict, 33);
    assert_int_equal(r.sp.n_stop, 2);
    assert_string_equal(r.sp.stop[1], "yz");
    /* the parts joined; the assistant's reasoning as the pseudo message before it */
    assert_int_equal(r.n_msgs, 4);
    assert_string_equal(r.msgs[1].content, "ab");
    assert_string_equal(r.msgs[2].role, CHAT_ROLE_REASONING);
    assert_string_equal(r.msgs[2].content, "R");
    assert_string_equal(r.msgs[3].role, "assistant");
    serve_request_free(&r);
}

/* Absent and null fields keep the defaults; no seed = a random one; no max_tokens = no limit. */
static void test_defaults_and_null(void **state)
{
    (void)state;
    serve_request r;
    const sampler_params d = sampler_default_params();
    assert_int_equal(parse(&r, true,
                           "{\"messages\":[{\"role\":\"user\",\"content\":null}],\"temperature\":null,"
                           "\"stop\":null,\"seed\":null,\"logprobs\":null}",
                           NULL),
                     0);
    assert_float_equal(r.sp.temp, d.temp, 0);
    assert_int_equal(r.sp.top_k, d.top_k);
    assert_false(r.sp.seed_set);
    assert_int_equal(r.sp.n_predict, -1);
    assert_int_equal(r.sp.n_stop, 0);
    assert_false(r.logprobs || r.stream);
    assert_string_equal(r.msgs[0].content, "");
    serve_request_free(&r);
    assert_int_equal(parse(&r, true, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"seed\":-1}", NULL), 0);
    assert_false(r.sp.seed_set);
    serve_request_free(&r);
}

static void test_template_vars(void **state)
{
    (void)state;
    serve_request r;
    assert_int_equal(parse(&r, true,
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                           "\"chat_template_kwargs\":{\"enable_thinking\":false},\"reasoning_effort\":\"high\"}",
                           NULL),
                     0);
    assert_int_equal(r.n_msgs, 2);
    assert_string_equal(r.msgs[0].role, CHAT_ROLE_VARS);
    cJSON *v = cJSON_Parse(r.msgs[0].content);
    assert_non_null(v);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(v, "enable_thinking")));
    assert_string_equal(cJSON_GetObjectItem(v, "reasoning_effort")->valuestring, "high");
    cJSON_Delete(v);
    serve_request_free(&r);
}

static void test_completions_fields(void **state)
{
    (void)state;
    serve_request r;
    assert_int_equal(parse(&r, false, "{\"prompt\":[\"Once\"],\"logprobs\":3,\"max_tokens\":5,\"stop\":\"s\"}", NULL),
                     0);
    assert_false(r.chat);
    assert_string_equal(r.prompt, "Once");
    assert_true(r.logprobs);
    assert_int_equal(r.top_logprobs, 3);
    assert_int_equal(r.sp.n_stop, 1);
    serve_request_free(&r);
    /* llama-server's extras: n_probs implies logprobs, post_sampling_probs picks the sampler's */
    assert_int_equal(parse(&r, false, "{\"prompt\":\"a\",\"n_probs\":6,\"post_sampling_probs\":true}", NULL), 0);
    assert_true(r.logprobs && r.post_sampling);
    assert_int_equal(r.top_logprobs, 6);
    serve_request_free(&r);
    /* max_completion_tokens counts on completions too, as llama-server's alias of n_predict
     * (it was read on chat only: a completion ran to the full context); llama-server's
     * order: n_predict, then max_completion_tokens, then max_tokens */
    assert_int_equal(parse(&r, false, "{\"prompt\":\"a\",\"max_completion_tokens\":5}", NULL), 0);
    assert_int_equal(r.sp.n_predict, 5);
    serve_request_free(&r);
    assert_int_equal(parse(&r, false, "{\"prompt\":\"a\",\"max_tokens\":7,\"max_completion_tokens\":5}", NULL), 0);
    assert_int_equal(r.sp.n_predict, 5);
    serve_request_free(&r);
    assert_int_equal(parse(&r, true, "{\"messages\":[{\"role\":\"user\"}],\"n_predict\":3,\"max_tokens\":7}", NULL), 0);
    assert_int_equal(r.sp.n_predict, 3);
    serve_request_free(&r);
}

/* llama-server's prompt shapes that make one sequence (tokenize_input_prompts):
 * token ids, ids mixed with texts, an array holding one prompt; they were a
 * 400. And max_tokens 0: one token, as llama-server gives. */
static void test_prompt_shapes(void **state)
{
    (void)state;
    serve_request r;
    assert_int_equal(parse(&r, false, "{\"prompt\":[1,2,3]}", NULL), 0);
    assert_null(r.prompt);
    assert_int_equal(r.n_parts, 3);
    assert_int_equal(r.parts[0].id, 1);
    assert_int_equal(r.parts[2].id, 3);
    assert_null(r.parts[1].text);
    serve_request_free(&r);
    assert_int_equal(parse(&r, false, "{\"prompt\":[[7,8]]}", NULL), 0);
    assert_int_equal(r.n_parts, 2);
    assert_int_equal(r.parts[1].id, 8);
    serve_request_free(&r);
    assert_int_equal(parse(&r, false, "{\"prompt\":[\"Once\",5,\" upon\\u0000x\"]}", NULL), 0);
    assert_int_equal(r.n_parts, 3);
    assert_string_equal(r.parts[0].text, "Once");
    assert_int_equal(r.parts[0].id, -1);
    assert_int_equal(r.parts[1].id, 5);
    assert_int_equal(r.parts[2].len, 7); /* the NUL kept, with the length */
    serve_request_free(&r);
    assert_int_equal(parse(&r, false, "{\"prompt\":[[\"a\",1]]}", NULL), 0);
    assert_int_equal(r.n_parts, 2);
    serve_request_free(&r);
    assert_int_equal(parse(&r, false, "{\"prompt\":[\"one\"]}", NULL), 0);
    assert_string_equal(r.prompt, "one");
    assert_null(r.parts);
    serve_request_free(&r);
    /* max_tokens 0 (and its aliases): one token, llama-server's count */
    assert_int_equal(parse(&r, false, "{\"prompt\":\"a\",\"max_tokens\":0}", NULL), 0);
    assert_int_equal(r.sp.n_predict, 1);
    serve_request_free(&r);
    assert_int_equal(parse(&r, true, "{\"messages\":[{\"role\":\"user\"}],\"n_predict\":0}", NULL), 0);
    assert_int_equal(r.sp.n_predict, 1);
    serve_request_free(&r);
}

/* Each known field of the wrong type or range: 400, naming the field. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        bool chat;
        const char *body, *param;
    } cases[] = {
        {true, "{", ""},
        {true, "[]", ""},
        {true, "{}", "messages"},
        {true, "{\"messages\":{}}", "messages"},
        {true, "{\"messages\":[]}", "messages"},
        {true, "{\"messages\":[1]}", "messages[0]"},
        {true, "{\"messages\":[{\"content\":\"x\"}]}", "messages[0].role"},
        {true, "{\"messages\":[{\"role\":\"tokscope.vars\",\"content\":\"{}\"}]}", "messages[0].role"},
        {true, "{\"messages\":[{\"role\":\"user\",\"content\":{}}]}", "messages[0].content"},
        {true, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", "messages[0].content"},
        {true, "{\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":1}]}",
         "messages[0].reasoning_content"},
        {true, "{\"model\":3,\"messages\":[{\"role\":\"user\"}]}", "model"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"temperature\":\"1\"}", "temperature"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"temperature\":-1}", "temperature"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"top_p\":2}", "top_p"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"top_k\":1.5}", "top_k"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"min_p\":true}", "min_p"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"presence_penalty\":3}", "presence_penalty"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"frequency_penalty\":\"a\"}", "frequency_penalty"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"seed\":1.5}", "seed"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"max_tokens\":-1}", "max_tokens"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"max_completion_tokens\":\"9\"}", "max_completion_tokens"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"stop\":[1]}", "stop"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]}",
         "stop"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"stream\":1}", "stream"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"stream_options\":[]}", "stream_options"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"logprobs\":3}", "logprobs"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"logprobs\":true,\"top_logprobs\":21}", "top_logprobs"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"top_logprobs\":2}", "top_logprobs"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"n\":2}", "n"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"tools\":[{\"type\":\"function\"}]}", "tools"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"response_format\":{\"type\":\"json_object\"}}",
         "response_format"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"chat_template_kwargs\":1}", "chat_template_kwargs"},
        {true, "{\"messages\":[{\"role\":\"user\"}],\"n_probs\":\"4\"}", "n_probs"},
        {false, "{}", "prompt"},
        {false, "{\"prompt\":[\"a\",\"b\"]}", "prompt"},
        {false, "{\"prompt\":[]}", "prompt"},
        {false, "{\"prompt\":[[]]}", "prompt"},
        {false, "{\"prompt\":[[1],[2]]}", "prompt"},
        {false, "{\"prompt\":[1.5]}", "prompt"},
        {false, "{\"prompt\":[1,-2]}", "prompt"},
        {false, "{\"prompt\":[1,[2]]}", "prompt"},
        {false, "{\"prompt\":[1,true]}", "prompt"},
        {false, "{\"prompt\":[{\"prompt_string\":\"a\"}]}", "prompt"},
        {false, "{\"prompt\":5}", "prompt"},
        {false, "{\"prompt\":\"a\",\"logprobs\":true}", "logprobs"},
        {false, "{\"prompt\":\"a\",\"echo\":true}", "echo"},
        {false, "{\"prompt\":\"a\",\"best_of\":3}", "best_of"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        serve_request r;
        char param[64];
        int rc = parse(&r, cases[i].chat, cases[i].body, param);
        if (rc != 400 || strcmp(param, cases[i].param) != 0)
            fail_msg("case %zu %s: rc %d param '%s', want 400 '%s'", i, cases[i].body, rc, param, cases[i].param);
        serve_request_free(&r);
    }
}

/* llama-server's own sampler and output fields that tokscope does not run
 * (mirostat, XTC, DRY, top-n-sigma, dynamic temperature, grammars, ...) and
 * OpenAI's tool and audio fields: each changes llama-server's reply, so a
 * value that would have an effect is refused naming the field (they were
 * once ignored: `mirostat: 2` gave the plain chain's reply); the neutral
 * values llama-server itself treats as "off" are accepted. */
static void test_refuse_ignored_fields(void **state)
{
    (void)state;
    static const struct {
        bool chat;
        const char *extra; /* added to a minimal body */
        const char *param; /* NULL: accepted */
    } cases[] = {
        {false, "\"mirostat\":1", "mirostat"},
        {true, "\"mirostat\":3", "mirostat"},
        {true, "\"xtc_probability\":1.5", "xtc_probability"},
        {true, "\"top_n_sigma\":\"1\"", "top_n_sigma"},
        {true, "\"dynatemp_range\":0.5", "dynatemp_range"},
        {true, "\"dynatemp_range\":0,\"dynatemp_exponent\":2", NULL},
        /* DRY runs as llama-server's; its breakers: a non-empty array of strings */
        {true, "\"dry_multiplier\":0.8", NULL},
        {true, "\"dry_multiplier\":0.8,\"dry_sequence_breakers\":[]", "dry_sequence_breakers"},
        {true, "\"dry_sequence_breakers\":\"\\n\"", "dry_sequence_breakers"},
        {true, "\"dry_sequence_breakers\":[\"a\",3]", "dry_sequence_breakers"},
        {true, "\"dry_sequence_breakers\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\",\"11\",\"12\",\"13\",\"14\",\"15\",\"16\",\"17\"]", "dry_sequence_breakers"},
        {false, "\"dry_penalty_last_n\":-1", "dry_penalty_last_n"},
        {false, "\"dry_multiplier\":0,\"dry_base\":2,\"dry_allowed_length\":3", NULL},
        {true, "\"min_keep\":5", "min_keep"},
        {true, "\"min_keep\":0", NULL},
        {true, "\"grammar\":\"root ::= \\\"yes\\\"\"", "grammar"},
        {true, "\"grammar\":\"\"", NULL},
        {false, "\"json_schema\":{\"type\":\"object\"}", "json_schema"},
        {false, "\"json_schema\":{}", "json_schema"}, /* llama-server: any JSON value */
        {false, "\"json_schema\":null", NULL},
        {true, "\"samplers\":[\"temperature\"]", "samplers"},
        {true, "\"samplers\":\"kt\"", "samplers"},
        {true, "\"lora\":[{\"id\":0,\"scale\":1}]", "lora"},
        {true, "\"lora\":[]", NULL},
        {true, "\"n_indent\":4", "n_indent"},
        {false, "\"t_max_predict_ms\":100", "t_max_predict_ms"},
        {true, "\"n_cmpl\":2", "n_cmpl"},
        {true, "\"return_tokens\":true", "return_tokens"},
        {true, "\"continue_final_message\":true", "continue_final_message"},
        {true, "\"reasoning_budget_tokens\":16", "reasoning_budget_tokens"},
        {true, "\"reasoning_budget_tokens\":-1", NULL},
        {true, "\"tool_choice\":\"required\"", "tool_choice"},
        {true, "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}", "tool_choice"},
        {true, "\"tool_choice\":\"auto\",\"parallel_tool_calls\":true", NULL},
        {true, "\"tool_choice\":\"none\"", NULL},
        {true, "\"functions\":[{\"name\":\"f\"}]", "functions"},
        {true, "\"function_call\":{\"name\":\"f\"}", "function_call"},
        {true, "\"modalities\":[\"text\",\"audio\"]", "modalities"},
        {true, "\"modalities\":[\"text\"]", NULL},
        {true, "\"audio\":{\"voice\":\"alloy\",\"format\":\"wav\"}", "audio"},
        {true, "\"web_search_options\":{}", "web_search_options"},
        {true, "\"mirostat\":\"2\"", "mirostat"},
        {true, "\"dynatemp_range\":\"x\"", "dynatemp_range"},
        /* the reasoning split is llama-server's deepseek format (its default) */
        {true, "\"reasoning_format\":\"none\"", "reasoning_format"},
        {true, "\"reasoning_format\":\"deepseek-legacy\"", "reasoning_format"},
        {true, "\"reasoning_format\":3", "reasoning_format"},
        {true, "\"reasoning_format\":\"deepseek\"", NULL},
        {true, "\"reasoning_format\":\"auto\"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[512];
        snprintf(body, sizeof body, cases[i].chat ? "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],%s}"
                                                  : "{\"prompt\":\"a\",%s}",
                 cases[i].extra);
        serve_request r;
        char param[64];
        int rc = parse(&r, cases[i].chat, body, param);
        if (cases[i].param && (rc != 400 || strcmp(param, cases[i].param) != 0))
            fail_msg("case %zu %s: rc %d param '%s', want 400 '%s'", i, body, rc, param, cases[i].param);
        if (!cases[i].param && rc != 0)
            fail_msg("case %zu %s: rc %d param '%s', want accepted", i, body, rc, param);
        serve_request_free(&r);
    }
}

/* mirostat, XTC and top-n-sigma reach the engine's sampler (they were once ignored) */
static void test_llama_samplers(void **state)
{
    (void)state;
    serve_request r;
    assert_int_equal(parse(&r, false,
                           "{\"prompt\":\"a\",\"mirostat\":2,\"mirostat_tau\":3,\"mirostat_eta\":0.2,"
                           "\"top_n_sigma\":1.5,\"xtc_probability\":0.5,\"xtc_threshold\":0.2}",
                           NULL),
                     0);
    assert_int_equal(r.sp.mirostat, 2);
    assert_float_equal(r.sp.mirostat_tau, 3.0f, 1e-6);
    assert_float_equal(r.sp.mirostat_eta, 0.2f, 1e-6);
    assert_float_equal(r.sp.top_n_sigma, 1.5f, 1e-6);
    assert_float_equal(r.sp.xtc_probability, 0.5f, 1e-6);
    assert_float_equal(r.sp.xtc_threshold, 0.2f, 1e-6);
    serve_request_free(&r);
    /* DRY (once a 400): the fields, a dry_base below 1 as llama-server's default,
     * the client's breakers replacing the default four (an empty one skipped) */
    sampler_params d = sampler_default_params();
    assert_int_equal(d.n_dry_breakers, 4);
    assert_string_equal(d.dry_breakers[0], "\n");
    assert_int_equal(parse(&r, false,
                           "{\"prompt\":\"a\",\"dry_multiplier\":0.8,\"dry_base\":0.5,\"dry_allowed_length\":3,"
                           "\"dry_penalty_last_n\":128,\"dry_sequence_breakers\":[\"cat\",\"\",\"sat on\"]}",
                           NULL),
                     0);
    assert_float_equal(r.sp.dry_multiplier, 0.8f, 1e-6);
    assert_float_equal(r.sp.dry_base, 1.75f, 1e-6);
    assert_int_equal(r.sp.dry_allowed_length, 3);
    assert_int_equal(r.sp.dry_penalty_last_n, 128);
    assert_int_equal(r.sp.n_dry_breakers, 2);
    assert_string_equal(r.sp.dry_breakers[0], "cat");
    assert_string_equal(r.sp.dry_breakers[1], "sat on");
    serve_request_free(&r);
}

static void test_utf8_clean(void **state)
{
    (void)state;
    char *s = serve_utf8_clean("a\xE2\x82\xAC\xE2\x82" "b\xFF", 8);
    assert_string_equal(s, "a\xE2\x82\xAC\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD");
    free(s);
    s = serve_utf8_clean("\xED\xA0\x80", 3); /* a surrogate is not UTF-8 */
    assert_string_equal(s, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    free(s);
    /* a NUL (a byte token) stays one: printed "\u0000", as llama-server writes it, so the
     * client can send the reply back whole */
    s = serve_utf8_clean("x\0y", 3);
    serve_reply_meta m = {"chatcmpl-1", 1, "m", 0, NULL};
    char *body = serve_reply(&m, true, s, NULL, NULL, "length", 1, 3);
    free(s);
    assert_non_null(strstr(body, "\"content\":\"x\\u0000y\""));
    cJSON *o = cJSON_Parse(body);
    assert_non_null(o); /* strict JSON */
    cJSON_Delete(o);
    free(body);
    serve_request r;
    char err[128], param[32];
    const char req[] = "{\"messages\":[{\"role\":\"assistant\",\"content\":\"x\\u0000y\\\\u0000\xff\"}]}";
    assert_int_equal(serve_request_parse(&r, true, req, sizeof req - 1, NULL, err, sizeof err, param, sizeof param), 0);
    assert_int_equal(r.n_msgs, 1);
    assert_int_equal(chat_content_len(&r.msgs[0]), 10);
    assert_memory_equal(r.msgs[0].content, "x\0y\\u0000\xff", 10);
    serve_request_free(&r);
}

static serve_token tok(int32_t id, const char *text, float p_raw, float p_post)
{
    serve_token t;
    memset(&t, 0, sizeof t);
    t.id = id;
    t.piece_len = (int32_t)strlen(text);
    memcpy(t.piece, text, (size_t)t.piece_len);
    t.text_len = t.piece_len;
    memcpy(t.text, text, (size_t)t.text_len);
    t.p_raw = p_raw;
    t.p_post = p_post;
    t.logit = 3.5f;
    return t;
}

static void test_logprob_entry(void **state)
{
    (void)state;
    serve_token t = tok(7, "\xC3", 0.25f, 0.5f); /* half a character: bytes keep it, token shows U+FFFD */
    t.n_top = 2;
    t.top[0] = (serve_cand){.id = 7, .logit = 3.5f, .p_raw = 0.25f, .p_post = 0.5f, .piece = "\xC3", .piece_len = 1};
    t.top[1] = (serve_cand){.id = 9, .logit = 1.0f, .p_raw = 0.125f, .p_post = 0, .piece = "ab", .piece_len = 2};
    cJSON *e = serve_logprob_entry(&t, 2, false);
    assert_string_equal(cJSON_GetObjectItem(e, "token")->valuestring, "\xEF\xBF\xBD");
    assert_float_equal(cJSON_GetObjectItem(e, "logprob")->valuedouble, log(0.25), 1e-6);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(e, "bytes")), 1);
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "bytes"), 0)->valueint, 0xC3);
    assert_int_equal(cJSON_GetObjectItem(e, "id")->valueint, 7);
    assert_float_equal(cJSON_GetObjectItem(e, "p_raw")->valuedouble, 0.25, 0);
    assert_float_equal(cJSON_GetObjectItem(e, "p_post")->valuedouble, 0.5, 0);
    assert_float_equal(cJSON_GetObjectItem(e, "logit")->valuedouble, 3.5, 0);
    assert_non_null(cJSON_GetObjectItem(e, "entropy_raw"));
    cJSON *top = cJSON_GetObjectItem(e, "top_logprobs");
    assert_int_equal(cJSON_GetArraySize(top), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(top, 1), "token")->valuestring, "ab");
    cJSON_Delete(e);
    /* post-sampler logprobs: a filtered candidate gets OpenAI's floor, not -inf */
    e = serve_logprob_entry(&t, 1, true);
    assert_float_equal(cJSON_GetObjectItem(e, "logprob")->valuedouble, log(0.5), 1e-6);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(e, "top_logprobs")), 1);
    cJSON_Delete(e);
    t.p_post = 0;
    e = serve_logprob_entry(&t, 0, true);
    assert_float_equal(cJSON_GetObjectItem(e, "logprob")->valuedouble, -9999.0, 0);
    char *s = cJSON_PrintUnformatted(e);
    assert_null(strstr(s, "inf"));
    assert_null(strstr(s, "nan"));
    free(s);
    cJSON_Delete(e);
}

/* Feeds pieces as a stream; collects the deltas. */
static void feed_all(serve_out *o, const char *const *pieces, size_t n, char *content, char *reasoning,
                     int *n_entries)
{
    content[0] = reasoning[0] = 0;
    *n_entries = 0;
    for (size_t i = 0; i <= n; i++) {
        char *c, *r;
        cJSON *e;
        serve_token t;
        if (i < n)
            t = tok((int32_t)i, pieces[i], 0.5f, 1);
        serve_out_feed(o, i < n ? &t : NULL, NULL, 0, &c, &r, &e);
        strcat(content, c);
        strcat(reasoning, r);
        *n_entries += e != NULL;
        cJSON_Delete(e);
        free(c);
        free(r);
    }
}

static void test_reasoning_split(void **state)
{
    (void)state;
    serve_request req = {.chat = true, .logprobs = true};
    serve_out o;
    char content[256], reasoning[256];
    int n;
    /* Qwen3: markers split across pieces, the blank after </think> dropped */
    static const char *const a[] = {"<th", "ink>", "\nI think", " so", "</thi", "nk>\n\n", "Yes", ", sure"};
    serve_out_init(&o, &req, CHAT_REASONING_THINK, "<|im_start|>assistant\n", (size_t)-1);
    feed_all(&o, a, 8, content, reasoning, &n);
    assert_string_equal(reasoning, "I think so");
    assert_string_equal(content, "Yes, sure");
    assert_int_equal(n, 8);
    assert_int_equal(o.n_tokens, 8);
    serve_out_free(&o);
    /* Qwen3.5: the prompt opens <think>, the reply starts inside */
    static const char *const b[] = {"hmm", "</think>", "\n\nok"};
    serve_out_init(&o, &req, CHAT_REASONING_THINK, "<|im_start|>assistant\n<think>\n", (size_t)-1);
    feed_all(&o, b, 3, content, reasoning, &n);
    assert_string_equal(reasoning, "hmm");
    assert_string_equal(content, "ok");
    serve_out_free(&o);
    /* no reasoning style: everything is content, leading blanks kept */
    serve_out_init(&o, &req, CHAT_REASONING_NONE, NULL, (size_t)-1);
    feed_all(&o, a, 3, content, reasoning, &n);
    assert_string_equal(content, "<think>\nI think");
    assert_string_equal(reasoning, "");
    serve_out_free(&o);
    /* completions are never split */
    req.chat = false;
    serve_out_init(&o, &req, CHAT_REASONING_THINK, NULL, (size_t)-1);
    feed_all(&o, a, 2, content, reasoning, &n);
    assert_string_equal(content, "<think>");
    serve_out_free(&o);
}

/* A continued assistant message (prefill): the stream's first delta holds
 * the message's text (llama-server's stream does), the rest what was
 * generated, from the state the message's text leaves (inside its
 * reasoning, or after it); the whole reply reads the message's text and the
 * reply as one, as llama-server's parser reads its generation prompt and
 * the reply. */
static void test_prefill_reply(void **state)
{
    (void)state;
    serve_request req = {.chat = true};
    serve_out o;
    char content[256], reasoning[256], *wc, *wr;
    int n;
    /* the reasoning continued: the reply starts inside it */
    static const char p1[] = "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>Let me add";
    static const char *const a[] = {" 2", " and 2", "</think>", "\n\nFour"};
    serve_out_init(&o, &req, CHAT_REASONING_THINK, p1, strlen(p1) - strlen("<think>Let me add"));
    feed_all(&o, a, 4, content, reasoning, &n);
    assert_string_equal(reasoning, "Let me add 2 and 2");
    assert_string_equal(content, "Four");
    serve_out_whole(&o, &wc, &wr);
    assert_string_equal(wr, "Let me add 2 and 2");
    assert_string_equal(wc, "Four");
    free(wc);
    free(wr);
    serve_out_free(&o);
    /* the content continued, after the message's reasoning */
    static const char p2[] = "<|im_start|>assistant\n<think>R</think>The answer";
    static const char *const b[] = {" is", " 4"};
    serve_out_init(&o, &req, CHAT_REASONING_THINK, p2, strlen("<|im_start|>assistant\n"));
    feed_all(&o, b, 2, content, reasoning, &n);
    assert_string_equal(reasoning, "R");
    assert_string_equal(content, "The answer is 4");
    serve_out_whole(&o, &wc, &wr);
    assert_string_equal(wr, "R");
    assert_string_equal(wc, "The answer is 4");
    free(wc);
    free(wr);
    serve_out_free(&o);
    /* no reasoning style */
    static const char p3[] = "<|assistant|>\nOnce upon";
    static const char *const c[] = {" a", " time"};
    serve_out_init(&o, &req, CHAT_REASONING_NONE, p3, strlen("<|assistant|>\n"));
    feed_all(&o, c, 2, content, reasoning, &n);
    assert_string_equal(content, "Once upon a time");
    serve_out_whole(&o, &wc, &wr);
    assert_string_equal(wc, "Once upon a time");
    assert_null(wr);
    free(wc);
    serve_out_free(&o);
}

/* The end-of-generation token has no text and no logprobs entry; the bytes
 * the engine held back come with the end. */
static void test_eog_and_rest(void **state)
{
    (void)state;
    serve_request req = {.chat = true, .logprobs = true};
    serve_out o;
    serve_out_init(&o, &req, CHAT_REASONING_NONE, NULL, (size_t)-1);
    serve_token t = tok(2, "", 0.9f, 1);
    t.eog = true;
    char *c, *r;
    cJSON *e;
    serve_out_feed(&o, &t, NULL, 0, &c, &r, &e);
    assert_null(e);
    assert_string_equal(c, "");
    free(c);
    free(r);
    serve_out_feed(&o, NULL, "tail", 4, &c, &r, &e);
    assert_string_equal(c, "tail");
    assert_int_equal(o.n_tokens, 0);
    free(c);
    free(r);
    serve_out_free(&o);
}

static void test_chunks_and_replies(void **state)
{
    (void)state;
    serve_reply_meta m = {"chatcmpl-1", 1700000000, "model.gguf", 0, NULL};
    char *s = serve_chunk(&m, true, true, "", NULL, NULL, NULL);
    assert_true(!strncmp(s, "data: {", 7));
    assert_true(s[strlen(s) - 1] == '\n' && s[strlen(s) - 2] == '\n');
    cJSON *o = cJSON_Parse(s + 6);
    assert_string_equal(cJSON_GetObjectItem(o, "object")->valuestring, "chat.completion.chunk");
    cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(ch, "delta"), "role")->valuestring, "assistant");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(ch, "finish_reason")));
    cJSON_Delete(o);
    free(s);
    /* a later chunk: reasoning only, no role, no empty content */
    s = serve_chunk(&m, true, false, "", "why", NULL, NULL);
    o = cJSON_Parse(s + 6);
    cJSON *d = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0), "delta");
    assert_null(cJSON_GetObjectItem(d, "role"));
    assert_null(cJSON_GetObjectItem(d, "content"));
    assert_string_equal(cJSON_GetObjectItem(d, "reasoning_content")->valuestring, "why");
    cJSON_Delete(o);
    free(s);
    /* a whole legacy completion with logprobs: parallel arrays and offsets */
    serve_token t1 = tok(1, "ab", 0.5f, 1), t2 = tok(2, "c", 0.25f, 1);
    cJSON *entries = cJSON_CreateArray();
    cJSON_AddItemToArray(entries, serve_logprob_entry(&t1, 0, false));
    cJSON_AddItemToArray(entries, serve_logprob_entry(&t2, 0, false));
    m.id = "cmpl-1";
    s = serve_reply(&m, false, "abc", NULL, entries, "length", 4, 2);
    o = cJSON_Parse(s);
    assert_string_equal(cJSON_GetObjectItem(o, "object")->valuestring, "text_completion");
    ch = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    assert_string_equal(cJSON_GetObjectItem(ch, "text")->valuestring, "abc");
    assert_string_equal(cJSON_GetObjectItem(ch, "finish_reason")->valuestring, "length");
    cJSON *lp = cJSON_GetObjectItem(ch, "logprobs");
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(lp, "tokens"), 1)->valuestring, "c");
    assert_int_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(lp, "text_offset"), 1)->valueint, 2);
    assert_float_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(lp, "token_logprobs"), 1)->valuedouble, log(0.25),
                       1e-6);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(lp, "content")), 2);
    cJSON *u = cJSON_GetObjectItem(o, "usage");
    assert_int_equal(cJSON_GetObjectItem(u, "total_tokens")->valueint, 6);
    cJSON_Delete(o);
    free(s);
    m.n_cached = 2; /* the prompt's tokens the cache held: OpenAI's and llama-server's field */
    s = serve_usage_chunk(&m, true, 3, 4);
    o = cJSON_Parse(s + 6);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "choices")), 0);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "completion_tokens")->valueint, 4);
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "usage"), "prompt_tokens_details"), "cached_tokens")
            ->valueint,
        2);
    cJSON_Delete(o);
    free(s);
}

static void test_error_shape(void **state)
{
    (void)state;
    char *s = serve_error_json("bad \xFF thing", "invalid_request_error", "temperature", NULL);
    cJSON *o = cJSON_Parse(s);
    assert_non_null(o);
    cJSON *e = cJSON_GetObjectItem(o, "error");
    assert_string_equal(cJSON_GetObjectItem(e, "message")->valuestring, "bad \xEF\xBF\xBD thing");
    assert_string_equal(cJSON_GetObjectItem(e, "type")->valuestring, "invalid_request_error");
    assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, "temperature");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(e, "code")));
    cJSON_Delete(o);
    free(s);
    assert_string_equal(serve_finish_reason(ENGINE_DONE_EOG), "stop");
    assert_string_equal(serve_finish_reason(ENGINE_DONE_STOP_STRING), "stop");
    assert_string_equal(serve_finish_reason(ENGINE_DONE_LENGTH), "length");
    assert_string_equal(serve_finish_reason(ENGINE_DONE_CTX_FULL), "length");
}

/* 100,000 messages: parsed in one walk of the list (issue 35 #13: a lookup
 * by index per message made it quadratic, 29 s). 5 s is a loose bound: the
 * linear walk takes well under a tenth of it, even under ASan. */
static void test_many_messages(void **state)
{
    (void)state;
    const int n = 100000;
    const char *one = "{\"role\":\"user\",\"content\":\"hi\"},";
    size_t cap = (size_t)n * strlen(one) + 64;
    char *body = malloc(cap), *w = body;
    assert_non_null(body);
    w = stpcpy(w, "{\"messages\":[");
    for (int i = 0; i < n; i++)
        w = stpcpy(w, one);
    strcpy(w - 1, "],\"stop\":[\"a\",\"b\",\"c\"]}");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    serve_request r;
    assert_int_equal(parse(&r, true, body, NULL), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    assert_int_equal(r.n_msgs, n);
    assert_string_equal(r.msgs[n - 1].role, "user");
    assert_string_equal(r.msgs[n - 1].content, "hi");
    assert_int_equal(r.sp.n_stop, 3);
    assert_string_equal(r.sp.stop[2], "c");
    serve_request_free(&r);
    free(body);
    if (s > 5.0)
        fail_msg("100000 messages took %.1f s to parse", s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_fields),      cmocka_unit_test(test_defaults_and_null),
        cmocka_unit_test(test_template_vars),    cmocka_unit_test(test_completions_fields),
        cmocka_unit_test(test_refusals),         cmocka_unit_test(test_prompt_shapes),         cmocka_unit_test(test_refuse_ignored_fields), cmocka_unit_test(test_llama_samplers),
        cmocka_unit_test(test_utf8_clean),
        cmocka_unit_test(test_logprob_entry),    cmocka_unit_test(test_reasoning_split),
        cmocka_unit_test(test_prefill_reply),
        cmocka_unit_test(test_eog_and_rest),     cmocka_unit_test(test_chunks_and_replies),
        cmocka_unit_test(test_error_shape),      cmocka_unit_test(test_many_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
