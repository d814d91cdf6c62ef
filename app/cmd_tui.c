/* `tokscope [-m MODEL] [options]`: the chat TUI. Order of precedence:
 * built-in defaults < system config < user config < --config FILE < command
 * line (config.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
            "  -n, --n-predict N         tokens per reply (-1 = until the end of the turn)\n"
            "      --n-top N             candidates shown in the inspector (10)\n"
            "  -h, --help                this help\n"
            "\n"
            "Sessions are autosaved after every reply and on exit (also on SIGTERM and\n"
            "SIGHUP) to $XDG_STATE_HOME/tokscope/sessions (default ~/.local/state/tokscope/\n"
            "sessions; the newest 50 are kept), atomically. Enter during a reply queues the\n"
            "message; Ctrl-C stops a reply, twice within a second quits.\n"
            "\n"
            "In the TUI: F1 or /help lists keys and commands. See tokscope(1).\n");
}

enum {
    OPT_TEMPLATE = 256,
    OPT_SYSTEM,
    OPT_CONFIG,
    OPT_NO_KV,
    OPT_CTK,
    OPT_CTV,
    OPT_BLAS,
    OPT_NO_SHIFT,
    OPT_SHIFT,
    OPT_PRINT_CONFIG,
    OPT_NO_COLOR,
    OPT_PROB_COLORS,
    OPT_MOUSE,
    OPT_RESUME,
    OPT_NO_AUTOSAVE,
    OPT_REMOTE,
    OPT_REMOTE_MODEL,
    OPT_API_KEY_FILE,
    OPT_SPEC,
    OPT_DRAFT_MAX,
    OPT_DRAFT_MODEL,
    OPT_SAMPLING, /* + index into sampling_opts */
};

static const char *const sampling_opts[][3] = {
    {"temp", "temp", "--temp"},
    {"top-k", "top_k", "--top-k"},
    {"top-p", "top_p", "--top-p"},
    {"min-p", "min_p", "--min-p"},
    {"typical-p", "typical_p", "--typical-p"},
    {"repeat-penalty", "repeat_penalty", "--repeat-penalty"},
    {"repeat-last-n", "repeat_last_n", "--repeat-last-n"},
    {"frequency-penalty", "frequency_penalty", "--frequency-penalty"},
    {"presence-penalty", "presence_penalty", "--presence-penalty"},
    {"seed", "seed", "--seed"},
    {"n-predict", "n_predict", "--n-predict"},
    {"n-top", "n_top", "--n-top"},
};
#define N_SAMPLING_OPTS (sizeof sampling_opts / sizeof sampling_opts[0])

/* An option that sets one configuration key: [section] key = value (value
 * NULL: the option's argument). */
