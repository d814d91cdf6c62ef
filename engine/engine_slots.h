/* Continuous batching (serve --parallel N): the engine's memory holds N
 * sequences (memory/memory_seq.h), each running request is a slot that owns
 * one, and every step evaluates one batch: the next token of each
 * generating slot, then a chunk of the prompts still being evaluated, as
 * many tokens as the internal batch leaves (llama-server's order: running
 * replies first, so they keep streaming while a long prompt goes in).
 * Requests join between steps; a finished slot's sequence keeps its tokens
 * for the next request whose prompt extends it (engine_slots_choose).
 *
 * The planning below (engine_slots_plan.c) is pure, so unit tests drive it; the
 * engine's loop is engine_slots_main (engine_slots.c). */
#ifndef TOKSCOPE_ENGINE_SLOTS_H
#define TOKSCOPE_ENGINE_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

/* One slot as the planner sees it. */
typedef struct engine_slot_need {
    bool busy;      /* a request runs in it */
    int32_t n_left; /* prompt tokens still to evaluate; 0: generating (one token a step) */
    int32_t order;  /* admission order: earlier prompts go in first */
} engine_slot_need;

/* How many tokens each slot puts in this step's batch (take[i]), at most
 * n_batch in all: every generating slot 1, then the prefilling slots in
 * admission order as many of their tokens as fit (at least one token of
 * the first, so a prompt always moves). Returns the batch's size. */
int32_t engine_slots_plan(const engine_slot_need *need, int32_t n, int32_t n_batch, int32_t *take);

/* How much of a new prompt of n tokens a sequence holding common of them
 * keeps: all of them but the last (its logits are needed), and on a
 * recurrent model (can_cut false) either everything the sequence holds
 * (held <= kept) or nothing. */
int32_t engine_slots_keep(int32_t common, int32_t n, int32_t held, bool can_cut);

/* One slot as the chooser of a new request's slot sees it. */
typedef struct engine_slot_cand {
    bool busy;         /* a request runs in it */
    int32_t held;      /* tokens its sequence holds (0: empty) */
    int32_t common;    /* of them, the new prompt's first ones */
    int64_t last_used; /* when its last request ended (larger: later) */
} engine_slot_cand;

/* The slot a new prompt of n tokens takes, as llama-server picks it
 * (get_available_slot, --slot-prompt-similarity 0.1): the free slot whose
 * cached prefix is the largest fraction of the prompt, when that fraction
 * is over 0.1; else the least recently used free slot, an empty one
 * before any that holds a conversation (so a cached conversation is not
 * overwritten while a slot is empty); of equals the lowest id. -1: none is
 * free. */
int32_t engine_slots_choose(const engine_slot_cand *c, int32_t n_slots, int32_t n);

#endif
