/* OpenBLAS products (blas.h): activations rounded to the weight's dot type,
 * weight panels converted to F32 per thread, one cblas_sgemm per panel. */
#include "kernels/blas.h"
#include "kernels/gemm_kq5.h"
#include "kernels/packed_q6_K.h"
#include "kernels/quant_kfew.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__AVX512F__) || (defined(__F16C__) && defined(__AVX2__))
#include <immintrin.h>
#endif

/* OpenBLAS's own entry points (Debian's cblas.h may be netlib's). */
void openblas_set_num_threads(int num_threads);
char *openblas_get_config(void);
char *openblas_get_corename(void);
int openblas_get_parallel(void);

/* OpenBLAS's pthreads build starts a server thread per extra core when the
 * library loads, and each polls the queue with sched_yield for some 0.1 s
 * before it sleeps. tokscope calls OpenBLAS with one thread per call (its
 * own pool's threads make the calls), so those threads never get work; on
 * a 2-core machine their polling took a core from the first evaluations
 * (short prompt runs of tiny-spm-q8_0 at 0.56 of llama.cpp, 1.05 with
 * OPENBLAS_NUM_THREADS=1). So they are stopped before main runs, which
 * libopenblas's own constructor precedes. blas_thread_shutdown_ is looked up
 * rather than linked: the serial and OpenMP builds Debian can switch to
 * have no such threads, nor necessarily the symbol. A single-threaded
 * OpenBLAS never restarts them. */
__attribute__((constructor)) static void blas_stop_server_threads(void)
{
    openblas_set_num_threads(1);
    int (*shutdown)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
    if (shutdown)
        shutdown();
}

/* Weight floats converted per panel: a panel is
 * BLAS_PANEL_FLOATS / n_in rows (4 MB), which sgemm then reads from the
 * cache rather than from memory. Larger panels cost each thread more
 * buffer; smaller ones make sgemm pack the activations more often. */
#define BLAS_PANEL_FLOATS ((int64_t)1 << 20)
#define BLAS_PANEL_MIN 64

struct blas_ctx {
    enum blas_mode mode;
    int n_threads;
    int n_batch;
    int64_t max_in;
    int64_t panel_cap; /* floats of one thread's panel buffer */
    float *act;        /* n_batch x max_in: activations in the dot type's values */
    float *panel;      /* n_threads x panel_cap: converted weight rows */
    uint8_t *row_tmp;  /* n_threads x row_tmp_bytes: one quantized activation row */
    size_t row_tmp_bytes;
    uint64_t calls;
};

static const struct {
    const char *name;
    enum blas_mode mode;
} mode_names[] = {{"off", BLAS_MODE_OFF}, {"auto", BLAS_MODE_AUTO}, {"on", BLAS_MODE_ON}};

bool blas_mode_parse(const char *name, enum blas_mode *out)
{
    for (size_t i = 0; i < sizeof mode_names / sizeof mode_names[0]; i++)
        if (!strcasecmp(name, mode_names[i].name)) {
            *out = mode_names[i].mode;
            return true;
        }
    return false;
}

const char *blas_mode_name(enum blas_mode m)
{
    for (size_t i = 0; i < sizeof mode_names / sizeof mode_names[0]; i++)
        if (mode_names[i].mode == m)
            return mode_names[i].name;
    return "?";
}

/* Q4_0, Q4_K and Q8_0 are left out: their weights are packed at load time
 * (forward_packed.h; the original bytes are then released) and their
 * integer kernels outrun any F32 product. */
bool blas_takes(enum tensor_type type)
{
    switch (type) {
    case TENSOR_TYPE_F32:
    case TENSOR_TYPE_F16:
    case TENSOR_TYPE_BF16:
    case TENSOR_TYPE_Q4_1:
    case TENSOR_TYPE_Q5_0:
    case TENSOR_TYPE_Q5_1:
    case TENSOR_TYPE_Q2_K:
    case TENSOR_TYPE_Q3_K:
    case TENSOR_TYPE_Q5_K:
        return true;
    case TENSOR_TYPE_Q6_K:
#ifdef PACKED_Q6_K
        return false; /* re-encoded at load time in these builds (packed_q6_K.h) */
#else
        return true;
#endif
    default:
        return false;
    }
}

