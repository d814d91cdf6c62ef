/* The engine's memory for several sequences at once (serve --parallel).
 *
 * A forward context built with forward_params.n_seq = N holds N KV streams,
 * one per sequence, each n_ctx positions from 0 (llama.cpp's cache with
 * kv_unified = false, as llama-server -np N runs it). memory_seq keeps, per
 * sequence, the tokens its stream holds (position = index) and its
 * position counter n_past, and evaluates batches that mix sequences
 * through forward_decode, which cuts them as llama_decode does
 * (model/forward.h). One sequence's tokens never see another's.
 *
 * Use: forward_build(... n_seq = N), memory_seq_init; per step, a batch of
 * (token, pos, seq, out) entries where each sequence's entries start at
 * memory_seq_n_past(seq) and go on consecutively (a prompt chunk of one,
 * single tokens of others); memory_seq_decode; logits come back in batch
 * order, one row per entry with out set. A finished conversation's
 * sequence is dropped (memory_seq_truncate(s, 0)) or kept for a request
 * that extends it (memory_seq_common, then truncate to the common part).
 * The single-sequence memory (memory.h: rollback, checkpoints, lens,
 * speculative decoding) stays the one the TUI uses. On a model with a
 * recurrent state (qwen35) each sequence has its own state, reset when the
 * sequence starts again at position 0; there are no checkpoints here, so a
 * sequence can only be dropped whole (memory_seq_truncate).
 *
 * Engine thread only; no terminal I/O. */
#ifndef TOKSCOPE_MEMORY_SEQ_H
#define TOKSCOPE_MEMORY_SEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/forward.h"

typedef struct memory_seq {
    /* ---- read-only outside memory_seq.c ---- */
    forward_ctx *f;
    int32_t n_seq, n_ctx;
    int32_t *n_past; /* per sequence: positions [0, n_past) of its stream are held */
    int32_t *tokens; /* sequence s's tokens at tokens + s * n_ctx */
} memory_seq;

/* Sets ms up for f's n_seq sequences, all empty. false with err set. */
bool memory_seq_init(memory_seq *ms, forward_ctx *f, char *err, size_t errlen);
/* Frees what memory_seq_init allocated (a zeroed ms too); ms is emptied. */
void memory_seq_release(memory_seq *ms);

int32_t memory_seq_n_past(const memory_seq *ms, int32_t s);
const int32_t *memory_seq_tokens(const memory_seq *ms, int32_t s);
/* How many leading tokens of toks[0, n) sequence s holds. */
int32_t memory_seq_common(const memory_seq *ms, int32_t s, const int32_t *toks, int32_t n);
/* Sequence s keeps positions [0, n) (llama_memory_seq_rm(s, n, -1)); never
 * raises n_past. O(1): the rows after n are overwritten when evaluated. A
 * recurrent state cannot drop its last tokens: on such a model only n = 0
 * (the sequence dropped) or n >= n_past is taken; false otherwise. */
bool memory_seq_truncate(memory_seq *ms, int32_t s, int32_t n);

/* Sequence s now holds toks[0, n) (a snapshot filled its stream's rows and
 * state: memory/kv_snapshot.h). false when s or n is out of range. */
bool memory_seq_restored(memory_seq *ms, int32_t s, const int32_t *toks, int32_t n);

/* Evaluates b through forward_decode after checking that each sequence's
 * first entry sits at its n_past; then counts the tokens (n_past +=
 * entries). logits: n_vocab floats per entry with out set (b->out NULL:
 * the last entry only), in batch order. On failure (-1, err set) no
 * sequence's counter moves. */
int memory_seq_decode(memory_seq *ms, const forward_batch *b, float *logits, char *err, size_t errlen);

#endif
