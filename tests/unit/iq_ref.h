/* Reference dumps of IQ block types (tests/golden/reference/iq_dump.c):
 * weight rows, Q8_K activation rows, the reference's dots and dequantized
 * weights, read from tests/unit/data/iq_ref_TYPE.bin (run from the
 * repository root, as tests/run.sh does). Include after <cmocka.h>. */
#ifndef TOKSCOPE_TEST_IQ_REF_H
#define TOKSCOPE_TEST_IQ_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/tensor.h"
#include "kernels/quant_batch.h"
#include "kernels/quant_internal.h"
#include "testutil.h"

struct iq_ref {
    uint32_t type, n, rows, cols, n_deq;
    size_t rs, as; /* bytes per weight row, per activation row */
    uint8_t *w, *a;
    float *dots, *deq;
};

static inline void iq_ref_load(struct iq_ref *r, const char *name, enum tensor_type type)
{
    char path[256];
    snprintf(path, sizeof path, "tests/unit/data/iq_ref_%s.bin", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run from the repository root)", path);
    char magic[8];
    uint32_t h[5];
    assert_int_equal(fread(magic, 1, 8, f), 8);
    assert_memory_equal(magic, "IQREF1\0\0", 8);
    assert_int_equal(fread(h, 4, 5, f), 5);
    r->type = h[0], r->n = h[1], r->rows = h[2], r->cols = h[3], r->n_deq = h[4];
    assert_int_equal(r->type, type);
    r->rs = tensor_row_size(type, r->n);
    r->as = tensor_row_size(TENSOR_TYPE_Q8_K, r->n);
    assert_true(r->rs > 0 && r->as > 0);
    r->w = malloc(r->rs * r->rows);
    r->a = malloc(r->as * r->cols);
    r->dots = malloc(sizeof(float) * r->rows * r->cols);
    r->deq = malloc(sizeof(float) * r->n_deq);
    assert_int_equal(fread(r->w, r->rs, r->rows, f), r->rows);
    assert_int_equal(fread(r->a, r->as, r->cols, f), r->cols);
    assert_int_equal(fread(r->dots, sizeof(float), r->rows * r->cols, f), r->rows * r->cols);
    assert_int_equal(fread(r->deq, sizeof(float), r->n_deq, f), r->n_deq);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
}

static inline void iq_ref_free(struct iq_ref *r)
{
    free(r->w), free(r->a), free(r->dots), free(r->deq);
}

static inline uint32_t iq_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The dot in exact arithmetic (doubles) from dequantized sign * magnitude
 * weights (IQ2/IQ3 style), with the x86 kernels' 8-bit wrap where neg (one
 * flag per weight: its stored sign bit) is given: the sign goes onto the
 * activation, and -(-128) stays -128, so such a product comes out as -w * q
 * instead of w * q. */
static inline double iq_spec_dot(const float *deq, const block_q8_K *y, int64_t n, const uint8_t *neg)
{
    double s = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        double b = 0;
        for (int j = 0; j < QK_K; j++) {
            const double w = deq[i * QK_K + j];
            const int q = y[i].qs[j];
            b += neg && q == -128 && neg[i * QK_K + j] ? -w * q : w * q;
        }
        s += b * y[i].d;
    }
    return s;
}

/* The sum of |terms| of that dot: the scale float rounding errors go by
 * (terms cancel, so the dot's own size says little). */
static inline double iq_spec_mag(const float *deq, const block_q8_K *y, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n / QK_K; i++)
        for (int j = 0; j < QK_K; j++)
            s += fabs((double)deq[i * QK_K + j] * y[i].qs[j] * y[i].d);
    return s;
}

/* |got - want| within float rounding of a sum of terms totalling mag. */
static inline int iq_close(double got, double want, double mag)
{
    return fabs(got - want) <= 1e-6 * mag + 1e-30;
}

#endif

/* A GGUF v3 image with one tensor "t.w" of ne0 x ne1 elements of `type` at
 * offset 0 and 256 data bytes, opened from memory: NULL (and the loader's
 * message in err) when refused. *keep is the buffer to free after
 * gguf_close. Checks that the loader sizes the type's rows right. */
