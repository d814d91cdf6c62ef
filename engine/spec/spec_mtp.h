/* The MTP draft source (spec_mtp.c): a target's own MTP block with its KV
 * cache, fed the target's hidden states. Internal to engine/spec. */
#ifndef TOKSCOPE_SPEC_MTP_H
#define TOKSCOPE_SPEC_MTP_H

#include <stddef.h>
#include <stdint.h>

#include "model/forward.h"
#include "model/model.h"

typedef struct spec_mtp spec_mtp;

/* The block of target (model_mtp_view) with a context built with fp. NULL
 * with err set (no block, a tensor missing, out of memory). */
spec_mtp *spec_mtp_create(const model *target, const forward_params *fp, char *err, size_t errlen);
void spec_mtp_free(spec_mtp *s);
/* The target evaluated tokens[0, n) at pos.. and h holds their h_nextn
 * rows (n x n_embd): the block evaluates them too (common_speculative's
 * process), pending becomes h's last row. 0, or -1 with err set. */
int spec_mtp_process(spec_mtp *s, const int32_t *tokens, int32_t n, int32_t pos, const float *h, char *err,
                     size_t errlen);
/* A verification's batch (the last process()) kept n_accepted drafts:
 * pending = its row n_accepted. */
void spec_mtp_accept(spec_mtp *s, int32_t n_accepted);
/* max drafts after last (sampled, at position n_past, not evaluated) into
 * out: the block chained on its own hidden state. Returns how many (0 when
 * they would not fit the context), -1 with err set. */
int32_t spec_mtp_draft(spec_mtp *s, int32_t last, int32_t n_past, int32_t max, int32_t *out, char *err,
                       size_t errlen);

#endif
