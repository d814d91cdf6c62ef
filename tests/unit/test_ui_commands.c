/* Slash commands: parsing, lookup, /set values, and dispatch on a UI state
 * without a terminal or an engine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "commands.h"
#include "testutil.h"
#include "ui.h"

static void test_parse(void **state)
{
    (void)state;
    char name[32], args[128];
    assert_true(commands_parse("/set temp 0.1", name, sizeof name, args, sizeof args));
    assert_string_equal(name, "set");
    assert_string_equal(args, "temp 0.1");
    assert_true(commands_parse("  /HELP  \n", name, sizeof name, args, sizeof args));
    assert_string_equal(name, "help");
    assert_string_equal(args, "");
    assert_true(commands_parse("/system   You are terse.  ", name, sizeof name, args, sizeof args));
    assert_string_equal(name, "system");
    assert_string_equal(args, "You are terse.");
    assert_false(commands_parse("hello /set", name, sizeof name, args, sizeof args));
    assert_false(commands_parse("//not a command", name, sizeof name, args, sizeof args));
    assert_false(commands_parse("/", name, sizeof name, args, sizeof args));
    assert_false(commands_parse("/ space", name, sizeof name, args, sizeof args));
    assert_false(commands_parse("", name, sizeof name, args, sizeof args));
    /* long names and arguments are cut, never overflow */
    char small[4];
    assert_true(commands_parse("/abcdefgh 123456789", small, sizeof small, args, 5));
    assert_string_equal(small, "abc");
    assert_string_equal(args, "1234");
}

static void test_find(void **state)
{
    (void)state;
    assert_string_equal(commands_find("regen")->name, "regen");
    assert_string_equal(commands_find("reg")->name, "regen"); /* unique prefix */
    assert_null(commands_find("s"));                          /* set, show, save, stop, system */
    assert_string_equal(commands_find("exit")->name, "quit");
    assert_string_equal(commands_find("q")->name, "quit");
    assert_null(commands_find("frobnicate"));
    const char *required[] = {"help", "quit", "new", "clear", "stop", "regen", "edit", "system", "set",
                              "show", "save", "load", "export", "template", "raw", "post"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        const ui_command *c = commands_find(required[i]);
        assert_non_null(c);
        assert_string_equal(c->name, required[i]);
    }
}