static inline gguf_ctx *iq_gguf_one_tensor(uint32_t type, uint64_t ne0, uint64_t ne1, char *err,
                                           size_t errlen, void **keep)
{
    uint8_t *b = calloc(1, 4096), *p = b;
#define IQ_PUT(v)                                                                                            \
    do {                                                                                                     \
        const __typeof__(v) v_ = (v);                                                                        \
        memcpy(p, &v_, sizeof v_);                                                                           \
        p += sizeof v_;                                                                                      \
    } while (0)
    memcpy(p, "GGUF", 4), p += 4;
    IQ_PUT((uint32_t)3);
    IQ_PUT((uint64_t)1); /* tensors */
    IQ_PUT((uint64_t)0); /* key/values */
    IQ_PUT((uint64_t)3);
    memcpy(p, "t.w", 3), p += 3;
    IQ_PUT((uint32_t)2);
    IQ_PUT(ne0);
    IQ_PUT(ne1);
    IQ_PUT(type);
    IQ_PUT((uint64_t)0);
#undef IQ_PUT
    const size_t size = (((size_t)(p - b) + 31) & ~(size_t)31) + 256;
    gguf_ctx *g = gguf_open_buffer(b, size, "mem.gguf", err, errlen);
    *keep = b;
    return g;
}

static inline uint64_t iq_fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The real tensors of the iq-mini models (tests/unit/data/iq_ref_models.txt,
 * see iq_dump.c --model): for every line of one of the two types, tokscope's
 * loader, Q8_K quantizer, dequantization, vec_dot and batched matmul give the
 * reference's hashes. Skipped (outside CI) without ../shared. */
