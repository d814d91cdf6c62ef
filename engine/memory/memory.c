/* The engine's memory: the tokens the forward context holds, the position
 * counter, truncation (the O(1) rollback of explore mode), bringing the
 * context to hold a token sequence with as little work as it allows, the
 * distribution at an earlier position, the context shift and the lens's
 * borrowing of the context; for a recurrent state, restoring it from a
 * checkpoint by evaluating again what lies between. See memory.h. */
#include "memory/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool memory_init(memory *m, forward_ctx *f, int32_t n_ctx, int32_t n_vocab, bool no_kv_cache,
                 const memory_params *p, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->f = f;
    m->n_ctx = n_ctx;
    m->n_vocab = n_vocab;
    m->no_kv_cache = no_kv_cache;
    m->logits_pos = m->anchor_pos = -1;
    m->tokens = malloc((size_t)n_ctx * sizeof *m->tokens);
    m->logits = malloc((size_t)n_vocab * sizeof *m->logits);
    m->anchor = malloc((size_t)n_vocab * sizeof *m->anchor);
    bool ok = m->tokens && m->logits && m->anchor;
    /* with no_kv_cache every evaluation starts at 0 (a fresh state): nothing to restore */
    m->recurrent = forward_is_recurrent(f) && !no_kv_cache;
    if (ok && m->recurrent) {
        m->p.ckpt_every = p && p->ckpt_every > 0 ? p->ckpt_every : MEMORY_CKPT_EVERY;
        m->p.ckpt_max = p && p->ckpt_max > 0 ? p->ckpt_max : MEMORY_CKPT_MAX;
        m->p.ckpt_max_bytes = p && p->ckpt_max_bytes > 0 ? p->ckpt_max_bytes : MEMORY_CKPT_MAX_BYTES;
        m->rs_bytes = forward_rs_bytes(f);
        m->call_start = malloc((size_t)n_ctx * sizeof *m->call_start);
        m->call_end = malloc((size_t)n_ctx * sizeof *m->call_end);
        m->scratch = malloc((size_t)n_vocab * sizeof *m->scratch);
        m->top = malloc(m->rs_bytes ? m->rs_bytes : 1);
        ok = m->call_start && m->call_end && m->scratch && m->top;
    }
    if (!ok) {
        memory_release(m);
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return true;
}

void memory_release(memory *m)
{
    memory_ckpt_clear(m);
    free(m->tokens);
    free(m->logits);
    free(m->anchor);
    free(m->call_start);
    free(m->call_end);
    free(m->scratch);
    free(m->top);
    free(m->v_state);
    memset(m, 0, sizeof *m);
    m->logits_pos = m->anchor_pos = -1;
}

static bool progress(void *user, int32_t done, int32_t total)
{
    memory *m = user;
    if (m->no_cancel || !m->progress)
        return true;
    return m->progress(m->progress_user, done, total);
}

void memory_set_progress(memory *m, forward_progress_fn fn, void *user)
{
    m->progress = fn;
    m->progress_user = user;
    forward_set_progress(m->f, progress, m);
}

void memory_set_eval(memory *m, memory_eval_fn fn, void *user)
{
    m->eval = fn;
    m->eval_user = user;
}

bool memory_is_recurrent(const memory *m)
{
    return m->f && forward_is_recurrent(m->f);
}
int32_t memory_n_ckpt(const memory *m)
{
    return m->n_ckpt;
}
size_t memory_ckpt_bytes(const memory *m)
{
    return m->ckpt_bytes;
}

void memory_truncate(memory *m, int32_t n)
{
    if (n < 0)
        n = 0;
    if (m->anchor_pos > n)
        m->anchor_pos = -1;
    if (m->logits_pos > n)
        m->logits_pos = -1;
    if (n < m->n_past)
        m->n_past = n;
    if (m->v_end > m->n_past) /* verified tokens not counted yet go */
        m->v_end = m->n_past;
    memory_ckpt_drop_after(m, n); /* the tokens after n may be replaced */
}

int32_t memory_common(const memory *m, const int32_t *seq, int32_t n)
{
    int32_t common = 0;
    if (!m->no_kv_cache)
        while (common < m->n_past && common < n && m->tokens[common] == seq[common])
            common++;
    return common;
}

/* ---- the recurrent state ---- */

/* Whether the state after [0, t) was ever there: t ends a recorded call
 * (t <= n_past). */
static bool boundary(const memory *m, int32_t t)
{
    return t == 0 || m->call_end[t - 1] == t;
}

/* Whether the forward context's state is the one after [0, rs_pos) of the
 * tokens held: a call it consumed may have been cut short, or truncated. */
