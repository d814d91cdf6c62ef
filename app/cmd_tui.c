/* `tokscope [-m MODEL] [options]`: the chat TUI. Order of precedence:
 * built-in defaults < system config < user config < --config FILE < command
 * line (config.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "model/forward.h"
#include "params.h"
#include "signals.h"
#include "ui.h"

static void tui_usage(FILE *f)
{
    fprintf(f,
            "usage: tokscope [-m MODEL] [options]\n"
            "\n"
            "Opens the chat TUI on MODEL (a GGUF file). Without -m a picker lists the GGUF\n"
            "files in ./models, ~/models, [paths] model_dirs, the Hugging Face cache,\n"
            "LM Studio's and ollama's model stores.\n"
            "\n"
            "options:\n"
            "  -m, --model FILE          GGUF model to load\n"
            "  -c, --ctx-size N          context size (0 = min(trained, 4096))\n"
            "  -t, --threads N           CPU threads (0 = all cores)\n"
            "      --template NAME       chat template: chatml llama2 llama3 zephyr mistral phi3\n"
            "                            gemma vicuna plain raw (default: the model's own)\n"
            "      --system TEXT         system prompt of the first conversation\n"
            "      --config FILE         read FILE after the system and user configuration files\n"
            "      --print-config        print the merged configuration as INI (each value's source\n"
            "                            in a comment) and exit\n"
            "      --no-kv-cache         recompute the whole sequence every step (debugging)\n"
            "      --cache-type-k T      KV cache type of keys: f16 (default), q8_0, q4_0, f32\n"
            "      --cache-type-v T      ... of values (llama.cpp's -ctk/-ctv, the same numbers)\n"
            "      --blas MODE           OpenBLAS for long prompts: auto (default; where measured\n"
            "                            faster, by weight type and batch size), on, off (llama.cpp's bits)\n"
            "      --spec KIND           speculative decoding: off (default), ngram, draft (also\n"
            "                            [spec] type); the same replies, the target verifying drafts\n"
            "      --draft-max N         drafts per verification (3; [spec] draft_max)\n"
            "  -md, --draft-model FILE   the draft GGUF of --spec draft ([spec] draft_model)\n"
            "      --no-context-shift    stop at a full context instead of dropping old tokens\n"
            "      --context-shift       drop the oldest tokens of a full context (the default)\n"
            "      --no-color            monochrome (also: NO_COLOR=1)\n"
            "      --prob-colors         start with tokens coloured by probability\n"
            "      --mouse               mouse wheel scrolls the conversation\n"
            "      --resume[=FILE]       continue the last autosaved session (or FILE, saved\n"
            "                            with /save); without -m, with the model it used\n"
            "      --no-autosave         do not write session files (/save still works)\n"
            "      --no-save-kv          no KV snapshot beside session files ([session] save_kv):\n"
            "                            --resume and /load then evaluate the conversation again\n"
            "\n"
            "remote backend (an OpenAI-compatible server: llama-server, vLLM, ollama,\n"
            "tokscope serve; see tokscope(1), REMOTE BACKEND):\n"
            "      --remote URL          talk to the server at URL instead of a local model\n"
            "                            (also [remote] url)\n"
            "      --remote-model ID     the server's model to use (default: its first; /model\n"
            "                            lists them)\n"
            "      --api-key-file FILE   read the API key from FILE (also [remote] api_key_file,\n"
            "                            or TOKSCOPE_API_KEY); never give the key itself\n"
            "\n"
            "sampling (also /set PARAM VALUE and the parameter panel):\n"
            "      --temp T              temperature (0.8; 0 = greedy)\n"
            "      --top-k N             (40; 0 = off)\n"
            "      --top-p P             (0.95; 1 = off)\n"
            "      --min-p P             (0.05; 0 = off)\n"
            "      --typical-p P         (1.0 = off)\n"
            "      --repeat-penalty F    (1.0 = off)\n"
            "      --repeat-last-n N     (64; -1 = whole context)\n"
            "      --frequency-penalty F (0)\n"
            "      --presence-penalty F  (0)\n"
            "      --seed S              PRNG seed (default: random)\n"
            "      --dry-multiplier F    DRY repetition penalty (0 = off; also --dry-base F,\n"
            "                            --dry-allowed-length N, --dry-penalty-last-n N)\n"
            "      --dry-sequence-breaker S  a DRY sequence breaker, repeatable: the first clears\n"
            "                            the defaults ('\\n' ':' '\"' '*'), \"none\" clears all\n"
            "  -n, --n-predict N         tokens per reply (-1 = until the end of the turn)\n"
            "      --n-top N             candidates shown in the inspector (10)\n"
            "  -h, --help                this help\n"
            "\n"
            "Sessions are autosaved after every reply and on exit (also on SIGTERM and\n"
            "SIGHUP) to $XDG_STATE_HOME/tokscope/sessions (default ~/.local/state/tokscope/\n"
            "sessions; the newest 50 are kept), atomically, with a snapshot of the KV cache\n"
            "beside the newest 5 (NAME.kv; [session] kv_max_mb caps one, 1024 MiB) that\n"
            "--resume and /load restore instead of evaluating the conversation again when\n"
            "the model and settings match. Enter during a reply queues the\n"
            "message; Ctrl-C stops a reply, twice within a second quits.\n"
            "\n"
            "In the TUI: F1 or /help lists keys and commands. See tokscope(1).\n");
}

/* The options the TUI takes; those that set a configuration key name it
 * here: [section] key = value (value NULL: the option's argument). label is
 * the source --print-config shows. */
