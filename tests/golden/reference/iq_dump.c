/* Reference dumps for the IQ3_XXS, IQ3_S, IQ1_S and IQ1_M unit tests
 * (tests/unit/test_iq3.c, test_iq1.c): llama.cpp 34af94cd's own
 * dequantize_row and vec_dot on blocks built here, against Q8_K activations
 * made by its own quantize_row_q8_K. For these types its AVX2 and AVX-512
 * builds run the same x86 code (no AVX-512 branch), so these are the bits the
 * goldens' machine computes.
 *
 * The weight rows use every grid entry once (in order, so a wrong entry in a
 * table shows up in the dots), with random signs, scales and super-block
 * scales; the activations are random floats with some large ones (every Q8_K
 * block holds a -128, which a negative sign leaves at -128 in the x86 code).
 *
 * Build and run (from the repository root):
 *   cc -O2 -I/work/ref/ggml/include -o /tmp/iq_dump tests/golden/reference/iq_dump.c \
 *      -L/work/ref/build/bin -lggml-cpu -lggml-base -Wl,-rpath,/work/ref/build/bin
 *   /tmp/iq_dump tests/unit/data
 *   /tmp/iq_dump --model ../shared/iq/models/iq-mini-{iq3_xxs,iq3_s,iq1_s,iq1_m}.gguf \
 *      > tests/unit/data/iq_ref_models.txt
 * File layout (little endian), tests/unit/data/iq_ref_TYPE.bin:
 *   "IQREF1\0\0", u32 type, n, rows, cols, n_deq;
 *   rows weight rows (n / 256 blocks each); cols Q8_K activation rows;
 *   rows x cols float dots (row-major: dot[r * cols + c]);
 *   n_deq floats: the dequantized weights, rows concatenated, from the start.
 * And tests/unit/data/iq_ref_generic.txt: "TYPE ROW COL DOT" lines, the
 * reference's ggml_vec_dot_*_q8_K_generic on the same rows (%a).
 *
 * With --model FILE.gguf...: for every tensor of these four types in the
 * files (the iq-mini models), one line of tests/unit/data/iq_ref_models.txt:
 *   FILE TENSOR TYPE N ROWS act_hash deq_hash dot_hash first_dot
 * hashes FNV-1a 64 over the bytes of: the two Q8_K activation rows (floats
 * from xorshift64 seeded with 0x5EED0000 + the line's index in the output,
 * n floats each: element j of row c is 8 u for j % 37 == c, else u, u
 * uniform in [-1, 1)), the whole tensor dequantized, and its dots (row r,
 * activation c at r * 2 + c). test_iq1.c / test_iq3.c recompute them with
 * tokscope's loader and kernels: the real tensors, bit for bit, where the
 * goldens cannot be run yet (a file that also holds another engineer's type). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"
#include "gguf.h"

static uint64_t st = 0x1A31D0C5ull;
static uint64_t rnd(void)
{
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    return st;
}

/* A random fp16 with |value| in [2^-10, 2^-4). */
static uint16_t rnd_d(void)
{
    const uint64_t r = rnd();
    return (uint16_t)((r & 1) << 15 | (5 + (r >> 1) % 6) << 10 | (r >> 8) % 1024);
}

/* The reference's generic C kernels (exported by libggml-cpu), as its
 * compiler built them: tokscope's scalar kernels must give their bits. */
