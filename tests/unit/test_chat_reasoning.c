/* The reasoning splitter (engine/chat/reasoning.c) on transcripts of each
 * style: Qwen3.x <think>, Gemma 4's thought channel, gpt-oss harmony; fed as
 * token pieces, with markers split anywhere (every chunking gives the same
 * classification as the whole reply at once). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"
#include "chat/reasoning.h"
#include "chat/chat.h"

/* Feeds pieces (NULL-terminated) and finishes; checks the extracts. */
static void check_pieces(enum chat_reasoning_style st, const char *prompt, const char *const *pieces,
                         const char *want_reason, const char *want_answer, const char *answer_from)
{
    chat_reasoning r;
    chat_reasoning_init(&r, st, prompt);
    char text[4096] = "";
    size_t len = 0;
    for (size_t i = 0; pieces[i]; i++) {
        size_t n = strlen(pieces[i]);
        memcpy(text + len, pieces[i], n);
        len += n;
        chat_reasoning_feed(&r, pieces[i], n);
        assert_true(r.pos <= len);
    }
    chat_reasoning_finish(&r);
    assert_int_equal(r.pos, len);
    char *rs = chat_reasoning_extract(&r, text, len, CHAT_SPAN_REASONING);
    char *an = chat_reasoning_extract(&r, text, len, CHAT_SPAN_ANSWER);
    assert_string_equal(rs, want_reason);
    assert_string_equal(an, want_answer);
    if (answer_from) {
        assert_true(r.answer_at != (size_t)-1);
        assert_true(r.answer_at < len);
        assert_memory_equal(text + r.answer_at, answer_from, strlen(answer_from));
    } else
        assert_true(r.answer_at == (size_t)-1);
    free(rs);
    free(an);
    chat_reasoning_free(&r);
}

/* Every way of cutting text into chunks of 1..7 bytes (several seeds)
 * classifies each byte as feeding it whole does. */
static void check_chunkings(enum chat_reasoning_style st, const char *prompt, const char *text)
{
    size_t len = strlen(text);
    chat_reasoning whole;
    chat_reasoning_split(&whole, st, prompt, text, len);
    for (uint64_t seed = 1; seed <= 40; seed++) {
        uint64_t s = seed * 0x9e3779b97f4a7c15ull;
        chat_reasoning r;
        chat_reasoning_init(&r, st, prompt);
        for (size_t i = 0; i < len;) {
            size_t k = 1 + test_xorshift64(&s) % 7;
            if (k > len - i)
                k = len - i;
            chat_reasoning_feed(&r, text + i, k);
            /* classified bytes never change their kind later */
            for (size_t b = 0; b < r.pos; b++)
                assert_int_equal(chat_reasoning_kind_at(&r, b), chat_reasoning_kind_at(&whole, b));
            i += k;
        }
        chat_reasoning_finish(&r);
        for (size_t b = 0; b < len; b++)
            assert_int_equal(chat_reasoning_kind_at(&r, b), chat_reasoning_kind_at(&whole, b));
        assert_int_equal(r.answer_at, whole.answer_at);
        chat_reasoning_free(&r);
    }
    chat_reasoning_free(&whole);
}

static const char *const qwen35_prompt = "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n";

static void test_detect(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        enum chat_reasoning_style st;
    } t[] = {
        {"families2026/golden/chat/templates/Qwen3.5-4B.jinja", CHAT_REASONING_THINK},
        {"families2026/golden/chat/templates/google-gemma-4-31B-it.jinja", CHAT_REASONING_GEMMA4},
        {"families2026/golden/chat/templates/openai-gpt-oss-120b.jinja", CHAT_REASONING_HARMONY},
        {"golden/chat/templates/Qwen3.jinja", CHAT_REASONING_THINK},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        FILE *f = fopen(testdata_path(t[i].file), "rb");
        if (!f) {
            if (testdata_in_ci())
                fail_msg("missing %s", t[i].file);
            continue;
        }
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
        assert_int_equal(chat_reasoning_detect(buf), t[i].st);
    }
    assert_int_equal(chat_reasoning_detect("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"),
                     CHAT_REASONING_NONE);
    assert_int_equal(chat_reasoning_detect(NULL), CHAT_REASONING_NONE);
}

