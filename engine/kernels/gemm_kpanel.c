/* The K-quant GEMMs' shared driver (see gemm_kpanel.h). */
#include "kernels/gemm_kpanel.h"

#ifdef GEMM_KPANEL
#include <string.h>

#include "kernels/kernel_scratch.h"

#define TILE_T GEMM_KP_TILE_T
/* Panel bytes: the panel stays in L2 beside a block of tokens (the 512-bit
 * tiles' panels hold each row's values twice: 256 KB keeps 48 Q5_K rows a
 * panel at K = 2048). */
#ifdef GEMM_KPANEL_512
#define PANEL_BYTES (256 * 1024)
#else
#define PANEL_BYTES (192 * 1024)
#endif
/* Token bytes (their Q8_K rows) a block of tokens holds, also in L2. */
#define TOK_BYTES (256 * 1024)
/* Super-blocks per slice: 4 panel rows (14-16 KB) and 4 tokens (9 KB) stay in L1. */
#define KC 8

struct kp_scratch {
    uint8_t *panel; /* pr rows (in pairs) */
    gemm_kp_st *st;     /* float state of every tile of a token block */
    float *ob;      /* a token block's outputs of the panel, token-major */
    uint8_t *tx;    /* a token block's prep data, per tile */
    float *yd;      /* every tile's side data (enum gemm_kp_side) */
    size_t side;    /* floats of yd a tile */
    int64_t pr;     /* rows a panel */
    int tb;         /* tokens a block */
};

/* A token's np outputs of a panel to d: its whole lines streamed past the
 * caches (a token's lines are a row of the output apart, so as cached
 * stores each waited for its line to be read, and the block's lines
 * evicted each other: the copy was 5-6 % of a Q5_K prompt's samples), the
 * parts of lines at either end copied. */
static inline void kp_store_out(float *d, const float *src, int64_t np)
{
    const int64_t h = (int64_t)((64 - ((uintptr_t)d & 63)) & 63) / (int64_t)sizeof(float);
    if (h + 16 > np) { /* no whole line */
        memcpy(d, src, (size_t)np * sizeof(float));
        return;
    }
    memcpy(d, src, (size_t)h * sizeof(float));
    int64_t j = h;
    for (; j + 16 <= np; j += 16) {
        _mm256_stream_ps(d + j, _mm256_loadu_ps(src + j));
        _mm256_stream_ps(d + j + 8, _mm256_loadu_ps(src + j + 8));
    }
    memcpy(d + j, src + j, (size_t)(np - j) * sizeof(float));
}

/* Rows [r0, r1) against tokens [0, n_tok): panels of pr rows written once;
 * per block of tokens, the super-blocks in slices of KC so that a tile's
 * 4 panel rows and 4 tokens stay in L1 (the float state waits in st
 * between slices, the super-blocks still in order); 4 rows x 4 tokens per
 * tile. */
