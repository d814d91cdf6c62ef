/* Reference dumps for the IQ2 block types: runs llama.cpp's own
 * dequantize_row_iq2_* and ggml_vec_dot_iq2_*_q8_K (the AVX2 code its
 * AVX-512 build runs too) and _generic on blocks made here, and writes
 * inputs and outputs to tests/unit/data/iq2_TYPE.bin for tests/unit/test_iq2.c.
 *
 * The weight blocks walk every grid index in order (group k of the set has
 * index k mod the grid size), so a wrong grid entry anywhere shows; signs,
 * scales and d are pseudo-random. Activations: three Q8_K rows from the
 * reference's quantize_row_q8_K of random floats, and one of raw random
 * bytes (-128 included, which that quantizer never makes).
 *
 * Build and run (from the repository root):
 *   cc -O2 -o /tmp/iq2_dump tests/golden/reference/iq2/iq2_dump.c \
 *      -L/work/ref/build/bin -lggml-cpu -lggml-base -Wl,-rpath,/work/ref/build/bin
 *   /tmp/iq2_dump tests/unit/data
 *
 * File layout (little endian): "IQ2D", u32 ggml type, u32 blocks per row,
 * u32 rows, u32 activations; the weight rows; the activation rows (Q8_K);
 * per weight block the FNV-1a 64 hash of its 256 dequantized floats' bits;
 * block 0's 256 floats; the AVX2 dots [row][act]; the generic dots
 * [row][act]. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference's symbols (ggml-quants.h, ggml-cpu/quants.h: not installed). */