static void test_think_prompt_opens(void **state)
{
    (void)state;
    /* Qwen3.5: the generation prompt opened <think>; tokens split the closing marker */
    const char *const p[] = {"Add", " two", " and two.", "\n</", "th", "ink", ">\n\n", "4", ".", NULL};
    check_pieces(CHAT_REASONING_THINK, qwen35_prompt, p, "Add two and two.", "4.", "4.");
    check_chunkings(CHAT_REASONING_THINK, qwen35_prompt, "Add two and two.\n</think>\n\n4.");
}

static void test_think_model_opens(void **state)
{
    (void)state;
    /* Qwen3 (enable_thinking unset): the model writes <think> itself */
    const char *const p[] = {"<think>", "\nHmm", ", <thin", "k is a word.\n", "</think>", "\n\nAnswer <", "b>", NULL};
    check_pieces(CHAT_REASONING_THINK, "<|im_start|>assistant\n", p, "Hmm, <think is a word.", "Answer <b>",
                 "Answer");
    check_chunkings(CHAT_REASONING_THINK, NULL, "<think>\nHmm, <thin k </th\n</think>\n\nAnswer <b>");
    /* enable_thinking=false: the prompt closed the empty think block */
    const char *const q[] = {"Lima", ".", NULL};
    check_pieces(CHAT_REASONING_THINK, "<|im_start|>assistant\n<think>\n\n</think>\n\n", q, "", "Lima.", NULL);
    /* still reasoning when the reply stops: no answer */
    const char *const s[] = {"<think>", "\nstill going", NULL};
    check_pieces(CHAT_REASONING_THINK, NULL, s, "still going", "", NULL);
}

static void test_think_kinds(void **state)
{
    (void)state;
    const char *text = "x<think>ab</think>\ncd";
    chat_reasoning r;
    chat_reasoning_split(&r, CHAT_REASONING_THINK, NULL, text, strlen(text));
    const char *want = "AMMMMMMMRRMMMMMMMMAAA";
    for (size_t b = 0; text[b]; b++) {
        enum chat_span_kind k = chat_reasoning_kind_at(&r, b);
        assert_int_equal(k, want[b] == 'A' ? CHAT_SPAN_ANSWER : want[b] == 'R' ? CHAT_SPAN_REASONING : CHAT_SPAN_MARKER);
    }
    assert_int_equal(r.answer_at, 19); /* "cd", past the newline */
    chat_reasoning_free(&r);
}

static void test_gemma4(void **state)
{
    (void)state;
    /* enable_thinking: the prompt ends "<|turn>model\n"; the model opens the thought channel */
    const char *const p[] = {"<|channel>", "thought", "\nAdd two", " and two.", "<chan", "nel|>", "4", NULL};
    check_pieces(CHAT_REASONING_GEMMA4, "<|turn>model\n", p, "Add two and two.", "4", "4");
    check_chunkings(CHAT_REASONING_GEMMA4, NULL, "<|channel>thought\nAdd two and two.<channel|>4");
    /* thinking off: the prompt pre-filled an empty thought channel */
    const char *const q[] = {"Lima", NULL};
    check_pieces(CHAT_REASONING_GEMMA4, "<|turn>model\n<|channel>thought\n<channel|>", q, "", "Lima", NULL);
    /* an empty channel other than thought is consumed, and a stray close too */
    check_chunkings(CHAT_REASONING_GEMMA4, NULL, "<|channel><|channel>thought\nx<channel|>a<channel|>b<|chan");
    const char *const s[] = {"<|channel>", "<|channel>thought", "\nx", "<channel|>", "a<channel|>b", NULL};
    check_pieces(CHAT_REASONING_GEMMA4, NULL, s, "x", "ab", "a");
    /* the reply ends on a marker's prefix: plain answer text */
    const char *const t[] = {"see <|chan", NULL};
    check_pieces(CHAT_REASONING_GEMMA4, NULL, t, "", "see <|chan", NULL);
}

