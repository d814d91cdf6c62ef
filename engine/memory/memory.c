/* The engine's memory: the tokens the forward context holds, the position
 * counter, truncation (the O(1) rollback of explore mode), bringing the
 * context to hold a token sequence with as little work as it allows, the
 * distribution at an earlier position, the context shift and the lens's
 * borrowing of the context. See memory.h. */
#include "memory/memory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool memory_init(memory *m, forward_ctx *f, int32_t n_ctx, int32_t n_vocab, bool no_kv_cache, char *err,
                 size_t errlen)
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
    if (!m->tokens || !m->logits || !m->anchor) {
        memory_release(m);
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return true;
}

void memory_release(memory *m)
{
    free(m->tokens);
    free(m->logits);
    free(m->anchor);
    memset(m, 0, sizeof *m);
    m->logits_pos = m->anchor_pos = -1;
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
}

int32_t memory_common(const memory *m, const int32_t *seq, int32_t n)
{
    int32_t common = 0;
    if (!m->no_kv_cache)
        while (common < m->n_past && common < n && m->tokens[common] == seq[common])
            common++;
    return common;
}

int32_t memory_reuse(memory *m, const int32_t *seq, int32_t n) { return memory_common(m, seq, n); }

/* Evaluates tokens[start, n) at positions start.. as one forward_eval call
 * (the last token's logits land in m->logits, logits_pos = n).
 * no_kv_cache recomputes from 0. n_past is the caller's to raise. */
static int eval_range(memory *m, int32_t start, int32_t n, char *err, size_t errlen)
{
    if (m->no_kv_cache)
        start = 0;
    m->evaluating = true;
    int rc = forward_eval(m->f, m->tokens + start, n - start, start, m->logits, false, err, errlen);
    m->evaluating = false;
    m->logits_pos = rc == 0 ? n : -1;
    return rc;
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
        int rc = eval_range(m, common, batch_end, err, errlen);
        if (rc != 0)
            return rc;
        *evaluated += batch_end - common;
        m->n_past = batch_end;
        if (batch_end == np) { /* the prompt's own last logits, as its batch computed them */
            memcpy(m->anchor, m->logits, (size_t)m->n_vocab * sizeof *m->anchor);
            m->anchor_pos = np;
        }
    }
    for (int32_t p = m->n_past; p < upto; p++) {
        m->eval_base = *evaluated;
        int rc = eval_range(m, p, p + 1, err, errlen);
        if (rc != 0)
            return rc;
        (*evaluated)++;
        m->n_past = p + 1;
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
    memory_truncate(m, p - 1);
    if (eval_range(m, p - 1, p, err, errlen) != 0)
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
    if (eval_range(m, m->n_past, m->n_past + 1, err, errlen) != 0)
        return -1;
    m->n_past++;
    return 0;
}

bool memory_can_shift(const memory *m)
{
    (void)m;
    return true;
}

int memory_shift(memory *m, int32_t n_keep, int32_t *n_discard, char *err, size_t errlen)
{
    *n_discard = 0;
    const int32_t n_left = m->n_past - n_keep;
    const int32_t d = n_left / 2;
    if (d <= 0)
        return 0;
    memmove(m->tokens + n_keep, m->tokens + n_keep + d, (size_t)(n_left - d) * sizeof *m->tokens);
    const int32_t n = m->n_past - d;
    memory_truncate(m, 0); /* the cache rows are stale until the re-evaluation succeeds */
    if (eval_range(m, 0, n, err, errlen) != 0)
        return -1;
    m->n_past = n;
    *n_discard = d;
    return 0;
}

int memory_lens(memory *m, const int32_t *seq, int32_t n, float *logits, forward_lens_fn fn, void *user, char *err,
                size_t errlen)
{
    const int32_t q = n - 1;
    m->evaluating = true;
    /* the position may be cached already (q < n_past): it is run again and
     * the cache rows restored, nothing else changes */
    int rc = m->no_kv_cache ? forward_eval_lens(m->f, seq, n, 0, logits, false, fn, user, err, errlen)
                            : forward_eval_lens(m->f, seq + q, 1, q, logits, q < m->n_past, fn, user, err, errlen);
    m->evaluating = false;
    return rc;
}
