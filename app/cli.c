/* The option table and the parser over it (cli.h). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "chat/chat.h"
#include "golden.h"
#include "kernels/blas.h"
#include "model/forward.h"
#include "params.h"
#include "sampler/sampler.h"
#include "spec/spec.h"

/* ---- what a text value must be -------------------------------------------- */

static bool is_kv_type(const char *v)
{
    enum tensor_type t;
    return forward_kv_type_parse(v, &t);
}

static bool is_blas_mode(const char *v)
{
    enum blas_mode m;
    return blas_mode_parse(v, &m);
}

static bool is_ids(const char *v)
{
    int32_t n = 0;
    int32_t *ids = golden_parse_ids(v, &n);
    free(ids);
    return ids != NULL;
}

static bool is_builtin(const char *v)
{
    return chat_builtin_known(v);
}

static bool is_var(const char *v)
{
    const char *eq = strchr(v, '=');
    return eq && eq != v;
}

static bool is_date(const char *d)
{
    int y, m, day;
    char extra;
    return strlen(d) == 10 && sscanf(d, "%4d-%2d-%2d%c", &y, &m, &day, &extra) == 3 && m >= 1 && m <= 12 &&
           day >= 1 && day <= 31;
}

/* "N,N,..": integers from lo to 2^24, no empty item */
static bool is_list_from(const char *s, long lo)
{
    if (!*s)
        return false;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < lo || x > (1L << 24) || (*end && *end != ','))
            return false;
        if (!*end)
            return true;
        p = end + 1;
    }
}

static bool is_list0(const char *s)
{
    return is_list_from(s, 0);
}

static bool is_list1(const char *s)
{
    return is_list_from(s, 1);
}

static bool is_blas_list(const char *s)
{
    char buf[64];
    if (strlen(s) >= sizeof buf)
        return false;
    strcpy(buf, s);
    int k = 0;
    for (char *p = buf;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        if (k++ == 3 || !is_blas_mode(p))
            return false;
        if (!comma)
            return true;
        p = comma + 1;
    }
}

static bool is_spec_type(const char *v)
{
    enum spec_type t;
    return spec_type_parse(v, &t);
}

static bool is_bench_output(const char *v)
{
    return !strcmp(v, "text") || !strcmp(v, "jsonl");
}

/* ---- the table --------------------------------------------------------------
 * The sampling rows are the TUI's [sampling] keys with the ranges of its
 * parameter panel (ui/params.h; test_cli holds what the two take alike). */
#define N_ 0, 0, false, NULL, NULL
#define TEXT_(check, want) 0, 0, false, check, want
#define RANGE_(lo, hi) lo, hi, false, NULL, NULL
#define FROM_(lo, hi) lo, hi, true, NULL, NULL
/* a range of ui/params.h ("lo, hi" in one macro): the panel's */
#define PANEL_(r) RANGE_(r)
#define PANEL_FROM_(r) FROM_(r)