void dequantize_row_iq2_xxs(const void *x, float *y, int64_t k);
void dequantize_row_iq2_xs(const void *x, float *y, int64_t k);
void dequantize_row_iq2_s(const void *x, float *y, int64_t k);
void quantize_row_q8_K(const float *x, void *y, int64_t k);
typedef void (*vec_dot_t)(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc);
void ggml_vec_dot_iq2_xxs_q8_K(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq2_xs_q8_K(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq2_s_q8_K(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq2_xxs_q8_K_generic(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq2_xs_q8_K_generic(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq2_s_q8_K_generic(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_cpu_init(void);

#define QK_K 256
#define Q8K_SIZE 292
#define NBR 4  /* blocks per row */
#define NACT 4

static uint64_t rng = 0x49513244554d50ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* A random fp16 d in +-[2^-10, 2^-4) (the size real files have). */
static uint16_t rnd_d(void)
{
    const uint32_t e = 5 + rnd() % 6, m = rnd() & 0x3ff;
    return (uint16_t)((rnd() & 1) << 15 | e << 10 | m);
}

struct type {
    const char *name;
    uint32_t ggml_type, size, grid;
    void (*dequant)(const void *, float *, int64_t);
    vec_dot_t dot, generic;
};

/* Block b of the set: its groups are grid indices 32b .. 32b + 31. */
static void make_block(const struct type *t, uint8_t *blk, uint32_t b)
{
    for (uint32_t i = 0; i < t->size; i++)
        blk[i] = (uint8_t)rnd();
    const uint16_t d = rnd_d();
    memcpy(blk, &d, 2);
    for (uint32_t k = 0; k < 32; k++) {
        const uint32_t idx = (32 * b + k) % t->grid;
        if (t->ggml_type == 16) { /* qs: per 32 weights 4 index bytes, then signs+scale */
            blk[2 + 8 * (k / 4) + k % 4] = (uint8_t)idx;
        } else if (t->ggml_type == 17) { /* qs[k]: 9-bit index | 7-bit signs << 9 */
            uint16_t q;
            memcpy(&q, blk + 2 + 2 * k, 2);
            q = (uint16_t)((q & 0xfe00) | idx);
            memcpy(blk + 2 + 2 * k, &q, 2);
        } else { /* qs[k] low 8 bits, qh[k/4] bits 2(k%4).. the high two */
            blk[2 + k] = (uint8_t)idx;
            uint8_t *qh = blk + 2 + 64 + k / 4;
            *qh = (uint8_t)((*qh & ~(3u << 2 * (k % 4))) | (idx >> 8) << 2 * (k % 4));
        }
    }
}

static uint64_t fnv(const float *y, int n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint8_t *p = (const uint8_t *)y;
    for (int i = 0; i < 4 * n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    const struct type types[] = {
        {"iq2_xxs", 16, 66, 256, dequantize_row_iq2_xxs, ggml_vec_dot_iq2_xxs_q8_K, ggml_vec_dot_iq2_xxs_q8_K_generic},
        {"iq2_xs", 17, 74, 512, dequantize_row_iq2_xs, ggml_vec_dot_iq2_xs_q8_K, ggml_vec_dot_iq2_xs_q8_K_generic},
        {"iq2_s", 22, 82, 1024, dequantize_row_iq2_s, ggml_vec_dot_iq2_s_q8_K, ggml_vec_dot_iq2_s_q8_K_generic},
    };
    ggml_cpu_init();
    for (int ti = 0; ti < 3; ti++) {
        const struct type *t = &types[ti];
        const uint32_t nblk = t->grid / 32, rows = nblk / NBR, n = NBR * QK_K;
        uint8_t *w = malloc((size_t)nblk * t->size);
        for (uint32_t b = 0; b < nblk; b++)
            make_block(t, w + (size_t)b * t->size, b);
        uint8_t *act = malloc((size_t)NACT * NBR * Q8K_SIZE);
        float x[NBR * QK_K];
        for (int a = 0; a < NACT - 1; a++) {
            for (uint32_t j = 0; j < n; j++)
                x[j] = ((float)(rnd() % 20001) - 10000.0f) / 3000.0f;
            quantize_row_q8_K(x, act + (size_t)a * NBR * Q8K_SIZE, n);
        }
        uint8_t *raw = act + (size_t)(NACT - 1) * NBR * Q8K_SIZE;
        for (int b = 0; b < NBR; b++) {
            uint8_t *blk = raw + (size_t)b * Q8K_SIZE;
            const float d = (float)(rnd() % 1000 + 1) / 65536.0f;
            memcpy(blk, &d, 4);
            for (int j = 0; j < QK_K; j++)
                blk[4 + j] = (uint8_t)(j % 16 == 5 ? 0x80 : rnd()); /* some -128 in every 16 */
            memset(blk + 4 + QK_K, 0, 32); /* bsums: not read by these dots */
        }
        uint64_t *hash = malloc(nblk * 8);
        float y[QK_K], y0[QK_K];
        for (uint32_t b = 0; b < nblk; b++) {
            t->dequant(w + (size_t)b * t->size, y, QK_K);
            hash[b] = fnv(y, QK_K);
            if (b == 0)
                memcpy(y0, y, sizeof y0);
        }
        float dots[2][64][NACT];
        for (uint32_t r = 0; r < rows; r++)
            for (int a = 0; a < NACT; a++) {
                const void *wr = w + (size_t)r * NBR * t->size, *ar = act + (size_t)a * NBR * Q8K_SIZE;
                t->dot((int)n, &dots[0][r][a], 0, wr, 0, ar, 0, 1);
                t->generic((int)n, &dots[1][r][a], 0, wr, 0, ar, 0, 1);
            }
        char path[512];
        snprintf(path, sizeof path, "%s/iq2_%s.bin", dir, t->name + 4);
        FILE *f = fopen(path, "wb");
        if (!f) {
            perror(path);
            return 1;
        }
        const uint32_t hdr[4] = {t->ggml_type, NBR, rows, NACT};
        fwrite("IQ2D", 1, 4, f);
        fwrite(hdr, 4, 4, f);
        fwrite(w, t->size, nblk, f);
        fwrite(act, Q8K_SIZE, NACT * NBR, f);
        fwrite(hash, 8, nblk, f);
        fwrite(y0, 4, QK_K, f);
        for (int k = 0; k < 2; k++)
            for (uint32_t r = 0; r < rows; r++)
                fwrite(dots[k][r], 4, NACT, f);
        fclose(f);
        printf("%s: %u blocks, %u rows of %u, %d activations -> %s\n", t->name, nblk, rows, n, NACT, path);
        free(w);
        free(act);
        free(hash);
    }
    return 0;
}
