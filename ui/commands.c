/* Slash command parsing and dispatch. */
#include "commands.h"

#include <ctype.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autosave.h"
#include "explore.h"
#include "input.h"
#include "params.h"
#include "chat/reasoning.h"
#include "store.h"
#include "think.h"
#include "remote_ui.h"
#include "spec/spec.h"
#include "ui.h"

const ui_command commands_table[] = {
    {"help", "", "show keys and commands"},
    {"quit", "", "quit tokscope (also /exit, Ctrl-Q)"},
    {"new", "[SYSTEM]", "start a new conversation (optionally with a system prompt)"},
    {"clear", "", "delete the messages of this conversation"},
    {"stop", "", "stop generating (also Esc)"},
    {"regen", "", "generate the last reply again (the old one stays a version: < > switch)"},
    {"edit", "", "edit the last user message: Enter sends it as a new version"},
    {"system", "[TEXT]", "set (or with no text, clear) this conversation's system prompt"},
    {"set", "PARAM VALUE", "set a parameter (temp, top_k, ..., seed random; think on|off, effort high; spec ngram|draft|mtp|auto|off, draft_max N, draft_model FILE, ...)"},
    {"show", "", "show the model, the parameters and the conversation"},
    {"save", "FILE", "save all conversations and parameters as JSON"},
    {"load", "FILE", "load conversations and parameters saved with /save"},
    {"resume", "[FILE]", "continue the last autosaved session (this one is saved first)"},
    {"export", "FILE.md", "write this conversation as Markdown"},
    {"template", "NAME", "chat template: chatml llama2 llama3 zephyr mistral phi3 gemma vicuna plain raw, or 'model'"},
    {"raw", "", "inspector: order candidates by raw logit"},
    {"post", "", "inspector: order candidates by post-chain probability"},
    {"colors", "", "toggle colouring of tokens by probability (also F4)"},
    {"step", "[on|off]", "step mode: the engine waits before every token (also F6)"},
    {"strip", "[entropy|prob|off]", "a strip under replies: each token's entropy or improbability (F7)"},
    {"lens", "[on|off]", "inspector: the logit lens of the step, block by block (also F8)"},
    {"model", "[ID]", "--remote: pick from the server's models (GET /v1/models), or use model ID"},
    {"probs", "[raw|post]", "--remote, llama-server: ask for raw or post-sampler probabilities"},
    {"compare", "PARAM VALUE...|off", "split: the same prompt under the panel's and these parameters"},
    {NULL, NULL, NULL},
};

static const char *trim(const char *s, size_t *len)
{
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    *len = n;
    return s;
}

bool commands_parse(const char *line, char *name, size_t name_cap, char *args_out, size_t args_cap)
{
    size_t n;
    const char *s = trim(line, &n);
    if (n < 2 || s[0] != '/' || s[1] == '/' || s[1] == ' ')
        return false;
    size_t i = 1, o = 0;
    while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') {
        if (o + 1 < name_cap)
            name[o++] = (char)tolower((unsigned char)s[i]);
        i++;
    }
    if (name_cap)
        name[o] = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    size_t al = n - i;
    if (args_cap) {
        if (al >= args_cap)
            al = args_cap - 1;
        memcpy(args_out, s + i, al);
        args_out[al] = 0;
    }
    return true;
}

const ui_command *commands_find(const char *name)
{
    if (!strcmp(name, "exit") || !strcmp(name, "q"))
        name = "quit";
    if (!strcmp(name, "h") || !strcmp(name, "?"))
        name = "help";
    const ui_command *hit = NULL;
    size_t nl = strlen(name);
    int n_hits = 0;
    for (const ui_command *c = commands_table; c->name; c++) {
        if (!strcmp(c->name, name))
            return c;
        if (nl && !strncmp(c->name, name, nl)) {
            hit = c;
            n_hits++;
        }
    }
    return n_hits == 1 ? hit : NULL;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t commands_candidates(const char *name, char *out, size_t cap)
{
    const char *names[64];
    size_t nl = strlen(name), n = 0, o = 0;
    if (cap)
        out[0] = 0;
    for (const ui_command *c = commands_table; c->name && nl && n < 64; c++)
        if (!strncmp(c->name, name, nl))
            names[n++] = c->name;
    qsort(names, n, sizeof *names, cmp_name); /* alphabetical: easier to scan than the table's order */
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(out + o, o < cap ? cap - o : 0, "%s/%s", i ? " " : "", names[i]);
        if (w > 0)
            o += (size_t)w;
    }
    if (cap && o >= cap)
        out[cap - 1] = 0;
    return n;
}