static const cli_opt table[CLI_N_IDS] = {
    [CLI_HELP] = {"help", NULL, 'h', CLI_T_FLAG, N_, "this help"},
    [CLI_MODEL] = {"model", NULL, 'm', CLI_T_TEXT, N_, "GGUF model"},
    [CLI_PROMPT] = {"prompt", NULL, 'p', CLI_T_TEXT, N_, "prompt text"},
    [CLI_TOKENS] = {"tokens", NULL, 0, CLI_T_TEXT, TEXT_(is_ids, "comma-separated token ids (0 or more)"),
                    "the prompt as token ids"},
    [CLI_N_PREDICT] = {"n-predict", NULL, 'n', CLI_T_INT, PANEL_(PARAMS_RANGE_N_PREDICT),
                       "tokens to generate; -1 = no limit"},
    [CLI_CTX] = {"ctx-size", NULL, 'c', CLI_T_INT, RANGE_(0, 1 << 24), "context size; 0 = the default"},
    [CLI_THREADS] = {"threads", NULL, 't', CLI_T_INT, RANGE_(0, 1024), "threads; 0 = all cores"},
    [CLI_BATCH] = {"batch", NULL, 0, CLI_T_INT, RANGE_(1, 4096), "tokens per internal batch"},
    [CLI_TEMP] = {"temp", "temperature", 0, CLI_T_FLOAT, PANEL_FROM_(PARAMS_RANGE_TEMP), "temperature; <= 0 = greedy"},
    [CLI_TOP_K] = {"top-k", NULL, 0, CLI_T_INT, PANEL_FROM_(PARAMS_RANGE_TOP_K), "keep the k most likely; <= 0 = off"},
    [CLI_TOP_P] = {"top-p", NULL, 0, CLI_T_FLOAT, PANEL_(PARAMS_RANGE_TOP_P), "nucleus mass; 1 = off"},
    [CLI_MIN_P] = {"min-p", NULL, 0, CLI_T_FLOAT, PANEL_(PARAMS_RANGE_MIN_P), "drop p < min-p * p_max; 0 = off"},
    [CLI_TYPICAL] = {"typical-p", "typical", 0, CLI_T_FLOAT, PANEL_(PARAMS_RANGE_TYPICAL_P), "locally typical mass; 1 = off"},
    [CLI_REPEAT_PENALTY] = {"repeat-penalty", NULL, 0, CLI_T_FLOAT, PANEL_(PARAMS_RANGE_REPEAT_PENALTY),
                            "penalise repeats; 1 = off"},
    [CLI_REPEAT_LAST_N] = {"repeat-last-n", NULL, 0, CLI_T_INT, PANEL_(PARAMS_RANGE_REPEAT_LAST_N),
                           "tokens the penalties look back; -1 = the context, 0 = off"},
    [CLI_FREQUENCY_PENALTY] = {"frequency-penalty", NULL, 0, CLI_T_FLOAT, PANEL_(PARAMS_RANGE_FREQUENCY_PENALTY),
                               "subtract count x value; 0 = off"},
    [CLI_PRESENCE_PENALTY] = {"presence-penalty", NULL, 0, CLI_T_FLOAT, PANEL_(PARAMS_RANGE_PRESENCE_PENALTY),
                              "subtract value if seen; 0 = off"},
    [CLI_SEED] = {"seed", NULL, 0, CLI_T_SEED, PANEL_(PARAMS_RANGE_SEED),
                  "sampling seed; random (or -1) = fresh"},
    [CLI_N_TOP] = {"n-top", NULL, 0, CLI_T_INT, PANEL_(PARAMS_RANGE_N_TOP),
                   "candidates shown in the inspector"},
    /* DRY: sampler_params_set's ranges (the [sampling] keys) */
    [CLI_DRY_MULTIPLIER] = {"dry-multiplier", NULL, 0, CLI_T_FLOAT, RANGE_(0, 100), "DRY penalty strength; 0 = off"},
    [CLI_DRY_BASE] = {"dry-base", NULL, 0, CLI_T_FLOAT, RANGE_(1, 100), "DRY penalty base"},
    [CLI_DRY_ALLOWED_LENGTH] = {"dry-allowed-length", NULL, 0, CLI_T_INT, RANGE_(0, 1 << 20),
                                "repeats this long go unpenalized"},
    [CLI_DRY_PENALTY_LAST_N] = {"dry-penalty-last-n", NULL, 0, CLI_T_INT, RANGE_(-1, 1 << 24),
                                "tokens DRY looks back; -1 = the context, 0 = off"},
    [CLI_DRY_BREAKER] = {"dry-sequence-breaker", NULL, 0, CLI_T_TEXT, N_,
                         "a DRY sequence breaker (repeatable); none = no breakers"},
    [CLI_NO_BOS] = {"no-bos", NULL, 0, CLI_T_FLAG, N_, "do not add BOS"},
    [CLI_NO_KV] = {"no-kv-cache", NULL, 0, CLI_T_FLAG, N_, "recompute the whole sequence for every token"},
    [CLI_CHAT] = {"chat", NULL, 0, CLI_T_FLAG, N_, "wrap the prompt in the chat template"},
    [CLI_SYSTEM] = {"system", NULL, 0, CLI_T_TEXT, N_, "system message"},
    [CLI_TEMPLATE] = {"template", NULL, 0, CLI_T_TEXT, N_, "a built-in chat format"},
    [CLI_CTK] = {"cache-type-k", "ctk", 0, CLI_T_TEXT, TEXT_(is_kv_type, "f16, q8_0, q4_0 or f32"),
                 "KV cache type of keys"},
    [CLI_CTV] = {"cache-type-v", "ctv", 0, CLI_T_TEXT, TEXT_(is_kv_type, "f16, q8_0, q4_0 or f32"),
                 "KV cache type of values"},
    [CLI_BLAS] = {"blas", NULL, 0, CLI_T_TEXT, TEXT_(is_blas_mode, "auto, on or off"),
                  "OpenBLAS for large batches"},
    [CLI_SHIFT] = {"context-shift", NULL, 0, CLI_T_FLAG, N_, "on a full context drop old tokens"},
    [CLI_NO_SHIFT] = {"no-context-shift", NULL, 0, CLI_T_FLAG, N_, "stop at a full context"},
    [CLI_SPEC] = {"spec", NULL, 0, CLI_T_TEXT, TEXT_(is_spec_type, "off, ngram, draft, mtp or auto"),
                  "speculative decoding"},
    [CLI_DRAFT_MAX] = {"draft-max", NULL, 0, CLI_T_INT, RANGE_(0, SPEC_DRAFT_MAX), "drafts per verification"},
    [CLI_DRAFT_MODEL] = {"draft-model", NULL, 0, CLI_T_TEXT, N_, "the draft model (-md; same vocabulary)"},
    [CLI_SPEC_NGRAM_N] = {"spec-ngram-n", NULL, 0, CLI_T_INT, RANGE_(1, 1024), "tokens an ngram match needs"},
    [CLI_LOGITS_N] = {NULL, NULL, 'n', CLI_T_INT, RANGE_(0, 1 << 20), "greedy tokens to generate"},
    [CLI_LOGITS_K] = {NULL, NULL, 'k', CLI_T_INT, RANGE_(0, 1 << 24), "logits listed per position"},
    [CLI_ONE_BY_ONE] = {"one-by-one", NULL, 0, CLI_T_FLAG, N_, "evaluate one token at a time"},
    [CLI_LAST] = {"last", NULL, 0, CLI_T_FLAG, N_, "only the prompt's last position"},
    [CLI_LENS] = {"lens", NULL, 0, CLI_T_FLAG, N_, "the logit lens of every block"},
    [CLI_LENS_LAYER] = {"lens-layer", NULL, 0, CLI_T_INT, RANGE_(1, 65536),
                        "the logits after the first L blocks"},
    [CLI_ALL_BATCHED] = {"all-batched", NULL, 0, CLI_T_FLAG, N_, "the whole sequence as one batch"},
    [CLI_TOP] = {"top", NULL, 0, CLI_T_INT, RANGE_(0, 1 << 24), "positions to list"},
    [CLI_MAX_DIFF] = {"max-diff", NULL, 0, CLI_T_FLOAT, RANGE_(0, HUGE_VAL), "largest |dlogit| that passes"},
    [CLI_MAX_KL] = {"max-kl", NULL, 0, CLI_T_FLOAT, RANGE_(0, HUGE_VAL), "largest mean KL that passes"},
    [CLI_MIN_TOP1] = {"min-top1", NULL, 0, CLI_T_FLOAT, RANGE_(0, 1), "smallest top-1 agreement that passes"},
    [CLI_F32_KV] = {"f32-kv", NULL, 0, CLI_T_FLAG, N_, "F32 KV cache"},
    [CLI_CASES] = {"cases", NULL, 0, CLI_T_TEXT, N_, "a llama.cpp .inp file"},
    [CLI_SPECIAL] = {"special", NULL, 0, CLI_T_FLAG, N_, "parse special tokens"},
    [CLI_IDS_ONLY] = {"ids-only", NULL, 0, CLI_T_FLAG, N_, "print only the ids"},
    [CLI_PIECES] = {"pieces", NULL, 0, CLI_T_FLAG, N_, "one token per line"},
    [CLI_DECODE] = {"decode", NULL, 0, CLI_T_FLAG, N_, "read ids, print their text"},
    [CLI_ROUNDTRIP] = {"roundtrip", NULL, 0, CLI_T_FLAG, N_, "check decode(encode(case))"},
    [CLI_TEMPLATE_FILE] = {"template", NULL, 0, CLI_T_TEXT, N_, "a Jinja template file"},
    [CLI_BOS] = {"bos", NULL, 0, CLI_T_TEXT, N_, "the template's bos_token"},
    [CLI_EOS] = {"eos", NULL, 0, CLI_T_TEXT, N_, "the template's eos_token"},
    [CLI_BUILTIN] = {"builtin", NULL, 0, CLI_T_TEXT, TEXT_(is_builtin, "a built-in format's name"),
                     "--help lists them"},
    [CLI_DATE] = {"date", NULL, 0, CLI_T_TEXT, TEXT_(is_date, "YYYY-MM-DD"), "today's date in the template"},
    [CLI_NO_GEN_PROMPT] = {"no-generation-prompt", NULL, 0, CLI_T_FLAG, N_, "no assistant header at the end"},
    [CLI_VAR] = {"var", NULL, 0, CLI_T_TEXT, TEXT_(is_var, "NAME=VALUE"), "a template variable"},
    [CLI_BENCH_PROMPT] = {NULL, NULL, 'p', CLI_T_TEXT, TEXT_(is_list0, "N,.. (0 to 16777216)"),
                          "prompt tokens"},
    [CLI_BENCH_GEN] = {NULL, NULL, 'n', CLI_T_TEXT, TEXT_(is_list0, "N,.. (0 to 16777216)"),
                       "generated tokens"},
    [CLI_BENCH_DEPTH] = {NULL, NULL, 'd', CLI_T_TEXT, TEXT_(is_list0, "N,.. (0 to 16777216)"), "depth"},
    [CLI_BENCH_THREADS] = {NULL, NULL, 't', CLI_T_TEXT, TEXT_(is_list1, "N,.. (1 to 16777216)"), "threads"},
    [CLI_BENCH_REPS] = {NULL, NULL, 'r', CLI_T_INT, RANGE_(1, 100), "repetitions"},
    [CLI_BENCH_BATCH] = {NULL, NULL, 'b', CLI_T_INT, RANGE_(0, 1 << 24),
                         "prompt batch size; 0 = the default"},
    [CLI_BENCH_OUTPUT] = {"output", NULL, 'o', CLI_T_TEXT, TEXT_(is_bench_output, "text or jsonl"),
                          "output format"},
    [CLI_BENCH_BLAS] = {"blas", NULL, 0, CLI_T_TEXT,
                        TEXT_(is_blas_list, "up to 3 of auto, on, off (comma-separated)"), "OpenBLAS modes"},
    [CLI_HOST] = {"host", NULL, 0, CLI_T_TEXT, N_, "address to listen on"},
    [CLI_PORT] = {"port", NULL, 0, CLI_T_INT, RANGE_(0, 65535), "TCP port; 0 = any free port"},
    [CLI_API_KEY_FILE] = {"api-key-file", NULL, 0, CLI_T_TEXT, N_, "the file holding the API key"},
    [CLI_MAX_QUEUE] = {"max-queue", NULL, 0, CLI_T_INT, RANGE_(0, 100000), "requests that may wait"},
    [CLI_PARALLEL] = {"parallel", NULL, 0, CLI_T_INT, RANGE_(1, 256), "requests evaluated side by side"},
    [CLI_KV_DIR] = {"kv-dir", NULL, 0, CLI_T_TEXT, N_, "where the KV snapshot is kept"},
    [CLI_KV_MAX_MB] = {"kv-max-mb", NULL, 0, CLI_T_INT, RANGE_(0, 1073741824),
                       "the largest KV snapshot written (MiB; 0 = no cap)"},
    [CLI_OUTPUT_DIR] = {"output", NULL, 'o', CLI_T_TEXT, N_, "where the files go"},
    [CLI_DRY_RUN] = {"dry-run", NULL, 'n', CLI_T_FLAG, N_, "download nothing"},
    [CLI_KV] = {"kv", NULL, 0, CLI_T_FLAG, N_, "every metadata key"},
    [CLI_CONFIG] = {"config", NULL, 0, CLI_T_TEXT, N_, "a configuration file"},
    [CLI_PRINT_CONFIG] = {"print-config", NULL, 0, CLI_T_FLAG, N_, "print the merged configuration"},
    [CLI_NO_COLOR] = {"no-color", NULL, 0, CLI_T_FLAG, N_, "monochrome"},
    [CLI_PROB_COLORS] = {"prob-colors", NULL, 0, CLI_T_FLAG, N_, "tokens coloured by probability"},
    [CLI_MOUSE] = {"mouse", NULL, 0, CLI_T_FLAG, N_, "mouse wheel scrolls"},
    [CLI_RESUME] = {"resume", NULL, 0, CLI_T_OPT_TEXT, N_, "continue a saved session"},
    [CLI_NO_AUTOSAVE] = {"no-autosave", NULL, 0, CLI_T_FLAG, N_, "do not write session files"},
    [CLI_NO_SAVE_KV] = {"no-save-kv", NULL, 0, CLI_T_FLAG, N_, "no KV snapshots beside session files"},
    [CLI_REMOTE] = {"remote", NULL, 0, CLI_T_TEXT, N_, "an OpenAI-compatible server"},
    [CLI_REMOTE_MODEL] = {"remote-model", NULL, 0, CLI_T_TEXT, N_, "the server's model"},
};

