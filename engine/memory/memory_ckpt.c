/* Checkpoints of a recurrent state (memory.h): snapshots at the end of
 * every prompt and every ckpt_every tokens evaluated alone, each with the
 * distribution at its position, kept under a count and a byte cap. Going
 * back to position p restores the nearest one at or before p, so what is
 * evaluated again is bounded by the spacing between two of them. */
#include "memory/memory.h"

#include <stdlib.h>
#include <string.h>

size_t memory_ckpt_unit_bytes(const memory *m)
{
    return m->recurrent ? m->rs_bytes + (size_t)m->n_vocab * sizeof(float) : 0;
}

static void ckpt_free(memory *m, int32_t i)
{
    free(m->ckpt[i].state);
    free(m->ckpt[i].logits);
    m->ckpt_bytes -= memory_ckpt_unit_bytes(m);
    memmove(m->ckpt + i, m->ckpt + i + 1, (size_t)(m->n_ckpt - i - 1) * sizeof *m->ckpt);
    m->n_ckpt--;
}

/* The checkpoint whose loss leaves the smallest gap between its neighbours
 * (next = the one about to be taken at new_pos for the newest): keeps them
 * spread over the sequence, so the work to reach any position stays small.
 * Ties: the older one. */
static int32_t evictee(const memory *m, int32_t new_pos)
{
    int32_t best = 0, best_gap = INT32_MAX;
    for (int32_t i = 0; i < m->n_ckpt; i++) {
        const int32_t prev = i > 0 ? m->ckpt[i - 1].pos : 0;
        const int32_t next = i + 1 < m->n_ckpt ? m->ckpt[i + 1].pos : new_pos;
        if (next - prev < best_gap) {
            best_gap = next - prev;
            best = i;
        }
    }
    return best;
}

void memory_ckpt_take(memory *m)
{
    const int32_t pos = m->n_past;
    const size_t unit = memory_ckpt_unit_bytes(m);
    if (!m->recurrent || pos <= 0 || m->logits_pos != pos || unit > m->p.ckpt_max_bytes || m->p.ckpt_max <= 0)
        return;
    memory_ckpt_drop_after(m, pos - 1); /* one at pos already: this one is the same state, taken again */
    while (m->n_ckpt > 0 && (m->n_ckpt >= m->p.ckpt_max || m->ckpt_bytes + unit > m->p.ckpt_max_bytes))
        ckpt_free(m, evictee(m, pos));
    memory_ckpt *v = realloc(m->ckpt, (size_t)(m->n_ckpt + 1) * sizeof *v);
    if (!v)
        return;
    m->ckpt = v;
    memory_ckpt c = {pos, malloc(m->rs_bytes ? m->rs_bytes : 1), malloc((size_t)m->n_vocab * sizeof(float))};
    if (!c.state || !c.logits) { /* a checkpoint less: more to evaluate later, nothing wrong */
        free(c.state);
        free(c.logits);
        return;
    }
    forward_rs_save(m->f, c.state);
    memcpy(c.logits, m->logits, (size_t)m->n_vocab * sizeof(float));
    m->ckpt[m->n_ckpt++] = c;
    m->ckpt_bytes += unit;
}

const memory_ckpt *memory_ckpt_find(const memory *m, int32_t t)
{
    const memory_ckpt *best = NULL;
    for (int32_t i = 0; i < m->n_ckpt && m->ckpt[i].pos <= t; i++)
        best = &m->ckpt[i];
    return best;
}

void memory_ckpt_drop_after(memory *m, int32_t n)
{
    while (m->n_ckpt > 0 && m->ckpt[m->n_ckpt - 1].pos > n)
        ckpt_free(m, m->n_ckpt - 1);
}

void memory_ckpt_clear(memory *m)
{
    memory_ckpt_drop_after(m, -1);
    free(m->ckpt);
    m->ckpt = NULL;
}