typedef void (*dot_fn)(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq3_xxs_q8_K_generic(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq3_s_q8_K_generic(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq1_s_q8_K_generic(int, float *, size_t, const void *, size_t, const void *, size_t, int);
void ggml_vec_dot_iq1_m_q8_K_generic(int, float *, size_t, const void *, size_t, const void *, size_t, int);
static FILE *generic_out;

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Block b of a type's rows: grid entries used in order from b's first. */
static void fill(int type, uint8_t *blk, int b)
{
    if (type == GGML_TYPE_IQ3_XXS) { /* d, qs[64], 8 x u32 */
        put16(blk, rnd_d());
        for (int j = 0; j < 64; j++)
            blk[2 + j] = (uint8_t)(64 * b + j);
        for (int j = 0; j < 32; j++)
            blk[2 + 64 + j] = (uint8_t)rnd();
    } else if (type == GGML_TYPE_IQ3_S) { /* d, qs[64], qh[8], signs[32], scales[4] */
        put16(blk, rnd_d());
        uint8_t *qs = blk + 2, *qh = blk + 66, *sg = blk + 74, *sc = blk + 106;
        memset(qh, 0, 8);
        for (int j = 0; j < 64; j++) {
            const int idx = (64 * b + j) % 512;
            qs[j] = (uint8_t)idx;
            qh[j / 8] |= (uint8_t)((idx >> 8) << (j % 8));
        }
        for (int j = 0; j < 32; j++)
            sg[j] = (uint8_t)rnd();
        for (int j = 0; j < 4; j++)
            sc[j] = (uint8_t)rnd();
    } else if (type == GGML_TYPE_IQ1_S) { /* d, qs[32], qh[8] u16 */
        put16(blk, rnd_d());
        for (int ib = 0; ib < 8; ib++) {
            uint16_t h = (uint16_t)(rnd() & 0xF000); /* scale bits 12-14, delta sign 15 */
            for (int l = 0; l < 4; l++) {
                const int idx = (32 * b + 4 * ib + l) % 2048;
                blk[2 + 4 * ib + l] = (uint8_t)idx;
                h |= (uint16_t)((idx >> 8) << (3 * l));
            }
            put16(blk + 34 + 2 * ib, h);
        }
    } else { /* IQ1_M: qs[32], qh[16], scales[8] (4 x u16, fp16 d in the top nibbles) */
        uint8_t *qs = blk, *qh = blk + 32, *sc = blk + 48;
        for (int ib = 0; ib < 8; ib++)
            for (int l = 0; l < 4; l++) {
                const int idx = (32 * b + 4 * ib + l) % 2048;
                qs[4 * ib + l] = (uint8_t)idx;
                const int nib = (idx >> 8) | (int)(rnd() & 1) << 3; /* 3 index bits, delta sign */
                if (l % 2 == 0)
                    qh[2 * ib + l / 2] = (uint8_t)nib;
                else
                    qh[2 * ib + l / 2] |= (uint8_t)(nib << 4);
            }
        const uint16_t d = rnd_d();
        for (int k = 0; k < 4; k++)
            put16(sc + 2 * k, (uint16_t)((rnd() & 0x0FFF) | (uint16_t)((d >> (4 * k)) & 0xF) << 12));
    }
}

static int dump(const char *dir, int type, const char *name, int n, int rows, int cols, int n_deq)
{
    const struct ggml_type_traits *tt = ggml_get_type_traits((enum ggml_type)type);
    const struct ggml_type_traits_cpu *ct = ggml_get_type_traits_cpu((enum ggml_type)type);
    const struct ggml_type_traits_cpu *q8 = ggml_get_type_traits_cpu(GGML_TYPE_Q8_K);
    const size_t rs = ggml_row_size((enum ggml_type)type, n), as = ggml_row_size(GGML_TYPE_Q8_K, n);
    uint8_t *w = calloc((size_t)rows, rs), *a = calloc((size_t)cols, as);
    float *x = malloc((size_t)n * sizeof(float)), *dots = malloc((size_t)(rows * cols) * sizeof(float));
    float *deq = malloc((size_t)rows * (size_t)n * sizeof(float));
    const int nb = n / 256;
    for (int r = 0; r < rows; r++)
        for (int b = 0; b < nb; b++)
            fill(type, w + (size_t)r * rs + (size_t)b * tt->type_size, r * nb + b);
    for (int c = 0; c < cols; c++) {
        for (int j = 0; j < n; j++) {
            const double u = (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0;
            x[j] = (float)(j % 37 == c ? 8.0 * u : u);
        }
        q8->from_float(x, a + (size_t)c * as, n);
    }
    const dot_fn gen = type == GGML_TYPE_IQ3_XXS ? ggml_vec_dot_iq3_xxs_q8_K_generic
                       : type == GGML_TYPE_IQ3_S ? ggml_vec_dot_iq3_s_q8_K_generic
                       : type == GGML_TYPE_IQ1_S ? ggml_vec_dot_iq1_s_q8_K_generic
                                                 : ggml_vec_dot_iq1_m_q8_K_generic;
    for (int r = 0; r < rows; r++) {
        tt->to_float(w + (size_t)r * rs, deq + (size_t)r * n, n);
        for (int c = 0; c < cols; c++) {
            ct->vec_dot(n, &dots[r * cols + c], 0, w + (size_t)r * rs, 0, a + (size_t)c * as, 0, 1);
            float g;
            gen(n, &g, 0, w + (size_t)r * rs, 0, a + (size_t)c * as, 0, 1);
            if (generic_out)
                fprintf(generic_out, "%s %d %d %a\n", name, r, c, (double)g);
        }
    }
    char path[512];
    snprintf(path, sizeof path, "%s/iq_ref_%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    const uint32_t hdr[5] = {(uint32_t)type, (uint32_t)n, (uint32_t)rows, (uint32_t)cols, (uint32_t)n_deq};
    fwrite("IQREF1\0\0", 1, 8, f);
    fwrite(hdr, 4, 5, f);
    fwrite(w, rs, (size_t)rows, f);
    fwrite(a, as, (size_t)cols, f);
    fwrite(dots, sizeof(float), (size_t)(rows * cols), f);
    fwrite(deq, sizeof(float), (size_t)n_deq, f);
    fclose(f);
    printf("%s: n %d, %d rows x %d cols, dot[0] %.9g\n", path, n, rows, cols, (double)dots[0]);
    free(w), free(a), free(x), free(dots), free(deq);
    return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static int dump_models(int argc, char **argv)
{
    int k = 0;
    for (int f = 2; f < argc; f++) {
        struct gguf_init_params ip = {true, NULL};
        struct gguf_context *g = gguf_init_from_file(argv[f], ip);
        FILE *fp = fopen(argv[f], "rb");
        if (!g || !fp)
            return 1;
        const char *base = strrchr(argv[f], '/') ? strrchr(argv[f], '/') + 1 : argv[f];
        for (int64_t t = 0; t < gguf_get_n_tensors(g); t++) {
            const enum ggml_type type = gguf_get_tensor_type(g, t);
            if (type != GGML_TYPE_IQ3_XXS && type != GGML_TYPE_IQ3_S && type != GGML_TYPE_IQ1_S &&
                type != GGML_TYPE_IQ1_M)
                continue;
            const int64_t *ne = gguf_get_tensor_ne(g, t);
            const int n = (int)ne[0], rows = (int)(ne[1] * ne[2] * ne[3]);
            const size_t rs = ggml_row_size(type, n), as = ggml_row_size(GGML_TYPE_Q8_K, n);
            uint8_t *w = malloc(rs * (size_t)rows), *a = malloc(2 * as);
            float *x = malloc((size_t)n * sizeof(float)), *deq = malloc((size_t)n * sizeof(float));
            fseek(fp, (long)(gguf_get_data_offset(g) + gguf_get_tensor_offset(g, t)), SEEK_SET);
            if (fread(w, rs, (size_t)rows, fp) != (size_t)rows)
                return 1;
            st = 0x5EED0000ull + (uint64_t)k++;
            for (int c = 0; c < 2; c++) {
                for (int j = 0; j < n; j++) {
                    const double u = (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0;
                    x[j] = (float)(j % 37 == c ? 8.0 * u : u);
                }
                ggml_get_type_traits_cpu(GGML_TYPE_Q8_K)->from_float(x, a + (size_t)c * as, n);
            }
            uint64_t ha = fnv(0xcbf29ce484222325ull, a, 2 * as), hd = 0xcbf29ce484222325ull,
                     hs = 0xcbf29ce484222325ull;
            float first = 0;
            for (int r = 0; r < rows; r++) {
                ggml_get_type_traits(type)->to_float(w + (size_t)r * rs, deq, n);
                hd = fnv(hd, deq, (size_t)n * sizeof(float));
                for (int c = 0; c < 2; c++) {
                    float s;
                    ggml_get_type_traits_cpu(type)->vec_dot(n, &s, 0, w + (size_t)r * rs, 0, a + (size_t)c * as, 0, 1);
                    hs = fnv(hs, &s, sizeof s);
                    if (r == 0 && c == 0)
                        first = s;
                }
            }
            printf("%s %s %d %d %d %016llx %016llx %016llx %a\n", base, gguf_get_tensor_name(g, t), (int)type, n, rows,
                   (unsigned long long)ha, (unsigned long long)hd, (unsigned long long)hs, (double)first);
            free(w), free(a), free(x), free(deq);
        }
        fclose(fp);
        gguf_free(g);
    }
    return 0;
}

int main(int argc, char **argv)
{
    ggml_cpu_init();
    if (argc > 1 && !strcmp(argv[1], "--model"))
        return dump_models(argc, argv);
    const char *dir = argc > 1 ? argv[1] : ".";
    char gpath[512];
    snprintf(gpath, sizeof gpath, "%s/iq_ref_generic.txt", dir);
    generic_out = fopen(gpath, "w");
    /* rows x blocks = the grid's entries over the indices per block */
    int rc = dump(dir, GGML_TYPE_IQ3_XXS, "iq3_xxs", 512, 2, 3, 1024);  /* 256 / 64 = 4 blocks */
    rc |= dump(dir, GGML_TYPE_IQ3_S, "iq3_s", 512, 4, 3, 2048);         /* 512 / 64 = 8 */
    rc |= dump(dir, GGML_TYPE_IQ1_S, "iq1_s", 2048, 8, 2, 1024);        /* 2048 / 32 = 64 */
    rc |= dump(dir, GGML_TYPE_IQ1_M, "iq1_m", 2048, 8, 2, 1024);
    if (generic_out)
        fclose(generic_out);
    return rc;
}
