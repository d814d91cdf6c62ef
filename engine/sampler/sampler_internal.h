/* Internals shared by the sampler's files (sampler.c: chain and params,
 * sampler_dry.c: the DRY repetition penalty). */
#ifndef TOKSCOPE_SAMPLER_INTERNAL_H
#define TOKSCOPE_SAMPLER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler/rng.h"
#include "sampler/sampler.h"

typedef struct cand {
    int32_t id;
    float logit;
    float p;
} cand;

typedef struct scored {
    float score;
    int32_t i;
} scored;

#define HIST_MAX (1 << 20) /* penalty history kept (tokens); oldest half dropped beyond */

struct sampler {
    sampler_params p;
    int32_t n_vocab;
    rng rng;     /* the dist (or mirostat) sampler's std::mt19937 */
    rng rng_xtc; /* XTC's own, seeded alike (llama.cpp gives each sampler one) */
    cand *cur;      /* [n_vocab] working candidates */
    cand *tmp;      /* [n_vocab] scratch for typical */
    scored *sc;     /* [n_vocab] scratch for typical */
    float *post;    /* [n_vocab] p_post by id during a step, zero otherwise */
    int32_t *count; /* [n_vocab] penalty counts during a step, zero otherwise */
    int32_t *hist;
    size_t n_hist, cap_hist;
    uint64_t n_accepted; /* tokens sampler_accept took, for sampler_rewind */
    float mu; /* mirostat v2 state: maximum surprise (bits) kept */
    /* DRY: breakers grouped by head token (CSR: brk_start[n_vocab + 1]) */
    int32_t *brk_start;
    int32_t *brk_tail; /* DRY_MAX_TAIL tokens per breaker */
    int32_t *brk_len;
    int32_t n_brk;
    bool *brk_single;  /* [n_vocab] head of a one-token breaker */
    const struct tokenizer *tok; /* the breaker strings' vocabulary (NULL: none) */
    bool brk_fixed;    /* token-level breakers from sampler_set_dry_breakers */
    bool brk_built;    /* the table holds brk_str's */
    int32_t n_brk_str; /* the strings the table was built from */
    char brk_str[SAMPLER_MAX_DRY_BRK][SAMPLER_DRY_BRK_LEN];
    int32_t *dry_count, *dry_touched; /* scratch, grown with the history */
    size_t dry_cap;
    int32_t *dry_max;  /* [n_vocab] longest repeat + 1 a token would extend, 0 otherwise */
    /* sparse logit adjustments of one step (penalties, DRY): the logits
     * themselves are never copied when top-k can select straight from them */
    uint8_t *adj_on;   /* [n_vocab] */
    float *adj_val;    /* [n_vocab] */
    int32_t *adj_list; /* [n_vocab] ids with adj_on set */
    int32_t n_adj;
    /* ignore_eos: the end-of-generation ids, and the logits with them at -inf */
    int32_t *eog;
    int32_t n_eog;
    float *biased; /* [n_vocab], allocated on first use */
};

static inline float adj_get(const sampler *s, const float *logits, int32_t id)
{
    return s->adj_on[id] ? s->adj_val[id] : logits[id];
}

static inline void adj_set(sampler *s, int32_t id, float v)
{
    if (!s->adj_on[id]) {
        s->adj_on[id] = 1;
        s->adj_list[s->n_adj++] = id;
    }
    s->adj_val[id] = v;
}

#define DRY_MAX_TAIL 20

/* Adds DRY's penalties to the step's adjustments. */
void sampler_apply_dry(sampler *s, const float *logits);
void sampler_free_dry(sampler *s);



#endif
