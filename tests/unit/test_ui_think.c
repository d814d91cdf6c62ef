/* Reasoning in the UI (ui/think.c, conv.c's fold): a turn driven by hand-made
 * engine events with the real Qwen3.5 template (its generation prompt opens
 * <think>), the block's fold (open while thinking, folded once the answer
 * starts, F9/t), token indices inside a folded block, what the next turn
 * sends (reasoning apart, template variables), and saves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curses.h>
#include <unistd.h>

#include "chat/chat.h"
#include "chat/reasoning.h"
#include "commands.h"
#include "params.h"
#include "store.h"
#include "testutil.h"
#include "think.h"
#include "ui.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = calloc(1, 1 << 16);
    size_t n = fread(b, 1, (1 << 16) - 1, f);
    b[n] = 0;
    fclose(f);
    return b;
}

static ui_app *fake_app(const char *tmpl_rel)
{
    ui_app *app = calloc(1, sizeof *app);
    assert_non_null(app);
    app->gen_conv_id = -1;
    app->next_conv_id = 1;
    app->state = UI_STATE_IDLE;
    app->loaded = true;
    app->sp = sampler_default_params();
    snprintf(app->info.template_name, sizeof app->info.template_name, "model");
    ui_new_conv(app, "");
    app->tmpl_text = tmpl_rel ? slurp(testdata_path(tmpl_rel)) : NULL;
    think_style_update(app);
    return app;
}

static void free_app(ui_app *app)
{
    for (size_t i = 0; i < app->n_convs; i++)
        conv_free(app->convs[i]);
    free(app->convs);
    think_free(app);
    ui_overlay_close(app);
    free(app);
}

/* ui_start_turn minus the engine */
static size_t start_turn(ui_app *app, const char *user)
{
    ui_conv *c = ui_current(app);
    conv_add_msg(c, "user", user);
    size_t mi = conv_add_msg(c, "assistant", "");
    c->msgs[mi].streaming = true;
    app->gen_conv_id = c->id;
    app->gen_msg = mi;
    app->gen_req = 7;
    app->state = UI_STATE_PREFILL;
    think_begin(app, c, mi);
    return mi;
}

static void token_id(ui_app *app, const char *piece, int32_t pos, int32_t id)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_TOKEN;
    ev.conv_id = ui_current(app)->id;
    ev.req_id = 7;
    ev.token = id;
    ev.pos = pos;
    ev.p_raw = ev.p_post = 0.5f;
    snprintf(ev.text, sizeof ev.text, "%s", piece);
    ev.text_len = (int32_t)strlen(piece);
    ui_handle_event(app, &ev);
}

static void token(ui_app *app, const char *piece, int32_t pos)
{
    token_id(app, piece, pos, pos);
}

/* A byte token's text: one NUL */
static void token_nul(ui_app *app, int32_t pos)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_TOKEN;
    ev.conv_id = ui_current(app)->id;
    ev.req_id = 7;
    ev.token = pos;
    ev.pos = pos;
    ev.p_raw = ev.p_post = 0.5f;
    ev.text_len = 1;
    ui_handle_event(app, &ev);
}

static void done(ui_app *app)
{
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_DONE;
    ev.conv_id = ui_current(app)->id;
    ev.req_id = 7;
    ev.reason = ENGINE_DONE_EOG;
    ui_handle_event(app, &ev);
}

static const char *const qwen35 = "families2026/golden/chat/templates/Qwen3.5-4B.jinja";

/* Lines of kind k of message mi in the last layout. */
static size_t count_lines(const ui_conv *c, int32_t mi, int kind)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_vl; i++)
        n += c->vl[i].msg == mi && c->vl[i].kind == kind;
    return n;
}

/* The reasoning block's drawn text of message mi in the last layout: its
 * TEXT lines before the answer, joined by '|'. */
static char *block_text(const ui_conv *c, int32_t mi)
{
    const ui_msg *m = &c->msgs[mi];
    static char buf[512];
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < c->n_vl; i++)
        if (c->vl[i].msg == mi && c->vl[i].kind == CONV_VL_TEXT && c->vl[i].start < m->think_end)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%.*s", n ? "|" : "", (int)c->vl[i].len,
                                  m->text + c->vl[i].start);
    return buf;
}