bool commands_ends_at_newline(const char *line, int next)
{
    char name[32];
    if (!commands_parse(line, name, sizeof name, NULL, 0))
        return false;
    const ui_command *c = commands_find(name);
    /* a system prompt may span lines: it ends where the next command starts */
    if (c && (!strcmp(c->name, "system") || !strcmp(c->name, "new")))
        return next == '/';
    return true;
}

bool commands_expand_path(const char *path, char *out, size_t cap)
{
    if (path[0] != '~')
        return (size_t)snprintf(out, cap, "%s", path) < cap;
    const char *rest = strchr(path, '/');
    size_t ul = rest ? (size_t)(rest - path - 1) : strlen(path + 1);
    const char *home = NULL;
    if (ul == 0) {
        home = getenv("HOME");
        if (!home || !*home) {
            const struct passwd *pw = getpwuid(getuid());
            home = pw ? pw->pw_dir : NULL;
        }
    } else {
        char user[256];
        if (ul >= sizeof user)
            return false;
        memcpy(user, path + 1, ul);
        user[ul] = 0;
        const struct passwd *pw = getpwnam(user);
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home) /* no such user: the name stays as typed */
        return (size_t)snprintf(out, cap, "%s", path) < cap;
    return (size_t)snprintf(out, cap, "%s%s", home, rest ? rest : "") < cap;
}

bool commands_split_set(const char *args, char *param, size_t pcap, const char **value)
{
    while (*args == ' ')
        args++;
    size_t i = 0;
    while (args[i] && args[i] != ' ' && args[i] != '=')
        i++;
    if (i == 0 || i >= pcap)
        return false;
    memcpy(param, args, i);
    param[i] = 0;
    const char *v = args + i;
    while (*v == ' ' || *v == '=')
        v++;
    if (!*v)
        return false;
    *value = v;
    return true;
}

static void cmd_show(ui_app *app)
{
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return;
#define OUT(...) n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__)
    OUT("Model\n");
    if (app->loaded)
        OUT("  %s  (%s, %s)\n  %s\n  layers %u  embd %u  vocab %d  ctx %u (trained %u)\n"
            "  KV cache %s, %.1f MiB\n  BLAS %s\n",
            app->info.name, app->info.arch, app->info.file_type, app->model_path, app->info.n_layer,
            app->info.n_embd, app->info.n_vocab, app->info.n_ctx, app->info.n_ctx_train, app->info.cache_types,
            (double)app->info.cache_bytes / 1048576.0, app->info.blas);
    else
        OUT("  (not loaded) %s\n", app->model_path);
    OUT("  template: %s (reasoning: %s; think %s, effort %s)\n\nSampling\n",
        app->template_name[0] ? app->template_name : app->info.template_name,
        chat_reasoning_style_name((enum chat_reasoning_style)app->think_style), think_value(app, 0),
        think_value(app, 1));
    for (int i = 0; params_names[i]; i++) {
        char v[64];
        params_format(&app->sp, params_names[i], v, sizeof v);
        OUT("  %-18s %s\n", params_names[i], v);
    }
    ui_conv *c = ui_current(app);
    OUT("\nConversation %zu of %zu: %zu messages\n", app->cur + 1, app->n_convs, c->n_msgs);
    OUT("  system: %s\n", c->system[0] ? c->system : "(none)");
#undef OUT
    if (n >= cap)
        buf[cap - 1] = 0;
    ui_overlay_show(app, "Settings", buf);
    free(buf);
}

