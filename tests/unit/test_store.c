/* Saved sessions (ui/store.c): a reply is bytes, not a C string (every
 * byte value a model's byte tokens give, NUL included, comes back byte for
 * byte); one unsound conversation costs only itself; a reply cut by the
 * exit is saved as interrupted. Driven on a UI state without a terminal or
 * an engine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "store.h"
#include "testutil.h"
#include "ui.h"
#include "utf8.h"

static char g_path[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_path, sizeof g_path, "%s/tokscope-store-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(g_path);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(g_path);
    return 0;
}

static ui_app *fake_app(void)
{
    ui_app *app = calloc(1, sizeof *app);
    assert_non_null(app);
    app->gen_conv_id = -1;
    app->next_conv_id = 1;
    app->state = UI_STATE_IDLE;
    app->sp = sampler_default_params();
    snprintf(app->model_path, sizeof app->model_path, "/models/m.gguf");
    ui_new_conv(app, "");
    return app;
}

static void free_app(ui_app *app)
{
    for (size_t i = 0; i < app->n_convs; i++)
        conv_free(app->convs[i]);
    free(app->convs);
    ui_overlay_close(app);
    free(app);
}

/* One TOKEN event of text[0..n) as the engine sends it. */
static void token(ui_msg *m, int32_t id, const char *text, size_t n)
{
    static engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_TOKEN;
    ev.token = id;
    ev.pos = (int32_t)m->n_toks + 3;
    memcpy(ev.text, text, n);
    ev.text_len = (int32_t)n;
    ev.p_raw = ev.p_post = 0.5f;
    ev.n_top = 1;
    ev.top[0].id = id;
    ev.top[0].p_raw = 0.5f;
    memcpy(ev.top[0].text, text, n); /* a NUL piece's text is "" */
    msg_add_token(m, &ev);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    rewind(f);
    char *b = malloc((size_t)end + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)end, f), (size_t)end);
    fclose(f);
    b[end] = 0;
    *n = (size_t)end;
    return b;
}

static void write_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

/* Replies holding every byte value 0..255 (one token each, and a message
 * of all of them with invalid sequences between) save as valid UTF-8 JSON
 * and load back byte for byte, their tokens where they were. */
static void test_every_byte(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    ui_conv *c = ui_current(app);
    conv_add_msg(c, "user", "Hi");
    ui_msg *m = &c->msgs[conv_add_msg(c, "assistant", "")];
    for (int b = 0; b < 256; b++) {
        const char ch = (char)b;
        token(m, 1000 + b, &ch, 1);
    }
    token(m, 7, "\xe2\x82\xac ok", 6); /* valid UTF-8 after them */
    m->done_reason = ENGINE_DONE_LENGTH;
    assert_int_equal(m->len, 262);
    char all[512];
    for (int b = 0; b < 256; b++) {
        all[2 * b] = (char)b;
        all[2 * b + 1] = (char)(255 - b);
    }
    conv_add_msg(c, "user", "again");
    conv_add_msg_n(c, "assistant", all, sizeof all);
    assert_int_equal(c->msgs[3].len, sizeof all);
    /* its reasoning and answer (what the next turn's template gets) likewise */
    c->msgs[3].think_end = 4;
    c->msgs[3].reasoning = malloc(5);
    memcpy(c->msgs[3].reasoning, "\x01\xff\0\x02", 5); /* a NUL too: lengths, not strlen */
    c->msgs[3].reasoning_len = 4;
    c->msgs[3].answer = strdup("ok \xc3");
    c->msgs[3].answer_len = 4;

    char err[512];
    assert_true(store_save(app, g_path, err, sizeof err));
    size_t n;
    char *text = slurp(g_path, &n);
    assert_true(utf8_valid(text, n));
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j); /* strict JSON */
    const cJSON *msgs =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "conversations"), 0), "messages");
    const cJSON *reply = cJSON_GetArrayItem(msgs, 1);
    /* a readable string for older versions: U+FFFD for what it cannot hold */
    const char *content = cJSON_GetObjectItem(reply, "content")->valuestring;
    assert_non_null(strstr(content, "\xef\xbf\xbd\x01\x02"));
    assert_non_null(strstr(content, "\xe2\x82\xac ok"));
    assert_true(cJSON_IsString(cJSON_GetObjectItem(reply, "content_base64")));
    /* plain text keeps the plain form */
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "content_base64"));
    cJSON_Delete(j);

    ui_app *b = fake_app();
    if (!store_load(b, g_path, err, sizeof err))
        fail_msg("%s", err);
    assert_string_equal(err, ""); /* everything loaded */
    ui_conv *bc = ui_current(b);
    assert_int_equal(bc->n_msgs, 4);
    const ui_msg *bm = &bc->msgs[1];
    assert_int_equal(bm->len, m->len);
    assert_memory_equal(bm->text, m->text, m->len);
    assert_int_equal(bm->n_toks, 257);
    for (size_t k = 0; k < bm->n_toks; k++) {
        assert_int_equal(bm->toks[k].off, m->toks[k].off);
        assert_int_equal(bm->toks[k].len, m->toks[k].len);
        assert_int_equal(bm->toks[k].id, m->toks[k].id);
        assert_int_equal(bm->toks[k].n_top, 1); /* the candidates' texts too (the inspector's) */
        assert_string_equal(bm->toks[k].top[0].text, m->toks[k].top[0].text);
    }
    assert_int_equal(bm->toks[0].len, 1);
    assert_int_equal(bm->text[bm->toks[0].off], 0); /* the NUL token's byte */
    assert_int_equal(bm->done_reason, ENGINE_DONE_LENGTH);
    assert_int_equal(bc->msgs[3].len, sizeof all);
    assert_memory_equal(bc->msgs[3].text, all, sizeof all);
    assert_int_equal(bc->msgs[3].reasoning_len, 4);
    assert_memory_equal(bc->msgs[3].reasoning, "\x01\xff\0\x02", 4);
    assert_int_equal(bc->msgs[3].answer_len, 4);
    assert_string_equal(bc->msgs[3].answer, "ok \xc3");

    /* and saving it again gives the same file */
    char p2[300];
    snprintf(p2, sizeof p2, "%s.2", g_path);
    assert_true(store_save(b, p2, err, sizeof err));
    size_t n2;
    char *text2 = slurp(p2, &n2);
    assert_int_equal(n, n2);
    assert_memory_equal(text, text2, n);
    unlink(p2);
    free(text);
    free(text2);
    free_app(b);
    free_app(app);
}

