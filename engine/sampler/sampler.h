/* Sampler chain, reference-compatible with llama.cpp's common sampling:
 * penalties -> DRY -> top-n-sigma -> top-k -> typical -> top-p -> min-p -> xtc ->
 * temperature -> draw. temp <= 0 is greedy (argmax of what the filters kept,
 * which is the argmax of the penalised logits unless typical_p < 1).
 * mirostat = 2 replaces the chain by temperature -> mirostat v2 (as llama.cpp). */
#ifndef TOKSCOPE_SAMPLER_H
#define TOKSCOPE_SAMPLER_H

#include "sampler/rng.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAMPLER_MAX_TOP 64      /* most candidates a step reports */
#define SAMPLER_MAX_STOP 8      /* stop strings */
#define SAMPLER_STOP_LEN 64
#define SAMPLER_MAX_BIAS 512    /* logit_bias entries */
#define SAMPLER_MAX_DRY_BRK 16  /* DRY sequence breakers */
#define SAMPLER_DRY_BRK_LEN 41  /* a breaker's bytes + NUL (llama.cpp cuts one at 40) */

/* One logit bias: bias added to token id's logit (-INFINITY bans it). */
typedef struct sampler_bias {
    int32_t id;
    float bias;
} sampler_bias;

typedef struct sampler_params {
    float temp;              /* 0.8 */
    int32_t top_k;           /* 40; <= 0 disables */
    float top_p;             /* 0.95; 1 disables */
    float min_p;             /* 0.05; 0 disables */
    float typical_p;         /* 1.0 disables */
    float repeat_penalty;    /* 1.0 disables */
    int32_t repeat_last_n;   /* 64; 0 disables, -1 = whole context */
    float frequency_penalty; /* 0 */
    float presence_penalty;  /* 0 */
    uint64_t seed;           /* used when seed_set ("seed random" / "-1" clears seed_set); as
                                llama.cpp's, 32-bit (the low 32 bits count) and 4294967295 = random */
    bool seed_set;           /* false: a random seed (/dev/urandom) at build and each reseed */
    int32_t n_predict;       /* -1 = until end of turn or context full */
    int32_t n_top;           /* candidates reported per step (default 10, <= SAMPLER_MAX_TOP) */
    int32_t n_stop;
    char stop[SAMPLER_MAX_STOP][SAMPLER_STOP_LEN];
    /* llama.cpp's further samplers (defaults leave them off) */
    float top_n_sigma;       /* -1 disables; keeps logits >= max - n * stddev (after penalties) */
    float xtc_probability;   /* 0 disables; chance per step to exclude the top choices */
    float xtc_threshold;     /* 0.1; > 0.5 disables */
    int32_t mirostat;        /* 0 off, 2 = mirostat v2 (replaces the chain: temp -> mirostat) */
    float mirostat_tau;      /* 5.0 target surprise (bits) */
    float mirostat_eta;      /* 0.1 learning rate */
    /* DRY ("don't repeat yourself"): penalise tokens that would extend a
     * repeated sequence by multiplier * base^(length - allowed_length) */
    float dry_multiplier;    /* 0 disables */
    float dry_base;          /* 1.75 */
    int32_t dry_allowed_length; /* 2 */
    int32_t dry_penalty_last_n; /* 64 (llama.cpp's); -1 = whole context, 0 disables */
    /* DRY's sequence breakers (default llama.cpp's "\n" ":" "\"" "*"): a
     * repeat never extends across one. Strings, turned into token sequences
     * as llama_sampler_init_dry does (sampler_set_tokenizer's vocabulary)
     * when DRY is on and they changed. */
    int32_t n_dry_breakers;
    char dry_breakers[SAMPLER_MAX_DRY_BRK][SAMPLER_DRY_BRK_LEN];
    /* llama-server's ignore_eos: a logit bias of -inf on every end-of-generation
     * token (sampler_set_eog) ahead of the chain, so none is ever drawn. The
     * raw distribution (p_raw, entropy_raw, the top list's order) stays the
     * model's, as llama-server's logprobs do; p_post shows the bias (0). */
    bool ignore_eos;
    /* llama-server's logit_bias: each entry's bias added to its token's logit
     * in this order (a token twice: both, in turn), ahead of the chain as its
     * first step; the ignore_eos bans come after them. As with ignore_eos the
     * raw numbers stay the model's. */
    int32_t n_bias;
    sampler_bias bias[SAMPLER_MAX_BIAS];
} sampler_params;

