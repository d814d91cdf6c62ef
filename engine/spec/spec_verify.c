/* Verification of drafts by the target (spec.h): one batch, each row
 * sampled with the user's chain, drafts accepted while they agree
 * (common_sampler_sample_and_accept_n), and nothing of the rejected ones
 * left behind. */
#include "spec/spec.h"

#include <stdio.h>

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

int32_t spec_verify(forward_ctx *f, sampler *smp, int32_t n_vocab, const int32_t *seq, int32_t n_past,
                    int32_t n_draft, float *rows, void *rs, float *scratch, int32_t *out, sampler_step *steps,
                    char *err, size_t errlen)
{
    const bool recurrent = forward_is_recurrent(f);
    if (recurrent) /* a recurrent state cannot be cut: the one before the batch, kept */
        forward_rs_save(f, rs);
    if (forward_eval(f, seq + n_past, n_draft + 1, n_past, rows, true, err, errlen) != 0)
        return -1;
    const int32_t n_out = spec_sample_accept(smp, rows, n_vocab, seq + n_past + 1, n_draft, out, steps);
    const int32_t k = n_out - 1; /* drafts accepted */
    if (recurrent && k < n_draft) {
        /* the state went past the rejected drafts: back to n_past, then
         * last and the accepted drafts again, as one batch */
        forward_rs_load(f, rs, n_past);
        if (forward_eval(f, seq + n_past, k + 1, n_past, scratch, false, err, errlen) != 0)
            return -1;
    }
    return n_out;
}
