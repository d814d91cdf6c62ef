/* `tokscope [-m MODEL] [options]`: the chat TUI. Order of precedence:
 * built-in defaults < config file < command line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "config.h"
#include "model/forward.h"
#include "params.h"
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
            "      --config FILE         read FILE instead of $XDG_CONFIG_HOME/tokscope/tokscope.ini\n"
            "      --no-kv-cache         recompute the whole sequence every step (debugging)\n"
            "      --cache-type-k T      KV cache type of keys: f16 (default), q8_0, q4_0, f32\n"
            "      --cache-type-v T      ... of values (llama.cpp's -ctk/-ctv, the same numbers)\n"
            "      --blas MODE           OpenBLAS for long prompts: auto (default; where measured\n"
            "                            faster, by weight type and batch size), on, off (llama.cpp's bits)\n"
            "      --no-context-shift    stop at a full context instead of dropping old tokens\n"
            "      --no-color            monochrome (also: NO_COLOR=1)\n"
            "      --prob-colors         start with tokens coloured by probability\n"
            "      --mouse               mouse wheel scrolls the conversation\n"
            "      --resume[=FILE]       continue the last autosaved session (or FILE, saved\n"
            "                            with /save); without -m, with the model it used\n"
            "      --no-autosave         do not write session files (/save still works)\n"
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
    OPT_NO_COLOR,
    OPT_PROB_COLORS,
    OPT_MOUSE,
    OPT_RESUME,
    OPT_NO_AUTOSAVE,
    OPT_SAMPLING, /* + index into sampling_opts */
};

static const char *const sampling_opts[][2] = {
    {"temp", "temp"},
    {"top-k", "top_k"},
    {"top-p", "top_p"},
    {"min-p", "min_p"},
    {"typical-p", "typical_p"},
    {"repeat-penalty", "repeat_penalty"},
    {"repeat-last-n", "repeat_last_n"},
    {"frequency-penalty", "frequency_penalty"},
    {"presence-penalty", "presence_penalty"},
    {"seed", "seed"},
    {"n-predict", "n_predict"},
    {"n-top", "n_top"},
};
#define N_SAMPLING_OPTS (sizeof sampling_opts / sizeof sampling_opts[0])