static bool live_ok(const memory *m)
{
    const int32_t r = forward_rs_pos(m->f);
    return r >= 0 && r <= m->n_past && boundary(m, r);
}

int32_t memory_reuse(const memory *m, const int32_t *seq, int32_t n)
{
    int32_t common = memory_common(m, seq, n);
    if (m->recurrent && !boundary(m, common))
        common = m->call_start[common - 1]; /* inside a prompt: from its start */
    return common;
}

/* One forward_eval call of tokens[start, end) (the state, if any, at
 * start), recorded as the call that evaluated those positions. */
static int call_raw(memory *m, int32_t start, int32_t end, float *out, char *err, size_t errlen)
{
    const bool was = m->evaluating;
    m->evaluating = true;
    int rc = m->eval ? m->eval(m->eval_user, m->f, m->tokens + start, end - start, start, out, false, err, errlen)
                     : forward_eval(m->f, m->tokens + start, end - start, start, out, false, err, errlen);
    m->evaluating = was;
    if (rc == 0 && m->recurrent)
        for (int32_t i = start; i < end; i++) {
            m->call_start[i] = start;
            m->call_end[i] = end;
        }
    return rc;
}

/* A call evaluated again only to bring a state forward: its logits go to
 * scratch, it shows no progress. */
static int replay(memory *m, int32_t start, int32_t end, char *err, size_t errlen)
{
    const bool was = m->replaying;
    m->replaying = true;
    int rc = call_raw(m, start, end, m->scratch, err, errlen);
    m->replaying = was;
    m->n_replayed += end - start;
    return rc;
}

/* Brings the recurrent state to position t (t <= n_past): from the live
 * state, the nearest checkpoint or the empty state, whichever is latest,
 * evaluating the recorded calls between them again, each as it was
 * evaluated. t inside a call (a prompt): that call from its start cut at t,
 * which becomes the recorded call. */
static int reach(memory *m, int32_t t, char *err, size_t errlen)
{
    if (!m->recurrent || (forward_rs_pos(m->f) == t && live_ok(m)))
        return 0;
    if (!boundary(m, t)) {
        const int32_t s = m->call_start[t - 1];
        int rc = reach(m, s, err, errlen);
        return rc != 0 ? rc : replay(m, s, t, err, errlen);
    }
    int32_t k = 0;
    const int32_t live = forward_rs_pos(m->f);
    const bool use_live = live_ok(m) && live <= t;
    if (use_live)
        k = live;
    const memory_ckpt *c = memory_ckpt_find(m, t);
    if (c && c->pos > k) {
        forward_rs_load(m->f, c->state, c->pos);
        k = c->pos;
    } else if (!use_live) {
        forward_rs_reset(m->f);
    }
    while (k < t) {
        const int32_t e = m->call_end[k]; /* the call that began at k; t ends one, so e <= t */
        int rc = replay(m, k, e, err, errlen);
        if (rc != 0)
            return rc;
        k = e;
    }
    return 0;
}

/* Evaluates tokens[start, end) as one call at start == n_past (the last
 * token's logits land in m->logits, logits_pos = end). no_kv_cache
 * recomputes from 0. n_past is the caller's to raise. */
static int eval_call(memory *m, int32_t start, int32_t end, char *err, size_t errlen)
{
    if (m->no_kv_cache)
        start = 0;
    int rc = start > 0 ? reach(m, start, err, errlen) : 0;
    if (rc == 0)
        rc = call_raw(m, start, end, m->logits, err, errlen);
    m->logits_pos = rc == 0 ? end : -1;
    return rc;
}

/* After a token evaluated alone: a checkpoint every ckpt_every of them. */
static void maybe_ckpt(memory *m)
{
    if (!m->recurrent)
        return;
    const memory_ckpt *c = memory_ckpt_find(m, m->n_past);
    if (m->n_past - (c ? c->pos : 0) >= m->p.ckpt_every)
        memory_ckpt_take(m);
}

int memory_ensure(memory *m, const int32_t *seq, int32_t np, int32_t upto, int32_t *evaluated, char *err,
                  size_t errlen)
{
    *evaluated = 0;
    if (upto > m->n_ctx) {
        snprintf(err, errlen, "%d tokens do not fit the context of %d", upto, m->n_ctx);
        return -1;
    }
    const int32_t common = memory_reuse(m, seq, upto);
    memory_truncate(m, common);
    if (common == upto)
        return 0;
    memcpy(m->tokens + common, seq + common, (size_t)(upto - common) * sizeof *seq);
    const int32_t batch_end = np < upto ? np : upto;
    if (common < batch_end) {
        m->eval_base = 0;
        int rc = eval_call(m, common, batch_end, err, errlen);
        if (rc != 0)
            return rc;
        *evaluated += batch_end - common;
        m->n_past = batch_end;
        if (batch_end == np) { /* the prompt's own last logits, as its batch computed them */
            memcpy(m->anchor, m->logits, (size_t)m->n_vocab * sizeof *m->anchor);
            m->anchor_pos = np;
        }
        memory_ckpt_take(m); /* the end of a prompt (recurrent models) */
    }
    for (int32_t p = m->n_past; p < upto; p++) {
        m->eval_base = *evaluated;
        int rc = eval_call(m, p, p + 1, err, errlen);
        if (rc != 0)
            return rc;
        (*evaluated)++;
        m->n_past = p + 1;
        maybe_ckpt(m);
    }
    return 0;
}

