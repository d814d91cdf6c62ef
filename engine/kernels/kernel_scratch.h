/* Per-thread scratch for the prompt GEMMs (gemm_iq.c, gemm_kpanel.c): one
 * buffer a thread, kept between calls and grown when a call needs more. A
 * prompt's matmul calls a GEMM once per row chunk and fresh pages for each
 * call cost page faults (4 % of bench_gemm_iq's time; at 16 tokens they
 * doubled bench_gemm_kq q5_k's). Freed when the thread exits. */
#ifndef TOKSCOPE_KERNEL_SCRATCH_H
#define TOKSCOPE_KERNEL_SCRATCH_H

#include <stddef.h>

/* At least bytes, 64-byte aligned, valid until this thread's next call
 * (which may move it); NULL when memory is short. The GEMMs do not call
 * each other, so they share the one buffer. */
void *kernel_scratch_get(size_t bytes);

#endif