static void test_harmony(void **state)
{
    (void)state;
    const char *prompt = "<|start|>user<|message|>2+2?<|end|><|start|>assistant";
    const char *const p[] = {"<|channel|>", "analysis", "<|message|>", "Add two", " and two.", "<|end|>", "<|start|>",
                             "assistant", "<|channel|>", "final", "<|message|>", "4", "<|return|>", NULL};
    check_pieces(CHAT_REASONING_HARMONY, prompt, p, "Add two and two.", "4", "4");
    check_chunkings(CHAT_REASONING_HARMONY, prompt,
                    "<|channel|>analysis<|message|>Add two and two.<|end|><|start|>assistant<|channel|>final"
                    "<|message|>4<|return|>");
    /* markers as plain text pieces (a vocab without them) */
    const char *const q[] = {"<|", "channel", "|>analysis<", "|message|", ">think", "ing<|e", "nd|><|start|>assistant<|",
                             "channel|>final <|constrain|>json<|mess", "age|>{}", NULL};
    check_pieces(CHAT_REASONING_HARMONY, prompt, q, "thinking", "{}", "{}");
    /* a commentary preamble is shown as answer; no analysis: no reasoning */
    const char *const s[] = {"<|channel|>commentary<|message|>Checking.", "<|end|>", NULL};
    check_pieces(CHAT_REASONING_HARMONY, prompt, s, "", "Checking.", "Checking.");
    /* not the format at all (a model that ignores it): answer after the header limit */
    char plain[512] = "";
    for (int i = 0; i < 8; i++)
        strcat(plain, "Just plain text that never opens a harmony header. ");
    chat_reasoning r;
    chat_reasoning_init(&r, CHAT_REASONING_HARMONY, prompt);
    chat_reasoning_feed(&r, plain, strlen(plain));
    chat_reasoning_finish(&r);
    assert_int_equal(chat_reasoning_kind_at(&r, 0), CHAT_SPAN_MARKER); /* read as a header at first */
    assert_int_equal(chat_reasoning_kind_at(&r, strlen(plain) - 1), CHAT_SPAN_ANSWER);
    assert_false(chat_reasoning_inside(&r));
    chat_reasoning_free(&r);
}

/* gpt-oss's markers are control tokens: the reply's text lacks them, the
 * caller feeds them as virtual text (no room in the offsets) */
static void test_harmony_control_tokens(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool virt;
    } p[] = {{"<|channel|>", true}, {"analysis", false}, {"<|message|>", true}, {"Add two", false},
             {" and two.", false},  {"<|end|>", true},   {"<|start|>", true},   {"assistant", false},
             {"<|channel|>", true}, {"final", false},    {"<|message|>", true}, {"4", false},
             {"<|return|>", true}};
    chat_reasoning r;
    chat_reasoning_init(&r, CHAT_REASONING_HARMONY, "<|start|>assistant");
    char text[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        if (p[i].virt) {
            chat_reasoning_feed_virtual(&r, p[i].text, strlen(p[i].text));
        } else {
            memcpy(text + len, p[i].text, strlen(p[i].text));
            len += strlen(p[i].text);
            chat_reasoning_feed(&r, p[i].text, strlen(p[i].text));
        }
        assert_int_equal(r.fed, len);
    }
    chat_reasoning_finish(&r);
    assert_string_equal(text, "analysisAdd two and two.assistantfinal4");
    assert_int_equal(r.pos, len);
    char *rs = chat_reasoning_extract(&r, text, len, CHAT_SPAN_REASONING);
    char *an = chat_reasoning_extract(&r, text, len, CHAT_SPAN_ANSWER);
    assert_string_equal(rs, "Add two and two.");
    assert_string_equal(an, "4");
    assert_int_equal(r.answer_at, len - 1);
    assert_int_equal(chat_reasoning_kind_at(&r, 0), CHAT_SPAN_MARKER); /* "analysis": the header */
    free(rs);
    free(an);
    chat_reasoning_free(&r);
}