static void kp_matmul(const struct gemm_kp *k, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0,
                      int64_t r1, const uint8_t *act, size_t act_stride, int n_tok, float *out,
                      int64_t out_stride, const struct kp_scratch *s)
{
    const size_t pair_bytes = (size_t)nbl * k->pair_sb, tx_tile = (size_t)nbl * k->tx_bytes;
    const int64_t pr = s->pr, obs = (pr + 3) & ~(int64_t)3; /* ob: a token's outputs obs apart */
    const int tb = s->tb;
#define ACT(t) ((const block_q8_K *)(const void *)(act + (size_t)(t)*act_stride))
    for (int64_t p0 = r0; p0 < r1; p0 += pr) {
        const int64_t np = r1 - p0 < pr ? r1 - p0 : pr;
        for (int64_t r = 0; r < np + np % 2; r++) { /* an odd last row fills its pair's second half too */
            const int64_t kr = r < np ? r : np - 1;
            k->write_row(wd + (size_t)(p0 + kr) * rs, nbl, s->panel + (size_t)(r / 2) * pair_bytes,
                         (int)(r % 2));
        }
        for (int b0 = 0; b0 < n_tok; b0 += tb) {
            const int bn = n_tok - b0 < tb ? n_tok - b0 : tb;
            const int ntile = (bn + TILE_T - 1) / TILE_T;
            /* the tiles' tokens: the last one repeated past the batch */
            const block_q8_K *ys[ntile][TILE_T];
            for (int c = 0; c < ntile; c++)
                for (int j = 0; j < TILE_T; j++) {
                    const int t = b0 + TILE_T * c + j;
                    ys[c][j] = ACT(t < b0 + bn ? t : b0 + bn - 1);
                }
            if (p0 == r0)
                for (int c = 0; c < ntile; c++) {
                    if (k->prep)
                        k->prep(ys[c], nbl, s->tx + (size_t)(b0 / TILE_T + c) * tx_tile);
                    if (k->side == GEMM_KP_SIDE_NONE)
                        continue;
                    float *yd = s->yd + (size_t)(b0 / TILE_T + c) * s->side;
                    int16_t *bs = (int16_t *)(void *)(yd + TILE_T * nbl); /* as gemm_kp_bsums reads them */
                    for (int64_t i = 0; i < nbl; i++)
                        for (int j = 0; j < TILE_T; j++) {
                            yd[TILE_T * i + j] = ys[c][j][i].d;
                            if (k->side == GEMM_KP_SIDE_D_BSUMS)
                                memcpy(bs + 16 * (TILE_T * i + j), ys[c][j][i].bsums, 32);
                        }
                }
            for (int64_t i0 = 0; i0 < nbl; i0 += KC) {
                const int64_t i1 = nbl - i0 < KC ? nbl : i0 + KC;
                for (int64_t r = 0; r < np; r += 4) {
                    const int nr = np - r < 4 ? (int)(np - r) : 4;
                    const uint8_t *wp[2] = {s->panel + (size_t)(r / 2) * pair_bytes,
                                            s->panel + (size_t)(r / 2 + (nr > 2)) * pair_bytes};
                    for (int c = 0; c < ntile; c++) {
                        const int t0 = b0 + TILE_T * c;
                        gemm_kp_st *st = s->st + ((r / 4) * ntile + c) * k->n_st;
                        const uint8_t *tx = k->prep ? s->tx + (size_t)(b0 / TILE_T + c) * tx_tile : NULL;
                        /* the outputs straight to ob (4 tokens x 4 rows: ob has room
                         * for those past the batch or the panel) */
                        const float *yd = s->yd + (size_t)(b0 / TILE_T + c) * s->side;
                        (nr > 2 ? k->tile2 : k->tile1)(wp, ys[c], tx, yd, i0, i1, nbl, st,
                                                       s->ob + (int64_t)(t0 - b0) * obs + r, obs);
                    }
                }
            }
            /* each token's outputs of the panel in one piece: stores of 4
             * rows a token went to a cache line per token */
            for (int t = 0; t < bn; t++)
                kp_store_out(out + (int64_t)(b0 + t) * out_stride + p0, s->ob + (int64_t)t * obs, np);
            _mm_sfence(); /* the streamed lines before what reads them */
        }
    }
#undef ACT
}

void gemm_kp_prep_mins(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx, size_t stride, float sign)
{
    for (int64_t i = 0; i < nbl; i++, tx += stride) {
        uint32_t v[4][TILE_T] = {{0}}; /* all set below; cppcheck cannot tell */
        float yd[TILE_T] = {0};
        for (int t = 0; t < TILE_T; t++) {
            const int16_t *b = y[t][i].bsums;
            for (int p = 0; p < 4; p++) {
                const uint16_t lo = (uint16_t)(b[4 * p] + b[4 * p + 1]),
                               hi = (uint16_t)(b[4 * p + 2] + b[4 * p + 3]);
                v[p][t] = (uint32_t)lo | (uint32_t)hi << 16;
            }
            yd[t] = sign * y[t][i].d;
        }
        memcpy(tx, v, sizeof v);
        memcpy(tx + GEMM_KP_OFF_YD, yd, sizeof yd);
    }
}

#ifndef GEMM_KPANEL_512
static inline __attribute__((always_inline)) void prep_values(const block_q8_K *const y[TILE_T], int64_t nbl,
                                                               uint8_t *tx, size_t stride, __m256i x)
{
    for (int64_t i = 0; i < nbl; i++)
        for (int t = 0; t < TILE_T; t++)
            for (int q = 0; q < 4; q++)
                gemm_kp_store_values(
                    tx + (size_t)i * stride + 256 * t + 64 * q, 0,
                    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(y[t][i].qs + 64 * q)), x),
                    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(y[t][i].qs + 64 * q + 32)),
                                     x));
}