static const struct {
    int opt;
    const char *label, *section, *key, *value;
} option_keys[] = {
    {'m', "-m", "paths", "model", NULL},
    {'c', "-c", "engine", "n_ctx", NULL},
    {'t', "-t", "engine", "threads", NULL},
    {'n', "-n", "sampling", "n_predict", NULL},
    {OPT_TEMPLATE, "--template", "engine", "template", NULL},
    {OPT_SYSTEM, "--system", "chat", "system", NULL},
    {OPT_NO_KV, "--no-kv-cache", "engine", "kv_cache", "false"},
    {OPT_CTK, "--cache-type-k", "engine", "cache_type_k", NULL},
    {OPT_CTV, "--cache-type-v", "engine", "cache_type_v", NULL},
    {OPT_BLAS, "--blas", "engine", "blas", NULL},
    {OPT_NO_SHIFT, "--no-context-shift", "engine", "context_shift", "false"},
    {OPT_SHIFT, "--context-shift", "engine", "context_shift", "true"},
    {OPT_NO_COLOR, "--no-color", "ui", "colors", "false"},
    {OPT_PROB_COLORS, "--prob-colors", "ui", "prob_colors", "true"},
    {OPT_MOUSE, "--mouse", "ui", "mouse", "true"},
    {OPT_SPEC, "--spec", "spec", "type", NULL},
    {OPT_DRAFT_MAX, "--draft-max", "spec", "draft_max", NULL},
    {OPT_DRAFT_MODEL, "--draft-model", "spec", "draft_model", NULL},
    {OPT_NO_AUTOSAVE, "--no-autosave", "ui", "autosave", "false"},
    {OPT_REMOTE, "--remote", "remote", "url", NULL},
    {OPT_REMOTE_MODEL, "--remote-model", "remote", "model", NULL},
    {OPT_API_KEY_FILE, "--api-key-file", "remote", "api_key_file", NULL},
};

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
    struct option opts[32 + N_SAMPLING_OPTS];
    struct option base[] = {
        {"model", required_argument, NULL, 'm'},
        {"ctx-size", required_argument, NULL, 'c'},
        {"threads", required_argument, NULL, 't'},
        {"template", required_argument, NULL, OPT_TEMPLATE},
        {"system", required_argument, NULL, OPT_SYSTEM},
        {"config", required_argument, NULL, OPT_CONFIG},
        {"print-config", no_argument, NULL, OPT_PRINT_CONFIG},
        {"no-kv-cache", no_argument, NULL, OPT_NO_KV},
        {"cache-type-k", required_argument, NULL, OPT_CTK},
        {"cache-type-v", required_argument, NULL, OPT_CTV},
        {"blas", required_argument, NULL, OPT_BLAS},
        {"no-context-shift", no_argument, NULL, OPT_NO_SHIFT},
        {"context-shift", no_argument, NULL, OPT_SHIFT},
        {"no-color", no_argument, NULL, OPT_NO_COLOR},
        {"prob-colors", no_argument, NULL, OPT_PROB_COLORS},
        {"mouse", no_argument, NULL, OPT_MOUSE},
        {"resume", optional_argument, NULL, OPT_RESUME},
        {"no-autosave", no_argument, NULL, OPT_NO_AUTOSAVE},
        {"remote", required_argument, NULL, OPT_REMOTE},
        {"remote-model", required_argument, NULL, OPT_REMOTE_MODEL},
        {"api-key-file", required_argument, NULL, OPT_API_KEY_FILE},
        {"spec", required_argument, NULL, OPT_SPEC},
        {"draft-max", required_argument, NULL, OPT_DRAFT_MAX},
        {"draft-model", required_argument, NULL, OPT_DRAFT_MODEL},
        {"help", no_argument, NULL, 'h'},
    };
    size_t nb = sizeof base / sizeof base[0], no = 0;
    for (size_t i = 0; i < nb; i++)
        opts[no++] = base[i];
    for (size_t i = 0; i < N_SAMPLING_OPTS; i++)
        opts[no++] = (struct option){sampling_opts[i][0], required_argument, NULL, OPT_SAMPLING + (int)i};
    opts[no] = (struct option){0};

    /* pass 1: --help, --config and --print-config (the files are read
     * before the options override them) */
    const char *config_path = NULL;
    bool print_config = false;
    for (int i = 1; i < argc; i++) /* llama.cpp's two-letter -md */
        if (!strcmp(argv[i], "-md"))
            argv[i] = (char *)"--draft-model";
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "m:c:t:n:h", opts, NULL)) != -1) {
        if (c == 'h') {
            tui_usage(stdout);
            return 0;
        }
        if (c == OPT_CONFIG)
            config_path = optarg;
        if (c == OPT_PRINT_CONFIG)
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
    opterr = 1;
    optind = 1;
    int rc = 0;
    while ((c = getopt_long(argc, argv, "m:c:t:n:h", opts, NULL)) != -1) {
        const char *label = NULL, *section = NULL, *key = NULL, *value = optarg;
        for (size_t i = 0; i < sizeof option_keys / sizeof option_keys[0]; i++)
            if (option_keys[i].opt == c) {
                label = option_keys[i].label;
                section = option_keys[i].section;
                key = option_keys[i].key;
                if (option_keys[i].value)
                    value = option_keys[i].value;
            }
        if (c >= OPT_SAMPLING && c < OPT_SAMPLING + (int)N_SAMPLING_OPTS) {
            label = sampling_opts[c - OPT_SAMPLING][2];
            section = "sampling";
            key = sampling_opts[c - OPT_SAMPLING][1];
        }
        if (key) {
            if (!config_set(&cfg, section, key, value, label, err, sizeof err)) {
                fprintf(stderr, "tokscope: %s: %s\n", label, err);
                rc = 2;
            }
        } else if (c == OPT_RESUME) {
            /* what to do this time, not a preference: not a configuration key */
            o->resume = true;
            o->resume_path = optarg;
            if (optarg && access(optarg, R_OK) != 0) {
                fprintf(stderr, "tokscope: --resume: cannot read '%s'\n", optarg);
                rc = 2;
            }
        } else if (c == '?') {
            fprintf(stderr, "tokscope: try 'tokscope --help' or 'tokscope -m MODEL --help'\n");
            rc = 2;
        }
        if (rc)
            break;
    }
    if (!rc && optind < argc) {
        fprintf(stderr, "tokscope: unexpected argument '%s' (try tokscope --help)\n", argv[optind]);
        rc = 2;
    }
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
