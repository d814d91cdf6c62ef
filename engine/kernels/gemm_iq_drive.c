/* The IQ GEMMs' shared driver (see gemm_iq_drive.h). */
#include "kernels/gemm_iq_drive.h"

#ifdef GEMM_IQ_DRIVE
#include "kernels/kernel_scratch.h"

/* Scratch bytes a pass may hold for its tokens' prepared bytes; more tokens
 * go in several passes (each writing the panels again). */
#define ACT_BYTES (6 << 20)
/* Panel bytes: rows times this stay in L2 beside a block of tokens. */
#define PANEL_BYTES (192 * 1024)
/* Prepared token bytes a block holds by default: they stay in L2. */
#define TOK_BLK_BYTES (256 * 1024)

size_t gemm_iq_drive_tok_rec(const struct gemm_iq_kind *k, int64_t nbl)
{
    return (size_t)nbl * k->tok_sb + (((size_t)nbl * sizeof(float) + 63) & ~(size_t)63);
}

void gemm_iq_drive_prep(const struct gemm_iq_kind *k, const uint8_t *act, size_t act_stride, int n_tok, int64_t nbl,
                        uint8_t *dst)
{
    const size_t rec = gemm_iq_drive_tok_rec(k, nbl);
    for (int t = 0; t < n_tok; t++) {
        const block_q8_K *y = (const block_q8_K *)(const void *)(act + (size_t)t * act_stride);
        uint8_t *o = dst + (size_t)t * rec;
        k->prep(y, nbl, o);
        float *d = (float *)(void *)(o + (size_t)nbl * k->tok_sb);
        for (int64_t i = 0; i < nbl; i++)
            d[i] = y[i].d;
    }
}

/* Rows [r0, r1) against tokens [0, n_tok), in passes of tc tokens (their
 * prepared bytes); per pass, panels of pr rows (in pairs) written once;
 * per panel, blocks of tb tokens, and per block slices of sb_slice
 * super-blocks, so that a row group's panel stays in L1 while the block's
 * tiles of 4 rows run over it. The tiles' float state waits in fst between
 * slices; the last slice's becomes the outputs. */
static void drive(const struct gemm_iq_kind *k, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1,
                  const uint8_t *act, size_t act_stride, int n_tok, float *out, int64_t out_stride, uint8_t *panel,
                  float *dw, uint8_t *tok, bool ready, float *yq, float (*fst)[16][16], int64_t pr, int tc,
                  int tb)
{
    const int tt = k->tile_t;
    const int64_t slice = k->sb_slice ? k->sb_slice : nbl;
    /* tokens as gemm_iq_drive_prep's records, whether shared or made here */
    const size_t pair_bytes = (size_t)nbl * k->pair_sb, tok_bytes = gemm_iq_drive_tok_rec(k, nbl),
                 d_off = (size_t)nbl * k->tok_sb;
    for (int c0 = 0; c0 < n_tok; c0 += tc) {
        const int cn = n_tok - c0 < tc ? n_tok - c0 : tc;
        if (!ready) /* else tok holds every token's record, made once for all threads */
            gemm_iq_drive_prep(k, act + (size_t)c0 * act_stride, act_stride, cn, nbl, tok);
        /* yq: groups of tt tokens (tiles start at multiples of tt), the
         * last group's missing tokens as its last one; their d from the
         * records (from act's rows, whose lines a thread sharing the
         * records has not read, it took a miss a token and super-block: 1 %
         * of an IQ1_M prompt) */
        for (int g = 0; g < cn; g += tt)
            for (int64_t i = 0; i < nbl; i++)
                for (int j = 0; j < tt; j++)
                    yq[(int64_t)g * nbl + i * tt + j] =
                        ((const float *)(const void *)(tok + (size_t)(g + j < cn ? g + j : cn - 1) * tok_bytes +
                                                       d_off))[i];
        for (int64_t p0 = r0; p0 < r1; p0 += pr) {
            const int64_t np = r1 - p0 < pr ? r1 - p0 : pr;
            for (int64_t r = 0; r < np + np % 2; r++) { /* an odd last row fills its pair's second half too */
                const int64_t kr = r < np ? r : np - 1;
                k->write_row(k->decode, wd + (size_t)(p0 + kr) * rs, nbl, panel + (size_t)(r / 2) * pair_bytes,
                             (int)(r % 2), dw + r * nbl);
            }
            for (int b0 = 0; b0 < cn; b0 += tb) {
                const int bn = cn - b0 < tb ? cn - b0 : tb;
                for (int64_t i0 = 0; i0 < nbl; i0 += slice) {
                    const int64_t i1 = nbl - i0 < slice ? nbl : i0 + slice;
                    for (int64_t r = 0; r < np; r += 4) {
                        const int nr = np - r < 4 ? (int)(np - r) : 4;
                        const uint8_t *wp[2] = {panel + (size_t)(r / 2) * pair_bytes,
                                                panel + (size_t)(r / 2 + (nr > 2)) * pair_bytes};
                        const float *dr[4];
                        for (int j = 0; j < 4; j++)
                            dr[j] = dw + (r + (j < nr + nr % 2 ? j : 0)) * nbl;
                        for (int t0 = b0; t0 < b0 + bn; t0 += tt) {
                            const int nt = b0 + bn - t0 < tt ? b0 + bn - t0 : tt;
                            const uint8_t *a[GEMM_IQ_TILE_MAX];
                            for (int j = 0; j < GEMM_IQ_TILE_MAX; j++)
                                a[j] = tok + (size_t)(t0 + (j < nt ? j : nt - 1)) * tok_bytes;
                            /* one slice: the state in a local (hot) buffer */
                            float fl[16][16] __attribute__((aligned(64)));
                            float(*fs)[16] = i0 == 0 && i1 == nbl ? fl : fst[(r / 4) * (tb / tt) + (t0 - b0) / tt];
                            k->tiles[nr > 2][nt - 1](
                                wp, dr, a, yq + (int64_t)t0 * nbl, i0, i1, fs,
                                i1 == nbl ? out + (int64_t)(c0 + t0) * out_stride + p0 + r : NULL, out_stride, nr,
                                k->scale);
                        }
                    }
                }
            }
        }
    }
}