void commands_run(ui_app *app, const char *line)
{
    char name[32], args[4096];
    if (!commands_parse(line, name, sizeof name, args, sizeof args))
        return;
    app->msg_hold = false; /* typed, so the error before it has been seen: this one's message shows */
    const ui_command *c = commands_find(name);
    if (!c) {
        char cands[512];
        if (commands_candidates(name, cands, sizeof cands) > 1)
            ui_message(app, UI_MSG_ERROR, "/%s is ambiguous: %s", name, cands);
        else
            ui_message(app, UI_MSG_ERROR, "unknown command /%s (try /help)", name);
        return;
    }
    char err[512] = "";
    ui_conv *conv = ui_current(app);
    const char *n = c->name;
    if (!strcmp(n, "help")) {
        ui_show_help(app);
    } else if (!strcmp(n, "quit")) {
        app->quit = true;
    } else if (!strcmp(n, "new")) {
        ui_new_conv(app, args[0] ? args : ui_current(app)->system);
        app->cur = app->n_convs - 1;
        ui_message(app, UI_MSG_INFO, "conversation %zu", app->n_convs);
    } else if (!strcmp(n, "clear")) {
        if (ui_busy(app) && app->gen_conv_id == conv->id) {
            ui_message(app, UI_MSG_WARN, "generating: Esc stops first");
            return;
        }
        conv_clear(conv);
        ui_message(app, UI_MSG_INFO, "conversation cleared");
    } else if (!strcmp(n, "stop")) {
        ui_stop(app);
    } else if (!strcmp(n, "regen")) {
        explore_regen(app);
    } else if (!strcmp(n, "edit")) {
        if (ui_busy(app) && app->gen_conv_id == conv->id) {
            ui_message(app, UI_MSG_WARN, "generating: Esc stops first");
            return;
        }
        size_t k = conv->n_msgs;
        while (k > 0 && strcmp(conv->msgs[k - 1].role, "user") != 0)
            k--;
        if (!k) {
            ui_message(app, UI_MSG_WARN, "no user message to edit");
            return;
        }
        explore_edit_begin(app, conv, k - 1);
    } else if (!strcmp(n, "step") || !strcmp(n, "lens")) {
        int on = !args[0] ? -1 : !strcmp(args, "on") ? 1 : !strcmp(args, "off") ? 0 : -2;
        if (on == -2) {
            ui_message(app, UI_MSG_ERROR, "usage: /%s [on|off]", n);
            return;
        }
        if (!strcmp(n, "step")) {
            explore_step_toggle(app, on);
        } else if ((on > 0 || (on < 0 && !app->lens_on)) && remote_ui_refuse(app, "the logit lens")) {
            return;
        } else {
            app->lens_on = on < 0 ? !app->lens_on : on;
            app->lens_scroll = -1;
            ui_message(app, UI_MSG_INFO, "logit lens %s", app->lens_on ? "on" : "off");
        }
    } else if (!strcmp(n, "strip")) {
        int mode = !args[0] ? (app->strip + 1) % 3
                   : !strcmp(args, "entropy") ? CONV_STRIP_ENTROPY
                   : !strcmp(args, "prob")    ? CONV_STRIP_PROB
                   : !strcmp(args, "off")     ? CONV_STRIP_OFF
                                              : -1;
        if (mode < 0) {
            ui_message(app, UI_MSG_ERROR, "usage: /strip [entropy|prob|off]");
            return;
        }
        app->strip = mode;
        ui_message(app, UI_MSG_INFO, "entropy strip: %s",
                   mode == CONV_STRIP_ENTROPY ? "entropy" : mode == CONV_STRIP_PROB ? "probability" : "off");
    } else if (!strcmp(n, "compare")) {
        if (!args[0] && !app->cmp_on) {
            ui_message(app, UI_MSG_ERROR, "usage: /compare PARAM VALUE [PARAM VALUE ...] (or off)");
            return;
        }
        if (!explore_compare(app, args, err, sizeof err)) {
            ui_message(app, UI_MSG_ERROR, "%s", err);
            return;
        }
        if (!app->cmp_on) {
            ui_message(app, UI_MSG_INFO, "compare off (side B stays a conversation of its own)");
            return;
        }
        char desc[160];
        explore_compare_desc(app, desc, sizeof desc);
        ui_message(app, UI_MSG_INFO, "compare: A the panel's parameters, B %s; a message goes to both", desc);
    } else if (!strcmp(n, "system")) {
        conv_set_system(conv, args);
        ui_message(app, UI_MSG_INFO, args[0] ? "system prompt set" : "system prompt cleared");
    } else if (!strcmp(n, "set")) {
        char param[64];
        const char *value;
        if (!commands_split_set(args, param, sizeof param, &value)) {
            ui_message(app, UI_MSG_ERROR, "usage: /set PARAM VALUE");
            return;
        }
        if (!strcmp(param, "think") || !strcmp(param, "effort")) { /* template variables, next turn */
            if (think_set(app, param, value))
                ui_message(app, UI_MSG_INFO, "%s = %s (from the next turn)", param,
                           think_value(app, !strcmp(param, "think") ? 0 : 1));
            else
                ui_message(app, UI_MSG_ERROR, "%s: %s", param,
                           !strcmp(param, "think") ? "on, off or auto" : "low, medium, high or auto");
            return;
        }
        if (!strcmp(param, "spec") || !strcmp(param, "draft_max") || !strcmp(param, "draft_model")) {
            enum spec_type t;
            char *end = NULL;
            long n = !strcmp(param, "draft_max") ? strtol(value, &end, 10) : 0;
            if (!strcmp(param, "spec") && !spec_type_parse(value, &t)) {
                ui_message(app, UI_MSG_ERROR, "spec: '%s' is not off, ngram, draft, mtp or auto", value);
                return;
            }
            if (end && (end == value || *end || n < 1 || n > SPEC_DRAFT_MAX)) {
                ui_message(app, UI_MSG_ERROR, "draft_max: '%s' is not 1..%d", value, SPEC_DRAFT_MAX);
                return;
            }
            engine_set_spec(app->eng, param, value); /* a draft model is checked when the next reply starts */
            ui_message(app, UI_MSG_INFO, "%s = %s (from the next reply)", param, value);
            return;
        }
        if (!params_set_value(&app->sp, param, value, err, sizeof err)) {
            ui_message(app, UI_MSG_ERROR, "%s", err);
            return;
        }
        ui_params_changed(app);
        char v[64] = "";
        if (!params_format(&app->sp, param, v, sizeof v))
            snprintf(v, sizeof v, "%s", value);
        if (remote_ui_ignored(app, param)) /* not sent: said, never silently */
            ui_message(app, UI_MSG_WARN, "%s = %s (ignored by server)", param, v);
        else
            ui_message(app, UI_MSG_INFO, "%s = %s", param, v);
    } else if (!strcmp(n, "show")) {
        cmd_show(app);
    } else if (!strcmp(n, "save") || !strcmp(n, "load") || !strcmp(n, "export")) {
        if (!args[0]) {
            ui_message(app, UI_MSG_ERROR, "usage: /%s FILE", n);
            return;
        }
        char path[4096];
        if (!commands_expand_path(args, path, sizeof path)) {
            ui_message(app, UI_MSG_ERROR, "/%s: file name too long", n);
            return;
        }
        bool ok = !strcmp(n, "save")   ? store_save(app, path, err, sizeof err)
                  : !strcmp(n, "load") ? store_load(app, path, err, sizeof err)
                                       : store_export_md(app, path, err, sizeof err);
        const char *note = ok && !strcmp(n, "load") ? err : ""; /* conversations a load left out */
        if (ok)
            ui_message(app, note[0] ? UI_MSG_WARN : UI_MSG_INFO, "%s %s%s%s",
                       !strcmp(n, "save") ? "saved" : !strcmp(n, "load") ? "loaded" : "exported", path,
                       note[0] ? "; " : "", note);
        else
            ui_message(app, UI_MSG_ERROR, "%s", err);
    } else if (!strcmp(n, "resume")) {
        char path[4096];
        if (args[0] && !commands_expand_path(args, path, sizeof path)) {
            ui_message(app, UI_MSG_ERROR, "/resume: file name too long");
            return;
        }
        if (autosave_resume(app, args[0] ? path : NULL, err, sizeof err))
            ui_message(app, err[0] ? UI_MSG_WARN : UI_MSG_INFO, "resumed: %zu conversation%s%s%s", app->n_convs,
                       app->n_convs == 1 ? "" : "s", err[0] ? "; " : "", err);
        else
            ui_message(app, UI_MSG_ERROR, "%s", err);
    } else if (!strcmp(n, "model")) {
        remote_ui_model_cmd(app, args);
    } else if (!strcmp(n, "probs")) {
        remote_ui_probs_cmd(app, args);
    } else if (!strcmp(n, "template") && remote_ui_refuse(app, "/template (the server applies its own)")) {
        return;
    } else if (!strcmp(n, "template")) {
        if (!args[0]) {
            ui_message(app, UI_MSG_ERROR, "usage: /template NAME (or 'model')");
            return;
        }
        bool model = !strcmp(args, "model") || !strcmp(args, "auto");
        /* "raw" (contents back to back) is the engine's choice for models without a template */
        bool known = model || !strcmp(args, "raw") || chat_builtin_known(args);
        if (!known) {
            ui_message(app, UI_MSG_ERROR, "unknown template '%s'", args);
            return;
        }
        engine_cmd cmd = {.type = ENGINE_CMD_SET_TEMPLATE, .name = model ? NULL : strdup(args)};
        if (app->eng)
            engine_send(app->eng, &cmd);
        else
            free(cmd.name);
        snprintf(app->template_name, sizeof app->template_name, "%.63s", model ? "" : args);
        think_style_update(app);
        ui_message(app, UI_MSG_INFO, "template %s", model ? "of the model" : args);
    } else if (!strcmp(n, "raw")) {
        app->post_order = false;
        ui_message(app, UI_MSG_INFO, "inspector: raw logit order");
    } else if (!strcmp(n, "post")) {
        app->post_order = true;
        ui_message(app, UI_MSG_INFO, "inspector: post-chain order");
    } else if (!strcmp(n, "colors")) {
        app->prob_colors = !app->prob_colors;
        ui_message(app, UI_MSG_INFO, "probability colours %s", app->prob_colors ? "on" : "off");
    }
}

