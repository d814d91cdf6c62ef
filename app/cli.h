/* The command line of every subcommand and of the TUI: one table of options
 * (name, value type, range, meaning) and one parser over it, so that an
 * option takes the same values everywhere it is accepted and every mistake
 * is reported the same way: one line naming the option or the value, with
 * its range, and a pointer to --help (exit status 2, as tokscope(1) says).
 *
 * A subcommand lists the ids it accepts and calls cli_next() until
 * CLI_END; what is left in argv[cli_rest()..] are its operands. */
#ifndef TOKSCOPE_APP_CLI_H
#define TOKSCOPE_APP_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

enum cli_id {
    CLI_HELP,
    CLI_MODEL,
    CLI_PROMPT,
    CLI_TOKENS,
    CLI_N_PREDICT,
    CLI_CTX,
    CLI_THREADS,
    CLI_BATCH,
    /* sampling: the TUI's [sampling] keys, with the panel's ranges */
    CLI_TEMP,
    CLI_TOP_K,
    CLI_TOP_P,
    CLI_MIN_P,
    CLI_TYPICAL,
    CLI_REPEAT_PENALTY,
    CLI_REPEAT_LAST_N,
    CLI_FREQUENCY_PENALTY,
    CLI_PRESENCE_PENALTY,
    CLI_SEED,
    CLI_N_TOP,
    /* DRY (llama.cpp's options; the [sampling] dry_* keys) */
    CLI_DRY_MULTIPLIER,
    CLI_DRY_BASE,
    CLI_DRY_ALLOWED_LENGTH,
    CLI_DRY_PENALTY_LAST_N,
    CLI_DRY_BREAKER,
    /* the prompt and the engine */
    CLI_NO_BOS,
    CLI_NO_KV,
    CLI_CHAT,
    CLI_SYSTEM,
    CLI_TEMPLATE,
    CLI_CTK,
    CLI_CTV,
    CLI_BLAS,
    CLI_SHIFT,
    CLI_NO_SHIFT,
    /* speculative decoding (engine/spec) */
    CLI_SPEC,
    CLI_DRAFT_MAX,
    CLI_DRAFT_MODEL,
    CLI_SPEC_NGRAM_N,
    /* logits, compare */
    CLI_LOGITS_N,
    CLI_LOGITS_K,
    CLI_ONE_BY_ONE,
    CLI_LAST,
    CLI_LENS,
    CLI_LENS_LAYER,
    CLI_ALL_BATCHED,
    CLI_TOP,
    CLI_MAX_DIFF,
    CLI_MAX_KL,
    CLI_MIN_TOP1,
    CLI_F32_KV,
    /* tokenize */
    CLI_CASES,
    CLI_SPECIAL,
    CLI_IDS_ONLY,
    CLI_PIECES,
    CLI_DECODE,
    CLI_ROUNDTRIP,
    /* template */
    CLI_TEMPLATE_FILE,
    CLI_BOS,
    CLI_EOS,
    CLI_BUILTIN,
    CLI_DATE,
    CLI_NO_GEN_PROMPT,
    CLI_VAR,
    /* bench */
    CLI_BENCH_PROMPT,
    CLI_BENCH_GEN,
    CLI_BENCH_DEPTH,
    CLI_BENCH_THREADS,
    CLI_BENCH_REPS,
    CLI_BENCH_BATCH,
    CLI_BENCH_OUTPUT,
    CLI_BENCH_BLAS,
    /* serve, pull, info */
    CLI_HOST,
    CLI_PORT,
    CLI_API_KEY_FILE,
    CLI_MAX_QUEUE,
    CLI_PARALLEL,
    CLI_KV_DIR,
    CLI_KV_MAX_MB,
    CLI_OUTPUT_DIR,
    CLI_DRY_RUN,
    CLI_KV,
    /* the TUI */
    CLI_CONFIG,
    CLI_PRINT_CONFIG,
    CLI_NO_COLOR,
    CLI_PROB_COLORS,
    CLI_MOUSE,
    CLI_RESUME,
    CLI_NO_AUTOSAVE,
    CLI_NO_SAVE_KV,
    CLI_REMOTE,
    CLI_REMOTE_MODEL,
    CLI_N_IDS,
    CLI_END = -1,   /* no more options */
    CLI_ERROR = -2, /* reported; exit with status 2 */
};