static inline void iq_ref_check_models(enum tensor_type t1, enum tensor_type t2)
{
    FILE *f = fopen("tests/unit/data/iq_ref_models.txt", "r");
    if (!f)
        fail_msg("cannot open tests/unit/data/iq_ref_models.txt (run from the repository root)");
    char file[128], name[128], first[64], rel[256];
    int type, n, rows, line = 0, checked = 0;
    unsigned long long ha, hd, hs;
    while (fscanf(f, "%127s %127s %d %d %d %llx %llx %llx %63s", file, name, &type, &n, &rows, &ha, &hd, &hs,
                  first) == 9) {
        const int k = line++;
        if (type != (int)t1 && type != (int)t2)
            continue;
        snprintf(rel, sizeof rel, "iq/models/%s", file);
        const char *path = TESTDATA_REQUIRE(rel);
        char err[512];
        gguf_ctx *g = gguf_open(path, err, sizeof err);
        if (!g)
            fail_msg("%s: %s", path, err);
        const gguf_tensor *tt = gguf_find_tensor(g, name);
        assert_non_null(tt);
        assert_int_equal(tt->type, type);
        assert_int_equal(tt->ne[0], n);
        const size_t rs = tensor_row_size((enum tensor_type)type, n),
                     as = tensor_row_size(TENSOR_TYPE_Q8_K, n);
        uint8_t *a = malloc(2 * as);
        float *x = malloc(sizeof(float) * (size_t)n), *deq = malloc(sizeof(float) * (size_t)n);
        float *mm = malloc(sizeof(float) * 2 * (size_t)rows);
        uint64_t st = 0x5EED0000ull + (uint64_t)k;
        for (int c = 0; c < 2; c++) {
            for (int j = 0; j < n; j++) {
                const double u = (double)(test_xorshift64(&st) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
                x[j] = (float)(j % 37 == c ? 8.0 * u : u);
            }
            tensor_quantize_row(TENSOR_TYPE_Q8_K, x, a + (size_t)c * as, n);
        }
        tensor_matmul((enum tensor_type)type, n, tt->data, rows, a, 2, as, mm, rows);
        uint64_t h_a = iq_fnv(0xcbf29ce484222325ull, a, 2 * as), h_d = 0xcbf29ce484222325ull,
                 h_s = 0xcbf29ce484222325ull, h_m = 0xcbf29ce484222325ull;
        for (int r = 0; r < rows; r++) {
            const uint8_t *w = (const uint8_t *)tt->data + (size_t)r * rs;
            tensor_dequantize_row((enum tensor_type)type, w, deq, n);
            h_d = iq_fnv(h_d, deq, sizeof(float) * (size_t)n);
            for (int c = 0; c < 2; c++) {
                const float s = tensor_vec_dot((enum tensor_type)type, n, w, a + (size_t)c * as);
                h_s = iq_fnv(h_s, &s, sizeof s);
                h_m = iq_fnv(h_m, &mm[(size_t)c * rows + r], sizeof(float));
            }
        }
        if (h_a != ha || h_d != hd || h_s != hs || h_m != hs)
            fail_msg(
                "%s %s: activations %s, dequantization %s, vec_dot %s, matmul %s (reference first dot %s)",
                file, name, h_a == ha ? "ok" : "DIFFER", h_d == hd ? "ok" : "DIFFER",
                h_s == hs ? "ok" : "DIFFER", h_m == hs ? "ok" : "DIFFER", first);
        checked++;
        free(a), free(x), free(deq), free(mm);
        gguf_close(g);
    }
    fclose(f);
    assert_true(checked > 0);
}

/* The reference's generic C dot for (row, col) of the NAME dumps
 * (tests/unit/data/iq_ref_generic.txt, see iq_dump.c). */
static inline float iq_ref_generic(const char *name, uint32_t row, uint32_t col)
{
    FILE *f = fopen("tests/unit/data/iq_ref_generic.txt", "r");
    if (!f)
        fail_msg("cannot open tests/unit/data/iq_ref_generic.txt (run from the repository root)");
    char t[32], v[64];
    unsigned r, c;
    while (fscanf(f, "%31s %u %u %63s", t, &r, &c, v) == 4)
        if (!strcmp(t, name) && r == row && c == col) {
            fclose(f);
            return strtof(v, NULL);
        }
    fclose(f);
    fail_msg("no generic dot for %s %u %u", name, row, col);
    return 0.0f;
}

typedef float (*iq_dot_fn)(int64_t, const void *, const void *);

/* Every kernel of type t bit for bit against the NAME dumps r:
 * dequantization (every grid entry used), the x86 order, the installed
 * vec_dot, the batched matmul and generation's matvec (all rows against one
 * activation) against the reference's dots, and the scalar kernel against
 * the reference's _generic one. Returns the dequantized rows (the caller
 * frees them) for the test's own checks against its spec. */
static inline float *iq_ref_check_kernels(const struct iq_ref *r, const char *name, enum tensor_type t,
                                          iq_dot_fn scalar, iq_dot_fn x86)
{
    float *deq = malloc(sizeof(float) * r->n * r->rows);
    for (uint32_t i = 0; i < r->rows; i++)
        tensor_dequantize_row(t, r->w + i * r->rs, deq + (size_t)i * r->n, r->n);
    for (uint32_t j = 0; j < r->n_deq; j++)
        if (iq_f2u(deq[j]) != iq_f2u(r->deq[j]))
            fail_msg("%s dequantized weight %u: %.9g, reference %.9g", name, j, (double)deq[j],
                     (double)r->deq[j]);
    float *mm = malloc(sizeof(float) * r->rows * r->cols), *mv = malloc(sizeof(float) * r->rows * r->cols);
    tensor_matmul(t, r->n, r->w, r->rows, r->a, r->cols, r->as, mm, r->rows);
    for (uint32_t c = 0; c < r->cols; c++)
        tensor_matvec(t, r->n, r->w, r->rows, r->a + c * r->as, mv + (size_t)c * r->rows);
    for (uint32_t i = 0; i < r->rows; i++)
        for (uint32_t c = 0; c < r->cols; c++) {
            const void *w = r->w + i * r->rs, *a = r->a + c * r->as;
            const float ref = r->dots[i * r->cols + c];
            const float v[4] = {x86(r->n, w, a), tensor_vec_dot(t, r->n, w, a), mm[c * r->rows + i],
                                mv[c * r->rows + i]};
            const float gen = iq_ref_generic(name, i, c), sc = scalar(r->n, w, a);
            if (iq_f2u(sc) != iq_f2u(gen))
                fail_msg("%s row %u col %u: scalar %a, reference generic %a", name, i, c, (double)sc,
                         (double)gen);
            for (int k = 0; k < 4; k++)
                if (iq_f2u(v[k]) != iq_f2u(ref))
                    fail_msg("%s row %u col %u: kernel %d gives %.9g, reference %.9g", name, i, c, k,
                             (double)v[k], (double)ref);
        }
    free(mv);
    free(mm);
    return deq;
}