/* Where auto hands a type to OpenBLAS on the core it was measured on: from
 * this many tokens per batch on, OpenBLAS (conversion included) was faster
 * than tokscope's own kernels on TinyLlama-1.1B shapes with 2 threads,
 * measured on an Intel Xeon (AVX-512; OpenBLAS's SkylakeX core) at 64, 128,
 * 192, 256, 384 and 512 tokens; the table is in docs/openblas.md (README
 * links it). Below it, it lost or was level. */
static int blas_auto_table_xeon(enum tensor_type type)
{
    switch (type) {
    case TENSOR_TYPE_Q4_1: /* 1.38x at 64, 2x from 256 */
    case TENSOR_TYPE_Q5_1: /* 1.27x at 64, 2x from 192 */
        return 64;
    case TENSOR_TYPE_F32:  /* 1.05x at 64, 1.18x at 128 */
    case TENSOR_TYPE_BF16: /* 0.94x at 64, 1.07x at 128 */
    case TENSOR_TYPE_Q3_K: /* 0.90x at 64, 1.17x at 128 */
        return 128;
    case TENSOR_TYPE_Q5_0: /* 1.00x at 128, 1.13x at 192 */
        return 192;
#ifndef QUANT_HAVE_KFEW
    /* with the AVX-512 few-token kernels (kernels/quant_kfew.h) tokscope's
     * own Q5_K and Q6_K prompts run 2-3x OpenBLAS's at every batch size
     * (Zen 5, pp128-pp2048: Q6_K 206 / 147 vs 69 / 67 tok/s, Q5_K 161 / 119
     * vs 66 / 75): auto keeps them; before those kernels it lost from: */
#ifndef GEMM_KQ5
    /* (AVX2 builds have the Q5_K GEMM of gemm_kq5.h: TinyLlama Q5_K_M
     * pp512 on one thread of a Zen 4, 77 tok/s against 46 with its Q5_K
     * matmuls in OpenBLAS's Cooperlake core) */
    case TENSOR_TYPE_Q5_K: /* 0.88x at 64, 1.12x at 128 */
        return 128;
#endif
#ifndef PACKED_Q6_K
    /* (AVX2 builds without AVX-512 re-encode Q6_K at load and keep it:
     * their GEMM from those rows, TinyLlama-1.1B Q4_K_M pp512 on two
     * threads of an AMD EPYC Zen 4, 183-186 tok/s against 134-141 with
     * the Q6_K matmuls in OpenBLAS) */
    case TENSOR_TYPE_Q6_K: /* 0.99x at 128, 1.12x at 192 */
        return 192;
#endif
#endif
    case TENSOR_TYPE_F16:  /* 0.97x at 192, 1.08x at 256 */
    case TENSOR_TYPE_Q2_K: /* 1.00x at 128, 1.16x at 192 (wall clock 1.07), 1.17x at 256 */
        return 256;
    default:
        return 0;
    }
}

/* The same on an AMD EPYC Zen 4 (AVX-512 with VNNI and BF16; OpenBLAS
 * 0.3.21 runs its Cooperlake core there), 2 threads, TinyLlama-1.1B's
 * 4-layer files requantized from its F16, OpenBLAS (--blas on) against
 * tokscope's own kernels at 64 / 128 / 256 tokens, and pp512 with auto
 * (2026-12-05, docs/openblas.md): */