const cli_opt *cli_opt_of(int id)
{
    return id >= 0 && id < CLI_N_IDS ? &table[id] : NULL;
}

bool cli_dry_breaker(struct sampler_params *sp, bool *cleared, const char *value)
{
    if (!*cleared) { /* the first one replaces the defaults */
        sp->n_dry_breakers = 0;
        *cleared = true;
    }
    if (!strcmp(value, "none")) {
        sp->n_dry_breakers = 0;
        return true;
    }
    return sampler_params_add_dry_breaker(sp, value);
}

/* ---- values ------------------------------------------------------------------ */

static void range_text(const cli_opt *o, char *buf, size_t cap)
{
    if (o->under_is_lo)
        snprintf(buf, cap, "<= %.10g", o->hi);
    else if (isinf(o->hi))
        snprintf(buf, cap, ">= %.10g", o->lo);
    else
        snprintf(buf, cap, "in %.10g..%.10g", o->lo, o->hi);
}

bool cli_check(int id, const char *value, cli_value *v, char *why, size_t cap)
{
    const cli_opt *o = cli_opt_of(id);
    char range[64];
    memset(v, 0, sizeof *v);
    v->text = value;
    if (!o)
        return snprintf(why, cap, "unknown option"), false;
    range_text(o, range, sizeof range);
    switch (o->type) {
    case CLI_T_FLAG:
    case CLI_T_OPT_TEXT:
        return true;
    case CLI_T_TEXT:
        if (o->check && !o->check(value)) {
            snprintf(why, cap, "want %s (%s)", o->want, o->meaning);
            return false;
        }
        return true;
    case CLI_T_SEED:
        if (!strcasecmp(value, "random") || !strcmp(value, "-1")) {
            v->random = true;
            return true;
        }
        /* fall through */
    case CLI_T_INT:
    case CLI_T_FLOAT: {
        char *end = (char *)value;
        errno = 0;
        double x = 0;
        if (o->type == CLI_T_FLOAT)
            x = strtod(value, &end);
        else if (o->type == CLI_T_INT)
            x = (double)strtol(value, &end, 10);
        else if (value[0] != '-' && value[0] != '+') /* strtoull takes "-5" as a huge number */
            x = (double)(v->seed = strtoull(value, &end, 10));
        const bool number = errno == 0 && end != value && !*end && isfinite(x);
        if (!number || x > o->hi || (x < o->lo && !o->under_is_lo)) {
            snprintf(why, cap, "want %s %s (%s)",
                     o->type == CLI_T_FLOAT  ? "a number"
                     : o->type == CLI_T_SEED ? "random or an integer"
                                             : "an integer",
                     range, o->meaning);
            return false;
        }
        if (x < o->lo) { /* "<= 0 = off": every value under lo means what lo means */
            x = o->lo;
            v->taken_as_lo = true;
        }
        v->f = x;
        v->i = (long)x;
        return true;
    }
    }
    return true;
}

