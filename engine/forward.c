/* Forward pass (placeholder bodies; the real pass follows). */
#include "forward.h"

#include <stdio.h>

forward_params forward_default_params(void)
{
    forward_params p = {0, 0, 0, TENSOR_TYPE_F16};
    return p;
}

forward_ctx *forward_build(const model *m, const forward_params *p, char *err, size_t errlen)
{
    (void)m;
    (void)p;
    snprintf(err, errlen, "forward pass not implemented yet");
    return NULL;
}

void forward_free(forward_ctx *f) { (void)f; }
uint32_t forward_n_ctx(const forward_ctx *f)
{
    (void)f;
    return 0;
}

int forward_eval(forward_ctx *f, const int32_t *tokens, int32_t n, int32_t start_pos, float *logits,
                 bool all_logits, char *err, size_t errlen)
{
    (void)f, (void)tokens, (void)n, (void)start_pos, (void)logits, (void)all_logits;
    snprintf(err, errlen, "forward pass not implemented yet");
    return -1;
}

void forward_set_progress(forward_ctx *f, forward_progress_fn fn, void *user) { (void)f, (void)fn, (void)user; }
