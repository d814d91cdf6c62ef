/* The engine's memory: what the forward context holds of the conversation.
 *
 * It owns the token sequence whose keys/values sit in the KV cache (position
 * = index), the position counter n_past, truncation, the logits of the last
 * evaluation and the prompt's own last logits (the anchor), the context
 * shift,.
 *
 * Everything the engine evaluates goes through here, so the rule "going
 * back to position p gives what a fresh run to p gives" is kept in one
 * place. A fresh run evaluates a prompt (the tokens a submit adds) as one
 * forward_eval call from where it starts and every reply token alone; the
 * memory remembers which call evaluated each position and, when it has to
 * evaluate positions again, evaluates them the same way.
 *
 * Engine thread only; no terminal I/O, no events: the engine reports. */
#ifndef TOKSCOPE_MEMORY_H
#define TOKSCOPE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/forward.h"

typedef struct memory {
    /* ---- read-only outside memory*.c ---- */
    int32_t *tokens;    /* [0, n_past): the tokens the context holds, position = index */
    int32_t n_past;     /* lowered only through memory_truncate */
    float *logits;      /* n_vocab: the distribution at position logits_pos */
    int32_t logits_pos; /* -1 = none */
    bool evaluating;    /* inside forward_eval (the progress callback runs then) */
    int32_t eval_base;  /* tokens of the current memory_ensure evaluated before this forward_eval */

    /* ---- private ---- */
    forward_ctx *f;
    int32_t n_ctx, n_vocab;
    bool no_kv_cache;   /* recompute the whole sequence every step */
    /* The prompt's last logits as its batch computed them (a one-token
     * re-evaluation rounds differently): a branch at the reply's first
     * token, an undo back to it, /regen and the second side of a comparison
     * start from them. Valid while the cache keeps [0, anchor_pos). */
    float *anchor;
    int32_t anchor_pos; /* -1 = none */
} memory;

/* Sets m up for a forward context (n_ctx positions, n_vocab logits).
 * Returns false with err set. */
bool memory_init(memory *m, forward_ctx *f, int32_t n_ctx, int32_t n_vocab, bool no_kv_cache, char *err,
                 size_t errlen);
/* Frees what memory_init allocated; m is zeroed. */
void memory_release(memory *m);

/* n_past = n (the anchor and later checkpoints go when n is below them).
 * Never raises n_past. O(1) for the cache; a recurrent state is restored
 * lazily, when something is evaluated next. */
void memory_truncate(memory *m, int32_t n);
/* How many leading tokens of seq[0, n) the context holds (0 with no_kv_cache). */
int32_t memory_common(const memory *m, const int32_t *seq, int32_t n);
/* Where an evaluation of seq must start: memory_common, lowered for a
 * recurrent model to a position whose state it can give exactly (the start
 * of a prompt the sequence diverges in). */
int32_t memory_reuse(memory *m, const int32_t *seq, int32_t n);

/* Brings the context to hold seq[0, upto): keeps the common prefix,
 * evaluates seq[.., np) as one batch (the prompt, saving its logits as the
 * anchor when the batch ends at np) and seq[np, upto) one token at a time,
 * as generation evaluated them. *evaluated gets how many tokens of seq it
 * evaluated (a recurrent state's replay not included). */
int memory_ensure(memory *m, const int32_t *seq, int32_t np, int32_t upto, int32_t *evaluated, char *err,
                  size_t errlen);
/* Makes m->logits the distribution at position p (1 <= p <= n_past):
 * n_past = p, the logits from the anchor (or a checkpoint's) or from token
 * p-1 evaluated alone (how generation evaluated it). *evaluated (may be
 * NULL) gets the tokens evaluated. At most one token of work for a
 * non-recurrent model. */
int memory_rollback(memory *m, int32_t p, int32_t *evaluated, char *err, size_t errlen);
/* Generation: evaluates tok alone at n_past, n_past + 1. */
int memory_push(memory *m, int32_t tok, char *err, size_t errlen);

/* Whether a context shift can apply (not for a recurrent state). */
bool memory_can_shift(const memory *m);
/* Context shift: drops the oldest half of the tokens after n_keep and
 * evaluates the rest again from position 0 as one batch. *n_discard gets
 * the number dropped (0: nothing could be). -1 with err set on failure
 * (and on a recurrent model: memory_can_shift). */
int memory_shift(memory *m, int32_t n_keep, int32_t *n_discard, char *err, size_t errlen);

/* The logit lens of the step whose distribution came from evaluating
 * seq[n-1] (seq[0, n-1) being the context before it): runs that position
 * through forward_eval_lens (all positions from 0 with no_kv_cache; logits:
 * n rows then, else 1) and leaves the context as it was. The prefix must be
 * held: memory_common(seq, n - 1) == n - 1, or no_kv_cache. */
int memory_lens(memory *m, const int32_t *seq, int32_t n, float *logits, forward_lens_fn fn, void *user, char *err,
                size_t errlen);

#endif