const char *commands_help_text(void)
{
    static char buf[16384];
    if (buf[0])
        return buf;
    size_t n = 0;
#define OUT(...) n += (size_t)snprintf(buf + n, n < sizeof buf ? sizeof buf - n : 0, __VA_ARGS__)
    OUT("Keys\n"
        "  Enter          send the message (Alt-Enter: new line; pastes keep their newlines);\n"
        "                 during a reply it queues the message, sent when the reply ends\n"
        "                 (slash commands run at once)\n"
        "  Esc            cancel the last queued message, else stop generating (closes a dialog)\n"
        "  Ctrl-C         stop prefill or generation, else clear the input (Up recalls it);\n"
        "                 twice within a second: quit\n"
        "  Tab/Shift-Tab  focus: input -> conversation -> parameters -> inspector\n"
        "  F1             this help          Ctrl-L  redraw        Ctrl-Q  quit\n"
        "  Ctrl-P/Ctrl-N  previous / next conversation (also F2 / F3)\n"
        "  F4             colour assistant tokens by probability\n"
        "  F5             inspector order: raw logit / post-chain probability\n"
        "  F6 F7 F8       step mode / entropy strip / logit lens (see Explore mode)\n"
        "  F9             fold / unfold the reasoning (\"thinking\") at the cursor, else the last one\n"
        "  PgUp/PgDn      scroll the conversation (mouse wheel when enabled)\n"
        "  Up/Down        input: history (or lines of a multi-line message)\n"
        "\nConversation focus (token cursor; typing goes to the input, letters are never commands)\n"
        "  Left/Right     previous / next generated token   Up/Down  line above / below\n"
        "  Home/End       first / last token                Esc       back to the input\n"
        "  Enter          the inspector's candidates          < >      versions of the message\n"
        "  Alt-e          edit the user message above        [ ]      previous / next uncertain token\n"
        "  Alt-t          fold / unfold the reasoning (F9)   Alt-c Alt-r  colours (F4), order (F5)\n"
        "\nInspector focus (typing goes to the input)\n"
        "  Up/Down        pick a candidate     Enter  branch from it (step mode: take it)\n"
        "  Left/Right     previous / next token  Space, Backspace  step mode: draw, undo\n"
        "\nParameter focus\n"
        "  Up/Down        pick      Left/Right  adjust (Shift: x10)\n"
        "  digits, Enter  type a value and apply it         Esc       cancel\n"
        "  think, effort  Left/Right: template variables enable_thinking, reasoning_effort (Reasoning)\n"
        "\nCommands\n");
    for (const ui_command *c = commands_table; c->name; c++) {
        char lhs[64];
        snprintf(lhs, sizeof lhs, "/%s %s", c->name, c->args);
        OUT("  %-22s %s\n", lhs, c->help);
    }
    OUT("  //text                 send a message that starts with '/'\n");
    OUT("  A unique prefix runs its command (/reg is /regen); an ambiguous one lists the\n"
        "  commands it could mean. FILE may start with ~ (the home directory).\n");
    OUT("\nReasoning\n"
        "  A reply's reasoning (Qwen3.x <think>, Gemma 4's thought channel, gpt-oss's analysis\n"
        "  channel; from the model's template) shows dimmed under a \"thinking\" line, open while\n"
        "  the model thinks and folded once the answer starts (F9 or Alt-t, or a click on the line);\n"
        "  the token cursor, inspector, strip and lens work inside it as anywhere. The next\n"
        "  turns send it back to the template apart from the answer, as the template expects.\n"
        "  think auto|on|off, effort auto|low|medium|high (panel, /set): enable_thinking and\n"
        "  reasoning_effort from the next turn; auto passes nothing (the template's default)\n");
    OUT("\nExplore mode\n"
        "  Branch        Tab to the conversation, pick a token, Enter: the inspector's rows;\n"
        "                Enter on another candidate continues from it (the old reply stays a\n"
        "                version); on the chosen one, generates again from there\n"
        "  Versions      < > (or , .) in the conversation: the versions of the message under\n"
        "                the cursor (or the nearest above); headers show them as <2/3>\n"
        "  Edit          Alt-e (conversation) or /edit: Enter sends the message as a new version\n"
        "  Step mode     F6 or /step: the engine waits before each token (status: waiting);\n"
        "                Enter draws, typed text + Enter forces its tokens, Backspace on an\n"
        "                empty line undoes one position, Tab then Up/Down + Enter picks a row\n"
        "  Logit lens    F8 or /lens: per block the head's top-1 on the residual stream, the\n"
        "                chosen token's rank and p; * marks the first block where it is top-1\n"
        "  Strip         F7 or /strip: under each reply line every token's entropy (or 1-p);\n"
        "                ] and [ jump to the next / previous uncertain token (entropy >= 2\n"
        "                nats, or p <= 50%%); with --mouse a click on a token selects it\n"
        "  Compare       /compare temp 1.0 ...: two sides, two parameter sets; a message goes\n"
        "                to both, A answers then B; Ctrl-W switches sides; /compare off\n");
    OUT("\nRemote backend (tokscope --remote URL)\n"
        "  The same screen on an OpenAI-compatible server (llama-server, vLLM, ollama,\n"
        "  tokscope serve). /model lists its models. The inspector shows the server's\n"
        "  candidates (at most 20); the panel dims parameters the server ignores.\n"
        "  llama-server sends raw or post-sampler probabilities, one kind per request:\n"
        "  /probs raw|post (also [remote] probs) picks it from the next request. Works:\n"
        "  chat, /regen, /edit, versions, compare, reasoning; branching where the server\n"
        "  continues an assistant message. Needs the local engine: step mode, the lens,\n"
        "  undo, /template. A failure keeps the partial reply ([cut]); /regen retries.\n");
    OUT("\nNothing lost\n"
        "  Every conversation is autosaved after each reply and on exit (also SIGTERM,\n"
        "  SIGHUP) to $XDG_STATE_HOME/tokscope/sessions (~/.local/state/tokscope/sessions);\n"
        "  /resume or tokscope --resume brings the last one back. /save, /export and the\n"
        "  autosave replace files atomically: a crash never leaves half a file. Beside a\n"
        "  session file goes a snapshot of the KV cache (NAME.kv; [session] save_kv,\n"
        "  kv_max_mb, --no-save-kv): /load and --resume restore it when the model and\n"
        "  settings match, so the conversation is not evaluated again (else: says why).\n"
        "  No key is lost: a dialog (this help, /show, a pick list, an error) closes with\n"
        "  Esc or Enter and scrolls with the arrows and PgUp/PgDn; any other key closes it\n"
        "  and then does its usual job. An error in the status line stays until a key.\n");
#undef OUT
    return buf;
}