static bool parse_uint(const char *s, long max, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v > max)
        return false;
    *out = v;
    return true;
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
        {"no-kv-cache", no_argument, NULL, OPT_NO_KV},
        {"cache-type-k", required_argument, NULL, OPT_CTK},
        {"cache-type-v", required_argument, NULL, OPT_CTV},
        {"blas", required_argument, NULL, OPT_BLAS},
        {"no-context-shift", no_argument, NULL, OPT_NO_SHIFT},
        {"no-color", no_argument, NULL, OPT_NO_COLOR},
        {"prob-colors", no_argument, NULL, OPT_PROB_COLORS},
        {"mouse", no_argument, NULL, OPT_MOUSE},
        {"resume", optional_argument, NULL, OPT_RESUME},
        {"no-autosave", no_argument, NULL, OPT_NO_AUTOSAVE},
        {"help", no_argument, NULL, 'h'},
    };
    size_t nb = sizeof base / sizeof base[0], no = 0;
    for (size_t i = 0; i < nb; i++)
        opts[no++] = base[i];
    for (size_t i = 0; i < N_SAMPLING_OPTS; i++)
        opts[no++] = (struct option){sampling_opts[i][0], required_argument, NULL, OPT_SAMPLING + (int)i};
    opts[no] = (struct option){0};

    /* pass 1: --help and --config (the config must be read before the rest applies) */
    const char *config_path = NULL;
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
    }
    tok_config cfg;
    config_init(&cfg);
    char path_buf[4096], err[512] = "";
    bool explicit_cfg = config_path != NULL;
    if (!config_path)
        config_path = config_default_path(path_buf, sizeof path_buf);
    if (!config_load(&cfg, config_path, explicit_cfg, err, sizeof err)) {
        fprintf(stderr, "tokscope: config: %s\n", err);
        config_free(&cfg);
        return 2;
    }
    ui_options *o = &cfg.ui;
    if (cfg.model[0])
        o->engine.model_path = cfg.model;

    /* pass 2: everything else overrides the config */
    opterr = 1;
    optind = 1;
    int rc = 0;
    while ((c = getopt_long(argc, argv, "m:c:t:n:h", opts, NULL)) != -1) {
        long v;
        switch (c) {
        case 'm': o->engine.model_path = optarg; break;
        case 'c':
            if (!parse_uint(optarg, 1L << 24, &v)) {
                fprintf(stderr, "tokscope: -c: '%s' is not a context size\n", optarg);
                rc = 2;
            } else
                o->engine.n_ctx = (uint32_t)v;
            break;
        case 't':
            if (!parse_uint(optarg, 1024, &v)) {
                fprintf(stderr, "tokscope: -t: '%s' is not a thread count (0..1024)\n", optarg);
                rc = 2;
            } else
                o->engine.n_threads = (int32_t)v;
            break;
        case 'n':
            if (!params_set_value(&o->engine.sampling, "n_predict", optarg, err, sizeof err)) {
                fprintf(stderr, "tokscope: %s\n", err);
                rc = 2;
            }
            break;
        case OPT_TEMPLATE: o->engine.template_name = optarg; break;
        case OPT_SYSTEM: o->system = optarg; break;
        case OPT_CONFIG: break;
        case OPT_NO_KV: o->engine.no_kv_cache = true; break;
        case OPT_CTK:
        case OPT_CTV:
            if (!forward_kv_type_parse(optarg, c == OPT_CTK ? &o->engine.cache_type_k : &o->engine.cache_type_v)) {
                fprintf(stderr, "tokscope: --cache-type-%c: '%s' is not f16, q8_0, q4_0 or f32\n",
                        c == OPT_CTK ? 'k' : 'v', optarg);
                rc = 2;
            }
            break;
        case OPT_BLAS:
            if (!blas_mode_parse(optarg, &o->engine.blas)) {
                fprintf(stderr, "tokscope: --blas: '%s' is not auto, on or off\n", optarg);
                rc = 2;
            }
            break;
        case OPT_NO_SHIFT: o->engine.context_shift = false; break;
        case OPT_NO_COLOR: o->colors = false; break;
        case OPT_PROB_COLORS: o->prob_colors = true; break;
        case OPT_MOUSE: o->mouse = true; break;
        case OPT_RESUME:
            o->resume = true;
            o->resume_path = optarg;
            if (optarg && access(optarg, R_OK) != 0) {
                fprintf(stderr, "tokscope: --resume: cannot read '%s'\n", optarg);
                rc = 2;
            }
            break;
        case OPT_NO_AUTOSAVE: o->no_autosave = true; break;
        case '?':
            fprintf(stderr, "tokscope: try 'tokscope --help' or 'tokscope -m MODEL --help'\n");
            rc = 2;
            break;
        default:
            if (c >= OPT_SAMPLING && c < OPT_SAMPLING + (int)N_SAMPLING_OPTS) {
                const char *name = sampling_opts[c - OPT_SAMPLING][1];
                if (!params_set_value(&o->engine.sampling, name, optarg, err, sizeof err)) {
                    fprintf(stderr, "tokscope: --%s: %s\n", sampling_opts[c - OPT_SAMPLING][0], err);
                    rc = 2;
                }
            }
        }
        if (rc)
            break;
    }
    if (!rc && optind < argc) {
        fprintf(stderr, "tokscope: unexpected argument '%s' (try tokscope --help)\n", argv[optind]);
        rc = 2;
    }
    if (!rc && o->engine.template_name && *o->engine.template_name && strcmp(o->engine.template_name, "model") != 0) {
        bool known = !strcmp(o->engine.template_name, "raw") || chat_builtin_known(o->engine.template_name);
        if (!known) {
            fprintf(stderr, "tokscope: unknown template '%s'\n", o->engine.template_name);
            rc = 2;
        }
    } else if (o->engine.template_name && (!*o->engine.template_name || !strcmp(o->engine.template_name, "model")))
        o->engine.template_name = NULL;
    if (!rc && o->engine.model_path && access(o->engine.model_path, R_OK) != 0) {
        fprintf(stderr, "tokscope: cannot read model '%s'\n", o->engine.model_path);
        rc = 1;
    }
    if (!rc && (!isatty(0) || !isatty(1))) {
        fprintf(stderr, "tokscope: the TUI needs a terminal (use 'tokscope generate' for scripts)\n");
        rc = 2;
    }
    if (!rc)
        rc = ui_run(o);
    config_free(&cfg);
    return rc;
}
