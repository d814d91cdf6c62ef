/* ngram drafts: llama.cpp's ngram-simple (common/ngram-map.cpp,
 * common_ngram_simple_draft), with no second model. The last n_key tokens
 * (the sampled one included) are looked up backwards in what came before;
 * the tokens that followed the latest earlier occurrence are the drafts. */
#include "spec/spec.h"

int32_t spec_ngram_draft(const int32_t *ctx, int32_t n, int32_t last, int32_t n_key, int32_t m_max,
                         int32_t max, int32_t *out)
{
    if (n_key < 1 || max <= 0 || n <= n_key + m_max + 1) /* the reference wants that much history */
        return 0;
    /* pattern = ctx[n - n_key + 1, n) + last; candidates start at j in
     * [1, n - n_key - 1], latest first (0 means "no match" there too) */
    int32_t match = 0;
    for (int32_t j = n - n_key - 1; j > 0 && !match; j--) {
        int32_t k = 0;
        while (k < n_key - 1 && ctx[j + k] == ctx[n - n_key + 1 + k])
            k++;
        if (k == n_key - 1 && ctx[j + n_key - 1] == last)
            match = j;
    }
    if (!match)
        return 0;
    int32_t copy = n - (match + n_key);
    if (copy > m_max)
        copy = m_max;
    if (copy < n_key) /* as the reference: a match must be followed by n_key tokens */
        return 0;
    if (copy > max) /* common_speculative_draft cuts to the slot's maximum */
        copy = max;
    for (int32_t i = 0; i < copy; i++)
        out[i] = ctx[match + n_key + i];
    return copy;
}