static int blas_auto_table_zen4(enum tensor_type type)
{
    switch (type) {
    case TENSOR_TYPE_Q4_1: /* 0.89x at 64, 1.13x at 128, 1.27x at 256 */
    case TENSOR_TYPE_Q5_1: /* 0.96x at 64, 1.24x at 128, 1.34x at 256 */
        return 128;
    case TENSOR_TYPE_Q3_K: /* the Q3_K_M file's every K-quant there: 0.90x at 128, 1.09x at 256; pp512 1.18x */
        return 256;
    /* Q5_0: 0.59 / 0.75 / 0.90x at 64 / 128 / 256, 1.03x at 512; F16 0.85x,
     * BF16 0.48x, Q2_K 0.89x at 512; F32 not measured; Q5_K, Q6_K: the GEMMs */
    default:
        return 0;
    }
}

int blas_auto_table_at(enum blas_site site, enum tensor_type type)
{
    return site == BLAS_SITE_XEON ? blas_auto_table_xeon(type) : site == BLAS_SITE_ZEN4 ? blas_auto_table_zen4(type) : 0;
}

/* The cores the tables were measured on: OpenBLAS's AVX-512 kernels. On its
 * Haswell core (what it runs on AMD Zen 5) it lost at every batch size
 * tried on a Zen 5 (F16 pp128-pp512 448-528 vs 807-918 tok/s), so auto
 * leaves every product to tokscope's kernels there. */
