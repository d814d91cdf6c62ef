/* OpenBLAS for the large dense products where it beats the reference-order
 * kernels: prompt batches of many tokens against F32, F16, BF16 weights and
 * the quantized types that have no packed integer kernel (Q4_1, Q5_0, Q5_1,
 * Q2_K, Q3_K, Q5_K, Q6_K), the output head included, which `logits` runs
 * for every row.
 *
 * The products are the exact path's: the activations are rounded to the
 * weight's dot type first (F16, BF16 or Q8 values, as the reference's
 * kernels see them) and the weights dequantized, so only the order of the
 * additions differs (and, for Q4_1/Q5_1, the F16 block sums Q8_1 keeps):
 * each output stays within F32 rounding of the exact one, by a bound the
 * unit test derives from the sizes. The bits are not the reference's, so
 * the parity commands keep it off unless asked.
 *
 * The weights are widened to F32 a panel of rows at a time into a
 * per-thread buffer (4 MB) and multiplied right away: no converted copy of
 * the model is kept (it would double an F16 model's memory, and more for
 * the quantized ones). OpenBLAS runs one thread per call; the
 * parallelism is tokscope's own pool, which hands out the panels, so the
 * two never run more threads than the cores asked for. */
#ifndef TOKSCOPE_BLAS_H
#define TOKSCOPE_BLAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/threadpool.h"

enum blas_mode {
    BLAS_MODE_OFF,  /* never: every product in the reference's order */
    BLAS_MODE_AUTO, /* where measured faster (blas_auto_min_tokens) */
    BLAS_MODE_ON,   /* every batch of 2 tokens or more against a weight it takes */
};

/* "off", "auto", "on" (case-insensitive); false for another name. */
bool blas_mode_parse(const char *name, enum blas_mode *out);
const char *blas_mode_name(enum blas_mode m);

/* True when OpenBLAS can compute products with weights of this type. */
bool blas_takes(enum tensor_type type);

/* The machines auto's thresholds were measured on: an Intel Xeon
 * (OpenBLAS's SkylakeX, Cooperlake or SapphireRapids core) and an AMD Zen 4
 * (where OpenBLAS 0.3.21 runs its Cooperlake core); elsewhere (its Haswell
 * core on Zen 3 and Zen 5, ...) tokscope's kernels won at every size tried
 * and auto hands nothing. */
enum blas_site {
    BLAS_SITE_NONE = -1,
    BLAS_SITE_XEON = 1,
    BLAS_SITE_ZEN4 = 2,
};
/* The site of OpenBLAS core NAME on an AMD (amd) or other CPU. */
enum blas_site blas_auto_site(const char *core, bool amd);
bool blas_cpu_is_amd(void);

/* Fewest tokens per batch from which auto hands weights of this type to
 * OpenBLAS on this machine; 0 when auto never does: blas_auto_table_at's
 * for the running site. */
int blas_auto_min_tokens(enum tensor_type type);
/* The thresholds measured on a site (0: never). Whether OpenBLAS's core
 * NAME ("SkylakeX", "Haswell", ...) is one of those the sites run. */
int blas_auto_table_at(enum blas_site site, enum tensor_type type);
bool blas_auto_core_measured(const char *core);
/* Whether auto uses a table here; tests may assume a site (a BLAS_SITE_*
 * value; 0: the running one). */
bool blas_auto_here(void);
void blas_auto_assume_core(int site);

/* The decision: does a batch of n_tok tokens against the weight w go
 * through OpenBLAS in mode m? Never for one token. */
bool blas_wants(enum blas_mode m, const gguf_tensor *w, int n_tok);

/* "OpenBLAS 0.3.21 (SkylakeX, pthreads)": the library as it runs. */
const char *blas_library(void);

typedef struct blas_ctx blas_ctx;

/* Buffers for batches of up to n_batch tokens and inputs up to max_in wide,
 * n_threads pool threads. NULL when out of memory. */
blas_ctx *blas_create(enum blas_mode m, int n_threads, int n_batch, int64_t max_in);
void blas_free(blas_ctx *b);
enum blas_mode blas_mode_of(const blas_ctx *b);

/* One product of a job: out[t * out_stride + r] = W[r] . x[t]. */
struct blas_seg {
    const gguf_tensor *w;
    float *out;
    int64_t out_stride;
};

/* Runs the products (each blas_wants) of n_tok rows of x (n_in floats
 * each) on the pool. */
void blas_matmul(blas_ctx *b, threadpool *tp, const float *x, int n_tok, int64_t n_in, int n_seg,
                 const struct blas_seg *segs);

/* Products run through OpenBLAS since blas_create (tests, `bench`). */
uint64_t blas_calls(const blas_ctx *b);

#endif