/* ---- the parser -------------------------------------------------------------- */

void cli_begin(cli *p, const char *cmd, const int *ids, size_t n_ids, bool long_only, int argc, char **argv)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->ids = ids;
    p->n_ids = n_ids;
    p->long_only = long_only;
    p->argc = argc;
    p->argv = argv;
    size_t no = 0, ns = 0;
    p->shorts[ns++] = ':'; /* a missing value returns ':', not '?' */
    for (size_t k = 0; k < n_ids && k < CLI_MAX_OPTS; k++) {
        const cli_opt *o = cli_opt_of(ids[k]);
        if (!o)
            continue;
        const int has = o->type == CLI_T_FLAG       ? no_argument
                        : o->type == CLI_T_OPT_TEXT ? optional_argument
                                                    : required_argument;
        const char *names[2] = {o->name, o->alias};
        for (int j = 0; j < 2; j++)
            if (names[j]) {
                p->opts[no] = (struct option){names[j], has, NULL, 256 + (int)no};
                p->opt_id[no++] = ids[k];
            }
        if (o->short_name) {
            p->shorts[ns++] = o->short_name;
            if (o->type != CLI_T_FLAG)
                p->shorts[ns++] = ':';
        }
    }
    p->opts[no] = (struct option){0};
    p->shorts[ns] = 0;
    for (size_t k = 0; k < n_ids; k++) /* llama.cpp's two-letter -md, where --draft-model is taken */
        if (ids[k] == CLI_DRAFT_MODEL)
            for (int i = 1; i < argc; i++)
                if (!strcmp(argv[i], "-md"))
                    argv[i] = (char *)"--draft-model";
    optind = 0; /* 0, not 1: glibc starts over (a second pass, another subcommand) */
    opterr = 0;
}