bool blas_auto_core_measured(const char *core)
{
    static const char *const measured[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    for (size_t i = 0; core && i < sizeof measured / sizeof measured[0]; i++)
        if (!strcasecmp(core, measured[i]))
            return true;
    return false;
}

/* An AMD core running OpenBLAS's Cooperlake kernels is the Zen 4 measured
 * here; its other AVX-512 cores on an AMD were not measured (0.3.21 does
 * not pick them there). */
enum blas_site blas_auto_site(const char *core, bool amd)
{
    if (!blas_auto_core_measured(core))
        return BLAS_SITE_NONE;
    if (amd)
        return !strcasecmp(core, "Cooperlake") ? BLAS_SITE_ZEN4 : BLAS_SITE_NONE;
    return BLAS_SITE_XEON;
}

bool blas_cpu_is_amd(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
#else
    return false;
#endif
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static char blas_desc[160];
static enum blas_site blas_site_here; /* blas_auto_site(the running core, this CPU) */
static int blas_site_force;           /* blas_auto_assume_core: 0 as it runs, else a site */
static void blas_init(void);

void blas_auto_assume_core(int site) { blas_site_force = site; }

static enum blas_site blas_site_now(void)
{
    pthread_once(&blas_once, blas_init);
    return blas_site_force ? (enum blas_site)blas_site_force : blas_site_here;
}

bool blas_auto_here(void) { return blas_site_now() != BLAS_SITE_NONE; }

int blas_auto_min_tokens(enum tensor_type type) { return blas_auto_table_at(blas_site_now(), type); }

bool blas_wants(enum blas_mode m, const gguf_tensor *w, int n_tok)
{
    const enum tensor_type type = (enum tensor_type)w->type;
    if (m == BLAS_MODE_OFF || n_tok < 2 || !blas_takes(type))
        return false;
    if (m == BLAS_MODE_ON)
        return true;
    /* a product with fewer than 32 outputs or inputs per token (a MoE
     * router's 8 logits, Gemma 4's 16-wide per-layer projections) gains
     * nothing there, and ggml's BLAS backend leaves it to the CPU too
     * (min_batch 32 on every dimension): the reference's bits, which a
     * router turns into other experts when they differ */
    if (w->ne[0] < 32 || w->ne[1] < 32)
        return false;
    const int min = blas_auto_min_tokens(type);
    return min > 0 && n_tok >= min;
}

/* One OpenBLAS thread per call: the pool's threads each run their own
 * calls, so OpenBLAS must not start threads of its own on top of them. */
static void blas_init(void)
{
    openblas_set_num_threads(1);
    const char *cfg = openblas_get_config();
    const int par = openblas_get_parallel();
    char ver[64] = "OpenBLAS";
    /* the config string starts "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." */
    if (cfg && !strncmp(cfg, "OpenBLAS ", 9)) {
        const char *v = cfg + 9;
        const size_t n = strcspn(v, " ");
        snprintf(ver, sizeof ver, "OpenBLAS %.*s", (int)(n < 40 ? n : 40), v);
    }
    const char *core = openblas_get_corename();
    blas_site_here = blas_auto_site(core, blas_cpu_is_amd());
    snprintf(blas_desc, sizeof blas_desc, "%s (%s, %s build, 1 thread per call)", ver, core ? core : "?",
             par == 0   ? "sequential"
             : par == 1 ? "pthreads"
                        : "OpenMP");
}

const char *blas_library(void)
{
    pthread_once(&blas_once, blas_init);
    return blas_desc;
}

blas_ctx *blas_create(enum blas_mode m, int n_threads, int n_batch, int64_t max_in)
{
    pthread_once(&blas_once, blas_init);
    blas_ctx *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->mode = m;
    b->n_threads = n_threads < 1 ? 1 : n_threads;
    b->n_batch = n_batch;
    b->max_in = max_in;
    int64_t rows = BLAS_PANEL_FLOATS / (max_in > 0 ? max_in : 1);
    if (rows < BLAS_PANEL_MIN)
        rows = BLAS_PANEL_MIN;
    b->panel_cap = (rows * max_in + 15) & ~(int64_t)15; /* each thread's buffer on its own cache lines */
    b->row_tmp_bytes = ((size_t)max_in * sizeof(float) + 63) & ~(size_t)63;
    b->act = aligned_alloc(64, (((size_t)n_batch * (size_t)max_in * sizeof(float)) + 63) & ~(size_t)63);
    b->panel = aligned_alloc(64, (size_t)b->n_threads * (size_t)b->panel_cap * sizeof(float));
    b->row_tmp = aligned_alloc(64, (size_t)b->n_threads * b->row_tmp_bytes);
    if (!b->act || !b->panel || !b->row_tmp) {
        blas_free(b);
        return NULL;
    }
    return b;
}

void blas_free(blas_ctx *b)
{
    if (!b)
        return;
    free(b->act);
    free(b->panel);
    free(b->row_tmp);
    free(b);
}

enum blas_mode blas_mode_of(const blas_ctx *b)
{
    return b ? b->mode : BLAS_MODE_OFF;
}

uint64_t blas_calls(const blas_ctx *b)
{
    return b ? b->calls : 0;
}

/* n values of `type` to floats: F16 and BF16 exactly (every such value is
 * a float), quantized blocks as the type's dequantization computes them. */
static void widen(enum tensor_type type, const void *vsrc, float *dst, int64_t n)
{
    if (type != TENSOR_TYPE_F16 && type != TENSOR_TYPE_BF16) {
        tensor_dequantize_row(type, vsrc, dst, n);
        return;
    }
    const uint16_t *src = vsrc;
    int64_t i = 0;
#if defined(__AVX512F__)
    if (type == TENSOR_TYPE_F16)
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(dst + i,
                             _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(src + i))));
    else
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(
                dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(
                                                                   (const __m256i *)(const void *)(src + i))),
                                                               16)));
#elif defined(__F16C__) && defined(__AVX2__)
    if (type == TENSOR_TYPE_F16)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i,
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + i))));
#endif
    if (i < n)
        tensor_dequantize_row(type, src + i, dst + i, n - i);
}

/* ---- activations ----------------------------------------------------------- */

struct act_job {
    blas_ctx *b;
    const float *x;
    int64_t n_in;
    int n_tok;
    enum tensor_type dot;
};

/* Each row as the exact path's kernels see it: rounded to the dot type
 * (F16, BF16) and back, which is exact, so the products are the same. */
static void act_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    const struct act_job *j = arg;
    uint8_t *tmp = j->b->row_tmp + (size_t)ith * j->b->row_tmp_bytes;
    const int64_t t0 = j->n_tok * chunk / n_chunks, t1 = j->n_tok * (chunk + 1) / n_chunks;
    for (int64_t t = t0; t < t1; t++) {
        const float *x = j->x + t * j->n_in;
        float *y = j->b->act + t * j->n_in;
        tensor_quantize_row(j->dot, x, tmp, j->n_in);
        widen(j->dot, tmp, y, j->n_in);
    }
}

