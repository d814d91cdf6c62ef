/* Several sequences' tokens and position counters over one forward
 * context's streams (memory_seq.h). */
#include "memory/memory_seq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool memory_seq_init(memory_seq *ms, forward_ctx *f, char *err, size_t errlen)
{
    memset(ms, 0, sizeof *ms);
    ms->f = f;
    ms->n_seq = (int32_t)forward_n_seq(f);
    ms->n_ctx = (int32_t)forward_n_ctx(f);
    ms->n_past = calloc((size_t)ms->n_seq, sizeof *ms->n_past);
    ms->tokens = malloc((size_t)ms->n_seq * ms->n_ctx * sizeof *ms->tokens);
    if (!ms->n_past || !ms->tokens) {
        memory_seq_release(ms);
        snprintf(err, errlen, "out of memory");
        return false;
    }
    return true;
}

void memory_seq_release(memory_seq *ms)
{
    free(ms->n_past);
    free(ms->tokens);
    memset(ms, 0, sizeof *ms);
}

int32_t memory_seq_n_past(const memory_seq *ms, int32_t s)
{
    return ms->n_past[s];
}

const int32_t *memory_seq_tokens(const memory_seq *ms, int32_t s)
{
    return ms->tokens + (size_t)s * ms->n_ctx;
}

int32_t memory_seq_common(const memory_seq *ms, int32_t s, const int32_t *toks, int32_t n)
{
    const int32_t *have = memory_seq_tokens(ms, s);
    int32_t i = 0;
    while (i < n && i < ms->n_past[s] && have[i] == toks[i])
        i++;
    return i;
}

bool memory_seq_truncate(memory_seq *ms, int32_t s, int32_t n)
{
    if (s < 0 || s >= ms->n_seq || n < 0)
        return false;
    if (n >= ms->n_past[s])
        return true;
    if (n > 0 && forward_is_recurrent(ms->f))
        return false;
    ms->n_past[s] = n;
    return true;
}

bool memory_seq_restored(memory_seq *ms, int32_t s, const int32_t *toks, int32_t n)
{
    if (s < 0 || s >= ms->n_seq || n < 0 || n > ms->n_ctx)
        return false;
    memcpy(ms->tokens + (size_t)s * (size_t)ms->n_ctx, toks, (size_t)n * sizeof *toks);
    ms->n_past[s] = n;
    return true;
}

int memory_seq_decode(memory_seq *ms, const forward_batch *b, float *logits, char *err, size_t errlen)
{
    int32_t *next = malloc((size_t)ms->n_seq * sizeof *next);
    if (!next) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(next, ms->n_past, (size_t)ms->n_seq * sizeof *next);
    for (int32_t i = 0; i < b->n; i++) {
        const int32_t s = b->seq[i];
        if (s < 0 || s >= ms->n_seq) {
            snprintf(err, errlen, "entry %d: sequence %d is not one of the %d held", i, s, ms->n_seq);
            free(next);
            return -1;
        }
        if (b->pos[i] != next[s]) {
            snprintf(err, errlen, "entry %d: sequence %d is at position %d, not %d", i, s, next[s],
                     b->pos[i]);
            free(next);
            return -1;
        }
        next[s]++;
    }
    const int rc = forward_decode(ms->f, b, logits, err, errlen);
    if (rc == 0) {
        for (int32_t i = 0; i < b->n; i++)
            ms->tokens[(size_t)b->seq[i] * ms->n_ctx + b->pos[i]] = b->token[i];
        memcpy(ms->n_past, next, (size_t)ms->n_seq * sizeof *next);
    }
    free(next);
    return rc;
}