int memory_rollback(memory *m, int32_t p, int32_t *evaluated, char *err, size_t errlen)
{
    int32_t dummy;
    if (!evaluated)
        evaluated = &dummy;
    *evaluated = 0;
    if (p < 1 || p > m->n_past) {
        snprintf(err, errlen, "cannot go back to position %d (the cache holds %d)", p, m->n_past);
        return -1;
    }
    memory_truncate(m, p);
    if (m->logits_pos == p)
        return 0;
    if (m->anchor_pos == p) {
        memcpy(m->logits, m->anchor, (size_t)m->n_vocab * sizeof *m->logits);
        m->logits_pos = p;
        return 0;
    }
    if (m->recurrent) {
        const memory_ckpt *c = memory_ckpt_find(m, p);
        if (c && c->pos == p) { /* its state is restored when something is evaluated next */
            memcpy(m->logits, c->logits, (size_t)m->n_vocab * sizeof *m->logits);
            m->logits_pos = p;
            return 0;
        }
        /* the call that evaluated p-1, again: token p-1 alone, or a prompt
         * from its start (cut at p when p lies inside it) */
        const int32_t s = m->call_start[p - 1];
        memory_truncate(m, s);
        if (eval_call(m, s, p, err, errlen) != 0)
            return -1;
        *evaluated = p - s;
        m->n_past = p;
        if (p - s > 1)
            memory_ckpt_take(m); /* the end of a prompt */
        else
            maybe_ckpt(m);
        return 0;
    }
    memory_truncate(m, p - 1);
    if (eval_call(m, p - 1, p, err, errlen) != 0)
        return -1;
    *evaluated = 1;
    m->n_past = p;
    return 0;
}

int memory_push(memory *m, int32_t tok, char *err, size_t errlen)
{
    if (m->n_past >= m->n_ctx) {
        snprintf(err, errlen, "the context is full (%d tokens)", m->n_ctx);
        return -1;
    }
    m->tokens[m->n_past] = tok;
    m->v_end = m->n_past; /* verified tokens not counted are overwritten */
    if (eval_call(m, m->n_past, m->n_past + 1, err, errlen) != 0)
        return -1;
    m->n_past++;
    maybe_ckpt(m);
    return 0;
}

bool memory_can_shift(const memory *m)
{
    return !memory_is_recurrent(m);
}

int memory_shift(memory *m, int32_t n_keep, int32_t *n_discard, char *err, size_t errlen)
{
    *n_discard = 0;
    if (!memory_can_shift(m)) { /* never silently: the engine says what to do */
        snprintf(err, errlen,
                 "this model's recurrent layers cannot drop tokens, so there is no context shift");
        return -1;
    }
    const int32_t n_left = m->n_past - n_keep;
    const int32_t d = n_left / 2;
    if (d <= 0)
        return 0;
    memmove(m->tokens + n_keep, m->tokens + n_keep + d, (size_t)(n_left - d) * sizeof *m->tokens);
    const int32_t n = m->n_past - d;
    memory_truncate(m, 0); /* the cache rows are stale until the re-evaluation succeeds */
    if (eval_call(m, 0, n, err, errlen) != 0)
        return -1;
    m->n_past = n;
    *n_discard = d;
    return 0;
}