/* A file of three conversations whose second is unsound: the others load,
 * the current one stays current, and err names the one left out and why. */
static void test_bad_conversation(void **state)
{
    (void)state;
    write_text(g_path, "{\"tokscope\": 2, \"current\": 2, \"conversations\": ["
                       "{\"system\": \"\", \"messages\": [{\"role\": \"user\", \"content\": \"one\"}]},"
                       "{\"system\": \"\", \"messages\": [{\"role\": \"user\", \"content\": \"two\"},"
                       " {\"role\": \"assistant\", \"content\": \"a\", \"tokens\": [[5, 1, 7, 1, 0, 0, 0, 0, 0, []]]}]},"
                       "{\"system\": \"s\", \"messages\": [{\"role\": \"user\", \"content\": \"three\"}]}]}");
    ui_app *app = fake_app();
    char err[512];
    if (!store_load(app, g_path, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(app->n_convs, 2);
    assert_string_equal(app->convs[0]->msgs[0].text, "one");
    assert_string_equal(app->convs[1]->msgs[0].text, "three");
    assert_int_equal(app->cur, 1); /* "three" was current */
    assert_non_null(strstr(err, "conversation 2 of 3 not loaded"));
    assert_non_null(strstr(err, "\"tokens\" are malformed"));

    /* a bad "content_base64" or a non-object costs only its conversation too */
    write_text(g_path, "{\"tokscope\": 2, \"conversations\": ["
                       "{\"system\": \"\", \"messages\": [{\"role\": \"user\", \"content\": \"x\","
                       " \"content_base64\": \"not*base64\"}]}, 7,"
                       "{\"system\": \"\", \"messages\": [{\"role\": \"user\", \"content\": \"fine\"}]}]}");
    if (!store_load(app, g_path, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(app->n_convs, 1);
    assert_string_equal(app->convs[0]->msgs[0].text, "fine");
    assert_non_null(strstr(err, "conversations 1, 2 of 3 not loaded"));
    assert_non_null(strstr(err, "base64"));

    /* none sound: refused, nothing changed */
    write_text(g_path, "{\"tokscope\": 2, \"conversations\": [{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}]}");
    assert_false(store_load(app, g_path, err, sizeof err));
    assert_non_null(strstr(err, "\"role\""));
    assert_int_equal(app->n_convs, 1);
    assert_string_equal(app->convs[0]->msgs[0].text, "fine");

    /* parameters that do not apply do not cost the conversations */
    write_text(g_path, "{\"tokscope\": 2, \"params\": {\"temp\": \"hot\"}, \"conversations\": ["
                       "{\"system\": \"\", \"messages\": [{\"role\": \"user\", \"content\": \"kept\"}]}]}");
    if (!store_load(app, g_path, err, sizeof err))
        fail_msg("%s", err);
    assert_string_equal(app->convs[0]->msgs[0].text, "kept");
    assert_non_null(strstr(err, "parameters were not applied"));
    free_app(app);
}

/* A file of a version before "content_base64": a reply's "content"
 * stopped at a NUL byte while its tokens ran on. The conversation loads
 * with the text saved and the tokens inside it; the note says what was
 * left out. Tokens past the text in a file with "content_base64" stay
 * malformed. */
static void test_legacy_nul(void **state)
{
    (void)state;
    write_text(g_path, "{\"tokscope\": 2, \"conversations\": ["
                       "{\"system\": \"\", \"messages\": [{\"role\": \"user\", \"content\": \"other\"}]},"
                       "{\"system\": \"\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"},"
                       " {\"role\": \"assistant\", \"content\": \"ab\", \"done\": 1, \"tokens\": ["
                       "[1, 2, 0, 1, 0, 0, 0, 0, 0, []], [2, 3, 1, 1, 0, 0, 0, 0, 0, []],"
                       "[3, 4, 2, 1, 0, 0, 0, 0, 0, [[3, 0, 0, 0, \"\"]]], [4, 5, 3, 1, 0, 0, 0, 0, 0, []]]}]}]}");
    ui_app *app = fake_app();
    char err[512];
    if (!store_load(app, g_path, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(app->n_convs, 2);
    const ui_msg *m = &app->convs[1]->msgs[1];
    assert_string_equal(m->text, "ab");
    assert_int_equal(m->n_toks, 2);
    assert_int_equal(m->done_reason, ENGINE_DONE_LENGTH);
    assert_non_null(strstr(err, "conversation 2: a reply's last 2 tokens ran past its text (an older version cut "
                               "it at a NUL byte): left out"));
    /* with the exact bytes there, tokens past them are a fault */
    write_text(g_path, "{\"tokscope\": 2, \"conversations\": ["
                       "{\"system\": \"\", \"messages\": [{\"role\": \"assistant\", \"content\": \"a\ufffd\","
                       " \"content_base64\": \"YQA=\", \"tokens\": [[1, 2, 0, 1, 0, 0, 0, 0, 0, []],"
                       " [2, 3, 1, 2, 0, 0, 0, 0, 0, []]]}]}]}");
    assert_false(store_load(app, g_path, err, sizeof err));
    assert_non_null(strstr(err, "\"tokens\" are malformed"));
    free_app(app);
}

/* A reply still streaming when the session is saved (the exit: Ctrl-Q,
 * SIGTERM) is saved as interrupted ("done": stopped for older versions)
 * and loads so, not as finished. */
static void test_interrupted(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    ui_conv *c = ui_current(app);
    conv_add_msg(c, "user", "Tell me a story");
    ui_msg *m = &c->msgs[conv_add_msg(c, "assistant", "")];
    m->streaming = true;
    token(m, 11, "Once", 4);
    token(m, 12, " upon", 5);
    char err[512];
    assert_true(store_save(app, g_path, err, sizeof err));
    size_t n;
    char *text = slurp(g_path, &n);
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    const cJSON *reply = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "conversations"), 0), "messages"), 1);
    assert_int_equal(cJSON_GetObjectItem(reply, "done")->valueint, ENGINE_DONE_STOPPED);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(reply, "interrupted")));
    cJSON_Delete(j);

    ui_app *b = fake_app();
    if (!store_load(b, g_path, err, sizeof err))
        fail_msg("%s", err);
    const ui_msg *bm = &ui_current(b)->msgs[1];
    assert_false(bm->streaming);
    assert_int_equal(bm->done_reason, CONV_DONE_INTERRUPTED);
    assert_string_equal(bm->text, "Once upon");
    assert_int_equal(bm->n_toks, 2);
    /* saved again: still interrupted, the same file */
    char p2[300];
    snprintf(p2, sizeof p2, "%s.2", g_path);
    assert_true(store_save(b, p2, err, sizeof err));
    size_t n2;
    char *text2 = slurp(p2, &n2);
    assert_int_equal(n, n2);
    assert_memory_equal(text, text2, n);
    unlink(p2);
    free(text);
    free(text2);

    /* a finished reply keeps its reason, no "interrupted" */
    m->streaming = false;
    m->done_reason = ENGINE_DONE_EOG;
    assert_true(store_save(app, g_path, err, sizeof err));
    if (!store_load(b, g_path, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(ui_current(b)->msgs[1].done_reason, ENGINE_DONE_EOG);
    free_app(b);
    free_app(app);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_conversation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_legacy_nul, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
