/* Speculative decoding inside the engine thread (engine_gen.c's turn): the
 * drafts of each sampled token verified through the memory
 * (memory_verify), the tokens the verification drew handed to the turn one
 * at a time with their step reports, as if sampled there. Engine thread
 * only. */
#ifndef TOKSCOPE_SPEC_ENGINE_H
#define TOKSCOPE_SPEC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/sampler.h"

struct engine;
typedef struct spec_run spec_run;

/* After a model is loaded: e->spec from e->p's spec settings (NULL when
 * off). false with err set (then e->spec is NULL). */
bool spec_engine_open(struct engine *e, char *err, size_t errlen);
void spec_engine_close(struct engine *e);
/* ENGINE_CMD_SET_SPEC: name "spec", "draft_max" or "draft_model" set to
 * value in e->p, applied when the next reply starts; a bad value is an
 * ERROR event and changes nothing. */
void spec_engine_set(struct engine *e, const char *name, const char *value);
/* A turn starts: no tokens of an earlier verification are handed out. */
void spec_engine_reset(struct engine *e);
/* The next token a verification drew, with its report: true and *tok, *st
 * set, or false when none is waiting. *mark: 1 an accepted draft, 2 drawn
 * where the draft *rejected was rejected, 0 drawn after all were accepted
 * (or after the tokens a recurrent target verified again: spec_verify). */
bool spec_engine_next(struct engine *e, int32_t *tok, sampler_step *st, int32_t *mark, int32_t *rejected);
/* In place of memory_push(tok): a token handed out by spec_engine_next that
 * the verification evaluated is only counted; otherwise, with may_draft,
 * drafts are verified with tok (the sampler drawing each position), else
 * tok is evaluated alone. */
int spec_engine_push(struct engine *e, int32_t tok, bool may_draft, char *err, size_t errlen);
/* This turn's drafts and accepted drafts (since spec_engine_reset; 0 when off). */
void spec_engine_turn_stats(const struct engine *e, int32_t *n_drafted, int32_t *n_accepted);
/* The counts so far (0 when off). */
void spec_engine_stats(const struct engine *e, int64_t *n_drafted, int64_t *n_accepted, int64_t *n_verify);

#endif
