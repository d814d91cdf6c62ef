/* Nothing lost: the autosave (session files, the writer thread, the rescue
 * file when the state directory fails), resuming, the queue of messages
 * typed during a reply, and what a saved file holds (valid UTF-8, a
 * summary). Driven on a UI state without a terminal or an engine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "autosave.h"
#include "input.h"
#include "queued.h"
#include "store.h"
#include "testutil.h"
#include "ui.h"
#include "utf8.h"

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s/tokscope-autosave-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir))
        return -1;
    char p[512];
    snprintf(p, sizeof p, "%s/state", g_dir);
    setenv("XDG_STATE_HOME", p, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' && rm -rf '%s'", g_dir, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static ui_app *fake_app(void)
{
    ui_app *app = calloc(1, sizeof *app);
    assert_non_null(app);
    app->gen_conv_id = -1;
    app->next_conv_id = 1;
    app->state = UI_STATE_IDLE;
    app->loaded = true;
    app->sp = sampler_default_params();
    snprintf(app->model_path, sizeof app->model_path, "/models/m.gguf");
    ui_new_conv(app, "");
    return app;
}

static void free_app(ui_app *app)
{
    queued_free(app);
    for (size_t i = 0; i < app->n_convs; i++)
        conv_free(app->convs[i]);
    free(app->convs);
    ui_overlay_close(app);
    free(app);
}

static size_t count_sessions(char *newest, size_t cap)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/state/tokscope/sessions", g_dir);
    size_t n = 0;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null | grep -c '\\.json$'", dir);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (fscanf(p, "%zu", &n) != 1)
            n = 0;
        pclose(p);
    }
    if (newest && !autosave_find_last(dir, NULL, newest, cap))
        newest[0] = 0;
    return n;
}

static cJSON *parse_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    assert_true(utf8_valid(buf, n));
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static void test_state_dir(void **state)
{
    (void)state;
    char buf[512], home[512];
    snprintf(home, sizeof home, "%s", getenv("HOME") ? getenv("HOME") : "/");
    setenv("XDG_STATE_HOME", "/x/state", 1);
    setenv("HOME", "/home/u", 1);
    assert_string_equal(autosave_state_dir(buf, sizeof buf), "/x/state/tokscope");
    setenv("XDG_STATE_HOME", "", 1);
    assert_string_equal(autosave_state_dir(buf, sizeof buf), "/home/u/.local/state/tokscope");
    unsetenv("XDG_STATE_HOME");
    assert_string_equal(autosave_state_dir(buf, sizeof buf), "/home/u/.local/state/tokscope");
    unsetenv("HOME");
    assert_string_equal(autosave_state_dir(buf, sizeof buf), "");
    setenv("HOME", home, 1);
}

/* Nothing is written for a session without messages; a completed turn is
 * written (by the writer thread), the exit save has the final state. */
static void test_autosave_turns(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    autosave_init(app, true);
    assert_non_null(app->autosave);
    assert_null(autosave_last_path(app)); /* nothing before us */
    autosave_request(app);
    char msg[1024];
    char newest[4300];
    assert_true(autosave_finish(app, msg, sizeof msg));
    assert_string_equal(msg, "");
    assert_int_equal(count_sessions(NULL, 0), 0); /* empty: no file */

    autosave_init(app, true);
    ui_conv *c = ui_current(app);
    conv_add_msg(c, "user", "Once upon a time");
    conv_add_msg(c, "assistant", "there was a \xff byte"); /* a byte token: not UTF-8 */
    autosave_request(app);
    conv_add_msg(c, "user", "And then?");
    conv_add_msg(c, "assistant", ""); /* a placeholder: not saved */
    assert_true(autosave_finish(app, msg, sizeof msg));
    assert_string_equal(msg, "");
    assert_int_equal(count_sessions(newest, sizeof newest), 1);
    cJSON *j = parse_file(newest);
    const cJSON *msgs =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "conversations"), 0), "messages");
    assert_int_equal(cJSON_GetArraySize(msgs), 3);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "content")->valuestring,
                        "there was a \xef\xbf\xbd byte");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 2), "content")->valuestring,
                        "And then?");
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "/models/m.gguf");
    cJSON_Delete(j);

    /* its summary, for the offer to resume */
    store_summary s;
    char err[256];
    assert_true(store_peek(newest, &s, err, sizeof err));
    assert_int_equal(s.n_convs, 1);
    assert_int_equal(s.n_msgs, 3);
    assert_string_equal(s.title, "Once upon a time");
    assert_string_equal(s.model, "/models/m.gguf");
    free_app(app);
}

