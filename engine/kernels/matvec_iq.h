/* One-token matvecs for IQ2_XXS, IQ3_S and IQ4_XS on AVX-512 (VBMI + VNNI): two
 * weight rows per pass, 64 weights per register, each output with the bits
 * of the reference's AVX2 vec_dot (the x86 order of quant_iq2.c and
 * quant_iq4.c). Only the integer sums are formed another way (exact in any
 * order); every output's floats take the reference's steps in its order:
 * per super-block one fma of d_w * d_a into 8 lanes, then hsum_float_8.
 * Installed as the types' matvec; CPUs without these extensions keep the
 * AVX2 vec_dot loop. */
#ifndef TOKSCOPE_MATVEC_IQ_H
#define TOKSCOPE_MATVEC_IQ_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/quant_internal.h"

#if defined(QUANT_HAVE_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) &&       \
    defined(__AVX512VBMI__) && defined(__AVX512VNNI__)
#define QUANT_HAVE_MATVEC_IQ512 1
void quant_avx512_matvec_iq2_xxs(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
void quant_avx512_matvec_iq3_s(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
void quant_avx512_matvec_iq4_xs(int64_t n, const void *w, size_t rs, int64_t rows, const void *act, float *out);
#endif

#endif