static const struct {
    int id;
    const char *label, *section, *key, *value;
} tui_opts[] = {
    {CLI_MODEL, "-m", "paths", "model", NULL},
    {CLI_CTX, "-c", "engine", "n_ctx", NULL},
    {CLI_THREADS, "-t", "engine", "threads", NULL},
    {CLI_N_PREDICT, "-n", "sampling", "n_predict", NULL},
    {CLI_TEMPLATE, "--template", "engine", "template", NULL},
    {CLI_SYSTEM, "--system", "chat", "system", NULL},
    {CLI_NO_KV, "--no-kv-cache", "engine", "kv_cache", "false"},
    {CLI_CTK, "--cache-type-k", "engine", "cache_type_k", NULL},
    {CLI_CTV, "--cache-type-v", "engine", "cache_type_v", NULL},
    {CLI_BLAS, "--blas", "engine", "blas", NULL},
    {CLI_NO_SHIFT, "--no-context-shift", "engine", "context_shift", "false"},
    {CLI_SHIFT, "--context-shift", "engine", "context_shift", "true"},
    {CLI_NO_COLOR, "--no-color", "ui", "colors", "false"},
    {CLI_PROB_COLORS, "--prob-colors", "ui", "prob_colors", "true"},
    {CLI_MOUSE, "--mouse", "ui", "mouse", "true"},
    {CLI_SPEC, "--spec", "spec", "type", NULL},
    {CLI_DRAFT_MAX, "--draft-max", "spec", "draft_max", NULL},
    {CLI_DRAFT_MODEL, "--draft-model", "spec", "draft_model", NULL},
    {CLI_NO_AUTOSAVE, "--no-autosave", "ui", "autosave", "false"},
    {CLI_NO_SAVE_KV, "--no-save-kv", "session", "save_kv", "false"},
    {CLI_REMOTE, "--remote", "remote", "url", NULL},
    {CLI_REMOTE_MODEL, "--remote-model", "remote", "model", NULL},
    {CLI_API_KEY_FILE, "--api-key-file", "remote", "api_key_file", NULL},
    {CLI_TEMP, "--temp", "sampling", "temp", NULL},
    {CLI_TOP_K, "--top-k", "sampling", "top_k", NULL},
    {CLI_TOP_P, "--top-p", "sampling", "top_p", NULL},
    {CLI_MIN_P, "--min-p", "sampling", "min_p", NULL},
    {CLI_TYPICAL, "--typical-p", "sampling", "typical_p", NULL},
    {CLI_REPEAT_PENALTY, "--repeat-penalty", "sampling", "repeat_penalty", NULL},
    {CLI_REPEAT_LAST_N, "--repeat-last-n", "sampling", "repeat_last_n", NULL},
    {CLI_FREQUENCY_PENALTY, "--frequency-penalty", "sampling", "frequency_penalty", NULL},
    {CLI_PRESENCE_PENALTY, "--presence-penalty", "sampling", "presence_penalty", NULL},
    {CLI_SEED, "--seed", "sampling", "seed", NULL},
    {CLI_N_TOP, "--n-top", "sampling", "n_top", NULL},
    {CLI_DRY_MULTIPLIER, "--dry-multiplier", "sampling", "dry_multiplier", NULL},
    {CLI_DRY_BASE, "--dry-base", "sampling", "dry_base", NULL},
    {CLI_DRY_ALLOWED_LENGTH, "--dry-allowed-length", "sampling", "dry_allowed_length", NULL},
    {CLI_DRY_PENALTY_LAST_N, "--dry-penalty-last-n", "sampling", "dry_penalty_last_n", NULL},
    {CLI_DRY_BREAKER, NULL, NULL, NULL, NULL}, /* no configuration key: the breakers are strings */
    /* what to do this time, not preferences */
    {CLI_HELP, NULL, NULL, NULL, NULL},
    {CLI_CONFIG, NULL, NULL, NULL, NULL},
    {CLI_PRINT_CONFIG, NULL, NULL, NULL, NULL},
    {CLI_RESUME, NULL, NULL, NULL, NULL},
};
#define N_TUI_OPTS (sizeof tui_opts / sizeof tui_opts[0])