/* A second session offers the first; /resume brings it back, saving the
 * current one first, and then saves into the resumed file. */
static void test_resume(void **state)
{
    (void)state;
    ui_app *a1 = fake_app();
    autosave_init(a1, true);
    conv_add_msg(ui_current(a1), "user", "first session");
    conv_add_msg(ui_current(a1), "assistant", "reply one");
    a1->sp.temp = 0.25f;
    char msg[1024];
    assert_true(autosave_finish(a1, msg, sizeof msg));
    char first[4300];
    assert_int_equal(count_sessions(first, sizeof first), 1);
    free_app(a1);

    ui_app *a2 = fake_app();
    autosave_init(a2, true);
    assert_non_null(autosave_last_path(a2));
    assert_string_equal(autosave_last_path(a2), first);
    char offer[600];
    autosave_offer_text(a2, offer, sizeof offer);
    assert_non_null(strstr(offer, "first session"));
    assert_non_null(strstr(offer, "2 messages"));
    assert_non_null(strstr(offer, "m.gguf"));
    conv_add_msg(ui_current(a2), "user", "second session");
    char err[700];
    assert_true(autosave_resume(a2, NULL, err, sizeof err));
    assert_int_equal(a2->n_convs, 1);
    assert_string_equal(ui_current(a2)->msgs[0].text, "first session");
    assert_float_equal(a2->sp.temp, 0.25, 1e-6); /* its parameters too */
    /* the second session's message was saved before it was replaced */
    assert_int_equal(count_sessions(NULL, 0), 2);
    conv_add_msg(ui_current(a2), "user", "continued");
    assert_true(autosave_finish(a2, msg, sizeof msg));
    assert_int_equal(count_sessions(NULL, 0), 2); /* into the resumed file, no third */
    cJSON *j = parse_file(first);
    const cJSON *msgs =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "conversations"), 0), "messages");
    assert_int_equal(cJSON_GetArraySize(msgs), 3);
    cJSON_Delete(j);
    free_app(a2);

    /* a file that is not a session is read, never written: a new session starts */
    ui_app *a3 = fake_app();
    autosave_init(a3, true);
    char saved[512];
    snprintf(saved, sizeof saved, "%s/mine.json", g_dir);
    conv_add_msg(ui_current(a3), "user", "kept apart");
    assert_true(store_save(a3, saved, err, sizeof err));
    struct stat before;
    assert_int_equal(stat(saved, &before), 0);
    conv_clear(ui_current(a3));
    assert_true(autosave_resume(a3, saved, err, sizeof err));
    conv_add_msg(ui_current(a3), "user", "more");
    assert_true(autosave_finish(a3, msg, sizeof msg));
    struct stat after;
    assert_int_equal(stat(saved, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    assert_int_equal(count_sessions(NULL, 0), 3);
    /* nothing to resume, a file that is not JSON: errors, the state is kept */
    ui_app *a4 = fake_app();
    conv_add_msg(ui_current(a4), "user", "stays");
    assert_false(autosave_resume(a4, NULL, err, sizeof err)); /* no autosave set up */
    assert_non_null(strstr(err, "no autosaved conversation"));
    FILE *f = fopen(saved, "w");
    fputs("{\"conversations\": [", f);
    fclose(f);
    assert_false(autosave_resume(a4, saved, err, sizeof err));
    assert_string_equal(ui_current(a4)->msgs[0].text, "stays");
    free_app(a4);
    free_app(a3);
}

static void test_prune(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/sessions", g_dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    time_t t0 = time(NULL) - 1000;
    for (int i = 0; i < 8; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/2024010%d-000000-1.json", dir, i);
        FILE *f = fopen(p, "w");
        fputs("{}", f);
        fclose(f);
        struct timespec ts[2] = {{t0 + i * 10, 0}, {t0 + i * 10, 0}};
        utimensat(AT_FDCWD, p, ts, 0);
    }
    char last[700], excl[700];
    assert_true(autosave_find_last(dir, NULL, last, sizeof last));
    assert_non_null(strstr(last, "20240107-"));
    snprintf(excl, sizeof excl, "%s", last);
    assert_true(autosave_find_last(dir, excl, last, sizeof last));
    assert_non_null(strstr(last, "20240106-"));
    autosave_prune(dir, 3);
    for (int i = 0; i < 8; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/2024010%d-000000-1.json", dir, i);
        assert_int_equal(access(p, F_OK) == 0, i >= 5);
    }
}

/* KV snapshots (NAME.kv beside NAME.json): a pruned session takes its own
 * along, only the newest AUTOSAVE_KV_KEEP sessions keep theirs, and one
 * whose session file is gone is removed. */
static void test_prune_kv(void **state)
{
    (void)state;
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/sessions", g_dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    time_t t0 = time(NULL) - 1000;
    for (int i = 0; i < 9; i++)
        for (int k = 0; k < 2; k++) {
            snprintf(p, sizeof p, "%s/2024010%d-000000-1.%s", dir, i, k ? "kv" : "json");
            FILE *f = fopen(p, "w");
            fputs("{}", f);
            fclose(f);
            struct timespec ts[2] = {{t0 + i * 10, 0}, {t0 + i * 10, 0}};
            utimensat(AT_FDCWD, p, ts, 0);
        }
    snprintf(p, sizeof p, "%s/20230101-000000-1.kv", dir); /* an orphan */
    FILE *f = fopen(p, "w");
    fclose(f);
    autosave_prune(dir, 7);
    assert_int_not_equal(access(p, F_OK), 0);
    for (int i = 0; i < 9; i++) {
        snprintf(p, sizeof p, "%s/2024010%d-000000-1.json", dir, i);
        assert_int_equal(access(p, F_OK) == 0, i >= 2); /* the newest 7 */
        snprintf(p, sizeof p, "%s/2024010%d-000000-1.kv", dir, i);
        assert_int_equal(access(p, F_OK) == 0, i >= 9 - AUTOSAVE_KV_KEEP);
    }
}

static void drop_dac_caps(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d) != 0)
        return;
    unsigned drop = (1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER);
    d[0].effective &= ~drop;
    d[0].permitted &= ~drop;
    (void)syscall(SYS_capset, &h, d);
}