void gemm_kp_prep_values(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx, size_t stride)
{
    prep_values(y, nbl, tx, stride, _mm256_setzero_si256());
}

void gemm_kp_prep_tokens(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx)
{
    prep_values(y, nbl, tx, GEMM_KP_TX_VALUES, _mm256_setzero_si256());
}

void gemm_kp_prep_tokens_offset(const block_q8_K *const y[TILE_T], int64_t nbl, uint8_t *tx)
{
    prep_values(y, nbl, tx, GEMM_KP_TX_VALUES, _mm256_set1_epi8((char)0x80));
}
#endif

bool gemm_kp_rows(const struct gemm_kp *k, int64_t nbl, const void *w, size_t rs, int64_t r0, int64_t r1,
                  const void *act, size_t act_stride, int n_tok, float *out, int64_t out_stride)
{
    struct kp_scratch s;
    int64_t pr = PANEL_BYTES / ((int64_t)(k->pair_sb / 2) * nbl);
    /* whole 64-byte lines of each token's outputs (kp_store_out streams
     * those and copies the rest: a panel of 36 rows left every token's
     * outputs a partial line at both ends, 1 % of a Q5_K prompt) */
    pr = pr < 4 ? 4 : pr > 64 ? 64 : pr >= 16 ? pr - pr % 16 : pr - pr % 4;
    if (pr > r1 - r0)
        pr = r1 - r0;
    const int64_t prp = pr + pr % 2; /* rows the panel holds: pairs */
    int tb = (int)(TOK_BYTES / ((size_t)(nbl < KC ? nbl : KC) * sizeof(block_q8_K)));
    tb = tb < TILE_T ? TILE_T : tb - tb % TILE_T;
    if (tb > n_tok)
        tb = n_tok;
    s.pr = pr;
    s.tb = tb;
    /* one per-thread buffer (kernel_scratch.h: fresh pages each call cost
     * as much as the tiles at 16 tokens), in 64-byte aligned pieces */
#define UP64(x) (((size_t)(x) + 63) & ~(size_t)63)
    const size_t panel_bytes = UP64((size_t)prp * (size_t)nbl * (k->pair_sb / 2));
    /* float state of every tile of a token block */
    const size_t st_bytes =
        (size_t)((prp + 3) / 4) * (size_t)((tb + TILE_T - 1) / TILE_T) * (size_t)k->n_st * sizeof(gemm_kp_st);
    /* a token block's outputs, whole tiles of 4 tokens x 4 rows */
    const size_t ob_bytes = UP64((size_t)((tb + TILE_T - 1) / TILE_T * TILE_T) * (size_t)((pr + 3) & ~(int64_t)3) *
                                 sizeof(float));
    /* prep data of all the tokens, made while the first panel runs */
    const size_t tx_bytes = UP64((size_t)((n_tok + TILE_T - 1) / TILE_T) * (size_t)nbl * k->tx_bytes);
    /* per tile and super-block 4 d, then (D_BSUMS) 4 x 16 int16 bsums */
    const size_t side_sb = k->side == GEMM_KP_SIDE_NONE ? 0
                           : k->side == GEMM_KP_SIDE_D  ? TILE_T
                                                        : TILE_T * (1 + 16 * sizeof(int16_t) / sizeof(float));
    s.side = (size_t)nbl * side_sb;
    const size_t yd_bytes = UP64((size_t)((n_tok + TILE_T - 1) / TILE_T) * s.side * sizeof(float));
#undef UP64
    uint8_t *scr = kernel_scratch_get(panel_bytes + st_bytes + ob_bytes + tx_bytes + yd_bytes);
    if (!scr)
        return false;
    s.panel = scr;
    s.st = (gemm_kp_st *)(void *)(scr + panel_bytes);
    s.ob = (float *)(void *)(scr + panel_bytes + st_bytes);
    s.tx = scr + panel_bytes + st_bytes + ob_bytes;
    s.yd = (float *)(void *)(scr + panel_bytes + st_bytes + ob_bytes + tx_bytes);
    kp_matmul(k, w, rs, nbl, r0, r1, act, act_stride, n_tok, out, out_stride, &s);
    return true;
}
#endif