typedef enum cli_type {
    CLI_T_FLAG,     /* no value */
    CLI_T_TEXT,     /* a value, checked by `check` when there is one */
    CLI_T_OPT_TEXT, /* --name or --name=VALUE */
    CLI_T_INT,      /* an integer in lo..hi */
    CLI_T_FLOAT,    /* a finite number in lo..hi */
    CLI_T_SEED,     /* 0..hi, or random (also -1) */
} cli_type;

typedef struct cli_opt {
    const char *name;  /* long name (without --), NULL for a short option only */
    const char *alias; /* a second long name, or NULL */
    char short_name;   /* 0: none */
    cli_type type;
    double lo, hi;
    bool under_is_lo;                 /* a value under lo is taken as lo: "<= 0 = off" */
    bool (*check)(const char *value); /* CLI_T_TEXT */
    const char *want;                 /* what check accepts, for the message */
    const char *meaning;
} cli_opt;

/* --dry-sequence-breaker VALUE, as llama.cpp's: the first one given clears
 * the default breakers ("\n" ":" "\"" "*"), each adds its string (taken as
 * typed: no escapes), "none" clears them all; *cleared starts false. False
 * when SAMPLER_MAX_DRY_BRK are given already. */
struct sampler_params;
bool cli_dry_breaker(struct sampler_params *sp, bool *cleared, const char *value);

/* The table row of id. */
const cli_opt *cli_opt_of(int id);

typedef struct cli_value {
    const char *text; /* as given; a value taken as lo (under_is_lo) is lo's text */
    long i;           /* CLI_T_INT */
    double f;         /* CLI_T_FLOAT */
    unsigned long long seed;
    bool random;      /* CLI_T_SEED: random or -1 */
    bool taken_as_lo; /* under lo, taken as lo (under_is_lo) */
} cli_value;

#define CLI_MAX_OPTS 48

typedef struct cli {
    const char *cmd; /* "generate"; NULL for the TUI */
    const int *ids;
    size_t n_ids;
    bool long_only; /* -ctk as well as --ctk (llama.cpp's two-letter options) */
    bool quiet;     /* no messages (a first pass over the options) */
    int argc;
    char **argv;
    struct option opts[2 * CLI_MAX_OPTS + 1];
    int opt_id[2 * CLI_MAX_OPTS];
    char shorts[2 * CLI_MAX_OPTS + 2];
    char typed[64]; /* the last option as typed: "-n", "--top-p" */
    char buf[32];
} cli;

/* Starts parsing argv (argv[0] is the subcommand or the program) for the
 * options in ids. */
void cli_begin(cli *p, const char *cmd, const int *ids, size_t n_ids, bool long_only, int argc, char **argv);
/* The next option's id with its value in *v, CLI_END after the last, or
 * CLI_ERROR once the mistake is reported. */
int cli_next(cli *p, cli_value *v);
/* The index in argv of the first operand (the options are moved before
 * the operands), once cli_next returned CLI_END. */
int cli_rest(const cli *p);
/* Reports a usage error ("tokscope CMD: MESSAGE; see 'tokscope CMD --help'")
 * and returns 2, the exit status of a usage error. */
int cli_fail(const cli *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Checks value against id's row: true, or false with the reason in why
 * ("want an integer in -1..1000000 (tokens to generate; -1 = no limit)"). */
bool cli_check(int id, const char *value, cli_value *v, char *why, size_t cap);

#endif
