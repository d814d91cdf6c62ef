/* The Gemma 4 assistant draft source (spec_g4assist.c): a separate
 * gemma4-assistant file drafting for a gemma4 target over the target's own
 * cache. Internal to engine/spec. */
#ifndef TOKSCOPE_SPEC_G4ASSIST_H
#define TOKSCOPE_SPEC_G4ASSIST_H

#include <stddef.h>
#include <stdint.h>

#include "model/forward.h"
#include "model/model.h"

typedef struct spec_g4a spec_g4a;

/* Loads the assistant file path for target (model_g4assist_view). Its
 * context is built at the first spec_g4a_process, on the target's. NULL
 * with err set (not a gemma4-assistant, does not fit the target). */
spec_g4a *spec_g4a_create(const model *target, const char *path, const forward_params *fp, char *err,
                          size_t errlen);
void spec_g4a_free(spec_g4a *s);
/* The target context f evaluated a batch of n tokens and h holds their
 * h_nextn rows (n x the target's n_embd): they are kept for
 * spec_g4a_accept, pending becomes the last (common_speculative's process
 * with shared memory: the assistant evaluates nothing). The first call
 * builds the assistant's context on f's cache. 0, or -1 with err set. */
int spec_g4a_process(spec_g4a *s, forward_ctx *f, const float *h, int32_t n, char *err, size_t errlen);
/* The last batch kept n_accepted drafts: pending = its row n_accepted. */
void spec_g4a_accept(spec_g4a *s, int32_t n_accepted);
/* max drafts after last (sampled, at position n_past, not evaluated) into
 * out, each evaluated at n_past over the target's cache [0, n_past), the
 * next one fed the previous draft and the assistant's own hidden state.
 * Returns how many (0 when they would not fit the context, or before any
 * process), -1 with err set. */
int32_t spec_g4a_draft(spec_g4a *s, int32_t last, int32_t n_past, int32_t max, int32_t *out, char *err,
                       size_t errlen);

/* The logits of the last draft step (n_vocab floats; tests compare them
 * with the reference's). */
const float *spec_g4a_logits(const spec_g4a *s);

#endif