/* A read-only state directory: said at start, a failed turn is said in the
 * status line, and at exit the conversations go to a rescue file. */
static void test_read_only_state(void **state)
{
    (void)state;
    char st[512], tmp[512];
    snprintf(st, sizeof st, "%s/state/tokscope/sessions", g_dir);
    snprintf(tmp, sizeof tmp, "%s/tmp", g_dir);
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s' && chmod 0555 '%s'", st, tmp, st);
    assert_int_equal(system(cmd), 0);
    setenv("TMPDIR", tmp, 1);
    pid_t pid = fork();
    if (pid == 0) {
        drop_dac_caps();
        ui_app *app = fake_app();
        autosave_init(app, true);
        autosave_poll(app); /* the note shows once the model has loaded */
        int ok = strstr(app->msg, "autosave") && strstr(app->msg, "Permission denied") &&
                 app->msg_level == UI_MSG_ERROR;
        app->msg[0] = 0;
        conv_add_msg(ui_current(app), "user", "do not lose me");
        autosave_request(app);
        for (int i = 0; i < 200 && !app->msg[0]; i++) { /* the writer reports */
            usleep(10000);
            autosave_poll(app);
        }
        ok = ok && strstr(app->msg, "autosave failed") && strstr(app->msg, "/save FILE");
        char msg[1024];
        bool saved = autosave_finish(app, msg, sizeof msg);
        ok = ok && saved && strstr(msg, "autosave failed") && strstr(msg, "tokscope-rescue-");
        _exit(ok ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    unsetenv("TMPDIR");
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    snprintf(cmd, sizeof cmd, "grep -l 'do not lose me' '%s'/tokscope-rescue-*.json >/dev/null", tmp);
    assert_int_equal(system(cmd), 0);
}

/* --no-autosave writes nothing, and still finds the last session. */
static void test_disabled(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    autosave_init(app, false);
    conv_add_msg(ui_current(app), "user", "private");
    autosave_request(app);
    char msg[256];
    assert_true(autosave_finish(app, msg, sizeof msg));
    assert_int_equal(count_sessions(NULL, 0), 0);
    free_app(app);
}

/* The queue of messages typed during a reply. */
static void test_queued(void **state)
{
    (void)state;
    input_init(NULL);
    ui_app *app = fake_app();
    ui_conv *c1 = ui_current(app);
    ui_conv *c2 = ui_new_conv(app, "");
    queued_push(app, c1->id, "first");
    queued_push(app, c1->id, "second");
    queued_push(app, c2->id, "elsewhere");
    assert_int_equal(queued_count(app, c1->id), 2);
    assert_int_equal(queued_count(app, c2->id), 1);
    assert_non_null(strstr(app->msg, "queued"));
    assert_true(queued_rows(app, c1->id, 40, 20) >= 4);   /* blank, label, two lines */
    assert_int_equal(queued_rows(app, c1->id, 40, 2), 0); /* no room: nothing */
    assert_int_equal(queued_rows(app, 99, 40, 20), 0);
    /* Esc: the latest of the visible conversation, back into the empty input */
    assert_true(queued_cancel(app));
    assert_int_equal(queued_count(app, c1->id), 1);
    assert_string_equal(input_text(), "second");
    assert_true(queued_cancel(app));
    assert_string_equal(input_text(), "second"); /* the input is not overwritten */
    assert_non_null(strstr(app->msg, "Up recalls it"));
    assert_false(queued_cancel(app)); /* none left here */
    assert_int_equal(queued_count(app, c2->id), 1);
    /* nothing is sent without an engine and a model */
    app->loaded = false;
    assert_false(queued_dispatch(app));
    assert_int_equal(queued_count(app, c2->id), 1);
    input_set_text("");
    free_app(app);
    input_shutdown();
}

/* A prompt longer than the context with context shift off: the engine's
 * reason, and what to do, in the status line. */
static void test_ctx_full_message(void **state)
{
    (void)state;
    ui_app *app = fake_app();
    conv_add_msg(ui_current(app), "user", "long");
    size_t mi = conv_add_msg(ui_current(app), "assistant", "");
    app->gen_conv_id = ui_current(app)->id;
    app->gen_msg = mi;
    app->state = UI_STATE_PREFILL;
    engine_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = ENGINE_EV_DONE;
    ev.conv_id = app->gen_conv_id;
    ev.reason = ENGINE_DONE_CTX_FULL;
    snprintf(ev.message, sizeof ev.message,
             "the conversation (58000 tokens) does not fit the context (64 tokens)");
    ui_handle_event(app, &ev);
    assert_non_null(strstr(app->msg, "does not fit the context (64 tokens)"));
    assert_non_null(strstr(app->msg, "/edit"));
    assert_int_equal(app->state, UI_STATE_IDLE);
    free_app(app);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_dir),
        cmocka_unit_test_setup_teardown(test_autosave_turns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_kv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled, setup, teardown),
        cmocka_unit_test(test_queued),
        cmocka_unit_test(test_ctx_full_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