static void test_turn_folds(void **state)
{
    (void)state;
    ui_app *app = fake_app(qwen35);
    if (!app->tmpl_text) {
        free_app(app);
        if (testdata_in_ci())
            fail_msg("missing %s", qwen35);
        skip();
    }
    assert_int_equal(app->think_style, CHAT_REASONING_THINK);
    const size_t mi = start_turn(app, "2+2?");
    ui_conv *c = ui_current(app);
    ui_msg *m = &c->msgs[mi];
    assert_true(m->think_inside); /* the prompt opened <think> */
    token(app, "Add", 10);
    token(app, " two", 11);
    assert_int_equal(m->think_end, m->len); /* all reasoning so far, shown open */
    assert_true(m->think_open);
    conv_build_lines(c, 60);
    assert_int_equal(count_lines(c, (int32_t)mi, CONV_VL_FOLD), 1);
    assert_int_equal(count_lines(c, (int32_t)mi, CONV_VL_TEXT), 1);
    token(app, ".\n</", 12); /* the closing marker split over tokens */
    token(app, "think>", 13);
    token(app, "\n\n", 14);
    assert_true(m->think_open);
    token(app, "4", 15);
    assert_false(m->think_open); /* the answer started: folded */
    assert_int_equal(m->think_end, strlen("Add two.\n</think>\n\n"));
    token(app, ".", 16);
    done(app);
    assert_false(m->streaming);
    assert_string_equal(m->reasoning, "Add two.");
    assert_string_equal(m->answer, "4.");
    assert_string_equal(m->text, "Add two.\n</think>\n\n4."); /* the reply's text and tokens stay whole */
    assert_int_equal(m->n_toks, 7);

    /* folded: the "thinking" line, then the answer only */
    conv_build_lines(c, 60);
    assert_int_equal(count_lines(c, (int32_t)mi, CONV_VL_FOLD), 1);
    assert_int_equal(count_lines(c, (int32_t)mi, CONV_VL_TEXT), 1);
    for (size_t i = 0; i < c->n_vl; i++)
        if (c->vl[i].msg == (int32_t)mi && c->vl[i].kind == CONV_VL_TEXT)
            assert_int_equal(c->vl[i].start, m->think_end);
    /* the token cursor walks through the folded reasoning: indices are the reply's */
    assert_true(conv_sel_first(c));
    assert_int_equal(c->sel_msg, (int32_t)mi);
    assert_int_equal(c->sel_tok, 0);
    assert_int_equal(conv_selected(c)->pos, 10);
    assert_true(conv_sel_last(c));
    assert_int_equal(conv_selected(c)->pos, 16);
    /* Up from the answer skips the folded block (no text line there) */
    assert_false(conv_sel_line(c, -1));
    /* F9 at the cursor unfolds: the block's text lines come back, same tokens */
    think_toggle(app);
    assert_true(m->think_open && m->think_set);
    conv_build_lines(c, 60);
    /* "Add two.", "4.": the block shows the reasoning, not the format's </think> */
    assert_int_equal(count_lines(c, (int32_t)mi, CONV_VL_TEXT), 2);
    assert_string_equal(block_text(c, (int32_t)mi), "Add two.");
    assert_true(conv_sel_line(c, -1));
    assert_true(c->sel_tok < 6);
    /* the strip lines follow the block's text lines too */
    c->strip = CONV_STRIP_ENTROPY;
    conv_build_lines(c, 60);
    assert_int_equal(count_lines(c, (int32_t)mi, CONV_VL_STRIP), 2);
    think_toggle(app);
    conv_build_lines(c, 60);
    assert_int_equal(count_lines(c, (int32_t)mi, CONV_VL_STRIP), 1);
    assert_false(m->think_open);

    /* the next turn sends the reasoning apart from the answer */
    conv_add_msg(c, "user", "And 3+3?");
    chat_message *msgs;
    size_t n = think_chat_messages(app, c, c->n_msgs, &msgs);
    assert_int_equal(n, 4);
    assert_string_equal(msgs[1].role, CHAT_ROLE_REASONING);
    assert_string_equal(msgs[1].content, "Add two.");
    assert_string_equal(msgs[2].role, "assistant");
    assert_string_equal(msgs[2].content, "4.");
    assert_int_equal(chat_content_len(&msgs[1]), 8);
    char err[256], warn[256];
    chat_render_params rp = {.bos_token = "", .eos_token = "", .add_generation_prompt = true, .date = NULL};
    char *p = chat_render(app->tmpl_text, NULL, msgs, n, &rp, warn, sizeof warn, err, sizeof err);
    assert_non_null(p); /* Qwen3.5 drops the reasoning of turns before the last user message */
    assert_non_null(strstr(p, "<|im_start|>assistant\n4.<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n"));
    free(p);
    free(msgs);
    free_app(app);
}