/* "N problems in the configuration; the first: FILE:LINE: ..." from the
 * reports config_load wrote (one per line, each "tokscope: ..."). */
static void config_note_from(const char *reports, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = reports; *p; p++)
        n += *p == '\n';
    if (!n)
        return;
    static const char prefix[] = "tokscope: ";
    const char *first = strncmp(reports, prefix, sizeof prefix - 1) ? reports : reports + sizeof prefix - 1;
    int len = (int)strcspn(first, "\n");
    if (n == 1)
        snprintf(out, cap, "config: %.*s", len, first);
    else
        snprintf(out, cap, "config: %zu problems (all listed on stderr); the first: %.*s", n, len, first);
}

/* The API key: the first line of path, blanks trimmed (malloc'd), or NULL
 * with a message that names the file, never its content. */
static char *read_api_key(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "tokscope: [remote] api_key_file: cannot read '%s'\n", path);
        return NULL;
    }
    char line[4096] = "";
    char *ok = fgets(line, sizeof line, f);
    fclose(f);
    size_t n = ok ? strcspn(line, "\r\n") : 0;
    while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    size_t b = strspn(line, " \t");
    char *key = n > b ? strndup(line + b, n - b) : NULL;
    memset(line, 0, sizeof line);
    if (!key)
        fprintf(stderr, "tokscope: [remote] api_key_file: '%s' holds no key on its first line\n", path);
    return key;
}

