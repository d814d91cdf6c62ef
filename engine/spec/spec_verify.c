/* Verification of drafts by the target (spec.h): one batch, each row
 * sampled with the user's chain, drafts accepted while they agree
 * (common_sampler_sample_and_accept_n), and nothing of the rejected ones
 * left behind. */
#include "spec/spec.h"

#include <stdio.h>
#include <string.h>

int32_t spec_sample_accept(sampler *smp, const float *rows, int32_t n_vocab, const int32_t *draft,
                           int32_t n_draft, int32_t *out, sampler_step *steps)
{
    int32_t n_out = 0;
    for (int32_t i = 0; i <= n_draft; i++) {
        const int32_t id = sampler_sample(smp, rows + (size_t)i * (size_t)n_vocab, steps ? &steps[i] : NULL);
        sampler_accept(smp, id);
        out[n_out++] = id;
        if (i == n_draft || id != draft[i])
            break;
    }
    return n_out;
}

int32_t spec_verify(forward_ctx *f, sampler *smp, int32_t n_vocab, int32_t *seq, int32_t n_past, int32_t n_draft,
                    float *rows, void *rs, int32_t *out, sampler_step *steps, int32_t *n_accepted, char *err,
                    size_t errlen)
{
    const bool recurrent = forward_is_recurrent(f);
    sampler_mark mark;
    if (recurrent) { /* a recurrent state cannot be cut: the one before the batch, kept (the checkpoint) */
        forward_rs_save(f, rs);
        sampler_mark_get(smp, &mark);
    }
    if (forward_eval(f, seq + n_past, n_draft + 1, n_past, rows, true, err, errlen) != 0)
        return -1;
    int32_t n_out = spec_sample_accept(smp, rows, n_vocab, seq + n_past + 1, n_draft, out, steps);
    bool replayed = false;
    while (recurrent && n_out - 1 < n_draft) {
        /* llama-server: back to the checkpoint and the sampler as it was,
         * then the tokens drawn (the accepted drafts and the one in place
         * of the rejected draft) verified again as the drafts of one batch,
         * so they are drawn again from its rows, and one more after them */
        forward_rs_load(f, rs, n_past);
        sampler_rewind(smp, &mark);
        n_draft = n_out;
        memcpy(seq + n_past + 1, out, (size_t)n_draft * sizeof *out);
        if (forward_eval(f, seq + n_past, n_draft + 1, n_past, rows, true, err, errlen) != 0)
            return -1;
        n_out = spec_sample_accept(smp, rows, n_vocab, seq + n_past + 1, n_draft, out, steps);
        replayed = true;
    }
    /* the server counts the replayed position it drew in the first pass
     * as no accepted draft */
    if (n_accepted)
        *n_accepted = n_out - 1 - (replayed && n_out > 1 ? 1 : 0);
    return n_out;
}
