/* The sign tables the IQ2 and IQ3 block types share (ggml-common.h's
 * kmask_iq2xs, ksigns_iq2xs, ksigns64). Eight weights share one byte of
 * signs; only 7 bits are stored, the 8th makes the count of minus signs even
 * (so index i's entry is i with bit 7 set when i has an odd number of bits). */
#ifndef TOKSCOPE_QUANT_IQ_SIGNS_H
#define TOKSCOPE_QUANT_IQ_SIGNS_H

#include <stdint.h>

/* kmask[j] = 1 << j: selects weight j's sign in a signs byte. */
extern const uint8_t quant_kmask_iq2xs[8];
/* The 7 stored bits -> the 8 signs (bit j set: weight j is negative). */
extern const uint8_t quant_ksigns_iq2xs[128];
/* The same signs as 8 bytes, 0xff where negative (byte j = weight j). */
extern const uint64_t quant_ksigns64[128];

#endif
