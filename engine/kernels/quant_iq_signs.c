/* Sign tables of the IQ2/IQ3 types (see quant_iq_signs.h), written out as
 * ggml has them so that a test can compare them entry by entry. */
#include "kernels/quant_iq_signs.h"

const uint8_t quant_kmask_iq2xs[8] = {1, 2, 4, 8, 16, 32, 64, 128};

#define P(i) ((uint8_t)((i) | ((__builtin_popcount(i) & 1) << 7)))
#define P4(i) P(i), P((i) + 1), P((i) + 2), P((i) + 3)
#define P16(i) P4(i), P4((i) + 4), P4((i) + 8), P4((i) + 12)
const uint8_t quant_ksigns_iq2xs[128] = {
    P16(0), P16(16), P16(32), P16(48), P16(64), P16(80), P16(96), P16(112),
};

#define B(s, j) ((uint64_t)(((s) >> (j)) & 1 ? 0xff : 0) << (8 * (j)))
#define S64(s) (B(s, 0) | B(s, 1) | B(s, 2) | B(s, 3) | B(s, 4) | B(s, 5) | B(s, 6) | B(s, 7))
#define Q(i) S64(P(i))
#define Q4(i) Q(i), Q((i) + 1), Q((i) + 2), Q((i) + 3)
#define Q16(i) Q4(i), Q4((i) + 4), Q4((i) + 8), Q4((i) + 12)
const uint64_t quant_ksigns64[128] = {
    Q16(0), Q16(16), Q16(32), Q16(48), Q16(64), Q16(80), Q16(96), Q16(112),
};
