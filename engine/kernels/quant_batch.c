/* tensor_matmul: rows x activations, tiled so that a tile of weight rows is
 * read from memory once and reused from cache for every activation. */
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "kernels/quant_kfew.h"

/* Weight bytes per tile: small enough to stay in L1/L2 next to one activation. */
#define TILE_BYTES (48 * 1024)

void tensor_matmul(enum tensor_type type, int64_t n, const void *w, int64_t rows, const void *act,
                   int64_t n_act, size_t act_stride, float *out, int64_t out_stride)
{
    const struct quant_kernels *k = quant_kernels_get(type);
    size_t rs = tensor_row_size(type, n);
    if (!k || !k->vec_dot || rs == 0) {
        for (int64_t c = 0; c < n_act; c++)
            for (int64_t r = 0; r < rows; r++)
                out[c * out_stride + r] = 0.0f;
        return;
    }
#ifdef QUANT_HAVE_KFEW
    int64_t tile = (int64_t)(TILE_BYTES / rs);
    if (tile < 4)
        tile = 4;
    void (*few)(int64_t, const void *, size_t, int64_t, const void *, size_t, int, float *, int64_t, int) =
        type == TENSOR_TYPE_Q6_K ? quant_q6_K_few : type == TENSOR_TYPE_Q5_K ? quant_q5_K_few : NULL;
    if (few) {
        /* Each row pair's block unpacked once per 4 tokens. The first group
         * of a tile streams its rows from memory (prefetching ahead, as the
         * matvec: without it 4 tokens out of cache took twice as long); the
         * others find them in cache. Up to 4 tokens: one tile. */
        if (n_act <= QUANT_KFEW_MAX)
            tile = rows;
        for (int64_t r0 = 0; r0 < rows; r0 += tile) {
            const int64_t nr = rows - r0 < tile ? rows - r0 : tile;
            for (int64_t c = 0; c < n_act; c += QUANT_KFEW_MAX) {
                const int nt = n_act - c < QUANT_KFEW_MAX ? (int)(n_act - c) : QUANT_KFEW_MAX;
                few(n, (const char *)w + (size_t)r0 * rs, rs, nr, (const char *)act + (size_t)c * act_stride,
                    act_stride, nt, out + c * out_stride + r0, out_stride, c == 0);
            }
        }
        return;
    }
#endif
    quant_kernels_matmul(k, n, rs, w, rows, act, n_act, act_stride, out, out_stride);
}

void quant_kernels_matmul(const struct quant_kernels *k, int64_t n, size_t rs, const void *w, int64_t rows,
                          const void *act, int64_t n_act, size_t act_stride, float *out, int64_t out_stride)
{
    int64_t tile = (int64_t)(TILE_BYTES / rs);
    if (tile < 4)
        tile = 4;
    for (int64_t r0 = 0; r0 < rows; r0 += tile) {
        int64_t nr = rows - r0 < tile ? rows - r0 : tile;
        const char *wt = (const char *)w + (size_t)r0 * rs;
        int64_t c = 0;
        if (k->dot4) /* decode each weight row once for 4 activations */
            for (; c + 4 <= n_act; c += 4) {
                const void *a4[4];
                for (int j = 0; j < 4; j++)
                    a4[j] = (const char *)act + (size_t)(c + j) * act_stride;
                int64_t r = 0;
                if (k->dot4x4)
                    for (; r + 4 <= nr; r += 4) {
                        float o[4][4];
                        k->dot4x4(n, wt + (size_t)r * rs, rs, a4, o);
                        for (int j = 0; j < 4; j++)
                            for (int q = 0; q < 4; q++)
                                out[(c + j) * out_stride + r0 + r + q] = o[j][q];
                    }
                for (; r < nr; r++) {
                    float o[4];
                    k->dot4(n, wt + (size_t)r * rs, a4, o);
                    for (int j = 0; j < 4; j++)
                        out[(c + j) * out_stride + r0 + r] = o[j];
                }
            }
        for (; c < n_act; c++) {
            const void *a = (const char *)act + (size_t)c * act_stride;
            float *o = out + c * out_stride + r0;
            if (k->matvec) {
                k->matvec(n, wt, rs, nr, a, o);
            } else {
                for (int64_t r = 0; r < nr; r++)
                    o[r] = k->vec_dot(n, wt + (size_t)r * rs, a);
            }
        }
    }
}
