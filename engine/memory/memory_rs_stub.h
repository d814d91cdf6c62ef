/* The forward context's recurrent-state API (the contract with the qwen35
 * branch, which declares it in model/forward.h and implements it in
 * model/forward_rs.c). Until that branch is merged, memory_rs_stub.c gives
 * the answer for the models tokscope runs today: no recurrent layers. Both
 * files go when it is merged. */
#ifndef TOKSCOPE_MEMORY_RS_STUB_H
#define TOKSCOPE_MEMORY_RS_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/forward.h"

bool forward_is_recurrent(const forward_ctx *f);
size_t forward_rs_bytes(const forward_ctx *f);            /* bytes of one snapshot, all layers */
int32_t forward_rs_pos(const forward_ctx *f);             /* positions the state has consumed: [0, pos) */
void forward_rs_save(const forward_ctx *f, void *dst);    /* snapshot (forward_rs_bytes bytes) */
void forward_rs_load(forward_ctx *f, const void *src, int32_t pos); /* restore a snapshot taken at pos */
void forward_rs_reset(forward_ctx *f);                    /* empty state, pos 0 */
/* forward_eval on a recurrent model refuses start_pos != forward_rs_pos(f), except 0 (resets). */

#endif