static void test_none(void **state)
{
    (void)state;
    const char *const p[] = {"<think>", "no", "</think>", NULL};
    check_pieces(CHAT_REASONING_NONE, NULL, p, "", "<think>no</think>", NULL);
}

static char *slurp_testdata(const char *rel)
{
    FILE *f = fopen(testdata_path(rel), "rb");
    if (!f)
        return NULL;
    char *b = calloc(1, 1 << 16);
    size_t n = fread(b, 1, (1 << 16) - 1, f);
    b[n] = 0;
    fclose(f);
    return b;
}

/* The UI's way of sending reasoning and template variables through the
 * engine: pseudo messages that chat_render turns into message fields and
 * variables, and the built-in formats drop. */
static void test_render_pseudo_messages(void **state)
{
    (void)state;
    char *qwen = slurp_testdata("families2026/golden/chat/templates/Qwen3.5-4B.jinja");
    char *oss = slurp_testdata("families2026/golden/chat/templates/openai-gpt-oss-120b.jinja");
    if (!qwen || !oss) {
        if (testdata_in_ci())
            fail_msg("missing the 2026 templates");
        free(qwen);
        free(oss);
        skip();
    }
    const chat_message m[] = {
        {"user", "2+2?", 0},
        {CHAT_ROLE_REASONING, "Add two and two.", 0},
        {"assistant", "4", 0},
        {CHAT_ROLE_VARS, "{\"enable_thinking\": false, \"reasoning_effort\": \"high\"}", 0},
    };
    chat_render_params p = {.bos_token = "", .eos_token = "", .add_generation_prompt = false, .date = "2024-07-26"};
    char warn[256], err[256];
    char *q = chat_render(qwen, NULL, m, 4, &p, warn, sizeof warn, err, sizeof err);
    assert_non_null(q);
    assert_non_null(strstr(q, "<|im_start|>assistant\n<think>\nAdd two and two.\n</think>\n\n4<|im_end|>"));
    assert_null(strstr(q, "tokscope"));
    free(q);
    char *o = chat_render(oss, NULL, m, 4, &p, warn, sizeof warn, err, sizeof err);
    assert_non_null(o);
    assert_non_null(strstr(o, "Reasoning: high\n"));
    assert_non_null(strstr(o, "<|channel|>analysis<|message|>Add two and two.<|end|>"));
    free(o);
    /* a generation prompt after the vars: enable_thinking=false closes the think block */
    p.add_generation_prompt = true;
    const chat_message g[] = {{"user", "Hi", 0}, {CHAT_ROLE_VARS, "{\"enable_thinking\": false}", 0}};
    q = chat_render(qwen, NULL, g, 2, &p, warn, sizeof warn, err, sizeof err);
    assert_non_null(q);
    size_t ql = strlen(q);
    assert_true(ql > 19 && !strcmp(q + ql - 19, "<think>\n\n</think>\n\n"));
    free(q);
    /* built-ins: the pseudo messages are gone */
    char *c = chat_render(NULL, "chatml", m, 4, &p, warn, sizeof warn, err, sizeof err);
    assert_non_null(c);
    assert_string_equal(c, "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>assistant\n");
    free(c);
    /* bad variables: an error, not a silent render */
    const chat_message b[] = {{"user", "Hi", 0}, {CHAT_ROLE_VARS, "[1]", 0}};
    assert_null(chat_render_jinja(qwen, b, 2, &p, err, sizeof err));
    free(qwen);
    free(oss);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect),       cmocka_unit_test(test_think_prompt_opens),
        cmocka_unit_test(test_think_model_opens), cmocka_unit_test(test_think_kinds),
        cmocka_unit_test(test_gemma4),       cmocka_unit_test(test_harmony),
        cmocka_unit_test(test_none),         cmocka_unit_test(test_render_pseudo_messages),
        cmocka_unit_test(test_harmony_control_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
