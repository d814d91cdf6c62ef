/* Speculative decoding in the engine's turn (spec_engine.h). */
#include "spec/spec_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "spec/spec.h"

struct spec_run {
    spec *sp;
    int32_t draft_max;
    float *rows;                   /* (draft_max + 1) x n_vocab */
    int32_t q[SPEC_DRAFT_MAX + 1]; /* what the last verification drew */
    sampler_step *qst;             /* ... their reports */
    int32_t n_q, i_q;
    int8_t qmark[SPEC_DRAFT_MAX + 1]; /* ... spec_engine_next's mark of each */
    int32_t qrej[SPEC_DRAFT_MAX + 1]; /* ... and the draft rejected where the mark is 2 */
    spec_stats base;                  /* the counts when the turn started */
    bool held_evaluated;              /* the token handed out last sits in the memory already */
};

/* memory_eval_fn for the MTP block (spec_eval) */
static int mtp_eval(void *user, forward_ctx *f, const int32_t *tokens, int32_t n, int32_t pos, float *logits,
                    bool all_logits, char *err, size_t errlen)
{
    return spec_eval(user, f, tokens, n, pos, logits, all_logits, err, errlen);
}

bool spec_engine_open(engine *e, char *err, size_t errlen)
{
    spec_engine_close(e);
    if (e->p.spec_type == SPEC_OFF)
        return true;
    if (e->p.no_kv_cache) {
        snprintf(err, errlen, "speculative decoding needs the KV cache (not --no-kv-cache)");
        return false;
    }
    spec_params p = spec_default_params();
    p.type = (enum spec_type)e->p.spec_type;
    if (e->p.draft_max > 0)
        p.draft_max = e->p.draft_max > SPEC_DRAFT_MAX ? SPEC_DRAFT_MAX : e->p.draft_max;
    p.draft_model = e->p.draft_model;
    forward_params fp = forward_default_params();
    fp.n_ctx = (uint32_t)e->n_ctx;
    fp.n_threads = e->p.n_threads;
    spec_run *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    r->sp = spec_create(&p, e->m, &fp, err, errlen);
    if (!r->sp) {
        free(r);
        return false;
    }
    r->draft_max = spec_get_params(r->sp)->draft_max;
    if (spec_get_params(r->sp)->type == SPEC_MTP) { /* auto may have chosen it */
        /* the block sees every batch the memory evaluates; what the memory
         * holds was evaluated without it: evaluated again next turn */
        memory_set_eval(&e->mem, mtp_eval, r->sp);
        memory_truncate(&e->mem, 0);
    }
    r->rows = malloc((size_t)(r->draft_max + 1) * (size_t)e->n_vocab * sizeof *r->rows);
    r->qst = malloc((size_t)(r->draft_max + 1) * sizeof *r->qst);
    e->spec = r;
    if (!r->rows || !r->qst) {
        spec_engine_close(e);
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return true;
}

void spec_engine_close(engine *e)
{
    spec_run *r = e->spec;
    if (!r)
        return;
    memory_set_eval(&e->mem, NULL, NULL);
    spec_free(r->sp);
    free(r->rows);
    free(r->qst);
    free(r);
    e->spec = NULL;
}

void spec_engine_set(engine *e, const char *name, const char *value)
{
    name = name ? name : "";
    value = value ? value : "";
    if (!strcmp(name, "spec")) {
        enum spec_type t;
        if (!spec_type_parse(value, &t)) {
            engine_post_error(e, "spec: '%s' is not off, ngram, draft, mtp or auto", value);
            return;
        }
        e->p.spec_type = (int32_t)t;
    } else if (!strcmp(name, "draft_max")) {
        char *end;
        long n = strtol(value, &end, 10);
        if (end == value || *end || n < 1 || n > SPEC_DRAFT_MAX) {
            engine_post_error(e, "draft_max: '%s' is not 1..%d", value, SPEC_DRAFT_MAX);
            return;
        }
        e->p.draft_max = (int32_t)n;
    } else if (!strcmp(name, "draft_model")) {
        char *d = strdup(value);
        if (!d)
            return;
        free(e->draft_model);
        e->draft_model = d;
        e->p.draft_model = d[0] ? d : NULL;
    } else {
        engine_post_error(e, "unknown speculative decoding setting '%s'", name);
        return;
    }
    e->spec_dirty = true;
}

void spec_engine_reset(engine *e)
{
    if (e->spec_dirty && e->m) {
        char err[512];
        e->spec_dirty = false;
        if (!spec_engine_open(e, err, sizeof err))
            engine_post_error(e, "speculative decoding off: %s", err);
    }
    if (e->spec) {
        e->spec->n_q = e->spec->i_q = 0;
        e->spec->held_evaluated = false;
        e->spec->base = spec_get_stats(e->spec->sp);
    }
}

bool spec_engine_next(engine *e, int32_t *tok, sampler_step *st, int32_t *mark, int32_t *rejected)
{
    spec_run *r = e->spec;
    if (!r || r->i_q >= r->n_q)
        return false;
    *st = r->qst[r->i_q];
    *tok = r->q[r->i_q++];
    r->held_evaluated = r->i_q < r->n_q; /* the last one drawn was never evaluated */
    *mark = r->qmark[r->i_q - 1];
    *rejected = r->qrej[r->i_q - 1];
    return true;
}

int spec_engine_push(engine *e, int32_t tok, bool may_draft, char *err, size_t errlen)
{
    spec_run *r = e->spec;
    if (r && r->held_evaluated) { /* a draft the verification accepted: its row is the next distribution */
        r->held_evaluated = false;
        memory_advance(&e->mem, r->rows + (size_t)r->i_q * (size_t)e->n_vocab);
        return 0;
    }
    if (r)
        r->n_q = r->i_q = 0;
    int32_t nd = 0, batch[SPEC_DRAFT_MAX + 1];
    if (r && may_draft) {
        /* as llama-server: room for the drafts, the next token and one more,
         * and no draft past what n_predict leaves */
        int32_t max = e->n_ctx - e->mem.n_past - 2;
        const int32_t n_predict = sampler_get_params(e->s)->n_predict;
        if (n_predict >= 0 && max > n_predict - e->n_reply - 1)
            max = n_predict - e->n_reply - 1;
        if (max > 0)
            nd = spec_draft(r->sp, e->mem.tokens, e->mem.n_past, tok, max, batch + 1, err, errlen);
        if (nd < 0)
            return -1;
    }
    if (nd == 0)
        return memory_push(&e->mem, tok, err, errlen);
    batch[0] = tok;
    int32_t drafts[SPEC_DRAFT_MAX];
    memcpy(drafts, batch + 1, (size_t)nd * sizeof *batch);
    /* mtp: the state after each position kept (the reference's n_rs_seq),
     * for memory_verify_keep to take instead of a replay */
    const bool mtp = spec_get_params(r->sp)->type == SPEC_MTP;
    if (mtp && !forward_rs_keep(e->f, nd + 1)) {
        snprintf(err, errlen, "out of memory for the recurrent states of the verification");
        return -1;
    }
    if (memory_verify(&e->mem, batch, nd + 1, r->rows, err, errlen) != 0) {
        forward_rs_keep(e->f, 0);
        return -1;
    }
    sampler_mark mark;
    sampler_mark_get(e->s, &mark);
    r->n_q = spec_sample_accept(e->s, r->rows, e->n_vocab, batch + 1, nd, r->q, r->qst);
    const int32_t k = r->n_q - 1; /* drafts accepted by the first pass */
    for (int32_t i = 0; i < r->n_q; i++) {
        r->qmark[i] = (int8_t)(i < k ? 1 : k < nd ? 2 : 0);
        r->qrej[i] = i == k && k < nd ? drafts[k] : -1;
    }
    /* a recurrent state past a rejected draft: llama-server's replay of its
     * checkpoint (spec_verify says how), the sampler as it was before */
    int32_t n_b = nd;
    bool replayed = false;
    if (mtp)
        spec_accept(r->sp, k);
    while (!mtp && e->mem.recurrent && r->n_q - 1 < n_b) {
        sampler_rewind(e->s, &mark);
        n_b = r->n_q;
        memcpy(batch + 1, r->q, (size_t)n_b * sizeof *batch);
        if (memory_verify(&e->mem, batch, n_b + 1, r->rows, err, errlen) != 0)
            return -1;
        r->n_q = spec_sample_accept(e->s, r->rows, e->n_vocab, batch + 1, n_b, r->q, r->qst);
        replayed = true;
    }
    for (int32_t i = k + 1; i < r->n_q; i++) { /* drawn after the replayed ones */
        r->qmark[i] = 0;
        r->qrej[i] = -1;
    }
    if (replayed && r->n_q != k + 2) { /* a replayed row drew otherwise: the marks as counted */
        for (int32_t i = 0; i < r->n_q; i++) {
            r->qmark[i] = (int8_t)(i + 2 < r->n_q ? 1 : 0);
            r->qrej[i] = -1;
        }
    }
    spec_count(r->sp, nd, r->n_q - 1 - (replayed && r->n_q > 1 ? 1 : 0));
    const int rc = memory_verify_keep(&e->mem, r->n_q, err, errlen);
    forward_rs_keep(e->f, 0);
    if (rc != 0) {
        r->n_q = 0;
        return -1;
    }
    memory_advance(&e->mem, r->rows); /* tok counted; its row drew q[0] */
    return 0;
}

void spec_engine_turn_stats(const engine *e, int32_t *n_drafted, int32_t *n_accepted)
{
    *n_drafted = *n_accepted = 0;
    if (e->spec) {
        const spec_stats st = spec_get_stats(e->spec->sp);
        *n_drafted = (int32_t)(st.n_drafted - e->spec->base.n_drafted);
        *n_accepted = (int32_t)(st.n_accepted - e->spec->base.n_accepted);
    }
}

void spec_engine_stats(const engine *e, int64_t *n_drafted, int64_t *n_accepted, int64_t *n_verify)
{
    spec_stats st = {0, 0, 0};
    if (e->spec)
        st = spec_get_stats(e->spec->sp);
    *n_drafted = st.n_drafted;
    *n_accepted = st.n_accepted;
    *n_verify = st.n_verify;
}