/* ---- products -------------------------------------------------------------- */

struct mm_job {
    blas_ctx *b;
    const float *act; /* n_tok rows of n_in floats */
    int64_t n_in;
    int n_tok;
    int n_seg;
    const struct blas_seg *seg[3];
    int64_t panel_rows;
    int64_t first[4]; /* first chunk of each segment; first[n_seg] = all chunks */
};

static void mm_worker(void *arg, int ith, int64_t chunk, int64_t n_chunks)
{
    (void)n_chunks;
    const struct mm_job *j = arg;
    int s = 0;
    while (chunk >= j->first[s + 1])
        s++;
    const struct blas_seg *sg = j->seg[s];
    const enum tensor_type type = (enum tensor_type)sg->w->type;
    const int64_t rows = sg->w->ne[1];
    const int64_t r0 = (chunk - j->first[s]) * j->panel_rows;
    const int64_t r1 = r0 + j->panel_rows < rows ? r0 + j->panel_rows : rows;
    const float *wf;
    if (type == TENSOR_TYPE_F32) {
        wf = (const float *)sg->w->data + r0 * j->n_in;
    } else {
        float *p = j->b->panel + (size_t)ith * (size_t)j->b->panel_cap;
        const size_t rb = tensor_row_size(type, j->n_in);
        if (type == TENSOR_TYPE_F16 || type == TENSOR_TYPE_BF16)
            widen(type, (const uint8_t *)sg->w->data + (size_t)r0 * rb, p, (r1 - r0) * j->n_in); /* one run */
        else
            for (int64_t r = r0; r < r1; r++)
                widen(type, (const uint8_t *)sg->w->data + (size_t)r * rb, p + (r - r0) * j->n_in, j->n_in);
        wf = p;
    }
    /* out (n_tok x rows, row-major) = act (n_tok x n_in) . W^T (W: rows x n_in) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n_tok, (int)(r1 - r0), (int)j->n_in, 1.0f, j->act,
                (int)j->n_in, wf, (int)j->n_in, 0.0f, sg->out + r0, (int)sg->out_stride);
}

void blas_matmul(blas_ctx *b, threadpool *tp, const float *x, int n_tok, int64_t n_in, int n_seg,
                 const struct blas_seg *segs)
{
    if (n_seg < 1 || n_seg > 3)
        return; /* a job is at most 3 weights sharing the input (forward_matmul) */
    /* one pass per dot type among the segments (mixed-type jobs are rare) */
    bool done[3] = {false, false, false};
    for (int s = 0; s < n_seg; s++) {
        if (done[s])
            continue;
        const enum tensor_type dot = tensor_dot_type((enum tensor_type)segs[s].w->type);
        struct mm_job j;
        memset(&j, 0, sizeof j);
        j.b = b;
        j.n_in = n_in;
        j.n_tok = n_tok;
        j.panel_rows = b->panel_cap / n_in;
        for (int u = s; u < n_seg; u++)
            if (!done[u] && tensor_dot_type((enum tensor_type)segs[u].w->type) == dot) {
                done[u] = true;
                j.seg[j.n_seg] = &segs[u];
                j.first[j.n_seg + 1] =
                    j.first[j.n_seg] + (segs[u].w->ne[1] + j.panel_rows - 1) / j.panel_rows;
                j.n_seg++;
            }
        j.act = x;
        if (dot != TENSOR_TYPE_F32) {
            struct act_job aj = {b, x, n_in, n_tok, dot};
            const int64_t nc = n_tok < 8 * b->n_threads ? n_tok : 8 * b->n_threads;
            threadpool_run(tp, nc, act_worker, &aj);
            j.act = b->act;
        }
        threadpool_run(tp, j.first[j.n_seg], mm_worker, &j);
        b->calls += (uint64_t)j.n_seg;
    }
}