int memory_lens(memory *m, const int32_t *seq, int32_t n, float *logits, forward_lens_fn fn, void *user,
                char *err, size_t errlen)
{
    const int32_t q = n - 1;
    const bool was = m->evaluating;
    m->evaluating = true;
    int rc;
    if (m->no_kv_cache) {
        rc = forward_eval_lens(m->f, seq, n, 0, logits, false, fn, user, err, errlen);
    } else if (!m->recurrent) {
        /* the position may be cached already (q < n_past): it is run again
         * and the cache rows restored, nothing else changes */
        const bool held = q < m->n_past || q < m->v_end; /* a verified token's row counts too */
        rc = forward_eval_lens(m->f, seq + q, 1, q, logits, held, fn, user, err, errlen);
    } else {
        /* the state at n_past, kept aside while the state at q is borrowed */
        const bool saved = forward_rs_pos(m->f) == m->n_past && live_ok(m);
        if (saved)
            forward_rs_save(m->f, m->top);
        int32_t s = -1, e = -1; /* q inside the prompt [s, e): no state was ever at q */
        if (q > 0 && q <= m->n_past && !boundary(m, q)) {
            s = m->call_start[q - 1];
            e = m->call_end[q - 1] < m->n_past ? m->call_end[q - 1] : m->n_past;
        }
        rc = reach(m, q, err, errlen);
        if (rc == 0) /* keep_cache: its cache row and the state at q come back */
            rc = forward_eval_lens(m->f, seq + q, 1, q, logits, true, fn, user, err, errlen);
        bool kept = true;
        if (s >= 0) { /* the prompt's cache rows as its own call computed them (no stop may cut this) */
            char e2[256];
            m->no_cancel = true;
            int rc2 = reach(m, s, e2, sizeof e2);
            if (rc2 == 0)
                rc2 = replay(m, s, e, e2, sizeof e2);
            m->no_cancel = false;
            if (rc2 != 0) { /* the cache no longer holds that prompt as it was */
                memory_truncate(m, s);
                kept = false;
                if (rc == 0) {
                    snprintf(err, errlen, "%s", e2);
                    rc = rc2;
                }
            }
        }
        if (saved && kept)
            forward_rs_load(m->f, m->top, m->n_past);
    }
    m->evaluating = was;
    return rc;
}

/* ---- speculative decoding (memory.h) ---- */

int memory_verify(memory *m, const int32_t *toks, int32_t n, float *rows, char *err, size_t errlen)
{
    const int32_t p = m->n_past;
    if (m->no_kv_cache) {
        snprintf(err, errlen, "speculative decoding needs the KV cache");
        return -1;
    }
    if (n < 1 || p + n > m->n_ctx) {
        snprintf(err, errlen, "%d tokens to verify do not fit the context of %d", p + n, m->n_ctx);
        return -1;
    }
    /* verifying again at the same position (llama-server's replay of a
     * recurrent target's checkpoint): from the state saved before */
    if (m->recurrent && m->v_state && m->v_end > p && forward_rs_pos(m->f) == m->v_end && m->call_start[p] == p &&
        m->call_end[p] == m->v_end) /* the state past the verification that began at p */
        forward_rs_load(m->f, m->v_state, p);
    m->v_end = p;
    if (m->recurrent && !m->v_state && !(m->v_state = malloc(m->rs_bytes ? m->rs_bytes : 1))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = p > 0 ? reach(m, p, err, errlen) : 0;
    if (rc != 0)
        return rc;
    if (m->recurrent)
        forward_rs_save(m->f, m->v_state);
    memcpy(m->tokens + p, toks, (size_t)n * sizeof *toks);
    const bool was = m->evaluating;
    m->evaluating = true;
    rc = m->eval ? m->eval(m->eval_user, m->f, m->tokens + p, n, p, rows, true, err, errlen)
                 : forward_eval(m->f, m->tokens + p, n, p, rows, true, err, errlen);
    m->evaluating = was;
    if (rc != 0)
        return rc;
    if (m->recurrent)
        for (int32_t i = p; i < p + n; i++) {
            m->call_start[i] = p;
            m->call_end[i] = p + n;
        }
    m->v_end = p + n;
    return 0;
}

int memory_verify_keep(memory *m, int32_t k, char *err, size_t errlen)
{
    const int32_t p = m->n_past;
    if (k < 1 || p + k > m->v_end) {
        snprintf(err, errlen, "cannot keep %d verified tokens (%d evaluated)", k, m->v_end - p);
        return -1;
    }
    if (m->recurrent && p + k < m->v_end && forward_rs_rollback(m->f, k - 1)) { /* the state kept there */
        for (int32_t i = p; i < p + k; i++) {
            m->call_start[i] = p;
            m->call_end[i] = p + k;
        }
    } else if (m->recurrent && p + k < m->v_end) { /* the state went past the rejected ones */
        forward_rs_load(m->f, m->v_state, p);
        m->v_end = p;
        if (call_raw(m, p, p + k, m->scratch, err, errlen) != 0)
            return -1;
    }
    m->v_end = p + k;
    return 0;
}

void memory_advance(memory *m, const float *logits)
{
    if (m->n_past >= m->v_end)
        return;
    m->n_past++;
    memcpy(m->logits, logits, (size_t)m->n_vocab * sizeof *m->logits);
    m->logits_pos = m->n_past;
    if (m->recurrent && forward_rs_pos(m->f) == m->n_past && live_ok(m))
        maybe_ckpt(m);
}