sampler_params sampler_default_params(void);

typedef struct sampler_candidate {
    int32_t id;
    float logit;  /* raw logit from the model */
    float p_raw;  /* softmax of the raw logits */
    float p_post; /* probability after the whole chain (0 if filtered out) */
} sampler_candidate;

typedef struct sampler_step {
    int32_t token;      /* chosen */
    float logit;        /* chosen token's raw logit */
    float p_raw, p_post;
    float entropy_raw;  /* nats, over the whole vocab */
    float entropy_post; /* nats, over the survivors */
    int32_t n_survivors;
    int32_t rank;       /* chosen token's rank by raw logit (0 = top1); its info is in the
                           fields above even when it is not in top[] */
    int32_t n_top;                       /* entries in top[] */
    sampler_candidate top[SAMPLER_MAX_TOP]; /* by raw logit, descending */
} sampler_step;

typedef struct sampler sampler;

sampler *sampler_build(const sampler_params *p, int32_t n_vocab);
void sampler_free(sampler *s);
/* New parameters take effect at the next sampler_sample. A new seed (seed_set)
 * reseeds the PRNG; otherwise the random sequence simply continues (so a
 * regenerated reply differs even with a fixed seed). */
void sampler_set_params(sampler *s, const sampler_params *p);
const sampler_params *sampler_get_params(const sampler *s);
/* Starts the random sequence again from the seed (a new random seed when
 * none is set) and mirostat from its start. */
void sampler_reseed(sampler *s);
/* The vocabulary DRY's breaker strings are matched against (kept: it must
 * outlive the sampler) and the end-of-generation tokens (call once after
 * build). */
struct tokenizer;
void sampler_set_tokenizer(sampler *s, const struct tokenizer *t);
/* The end-of-generation tokens ignore_eos bans (sampler_set_tokenizer sets
 * the tokenizer's; this replaces them, for tests). */
bool sampler_set_eog(sampler *s, const int32_t *ids, int32_t n);
/* Token-level DRY sequence breakers (replaces the current ones and the
 * strings' from then on; for tests). */
bool sampler_set_dry_breakers(sampler *s, const int32_t *const *seqs, const int32_t *lens, int32_t n);
/* Penalty history: every token of the context (prompt and generated) is accepted. */
void sampler_accept(sampler *s, int32_t token);
void sampler_reset_history(sampler *s);
/* Draws one token from logits[n_vocab] (not modified). step may be NULL. */
int32_t sampler_sample(sampler *s, const float *logits, sampler_step *step);
/* The same step report without drawing, leaving the sampler's state (random
 * numbers, mirostat) as it was: for token >= 0 as if the chain had chosen
 * it (p_post 0 when the chain filters it out: a forced token), for token < 0
 * the distribution alone (step->token -1). A draw right after a report of
 * the same logits sees the same chain. */
void sampler_report(sampler *s, const float *logits, int32_t token, sampler_step *step);
/* The state draws and accepts change (random numbers, mirostat, the
 * penalty history's length), saved and restored: llama-server's
 * common_sampler_clone / common_sampler_copy around a verification it
 * replays. A rewind drops the tokens accepted since the mark. */
typedef struct sampler_mark {
    rng rng, rng_xtc; /* both generators (the dist/mirostat one and XTC's) */
    float mu;
    uint64_t n_accepted;
} sampler_mark;
void sampler_mark_get(const sampler *s, sampler_mark *m);
void sampler_rewind(sampler *s, const sampler_mark *m);

/* Parse "name value" for the parameters above (used by /set, config, CLI).
 * Besides sampler_param_names: "n_top" (0..SAMPLER_MAX_TOP) and "stop" (adds a
 * stop string; an empty value clears them all). */
bool sampler_params_set(sampler_params *p, const char *name, const char *value, char *err, size_t errlen);
/* Adds one DRY sequence breaker (cut to 40 bytes, as llama.cpp; an empty
 * one is skipped, as llama.cpp skips it); false when there are
 * SAMPLER_MAX_DRY_BRK already. */
bool sampler_params_add_dry_breaker(sampler_params *p, const char *str);
/* Names of the settable parameters, NULL-terminated, in panel order. */
extern const char *const sampler_param_names[];
/* Formats the value of a named parameter. */
bool sampler_params_get(const sampler_params *p, const char *name, char *buf, size_t cap);

#endif