static int id_of_short(const cli *p, int c)
{
    for (size_t k = 0; k < p->n_ids; k++) {
        const cli_opt *o = cli_opt_of(p->ids[k]);
        if (o && o->short_name == c)
            return p->ids[k];
    }
    return -1;
}

static void vfail(const cli *p, const char *fmt, va_list ap)
{
    if (p->quiet)
        return;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (p->cmd)
        fprintf(stderr, "tokscope %s: %s; see 'tokscope %s --help'\n", p->cmd, msg, p->cmd);
    else
        fprintf(stderr, "tokscope: %s; see 'tokscope --help'\n", msg);
}

int cli_fail(const cli *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(p, fmt, ap);
    va_end(ap);
    return 2;
}

/* The argument that holds the option just read, up to any '=' */
static void typed_from_arg(cli *p, const char *arg)
{
    size_t n = strcspn(arg, "=");
    snprintf(p->typed, sizeof p->typed, "%.*s", (int)(n < sizeof p->typed - 1 ? n : sizeof p->typed - 1),
             arg);
}

int cli_next(cli *p, cli_value *v)
{
    int longindex = -1;
    const int c = p->long_only ? getopt_long_only(p->argc, p->argv, p->shorts, p->opts, &longindex)
                               : getopt_long(p->argc, p->argv, p->shorts, p->opts, &longindex);
    memset(v, 0, sizeof *v);
    if (c == -1)
        return CLI_END;
    if (c == '?' || c == ':') {
        /* optopt: the short option or the long option's value; 0 for an unknown long option */
        const char *arg = optind > 0 && optind <= p->argc ? p->argv[optind - 1] : "";
        if (optopt >= 256 && optopt < 256 + 2 * CLI_MAX_OPTS)
            typed_from_arg(p, arg);
        else if (optopt > 0)
            snprintf(p->typed, sizeof p->typed, "-%c", optopt);
        else
            typed_from_arg(p, arg);
        if (c == ':')
            cli_fail(p, "option '%s' needs a value", p->typed);
        else if (optopt >= 256)
            cli_fail(p, "option '%s' takes no value", p->typed);
        else {
            /* a prefix of several long names: say which */
            const char *name = p->typed + (p->typed[1] == '-' ? 2 : 1);
            char cands[256] = "";
            size_t n = 0, nc = strlen(name);
            for (size_t k = 0; nc && p->opts[k].name; k++)
                if (!strncmp(p->opts[k].name, name, nc) &&
                    strlen(cands) + strlen(p->opts[k].name) + 8 < sizeof cands)
                    snprintf(cands + strlen(cands), sizeof cands - strlen(cands), "%s--%s", n++ ? ", " : "",
                             p->opts[k].name);
            if (n > 1)
                cli_fail(p, "ambiguous option '%s' (%s)", p->typed, cands);
            else
                cli_fail(p, "unknown option '%s'", p->typed);
        }
        return CLI_ERROR;
    }
    int id;
    if (c >= 256) {
        id = p->opt_id[c - 256];
        /* as typed: --name or (long_only) -name */
        const char *arg = optarg && optind >= 2 && p->argv[optind - 1] == optarg ? p->argv[optind - 2]
                                                                                 : p->argv[optind - 1];
        if (arg[0] == '-' && arg[1] == '-')
            snprintf(p->typed, sizeof p->typed, "--%s", p->opts[c - 256].name);
        else
            snprintf(p->typed, sizeof p->typed, "-%s", p->opts[c - 256].name);
    } else {
        id = id_of_short(p, c);
        snprintf(p->typed, sizeof p->typed, "-%c", c);
    }
    if (id < 0)
        return cli_fail(p, "unknown option '%s'", p->typed), CLI_ERROR;
    char why[512];
    if (optarg && !cli_check(id, optarg, v, why, sizeof why)) {
        cli_fail(p, "invalid value '%s' for %s: %s", optarg, p->typed, why);
        return CLI_ERROR;
    }
    if (v->taken_as_lo) { /* what a configuration key gets: the value it stands for */
        snprintf(p->buf, sizeof p->buf, "%.10g", v->f);
        v->text = p->buf;
    }
    return id;
}

int cli_rest(const cli *p)
{
    (void)p;
    return optind;
}
