/* The engine's memory: what the forward context holds of the conversation.
 *
 * It owns the token sequence whose keys/values sit in the KV cache (position
 * = index), the position counter n_past, truncation, the logits of the last
 * evaluation and the prompt's own last logits (the anchor), the context
 * shift, and, for hybrid models whose recurrent layers keep a state that
 * cannot be truncated (Qwen3.5's Gated DeltaNet), checkpoints of that state
 * (memory_ckpt.c).
 *
 * Everything the engine evaluates goes through here, so the rule "going
 * back to position p gives what a fresh run to p gives" is kept in one
 * place. A fresh run (a new engine given the same submits) evaluates each
 * prompt (the tokens a submit adds) as one forward_eval call from where it
 * starts and every reply token alone. A KV cache is simply truncated. A
 * recurrent state is restored from the nearest checkpoint at or before the
 * position and brought forward by evaluating again, the same way as the
 * first time, the calls between them: the memory remembers which call
 * evaluated each position. Where the position lies inside a prompt (an
 * edit, the lens of the reply's first step) no state was ever there: the
 * prompt is evaluated again from its own start, as one batch cut at the
 * position, which is what a fresh run of the conversation cut there does.
 *
 * Engine thread only; no terminal I/O, no events: the engine reports. */
#ifndef TOKSCOPE_MEMORY_H
#define TOKSCOPE_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/forward.h"

typedef struct memory_params {
    int32_t ckpt_every;    /* recurrent models: a checkpoint every this many tokens evaluated alone
                              (0 = MEMORY_CKPT_EVERY) besides one at the end of every prompt */
    int32_t ckpt_max;      /* most checkpoints kept (0 = MEMORY_CKPT_MAX) */
    size_t ckpt_max_bytes; /* most bytes they take, logits included (0 = MEMORY_CKPT_MAX_BYTES) */
} memory_params;

#define MEMORY_CKPT_EVERY 256
#define MEMORY_CKPT_MAX 32
#define MEMORY_CKPT_MAX_BYTES ((size_t)1 << 30)

/* One snapshot of the recurrent state after positions [0, pos), with the
 * distribution at pos (the logits of the evaluation that ended there). */
typedef struct memory_ckpt {
    int32_t pos;
    void *state;   /* rs_bytes */
    float *logits; /* n_vocab */
} memory_ckpt;

/* What evaluates the target for the memory (forward_eval's arguments):
 * speculative decoding with an MTP block hooks every evaluation, for the
 * block to see each batch as llama-server's common_speculative_process
 * does after each llama_decode. */
typedef int (*memory_eval_fn)(void *user, forward_ctx *f, const int32_t *tokens, int32_t n, int32_t pos,
                              float *logits, bool all_logits, char *err, size_t errlen);

typedef struct memory {
    /* ---- read-only outside memory*.c ---- */
    int32_t *tokens;    /* [0, n_past): the tokens the context holds, position = index */
    int32_t n_past;     /* lowered only through memory_truncate */
    float *logits;      /* n_vocab: the distribution at position logits_pos */
    int32_t logits_pos; /* -1 = none */
    bool evaluating;    /* inside forward_eval (the progress callback runs then) */
    bool replaying;     /* ... evaluating again to restore a recurrent state (no progress to show) */
    int32_t eval_base;  /* tokens of the current memory_ensure evaluated before this forward_eval */
    int32_t n_replayed; /* tokens evaluated again to restore a recurrent state, all time */

    /* ---- private ---- */
    forward_ctx *f;
    int32_t n_ctx, n_vocab;
    bool no_kv_cache; /* recompute the whole sequence every step */
    /* The prompt's last logits as its batch computed them (a one-token
     * re-evaluation rounds differently): a branch at the reply's first
     * token, an undo back to it, /regen and the second side of a comparison
     * start from them. Valid while the cache keeps [0, anchor_pos). */
    float *anchor;
    int32_t anchor_pos; /* -1 = none */
    /* recurrent models only (NULL/0 otherwise: no cost) */
    bool recurrent;
    memory_params p;
    int32_t *call_start, *call_end; /* position i was evaluated by the call [call_start[i], call_end[i]) */
    memory_ckpt *ckpt;              /* by position, ascending */
    int32_t n_ckpt;
    size_t ckpt_bytes;            /* all checkpoints, logits included */
    size_t rs_bytes;              /* one snapshot of the state */
    float *scratch;               /* n_vocab: logits of evaluations that must not touch m->logits */
    void *top;                    /* rs_bytes: the state at n_past while the lens borrows the context */
    forward_progress_fn progress; /* the engine's, called between internal batches */
    void *progress_user;
    bool no_cancel; /* giving a prompt's cache rows back: the evaluation must finish */
    /* speculative decoding: [n_past, v_end) evaluated by a verification and
     * accepted, not counted yet (memory_advance counts them one by one) */
    int32_t v_end;
    void *v_state; /* recurrent: the state before the verification (rs_bytes, allocated on first use) */
    memory_eval_fn eval; /* memory_set_eval's, NULL: forward_eval */
    void *eval_user;
} memory;

/* Sets m up for a forward context (n_ctx positions, n_vocab logits). p may
 * be NULL (defaults). Returns false with err set. */
bool memory_init(memory *m, forward_ctx *f, int32_t n_ctx, int32_t n_vocab, bool no_kv_cache,
                 const memory_params *p, char *err, size_t errlen);