/* issue 35, item 7: an ambiguous prefix names what it could mean */
static void test_candidates(void **state)
{
    (void)state;
    char buf[256];
    assert_int_equal(commands_candidates("s", buf, sizeof buf), 7);
    assert_string_equal(buf, "/save /set /show /step /stop /strip /system");
    assert_int_equal(commands_candidates("reg", buf, sizeof buf), 1);
    assert_string_equal(buf, "/regen");
    assert_int_equal(commands_candidates("zz", buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    char small[8];
    assert_int_equal(commands_candidates("s", small, sizeof small), 7); /* cut, still terminated */
    assert_true(strlen(small) < sizeof small);
}

/* issue 35, item 7: ~ and ~user in file names */
static void test_expand_path(void **state)
{
    (void)state;
    char out[512];
    setenv("HOME", "/home/tester", 1);
    assert_true(commands_expand_path("~/x.json", out, sizeof out));
    assert_string_equal(out, "/home/tester/x.json");
    assert_true(commands_expand_path("~", out, sizeof out));
    assert_string_equal(out, "/home/tester");
    assert_true(commands_expand_path("a/~/b", out, sizeof out));
    assert_string_equal(out, "a/~/b");
    assert_true(commands_expand_path("~root/y", out, sizeof out));
    assert_string_equal(out, "/root/y");
    assert_true(commands_expand_path("~no-such-user-xyz/y", out, sizeof out));
    assert_string_equal(out, "~no-such-user-xyz/y");
    char tiny[8];
    assert_false(commands_expand_path("~/long-name", tiny, sizeof tiny));
}

/* issue 35, item 6: Enter with more keys behind it ends a command */
static void test_ends_at_newline(void **state)
{
    (void)state;
    assert_true(commands_ends_at_newline("/set temp 0.5", '/'));
    assert_true(commands_ends_at_newline("/set temp 0.5", 'h'));
    assert_false(commands_ends_at_newline("hello", '/'));
    assert_false(commands_ends_at_newline("//not a command", '/'));
    assert_false(commands_ends_at_newline("/system You are", 'a')); /* a system prompt spans lines */
    assert_true(commands_ends_at_newline("/system You are\nterse", '/'));
}

static void test_split_set(void **state)
{
    (void)state;
    char p[32];
    const char *v;
    assert_true(commands_split_set("temp 0.1", p, sizeof p, &v));
    assert_string_equal(p, "temp");
    assert_string_equal(v, "0.1");
    assert_true(commands_split_set("  top_k=5", p, sizeof p, &v));
    assert_string_equal(p, "top_k");
    assert_string_equal(v, "5");
    assert_false(commands_split_set("temp", p, sizeof p, &v));
    assert_false(commands_split_set("", p, sizeof p, &v));
    assert_false(commands_split_set("averyveryveryverylongparametername 1", p, 8, &v));
}

static void test_help_lists_everything(void **state)
{
    (void)state;
    const char *help = commands_help_text();
    for (const ui_command *c = commands_table; c->name; c++) {
        char needle[40];
        snprintf(needle, sizeof needle, "/%s ", c->name);
        assert_non_null(strstr(help, needle));
    }
    for (const char *k = "Enter\0Esc\0Tab\0F1\0Ctrl-L\0Ctrl-Q\0Alt-Enter\0PgUp\0"; *k; k += strlen(k) + 1)
        assert_non_null(strstr(help, k));
}

static void test_man_page_lists_everything(void **state)
{
    (void)state;
    FILE *f = fopen("man/tokscope.1", "r");
    assert_non_null(f);
    static char man[1 << 17];
    size_t n = fread(man, 1, sizeof man - 1, f);
    fclose(f);
    man[n] = 0;
    for (const ui_command *c = commands_table; c->name; c++) {
        char needle[40];
        snprintf(needle, sizeof needle, "/%s", c->name);
        if (!strstr(man, needle))
            fail_msg("man page does not document %s", needle);
    }
    for (const char *k = "SUBCOMMANDS\0FILES\0ENVIRONMENT\0NO_COLOR\0XDG_STATE_HOME\0HF_HOME\0OLLAMA_MODELS\0"; *k;
         k += strlen(k) + 1)
        if (!strstr(man, k))
            fail_msg("man page lacks %s", k);
}

static ui_app *fake_app(void)
{
    ui_app *app = calloc(1, sizeof *app);
    assert_non_null(app);
    app->sp.temp = 0.8f;
    app->sp.top_k = 40;
    app->sp.n_top = 10;
    app->gen_conv_id = -1;
    app->next_conv_id = 1;
    app->state = UI_STATE_IDLE;
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

static void test_dispatch(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    commands_run(app, "/set temp 0.1");
    assert_float_equal(app->sp.temp, 0.1f, 1e-7);
    assert_non_null(strstr(app->msg, "temp = 0.10"));
    commands_run(app, "/set temp hot");
    assert_float_equal(app->sp.temp, 0.1f, 1e-7);
    assert_int_equal(app->msg_level, UI_MSG_ERROR);
    commands_run(app, "/set");
    assert_non_null(strstr(app->msg, "usage"));
    commands_run(app, "/frobnicate now");
    assert_non_null(strstr(app->msg, "unknown command /frobnicate"));
    commands_run(app, "/post");
    assert_true(app->post_order);
    commands_run(app, "/raw");
    assert_false(app->post_order);
    commands_run(app, "/system Be brief.");
    assert_string_equal(ui_current(app)->system, "Be brief.");
    commands_run(app, "/new Other prompt");
    assert_int_equal(app->n_convs, 2);
    assert_int_equal(app->cur, 1);
    assert_string_equal(ui_current(app)->system, "Other prompt");
    conv_add_msg(ui_current(app), "user", "hi");
    commands_run(app, "/clear");
    assert_int_equal(ui_current(app)->n_msgs, 0);
    commands_run(app, "/regen");
    assert_non_null(strstr(app->msg, "nothing to regenerate"));
    commands_run(app, "/template nosuchformat");
    assert_non_null(strstr(app->msg, "unknown template"));
    commands_run(app, "/template chatml");
    assert_string_equal(app->template_name, "chatml");
    commands_run(app, "/help");
    assert_non_null(app->overlay);
    commands_run(app, "/show");
    assert_string_equal(app->overlay_title, "Settings");
    commands_run(app, "/save");
    assert_non_null(strstr(app->msg, "usage"));
    commands_run(app, "/load /nonexistent/x.json");
    assert_int_equal(app->msg_level, UI_MSG_ERROR);
    assert_false(app->quit);
    commands_run(app, "/quit");
    assert_true(app->quit);
    /* issue 35, item 6: an error stays until the next key; a status of the
     * engine (a context shift) does not replace it, the next command does */
    commands_run(app, "/set temp hot");
    ui_message(app, UI_MSG_WARN, "context shift: dropped 8 tokens");
    assert_int_equal(app->msg_level, UI_MSG_ERROR);
    assert_non_null(strstr(app->msg, "not a number"));
    commands_run(app, "/s");
    assert_non_null(strstr(app->msg, "/s is ambiguous: /save /set /show /step /stop /strip /system"));
    commands_run(app, "/set temp 0.3");
    assert_non_null(strstr(app->msg, "temp = 0.30"));
    free_app(app);
}

static void test_save_load_roundtrip(void **state)
{
    (void)state;
    char path[] = "/tmp/tokscope-test-ui-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ui_app *app = fake_app();
    conv_set_system(ui_current(app), "sys \"quoted\"\n");
    conv_add_msg(ui_current(app), "user", "héllo 日本");
    conv_add_msg(ui_current(app), "assistant", "line1\nline2");
    ui_new_conv(app, "");
    conv_add_msg(app->convs[1], "user", "second");
    app->sp.temp = 0.25f;
    app->sp.seed_set = true;
    app->sp.seed = 99;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "/save %s", path);
    commands_run(app, cmd);
    assert_int_equal(app->msg_level, UI_MSG_INFO);
    ui_app *b = fake_app();
    snprintf(cmd, sizeof cmd, "/load %s", path);
    commands_run(b, cmd);
    assert_int_equal(b->msg_level, UI_MSG_INFO);
    assert_int_equal(b->n_convs, 2);
    assert_string_equal(b->convs[0]->system, "sys \"quoted\"\n");
    assert_int_equal(b->convs[0]->n_msgs, 2);
    assert_string_equal(b->convs[0]->msgs[0].text, "héllo 日本");
    assert_string_equal(b->convs[0]->msgs[1].role, "assistant");
    assert_string_equal(b->convs[0]->msgs[1].text, "line1\nline2");
    assert_string_equal(b->convs[1]->msgs[0].text, "second");
    assert_float_equal(b->sp.temp, 0.25f, 1e-6);
    assert_true(b->sp.seed_set);
    assert_int_equal(b->sp.seed, 99);
    /* a broken file is refused and changes nothing */
    FILE *f = fopen(path, "w");
    fputs("{\"conversations\": [{\"messages\": [{\"role\": \"wizard\", \"content\": \"x\"}]}]}", f);
    fclose(f);
    commands_run(b, cmd);
    assert_int_equal(b->msg_level, UI_MSG_ERROR);
    assert_int_equal(b->n_convs, 2);
    /* "params" that is not an object (make fuzz: a NULL key reached strcmp) */
    f = fopen(path, "w");
    fputs("{\"conversations\":[ {\"params\": [0]} ]}", f);
    fclose(f);
    commands_run(b, cmd);
    assert_int_equal(b->msg_level, UI_MSG_ERROR);
    assert_non_null(strstr(b->msg, "params"));
    assert_int_equal(b->n_convs, 2);
    f = fopen(path, "w");
    fputs("{\"params\": 5, \"conversations\":[ {\"messages\": []} ]}", f);
    fclose(f);
    commands_run(b, cmd); /* parameters that do not apply cost no conversation: loaded, with a warning */
    assert_int_equal(b->msg_level, UI_MSG_WARN);
    assert_non_null(strstr(b->msg, "parameters were not applied"));
    assert_int_equal(b->n_convs, 1);
    f = fopen(path, "w");
    fputs("not json", f);
    fclose(f);
    commands_run(b, cmd);
    assert_non_null(strstr(b->msg, "not valid JSON"));
    /* export */
    snprintf(cmd, sizeof cmd, "/export %s", path);
    commands_run(app, cmd);
    f = fopen(path, "r");
    char md[512] = "";
    size_t n = fread(md, 1, sizeof md - 1, f);
    md[n] = 0;
    fclose(f);
    assert_non_null(strstr(md, "## User"));
    remove(path);
    free_app(app);
    free_app(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_split_set),
        cmocka_unit_test(test_help_lists_everything),
        cmocka_unit_test(test_man_page_lists_everything),
        cmocka_unit_test(test_candidates),
        cmocka_unit_test(test_expand_path),
        cmocka_unit_test(test_ends_at_newline),
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_save_load_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