/* A NUL (a byte token) in the reasoning and in the answer: the next turn
 * gets both whole, and the template writes the answer's bytes after it. */
static void test_turn_nul(void **state)
{
    (void)state;
    ui_app *app = fake_app(qwen35);
    if (!app->tmpl_text) {
        free_app(app);
        if (testdata_in_ci())
            fail_msg("missing %s", qwen35);
        skip();
    }
    const size_t mi = start_turn(app, "2+2?");
    ui_conv *c = ui_current(app);
    ui_msg *m = &c->msgs[mi];
    token(app, "Add", 10);
    token_nul(app, 11);
    token(app, "two.\n</think>\n\n", 12);
    token(app, "4", 13);
    token_nul(app, 14);
    token(app, " ok", 15);
    done(app);
    assert_int_equal(m->reasoning_len, 8);
    assert_memory_equal(m->reasoning, "Add\0two.", 8);
    assert_int_equal(m->answer_len, 5);
    assert_memory_equal(m->answer, "4\0 ok", 5);
    conv_add_msg(c, "user", "And 3+3?");
    chat_message *msgs;
    size_t n = think_chat_messages(app, c, c->n_msgs, &msgs);
    assert_int_equal(n, 4);
    assert_int_equal(chat_content_len(&msgs[1]), 8);
    assert_int_equal(chat_content_len(&msgs[2]), 5);
    char err[256], warn[256];
    size_t len = 0;
    chat_render_params rp = {.bos_token = "", .eos_token = "", .add_generation_prompt = true, .date = NULL};
    char *p = chat_render_n(app->tmpl_text, NULL, msgs, n, &rp, warn, sizeof warn, &len, err, sizeof err);
    assert_non_null(p);
    static const char want[] = "<|im_start|>assistant\n4\0 ok<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n";
    assert_non_null(memmem(p, len, want, sizeof want - 1));
    free(p);
    free(msgs);
    free_app(app);
}

/* gpt-oss: the harmony markers are control tokens, whose text the engine's
 * reply leaves out (empty TOKEN texts); the UI knows their texts from the
 * vocabulary and feeds them to the splitter */