int cmd_tui(int argc, char **argv)
{
    int opt_ids[N_TUI_OPTS];
    for (size_t i = 0; i < N_TUI_OPTS; i++)
        opt_ids[i] = tui_opts[i].id;

    /* pass 1: --help, --config and --print-config (the files are read
     * before the options override them); mistakes are reported in pass 2 */
    const char *config_path = NULL;
    bool print_config = false;
    cli p;
    cli_value v;
    cli_begin(&p, NULL, opt_ids, N_TUI_OPTS, false, argc, argv);
    p.quiet = true;
    int c;
    while ((c = cli_next(&p, &v)) != CLI_END) {
        if (c == CLI_HELP) {
            tui_usage(stdout);
            return 0;
        }
        if (c == CLI_CONFIG)
            config_path = v.text;
        if (c == CLI_PRINT_CONFIG)
            print_config = true;
    }
    tok_config cfg;
    config_init(&cfg);
    char path_buf[4096], err[512] = "";
    /* the reports go to stderr, which the TUI's screen then covers: the
     * first of them is also shown in the TUI */
    char *diag_text = NULL;
    size_t diag_len = 0;
    FILE *diag = open_memstream(&diag_text, &diag_len);
    if (!diag)
        diag = stderr;
    bool ok = config_load(&cfg, config_system_path(), false, diag, err, sizeof err) &&
              config_load(&cfg, config_default_path(path_buf, sizeof path_buf), false, diag, err, sizeof err) &&
              (!config_path || config_load(&cfg, config_path, true, diag, err, sizeof err));
    char config_note[512] = "";
    if (diag != stderr) {
        fclose(diag);
        fwrite(diag_text, 1, diag_len, stderr);
        config_note_from(diag_text, config_note, sizeof config_note);
        free(diag_text);
    }
    if (!ok) {
        fprintf(stderr, "tokscope: config: %s\n", err);
        config_free(&cfg);
        return 2;
    }
    config_apply_env(&cfg);
    ui_options *o = &cfg.ui;
    o->config_note = config_note[0] ? config_note : NULL;

    /* pass 2: everything else overrides the files */
    int rc = 0;
    bool dry_cleared = false;
    cli_begin(&p, NULL, opt_ids, N_TUI_OPTS, false, argc, argv);
    while (!rc && (c = cli_next(&p, &v)) != CLI_END) {
        if (c == CLI_ERROR) {
            rc = 2;
            break;
        }
        size_t i = 0;
        while (i < N_TUI_OPTS && tui_opts[i].id != c)
            i++;
        if (i < N_TUI_OPTS && tui_opts[i].key) {
            const char *value = tui_opts[i].value ? tui_opts[i].value : v.text;
            if (!config_set(&cfg, tui_opts[i].section, tui_opts[i].key, value, tui_opts[i].label, err, sizeof err))
                rc = cli_fail(&p, "invalid value '%s' for %s: %s", v.text ? v.text : "", p.typed, err);
        } else if (c == CLI_DRY_BREAKER) {
            if (!cli_dry_breaker(&o->engine.sampling, &dry_cleared, v.text))
                rc = cli_fail(&p, "more than %d DRY sequence breakers", SAMPLER_MAX_DRY_BRK);
        } else if (c == CLI_RESUME) {
            /* what to do this time, not a preference: not a configuration key */
            o->resume = true;
            o->resume_path = v.text;
            if (v.text && access(v.text, R_OK) != 0) {
                fprintf(stderr, "tokscope: --resume: cannot read '%s'\n", v.text);
                rc = 2;
            }
        }
    }
    if (!rc && cli_rest(&p) < argc)
        rc = cli_fail(&p, "unexpected argument '%s'", argv[cli_rest(&p)]);
    if (!rc && print_config) {
        config_print(&cfg, stdout);
        config_free(&cfg);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    char *api_key = NULL;
    if (!rc && o->engine.remote_url) {
        /* the remote backend: no model file; the key from its file or the
         * environment, held in memory only */
        o->engine.model_path = NULL;
        if (cfg.api_key_file[0] && !(api_key = read_api_key(cfg.api_key_file)))
            rc = 2;
        else if (!api_key && getenv("TOKSCOPE_API_KEY") && *getenv("TOKSCOPE_API_KEY"))
            api_key = strdup(getenv("TOKSCOPE_API_KEY"));
        o->engine.remote_api_key = api_key;
    }
    if (!rc && o->engine.model_path && access(o->engine.model_path, R_OK) != 0) {
        fprintf(stderr, "tokscope: cannot read model '%s'\n", o->engine.model_path);
        rc = 1;
    }
    if (!rc && (!isatty(0) || !isatty(1))) {
        fprintf(stderr, "tokscope: the TUI needs a terminal (use 'tokscope generate' for scripts)\n");
        rc = 2;
    }
    if (!rc) {
        signals_save_terminal(); /* a SIGBUS handler puts it back before its message */
        rc = ui_run(o);
    }
    if (api_key) {
        memset(api_key, 0, strlen(api_key));
        free(api_key);
    }
    config_free(&cfg);
    return rc;
}