/* Frees what memory_init allocated; m is emptied. */
void memory_release(memory *m);
/* The forward context's progress callback goes through the memory (which
 * cannot let a few evaluations be cancelled); m must not move afterwards. */
void memory_set_progress(memory *m, forward_progress_fn fn, void *user);
/* Every evaluation of the target through fn (NULL: forward_eval again);
 * the logit lens's are not (they put back what they change). */
void memory_set_eval(memory *m, memory_eval_fn fn, void *user);

/* n_past = n (the anchor and later checkpoints go when n is below them).
 * Never raises n_past. O(1) for the cache; a recurrent state is restored
 * lazily, when something is evaluated next. */
void memory_truncate(memory *m, int32_t n);
/* How many leading tokens of seq[0, n) the context holds (0 with no_kv_cache). */
int32_t memory_common(const memory *m, const int32_t *seq, int32_t n);
/* Where an evaluation of seq must start: memory_common, lowered for a
 * recurrent model to the start of the prompt the sequence diverges in
 * (the state inside a prompt's batch was never there to restore). */
int32_t memory_reuse(const memory *m, const int32_t *seq, int32_t n);

/* Brings the context to hold seq[0, upto): keeps what memory_reuse allows,
 * evaluates seq[.., np) as one batch (the prompt, saving its logits as the
 * anchor when the batch ends at np; a recurrent model checkpoints there)
 * and seq[np, upto) one token at a time, as generation evaluated them.
 * *evaluated gets how many tokens of seq it evaluated (tokens evaluated
 * again only to restore a recurrent state are counted in n_replayed). */
int memory_ensure(memory *m, const int32_t *seq, int32_t np, int32_t upto, int32_t *evaluated, char *err,
                  size_t errlen);
/* Makes m->logits the distribution at position p (1 <= p <= n_past):
 * n_past = p, the logits from the anchor (or a checkpoint at p) or from
 * evaluating again the call that ended at p (token p-1 alone, how
 * generation evaluated it; a prompt cut at p from its own start when p lies
 * inside one). *evaluated (may be NULL) gets the tokens evaluated. At most
 * one token of work for a non-recurrent model. */
int memory_rollback(memory *m, int32_t p, int32_t *evaluated, char *err, size_t errlen);
/* Generation: evaluates tok alone at n_past, n_past + 1 (a recurrent model
 * checkpoints every ckpt_every such tokens). */
int memory_push(memory *m, int32_t tok, char *err, size_t errlen);

/* ---- speculative decoding (engine/spec) ----
 * memory_verify evaluates toks[0, n) at n_past as one call with a row of
 * logits per token (rows: n x n_vocab) and leaves n_past where it was;
 * memory_verify_keep then keeps the first k of them (k >= 1): a KV cache
 * simply ignores the rest, a recurrent state goes back to before the call
 * and the k tokens are evaluated again as one call (so the state holds
 * nothing of the rejected ones and the memory records the call it replays);
 * memory_advance counts the next kept token (n_past + 1, logits: its row).
 * memory_verify again before memory_verify_keep verifies other tokens at
 * the same n_past, a recurrent state from where the first call began.
 * When the verification kept the state after each position
 * (forward_rs_keep), memory_verify_keep takes the one after its k tokens
 * instead of evaluating them again (recorded as a call of their own: the
 * recurrence runs token by token, so that is the state they give).
 * Anything else that evaluates or truncates drops what was not counted. */
int memory_verify(memory *m, const int32_t *toks, int32_t n, float *rows, char *err, size_t errlen);
int memory_verify_keep(memory *m, int32_t k, char *err, size_t errlen);
void memory_advance(memory *m, const float *logits);

/* Whether a context shift can apply: not to a recurrent state (it cannot
 * drop tokens from its middle). */
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
 * held: memory_common(seq, n - 1) == n - 1, or no_kv_cache. A recurrent
 * model needs the state at n-1: restored (checkpoint, then the calls after
 * it again), or, inside a prompt, the prompt from its start cut there, and
 * that prompt evaluated again afterwards to give its cache rows back. */
int memory_lens(memory *m, const int32_t *seq, int32_t n, float *logits, forward_lens_fn fn, void *user,
                char *err, size_t errlen);

/* Recurrent models: whether the model has a recurrent state, the
 * checkpoints kept and their bytes (false/0 otherwise). */
bool memory_is_recurrent(const memory *m);
int32_t memory_n_ckpt(const memory *m);
size_t memory_ckpt_bytes(const memory *m);
/* Bytes one checkpoint takes (the state and the logits), 0 when none are taken. */
size_t memory_ckpt_unit_bytes(const memory *m);

/* ---- memory_ckpt.c (the checkpoint list; memory.c's helpers) ---- */
/* Snapshot of the state at n_past with m->logits (logits_pos == n_past);
 * evicts to keep the caps (the checkpoint whose loss widens a gap least). */
void memory_ckpt_take(memory *m);
/* The checkpoint with the largest pos <= t, NULL if none. */
const memory_ckpt *memory_ckpt_find(const memory *m, int32_t t);
/* Drops the checkpoints after position n. */
void memory_ckpt_drop_after(memory *m, int32_t n);
void memory_ckpt_clear(memory *m);

#endif