static void test_harmony_control_tokens(void **state)
{
    (void)state;
    ui_app *app = fake_app(NULL);
    snprintf(app->model_path, sizeof app->model_path, "%s",
             testdata_path("families2026/golden/tokenizer/ggml-vocab-gpt-4o.gguf"));
    think_load_template(app);
    char *tmpl = slurp(testdata_path("families2026/golden/chat/templates/openai-gpt-oss-120b.jinja"));
    if (!app->n_think_ctl || !tmpl) {
        free(tmpl);
        free_app(app);
        if (testdata_in_ci())
            fail_msg("missing the gpt-4o vocab or the gpt-oss template");
        skip();
    }
    free(app->tmpl_text);
    app->tmpl_text = tmpl;
    think_style_update(app);
    assert_int_equal(app->think_style, CHAT_REASONING_HARMONY);
    const size_t mi = start_turn(app, "2+2?");
    ui_msg *m = &ui_current(app)->msgs[mi];
    /* ids of <|channel|> <|message|> <|end|> <|start|> <|return|> in o200k_harmony */
    static const struct {
        int32_t id;
        const char *text;
    } t[] = {{200005, ""}, {1, "analysis"}, {200008, ""}, {2, "Add two"}, {3, " and two."}, {200007, ""},
             {200006, ""}, {4, "assistant"}, {200005, ""}, {5, "final"}, {200008, ""}, {6, "4"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        token_id(app, t[i].text, (int32_t)(20 + i), t[i].id);
        if (i == 4) { /* inside the analysis message: open */
            assert_true(m->think_open);
            assert_int_equal(m->think_end, m->len);
        }
    }
    assert_int_equal(m->think_end, m->len - 1); /* the answer started: folded */
    assert_false(m->think_open);
    /* step mode's undo takes "4" back: split again from the tokens, control ones included */
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_UNDO;
    ev.conv_id = ui_current(app)->id;
    ev.req_id = 7;
    ev.reply_len = (int32_t)m->len - 1;
    ui_handle_event(app, &ev);
    assert_int_equal(m->len, strlen("analysisAdd two and two.assistantfinal"));
    assert_int_equal(m->think_end, m->len); /* the final header read, no answer byte yet */
    token_id(app, "4", 31, 6);
    token_id(app, "", 32, 200002); /* <|return|>: end of generation */
    done(app);
    assert_string_equal(m->text, "analysisAdd two and two.assistantfinal4");
    assert_int_equal(m->think_end, m->len - 1);
    assert_false(m->think_open);
    assert_string_equal(m->reasoning, "Add two and two.");
    assert_string_equal(m->answer, "4");
    /* unfolded, the block shows the analysis message's text: not the header
     * words around it (the channel and role names whose control tokens the
     * text lacks: "analysis", "assistant", "final") */
    ui_conv *c = ui_current(app);
    think_toggle(app);
    assert_true(m->think_open);
    conv_build_lines(c, 60);
    assert_string_equal(block_text(c, (int32_t)mi), "Add two and two.");
    free_app(app);
}

/* gpt-oss with a vocabulary whose harmony markers are plain text (the mini
 * models'): the whole header is in the reply's text, and stays out of the
 * block as well; two analysis messages show as two paragraphs */
static void test_harmony_text_markers(void **state)
{
    (void)state;
    ui_app *app = fake_app("families2026/golden/chat/templates/openai-gpt-oss-120b.jinja");
    if (!app->tmpl_text) {
        free_app(app);
        if (testdata_in_ci())
            fail_msg("missing the gpt-oss template");
        skip();
    }
    assert_int_equal(app->think_style, CHAT_REASONING_HARMONY);
    const size_t mi = start_turn(app, "2+2?");
    ui_conv *c = ui_current(app);
    ui_msg *m = &c->msgs[mi];
    static const char *const t[] = {"<|channel|>", "analysis", "<|message|>", "Add two.", "<|end|>", "<|start|>",
                                    "assistant", "<|channel|>analysis<|message|>", "Sure.", "<|end|><|start|>",
                                    "assistant<|channel|>final<|message|>", "4"};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        token(app, t[i], (int32_t)(20 + i));
    done(app);
    assert_string_equal(m->reasoning, "Add two.Sure.");
    assert_string_equal(m->answer, "4");
    assert_false(m->think_open);
    think_toggle(app);
    conv_build_lines(c, 60);
    assert_string_equal(block_text(c, (int32_t)mi), "Add two.|Sure.");
    /* kept by a save */
    char path[] = "/tmp/tokscope-think-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    assert_true(store_save(app, path, err, sizeof err));
    ui_app *b = fake_app(NULL);
    if (!store_load(b, path, err, sizeof err))
        fail_msg("%s", err);
    ui_conv *bc = ui_current(b);
    bc->msgs[1].think_open = true;
    conv_build_lines(bc, 60);
    assert_string_equal(block_text(bc, 1), "Add two.|Sure.");
    unlink(path);
    free_app(b);
    free_app(app);
}

static void test_vars(void **state)
{
    (void)state;
    ui_app *app = fake_app(NULL);
    ui_conv *c = ui_current(app);
    conv_set_system(c, "Be brief.");
    conv_add_msg(c, "user", "Hi");
    chat_message *msgs;
    size_t n = think_chat_messages(app, c, c->n_msgs, &msgs);
    assert_int_equal(n, 2); /* auto: nothing passed, the template's defaults */
    free(msgs);
    assert_true(think_set(app, "think", "off"));
    assert_true(think_set(app, "effort", "high"));
    assert_false(think_set(app, "effort", "extreme"));
    assert_false(think_set(app, "think", "maybe"));
    n = think_chat_messages(app, c, c->n_msgs, &msgs);
    assert_int_equal(n, 3);
    assert_string_equal(msgs[0].role, "system"); /* the engine's n_keep render stops before the vars */
    assert_string_equal(msgs[1].role, CHAT_ROLE_VARS);
    assert_string_equal(msgs[1].content, "{\"enable_thinking\": false, \"reasoning_effort\": \"high\"}");
    assert_string_equal(msgs[2].role, "user");
    free(msgs);
    /* the panel's rows step through the values */
    app->focus = UI_FOCUS_PARAMS;
    app->param_sel = PARAMS_N;
    assert_true(params_key(app, KEY_RIGHT)); /* off -> auto */
    assert_string_equal(think_value(app, 0), "auto");
    assert_true(params_key(app, KEY_RIGHT));
    assert_string_equal(think_value(app, 0), "on");
    assert_true(params_key(app, KEY_DOWN));
    assert_true(params_key(app, KEY_LEFT)); /* high -> medium */
    assert_string_equal(think_value(app, 1), "medium");
    n = think_chat_messages(app, c, c->n_msgs, &msgs);
    assert_string_equal(msgs[1].content, "{\"enable_thinking\": true, \"reasoning_effort\": \"medium\"}");
    free(msgs);
    /* the raw format gets no pseudo message (its contents go back to back) */
    snprintf(app->template_name, sizeof app->template_name, "raw");
    n = think_chat_messages(app, c, c->n_msgs, &msgs);
    assert_int_equal(n, 2);
    assert_string_equal(msgs[1].role, "user");
    free(msgs);
    /* documented in /help */
    const char *help = commands_help_text();
    assert_non_null(strstr(help, "F9 "));
    assert_non_null(strstr(help, "think, effort"));
    assert_non_null(strstr(help, "  Alt-t          fold"));
    free_app(app);
}

static void test_save_load(void **state)
{
    (void)state;
    ui_app *app = fake_app(qwen35);
    if (!app->tmpl_text) {
        free_app(app);
        skip();
    }
    start_turn(app, "2+2?");
    token(app, "Hmm", 1);
    token(app, "</think>\n\n", 2);
    token(app, "4", 3);
    done(app);
    /* a second turn whose answer holds a NUL: saved and loaded whole */
    start_turn(app, "3+3?");
    token(app, "</think>\n\n", 4);
    token(app, "6", 5);
    token_nul(app, 6);
    token(app, "!", 7);
    done(app);
    think_set(app, "think", "on");
    think_set(app, "effort", "low");
    char path[] = "/tmp/tokscope-think-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    assert_true(store_export_md(app, path, err, sizeof err));
    char *md = slurp(path);
    assert_non_null(strstr(md, "## Assistant\n\n<details><summary>thinking</summary>\n\nHmm\n\n</details>\n\n4\n"));
    free(md);
    assert_true(store_save(app, path, err, sizeof err));
    ui_app *b = fake_app(NULL);
    if (!store_load(b, path, err, sizeof err))
        fail_msg("%s", err);
    const ui_conv *c = ui_current(b);
    assert_int_equal(c->n_msgs, 4);
    assert_int_equal(c->msgs[3].answer_len, 3);
    assert_memory_equal(c->msgs[3].answer, "6\0!", 3);
    const ui_msg *m = &c->msgs[1];
    assert_int_equal(m->think_end, strlen("Hmm</think>\n\n"));
    assert_false(m->think_open);
    assert_string_equal(m->reasoning, "Hmm");
    assert_string_equal(m->answer, "4");
    assert_int_equal(m->n_toks, 3);
    assert_string_equal(think_value(b, 0), "on");
    assert_string_equal(think_value(b, 1), "low");
    /* a file from before reasoning: loads, no block, template defaults */
    FILE *f = fopen(path, "w");
    fputs("{\"tokscope\": 1, \"conversations\": [{\"system\": \"\", \"messages\": ["
          "{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"<think>x</think>y\"}]}]}",
          f);
    fclose(f);
    if (!store_load(b, path, err, sizeof err))
        fail_msg("%s", err);
    c = ui_current(b);
    assert_int_equal(c->msgs[1].think_end, 0);
    assert_null(c->msgs[1].reasoning);
    assert_string_equal(think_value(b, 0), "auto");
    /* a bad block end is refused */
    f = fopen(path, "w");
    fputs("{\"tokscope\": 1, \"conversations\": [{\"system\": \"\", \"messages\": ["
          "{\"role\": \"assistant\", \"content\": \"ab\", \"think_end\": 9}]}]}",
          f);
    fclose(f);
    assert_false(store_load(b, path, err, sizeof err));
    assert_non_null(strstr(err, "reasoning"));
    unlink(path);
    free_app(b);
    free_app(app);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_turn_folds), cmocka_unit_test(test_turn_nul),
        cmocka_unit_test(test_vars),
        cmocka_unit_test(test_harmony_control_tokens),
        cmocka_unit_test(test_harmony_text_markers),
        cmocka_unit_test(test_save_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