bool gemm_iq_drive(const struct gemm_iq_kind *k, const uint8_t *wd, size_t rs, int64_t nbl, int64_t r0, int64_t r1,
                   const uint8_t *act, size_t act_stride, const uint8_t *tok, int n_tok, float *out,
                   int64_t out_stride)
{
    if (r0 >= r1 || n_tok < 1)
        return true;
    const size_t row_sb = k->pair_sb / 2;
    int64_t pr = PANEL_BYTES / ((int64_t)row_sb * nbl);
    pr = pr < 4 ? 4 : pr > 64 ? 64 : pr - pr % 4;
    if (pr > r1 - r0)
        pr = r1 - r0;
    const int64_t prp = pr + pr % 2; /* rows the panel holds: pairs */
#define UP64(x) (((size_t)(x) + 63) & ~(size_t)63)
    const size_t panel_bytes = UP64((size_t)prp * (size_t)nbl * row_sb);
    const size_t dw_bytes = UP64((size_t)prp * (size_t)nbl * sizeof(float));
    const size_t rec = gemm_iq_drive_tok_rec(k, nbl);
    int tc = tok ? n_tok : (int)(ACT_BYTES / rec);
    tc = tc < k->tile_t ? k->tile_t : tc;
    if (tc > n_tok)
        tc = n_tok;
    const size_t tok_bytes = tok ? 0 : UP64((size_t)tc * rec);
    const size_t yq_bytes = UP64((size_t)(tc + k->tile_t) * (size_t)nbl * sizeof(float));
    int tb = k->tok_blk ? k->tok_blk : (int)(TOK_BLK_BYTES / ((size_t)nbl * k->tok_sb));
    tb = tb < k->tile_t ? k->tile_t : tb - tb % k->tile_t;
    const size_t fst_bytes = k->sb_slice && k->sb_slice < nbl
                                 ? (size_t)((prp + 3) / 4) * (size_t)(tb / k->tile_t) * sizeof(float[16][16])
                                 : 0;
#undef UP64
    uint8_t *scr = kernel_scratch_get(panel_bytes + dw_bytes + tok_bytes + yq_bytes + fst_bytes);
    if (!scr)
        return false;
    uint8_t *yqp = scr + panel_bytes + dw_bytes + tok_bytes;
    drive(k, wd, rs, nbl, r0, r1, act, act_stride, n_tok, out, out_stride, scr, (float *)(void *)(scr + panel_bytes),
          tok ? (uint8_t *)(uintptr_t)tok : scr + panel_bytes + dw_bytes, tok != NULL, (float *)(void *)yqp,
          (float(*)[16][16])(void *)(yqp + yq_bytes), pr, tc, tb);
    return true;
}
#endif
