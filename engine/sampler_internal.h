/* Internals shared by the sampler's files (sampler.c: chain and params,
 * sampler_dry.c: the DRY repetition penalty). */
#ifndef TOKSCOPE_SAMPLER_INTERNAL_H
#define TOKSCOPE_SAMPLER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "rng.h"
#include "sampler.h"

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
    rng rng;
    cand *cur;      /* [n_vocab] working candidates */
    cand *tmp;      /* [n_vocab] scratch for typical */
    scored *sc;     /* [n_vocab] scratch for typical */
    float *post;    /* [n_vocab] p_post by id during a step, zero otherwise */
    int32_t *count; /* [n_vocab] penalty counts during a step, zero otherwise */
    int32_t *hist;
    size_t n_hist, cap_hist;
    float mu; /* mirostat v2 state: maximum surprise (bits) kept */
    /* DRY: breakers grouped by head token (CSR: brk_start[n_vocab + 1]) */
    int32_t *brk_start;
    int32_t *brk_tail; /* DRY_MAX_TAIL tokens per breaker */
    int32_t *brk_len;
    int32_t n_brk;
    bool *brk_single;  /* [n_vocab] head of a one-token breaker */
    int32_t *dry_count, *dry_touched; /* scratch, grown with the history */
    size_t dry_cap;
    int32_t *dry_max;  /* [n_vocab] longest repeat + 1 a token would extend, 0 otherwise */
};

#define DRY_MAX_TAIL 20

void sampler_apply_dry(sampler *s, cand *c, int32_t n);
void sampler_free_dry(sampler *s);



#endif
